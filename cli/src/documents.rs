//! The CLI's flags as the core's option documents (docs/OPTIONS.md): `--options FILE`,
//! `--agent-options FILE` and `--session-options FILE` give whole documents, the flags set their
//! options on top, and the core checks the result as for every face (same `invalid_config`
//! paths). Paths typed on the command line are resolved against the working directory first
//! (a shell's convention); paths inside a document file must be absolute, as everywhere.

use std::path::{Path, PathBuf};

use acp_host::options::{self, Face};
use acp_host::permission::policy::PRESETS;
use acp_host::{AgentSpec, Error, SessionOptions};
use serde_json::{Map, Value, json};

/// A document file: JSON text (`invalid_config` at `$` when it is not), an object expected.
pub fn read(flag: &str, path: Option<&Path>) -> Result<Map<String, Value>, Error> {
    let Some(path) = path else {
        return Ok(Map::new());
    };
    let text = std::fs::read_to_string(path).map_err(|e| Error::InvalidConfig {
        path: "$".into(),
        message: format!("{flag} {}: {e}", path.display()),
    })?;
    match options::document(&text)? {
        Value::Object(m) => Ok(m),
        other => Err(Error::InvalidConfig {
            path: "$".into(),
            message: format!(
                "{flag} {}: expected a JSON object, got {other}",
                path.display()
            ),
        }),
    }
}

/// A path from the command line, made absolute against the working directory (never
/// canonicalised: the core decides on what it names).
pub fn absolute(flag: &str, p: &Path) -> Result<String, String> {
    let abs = std::path::absolute(p).map_err(|e| format!("{flag} {}: {e}", p.display()))?;
    abs.into_os_string()
        .into_string()
        .map_err(|d| format!("{flag} {}: not valid UTF-8", PathBuf::from(d).display()))
}

/// `--policy`: a preset name as it is, anything else the path of a policy file.
pub fn policy(arg: &Path) -> Result<Value, String> {
    match arg.to_str() {
        Some(name) if PRESETS.contains(&name) => Ok(Value::from(name)),
        _ => Ok(json!({ "file": absolute("--policy", arg)? })),
    }
}

/// The agent spec: the document, with `--` AGENT_CMD (or the bundled mock) as its command when
/// given or when the document names none.
pub fn agent(
    mut doc: Map<String, Value>,
    cmd: Option<(String, Vec<String>)>,
) -> Result<AgentSpec, Error> {
    if let Some((command, args)) = cmd {
        doc.insert("command".into(), Value::from(command));
        doc.insert("args".into(), Value::from(args));
    }
    options::agent_spec(&Value::Object(doc), Face::Cli)
}

/// The session's options: the document, with `--cwd` (or the working directory when the
/// document names none).
pub fn session(mut doc: Map<String, Value>, cwd: Option<String>) -> Result<SessionOptions, Error> {
    match cwd {
        Some(c) => {
            doc.insert("cwd".into(), Value::from(c));
        }
        None if !doc.contains_key("cwd") => {
            let here = std::env::current_dir()
                .map_err(|e| Error::InvalidArgument(format!("the current directory: {e}")))?;
            doc.insert(
                "cwd".into(),
                Value::from(here.to_string_lossy().into_owned()),
            );
        }
        None => {}
    }
    options::session(&Value::Object(doc), Face::Cli)
}
