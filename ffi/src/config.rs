//! The JSON arguments of the C calls. The four option documents (the host config of
//! `acph_host_new`, an agent spec, session options, pool settings) are the core's
//! (`acp_host::options`, docs/OPTIONS.md): this module only hands the text over and puts the C
//! face's callables in place, so every value is accepted or refused exactly as in every other
//! face, with the core's `invalid_config` message and `data.path`. The other arguments (list
//! parameters, prompt content, registry options) are parsed here, strictly: an unknown field is
//! an error, so a typo cannot silently fall back to a default.

use std::path::PathBuf;
use std::sync::Arc;

use acp_host::options::{self, Face, Hooks};
use acp_host::registry::{DistributionKind, InstallLimits, Platform, ResolveOptions};
use acp_host::{AgentSpec, HostConfig, SessionOptions};
use serde_json::{Map, Value};

use crate::services::{Bridge, Delivery};
use crate::status::{Failure, acph_status};

/// What `acph_host_new` needs besides the core's `HostConfig`.
#[derive(Debug)]
pub(crate) struct FaceConfig {
    pub core: HostConfig,
}

fn arg_error(what: &str, path: &str, message: impl Into<String>) -> Failure {
    let message = message.into();
    Failure::invalid(format!("invalid {what}: {path}: {message}"))
        .with_data(serde_json::json!({ "path": path }))
}

/// An option document; NULL (`None`) is the empty document (every default).
fn document(text: Option<&str>) -> Result<Value, Failure> {
    text.map_or(Ok(Value::Null), |t| {
        options::document(t).map_err(Failure::from)
    })
}

/// The configuration of `acph_host_new`. The C face's callables are the service bridge (the
/// service callback, or `service_requested` events with `"services": "events"`), registered
/// after the host exists: so they answer only where the document names them (`"embedder"`).
/// The C face has no permission or elicitation callback: `"handler"` there is the core's
/// `invalid_config` (nothing was given); `"manual"` answers from events.
pub(crate) fn host_config(text: Option<&str>, bridge: &Bridge) -> Result<FaceConfig, Failure> {
    let doc = document(text)?;
    let opts = options::host(&doc, Face::C)?;
    let embedder = |name: &str| doc.get(name).and_then(Value::as_str) == Some("embedder");
    let hooks = Hooks {
        fs: embedder("fs").then(|| Arc::new(bridge.clone()) as _),
        terminal: embedder("terminal").then(|| Arc::new(bridge.clone()) as _),
        ext: embedder("ext").then(|| Arc::new(bridge.clone()) as _),
        terminal_auth: embedder("terminalAuth").then(|| Arc::new(bridge.clone()) as _),
        ..Hooks::default()
    };
    bridge.set_delivery(if opts.services_as_events {
        Delivery::Events
    } else {
        Delivery::Callback
    });
    let core = opts.with_hooks(hooks)?;
    Ok(FaceConfig { core })
}

/// The agent spec of `acph_host_spawn` and `acph_pool_new` (docs/OPTIONS.md, "Agent spec").
pub(crate) fn agent_spec(text: &str) -> Result<AgentSpec, Failure> {
    Ok(options::agent_spec(&document(Some(text))?, Face::C)?)
}

/// Session options of new/load/resume/fork and pooled sessions (docs/OPTIONS.md, "Session
/// options").
pub(crate) fn session_options(text: &str) -> Result<SessionOptions, Failure> {
    Ok(options::session(&document(Some(text))?, Face::C)?)
}

/// The pool settings of `acph_pool_new` (NULL: the defaults) over `spec`: the document under
/// `pool` (docs/OPTIONS.md, "Pool options"; errors name `pool.*`).
pub(crate) fn pool_config(
    spec: AgentSpec,
    text: Option<&str>,
) -> Result<acp_host::PoolConfig, Failure> {
    Ok(options::pool(spec, &document(text)?, Face::C)?)
}

fn object<'a>(
    v: &'a Value,
    fields: &[&str],
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<&'a Map<String, Value>, Failure> {
    let Some(obj) = v.as_object() else {
        return Err(err("$", "expected a JSON object".into()));
    };
    if let Some(k) = obj.keys().find(|k| !fields.contains(&k.as_str())) {
        return Err(err(
            k,
            format!("unknown field; expected one of: {}", fields.join(", ")),
        ));
    }
    Ok(obj)
}

fn u64_field(
    obj: &Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<u64>, Failure> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| err(key, "expected a non-negative integer".into())),
    }
}

fn str_field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<&'a str>, Failure> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .map(Some)
            .ok_or_else(|| err(key, "expected a string".into())),
    }
}

fn string_list(
    obj: &Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<Vec<String>>, Failure> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| err(&format!("{key}[{i}]"), "expected a string".into()))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(err(key, "expected an array of strings".into())),
    }
}

/// Parameters of `session/list`: `{"cwd": "/abs"?, "cursor": "..."?}`.
pub(crate) fn list_params(text: &str) -> Result<(Option<String>, Option<String>), Failure> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Failure::json("params", &e))?;
    let err = |p: &str, m: String| arg_error("list parameters", p, m);
    let obj = object(&doc, &["cwd", "cursor"], &err)?;
    Ok((
        str_field(obj, "cwd", &err)?.map(str::to_owned),
        str_field(obj, "cursor", &err)?.map(str::to_owned),
    ))
}

/// Prompt content: a JSON array of ACP content blocks.
pub(crate) fn prompt_content(text: &str) -> Result<Vec<Value>, Failure> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Failure::json("content", &e))?;
    match doc {
        Value::Array(blocks) => Ok(blocks),
        _ => Err(Failure::invalid(
            "prompt content must be a JSON array of content blocks",
        )),
    }
}

/// Any JSON value (config option values, service results), nested at most `MAX_JSON_DEPTH`
/// levels (`invalid_argument` past it; where it goes in a message is checked where it is used).
pub(crate) fn any_json(what: &str, text: &str) -> Result<Value, Failure> {
    let value = serde_json::from_str(text).map_err(|e| Failure::json(what, &e))?;
    acp_host::wire::depth::check_fits(&value, 1, what).map_err(|e| Failure::too_deep(what, &e))?;
    Ok(value)
}

// ----- registry ---------------------------------------------------------------------------------

/// An optional string field where `null` also means absent (the faces' `None`/`undefined`).
fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<&'a str>, Failure> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => str_field(obj, key, err),
    }
}

fn platform_field(
    obj: &Map<String, Value>,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<Platform>, Failure> {
    opt_str(obj, "platform", err)?
        .map(|p| {
            p.parse::<Platform>()
                .map_err(|e| err("platform", e.to_string()))
        })
        .transpose()
}

/// The cache directory, made absolute so that results name the same files whatever the current
/// directory is later.
fn cache_dir_field(
    obj: &Map<String, Value>,
    err: &dyn Fn(&str, String) -> Failure,
) -> Result<Option<PathBuf>, Failure> {
    match opt_str(obj, "cacheDir", err)? {
        None => Ok(None),
        Some("") => Err(err("cacheDir", "must not be empty".into())),
        Some(dir) => std::path::absolute(dir)
            .map(Some)
            .map_err(|e| err("cacheDir", e.to_string())),
    }
}

/// Options of `acph_registry_resolve` (NULL: every default): `{"prefer": ["binary", "npx",
/// "uvx"] | "npx", "platform": "linux-x86_64", "cacheDir": "/dir", "npxCommand": "npx",
/// "uvxCommand": "uvx"}`, as the other faces take them (`null` = absent).
pub(crate) fn resolve_options(text: Option<&str>) -> Result<ResolveOptions, Failure> {
    let doc = match text {
        None => Value::Object(Map::new()),
        Some(t) => serde_json::from_str(t).map_err(|e| Failure::json("options_json", &e))?,
    };
    let err = |p: &str, m: String| arg_error("resolve options", p, m);
    let obj = object(
        &doc,
        &["prefer", "platform", "cacheDir", "npxCommand", "uvxCommand"],
        &err,
    )?;
    let mut options = ResolveOptions::new();
    options.platform = platform_field(obj, &err)?;
    options.cache_dir = cache_dir_field(obj, &err)?;
    let kind = |k: &str, at: &str| {
        k.parse::<DistributionKind>()
            .map_err(|e| err(at, e.to_string()))
    };
    options.prefer = match obj.get("prefer") {
        None | Some(Value::Null) => None,
        Some(Value::String(k)) => Some(vec![kind(k, "prefer")?]),
        Some(Value::Array(_)) => string_list(obj, "prefer", &err)?
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, k)| kind(k, &format!("prefer[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)?,
        Some(_) => {
            return Err(err(
                "prefer",
                "expected \"binary\", \"npx\", \"uvx\" or an array of them".into(),
            ));
        }
    };
    for (key, slot) in [
        ("npxCommand", &mut options.npx_command),
        ("uvxCommand", &mut options.uvx_command),
    ] {
        match opt_str(obj, key, &err)? {
            None => {}
            Some("") => return Err(err(key, "must not be empty".into())),
            Some(program) => *slot = program.to_owned(),
        }
    }
    Ok(options)
}

/// Where and how `acph_registry_install` / `acph_registry_is_installed` work.
#[derive(Debug)]
pub(crate) struct InstallOptions {
    pub cache_dir: PathBuf,
    pub platform: Platform,
    pub limits: InstallLimits,
}

/// Options of `acph_registry_install`: `{"cacheDir": "/dir", "platform": "linux-x86_64",
/// "maxArchiveBytes": n, "maxTotalBytes": n, "maxEntries": n, "maxDirs": n, "maxDepth": n}`
/// (`cacheDir` required; the limits only when `with_limits`, for `acph_registry_is_installed`
/// they are unknown fields).
pub(crate) fn install_options(text: &str, with_limits: bool) -> Result<InstallOptions, Failure> {
    let doc: Value = serde_json::from_str(text).map_err(|e| Failure::json("options_json", &e))?;
    let err = |p: &str, m: String| arg_error("install options", p, m);
    let fields: &[&str] = if with_limits {
        &[
            "cacheDir",
            "platform",
            "maxArchiveBytes",
            "maxTotalBytes",
            "maxEntries",
            "maxDirs",
            "maxDepth",
        ]
    } else {
        &["cacheDir", "platform"]
    };
    let obj = object(&doc, fields, &err)?;
    let Some(cache_dir) = cache_dir_field(obj, &err)? else {
        return Err(err("cacheDir", "missing".into()));
    };
    let platform = match platform_field(obj, &err)? {
        Some(p) => p,
        None => Platform::current().ok_or_else(|| {
            Failure::new(
                acph_status::ACPH_STATUS_UNSUPPORTED,
                "this platform has no key in the registry format: pass \"platform\"",
            )
        })?,
    };
    let mut limits = InstallLimits::default();
    if let Some(n) = u64_field(obj, "maxArchiveBytes", &err)? {
        limits.max_archive_bytes = n;
    }
    if let Some(n) = u64_field(obj, "maxTotalBytes", &err)? {
        limits.max_total_bytes = n;
    }
    if let Some(n) = u64_field(obj, "maxEntries", &err)? {
        limits.max_entries = n;
    }
    if let Some(n) = u64_field(obj, "maxDirs", &err)? {
        limits.max_dirs = n;
    }
    if let Some(n) = u64_field(obj, "maxDepth", &err)? {
        limits.max_depth = n;
    }
    Ok(InstallOptions {
        cache_dir,
        platform,
        limits,
    })
}
