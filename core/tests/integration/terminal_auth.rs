//! Terminal login (`Agent::terminal_auth`): the agent's `terminal` auth method (and the legacy
//! `_meta["terminal-auth"]`) run through the embedder's runner, then a relaunched agent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::{Arc, Mutex};

use acp_host::auth::{AuthKind, TerminalAuth, TerminalAuthCommand};
use acp_host::{EventKind, Host, HostConfig, SessionOptions};
use common::*;

/// A runner that runs the login as a plain child process (a test has no terminal) and records
/// what it was asked to run.
fn runner(seen: Arc<Mutex<Vec<TerminalAuthCommand>>>) -> TerminalAuth {
    TerminalAuth::Runner(Arc::new(move |cmd: TerminalAuthCommand| {
        seen.lock().unwrap().push(cmd.clone());
        async move {
            let mut c = tokio::process::Command::new(&cmd.command);
            c.args(&cmd.args).stdout(std::process::Stdio::null());
            for (k, v) in &cmd.env {
                match v {
                    Some(v) => c.env(k, v),
                    None => c.env_remove(k),
                };
            }
            let status = c.status().await.map_err(|e| e.to_string())?;
            Ok(status.code().unwrap_or(-1))
        }
    }))
}

fn spec(creds: &std::path::Path) -> acp_host::AgentSpec {
    mock(Some("auth-required")).env("ACP_MOCK_CREDENTIALS", creds.to_string_lossy())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_login_relaunches_the_agent_and_the_failed_call_then_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("creds");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let host = Host::new(HostConfig {
        terminal_auth: runner(seen.clone()),
        wire_events: true,
        ..HostConfig::default()
    });
    let caps = host.client_capabilities().to_json();
    assert_eq!(caps["auth"]["terminal"], true);
    assert_eq!(caps["_meta"]["terminal-auth"], true);
    let mut events = host.events().unwrap();
    let agent = host.spawn(spec(&creds)).await.unwrap();
    let kinds: Vec<_> = agent
        .auth_methods()
        .iter()
        .map(|m| (m.id.clone(), m.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("mock-login".to_owned(), AuthKind::Agent),
            ("mock-terminal".to_owned(), AuthKind::Terminal)
        ]
    );
    let err = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "auth_required");

    let relaunched = agent.terminal_auth("mock-terminal").await.unwrap();
    assert_ne!(relaunched.id(), agent.id());
    // The login ran the agent's own command with the method's args appended and env overlaid.
    let cmd = seen.lock().unwrap()[0].clone();
    assert_eq!(cmd.command, mock_agent().to_string_lossy());
    assert_eq!(cmd.args, ["--scenario", "auth-required", "--login"]);
    assert_eq!(cmd.env.get("MOCK_LOGIN"), Some(&Some("1".to_owned())));
    assert!(creds.exists());
    // The retried call succeeds on the relaunched agent; the old one was shut down.
    let session = relaunched
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert_eq!(
        session.prompt_text("hi").await.unwrap().stop_reason,
        "end_turn"
    );
    let evs = drain(&mut events, std::time::Duration::from_millis(300)).await;
    let exited: Vec<u64> = of_kind(&evs, EventKind::AgentExited)
        .iter()
        .map(|e| e.agent)
        .collect();
    assert_eq!(exited, [agent.id()]);
    // `authenticate` was never sent for the terminal method.
    let sent: Vec<String> = of_kind(&evs, EventKind::Wire)
        .iter()
        .map(|e| {
            e.data_value()["message"]["method"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert!(sent.iter().any(|m| m == "session/new"), "{sent:?}");
    assert!(!sent.iter().any(|m| m == "authenticate"), "{sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_login_is_auth_required_and_leaves_the_agent_running() {
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("creds");
    let host = Host::new(HostConfig {
        terminal_auth: runner(Arc::default()),
        ..HostConfig::default()
    });
    let agent = host
        .spawn(spec(&creds).env("ACP_MOCK_LOGIN_FAIL", "1"))
        .await
        .unwrap();
    let err = agent.terminal_auth("mock-terminal").await.unwrap_err();
    assert_eq!(err.kind(), "auth_required");
    assert_eq!(err.data()["data"]["exitCode"], 3);
    assert!(!creds.exists());
    // Still the same, usable agent: the agent method works.
    agent.authenticate("mock-login").await.unwrap();
    agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_runner_or_for_an_agent_method_terminal_login_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    assert!(host.client_capabilities().to_json().get("auth").is_none());
    let agent = host.spawn(spec(&dir.path().join("c"))).await.unwrap();
    assert_eq!(
        agent
            .terminal_auth("mock-terminal")
            .await
            .unwrap_err()
            .kind(),
        "unsupported"
    );
    assert_eq!(
        agent
            .authenticate("mock-terminal")
            .await
            .unwrap_err()
            .kind(),
        "unsupported"
    );

    let host = Host::new(HostConfig {
        terminal_auth: runner(Arc::default()),
        ..HostConfig::default()
    });
    let agent = host.spawn(spec(&dir.path().join("c"))).await.unwrap();
    assert_eq!(
        agent.terminal_auth("mock-login").await.unwrap_err().kind(),
        "invalid_argument"
    );
    assert_eq!(
        agent.terminal_auth("nope").await.unwrap_err().kind(),
        "invalid_argument"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_legacy_terminal_auth_meta_runs_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("creds");
    let scenario = dir.path().join("legacy.json");
    let doc = serde_json::json!({
        "initialize": { "authMethods": [ { "id": "legacy", "name": "Log in",
            "_meta": { "terminal-auth": { "args": ["--login"], "label": "Legacy login",
                                          "env": { "MOCK_LOGIN": "legacy" } } } } ] },
        "authRequired": true,
        "prompts": [[ { "update": { "sessionUpdate": "agent_message_chunk",
            "content": { "type": "text", "text": "in" } } } ]]
    });
    std::fs::write(&scenario, doc.to_string()).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let host = Host::new(HostConfig {
        terminal_auth: runner(seen.clone()),
        ..HostConfig::default()
    });
    let spec =
        mock(Some(scenario.to_str().unwrap())).env("ACP_MOCK_CREDENTIALS", creds.to_string_lossy());
    let agent = host.spawn(spec).await.unwrap();
    assert_eq!(agent.auth_methods()[0].kind, AuthKind::LegacyTerminal);
    assert_eq!(
        agent
            .new_session(SessionOptions::new(tmp_cwd()))
            .await
            .unwrap_err()
            .kind(),
        "auth_required"
    );
    let fresh = agent.terminal_auth("legacy").await.unwrap();
    let cmd = seen.lock().unwrap()[0].clone();
    // No `command` in the meta: the agent's own command, the meta's args appended.
    assert_eq!(cmd.command, mock_agent().to_string_lossy());
    assert_eq!(cmd.args.last().map(String::as_str), Some("--login"));
    assert_eq!(cmd.label, "Legacy login");
    assert_eq!(cmd.env.get("MOCK_LOGIN"), Some(&Some("legacy".to_owned())));
    fresh
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
}
