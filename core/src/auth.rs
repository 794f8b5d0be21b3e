//! Terminal authentication: the agent's interactive login, run in a terminal the embedder
//! provides ([`TerminalAuthRunner`]), after which the agent is relaunched and re-initialised.
//!
//! Two shapes are understood (ACP v1 `initialize` → `authMethods`):
//! - `{"type": "terminal", "id", "name", "args"?, "env"?}`: relaunch the host's own agent command
//!   with `args` appended and `env` overlaid (the spec; the registry's older docs said "replace"
//!   — we follow the spec).
//! - the legacy `_meta["terminal-auth"]: {"command"?, "args"?, "env"?, "label"?}` on any method:
//!   run `command args` (without a `command`: the agent's own command with `args` appended).
//!
//! The client never sends `authenticate` for these: an agent that offers terminal login expects
//! the login to happen out of band (some never answer `authenticate`). A login that exits 0 is
//! followed by a fresh agent process (a new handshake), as the spec asks.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde::Serialize;
use serde_json::Value;

use crate::AgentSpec;

/// One way the agent offers to authenticate (`authMethods[i]`, parsed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthMethodInfo {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// `agent` (call `authenticate`), `terminal` (the spec's terminal login) or
    /// `legacy_terminal` (`_meta["terminal-auth"]`).
    pub kind: AuthKind,
}

/// How a method authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthKind {
    Agent,
    Terminal,
    LegacyTerminal,
}

impl AuthMethodInfo {
    /// Parse one `authMethods` entry; `None` when it has no string `id`.
    pub fn parse(method: &Value) -> Option<AuthMethodInfo> {
        let id = method.get("id")?.as_str()?.to_owned();
        let text = |k: &str| method.get(k).and_then(Value::as_str).map(str::to_owned);
        let kind = match method.get("type").and_then(Value::as_str) {
            Some("terminal") => AuthKind::Terminal,
            _ if legacy(method).is_some() => AuthKind::LegacyTerminal,
            _ => AuthKind::Agent,
        };
        Some(AuthMethodInfo {
            name: text("name").unwrap_or_else(|| id.clone()),
            description: text("description"),
            id,
            kind,
        })
    }
}

fn legacy(method: &Value) -> Option<&Value> {
    method
        .get("_meta")
        .and_then(|m| m.get("terminal-auth"))
        .filter(|t| t.is_object())
}

/// The login to run in a terminal: a program, its arguments and environment (no shell).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalAuthCommand {
    /// The auth method's id.
    pub method_id: String,
    /// What to show the user (the legacy `label`, else the method's name).
    pub label: String,
    pub command: String,
    pub args: Vec<String>,
    /// Overlaid on the inherited environment; `None` removes a variable.
    pub env: BTreeMap<String, Option<String>>,
    pub cwd: Option<PathBuf>,
}

/// Build the login command of `method` for an agent started from `spec`.
pub fn terminal_command(method: &Value, spec: &AgentSpec) -> Option<TerminalAuthCommand> {
    let info = AuthMethodInfo::parse(method)?;
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let overlay = |env: &mut BTreeMap<String, Option<String>>, v: Option<&Value>| {
        if let Some(obj) = v.and_then(Value::as_object) {
            for (k, val) in obj {
                if let Some(s) = val.as_str() {
                    env.insert(k.clone(), Some(s.to_owned()));
                }
            }
        }
    };
    let mut env = spec.env.clone();
    let (command, args, label) = match info.kind {
        AuthKind::Agent => return None,
        AuthKind::Terminal => {
            let mut args = spec.args.clone();
            args.extend(strings(method.get("args")));
            overlay(&mut env, method.get("env"));
            (spec.command.clone(), args, info.name.clone())
        }
        AuthKind::LegacyTerminal => {
            let meta = legacy(method)?;
            let extra = strings(meta.get("args"));
            overlay(&mut env, meta.get("env"));
            let label = meta
                .get("label")
                .and_then(Value::as_str)
                .map_or_else(|| info.name.clone(), str::to_owned);
            match meta.get("command").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => (c.to_owned(), extra, label),
                _ => {
                    let mut args = spec.args.clone();
                    args.extend(extra);
                    (spec.command.clone(), args, label)
                }
            }
        }
    };
    Some(TerminalAuthCommand {
        method_id: info.id,
        label,
        command,
        args,
        env,
        cwd: spec.cwd.clone(),
    })
}

/// The future a [`TerminalAuthRunner`] returns: the login's exit code (0 = logged in), or why it
/// could not be run.
pub type TerminalAuthFuture = Pin<Box<dyn Future<Output = Result<i32, String>> + Send>>;

/// An embedder that runs a login interactively, in a terminal the user sees (an IDE's integrated
/// terminal, the CLI's TTY). Configured with `HostConfig::terminal_auth`; only then does the host
/// advertise `clientCapabilities.auth.terminal` (and the legacy `_meta["terminal-auth"]`).
pub trait TerminalAuthRunner: Send + Sync + 'static {
    fn run(&self, command: TerminalAuthCommand) -> TerminalAuthFuture;
}

impl<F, Fut> TerminalAuthRunner for F
where
    F: Fn(TerminalAuthCommand) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<i32, String>> + Send + 'static,
{
    fn run(&self, command: TerminalAuthCommand) -> TerminalAuthFuture {
        Box::pin((self)(command))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> AgentSpec {
        AgentSpec::new("/usr/bin/agent")
            .args(["--acp"])
            .env("A", "1")
    }

    #[test]
    fn a_terminal_method_appends_args_and_overlays_env() {
        let m = serde_json::json!({"id": "login", "name": "Log in", "type": "terminal",
            "args": ["--login"], "env": {"A": "2", "B": "3"}});
        let c = terminal_command(&m, &spec()).expect("a terminal method");
        assert_eq!(c.command, "/usr/bin/agent");
        assert_eq!(c.args, ["--acp", "--login"]);
        assert_eq!(c.env.get("A"), Some(&Some("2".to_owned())));
        assert_eq!(c.env.get("B"), Some(&Some("3".to_owned())));
        assert_eq!(c.label, "Log in");
    }

    #[test]
    fn the_legacy_meta_shape_runs_its_own_command_or_the_agents() {
        let own = serde_json::json!({"id": "login", "name": "Login",
            "_meta": {"terminal-auth": {"command": "kimi", "args": ["login"], "label": "Kimi Login"}}});
        let c = terminal_command(&own, &spec()).expect("legacy");
        assert_eq!(
            (c.command.as_str(), c.args.clone()),
            ("kimi", vec!["login".to_owned()])
        );
        assert_eq!(c.label, "Kimi Login");
        assert_eq!(
            AuthMethodInfo::parse(&own).map(|i| i.kind),
            Some(AuthKind::LegacyTerminal)
        );
        let args_only =
            serde_json::json!({"id": "l", "_meta": {"terminal-auth": {"args": ["login"]}}});
        let c = terminal_command(&args_only, &spec()).expect("legacy without command");
        assert_eq!(c.command, "/usr/bin/agent");
        assert_eq!(c.args, ["--acp", "login"]);
    }

    #[test]
    fn agent_methods_and_malformed_entries_have_no_terminal_command() {
        let agent = serde_json::json!({"id": "key", "name": "API key"});
        assert!(terminal_command(&agent, &spec()).is_none());
        assert_eq!(
            AuthMethodInfo::parse(&agent).map(|i| i.kind),
            Some(AuthKind::Agent)
        );
        assert!(AuthMethodInfo::parse(&serde_json::json!({"name": "no id"})).is_none());
        // The spec's type wins over a legacy block on the same method.
        let both = serde_json::json!({"id": "x", "type": "terminal", "args": ["--login"],
            "_meta": {"terminal-auth": {"command": "other"}}});
        assert_eq!(
            terminal_command(&both, &spec()).map(|c| c.command),
            Some("/usr/bin/agent".into())
        );
    }
}

/// Who runs terminal logins (`HostConfig::terminal_auth`).
#[derive(Clone, Default)]
pub enum TerminalAuth {
    /// Nobody (default): terminal login is not advertised; `Agent::terminal_auth` is unsupported.
    #[default]
    Unsupported,
    Runner(std::sync::Arc<dyn TerminalAuthRunner>),
}

impl std::fmt::Debug for TerminalAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TerminalAuth::Unsupported => f.write_str("Unsupported"),
            TerminalAuth::Runner(_) => f.write_str("Runner(..)"),
        }
    }
}
