//! The log hook and `progress` events: an agent that does not answer `initialize` is visible at
//! once and every few seconds (not 120 s of silence), a handler's failure reaches the log with
//! its reason, and nothing is logged without a hook.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_host::log::{Level, LogHook, LogRecord};
use acp_host::{EventKind, Host, HostConfig, PermissionHandler, PermissionRequest, SessionOptions};
use common::{collect_until, mock};
use serde_json::Value;

const T: Duration = Duration::from_secs(30);

fn recorder(level: Level) -> (LogHook, Arc<Mutex<Vec<Value>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let hook = LogHook::new(
        Arc::new(move |r: &LogRecord| g.lock().unwrap().push(r.to_json())),
        level,
    );
    (hook, got)
}

fn steps(events: &[acp_host::Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Progress)
        .map(|e| {
            let d = e.data_value();
            format!(
                "{} {}",
                d["phase"].as_str().unwrap(),
                d["stage"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn spawn_and_handshake_are_reported_in_order() {
    let (log, records) = recorder(Level::Info);
    let host = Host::new(HostConfig {
        progress_events: true,
        log,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::Progress
            && e.data_value()["stage"] == "done"
            && e.data_value()["phase"] == "handshake"
    })
    .await;
    assert_eq!(
        steps(&evs),
        [
            "spawn started",
            "spawn done",
            "handshake started",
            "handshake done"
        ]
    );
    assert!(evs.iter().all(|e| e.agent == agent.id()));
    let ready = evs
        .iter()
        .position(|e| e.kind == EventKind::AgentReady)
        .unwrap();
    assert!(
        ready < evs.len() - 1,
        "agent_ready comes before the handshake's done"
    );
    let logged: Vec<String> = records
        .lock()
        .unwrap()
        .iter()
        .map(|r| r["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        logged.iter().any(|m| m.starts_with("handshake done")),
        "{logged:?}"
    );
    host.shutdown().await;
    assert!(
        records
            .lock()
            .unwrap()
            .iter()
            .any(|r| r["message"].as_str().unwrap().contains("exited")),
        "the agent's exit is logged"
    );
}

#[tokio::test]
async fn without_the_option_there_are_no_progress_events_and_without_a_hook_no_records() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let _agent = host.spawn(mock(None)).await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentReady).await;
    assert!(steps(&evs).is_empty(), "{:?}", steps(&evs));
    assert!(!host.config().log.enabled(Level::Error));
    host.shutdown().await;
}

#[tokio::test]
async fn an_agent_that_never_answers_initialize_is_reported_waiting() {
    let (log, records) = recorder(Level::Info);
    let host = Host::new(HostConfig {
        progress_events: true,
        request_timeout: Some(Duration::from_millis(6500)),
        log,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    // The mock sleeps a minute before it reads anything: `initialize` goes unanswered.
    let e = host
        .spawn(mock(None).args(["--sleep", "60000"]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "timeout", "{e}");
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::Progress && e.data_value()["stage"] == "failed"
    })
    .await;
    assert_eq!(
        steps(&evs),
        [
            "spawn started",
            "spawn done",
            "handshake started",
            "handshake waiting",
            "handshake failed"
        ]
    );
    let waiting = evs
        .iter()
        .find(|e| e.kind == EventKind::Progress && e.data_value()["stage"] == "waiting")
        .unwrap()
        .data_value();
    assert!(waiting["elapsedMs"].as_u64().unwrap() >= 4900, "{waiting}");
    assert!(
        waiting["message"].as_str().unwrap().contains("initialize"),
        "{waiting}"
    );
    let warned = records.lock().unwrap().iter().any(|r| {
        r["level"] == "warn"
            && r["message"]
                .as_str()
                .unwrap()
                .starts_with("handshake waiting")
    });
    assert!(warned, "the log hook hears of the wait too");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_permission_handler_is_logged_with_its_reason() {
    let (log, records) = recorder(Level::Warn);
    let host = Host::new(HostConfig {
        permission: PermissionHandler::Decider(Arc::new(|_r: PermissionRequest| async move {
            Err::<Option<String>, String>(
                "TypeError: ui.ask is not a function\n    at handler (ext.js:3:7)".into(),
            )
        })),
        log,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("permission-write"))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = agent
        .new_session(SessionOptions::new(dir.path().to_str().unwrap()))
        .await
        .unwrap();
    session.prompt_text("write").await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionResolved).await;
    let resolved = evs.last().unwrap().data_value();
    assert_eq!(resolved["decidedBy"], "invalid_answer");
    assert!(
        resolved["reason"]
            .as_str()
            .unwrap()
            .contains("at handler (ext.js:3:7)"),
        "{resolved}"
    );
    let r = records
        .lock()
        .unwrap()
        .iter()
        .find(|r| r["target"] == "permission")
        .cloned()
        .expect("a permission record");
    assert_eq!(r["level"], "warn");
    assert_eq!(r["session"], session.id());
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("ui.ask is not a function"),
        "{r}"
    );
    host.shutdown().await;
}
