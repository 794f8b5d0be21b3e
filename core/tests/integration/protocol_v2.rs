//! The draft ACP v2 beside v1 (`unstable: ["protocol/v2"]`): negotiation, the v2 prompt
//! lifecycle (acceptance, then `state_update`s to `idle`), agent-initiated turns, no client
//! fs/terminal under v2, and v1 agents unaffected.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{Error, Event, EventKind, Host, HostConfig, SessionOptions};
use common::fake::{connect_v2, connect_v2_with, open_session};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

fn v2_config() -> HostConfig {
    HostConfig {
        unstable: vec!["protocol/v2".into()],
        ..HostConfig::default()
    }
}

/// v2 switched on, and permissions allowed (the host's handler picks allow-once).
fn v2_allowing() -> HostConfig {
    HostConfig {
        permission: allow_once(),
        ..v2_config()
    }
}

/// `kind` or `session_update:<sessionUpdate>[:<state>]`, with the turn id.
fn trace(evs: &[Event]) -> Vec<(String, Option<u64>)> {
    evs.iter()
        .map(|e| {
            let mut k = describe(e);
            if e.kind == EventKind::SessionUpdate
                && let Some(state) = e.data_value().get("state").and_then(Value::as_str)
            {
                k = format!("{k}:{state}");
            }
            (k, e.turn)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_agent_is_unaffected_with_v2_switched_on() {
    let host = Host::new(v2_config());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    assert_eq!(agent.info().unwrap().protocol_version, 1);
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("hello").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(evs[0].kind, EventKind::AgentReady);
    assert_eq!(evs[0].data_value()["protocolVersion"], 1);
    assert_eq!(of_kind(&evs, EventKind::TurnStarted).len(), 1);
    assert_eq!(of_kind(&evs, EventKind::TurnEnded).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_agent_speaks_v1_unless_v2_is_switched_on() {
    let host = Host::new(HostConfig::default());
    let agent = host.spawn(mock(Some("v2-lifecycle"))).await.unwrap();
    assert_eq!(agent.info().unwrap().protocol_version, 1);
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    // v1: the answer ends the turn (the permission is denied by the default policy).
    let turn = session.prompt_text("hi").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    assert!(turn.text.contains("Hello from v2."), "{}", turn.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_prompt_is_accepted_then_ends_at_idle_with_its_stop_reason() {
    let host = Host::new(v2_allowing());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("v2-lifecycle"))).await.unwrap();
    let info = agent.info().unwrap();
    assert_eq!(info.protocol_version, 2);
    assert_eq!(info.name(), Some("acp-mock-agent"));
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("hi").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.text, "Hello from v2. Permission: selected allow.");
    assert_eq!(turn.raw["messageId"], format!("msg_{}_1", session.id()));
    assert_eq!(turn.raw["state"]["state"], "idle");

    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_seq_strictly_increasing(&evs);
    assert_eq!(evs[0].data_value()["protocolVersion"], 2);
    let t = Some(turn.turn);
    let tr: Vec<_> = trace(&evs)
        .into_iter()
        .skip_while(|(k, _)| k != "turn_started")
        .collect();
    let want: Vec<(String, Option<u64>)> = [
        "turn_started",
        "session_update:state_update:running",
        "session_update:agent_message_chunk",
        "session_update:tool_call",
        "session_update:state_update:requires_action",
        "permission_requested",
        "permission_resolved",
        "session_update:state_update:running",
        "session_update:agent_message_chunk",
        "session_update:tool_call_update",
        "session_update:state_update:idle",
        "turn_ended",
    ]
    .iter()
    .map(|k| (k.to_string(), t))
    .collect();
    assert_eq!(tr, want);
    let ended = of_kind(&evs, EventKind::TurnEnded)[0].data_value();
    assert_eq!(ended["stopReason"], "end_turn");
    assert_eq!(ended["messageId"], turn.raw["messageId"]);
    assert_eq!(
        session.state().last_stop_reason.as_deref(),
        Some("end_turn")
    );
    assert_eq!(session.state().active_turn, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_has_no_client_fs_and_other_stop_reasons_come_from_idle() {
    let host = Host::new(v2_allowing());
    let agent = host.spawn(mock(Some("v2-lifecycle"))).await.unwrap();
    let cwd = tmp_cwd();
    std::fs::write(std::path::Path::new(&cwd).join("notes.txt"), "secret").unwrap();
    let session = agent.new_session(SessionOptions::new(cwd)).await.unwrap();
    session.prompt_text("one").await.unwrap();
    let turn = session.prompt_text("two").await.unwrap();
    assert_eq!(turn.stop_reason, "max_tokens");
    // Served under v1 (fs is on by default); under v2 the method does not exist.
    assert_eq!(turn.text, "fs error -32601");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_cancel_ends_the_turn_at_the_agents_cancelled_idle() {
    let host = Host::new(v2_allowing());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("v2-lifecycle"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    session.prompt_text("one").await.unwrap();
    session.prompt_text("two").await.unwrap();
    let s2 = session.clone();
    let waiting = tokio::spawn(async move { s2.prompt_text("three").await });
    // The work is running once its chunk is here; the prompt was accepted before.
    collect_until(&mut events, T, |e| {
        e.kind == EventKind::SessionUpdate
            && e.data_value()["content"]["text"] == "Working until you cancel..."
    })
    .await;
    session.cancel().await.unwrap();
    let turn = waiting.await.unwrap().unwrap();
    assert_eq!(turn.stop_reason, "cancelled");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let k = kinds(&evs);
    assert_eq!(
        &k[k.len() - 2..],
        ["session_update:state_update", "turn_ended"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_the_agent_starts_by_itself_is_a_turn_of_its_own() {
    let host = Host::new(v2_config());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("v2-agent-initiated"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("hi").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let mut evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    // The agent's own turn follows the prompt's.
    evs.extend(collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await);
    assert_seq_strictly_increasing(&evs);
    let a = Some(turn.turn);
    let tr: Vec<_> = trace(&evs)
        .into_iter()
        .skip_while(|(k, _)| k != "turn_started")
        .collect();
    let b = tr
        .iter()
        .rev()
        .find(|(k, _)| k == "turn_started")
        .and_then(|(_, t)| *t);
    assert!(b.is_some() && b != a, "{tr:?}");
    let want: Vec<(String, Option<u64>)> = [
        ("turn_started", a),
        ("session_update:state_update:running", a),
        ("session_update:agent_message_chunk", a),
        ("session_update:state_update:idle", a),
        ("turn_ended", a),
        ("turn_started", b),
        ("session_update:state_update:running", b),
        ("session_update:agent_message_chunk", b),
        ("session_update:state_update:idle", b),
        ("turn_ended", b),
    ]
    .iter()
    .map(|(k, t)| (k.to_string(), *t))
    .collect();
    assert_eq!(tr, want);
    let started = of_kind(&evs, EventKind::TurnStarted);
    assert_eq!(started[1].data_value()["origin"], "agent");
    assert_eq!(started[1].data_value()["prompt"], Value::Array(vec![]));
    // The session is free again: the next prompt is its own turn.
    let next = session.prompt_text("again").await.unwrap();
    assert_eq!(next.text, "Turn 2.");
}

fn idle(session: &str, stop: &str) -> Value {
    json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":session,
        "update":{"sessionUpdate":"state_update","state":"idle","stopReason":stop}}})
}

fn running(session: &str) -> Value {
    json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":session,
        "update":{"sessionUpdate":"state_update","state":"running"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_answer_without_message_id_fails_the_prompt_and_ends_the_turn() {
    let host = Host::new(v2_config());
    let mut events = host.events().unwrap();
    let (agent, mut fake) = connect_v2(&host).await;
    assert_eq!(agent.info().unwrap().protocol_version, 2);
    let session = open_session(&agent, &mut fake, "s1", &tmp_cwd()).await;
    let s = session.clone();
    let call = tokio::spawn(async move { s.prompt_text("hi").await });
    let req = fake.wait_method("session/prompt", T).await;
    fake.respond(&req["id"], json!({})).await;
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Protocol(_)), "{err:?}");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let ended = of_kind(&evs, EventKind::TurnEnded)[0].data_value();
    assert_eq!(ended["stopReason"], Value::Null);
    assert_eq!(ended["error"]["kind"], "protocol");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_before_the_acceptance_ends_the_turn_once_accepted_and_a_second_answer_is_reported()
{
    let host = Host::new(v2_config());
    let mut events = host.events().unwrap();
    let (agent, mut fake) = connect_v2(&host).await;
    let session = open_session(&agent, &mut fake, "s1", &tmp_cwd()).await;
    let s = session.clone();
    let call = tokio::spawn(async move { s.prompt_text("hi").await });
    let req = fake.wait_method("session/prompt", T).await;
    fake.send(idle("s1", "refusal")).await;
    fake.respond(&req["id"], json!({"messageId": "m1"})).await;
    let turn = tokio::time::timeout(T, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(turn.stop_reason, "refusal");
    assert_eq!(turn.raw["messageId"], "m1");
    fake.respond(&req["id"], json!({"messageId": "m1"})).await;
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ProtocolError).await;
    let k = kinds(&evs);
    assert_eq!(k.iter().filter(|k| *k == "turn_ended").count(), 1, "{k:?}");
    let err = of_kind(&evs, EventKind::ProtocolError)[0].data_value();
    assert_eq!(err["reason"], "duplicate_response");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_turn_ends_with_the_error_when_the_agent_goes_away() {
    let host = Host::new(v2_config());
    let mut events = host.events().unwrap();
    let (agent, mut fake) = connect_v2(&host).await;
    let _session = open_session(&agent, &mut fake, "s1", &tmp_cwd()).await;
    fake.send(running("s1")).await;
    // A second `running` is the same turn, not another.
    fake.send(running("s1")).await;
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::SessionUpdate && e.turn.is_some()
    })
    .await;
    let started = of_kind(&evs, EventKind::TurnStarted);
    assert_eq!(started.len(), 1);
    let turn = started[0].turn;
    drop(fake);
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    let k = kinds(&evs);
    assert_eq!(
        k.iter().filter(|k| *k == "turn_started").count(),
        0,
        "{k:?}"
    );
    let ended = of_kind(&evs, EventKind::TurnEnded);
    assert_eq!(ended.len(), 1, "{k:?}");
    assert_eq!(ended[0].turn, turn);
    assert_eq!(ended[0].data_value()["error"]["kind"], "agent_exited");
    let pos = |n: &str| k.iter().position(|x| x == n).unwrap();
    assert!(pos("turn_ended") < pos("session_closed"), "{k:?}");
}

/// The `initialize` params the host sends under `config`.
async fn initialize_params(config: HostConfig) -> Value {
    use tokio::io::AsyncBufReadExt;
    let host = Host::new(config);
    let (host_r, _agent_w) = tokio::io::duplex(64 * 1024);
    let (agent_r, host_w) = tokio::io::duplex(64 * 1024);
    let h = host.clone();
    let _task = tokio::spawn(async move { h.connect(host_r, host_w).await });
    let mut lines = tokio::io::BufReader::new(agent_r).lines();
    let line = tokio::time::timeout(T, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["method"], "initialize");
    v["params"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_is_offered_with_both_field_sets_and_no_fs_or_terminal_under_v2() {
    let v1 = initialize_params(HostConfig::default()).await;
    assert_eq!(v1["protocolVersion"], 1);
    assert!(v1.get("capabilities").is_none() && v1.get("info").is_none());
    assert!(v1["clientCapabilities"].get("fs").is_some());

    let v2 = initialize_params(v2_config()).await;
    assert_eq!(v2["protocolVersion"], 2);
    // v1's fields stay for an agent that answers 1 ...
    assert_eq!(v2["clientCapabilities"], v1["clientCapabilities"]);
    assert_eq!(v2["clientInfo"], v1["clientInfo"]);
    // ... and v2's carry no fs or terminal (v2 has no such client methods).
    assert_eq!(v2["info"], v1["clientInfo"]);
    let caps = v2["capabilities"].as_object().unwrap();
    assert!(
        !caps.contains_key("fs") && !caps.contains_key("terminal"),
        "{caps:?}"
    );
}

/// The v2-only update kinds arrive typed (an unknown one still arrives, as `Unknown`), and the
/// session state takes them in as it does v1's: a `tool_call_update` upsert creates the tool call
/// and `tool_call_content_chunk`s add to its content, so a permission request naming only the
/// call's id reaches the decider (and the event) merged over it; `plan_update` sets the plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_update_kinds_are_typed_and_build_the_session_state() {
    use acp_host::events::payload_v2::V2SessionUpdate as V2;
    use acp_host::{Payload, PermissionHandler, PermissionRequest};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let config = HostConfig {
        permission: PermissionHandler::Decider(std::sync::Arc::new(
            move |req: PermissionRequest| {
                log.lock().unwrap().push(req.tool_call.clone());
                async move {
                    Ok(req
                        .option_of_kind("allow_once")
                        .map(|o| o.option_id.clone()))
                }
            },
        )),
        ..v2_config()
    };
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("v2-updates"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("all").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    // The chunk "Here" of msg_1, then msg_1's upsert: the message's text is the upsert's.
    assert_eq!(turn.text, "Here: permission selected.");
    assert_eq!(turn.thought, "Every v2 kind, once.");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;

    // What the decider and the event saw: the call as the upsert and the chunks built it.
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["title"], "Run the tests");
    assert_eq!(asked[0]["kind"], "execute");
    assert_eq!(asked[0]["content"].as_array().map(Vec::len), Some(2));
    let requested = of_kind(&evs, EventKind::PermissionRequested)[0].data_value();
    assert_eq!(requested["toolCall"], *asked[0]);

    // Each kind's typed variant.
    let mut kinds = Vec::new();
    for ev in of_kind(&evs, EventKind::SessionUpdate) {
        let kind = ev.update_kind().unwrap_or_default().to_owned();
        let decoded = ev.decode();
        match (kind.as_str(), &decoded.payload) {
            ("future_kind", Payload::Unknown) => {
                assert_eq!(decoded.notes[0].reason, "unknown_update_kind");
            }
            (_, Payload::Unknown) => panic!("{kind}: {:?}", decoded.notes),
            ("user_message", Payload::V2Update(V2::UserMessage(m))) => {
                assert_eq!(m.message_id, "user_1")
            }
            ("agent_message", Payload::V2Update(V2::AgentMessage(m))) => {
                assert_eq!(m.content.as_ref().map(Vec::len), Some(1))
            }
            ("tool_call_content_chunk", Payload::V2Update(V2::ToolCallContentChunk(c))) => {
                assert_eq!(c.tool_call_id, "call_1")
            }
            ("terminal_output_chunk", Payload::V2Update(V2::TerminalOutputChunk(c))) => {
                assert_eq!(c.data, "b2sK")
            }
            ("terminal_update", Payload::V2Update(V2::TerminalUpdate(t))) => {
                assert_eq!(t.terminal_id, "term_1")
            }
            ("agent_thought", Payload::V2Update(V2::AgentThought(_)))
            | ("state_update", Payload::StateUpdate(_))
            | (_, Payload::SessionUpdate(_)) => {}
            (k, p) => panic!("{k}: {p:?}"),
        }
        assert!(decoded.notes.is_empty() || kind == "future_kind", "{kind}");
        kinds.push(kind);
    }
    assert!(kinds.iter().any(|k| k == "future_kind"), "{kinds:?}");

    let state = session.state();
    let call = state.tool_call("call_1").unwrap();
    assert_eq!(call["status"], "completed");
    assert_eq!(call["content"][1]["terminalId"], "term_1");
    let plan = state.typed_plan().unwrap();
    assert_eq!(plan.len(), 2);
    assert_eq!(plan[0].content, "Run the tests");
    assert_eq!(state.usage.as_ref().unwrap()["used"], 1200);
}

/// v2's capabilities gate the session methods under v2's names: no `session`, no sessions at
/// all; `session: {}` is the baseline (list, resume, close), the others need their own markers;
/// there is no `session/load`. A refused call sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_capabilities_gate_the_session_methods_under_their_v2_names() {
    let host = Host::new(v2_config());
    let (agent, mut fake) = connect_v2_with(&host, json!({})).await;
    let err = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
    assert!(err.to_string().contains("capabilities.session"), "{err}");
    let err = agent.list_sessions(None, None).await.unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
    assert!(
        fake.recv_for(Duration::from_millis(200)).await.is_empty(),
        "nothing was sent"
    );

    let host = Host::new(v2_config());
    let (agent, mut fake) = connect_v2_with(&host, json!({"session": {}})).await;
    let err = agent.delete_session("s1").await.unwrap_err();
    assert!(
        matches!(err, Error::Unsupported(_)),
        "no delete marker: {err:?}"
    );
    let err = agent
        .load_session("s1", SessionOptions::new(tmp_cwd()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Unsupported(_)),
        "v2 has no load: {err:?}"
    );
    let a = agent.clone();
    let listing = tokio::spawn(async move { a.list_sessions(None, None).await });
    let req = fake.wait_method("session/list", T).await;
    fake.respond(&req["id"], json!({"sessions": []})).await;
    listing.await.unwrap().unwrap();

    let host = Host::new(v2_config());
    let (agent, mut fake) = connect_v2_with(&host, json!({"session": {"delete": {}}})).await;
    let a = agent.clone();
    let deleting = tokio::spawn(async move { a.delete_session("s1").await });
    let req = fake.wait_method("session/delete", T).await;
    assert_eq!(req["params"]["sessionId"], "s1");
    fake.respond(&req["id"], json!({})).await;
    deleting.await.unwrap().unwrap();
}
