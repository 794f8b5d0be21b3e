//! Bounded against agent input: what a flooding or stuck agent can make the host hold, and how
//! a broken way to the agent ends the calls waiting on it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{EventKind, Host, HostConfig, PermissionHandler};
use common::fake;
use serde_json::json;

fn permission_request(id: u64, session: &str) -> serde_json::Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "session/request_permission",
        "params": {
            "sessionId": session,
            "toolCall": {"toolCallId": format!("t{id}"), "title": "x", "kind": "edit"},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
            ]
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_agent_requests_are_capped_and_the_rest_refused_at_once() {
    let host = Host::new(HostConfig {
        permission: PermissionHandler::Manual, // nobody answers: requests stay pending
        max_pending_agent_requests: 16,
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    let (agent, mut fake) = fake::connect_with_pipe(&host, 1 << 20).await;
    fake::open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
    for id in 0..100 {
        fake.send(permission_request(id, "s1")).await;
    }
    // 84 are refused at once with a JSON-RPC error; the 16 pending ones get nothing yet.
    let mut refused = Vec::new();
    while refused.len() < 84 {
        let msg = fake.recv(Duration::from_secs(5)).await.unwrap();
        assert_eq!(msg["error"]["code"], -32603, "{msg}");
        refused.push(msg["id"].as_u64().unwrap());
    }
    assert_eq!(refused, (16..100).collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut requested = 0;
    let mut overflow_reports = 0;
    while let Some(ev) = events.try_next() {
        match ev.kind {
            EventKind::PermissionRequested => requested += 1,
            EventKind::ProtocolError if ev.data_value()["reason"] == "too_many_requests" => {
                overflow_reports += 1
            }
            _ => {}
        }
    }
    assert_eq!(requested, 16);
    assert_eq!(
        overflow_reports, 1,
        "reported once per episode, not per request"
    );
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_error_fails_the_pending_calls_at_once() {
    let host = Host::new(HostConfig {
        events_enabled: false,
        request_timeout: None,
        ..HostConfig::default()
    });
    let (agent, mut fake) = fake::connect(&host).await;
    let session = fake::open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
    // The agent stops reading its stdin for good (its end of the pipe is gone), while its
    // stdout stays open: only the host's writes can tell.
    fake.stop_reading();
    let started = std::time::Instant::now();
    let res = tokio::time::timeout(Duration::from_secs(5), session.prompt_text("hi"))
        .await
        .expect("the prompt must not wait for an answer to a request the agent never got");
    let err = res.unwrap_err();
    assert_eq!(err.kind(), "io", "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(fake);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_transport_that_stops_reading_is_ended_not_buffered_for() {
    let host = Host::new(HostConfig {
        max_outbound_bytes: 256 * 1024,
        request_timeout: None,
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    // A tiny pipe: once it is full, everything the host says queues inside the host.
    let (agent, mut fake) = fake::connect_with_pipe(&host, 4096).await;
    fake::open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
    // From now on the fake reads nothing (but keeps its end open).
    let big = "x".repeat(64 * 1024);
    let mut calls = Vec::new();
    for _ in 0..8 {
        let agent = agent.clone();
        let params = json!({ "pad": big });
        calls.push(tokio::spawn(async move {
            agent.ext_request("_x/big", &params).await
        }));
    }
    for call in calls {
        let res = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("calls to a stuck connection must fail, not wait")
            .unwrap();
        let err = res.unwrap_err();
        assert!(
            matches!(err.kind(), "io" | "agent_exited"),
            "unexpected {err}"
        );
    }
    // The connection ended, and said why.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut stalled = false;
    loop {
        let ev = tokio::time::timeout_at(deadline, events.next())
            .await
            .expect("agent_exited")
            .unwrap();
        if ev.kind == EventKind::ProtocolError && ev.data_value()["reason"] == "stdin_stalled" {
            stalled = true;
        }
        if ev.kind == EventKind::AgentExited {
            break;
        }
    }
    assert!(stalled);
    drop(fake);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_answer_is_released_when_nobody_pulls() {
    // The prompt's answer is read, but its `turn_ended` does not fit a full queue nobody pulls:
    // the caller gets the real answer (not `events_stalled`), and the events stay queued in
    // order. The queue holds exactly `turn_started` + the 40 updates, so the agent is still read
    // when the answer arrives, however the pipe splits the block.
    let host = Host::new(HostConfig {
        event_capacity: 41,
        event_stall_timeout: Some(Duration::from_millis(300)),
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    let (agent, mut fake) = fake::connect(&host).await;
    let session = fake::open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
    while events.try_next().is_some() {}
    let s = session.clone();
    let prompt = tokio::spawn(async move { s.prompt_text("hi").await });
    let req = fake
        .wait_method("session/prompt", Duration::from_secs(5))
        .await;
    // One write: the updates and the answer reach the host together.
    let mut block = String::new();
    for i in 0..40 {
        block.push_str(&fake::update("s1", &i.to_string()).to_string());
        block.push('\n');
    }
    block.push_str(
        &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"stopReason": "end_turn"}})
            .to_string(),
    );
    block.push('\n');
    fake.send_raw(&block).await;
    let turn = tokio::time::timeout(Duration::from_secs(5), prompt)
        .await
        .expect("a known answer must not wait for a consumer for ever")
        .unwrap()
        .unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    // Everything is still delivered, in order, ending with turn_ended.
    let mut updates = 0;
    let mut kinds = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("events")
            .unwrap();
        kinds.push(ev.kind);
        match ev.kind {
            EventKind::SessionUpdate => updates += 1,
            EventKind::TurnEnded => break,
            _ => {}
        }
    }
    assert_eq!(updates, 40);
    assert_eq!(kinds.first(), Some(&EventKind::TurnStarted), "{kinds:?}");
    assert_eq!(kinds.len(), 42, "{kinds:?}");
    agent.shutdown().await;
}

/// A buffered transport: `poll_write` only buffers, and every flush is `Pending` once before it
/// moves the bytes on. The actor's own write then cannot finish its flush; the writer task must
/// (and every later line must wait behind it).
struct LazyFlush {
    inner: tokio::io::DuplexStream,
    buf: Vec<u8>,
    deferred: bool,
}

impl tokio::io::AsyncWrite for LazyFlush {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.buf.extend_from_slice(data);
        std::task::Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        if !self.deferred {
            self.deferred = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let this = &mut *self;
        while !this.buf.is_empty() {
            match std::pin::Pin::new(&mut this.inner).poll_write(cx, &this.buf) {
                Poll::Ready(Ok(n)) => {
                    this.buf.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        this.deferred = false;
        std::pin::Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transport_whose_flush_does_not_finish_at_once_still_gets_every_line() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let host = Host::new(HostConfig {
        events_enabled: false,
        ..HostConfig::default()
    });
    let (host_r, mut agent_w) = tokio::io::duplex(64 * 1024);
    let (agent_r, host_w) = tokio::io::duplex(64 * 1024);
    let writer = LazyFlush {
        inner: host_w,
        buf: Vec::new(),
        deferred: false,
    };
    let h = host.clone();
    let connect = tokio::spawn(async move { h.connect(host_r, writer).await });
    let mut lines = tokio::io::BufReader::new(agent_r).lines();
    let step = Duration::from_secs(5);
    let mut next = async || -> serde_json::Value {
        let line = tokio::time::timeout(step, lines.next_line())
            .await
            .expect("the host's line arrives although its flush was deferred")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    };
    let init = next().await;
    assert_eq!(init["method"], "initialize");
    let answer = json!({"jsonrpc":"2.0","id":init["id"],"result":{
        "protocolVersion":1,"agentCapabilities":{},"authMethods":[]}});
    agent_w
        .write_all(format!("{answer}\n").as_bytes())
        .await
        .unwrap();
    let agent = connect.await.unwrap().unwrap();
    // Several requests at once, while earlier bytes may still wait for their flush: each lands.
    let calls: Vec<_> = (0..5)
        .map(|i| {
            let a = agent.clone();
            tokio::spawn(async move { a.ext_request("_bench/echo", &json!({ "i": i })).await })
        })
        .collect();
    let mut seen = Vec::new();
    for _ in 0..5 {
        let req = next().await;
        assert_eq!(req["method"], "_bench/echo");
        seen.push(req["params"]["i"].as_u64().unwrap());
        let reply = json!({"jsonrpc":"2.0","id":req["id"],"result":{}});
        agent_w
            .write_all(format!("{reply}\n").as_bytes())
            .await
            .unwrap();
    }
    for c in calls {
        c.await.unwrap().unwrap();
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2, 3, 4], "every request arrived once");
    agent.shutdown().await;
}
