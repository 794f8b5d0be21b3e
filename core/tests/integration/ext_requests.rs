//! The agent's `_` extension requests: served by the embedder's `ExtHandler` (result verbatim,
//! errors as JSON-RPC errors, reported as `ext_request` events), -32601 without one; and the
//! host's own `ext_request` accepts extension methods only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use acp_host::services::{ExtService, ServiceError};
use acp_host::{Event, EventKind, Host, HostConfig, SessionOptions};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

async fn run(config: HostConfig) -> (String, Vec<Event>) {
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("ext-request"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = tokio::time::timeout(T, session.prompt_text("go"))
        .await
        .unwrap()
        .unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    agent.shutdown().await;
    (turn.text, evs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_handler_extension_requests_are_method_not_found() {
    let (text, evs) = run(HostConfig::default()).await;
    assert_eq!(text, "ext error -32601 ping error -32601");
    assert!(of_kind(&evs, EventKind::ExtRequest).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_serves_them_and_each_is_reported() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<(String, Value)>::new()));
    let s = seen.clone();
    let handler = move |method: String, params: Value| {
        s.lock().unwrap().push((method.clone(), params.clone()));
        async move {
            match method.as_str() {
                "_acp_host_test/buffers" => Ok(json!({"text": "unsaved"})),
                _ => Err(ServiceError::new(-32042, "no pings here")),
            }
        }
    };
    let (text, evs) = run(HostConfig {
        ext: ExtService::Embedder(Arc::new(handler)),
        ..HostConfig::default()
    })
    .await;
    assert_eq!(text, "ext ok unsaved ping error -32042");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, "_acp_host_test/buffers");
    assert!(seen[0].1["uri"].as_str().unwrap().ends_with("/a.rs"));
    let reported = of_kind(&evs, EventKind::ExtRequest);
    assert_eq!(reported.len(), 2);
    assert_eq!(reported[0].data_value()["outcome"], "ok");
    assert!(reported[0].session.is_some(), "it named a known session");
    assert_eq!(reported[1].data_value()["outcome"], "error");
    assert_eq!(reported[1].data_value()["error"]["code"], -32042);
    assert!(reported[1].session.is_none());
    // Each answer reached the agent: the events carry their receipts.
    for r in &reported {
        assert_eq!(r.data_value()["receipt"], json!({"status": "delivered"}));
    }
}

/// A handler's large result whose pipe fails mid-write: `ext_request` says `uncertain`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_result_whose_pipe_fails_mid_write_is_reported_uncertain() {
    let handler = |method: String, _params: Value| async move {
        match method.as_str() {
            "_receipt/big" => Ok(json!({"text": "b".repeat(1 << 20)})),
            _ => Ok(json!({})),
        }
    };
    let host = Host::new(HostConfig {
        ext: ExtService::Embedder(Arc::new(handler)),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host
        .spawn(mock(Some("receipt-broken-pipe-ext")))
        .await
        .unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let _turn = tokio::spawn(async move { session.prompt_text("go").await });
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ExtRequest && e.data_value()["method"] == "_receipt/big"
    })
    .await;
    let big = evs.last().unwrap().data_value();
    assert_eq!(big["outcome"], "ok");
    assert_eq!(big["receipt"]["status"], "uncertain", "{big}");
    assert_eq!(big["receipt"]["code"], "io");
    let filler = of_kind(&evs, EventKind::ExtRequest)[0].data_value();
    assert_eq!(filler["receipt"]["status"], "delivered", "{filler}");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_ext_request_is_for_extension_methods_only() {
    let host = Host::new(HostConfig::default());
    let (agent, mut fake) = fake::connect(&host).await;
    let err = agent
        .ext_request("session/new", &json!({"cwd": "/tmp"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_argument");
    assert!(fake.recv_for(Duration::from_millis(200)).await.is_empty());
    let a = agent.clone();
    let call = tokio::spawn(async move { a.ext_request("_x/y", &json!({"k": 1})).await });
    let req = fake.wait_method("_x/y", T).await;
    assert_eq!(req["params"], json!({"k": 1}));
    fake.respond(&req["id"], json!({"v": 2})).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"v": 2}));
}
