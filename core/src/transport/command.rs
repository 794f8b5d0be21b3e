//! From a command name and its arguments to the process to start, for agents and terminals.
//!
//! Unix: the name and arguments go to `exec` as they are (`PATH` is searched by the OS).
//!
//! Windows: `CreateProcess` runs `.exe`/`.com` files itself, but Node-based agents are installed
//! as `.cmd` shims (`npx.cmd`, `claude-agent-acp.cmd`) and a batch file runs through `cmd.exe`,
//! which parses the command line again with its own rules (`&`, `|`, `%VAR%`, ...): arguments
//! escaped for a normal program become commands there (the "BatBadBut" class). So here:
//! - the program is looked up like `cmd.exe` does: each absolute `PATH` directory in order, the
//!   name as given if its extension is one we can run, then the name plus each `PATHEXT`
//!   extension. The current directory is never searched (a relative `PATH` entry, `.` included,
//!   is skipped). Only `.exe`, `.com`, `.bat` and `.cmd` are ever chosen: other `PATHEXT`
//!   entries (`.js`, `.vbs`, ...) are shell associations `CreateProcess` cannot start.
//! - a name with a `:` after its drive (an alternate data stream, `x.cmd::$DATA`) is refused:
//!   such a name would hide a batch file from the extension check below.
//! - a batch file (the resolved name, or what a link resolves to, ends in `.bat`/`.cmd` once
//!   trailing dots and spaces are trimmed, as Windows trims them) is started as
//!   `cmd.exe /e:ON /v:OFF /d /c ""script" args"`, each argument quoted as Rust's std does
//!   (`"` doubled, backslashes before a quote doubled). What `cmd.exe` would still interpret is
//!   refused with the offending field: CR, LF and NUL anywhere (they end or cut the command
//!   line), and `%` (std's `%%cd:~,%` trick relies on `cmd` substring expansion: through it,
//!   Wine 8's `cmd` still turned `%PATH%` into the path and `x%OS%y` into `xWindows_NTy`, and a
//!   real `cmd` may differ by version). `%` or `"` in the script's own path is refused too.
//!   The escaping is checked under Wine by `core/tests/integration/batch_files.rs` (without the quoting,
//!   `&calc` ran as a command there).

use std::ffi::OsString;
use std::io;

/// A command that cannot be passed on safely: which field and why. Agents report it as
/// `invalid_config` with `data.path` = `field`, terminals as a failed spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) struct Refused {
    /// `command` or `args[N]`.
    pub field: String,
    pub message: String,
}

#[derive(Debug)]
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) enum CommandError {
    Refused(Refused),
    /// Not found, or not usable (the spawn would have failed the same way).
    Io(io::Error),
}

/// The variables the child will see for the lookup: the request's overlay (a `None` value
/// removes the variable) over the host's environment.
#[derive(Debug, Default)]
pub(crate) struct EnvOverlay<'a> {
    pub vars: Vec<(&'a str, Option<&'a str>)>,
}

impl EnvOverlay<'_> {
    #[cfg_attr(not(windows), allow(dead_code))]
    fn var(&self, name: &str) -> Option<OsString> {
        // Windows names are case-insensitive; the last setting wins, as for `Command::env`.
        match self
            .vars
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
        {
            Some((_, v)) => v.map(OsString::from),
            None => std::env::var_os(name),
        }
    }
}

/// The command to spawn for `program args` (environment, cwd and stdio are the caller's).
/// `cwd` is the child's working directory: on Windows a relative program path is taken from it,
/// as on Unix (where `exec` runs after the `chdir`).
pub(crate) fn build(
    program: &str,
    args: &[String],
    env: &EnvOverlay<'_>,
    cwd: Option<&std::path::Path>,
) -> Result<tokio::process::Command, CommandError> {
    #[cfg(windows)]
    {
        windows::build(program, args, env, cwd)
    }
    #[cfg(not(windows))]
    {
        let _ = (env, cwd);
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        Ok(cmd)
    }
}

#[cfg(windows)]
mod windows {
    use std::path::{Path, PathBuf};

    use super::*;

    pub(super) fn build(
        program: &str,
        args: &[String],
        env: &EnvOverlay<'_>,
        cwd: Option<&Path>,
    ) -> Result<tokio::process::Command, CommandError> {
        let resolved = resolve(program, env, cwd)?;
        let Some(text) = resolved.to_str() else {
            return Err(CommandError::Io(io::Error::other(
                "the program's path is not valid Unicode",
            )));
        };
        // A `PATH` entry can bring a stream name in too.
        if let Some(message) = stream_in_name(text) {
            return Err(CommandError::Refused(Refused {
                field: "command".into(),
                message,
            }));
        }
        // What the name says and, for a link, what it leads to: either being a batch file
        // makes `CreateProcess` hand it to `cmd.exe`.
        let target_is_batch = std::fs::canonicalize(&resolved)
            .ok()
            .and_then(|p| p.to_str().map(is_batch_name))
            .unwrap_or(false);
        if is_batch_name(text) || target_is_batch {
            let line = batch_command_line(text, args).map_err(CommandError::Refused)?;
            let mut cmd = tokio::process::Command::new(cmd_exe());
            cmd.raw_arg(line);
            Ok(cmd)
        } else {
            let mut cmd = tokio::process::Command::new(&resolved);
            cmd.args(args);
            Ok(cmd)
        }
    }

    /// The system's `cmd.exe`, never one found on `PATH` or named by `COMSPEC` (both can be
    /// set by whoever shapes the environment).
    fn cmd_exe() -> PathBuf {
        let root = std::env::var_os("SystemRoot")
            .or_else(|| std::env::var_os("windir"))
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(r"C:\Windows"));
        root.join("System32").join("cmd.exe")
    }

    fn resolve(
        program: &str,
        env: &EnvOverlay<'_>,
        cwd: Option<&Path>,
    ) -> Result<PathBuf, CommandError> {
        if let Some(message) = stream_in_name(program) {
            return Err(CommandError::Refused(Refused {
                field: "command".into(),
                message,
            }));
        }
        let path = env.var("PATH").map(|p| p.to_string_lossy().into_owned());
        let pathext = env.var("PATHEXT").map(|p| p.to_string_lossy().into_owned());
        let cwd = cwd
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok());
        let cwd = cwd.as_deref().and_then(Path::to_str);
        let found = candidates(program, path.as_deref(), pathext.as_deref(), cwd)
            .into_iter()
            .map(PathBuf::from)
            .find(|c| c.is_file());
        found.ok_or_else(|| {
            let searched = if program.contains(['\\', '/']) {
                "tried"
            } else {
                "searched PATH"
            };
            CommandError::Io(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "`{program}` not found ({searched} with the extensions {})",
                    runnable_extensions(pathext.as_deref()).join(";")
                ),
            ))
        })
    }
}

/// Extensions `CreateProcess` can start (batch files through `cmd.exe`).
#[cfg(any(windows, test))]
const RUNNABLE: [&str; 4] = [".com", ".exe", ".bat", ".cmd"];

/// `PATHEXT`'s runnable extensions in its order (its default when unset or empty).
#[cfg(any(windows, test))]
fn runnable_extensions(pathext: Option<&str>) -> Vec<String> {
    let pathext = pathext
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(".COM;.EXE;.BAT;.CMD");
    let mut out: Vec<String> = Vec::new();
    for ext in pathext.split(';').map(str::trim) {
        let lower = ext.to_ascii_lowercase();
        if RUNNABLE.contains(&lower.as_str()) && !out.iter().any(|e| e.eq_ignore_ascii_case(ext)) {
            out.push(ext.to_owned());
        }
    }
    out
}

/// Windows: whether `path` does not depend on the current directory: `C:\`, `\\server\`,
/// `\\?\`, or rooted on the current drive (`\bin`, as Rust's `/work/...` paths are).
#[cfg(any(windows, test))]
fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/'))
        || path.starts_with(['\\', '/'])
}

/// Why a program name is refused for naming a stream (a `:` after the drive), if it does.
#[cfg(any(windows, test))]
fn stream_in_name(name: &str) -> Option<String> {
    let rest = name
        .strip_prefix(r"\\?\")
        .or_else(|| name.strip_prefix(r"\\.\"))
        .unwrap_or(name);
    let b = rest.as_bytes();
    let rest = if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        &rest[2..]
    } else {
        rest
    };
    rest.contains(':').then(|| {
        format!("`{name}` names an alternate data stream (a `:` after the drive); refused")
    })
}

/// The files to try for `name`, in order (see the module doc).
#[cfg(any(windows, test))]
fn candidates(
    name: &str,
    path: Option<&str>,
    pathext: Option<&str>,
    cwd: Option<&str>,
) -> Vec<String> {
    fn join(dir: &str, name: &str) -> String {
        if dir.ends_with('\\') || dir.ends_with('/') {
            format!("{dir}{name}")
        } else {
            format!("{dir}\\{name}")
        }
    }
    let bases: Vec<String> = if name.contains(['\\', '/']) || name.as_bytes().get(1) == Some(&b':')
    {
        if is_absolute(name) {
            vec![name.to_owned()]
        } else {
            // Relative to the child's working directory, as on Unix; without one, nothing.
            cwd.map(|c| vec![join(c, name)]).unwrap_or_default()
        }
    } else {
        path.unwrap_or("")
            .split(';')
            .map(|d| d.trim().trim_matches('"'))
            .filter(|d| is_absolute(d))
            .map(|d| join(d, name))
            .collect()
    };
    let exts = runnable_extensions(pathext);
    let file_name = name.rsplit(['\\', '/']).next().unwrap_or(name);
    let own_ext_runnable = file_name
        .rsplit_once('.')
        .is_some_and(|(_, e)| RUNNABLE.contains(&format!(".{}", e.to_ascii_lowercase()).as_str()));
    let mut out = Vec::new();
    for base in bases {
        if own_ext_runnable {
            out.push(base.clone());
        }
        for ext in &exts {
            out.push(format!("{base}{ext}"));
        }
    }
    out
}

/// Whether Windows runs `path` as a batch file: its name ends in `.bat` or `.cmd` once the
/// trailing dots and spaces Windows ignores are trimmed.
#[cfg(any(windows, test))]
fn is_batch_name(path: &str) -> bool {
    let name = path.rsplit(['\\', '/']).next().unwrap_or(path);
    let name = name.trim_end_matches(['.', ' ']).to_ascii_lowercase();
    name.ends_with(".bat") || name.ends_with(".cmd")
}

/// The command line after `cmd.exe` for running `script` with `args`, or what cannot be passed.
#[cfg(any(windows, test))]
fn batch_command_line(script: &str, args: &[String]) -> Result<String, Refused> {
    const HOSTILE: [(char, &str); 4] = [
        ('\0', "NUL"),
        ('\r', "a carriage return"),
        ('\n', "a line feed"),
        (
            '%',
            "`%` (cmd.exe expands %VARIABLES% in a batch file's arguments)",
        ),
    ];
    let refuse = |field: String, what: &str| Refused {
        field,
        message: format!("cannot be passed to a batch file safely: it contains {what}"),
    };
    for (c, what) in HOSTILE.iter().chain(&[('"', "`\"`")]) {
        if script.contains(*c) {
            return Err(refuse("command".into(), what));
        }
    }
    if script.ends_with('\\') {
        return Err(refuse("command".into(), "a trailing `\\`"));
    }
    // The outer quotes make `cmd /c` strip exactly one pair and run the rest as written.
    let mut line = format!("/e:ON /v:OFF /d /c \"\"{script}\"");
    for (i, arg) in args.iter().enumerate() {
        if let Some((_, what)) = HOSTILE.iter().find(|(c, _)| arg.contains(*c)) {
            return Err(refuse(format!("args[{i}]"), what));
        }
        line.push(' ');
        push_quoted(&mut line, arg);
    }
    line.push('"');
    Ok(line)
}

/// One argument, quoted unless it is made only of characters `cmd.exe` gives no meaning to;
/// inside quotes `&|<>^()` are plain text, `"` is doubled and backslashes before a quote are
/// doubled (the program's own parser then sees the original text).
#[cfg(any(windows, test))]
fn push_quoted(line: &mut String, arg: &str) {
    const PLAIN: &str = r"#$*+-./:?@\_";
    let quote = arg.is_empty()
        || arg.ends_with('\\')
        || arg.chars().any(|c| {
            (c.is_ascii() && !(c.is_ascii_alphanumeric() || PLAIN.contains(c))) || c.is_control()
        });
    if quote {
        line.push('"');
    }
    let mut backslashes = 0usize;
    for c in arg.chars() {
        if c == '\\' {
            backslashes += 1;
        } else {
            if c == '"' {
                line.extend(std::iter::repeat_n('\\', backslashes));
                line.push('"');
            }
            backslashes = 0;
        }
        line.push(c);
    }
    if quote {
        line.extend(std::iter::repeat_n('\\', backslashes));
        line.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn pathext_order_is_kept_and_only_runnable_extensions_are_tried() {
        let c = candidates(
            "npx",
            Some(r"relative\bin;C:\node;.;C:\tools\"),
            Some(".JS;.CMD;.EXE;.cmd;.VBS"),
            Some(r"C:\work"),
        );
        assert_eq!(
            c,
            [
                r"C:\node\npx.CMD",
                r"C:\node\npx.EXE",
                r"C:\tools\npx.CMD",
                r"C:\tools\npx.EXE"
            ]
        );
        // Unset PATHEXT: cmd.exe's default.
        let c = candidates("a", Some(r"C:\b"), None, None);
        assert_eq!(
            c,
            [r"C:\b\a.COM", r"C:\b\a.EXE", r"C:\b\a.BAT", r"C:\b\a.CMD"]
        );
    }

    #[test]
    fn a_name_with_its_extension_is_tried_first_and_paths_are_not_searched() {
        let c = candidates("x.cmd", Some(r"C:\b"), Some(".EXE"), None);
        assert_eq!(c, [r"C:\b\x.cmd", r"C:\b\x.cmd.EXE"]);
        let c = candidates(r"bin\agent", Some(r"C:\b"), Some(".EXE"), Some(r"C:\w"));
        assert_eq!(c, [r"C:\w\bin\agent.EXE"]);
        let c = candidates(r"D:\a\agent.exe", Some(r"C:\b"), Some(".EXE"), None);
        assert_eq!(c, [r"D:\a\agent.exe", r"D:\a\agent.exe.EXE"]);
        // Rooted on the current drive: not the working directory's.
        let c = candidates("/work/agent.exe", None, Some(".EXE"), Some(r"C:\w"));
        assert_eq!(c, ["/work/agent.exe", "/work/agent.exe.EXE"]);
        // No PATH: nothing to search (the current directory never is).
        assert!(candidates("agent", None, None, Some(r"C:\w")).is_empty());
    }

    #[test]
    fn batch_files_are_recognised_through_case_and_trailing_dots_and_spaces() {
        for name in [
            r"C:\a\x.cmd",
            r"C:\a\X.BAT",
            r"C:\a\x.cmd.",
            r"C:\a\x.Cmd . ",
            "CLAUDE~1.CMD",
        ] {
            assert!(is_batch_name(name), "{name}");
        }
        for name in [
            r"C:\a\x.exe",
            r"C:\a.cmd\x.exe",
            r"C:\a\x.cmdx",
            r"C:\a\cmd",
        ] {
            assert!(!is_batch_name(name), "{name}");
        }
    }

    #[test]
    fn streams_in_program_names_are_refused() {
        for name in [r"C:\a\x.cmd::$DATA", "x.cmd:s", r"\\?\C:\a\b:c", "a:b:c"] {
            assert!(stream_in_name(name).is_some(), "{name}");
        }
        for name in [
            r"C:\a\x.cmd",
            r"\\?\C:\a\x.exe",
            r"\\.\C:\x.exe",
            "npx",
            r"\\srv\s\x.exe",
        ] {
            assert!(stream_in_name(name).is_none(), "{name}");
        }
    }

    #[test]
    fn batch_arguments_are_quoted_so_cmd_sees_no_operator() {
        let line = batch_command_line(
            r"C:\a b\x.cmd",
            &args(&["plain", "&calc", "\"&whoami", "a\\", "", "x y", "^|<>()"]),
        );
        assert_eq!(
            line.as_deref().ok(),
            Some(
                r#"/e:ON /v:OFF /d /c ""C:\a b\x.cmd" plain "&calc" """&whoami" "a\\" "" "x y" "^|<>()"""#
            )
        );
        // Backslashes before a quote are doubled, so the quote stays a quote for the program.
        let line = batch_command_line(r"C:\x.cmd", &args(&[r#"a\"b"#]));
        assert_eq!(
            line.ok().as_deref(),
            Some(r##"/e:ON /v:OFF /d /c ""C:\x.cmd" "a\\""b"""##)
        );
    }

    #[test]
    fn what_cmd_would_interpret_is_refused_naming_the_field() {
        for (bad, what) in [
            ("%PATH%", "`%`"),
            ("a\nb", "line feed"),
            ("a\rb", "carriage return"),
            ("a\0b", "NUL"),
        ] {
            let r = batch_command_line(r"C:\x.cmd", &args(&["ok", bad]));
            let r = r.err();
            assert_eq!(
                r.as_ref().map(|r| r.field.as_str()),
                Some("args[1]"),
                "{bad:?}"
            );
            assert!(r.is_some_and(|r| r.message.contains(what)), "{bad:?}");
        }
        for script in [
            r"C:\100%\x.cmd",
            r#"C:\a"\x.cmd"#,
            "C:\\a\nb\\x.cmd",
            r"C:\x\",
        ] {
            let r = batch_command_line(script, &[]).err();
            assert_eq!(r.map(|r| r.field), Some("command".to_owned()), "{script:?}");
        }
    }
}
