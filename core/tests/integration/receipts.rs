//! Delivery receipts for the embedder's answers: `delivered` once the answer's line is written
//! to the agent's stdin, `rejected` (with the request's state) when the answer was not used or
//! could not be sent, `uncertain` when the pipe failed mid-write or the agent stopped reading.
//! The respond call and the resolution event carry the same receipt.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use acp_host::{
    ElicitationAnswer, ElicitationHandler, ElicitationModes, EventKind, Host, HostConfig,
    PermissionHandler, Receipt, RequestState, SessionOptions,
};
use common::*;
use serde_json::json;

const T: Duration = Duration::from_secs(20);

fn manual_host() -> Host {
    Host::new(HostConfig {
        permission: PermissionHandler::Manual,
        elicitation: ElicitationHandler::Manual {
            modes: ElicitationModes::FORM_AND_URL,
        },
        ..HostConfig::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_answer_is_delivered_and_a_second_one_rejected() {
    let host = manual_host();
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("x").await });
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionRequested).await;
    let id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    let receipt = host
        .respond_permission(id, Some("allow-once".into()))
        .await
        .unwrap();
    assert_eq!(receipt, Receipt::Delivered);
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionResolved).await;
    let resolved = evs.last().unwrap().data_value();
    assert_eq!(resolved["decidedBy"], "host");
    assert_eq!(resolved["receipt"], json!({"status": "delivered"}));
    // The answer reached the agent: its turn went on with it.
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, "end_turn");
    // A second answer is not used: rejected, the request unavailable, the reason typed.
    let err = host.respond_permission(id, None).await.unwrap_err();
    assert_eq!(err.kind(), "already_resolved");
    let Some(Receipt::Rejected { state, code, .. }) = err.receipt() else {
        panic!("{err:?}")
    };
    assert_eq!(
        (state, code.as_str()),
        (RequestState::Unavailable, "already_resolved")
    );
    assert_eq!(err.to_json()["data"]["receipt"]["status"], "rejected");
    assert_eq!(err.to_json()["data"]["receipt"]["state"], "unavailable");
    // An unknown id: rejected, unavailable, not_found.
    let err = host.respond_permission(987_654, None).await.unwrap_err();
    assert_eq!(err.kind(), "not_found");
    assert!(matches!(
        err.receipt(),
        Some(Receipt::Rejected { state: RequestState::Unavailable, ref code, .. }) if code == "not_found"
    ));
    assert_eq!(host.permission_request_state(id), RequestState::Unavailable);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_option_not_offered_is_rejected_and_the_deny_sent_in_its_place_is_delivered() {
    let host = manual_host();
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("x").await });
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionRequested).await;
    let id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    assert_eq!(host.permission_request_state(id), RequestState::Pending);
    let err = host
        .respond_permission(id, Some("yolo".into()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_argument");
    assert!(matches!(
        err.receipt(),
        Some(Receipt::Rejected { state: RequestState::Unavailable, ref code, .. }) if code == "invalid_argument"
    ));
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionResolved).await;
    let resolved = evs.last().unwrap().data_value();
    assert_eq!(resolved["decidedBy"], "invalid_answer");
    assert_eq!(resolved["receipt"]["status"], "delivered");
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, "end_turn");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_resolved_without_an_answer_carry_no_receipt() {
    let host = manual_host();
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let _turn = tokio::spawn(async move { s2.prompt_text("x").await });
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionRequested).await;
    let id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    agent.shutdown().await;
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    let resolved = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].data_value()["decidedBy"], "disconnected");
    assert!(resolved[0].data_value().get("receipt").is_none());
    let err = host.respond_permission(id, None).await.unwrap_err();
    assert!(matches!(
        err.receipt(),
        Some(Receipt::Rejected {
            state: RequestState::Unavailable,
            ..
        })
    ));
}

/// The agent of `scenario` asks for a form and stops reading its stdin; answer it with a note
/// larger than a pipe holds. The respond call's receipt, how long it took, and the
/// `elicitation_resolved` event.
async fn big_answer(scenario: &str) -> (Receipt, Duration, serde_json::Value) {
    let host = manual_host();
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some(scenario))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let _turn = tokio::spawn(async move { s2.prompt_text("x").await });
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    let note = "n".repeat(1 << 20);
    let answer = ElicitationAnswer::Accept(acp_host::elicitation::content(json!({ "note": note })));
    let t0 = Instant::now();
    let receipt = host.respond_elicitation(id, answer).await.unwrap();
    let took = t0.elapsed();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ElicitationResolved).await;
    let resolved = evs.last().unwrap().data_value();
    agent.shutdown().await;
    (receipt, took, resolved)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipe_that_fails_mid_write_makes_the_receipt_uncertain() {
    let (receipt, _, resolved) = big_answer("receipt-broken-pipe").await;
    let Receipt::Uncertain { code, .. } = &receipt else {
        panic!("{receipt:?}")
    };
    assert_eq!(code, "io");
    assert_eq!(resolved["decidedBy"], "host");
    assert_eq!(resolved["receipt"], receipt.to_json());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_stops_reading_does_not_hang_the_respond_call() {
    let (receipt, took, resolved) = big_answer("receipt-stalled").await;
    let Receipt::Uncertain { code, .. } = &receipt else {
        panic!("{receipt:?}")
    };
    assert_eq!(code, "timeout");
    assert!(
        took >= acp_host::receipt::RECEIPT_WAIT && took < acp_host::receipt::RECEIPT_WAIT * 2,
        "{took:?}"
    );
    assert_eq!(resolved["receipt"], receipt.to_json());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_answer_is_delivered_and_invalid_content_rejected() {
    let host = manual_host();
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("elicitation"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("go").await });
    // The form: content that does not match the schema is rejected (and answered cancel).
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    let bad = ElicitationAnswer::Accept(acp_host::elicitation::content(json!({"target": 3})));
    let err = host.respond_elicitation(id, bad).await.unwrap_err();
    assert_eq!(err.kind(), "invalid_argument");
    assert!(matches!(
        err.receipt(),
        Some(Receipt::Rejected {
            state: RequestState::Unavailable,
            ..
        })
    ));
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ElicitationResolved).await;
    let resolved = evs.last().unwrap().data_value();
    assert_eq!(resolved["decidedBy"], "invalid_answer");
    assert_eq!(resolved["receipt"]["status"], "delivered");
    // The URL consent: delivered.
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    let receipt = host
        .respond_elicitation(id, ElicitationAnswer::Accept(None))
        .await
        .unwrap();
    assert_eq!(receipt, Receipt::Delivered);
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ElicitationResolved).await;
    assert_eq!(
        evs.last().unwrap().data_value()["receipt"],
        json!({"status": "delivered"})
    );
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, "end_turn");
    let err = host
        .respond_elicitation(id, ElicitationAnswer::Decline)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "already_resolved");
    assert_eq!(err.to_json()["data"]["receipt"]["state"], "unavailable");
    agent.shutdown().await;
}
