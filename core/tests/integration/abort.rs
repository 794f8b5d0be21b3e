//! An aborted prompt always settles (issue 15): with the agent's own answer when it comes within
//! `cancel_grace`, otherwise with `cancelled`, even when the agent ignores `session/cancel`.
//! Late events keep the turn id, a late answer is reported once, and shutdown after an ignored
//! cancel leaves no process behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use acp_host::{
    Agent, Event, EventKind, EventStream, Host, HostConfig, PermissionHandler, Session,
    SessionOptions,
};
use common::*;
use tokio::sync::oneshot;

const T: Duration = Duration::from_secs(20);

fn config(grace_ms: u64) -> HostConfig {
    HostConfig {
        cancel_grace: Duration::from_millis(grace_ms),
        wire_events: true,
        ..HostConfig::default()
    }
}

/// A host with `config`, the mock agent playing `scenario`, and a session.
async fn open(config: HostConfig, scenario: &str) -> (Host, EventStream, Agent, Session) {
    let host = Host::new(config);
    let events = host.events().unwrap();
    let agent = host.spawn(mock(Some(scenario))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    (host, events, agent, session)
}

/// A prompt ("go") running in a task, and the sender that aborts it.
fn abortable_prompt(
    session: &Session,
) -> (
    oneshot::Sender<()>,
    tokio::task::JoinHandle<acp_host::Result<acp_host::TurnResult>>,
) {
    let (stop, stopped) = oneshot::channel::<()>();
    let s = session.clone();
    let turn = tokio::spawn(async move {
        let abort = async {
            let _ = stopped.await;
        };
        s.prompt_abortable(
            vec![serde_json::json!({"type": "text", "text": "go"})],
            abort,
        )
        .await
    });
    (stop, turn)
}

fn sent_methods(evs: &[Event]) -> Vec<String> {
    evs.iter()
        .filter(|e| e.kind == EventKind::Wire && e.data_value()["direction"] == "out")
        .filter_map(|e| {
            e.data_value()["message"]["method"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_settles_with_cancelled_when_the_agent_never_answers() {
    let (_host, mut events, agent, session) = open(config(400), "hang").await;
    let pid = agent.pid().unwrap();
    let (stop, turn) = abortable_prompt(&session);
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::SessionUpdate).await;
    let turn_id = evs.last().unwrap().turn.unwrap();
    let started = Instant::now();
    stop.send(()).unwrap();
    let err = tokio::time::timeout(T, turn)
        .await
        .expect("an aborted prompt must settle")
        .unwrap()
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), "cancelled", "{err}");
    assert!(
        took >= Duration::from_millis(350) && took < Duration::from_secs(3),
        "settles after the grace, not before and not much later: {took:?}"
    );
    // The turn ended once, as cancelled, and `session/cancel` went out (once).
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let ended = evs.last().unwrap();
    assert_eq!(ended.turn, Some(turn_id));
    assert_eq!(ended.data_value()["error"]["kind"], "cancelled");
    let cancels = sent_methods(&evs)
        .iter()
        .filter(|m| *m == "session/cancel")
        .count();
    assert_eq!(cancels, 1, "{:?}", sent_methods(&evs));
    // The session is usable locally again.
    assert!(session.state().active_turn.is_none());
    // Shutting down after an ignored cancel completes within the ladder; nothing is left.
    let started = Instant::now();
    tokio::time::timeout(T, agent.shutdown()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        wait_gone(pid, Duration::from_secs(5)).await,
        "agent {pid} left behind"
    );
    let rest = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    assert!(
        !rest.iter().any(|e| e.kind == EventKind::TurnEnded),
        "the turn ends once: {:?}",
        kinds(&rest)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_returns_the_agents_answer_when_it_comes_within_the_grace() {
    let (_host, mut events, agent, session) = open(config(5_000), "wait-for-cancel").await;
    let (stop, turn) = abortable_prompt(&session);
    collect_until(&mut events, T, |e| {
        e.kind == EventKind::SessionUpdate && e.data_value()["sessionUpdate"] == "tool_call"
    })
    .await;
    let started = Instant::now();
    stop.send(()).unwrap();
    let result = tokio::time::timeout(T, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(result.stop_reason, "cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "did not wait for the grace"
    );
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(evs.last().unwrap().data_value()["stopReason"], "cancelled");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_events_keep_the_turn_id_and_the_late_answer_is_reported_once() {
    // `ignore-cancel` keeps streaming for about a second after the cancel, then answers end_turn.
    let (_host, mut events, agent, session) = open(config(100), "ignore-cancel").await;
    let (stop, turn) = abortable_prompt(&session);
    let first = collect_until(&mut events, T, |e| e.kind == EventKind::SessionUpdate).await;
    let turn_id = first.last().unwrap().turn.unwrap();
    stop.send(()).unwrap();
    let err = tokio::time::timeout(T, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), "cancelled");
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ProtocolError && e.data_value()["reason"] == "late_response"
    })
    .await;
    let ended: Vec<&Event> = of_kind(&evs, EventKind::TurnEnded);
    assert_eq!(ended.len(), 1, "{:?}", kinds(&evs));
    assert_eq!(ended[0].data_value()["error"]["kind"], "cancelled");
    let late_updates: Vec<&Event> = evs
        .iter()
        .skip_while(|e| e.kind != EventKind::TurnEnded)
        .filter(|e| e.kind == EventKind::SessionUpdate)
        .collect();
    assert!(
        !late_updates.is_empty(),
        "the agent kept streaming: {:?}",
        kinds(&evs)
    );
    assert!(
        late_updates.iter().all(|e| e.turn == Some(turn_id)),
        "late updates are tagged with their turn"
    );
    let late = evs.last().unwrap();
    assert_eq!(late.turn, Some(turn_id));
    assert_eq!(late.session.as_deref(), Some(session.id()));
    assert_eq!(late.data_value()["result"]["stopReason"], "end_turn");
    // Not applied: no second turn_ended, and the session's state keeps the local outcome.
    let after = drain(&mut events, Duration::from_millis(300)).await;
    assert!(!after.iter().any(|e| e.kind == EventKind::TurnEnded));
    assert_ne!(
        session.state().last_stop_reason.as_deref(),
        Some("end_turn")
    );
    // A new turn can start (the session is not busy) and is no longer tagged with the old one.
    let s = session.clone();
    let next = tokio::spawn(async move { s.prompt_text("again").await });
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::SessionUpdate).await;
    let update = evs.last().unwrap();
    assert!(update.turn.is_some_and(|t| t > turn_id), "{update:?}");
    next.abort();
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_answers_the_turns_pending_permission_requests_at_once() {
    let manual = HostConfig {
        permission: PermissionHandler::Manual,
        ..config(5_000)
    };
    let (_host, mut events, agent, session) = open(manual, "cancel-pending-permission").await;
    let (stop, turn) = abortable_prompt(&session);
    collect_until(&mut events, T, |e| e.kind == EventKind::PermissionRequested).await;
    stop.send(()).unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionResolved).await;
    let resolved = evs.last().unwrap().data_value();
    assert_eq!(resolved["decidedBy"], "cancelled", "{resolved}");
    let result = tokio::time::timeout(T, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(result.stop_reason, "cancelled");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_prompt_frees_the_session_after_the_grace() {
    // Dropping the future abandons the turn the same way: an agent that ignores the cancel
    // does not keep the session busy for ever.
    let (_host, mut events, agent, session) = open(config(200), "hang").await;
    let _ = tokio::time::timeout(Duration::from_millis(300), session.prompt_text("go")).await;
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(
        evs.last().unwrap().data_value()["error"]["kind"],
        "cancelled"
    );
    assert!(session.state().active_turn.is_none());
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_cancel_also_settles_a_prompt_the_agent_never_answers() {
    // A sync embedder stops a turn from another thread with `cancel()`: the prompt waiting in
    // the first thread must come back too.
    let (_host, mut events, agent, session) = open(config(300), "hang").await;
    let s = session.clone();
    let turn = tokio::spawn(async move { s.prompt_text("go").await });
    collect_until(&mut events, T, |e| e.kind == EventKind::SessionUpdate).await;
    session.cancel().await.unwrap();
    let err = tokio::time::timeout(T, turn)
        .await
        .expect("a cancelled prompt must settle")
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), "cancelled");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(
        sent_methods(&evs)
            .iter()
            .filter(|m| *m == "session/cancel")
            .count(),
        1
    );
    agent.shutdown().await;
}
