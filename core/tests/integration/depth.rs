//! Deep nesting: a message from the agent that nests arrays and objects deeper than
//! `MAX_JSON_DEPTH` is refused whatever it is (notification, request, response), reported as
//! `protocol_error` `too_deep`, never forwarded (not even in a wire event); a request is answered
//! `-32600`, a response fails its call, and the connection carries on. JSON from the embedder
//! that would make a deeper message is `invalid_argument`, nothing sent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use acp_host::services::ExtService;
use acp_host::{Event, EventKind, EventStream, Host, HostConfig};
use common::fake::{self, Fake};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(10);
/// The limit (`acp_host::wire::MAX_JSON_DEPTH`, docs/ARCHITECTURE.md), written out so these
/// tests say what they expect (and run against a core without the limit).
const MAX_JSON_DEPTH: usize = 100;
const DEEP: usize = 100_000;

/// `levels` arrays, one inside the other, around `0`.
fn nested(levels: usize) -> String {
    format!("{}0{}", "[".repeat(levels), "]".repeat(levels))
}

/// A `session/update` whose update nests `extra` arrays in `_meta`: the line nests `3 + extra`
/// levels (the message, its params, the update, then the arrays).
fn update_line(session: &str, text: &str, extra: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}},"_meta":{}}}}}}}"#,
        nested(extra)
    )
}

struct Setup {
    _host: Host,
    events: EventStream,
    agent: acp_host::Agent,
    session: acp_host::Session,
    fake: Fake,
}

async fn setup(config: HostConfig) -> Setup {
    let host = Host::new(config);
    let events = host.events().unwrap();
    let (agent, mut fake) = fake::connect(&host).await;
    let session = fake::open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
    Setup {
        _host: host,
        events,
        agent,
        session,
        fake,
    }
}

/// Events until (and with) the first that `stop` accepts.
async fn until(events: &mut EventStream, stop: impl Fn(&Event) -> bool) -> Vec<Event> {
    common::collect_until(events, T, stop).await
}

fn too_deep(evs: &[Event]) -> Vec<Value> {
    evs.iter()
        .filter(|e| e.kind == EventKind::ProtocolError)
        .map(Event::data_value)
        .filter(|d| d["reason"] == "too_deep")
        .collect()
}

/// No event carries anything nested deeper than the limit (the whole envelope counted).
fn assert_nothing_deep(evs: &[Event]) {
    for ev in evs {
        let json = ev.to_json();
        assert!(
            depth_of(&json) <= MAX_JSON_DEPTH + 2,
            "forwarded too deep: {:.200}",
            json
        );
        assert!(
            serde_json::from_str::<Value>(&json).is_ok(),
            "every event parses with serde_json: {:.200}",
            json
        );
    }
}

/// How deep JSON text nests (brackets in strings skipped), the plain way.
fn depth_of(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_str, mut escaped) = (0usize, 0, false, false);
    for b in text.bytes() {
        match (in_str, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_str = false,
            (true, false, _) => {}
            (false, _, b'"') => in_str = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[test]
fn the_limit_is_the_cores() {
    assert_eq!(acp_host::wire::MAX_JSON_DEPTH, MAX_JSON_DEPTH);
    assert_eq!(depth_of(r#"{"a":["]","\"[",{}]}"#), 3);
}

fn is_text(ev: &Event, text: &str) -> bool {
    ev.kind == EventKind::SessionUpdate && fake::chunk_text(ev) == text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_session_update_is_reported_not_forwarded_and_the_session_goes_on() {
    let Setup {
        mut events,
        agent,
        session,
        mut fake,
        _host,
        ..
    } = setup(HostConfig {
        wire_events: true,
        ..HostConfig::default()
    })
    .await;
    fake.send_raw(&format!("{}\n", update_line("s1", "deep", DEEP)))
        .await;
    fake.send(fake::update("s1", "after")).await;
    let evs = until(&mut events, |e| is_text(e, "after")).await;
    let reports = too_deep(&evs);
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0]["method"], "session/update");
    assert_eq!(reports[0]["limit"], MAX_JSON_DEPTH);
    assert!(reports[0].get("id").is_none());
    assert!(
        !evs.iter().any(|e| is_text(e, "deep")),
        "the deep update must not be an event"
    );
    // Not in a wire event either (the next line is).
    let wire_updates: Vec<Value> = evs
        .iter()
        .filter(|e| e.kind == EventKind::Wire)
        .map(Event::data_value)
        .filter(|d| d["direction"] == "in" && d["message"]["method"] == "session/update")
        .collect();
    assert_eq!(
        wire_updates.len(),
        1,
        "only the `after` line: {wire_updates:?}"
    );
    assert_nothing_deep(&evs);
    // The session carries on: a turn works.
    let s = session.clone();
    let turn = tokio::spawn(async move { s.prompt_text("go").await });
    let req = fake.wait_method("session/prompt", T).await;
    fake.send(fake::update("s1", "reply")).await;
    fake.respond(&req["id"], json!({"stopReason": "end_turn"}))
        .await;
    let turn = tokio::time::timeout(T, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(turn.text, "reply");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_counts_the_whole_message_and_what_is_within_it_is_forwarded_whole() {
    let Setup {
        mut events,
        agent,
        fake,
        _host,
        ..
    } = setup(HostConfig::default()).await;
    // Exactly at the limit: forwarded as sent. One level more: refused.
    let at = MAX_JSON_DEPTH - 3;
    fake.send_raw(&format!("{}\n", update_line("s1", "at", at)))
        .await;
    fake.send_raw(&format!("{}\n", update_line("s1", "over", at + 1)))
        .await;
    fake.send(fake::update("s1", "after")).await;
    let evs = until(&mut events, |e| is_text(e, "after")).await;
    let at_limit: Vec<&Event> = evs.iter().filter(|e| is_text(e, "at")).collect();
    assert_eq!(at_limit.len(), 1);
    assert_eq!(
        at_limit[0].data_value()["_meta"].to_string(),
        nested(at),
        "forwarded whole"
    );
    assert!(!evs.iter().any(|e| is_text(e, "over")));
    assert_eq!(too_deep(&evs).len(), 1);
    assert_nothing_deep(&evs);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_request_is_answered_with_an_error_and_reported() {
    let Setup {
        mut events,
        agent,
        mut fake,
        _host,
        ..
    } = setup(HostConfig {
        ext: ExtService::Embedder(Arc::new(|_m: String, _p: Value| async move {
            Ok(json!({"ok": true}))
        })),
        ..HostConfig::default()
    })
    .await;
    for (id, method) in [
        (json!("deep-1"), "_vendor/deep"),
        (json!(7), "fs/read_text_file"),
        (json!(8), "session/request_permission"),
    ] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"sessionId":"s1","x":{}}}}}"#,
            nested(DEEP)
        );
        fake.send_raw(&format!("{line}\n")).await;
        let answer = fake.wait_response(&id, T).await;
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert!(answer.get("result").is_none());
    }
    // The connection carries on: the next request is served.
    fake.send(json!({"jsonrpc":"2.0","id":9,"method":"_vendor/ok","params":{}}))
        .await;
    let answer = fake.wait_response(&json!(9), T).await;
    assert_eq!(answer["result"], json!({"ok": true}), "{answer}");
    let evs = until(&mut events, |e| e.kind == EventKind::ExtRequest).await;
    let reports = too_deep(&evs);
    let ids: Vec<&Value> = reports.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!("deep-1"), &json!(7), &json!(8)]);
    assert_eq!(reports[1]["method"], "fs/read_text_file");
    assert!(
        !evs.iter().any(|e| matches!(
            e.kind,
            EventKind::PermissionRequested | EventKind::FsRead | EventKind::ExtRequest
        ) && e.data_value()["method"] != "_vendor/ok"),
        "nothing of the deep requests reached a handler: {evs:?}"
    );
    assert_nothing_deep(&evs);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_response_fails_its_call_and_the_connection_goes_on() {
    let Setup {
        mut events,
        agent,
        mut fake,
        _host,
        ..
    } = setup(HostConfig::default()).await;
    let a = agent.clone();
    let call = tokio::spawn(async move { a.ext_request("_x/q", &json!({})).await });
    let req = fake.wait_method("_x/q", T).await;
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"x":{}}}}}"#,
        req["id"],
        nested(DEEP)
    );
    fake.send_raw(&format!("{line}\n")).await;
    let err = tokio::time::timeout(T, call)
        .await
        .expect("the call is not left waiting")
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), "protocol", "{err}");
    assert!(err.to_string().contains("deeper than"), "{err}");
    // The same for an error object.
    let a = agent.clone();
    let call = tokio::spawn(async move { a.ext_request("_x/q", &json!({})).await });
    let req = fake.wait_method("_x/q", T).await;
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":1,"message":"m","data":{}}}}}"#,
        req["id"],
        nested(DEEP)
    );
    fake.send_raw(&format!("{line}\n")).await;
    let err = tokio::time::timeout(T, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), "protocol", "{err}");
    // A result no tree holds (a number out of range) fails too: not a silent `null`.
    let a = agent.clone();
    let call = tokio::spawn(async move { a.ext_request("_x/q", &json!({})).await });
    let req = fake.wait_method("_x/q", T).await;
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"n":1e400}}}}"#,
        req["id"]
    );
    fake.send_raw(&format!("{line}\n")).await;
    let err = tokio::time::timeout(T, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), "protocol", "{err}");
    // The next call is answered normally.
    let a = agent.clone();
    let call = tokio::spawn(async move { a.ext_request("_x/q", &json!({})).await });
    let req = fake.wait_method("_x/q", T).await;
    fake.respond(&req["id"], json!({"fine": 1})).await;
    let ok = tokio::time::timeout(T, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(ok, json!({"fine": 1}));
    fake.send(fake::update("s1", "after")).await;
    let evs = until(&mut events, |e| is_text(e, "after")).await;
    let reports = too_deep(&evs);
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert!(
        reports
            .iter()
            .all(|r| r["id"].is_u64() && r.get("method").is_none())
    );
    assert_nothing_deep(&evs);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedder_json_that_would_nest_too_deep_is_invalid_argument_and_not_sent() {
    let Setup {
        _host,
        agent,
        mut fake,
        ..
    } = setup(HostConfig::default()).await;
    // Built in code: deeper than serde_json would ever parse (and than a recursive walk could).
    let mut deep = Value::Null;
    for _ in 0..DEEP {
        deep = Value::Array(vec![deep]);
    }
    // (Not `json!`: it would serialise the tree, recursively.)
    let params = Value::Object([("x".to_owned(), deep)].into_iter().collect());
    let err = agent.ext_request("_x/deep", &params).await.unwrap_err();
    assert_eq!(err.kind(), "invalid_argument", "{err}");
    // Params are level 2 of the request: params nesting one level less than the limit fit.
    let fits: Value = serde_json::from_str(&nested(MAX_JSON_DEPTH - 1)).unwrap();
    let over: Value = serde_json::from_str(&nested(MAX_JSON_DEPTH)).unwrap();
    assert_eq!(
        agent
            .ext_request("_x/over", &over)
            .await
            .unwrap_err()
            .kind(),
        "invalid_argument"
    );
    let a = agent.clone();
    let call = tokio::spawn(async move { a.ext_request("_x/fits", &fits).await });
    let req = fake.wait_method("_x/fits", T).await;
    fake.respond(&req["id"], json!(1)).await;
    assert_eq!(call.await.unwrap().unwrap(), json!(1));
    // Nothing of the refused ones was sent.
    let sent = fake.recv_for(Duration::from_millis(200)).await;
    assert!(
        !sent
            .iter()
            .any(|m| m["method"] == "_x/deep" || m["method"] == "_x/over"),
        "{sent:?}"
    );
    // Take the tree apart without recursing (dropping it whole would overflow the stack).
    let mut v = params;
    loop {
        v = match v {
            Value::Array(mut a) => a.pop().unwrap_or(Value::Null),
            Value::Object(mut o) => o.remove("x").unwrap_or(Value::Null),
            _ => break,
        };
    }
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_handler_result_answers_the_agent_with_an_error_not_a_deep_line() {
    let Setup {
        mut events,
        agent,
        mut fake,
        _host,
        ..
    } = setup(HostConfig {
        ext: ExtService::Embedder(Arc::new(|_m: String, _p: Value| async move {
            Ok(serde_json::from_str(&nested(MAX_JSON_DEPTH)).unwrap_or(Value::Null))
        })),
        ..HostConfig::default()
    })
    .await;
    fake.send(json!({"jsonrpc":"2.0","id":1,"method":"_vendor/x","params":{}}))
        .await;
    let answer = fake.wait_response(&json!(1), T).await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    let evs = until(&mut events, |e| e.kind == EventKind::ExtRequest).await;
    let report = evs.last().unwrap().data_value();
    assert_eq!(report["outcome"], "error", "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap()
            .contains("deeper than"),
        "{report}"
    );
    agent.shutdown().await;
}
