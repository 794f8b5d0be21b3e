//! Elicitation (`elicitation/create`, `elicitation/complete`): advertised only for the modes the
//! embedder renders, routed to its decider or `respond_elicitation`, content checked against the
//! requested schema, fail-closed (`cancel`) on anything else, exactly one `elicitation_resolved`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use acp_host::{
    ElicitationAnswer, ElicitationHandler, ElicitationKind, ElicitationModes, ElicitationRequest,
    Event, EventKind, Host, HostConfig, SessionOptions,
};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

fn decider<F>(f: F, modes: ElicitationModes) -> ElicitationHandler
where
    F: Fn(ElicitationRequest) -> Result<ElicitationAnswer, String> + Send + Sync + 'static,
{
    let f = Arc::new(f);
    ElicitationHandler::Decider {
        modes,
        decider: Arc::new(move |req: ElicitationRequest| {
            let f = f.clone();
            async move { f(req) }
        }),
    }
}

fn accept(v: Value) -> ElicitationAnswer {
    ElicitationAnswer::Accept(acp_host::elicitation::content(v))
}

/// The valid answer to the scenario's form, and consent to its URL.
fn good(req: ElicitationRequest) -> Result<ElicitationAnswer, String> {
    Ok(match req.kind {
        ElicitationKind::Form { .. } => accept(json!({"target": "staging", "replicas": 2})),
        ElicitationKind::Url { .. } => ElicitationAnswer::Accept(None),
    })
}

fn texts(evs: &[Event]) -> Vec<String> {
    evs.iter()
        .filter(|e| e.kind == EventKind::SessionUpdate)
        .filter_map(|e| {
            e.data_value()["content"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// One prompt of the `elicitation` scenario: the stop reason and the events up to `turn_ended`.
async fn run(config: HostConfig) -> (String, Vec<Event>) {
    run_scenario(config, "elicitation").await
}

/// One prompt of `scenario`: the stop reason and the events up to `turn_ended`.
async fn run_scenario(config: HostConfig, scenario: &str) -> (String, Vec<Event>) {
    let host = Host::new(HostConfig {
        wire_events: true,
        ..config
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some(scenario))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = tokio::time::timeout(T, session.prompt_text("go"))
        .await
        .expect("the turn must end")
        .unwrap();
    let mut evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    evs.extend(drain(&mut events, Duration::from_millis(100)).await);
    agent.shutdown().await;
    (turn.stop_reason, evs)
}

/// A host answering elicitations by hand, the `elicitation` scenario's agent, and its first
/// turn running in a task.
async fn manual_turn() -> (
    Host,
    acp_host::EventStream,
    acp_host::Agent,
    acp_host::Session,
    tokio::task::JoinHandle<acp_host::Result<acp_host::TurnResult>>,
) {
    let host = Host::new(HostConfig {
        elicitation: ElicitationHandler::Manual {
            modes: ElicitationModes::FORM_AND_URL,
        },
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    let agent = host.spawn(mock(Some("elicitation"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s = session.clone();
    let turn = tokio::spawn(async move { s.prompt_text("go").await });
    (host, events, agent, session, turn)
}

fn initialize_caps(evs: &[Event]) -> Value {
    evs.iter()
        .find(|e| e.kind == EventKind::Wire && e.data_value()["message"]["method"] == "initialize")
        .map(|e| e.data_value()["message"]["params"]["clientCapabilities"].clone())
        .expect("initialize on the wire")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_configured_means_not_advertised_and_refused_with_method_not_found() {
    let (stop, evs) = run(HostConfig::default()).await;
    assert_eq!(stop, "end_turn");
    assert!(initialize_caps(&evs).get("elicitation").is_none());
    let t = texts(&evs);
    assert!(t.contains(&"form error -32601".to_owned()), "{t:?}");
    assert!(t.contains(&"url error -32601".to_owned()), "{t:?}");
    assert!(
        !evs.iter()
            .any(|e| e.kind.as_str().starts_with("elicitation"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decider_answers_forms_and_url_consent() {
    let (stop, evs) = run(HostConfig {
        elicitation: decider(good, ElicitationModes::FORM_AND_URL),
        ..HostConfig::default()
    })
    .await;
    assert_eq!(stop, "end_turn");
    assert_eq!(
        initialize_caps(&evs)["elicitation"],
        json!({"form": {}, "url": {}})
    );
    let t = texts(&evs);
    assert!(
        t.iter()
            .any(|x| x.starts_with("form accept") && x.contains("\"target\":\"staging\"")),
        "{t:?}"
    );
    assert!(t.contains(&"url accept".to_owned()), "{t:?}");
    let requested: Vec<&Event> = evs
        .iter()
        .filter(|e| e.kind == EventKind::ElicitationRequested)
        .collect();
    assert_eq!(requested.len(), 2);
    let form = requested[0].data_value();
    assert_eq!(form["mode"], "form");
    assert_eq!(form["message"], "Where should I deploy?");
    assert_eq!(form["toolCallId"], "call_1");
    assert_eq!(form["requestedSchema"]["required"], json!(["target"]));
    assert_eq!(requested[0].turn, Some(1));
    let url = requested[1].data_value();
    assert_eq!(url["mode"], "url");
    assert_eq!(url["url"], "https://example.invalid/login?turn=1");
    assert_eq!(url["elicitationId"], "el_1");
    let resolved: Vec<Value> = evs
        .iter()
        .filter(|e| e.kind == EventKind::ElicitationResolved)
        .map(Event::data_value)
        .collect();
    assert_eq!(resolved.len(), 2);
    assert_eq!(resolved[0]["action"], "accept");
    assert_eq!(resolved[0]["decidedBy"], "host");
    assert_eq!(resolved[0]["fields"], json!(["replicas", "target"]));
    assert!(
        resolved[0].get("content").is_none(),
        "values stay with the embedder"
    );
    // Only the known URL elicitation completes; the unknown id is ignored.
    let completed: Vec<Value> = evs
        .iter()
        .filter(|e| e.kind == EventKind::ElicitationCompleted)
        .map(Event::data_value)
        .collect();
    assert_eq!(completed, vec![json!({"elicitationId": "el_1"})]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_modes_the_embedder_renders_are_advertised_and_served() {
    let (_, evs) = run(HostConfig {
        elicitation: decider(
            good,
            ElicitationModes {
                form: true,
                url: false,
            },
        ),
        ..HostConfig::default()
    })
    .await;
    assert_eq!(initialize_caps(&evs)["elicitation"], json!({"form": {}}));
    let t = texts(&evs);
    assert!(t.iter().any(|x| x.starts_with("form accept")), "{t:?}");
    assert!(t.contains(&"url error -32602".to_owned()), "{t:?}");
    let requested = evs
        .iter()
        .filter(|e| e.kind == EventKind::ElicitationRequested)
        .count();
    assert_eq!(
        requested, 1,
        "nobody is asked about a mode it cannot render"
    );
    assert!(
        !evs.iter()
            .any(|e| e.kind == EventKind::ElicitationCompleted)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_that_does_not_match_the_schema_cancels() {
    for bad in [
        json!({"replicas": 2}),                        // required field missing
        json!({"target": "moon"}),                     // not an allowed value
        json!({"target": "staging", "replicas": 99}),  // out of range
        json!({"target": "staging", "password": "x"}), // a field nobody asked for
    ] {
        let answer = bad.clone();
        let (stop, evs) = run(HostConfig {
            elicitation: decider(
                move |req| match req.kind {
                    ElicitationKind::Form { .. } => Ok(accept(answer.clone())),
                    ElicitationKind::Url { .. } => Ok(ElicitationAnswer::Decline),
                },
                ElicitationModes::FORM_AND_URL,
            ),
            ..HostConfig::default()
        })
        .await;
        assert_eq!(stop, "end_turn");
        let t = texts(&evs);
        assert!(
            t.iter().any(|x| x.starts_with("form cancel")),
            "{bad}: {t:?}"
        );
        assert!(t.contains(&"url decline".to_owned()), "{t:?}");
        let resolved = evs
            .iter()
            .find(|e| e.kind == EventKind::ElicitationResolved)
            .unwrap()
            .data_value();
        assert_eq!(resolved["action"], "cancel", "{bad}");
        assert_eq!(resolved["decidedBy"], "invalid_answer", "{bad}");
        assert!(resolved["reason"].as_str().is_some(), "{resolved}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_panicking_decider_cancels() {
    for panics in [false, true] {
        let (stop, evs) = run(HostConfig {
            elicitation: decider(
                move |_| {
                    if panics {
                        panic!("embedder bug");
                    }
                    Err("no UI".to_owned())
                },
                ElicitationModes::FORM_AND_URL,
            ),
            ..HostConfig::default()
        })
        .await;
        assert_eq!(stop, "end_turn", "the connection survives");
        let resolved: Vec<Value> = evs
            .iter()
            .filter(|e| e.kind == EventKind::ElicitationResolved)
            .map(Event::data_value)
            .collect();
        assert_eq!(resolved.len(), 2);
        assert!(
            resolved
                .iter()
                .all(|r| r["action"] == "cancel" && r["decidedBy"] == "invalid_answer")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_requests_time_out_as_cancel() {
    let (stop, evs) = run(HostConfig {
        elicitation: ElicitationHandler::Manual {
            modes: ElicitationModes::FORM_AND_URL,
        },
        elicitation_timeout: Duration::from_millis(200),
        ..HostConfig::default()
    })
    .await;
    assert_eq!(stop, "end_turn");
    let resolved: Vec<Value> = evs
        .iter()
        .filter(|e| e.kind == EventKind::ElicitationResolved)
        .map(Event::data_value)
        .collect();
    assert_eq!(resolved.len(), 2);
    assert!(
        resolved
            .iter()
            .all(|r| r["action"] == "cancel" && r["decidedBy"] == "timeout")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_answers_are_checked_and_count_once() {
    let (host, mut events, agent, _session, turn) = manual_turn().await;
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let form_id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    // Unknown id: not found, nothing changes.
    let err = host
        .respond_elicitation(form_id + 1000, ElicitationAnswer::Decline)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "not_found");
    // Invalid content: an error for the caller, and the agent gets `cancel`.
    let err = host
        .respond_elicitation(form_id, accept(json!({"target": 7})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_argument", "{err}");
    let err = host
        .respond_elicitation(form_id, accept(json!({"target": "staging"})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "already_resolved");
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    assert_eq!(
        of_kind(&evs, EventKind::ElicitationResolved).len(),
        1,
        "exactly one resolution for the form"
    );
    let url_id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    host.respond_elicitation(url_id, ElicitationAnswer::Accept(None))
        .await
        .unwrap();
    let result = tokio::time::timeout(T, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(result.stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let t = texts(&evs);
    assert!(t.contains(&"url accept".to_owned()), "{t:?}");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_cancel_and_agent_exit_answer_pending_requests() {
    let (_host, mut events, agent, session, turn) = manual_turn().await;
    collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    session.cancel().await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ElicitationResolved).await;
    let r = evs.last().unwrap().data_value();
    assert_eq!(r["action"], "cancel");
    assert_eq!(r["decidedBy"], "cancelled");
    let result = tokio::time::timeout(T, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(result.stop_reason, "cancelled");
    // A second turn: the agent dies while its form is pending.
    let s = session.clone();
    let turn = tokio::spawn(async move { s.prompt_text("again").await });
    collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    agent.shutdown().await;
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    let resolved = of_kind(&evs, EventKind::ElicitationResolved);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].data_value()["decidedBy"], "disconnected");
    assert!(
        tokio::time::timeout(T, turn)
            .await
            .unwrap()
            .unwrap()
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_answer_is_reported_and_a_declined_url_never_completes() {
    let (host, mut events, agent, _session, turn) = manual_turn().await;
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let form_id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    // A face got something that is not an answer: cancel, reported with the reason.
    host.reject_elicitation(form_id, "not an answer: 42".into())
        .await
        .unwrap();
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let resolved = of_kind(&evs, EventKind::ElicitationResolved);
    assert_eq!(resolved.len(), 1);
    let r = resolved[0].data_value();
    assert_eq!(
        (
            r["action"].as_str(),
            r["decidedBy"].as_str(),
            r["reason"].as_str()
        ),
        (
            Some("cancel"),
            Some("invalid_answer"),
            Some("not an answer: 42")
        )
    );
    let url_id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    host.respond_elicitation(url_id, ElicitationAnswer::Decline)
        .await
        .unwrap();
    assert_eq!(
        tokio::time::timeout(T, turn)
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .stop_reason,
        "end_turn"
    );
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    // The agent sent elicitation/complete for the declined URL: not reported.
    assert!(of_kind(&evs, EventKind::ElicitationCompleted).is_empty());
    agent.shutdown().await;
}

/// A host answering elicitations by hand, connected to a scripted fake agent with one session.
async fn manual_fake() -> (
    Host,
    acp_host::EventStream,
    acp_host::Agent,
    common::fake::Fake,
) {
    let host = Host::new(HostConfig {
        elicitation: ElicitationHandler::Manual {
            modes: ElicitationModes::FORM_AND_URL,
        },
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    let (agent, mut fake) = fake::connect(&host).await;
    fake::open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
    (host, events, agent, fake)
}

fn form_request(id: Value, scope: Value) -> Value {
    let mut params = json!({"mode": "form", "message": "name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}});
    if let (Value::Object(p), Value::Object(s)) = (&mut params, scope) {
        p.extend(s);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": params})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_the_agent_withdraws_is_answered_once_with_request_cancelled() {
    let (host, mut events, _agent, mut fake) = manual_fake().await;
    fake.send(form_request(json!("el-1"), json!({"sessionId": "s1"})))
        .await;
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    fake.send(
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "el-1"}}),
    )
    .await;
    let answer = fake.wait_response(&json!("el-1"), T).await;
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ElicitationResolved).await;
    let r = evs.last().unwrap().data_value();
    assert_eq!(r["decidedBy"], "agent_cancelled");
    assert!(r["action"].is_null());
    // Too late for the embedder; and the agent gets nothing more.
    let err = host
        .respond_elicitation(id, ElicitationAnswer::Decline)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "already_resolved");
    let extra = fake.recv_for(Duration::from_millis(200)).await;
    assert!(extra.iter().all(|m| m["id"] != json!("el-1")), "{extra:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_scoped_elicitations_are_asked_and_say_whether_the_host_knows_the_request() {
    let (host, mut events, agent, mut fake) = manual_fake().await;
    // An unknown *session* is still refused, and nobody is asked.
    fake.send(form_request(json!(0), json!({"sessionId": "nope"})))
        .await;
    let answer = fake.wait_response(&json!(0), T).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ProtocolError).await;
    assert!(of_kind(&evs, EventKind::ElicitationRequested).is_empty());
    // Nothing of the host's is in flight under id 999: asked all the same, marked unknown.
    fake.send(form_request(json!(1), json!({"requestId": 999})))
        .await;
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let asked = evs.last().unwrap().data_value();
    assert_eq!(asked["scopeRequestId"], 999);
    assert_eq!(asked["scopeKnown"], false);
    assert!(asked["sessionId"].is_null() && asked["turn"].is_null());
    host.respond_elicitation(
        asked["requestId"].as_u64().unwrap(),
        accept(json!({"name": "bob"})),
    )
    .await
    .unwrap();
    let answer = fake.wait_response(&json!(1), T).await;
    assert_eq!(
        answer["result"],
        json!({"action": "accept", "content": {"name": "bob"}})
    );
    // During a host request (an extension call the agent has not answered yet) it is known.
    let a = agent.clone();
    let call = tokio::spawn(async move { a.ext_request("_x/login", &json!({})).await });
    let req = fake.wait_method("_x/login", T).await;
    fake.send(form_request(json!(2), json!({"requestId": req["id"]})))
        .await;
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::ElicitationRequested
    })
    .await;
    let asked = evs.last().unwrap().data_value();
    assert_eq!(asked["scopeRequestId"], req["id"]);
    assert_eq!(asked["scopeKnown"], true);
    assert!(asked["sessionId"].is_null());
    host.respond_elicitation(
        asked["requestId"].as_u64().unwrap(),
        accept(json!({"name": "ann"})),
    )
    .await
    .unwrap();
    let answer = fake.wait_response(&json!(2), T).await;
    assert_eq!(
        answer["result"],
        json!({"action": "accept", "content": {"name": "ann"}})
    );
    fake.respond(&req["id"], json!({})).await;
    call.await.unwrap().unwrap();
}

/// The mock's `elicitation-unknown-request` scenario: during a prompt, a form scoped to the
/// string id "agent-req-1" and a URL scoped to 9999, neither the host's. Both reach the decider
/// (marked `scopeKnown: false`); a bad answer to either still cancels, and an unanswered one
/// times out as `cancel`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitations_scoped_to_requests_the_host_did_not_start_reach_the_embedder() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let handler = decider(
        move |req| {
            s.lock().unwrap().push((
                req.scope_request_id.clone(),
                req.scope_known,
                req.session_id.clone(),
            ));
            Ok(match req.kind {
                ElicitationKind::Form { .. } => accept(json!({"name": "ws"})),
                ElicitationKind::Url { .. } => ElicitationAnswer::Decline,
            })
        },
        ElicitationModes::FORM_AND_URL,
    );
    let host = Host::new(HostConfig {
        elicitation: handler,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host
        .spawn(mock(Some("elicitation-unknown-request")))
        .await
        .unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = tokio::time::timeout(T, session.prompt_text("go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(
        texts(&evs),
        vec![
            r#"form accept {"name":"ws"}"#.to_owned(),
            "url decline".into()
        ]
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            (Some(json!("agent-req-1")), false, None),
            (Some(json!(9999)), false, None)
        ]
    );
    let asked = of_kind(&evs, EventKind::ElicitationRequested);
    assert_eq!(asked.len(), 2);
    for ev in &asked {
        assert_eq!(ev.data_value()["scopeKnown"], false);
        assert!(ev.session.is_none(), "not tied to a session");
    }
    let resolved = of_kind(&evs, EventKind::ElicitationResolved);
    assert_eq!(resolved.len(), 2);
    agent.shutdown().await;

    // Fail-closed as any other: content off the schema cancels, no answer times out as cancel.
    let off_schema = decider(
        |req| {
            Ok(match req.kind {
                ElicitationKind::Form { .. } => accept(json!({"name": ""})),
                ElicitationKind::Url { .. } => ElicitationAnswer::Accept(None),
            })
        },
        ElicitationModes::FORM_AND_URL,
    );
    let (stop, evs) = run_scenario(
        HostConfig {
            elicitation: off_schema,
            ..HostConfig::default()
        },
        "elicitation-unknown-request",
    )
    .await;
    assert_eq!(stop, "end_turn");
    assert_eq!(texts(&evs), vec!["form cancel $form.content", "url accept"]);
    let (stop, evs) = run_scenario(
        HostConfig {
            elicitation: ElicitationHandler::Manual {
                modes: ElicitationModes::FORM_AND_URL,
            },
            elicitation_timeout: Duration::from_millis(200),
            ..HostConfig::default()
        },
        "elicitation-unknown-request",
    )
    .await;
    assert_eq!(stop, "end_turn");
    assert_eq!(texts(&evs), vec!["form cancel $form.content", "url cancel"]);
    let by: Vec<Value> = of_kind(&evs, EventKind::ElicitationResolved)
        .iter()
        .map(|e| e.data_value()["decidedBy"].clone())
        .collect();
    assert_eq!(by, vec![json!("timeout"), json!("timeout")]);
}
