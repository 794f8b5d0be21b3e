//! Replaying a recording (`AgentSpec::replay`, docs/RECORDING.md "Replaying"): every conformance
//! case recorded from the mock agent plays back to the same trace with no divergence; a host that
//! behaves otherwise than the recorded one is reported, with the field that differs; a recording
//! that is not one fails the spawn with a typed error naming the line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use acp_host::replay::{Pace, ReplayOptions};
use acp_host::{AgentSpec, EventKind, Host, HostConfig, PermissionHandler, SessionOptions};
use serde_json::{Value, json};

use crate::common::*;
use crate::conformance::{Source, run_case_from, scenarios_dir, write_fixtures};

fn cases() -> (Value, String) {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(scenarios_dir().join("conformance/cases.json")).unwrap(),
    )
    .unwrap();
    let cwd = doc["cwd"].as_str().unwrap().to_owned();
    (doc, cwd)
}

fn fast(file: &Path, report: &Path) -> ReplayOptions {
    ReplayOptions {
        pace: Pace::Fast,
        report: Some(report.to_owned()),
        ..ReplayOptions::new(file)
    }
}

fn report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no report at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// A trace as a replay inside the host gives it: there is no process, so no exit code, signal
/// or stderr tail (in `agent_exited` and in the error of a call the exit ended).
fn without_process(mut trace: Vec<Value>) -> Vec<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for key in ["exitCode", "signal", "stderrTail"] {
                    m.remove(key);
                }
                if m.get("kind").and_then(Value::as_str) == Some("agent_exited") {
                    m.remove("message");
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    trace.iter_mut().for_each(strip);
    trace
}

/// `replayed` is `recorded` but where the recording left a secret out (`<redacted>`).
fn same_but_redacted(recorded: &Value, replayed: &Value) -> bool {
    match (recorded, replayed) {
        (_, Value::String(s)) if s == acp_host::record::redact::REDACTED => true,
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| same_but_redacted(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| same_but_redacted(v, w))
        }
        (a, b) => a == b,
    }
}

/// Cases a replay cannot stand in for: a terminal login starts a second agent process (a second
/// recording), a spawn that fails has no connection to record, and a case marked `replayable:
/// false` rests on the agent's timing alone (a steer the host queues sends nothing, so a fast
/// replay ends the turn before it is made).
fn replayable(case: &Value) -> bool {
    case["terminalAuth"].as_bool() != Some(true)
        && case.get("spawnExpect").is_none()
        && case["replayable"].as_bool() != Some(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conformance_case_replays_to_its_recorded_trace_without_divergence() {
    let (doc, cwd) = cases();
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut played = 0;
    for case in doc["cases"].as_array().unwrap() {
        if !replayable(case) {
            continue;
        }
        let name = case["name"].as_str().unwrap();
        write_fixtures(&doc, &cwd);
        let file = dir.path().join(format!("{name}.acprec.jsonl"));
        let recorded = run_case_from(case, &cwd, Source::Record(file.clone())).await;
        write_fixtures(&doc, &cwd);
        let out = dir.path().join(format!("{name}.report.json"));
        let replayed = run_case_from(case, &cwd, Source::Replay(fast(&file, &out))).await;
        let r = report(&out);
        if r["divergenceCount"] != 0 || r["complete"] != true {
            failures.push(format!(
                "{name}: {}",
                serde_json::to_string_pretty(&r).unwrap()
            ));
            continue;
        }
        let (want, got) = (without_process(recorded), without_process(replayed));
        if want.len() != got.len() || want.iter().zip(&got).any(|(a, b)| !same_but_redacted(a, b)) {
            let first = want
                .iter()
                .zip(&got)
                .position(|(a, b)| !same_but_redacted(a, b));
            let first = first.unwrap_or(want.len().min(got.len()));
            failures.push(format!(
                "{name}: trace differs at event {first}\n  recorded: {}\n  replayed: {}",
                want.get(first).map_or("<end>".into(), Value::to_string),
                got.get(first).map_or("<end>".into(), Value::to_string),
            ));
        }
        played += 1;
    }
    assert!(played >= 25, "only {played} cases replayed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One session of the `every-request` scenario (every agent-to-client request of ACP v1), with
/// `permission` answering, from `spec`; the agent's text of the turn.
async fn every_request(
    spec: AgentSpec,
    permission: PermissionHandler,
    cwd: &str,
    text: &str,
) -> String {
    let config = HostConfig {
        permission,
        ..HostConfig::default()
    };
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let agent = host.spawn(spec).await.unwrap();
    let session = agent.new_session(SessionOptions::new(cwd)).await.unwrap();
    let _ = session
        .prompt(vec![json!({"type": "text", "text": text})])
        .await;
    agent.shutdown().await;
    let evs = collect_until(&mut events, std::time::Duration::from_secs(30), |e| {
        e.kind == EventKind::AgentExited
    })
    .await;
    evs.iter()
        .filter(|e| e.kind == EventKind::SessionUpdate)
        .map(fake::chunk_text)
        .collect()
}

struct Recorded {
    _dir: tempfile::TempDir,
    file: PathBuf,
    text: String,
    report: PathBuf,
}

async fn record_every_request() -> Recorded {
    let dir = tempfile::tempdir().unwrap();
    let ws = scenario::Ws::new();
    std::fs::write(Path::new(&ws.cwd).join("README.md"), "# readme\n").unwrap();
    let file = dir.path().join("every.acprec.jsonl");
    let spec = mock(Some("every-request"));
    let config = HostConfig {
        permission: allow_once(),
        record: Some(acp_host::record::RecordConfig {
            file: Some(file.clone()),
            ..Default::default()
        }),
        ..HostConfig::default()
    };
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(ws.cwd.as_str()))
        .await
        .unwrap();
    session
        .prompt(vec![json!({"type": "text", "text": "everything"})])
        .await
        .unwrap();
    agent.shutdown().await;
    let evs = collect_until(&mut events, std::time::Duration::from_secs(30), |e| {
        e.kind == EventKind::AgentExited
    })
    .await;
    let text = evs
        .iter()
        .filter(|e| e.kind == EventKind::SessionUpdate)
        .map(fake::chunk_text)
        .collect();
    let report = dir.path().join("report.json");
    Recorded {
        _dir: dir,
        file,
        text,
        report,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_in_another_directory_reads_that_directory_and_reports_nothing() {
    let rec = record_every_request().await;
    // Another workspace: the session's cwd is bound to it, and the agent's paths follow.
    let ws = scenario::Ws::new();
    std::fs::write(Path::new(&ws.cwd).join("README.md"), "# readme\n").unwrap();
    let spec = AgentSpec::replay(fast(&rec.file, &rec.report));
    let text = every_request(spec, allow_once(), &ws.cwd, "everything").await;
    let r = report(&rec.report);
    assert_eq!(r["divergenceCount"], 0, "{r:#}");
    assert_eq!(r["complete"], true);
    assert_eq!(
        text, rec.text,
        "the replayed turn shows what the recorded one did"
    );
    assert!(text.contains("permission selected allow"), "{text}");
    assert_eq!(
        std::fs::read_to_string(Path::new(&ws.cwd).join("notes.txt")).unwrap(),
        "every request\n",
        "the agent's write landed in the live workspace"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_answers_otherwise_is_reported_with_the_field_that_differs() {
    let rec = record_every_request().await;
    let ws = scenario::Ws::new();
    std::fs::write(Path::new(&ws.cwd).join("README.md"), "# readme\n").unwrap();
    let spec = AgentSpec::replay(fast(&rec.file, &rec.report));
    // The changed behaviour: this host denies what the recorded one allowed, and prompts
    // with other words.
    let reject = PermissionHandler::Decider(std::sync::Arc::new(
        |req: acp_host::PermissionRequest| async move {
            Ok(req
                .option_of_kind("reject_once")
                .map(|o| o.option_id.clone()))
        },
    ));
    let text = every_request(spec, reject, &ws.cwd, "something else").await;
    let r = report(&rec.report);
    let divergences = r["divergences"].as_array().unwrap();
    let prompt = divergences
        .iter()
        .find(|d| d["kind"] == "params_differ")
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(prompt["method"], "session/prompt", "{r:#}");
    assert_eq!(prompt["differences"][0]["path"], "params.prompt[0].text");
    assert_eq!(prompt["differences"][0]["recorded"], "everything");
    assert_eq!(prompt["differences"][0]["live"], "something else");
    let answer = divergences
        .iter()
        .find(|d| d["kind"] == "answer_differs")
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(answer["method"], "session/request_permission");
    assert!(
        answer["differences"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["path"].as_str().unwrap().starts_with("result.outcome")),
        "{answer:#}"
    );
    assert!(answer["line"].as_u64().unwrap() > 1);
    assert_eq!(r["complete"], false);
    // The replay still plays the recorded agent: the turn shows the recorded answers.
    assert_eq!(text, rec.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_recording_lacks_fails_with_the_divergence_and_a_missing_one_is_reported() {
    let rec = record_every_request().await;
    let ws = scenario::Ws::new();
    let config = HostConfig {
        permission: allow_once(),
        ..HostConfig::default()
    };
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let agent = host
        .spawn(AgentSpec::replay(fast(&rec.file, &rec.report)))
        .await
        .unwrap();
    let session = agent
        .new_session(SessionOptions::new(ws.cwd.as_str()))
        .await
        .unwrap();
    // A second session: the recording has one `session/new`.
    let err = agent
        .new_session(SessionOptions::new(ws.cwd.as_str()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "agent_error");
    assert!(err.to_string().contains("replay"), "{err}");
    drop(session);
    // The host stops before its prompt: reported missing when it closes the connection.
    agent.shutdown().await;
    let evs = collect_until(&mut events, std::time::Duration::from_secs(30), |e| {
        e.kind == EventKind::AgentExited
    })
    .await;
    let stderr: Vec<String> = evs
        .iter()
        .filter(|e| e.kind == EventKind::AgentStderr)
        .map(|e| e.data_value()["line"].as_str().unwrap_or("").to_owned())
        .collect();
    let r = report(&rec.report);
    let kinds: Vec<&str> = r["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["unexpected_message", "missing_message"], "{r:#}");
    assert_eq!(r["divergences"][1]["method"], "session/prompt");
    // The same, readable, as the agent's stderr.
    assert!(
        stderr
            .iter()
            .any(|l| l.starts_with("replay: divergence 1 (unexpected_message)")),
        "{stderr:?}"
    );
    assert!(
        stderr
            .iter()
            .any(|l| l.starts_with("replay: ended: 2 divergences")),
        "{stderr:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_a_recording_fails_the_spawn_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let header = json!({"acpRecording": 1, "acpHost": "0", "initialize": null}).to_string();
    let cases: [(&str, String, &str); 6] = [
        ("empty", String::new(), "empty"),
        ("not-json", "hello\n".into(), "line 1: not JSON"),
        (
            "version",
            "{\"acpRecording\": 99}\n".into(),
            "line 1: format version 99",
        ),
        (
            "no-t",
            format!("{header}\n{{\"dir\":\"in\",\"msg\":{{}}}}\n"),
            "line 2: has no time",
        ),
        (
            "bad-dir",
            format!("{header}\n{{\"t\":1,\"dir\":\"up\",\"msg\":{{}}}}\n"),
            "line 2: its `dir`",
        ),
        (
            "after-end",
            format!("{header}\n{{\"t\":1,\"end\":{{}}}}\n{{\"t\":2,\"gap\":{{}}}}\n"),
            "line 3: follows the `end` line",
        ),
    ];
    let host = Host::new(HostConfig::default());
    for (name, text, want) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let err = host
            .spawn(AgentSpec::replay(ReplayOptions::new(&file)))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "invalid_config", "{name}: {err}");
        assert!(err.to_string().contains(want), "{name}: {err}");
        assert!(err.to_string().contains("replay.file"), "{name}: {err}");
    }
    let missing = host
        .spawn(AgentSpec::replay(ReplayOptions::new(
            dir.path().join("nope"),
        )))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), "invalid_config");
}

/// fixtures/recordings/faces.
fn faces_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("fixtures/recordings/faces")
}

/// fixtures/recordings/faces/cases.json.
fn face_cases() -> Value {
    let path = faces_dir().join("cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn case_named<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no conformance case {name}"))
}

/// `scripts/gen-recordings`: with `ACP_RECORDINGS_OUT=DIR`, this face's recordings of the cases
/// of fixtures/recordings/faces/cases.json are written to `DIR/rust/<case>.acprec.jsonl`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_this_faces_fixtures_when_asked() {
    let Some(out) = std::env::var_os("ACP_RECORDINGS_OUT") else {
        return;
    };
    let out = PathBuf::from(out).join("rust");
    std::fs::create_dir_all(&out).unwrap();
    let (doc, cwd) = cases();
    for name in face_cases()["cases"].as_array().unwrap() {
        let name = name.as_str().unwrap();
        write_fixtures(&doc, &cwd);
        let file = out.join(format!("{name}.acprec.jsonl"));
        let _ = std::fs::remove_file(&file);
        run_case_from(case_named(&doc, name), &cwd, Source::Record(file)).await;
    }
}

/// A session recorded from each face (C, Node, Python, Kotlin, Rust) replays through this one
/// with no divergence and the trace the case expects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_faces_recording_replays_through_rust_without_divergence() {
    let (doc, cwd) = cases();
    let root = faces_dir();
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for face in ["c", "kotlin", "node", "python", "rust"] {
        for name in face_cases()["cases"].as_array().unwrap() {
            let name = name.as_str().unwrap();
            let file = root.join(face).join(format!("{name}.acprec.jsonl"));
            if !file.is_file() {
                failures.push(format!(
                    "{face}/{name}: no recording (scripts/gen-recordings)"
                ));
                continue;
            }
            write_fixtures(&doc, &cwd);
            let out = dir.path().join(format!("{face}-{name}.json"));
            let trace = run_case_from(
                case_named(&doc, name),
                &cwd,
                Source::Replay(fast(&file, &out)),
            )
            .await;
            let want: Value = serde_json::from_str(
                &std::fs::read_to_string(
                    scenarios_dir().join(format!("conformance/expected/{name}.json")),
                )
                .unwrap(),
            )
            .unwrap();
            let want = without_process(want["events"].as_array().unwrap().clone());
            let got = without_process(trace);
            let r = report(&out);
            if r["divergenceCount"] != 0 || r["complete"] != true {
                failures.push(format!("{face}/{name}: {r:#}"));
            } else if want != got {
                let first = want.iter().zip(&got).position(|(a, b)| a != b);
                let first = first.unwrap_or(want.len().min(got.len()));
                failures.push(format!(
                    "{face}/{name}: trace differs at event {first}\n  want: {}\n  got:  {}",
                    want.get(first).map_or("<end>".into(), Value::to_string),
                    got.get(first).map_or("<end>".into(), Value::to_string),
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A host answering a permission otherwise than the recorded one: reported by the replay of
/// every face's recording as `answer_differs` of `session/request_permission`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_permission_answer_is_a_divergence_for_every_faces_recording() {
    let (doc, cwd) = cases();
    let changed = &face_cases()["changed"];
    let name = changed["case"].as_str().unwrap();
    let mut case = case_named(&doc, name).clone();
    case["permission"] = changed["permission"].clone();
    let dir = tempfile::tempdir().unwrap();
    for face in ["c", "kotlin", "node", "python", "rust"] {
        let file = faces_dir().join(format!("{face}/{name}.acprec.jsonl"));
        write_fixtures(&doc, &cwd);
        let out = dir.path().join(format!("{face}.json"));
        run_case_from(&case, &cwd, Source::Replay(fast(&file, &out))).await;
        let r = report(&out);
        assert!(
            r["divergences"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["kind"] == "answer_differs"
                    && d["method"] == "session/request_permission"),
            "{face}: {r:#}"
        );
    }
}

/// The host's `$/cancel_request` names its request by the id it gave it: a replay compares it
/// as the id the recorded host gave the same request (another host may number its requests
/// otherwise), and a cancel of a request it never sent still differs.
#[tokio::test]
async fn a_cancel_request_is_compared_by_the_request_it_names_not_its_number() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cancel.acprec.jsonl");
    let prompt = json!({"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]});
    let lines = [
        json!({"acpRecording": 3, "acpHost": "0.1.0", "initialize": null}),
        json!({"t": 0.1, "dir": "out", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt}}),
        json!({"t": 0.2, "dir": "out", "msg": {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}}),
        json!({"t": 0.3, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "cancelled"}}}),
        json!({"t": 0.4, "end": {"lines": 3}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let rec = acp_host::replay::Recording::open(&file).unwrap();

    let run = |prompt_id: u64, cancel_id: u64| {
        let rec = rec.clone();
        let file = file.clone();
        let prompt = prompt.clone();
        async move {
            let (mut host_out, replay_in) = tokio::io::duplex(1 << 16);
            let (replay_out, host_in) = tokio::io::duplex(1 << 16);
            let options = ReplayOptions {
                pace: Pace::Fast,
                ..ReplayOptions::new(&file)
            };
            let replay = tokio::spawn(async move {
                acp_host::replay::serve(&rec, &options, replay_in, replay_out, tokio::io::sink())
                    .await
            });
            for msg in [
                json!({"jsonrpc": "2.0", "id": prompt_id, "method": "session/prompt", "params": prompt}),
                json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": cancel_id}}),
            ] {
                host_out
                    .write_all(format!("{msg}\n").as_bytes())
                    .await
                    .unwrap();
            }
            let mut answers = BufReader::new(host_in).lines();
            let answer: Value =
                serde_json::from_str(&answers.next_line().await.unwrap().unwrap()).unwrap();
            assert_eq!(answer["id"], prompt_id, "answered by the live id: {answer}");
            drop(host_out);
            replay.await.unwrap()
        }
    };
    let report = run(7, 7).await;
    assert_eq!(report.divergence_count, 0, "{report:?}");
    assert!(report.complete, "{report:?}");
    let report = run(7, 8).await;
    assert_eq!(report.divergence_count, 1, "{report:?}");
    let d = serde_json::to_value(&report.divergences[0]).unwrap();
    assert!(d.to_string().contains("requestId"), "{d}");
}
