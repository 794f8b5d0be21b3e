//! Recording a connection (`HostConfig::record`, docs/RECORDING.md): the header, the wire in both
//! directions interleaved with the events, secrets left out, the file's bound.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_host::record::RecordConfig;
use acp_host::record::redact::REDACTED;
use acp_host::{
    ElicitationAnswer, ElicitationHandler, ElicitationKind, ElicitationModes, ElicitationRequest,
    HostConfig,
};
use serde_json::{Value, json};

use crate::common::scenario::{self, Ws, req};
use crate::common::*;

/// The file's lines once its `end` line is there (the recording's thread writes it last).
fn lines(path: &std::path::Path) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        if lines.last().is_some_and(|l| l.get("end").is_some()) {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "no `end` line in {}: {text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn recording(file: &std::path::Path) -> Option<RecordConfig> {
    Some(RecordConfig {
        file: Some(file.to_owned()),
        ..RecordConfig::default()
    })
}

fn form_answer() -> ElicitationHandler {
    ElicitationHandler::Decider {
        modes: ElicitationModes {
            form: true,
            url: true,
        },
        decider: Arc::new(|req: ElicitationRequest| async move {
            Ok(match req.kind {
                ElicitationKind::Form { .. } => ElicitationAnswer::Accept(
                    acp_host::elicitation::content(json!({"target": "hunter2-prod"})),
                ),
                ElicitationKind::Url { .. } => ElicitationAnswer::Decline,
            })
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_holds_the_header_the_wire_both_ways_and_the_events_with_secrets_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.acprec.jsonl");
    let ws = Ws::new();
    let steps = json!([
        {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"},
                    "_meta": {"vendor": {"apiToken": "tok-SECRET-1", "model": "m1"}}}},
        req("terminal/create", "t", json!({"sessionId": "$SESSION", "command": "true",
            "env": [{"name": "DEPLOY_KEY", "value": "env-SECRET-2"}]})),
        req("elicitation/create", "form", json!({"sessionId": "$SESSION", "mode": "form",
            "message": "Where?", "requestedSchema": {"type": "object",
            "properties": {"target": {"type": "string"}}, "required": ["target"]}})),
    ]);
    let config = HostConfig {
        permission: allow_once(),
        elicitation: form_answer(),
        record: recording(&file),
        ..HostConfig::default()
    };
    scenario::run(&ws, config, steps).await;
    let lines = lines(&file);
    let text = std::fs::read_to_string(&file).unwrap();
    for secret in ["tok-SECRET-1", "env-SECRET-2", "hunter2-prod"] {
        assert!(!text.contains(secret), "{secret} recorded: {text}");
    }
    assert!(text.contains(REDACTED));

    let header = &lines[0];
    assert_eq!(header["acpRecording"], 3);
    assert_eq!(header["acpHost"], env!("CARGO_PKG_VERSION"));
    assert_eq!(header["protocolVersion"], 1);
    assert_eq!(header["platform"]["os"], std::env::consts::OS);
    assert!(header["clientCapabilities"]["fs"].is_object(), "{header}");
    assert!(
        header["initialize"]["agentCapabilities"].is_object(),
        "{header}"
    );
    assert_eq!(header["redacted"], true);
    assert!(
        header["agent"]["command"]
            .as_str()
            .unwrap()
            .contains("mock")
    );

    let body = &lines[1..lines.len() - 1];
    let wire = |dir: &str, method: &str| {
        body.iter()
            .any(|l| l["dir"] == dir && l["msg"]["method"] == method)
    };
    assert!(
        wire("out", "initialize") && wire("out", "session/new") && wire("out", "session/prompt")
    );
    assert!(wire("in", "session/update") && wire("in", "terminal/create"));
    let kinds: Vec<&str> = body
        .iter()
        .filter_map(|l| l["event"]["kind"].as_str())
        .collect();
    for kind in [
        "agent_ready",
        "session_opened",
        "turn_started",
        "terminal_created",
        "turn_ended",
        "agent_exited",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    assert_eq!(
        kinds.last(),
        Some(&"agent_exited"),
        "the connection's last event ends it"
    );
    // One clock for the whole file, never going back.
    let ts: Vec<f64> = body.iter().filter_map(|l| l["t"].as_f64()).collect();
    assert_eq!(ts.len(), body.len(), "every line has its time");
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    // What the redaction keeps: names, the method, the form's field names.
    let create = body
        .iter()
        .find(|l| l["msg"]["method"] == "terminal/create")
        .unwrap();
    assert_eq!(create["msg"]["params"]["env"][0]["name"], "DEPLOY_KEY");
    assert_eq!(create["msg"]["params"]["command"], "true");
    let update = body
        .iter()
        .find(|l| l["msg"]["method"] == "session/update")
        .unwrap();
    let meta = &update["msg"]["params"]["update"]["_meta"]["vendor"];
    assert_eq!(meta["apiToken"], REDACTED);
    assert_eq!(meta["model"], "m1");
    let asked = body
        .iter()
        .find(|l| l["msg"]["method"] == "elicitation/create")
        .unwrap();
    let answer = body
        .iter()
        .find(|l| {
            l["dir"] == "out"
                && l["msg"]["id"] == asked["msg"]["id"]
                && l["msg"].get("result").is_some()
        })
        .expect("the host's answer to the form is recorded");
    assert_eq!(answer["msg"]["result"]["action"], "accept");
    assert_eq!(
        answer["msg"]["result"]["content"],
        json!({"target": REDACTED})
    );
    let end = &lines.last().unwrap()["end"];
    assert_eq!(end["droppedLines"], 0);
    assert_eq!(end["truncated"], false);
    assert_eq!(end["lines"], lines.len() as u64 - 1);
}

/// Format 3: an update's event is folded into the agent's line it came from (`"event": {"turn":
/// N}` on that line), and what it reads back to (that line's session and `params.update`, as
/// both readers resolve it) is the event the host's stream delivered, redacted as the wire line
/// was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_is_folded_into_its_wire_line_and_reads_back_to_the_event_delivered() {
    use acp_host::record::format::{self, EventData};
    use acp_host::record::redact;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.acprec.jsonl");
    let ws = Ws::new();
    let chunk = |text: &str| {
        json!({"update": {"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text}}})
    };
    let steps = json!([
        chunk("one"),
        {"update": {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"},
                    "_meta": {"vendor": {"sessionToken": "tok-SECRET-3", "model": "m1"}}}},
        chunk("two \"quoted\" \u{1F600}"),
        {"update": {"sessionUpdate": "plan", "entries": [
            {"content": "a", "priority": "high", "status": "pending"}]}},
    ]);
    let config = HostConfig {
        permission: allow_once(),
        record: recording(&file),
        ..HostConfig::default()
    };
    let delivered: Vec<Value> = scenario::run(&ws, config, steps)
        .await
        .iter()
        .filter(|e| e.kind == acp_host::EventKind::SessionUpdate)
        .map(|e| {
            let mut data = e.data_value();
            redact::message(&mut data, false);
            json!({"session": e.session.as_deref(), "turn": e.turn, "data": data})
        })
        .collect();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("tok-SECRET-3"), "{text}");
    let lines = lines(&file);
    let mut wire: Vec<(&str, &Value)> = Vec::new();
    let mut recorded = Vec::new();
    let mut folded = 0;
    for l in &lines[1..] {
        if let Some(msg) = l.get("msg") {
            let dir = l["dir"].as_str().unwrap();
            wire.push((dir, msg));
            if let Some(ev) = l.get("event") {
                let (ev, data) = format::folded_event(dir, msg, ev).unwrap();
                recorded.push(json!({"session": ev["session"], "turn": ev["turn"], "data": data}));
                folded += 1;
            }
            continue;
        }
        let Some(ev) = l.get("event").and_then(Value::as_object) else {
            continue;
        };
        if ev["kind"] != "session_update" {
            continue;
        }
        let data = match format::event_data(ev).unwrap() {
            EventData::Inline(data) => data,
            EventData::Wire(n) => {
                assert!(ev.get("data").is_none(), "{l}");
                // Its line is the agent's, just before it (nothing else in between here).
                assert_eq!(n, wire.len() - 1, "{l}");
                format::referenced_data(ev, n, wire.get(n).copied()).unwrap()
            }
        };
        recorded.push(json!({"session": ev["session"], "turn": ev["turn"], "data": data}));
    }
    assert!(folded >= 4, "the turn's updates are in their lines: {text}");
    assert_eq!(recorded, delivered);
    assert_eq!(
        recorded[1]["data"]["_meta"]["vendor"]["sessionToken"], REDACTED,
        "the payload referred to is the wire line's, redacted"
    );
    assert_eq!(recorded[1]["data"]["_meta"]["vendor"]["model"], "m1");
    // And the replay's reader takes it.
    let rec = acp_host::replay::Recording::open(&file).unwrap();
    assert!(rec.ended);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redaction_off_records_as_sent_and_the_bound_ends_the_file_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Ws::new();
    let steps = json!([req(
        "terminal/create",
        "t",
        json!({"sessionId": "$SESSION", "command": "true",
            "env": [{"name": "DEPLOY_KEY", "value": "env-SECRET-2"}]})
    ),]);
    let open = dir.path().join("open.jsonl");
    let config = HostConfig {
        permission: allow_once(),
        record: Some(RecordConfig {
            file: Some(open.clone()),
            redact: false,
            ..RecordConfig::default()
        }),
        ..HostConfig::default()
    };
    scenario::run(&ws, config, steps.clone()).await;
    let text = lines(&open)
        .iter()
        .map(Value::to_string)
        .collect::<String>();
    assert!(
        text.contains("env-SECRET-2"),
        "redact: false keeps what was sent"
    );

    let small = dir.path().join("small.jsonl");
    let config = HostConfig {
        permission: allow_once(),
        record: Some(RecordConfig {
            file: Some(small.clone()),
            max_bytes: 4096,
            ..RecordConfig::default()
        }),
        ..HostConfig::default()
    };
    scenario::run(&ws, config, steps).await;
    let lines = lines(&small);
    let marker = lines.iter().position(|l| l.get("truncated").is_some());
    let marker = marker.expect("a truncated line");
    assert_eq!(lines[marker]["truncated"]["maxBytes"], 4096);
    assert_eq!(
        marker,
        lines.len() - 2,
        "only the `end` line follows the marker"
    );
    let end = &lines.last().unwrap()["end"];
    assert_eq!(end["truncated"], true);
    assert!(end["droppedLines"].as_u64().unwrap() > 0);
    let size = std::fs::metadata(&small).unwrap().len();
    assert!(size < 4096 + 512, "bounded: {size} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_connection_gets_its_own_file_and_an_existing_file_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.jsonl");
    std::fs::write(dir.path().join("r.jsonl.2"), "keep me").unwrap();
    let host = acp_host::Host::new(HostConfig {
        record: recording(&file),
        ..HostConfig::default()
    });
    let a = host.spawn(mock(None)).await.unwrap();
    let b = host.spawn(mock(None)).await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_eq!(lines(&file)[0]["agentId"], 1);
    // The second connection's file existed: it is left alone and that connection not recorded.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("r.jsonl.2")).unwrap(),
        "keep me"
    );
}

#[test]
fn record_options_take_one_of_dir_and_file() {
    use acp_host::options::{Face, host};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_string_lossy().into_owned();
    let ok = host(
        &json!({"record": {"dir": d, "maxBytes": 1_000_000}}),
        Face::Rust,
    )
    .unwrap();
    let rec = ok.config.record.unwrap();
    assert_eq!(rec.dir.as_deref(), Some(dir.path()));
    assert!(rec.redact, "on by default");
    for (doc, path) in [
        (json!({"record": {}}), "record"),
        (
            json!({"record": {"dir": d, "file": format!("{d}/x")}}),
            "record",
        ),
        (json!({"record": {"dir": "relative"}}), "record.dir"),
        (
            json!({"record": {"file": format!("{d}/x"), "maxBytes": 10}}),
            "record.maxBytes",
        ),
        (
            json!({"record": {"file": format!("{d}/x"), "secrets": true}}),
            "record.secrets",
        ),
    ] {
        let err = host(&doc, Face::Rust)
            .err()
            .unwrap_or_else(|| panic!("{doc} accepted"));
        assert_eq!(err.kind(), "invalid_config", "{doc}");
        assert_eq!(err.to_json()["data"]["path"], path, "{doc}: {err}");
    }
}

/// A recording is one connection's and ends at its `agent_exited`: what the supervisor says
/// about the agent after that through the old connection (`agent_restarting`; `agent_failed`
/// when it gives up) is in the host's stream, in no file; the restarted process is the next
/// connection, with its own file (which has `agent_restarted`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_ends_at_its_agent_exited_and_a_restart_is_recorded_in_the_next_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.jsonl");
    let host = acp_host::Host::new(HostConfig {
        record: recording(&file),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let spec = mock(Some("crash-mid-turn")).restart(acp_host::RestartPolicy {
        max_restarts: 1,
        backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        reset_after: Duration::from_secs(60),
    });
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(acp_host::SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert!(
        session.prompt_text("go").await.is_err(),
        "the agent crashed"
    );
    let seen = collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == acp_host::EventKind::AgentRestarted
    })
    .await;
    let seen = kinds(&seen);
    assert!(seen.iter().any(|k| k == "agent_restarting"), "{seen:?}");
    agent.shutdown().await;

    // Once shutdown returned, the restarted connection's file is whole (its end was awaited).
    let second_path = dir.path().join("r.jsonl.2");
    let second_text = std::fs::read_to_string(&second_path).unwrap();
    assert!(
        second_text
            .lines()
            .last()
            .is_some_and(|l| l.contains("\"end\":{")),
        "{second_text}"
    );
    for (path, connection, reason) in [(&file, 1, "exited"), (&second_path, 2, "shutdown")] {
        let lines = lines(path);
        assert_eq!(lines[0]["connection"], connection);
        let kinds: Vec<&str> = lines
            .iter()
            .filter_map(|l| l["event"]["kind"].as_str())
            .collect();
        assert_eq!(
            kinds.last(),
            Some(&"agent_exited"),
            "{connection}: {kinds:?}"
        );
        assert!(
            !kinds.contains(&"agent_restarting"),
            "{connection}: {kinds:?}"
        );
        // `agent_restarted` comes through the new connection: the second file has it.
        assert_eq!(
            kinds.contains(&"agent_restarted"),
            connection == 2,
            "{connection}: {kinds:?}"
        );
        let exited = &lines[lines.len() - 2];
        assert_eq!(exited["event"]["data"]["reason"], reason);
        // The first file says a restart follows; the `end` counts every line before it.
        assert_eq!(exited["event"]["data"]["restart"] == true, connection == 1);
        let end = &lines.last().unwrap()["end"];
        assert_eq!(end["lines"], lines.len() as u64 - 1);
        assert_eq!(end["droppedLines"], 0);
    }
}

/// The guarantee the awaited end keeps: when `shutdown` returns, the file is complete (no
/// polling), on a runtime with one thread.
#[tokio::test(flavor = "current_thread")]
async fn the_file_is_complete_when_shutdown_returns_on_a_single_threaded_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.jsonl");
    let host = acp_host::Host::new(HostConfig {
        record: recording(&file),
        ..HostConfig::default()
    });
    let agent = host.spawn(mock(None)).await.unwrap();
    agent.shutdown().await;
    let text = std::fs::read_to_string(&file).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["end"]["droppedLines"], 0, "{text}");
    host.shutdown().await;
}

/// The agent's lines are recorded from the buffer they were read in, but a line that was not
/// UTF-8 as the host decoded it (U+FFFD for each bad byte), before the `protocol_error` saying
/// so; with wire events on too, both get the same lines. The replay plays it back lossy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_was_not_utf8_is_recorded_as_decoded_and_replays_so() {
    use acp_host::{EventKind, Host, SessionOptions};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lossy.jsonl");
    let host = Host::new(HostConfig {
        record: recording(&file),
        wire_events: true,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("invalid-utf8"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("go").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let evs = collect_until(&mut events, Duration::from_secs(10), |e| {
        e.kind == EventKind::TurnEnded
    })
    .await;
    agent.shutdown().await;
    let lines = lines(&file);
    let wire_in: Vec<&Value> = lines
        .iter()
        .filter(|l| l["dir"] == "in")
        .map(|l| &l["msg"])
        .collect();
    let at = lines
        .iter()
        .position(|l| l["dir"] == "in" && l["msg"].to_string().contains('\u{FFFD}'))
        .expect("the lossy line is recorded as decoded");
    assert_eq!(
        lines[at + 1]["event"]["kind"],
        "protocol_error",
        "{}",
        lines[at + 1]
    );
    // The wire events carry the same lines, the lossy one included.
    let wire_events: Vec<Value> = evs
        .iter()
        .filter(|e| e.kind == EventKind::Wire && e.data_value()["direction"] == "in")
        .map(|e| e.data_value()["message"].clone())
        .collect();
    assert_eq!(
        wire_events,
        wire_in[..wire_events.len()]
            .iter()
            .map(|v| (*v).clone())
            .collect::<Vec<_>>()
    );
    assert!(
        wire_events
            .iter()
            .any(|m| m.to_string().contains('\u{FFFD}'))
    );
    let rec = acp_host::replay::Recording::open(&file).unwrap();
    assert!(
        rec.entries
            .iter()
            .any(|e| matches!(e.what, acp_host::replay::recording::What::AgentLossy(_))),
        "{:?}",
        rec.entries
    );
    host.shutdown().await;
}
