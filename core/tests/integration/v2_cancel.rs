//! ACP v2 `tool_call/cancel` and `terminal/cancel` (`Session::cancel_tool_call`,
//! `Session::cancel_terminal`): sent only on a v2 connection while the tool call's or
//! terminal's latest update advertises `capabilities.cancel`; the call returns the agent's
//! acceptance, the completion is the later `session_update`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{Agent, Event, EventKind, EventStream, Host, HostConfig, Session, SessionOptions};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

async fn open(v2: bool) -> (Host, EventStream, Agent, Session) {
    let config = HostConfig {
        unstable: if v2 {
            vec!["protocol/v2".into()]
        } else {
            vec![]
        },
        ..HostConfig::default()
    };
    let host = Host::new(config);
    let events = host.events().unwrap();
    let agent = host.spawn(mock(Some("v2-cancel"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    (host, events, agent, session)
}

fn update_of(e: &Event) -> Value {
    if e.kind == EventKind::SessionUpdate {
        e.data_value()
    } else {
        Value::Null
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellable_tool_call_is_accepted_then_confirmed_by_its_update() {
    let (_host, mut events, _agent, session) = open(true).await;
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("run").await });
    let evs = collect_until(&mut events, T, |e| {
        update_of(e)["capabilities"]["cancel"].is_object()
    })
    .await;
    let announced = update_of(evs.last().unwrap());
    assert_eq!(announced["toolCallId"], "call_1");
    // The answer is the acceptance; the work was still running when the agent gave it.
    let accepted = session.cancel_tool_call("call_1").await.unwrap();
    assert_eq!(accepted, json!({}));
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let confirmed = evs
        .iter()
        .position(|e| update_of(e)["status"] == "cancelled")
        .expect("the confirming tool_call_update");
    let idle = evs
        .iter()
        .position(|e| update_of(e)["state"] == "idle")
        .unwrap();
    assert!(confirmed < idle, "{evs:?}");
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, "end_turn");
    // The confirming update cleared the capability: a second cancel is refused locally.
    let again = session.cancel_tool_call("call_1").await.unwrap_err();
    assert_eq!(again.kind(), "unsupported", "{again}");
    // A terminal of that id does not exist: the kinds are apart.
    let other = session.cancel_terminal("call_1").await.unwrap_err();
    assert_eq!(other.kind(), "invalid_argument", "{other}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellable_terminal_is_accepted_then_confirmed_by_its_exit_status() {
    let (_host, mut events, _agent, session) = open(true).await;
    run_cancelling(&session, 1, "call_1").await;
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("two").await });
    collect_until(&mut events, T, |e| {
        update_of(e)["terminalId"] == "term_2" && update_of(e)["capabilities"]["cancel"].is_object()
    })
    .await;
    assert_eq!(session.cancel_terminal("term_2").await.unwrap(), json!({}));
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::TurnEnded && e.turn == Some(2)
    })
    .await;
    assert!(
        evs.iter()
            .any(|e| update_of(e)["exitStatus"]["signal"] == "SIGTERM"),
        "{evs:?}"
    );
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, "end_turn");
    let again = session.cancel_terminal("term_2").await.unwrap_err();
    assert_eq!(again.kind(), "unsupported", "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_capability_unknown_or_refused_the_cancel_fails_typed() {
    let (_host, _events, _agent, session) = open(true).await;
    // Before any update: unknown ids.
    let e = session.cancel_tool_call("call_1").await.unwrap_err();
    assert_eq!(e.kind(), "invalid_argument", "{e}");
    let e = session.cancel_terminal("nope").await.unwrap_err();
    assert_eq!(e.kind(), "invalid_argument", "{e}");
    // Turns 1 and 2 wait for their cancels; turn 3 only shows work that is not cancellable.
    run_cancelling(&session, 1, "call_1").await;
    run_cancelling(&session, 2, "term_2").await;
    session.prompt_text("three").await.unwrap();
    let e = session.cancel_tool_call("call_3").await.unwrap_err();
    assert_eq!(e.kind(), "unsupported", "{e}");
    let e = session.cancel_terminal("term_3").await.unwrap_err();
    assert_eq!(e.kind(), "unsupported", "{e}");
    // Advertised as far as the host saw, refused by the agent (-32602): its error.
    let e = session.cancel_tool_call("refused_3").await.unwrap_err();
    assert_eq!(e.kind(), "agent_error", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_v1_connection_the_cancels_are_unsupported() {
    let (_host, _events, agent, session) = open(false).await;
    assert_eq!(agent.info().unwrap().protocol_version, 1);
    let e = session.cancel_tool_call("call_1").await.unwrap_err();
    assert_eq!(e.kind(), "unsupported", "{e}");
    let e = session.cancel_terminal("term_1").await.unwrap_err();
    assert_eq!(e.kind(), "unsupported", "{e}");
}

/// Prompt turn `n`, which waits for the cancel of `id`: cancel it as soon as the host knows it.
async fn run_cancelling(session: &Session, n: u32, id: &str) {
    let s2 = session.clone();
    let t = tokio::spawn(async move { s2.prompt_text(&format!("turn {n}")).await });
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let r = if id.starts_with("call") {
            session.cancel_tool_call(id).await
        } else {
            session.cancel_terminal(id).await
        };
        match r {
            Err(e) if e.kind() == "invalid_argument" && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            r => {
                r.unwrap();
                break;
            }
        }
    }
    assert_eq!(t.await.unwrap().unwrap().stop_reason, "end_turn");
}
