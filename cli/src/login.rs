//! Terminal login for `acph run`: the agent's login runs in this terminal (stdin and stderr are
//! the user's; stdout too, except under `--json`, where it goes to stderr so stdout stays NDJSON).

use std::process::Stdio;
use std::sync::Arc;

use acp_host::Agent;
use acp_host::auth::{AuthKind, TerminalAuth, TerminalAuthCommand};

use crate::render::{eprint_line, full_line};

pub fn runner(json: bool) -> TerminalAuth {
    TerminalAuth::Runner(Arc::new(move |cmd: TerminalAuthCommand| async move {
        eprint_line(&format!(
            "acph: running the agent's login \"{}\" in this terminal: {} {}",
            full_line(&cmd.label),
            full_line(&cmd.command),
            full_line(&cmd.args.join(" "))
        ));
        let mut c = tokio::process::Command::new(&cmd.command);
        c.args(&cmd.args)
            .stdin(Stdio::inherit())
            .stderr(Stdio::inherit());
        if json {
            // A duplicate of our stderr handle (fd or Windows handle).
            c.stdout(Stdio::from(std::io::stderr()));
        } else {
            c.stdout(Stdio::inherit());
        }
        for (k, v) in &cmd.env {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(dir) = &cmd.cwd {
            c.current_dir(dir);
        }
        let status = c.status().await.map_err(|e| e.to_string())?;
        // Killed by a signal: not a successful login.
        Ok(status.code().unwrap_or(-1))
    }))
}

/// The agent's terminal login methods (ids).
pub fn terminal_methods(agent: &Agent) -> Vec<String> {
    agent
        .auth_methods()
        .into_iter()
        .filter(|m| matches!(m.kind, AuthKind::Terminal | AuthKind::LegacyTerminal))
        .map(|m| m.id)
        .collect()
}
