//! Cross-face conformance: run every case of `fixtures/scenarios/conformance/cases.json` through the
//! Rust API and compare the normalised event trace with `fixtures/scenarios/conformance/expected/<case>.json`
//! (`UPDATE_EXPECT=1` rewrites them). The C, Node and Python faces run the same cases against the
//! same files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use acp_host::auth::{TerminalAuth, TerminalAuthCommand};

use acp_host::{
    Event, EventKind, Host, HostConfig, PermissionHandler, PermissionRequest, Session,
    SessionOptions,
};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

pub(crate) fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/scenarios")
}

/// The normalised form of one event (CONFORMANCE.md).
fn normalise(ev: &Event) -> Option<Value> {
    if matches!(ev.kind, EventKind::AgentStderr | EventKind::TerminalExited) {
        return None;
    }
    let mut data = ev.data_value();
    match ev.kind {
        EventKind::AgentReady => {
            data.as_object_mut().map(|d| d.remove("pid"));
        }
        EventKind::AgentExited => {
            data.as_object_mut().map(|d| d.remove("stderrTail"));
        }
        _ => {}
    }
    Some(json!({
        "kind": ev.kind.as_str(),
        "session": ev.session.as_deref(),
        "turn": ev.turn,
        "replay": ev.replay,
        "data": data,
    }))
}

fn matches_event(ev: &Event, spec: &str) -> bool {
    match spec.split_once(':') {
        Some((kind, update)) => {
            ev.kind.as_str() == kind && ev.update_kind().as_deref() == Some(update)
        }
        None => ev.kind.as_str() == spec,
    }
}

/// The cases' files in `cwd`. Other faces' runs share the directory (side by side in
/// scripts/test): a file already right is left alone, another one replaced at once (a rename),
/// never seen empty.
pub(crate) fn write_fixtures(doc: &Value, cwd: &str) {
    std::fs::create_dir_all(cwd).unwrap();
    for (file, content) in doc["files"].as_object().unwrap() {
        let (path, content) = (PathBuf::from(cwd).join(file), content.as_str().unwrap());
        if std::fs::read_to_string(&path).is_ok_and(|have| have == content) {
            continue;
        }
        let tmp = PathBuf::from(cwd).join(format!("{file}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, content).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
}

fn check<T: std::fmt::Debug>(
    case: &str,
    what: &str,
    res: &acp_host::Result<T>,
    expect: Option<&str>,
) {
    match (expect.and_then(|e| e.strip_prefix("error:")), res) {
        (Some(kind), Err(e)) => assert_eq!(e.kind(), kind, "{case}: {what}: {e}"),
        (Some(kind), Ok(v)) => panic!("{case}: {what}: expected error {kind}, got {v:?}"),
        (None, Err(e)) => panic!("{case}: {what} failed: {e}"),
        (None, Ok(_)) => {}
    }
}

/// A steer's result: `expect` is its outcome (`injected`, `queued`, ...) or `error:<kind>`.
fn check_steer(case: &str, res: &acp_host::Result<acp_host::SteerResult>, expect: Option<&str>) {
    match (expect, res) {
        (Some(e), Err(err)) => assert_eq!(
            Some(err.kind()),
            e.strip_prefix("error:"),
            "{case}: steer: {err}"
        ),
        (Some(e), Ok(r)) => assert_eq!(r.to_json()["outcome"], e, "{case}: steer"),
        (None, r) => panic!("{case}: a steer op needs its expected outcome, got {r:?}"),
    }
}

/// A call with a value: `expect` is the value (a string) or `error:<kind>`; none: it succeeds.
fn check_value<T: Into<Value> + std::fmt::Debug>(
    case: &str,
    what: &str,
    res: acp_host::Result<T>,
    expect: Option<&str>,
) {
    match expect {
        Some(e) if !e.starts_with("error:") => {
            let v = res.unwrap_or_else(|err| panic!("{case}: {what} failed: {err}"));
            assert_eq!(v.into(), Value::from(e), "{case}: {what}");
        }
        _ => check(case, what, &res, expect),
    }
}

/// The op's `sessionId`, else the current session's.
fn session_id(op: &Value, current: &Option<Session>) -> String {
    match op["sessionId"].as_str() {
        Some(id) => id.to_owned(),
        None => current
            .as_ref()
            .expect("a current session")
            .id()
            .to_string(),
    }
}

fn sorted_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted_keys(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted_keys).collect()),
        other => other,
    }
}

/// What a case's agent is: the mock agent, the mock agent recorded into a file, or a recording
/// played back (`replay.rs`).
pub(crate) enum Source {
    Mock,
    Record(PathBuf),
    Replay(acp_host::replay::ReplayOptions),
}

pub(crate) async fn run_case(case: &Value, cwd: &str) -> Vec<Value> {
    run_case_from(case, cwd, Source::Mock).await
}

pub(crate) async fn run_case_from(case: &Value, cwd: &str, source: Source) -> Vec<Value> {
    let name = case["name"].as_str().unwrap();
    let permission = match case["permission"].as_str().unwrap_or("deny") {
        "allow" => PermissionHandler::Decider(Arc::new(|req: PermissionRequest| async move {
            Ok(req
                .option_of_kind("allow_once")
                .map(|o| o.option_id.clone()))
        })),
        "manual" => PermissionHandler::Manual,
        _ => PermissionHandler::DenyAll,
    };
    let mut config = HostConfig {
        permission,
        ..HostConfig::default()
    };
    if let Some(max) = case["maxLineBytes"].as_u64() {
        config.max_line_bytes = max as usize;
    }
    if let Some(ms) = case["cancelGraceMs"].as_u64() {
        config.cancel_grace = Duration::from_millis(ms);
    }
    if let Some(names) = case["unstable"].as_array() {
        config.unstable = names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
    }
    if let Some(table) = case.get("ext").filter(|v| v.is_object()) {
        // An extension handler answering from the case's table.
        let table = table.clone();
        let handler = move |method: String, _params: Value| {
            let entry = table.get(&method).cloned();
            async move {
                match entry {
                    Some(e) if e.get("result").is_some() => Ok(e["result"].clone()),
                    Some(e) => Err(acp_host::services::ServiceError::new(
                        e["error"]["code"].as_i64().unwrap_or(-32603),
                        e["error"]["message"].as_str().unwrap_or("error"),
                    )),
                    None => Err(acp_host::services::ServiceError::new(
                        -32601,
                        "method not found",
                    )),
                }
            }
        };
        config.ext = acp_host::services::ExtService::Embedder(Arc::new(handler));
    }
    if let Some(answers) = case.get("elicitation").filter(|v| v.is_object()) {
        // A decider that answers by mode with the case's answers.
        let answers = answers.clone();
        let modes = acp_host::ElicitationModes {
            form: answers.get("form").is_some(),
            url: answers.get("url").is_some(),
        };
        config.elicitation = acp_host::ElicitationHandler::Decider {
            modes,
            decider: Arc::new(move |req: acp_host::ElicitationRequest| {
                let mode = match req.kind {
                    acp_host::ElicitationKind::Form { .. } => "form",
                    acp_host::ElicitationKind::Url { .. } => "url",
                };
                let answer = acp_host::ElicitationAnswer::from_json(&answers[mode]);
                async move { answer }
            }),
        };
    }
    let creds_dir = tempfile::tempdir().unwrap();
    if case["terminalAuth"].as_bool() == Some(true) {
        // The "user" logs in: the login leaves the credentials file the mock agent looks for.
        config.terminal_auth =
            TerminalAuth::Runner(Arc::new(|cmd: TerminalAuthCommand| async move {
                let path = cmd.env.get("ACP_MOCK_CREDENTIALS").cloned().flatten();
                let path = path.ok_or("no ACP_MOCK_CREDENTIALS")?;
                std::fs::write(path, "logged-in\n").map_err(|e| e.to_string())?;
                Ok(0)
            }));
    }
    let spec = match source {
        Source::Replay(options) => acp_host::AgentSpec::replay(options),
        Source::Record(file) => {
            config.record = Some(acp_host::record::RecordConfig {
                file: Some(file),
                ..Default::default()
            });
            mock(case["scenario"].as_str())
        }
        Source::Mock => mock(case["scenario"].as_str()),
    };
    let spec = if spec.replay.is_some() {
        spec
    } else {
        spec.env(
            "ACP_MOCK_CREDENTIALS",
            creds_dir.path().join("credentials").to_string_lossy(),
        )
    };
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let spawned = host.spawn(spec).await;
    let mut trace: Vec<Event> = Vec::new();
    let mut agent = match (case["spawnExpect"].as_str(), spawned) {
        (Some(expect), res) => {
            check(name, "spawn", &res, Some(expect));
            trace.extend(collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await);
            return trace.iter().filter_map(normalise).collect();
        }
        (None, res) => res.unwrap_or_else(|e| panic!("{name}: spawn failed: {e}")),
    };
    let mut current: Option<Session> = None;
    let opts = || SessionOptions::new(cwd);
    let mut exited = false;
    for op in case["ops"].as_array().unwrap() {
        let expect = op["expect"].as_str();
        let what = op["op"].as_str().unwrap();
        match what {
            "new_session" => {
                let r = agent.new_session(opts()).await;
                check(name, what, &r, expect);
                if let Ok(s) = r {
                    current = Some(s);
                }
            }
            "load_session" | "resume_session" | "fork_session" => {
                let id = op["sessionId"].as_str().unwrap();
                let r = match what {
                    "load_session" => agent.load_session(id, opts()).await,
                    "resume_session" => agent.resume_session(id, opts()).await,
                    _ => agent.fork_session(id, opts()).await,
                };
                check(name, what, &r, expect);
                if let Ok(s) = r {
                    current = Some(s);
                }
            }
            "prompt" => {
                let session = current.clone().expect("a current session");
                // `content`: the prompt's blocks as given; else one text block of `text`.
                let content = match op["content"].as_array() {
                    Some(blocks) => blocks.clone(),
                    None => vec![json!({"type": "text", "text": op["text"].as_str().unwrap()})],
                };
                let s2 = session.clone();
                let (abort, aborted) = tokio::sync::oneshot::channel::<()>();
                let turn = tokio::spawn(async move {
                    let abort = async {
                        if aborted.await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    };
                    s2.prompt_abortable(content, abort).await
                });
                if let Some(on) = op["steerOn"].as_str() {
                    let evs = collect_until(&mut events, T, |e| matches_event(e, on)).await;
                    trace.extend(evs);
                    let text = op["steer"].as_str().unwrap();
                    let r = session.steer_text(text).await;
                    check_steer(name, &r, op["steerExpect"].as_str());
                }
                if let Some(on) = op["cancelOn"].as_str() {
                    let evs = collect_until(&mut events, T, |e| matches_event(e, on)).await;
                    trace.extend(evs);
                    session.cancel().await.unwrap();
                }
                // v2: cancel the tool call / terminal the matching update names; the answer
                // is the acceptance (the confirming update follows in the trace).
                for (key, field) in [
                    ("cancelToolCallOn", "toolCallId"),
                    ("cancelTerminalOn", "terminalId"),
                ] {
                    if let Some(on) = op[key].as_str() {
                        let evs = collect_until(&mut events, T, |e| matches_event(e, on)).await;
                        let id = evs.last().unwrap().data_value()[field]
                            .as_str()
                            .unwrap()
                            .to_owned();
                        trace.extend(evs);
                        let r = if field == "toolCallId" {
                            session.cancel_tool_call(&id).await
                        } else {
                            session.cancel_terminal(&id).await
                        };
                        assert_eq!(r.unwrap(), json!({}), "{name}: {key}");
                    }
                }
                if let Some(on) = op["abortOn"].as_str() {
                    let evs = collect_until(&mut events, T, |e| matches_event(e, on)).await;
                    trace.extend(evs);
                    abort.send(()).unwrap();
                }
                let r = tokio::time::timeout(T, turn)
                    .await
                    .expect("prompt hung")
                    .unwrap();
                match (expect, &r) {
                    (Some(e), Err(err)) if e.starts_with("error:") => {
                        assert_eq!(Some(err.kind()), e.strip_prefix("error:"), "{name}");
                        if err.kind() == "agent_exited" {
                            exited = true;
                        }
                    }
                    (Some(e), Ok(t)) => assert_eq!(t.stop_reason, e, "{name}"),
                    (_, r) => panic!("{name}: prompt: unexpected {r:?}"),
                }
                // Let the turn's events land before the next op, so traces do not depend on timing.
                // A prompt refused locally (`unsupported`: nothing sent) has no turn.
                if expect != Some("error:unsupported") {
                    // `turns`: a queued steer is a turn of its own after the prompt's.
                    for _ in 0..op["turns"].as_u64().unwrap_or(1) {
                        trace.extend(
                            collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await,
                        );
                    }
                }
            }
            "steer" => {
                let session = current.clone().expect("a current session");
                let r = session.steer_text(op["text"].as_str().unwrap()).await;
                check_steer(name, &r, expect);
                if r.is_ok_and(|s| s.to_json()["outcome"] == "prompted") {
                    trace.extend(
                        collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await,
                    );
                }
            }
            "session_status" => {
                let r = agent.session_status(&session_id(op, &current)).await;
                check_value(name, what, r.map(|s| s.status), expect);
            }
            "set_title" => {
                let title = op["title"].as_str().unwrap();
                let r = agent
                    .set_session_title(&session_id(op, &current), title)
                    .await;
                check_value(name, what, r, expect);
            }
            "archive_session" => {
                let r = agent.archive_session(&session_id(op, &current)).await;
                check(name, what, &r, expect);
            }
            "unarchive_session" => {
                let r = agent.unarchive_session(&session_id(op, &current)).await;
                check(name, what, &r, expect);
            }
            "session_options" => {
                let id = op["sessionId"].as_str();
                let r = agent.session_options(&opts(), id).await;
                // Its value: the current mode it would start in.
                let mode = |d: acp_host::SessionDefaults| {
                    d.modes
                        .and_then(|m| m.get("currentModeId").cloned())
                        .unwrap_or(Value::Null)
                };
                check_value(name, what, r.map(mode), expect);
            }
            "set_mode" => {
                let r = current
                    .as_ref()
                    .unwrap()
                    .set_mode(op["modeId"].as_str().unwrap())
                    .await;
                check(name, what, &r, expect);
            }
            "set_config_option" => {
                let r = current
                    .as_ref()
                    .unwrap()
                    .set_config_option(op["configId"].as_str().unwrap(), op["value"].clone())
                    .await;
                check(name, what, &r, expect);
            }
            "authenticate" => {
                let r = agent.authenticate(op["methodId"].as_str().unwrap()).await;
                check(name, what, &r, expect);
            }
            "logout" => {
                let r = agent.logout().await;
                check(name, what, &r, expect);
            }
            "terminal_auth" => {
                let r = agent.terminal_auth(op["methodId"].as_str().unwrap()).await;
                check(name, what, &r, expect);
                if let Ok(fresh) = r {
                    // The old agent's exit is part of the trace; the case goes on with the new one.
                    trace.extend(
                        collect_until(&mut events, T, |e| e.kind == EventKind::AgentReady).await,
                    );
                    agent = fresh;
                }
            }
            "set_model" => {
                let r = current
                    .as_ref()
                    .unwrap()
                    .set_model(op["modelId"].as_str().unwrap())
                    .await;
                check(name, what, &r, expect);
            }
            "list_sessions" => {
                let r = agent.list_sessions(None, None).await;
                check(name, what, &r, expect);
            }
            "close_session" => {
                let r = current.as_ref().unwrap().close().await;
                check(name, what, &r, expect);
            }
            "delete_session" => {
                let r = agent
                    .delete_session(op["sessionId"].as_str().unwrap())
                    .await;
                check(name, what, &r, expect);
            }
            "shutdown" => {
                agent.shutdown().await;
                exited = true;
            }
            other => panic!("{name}: unknown op {other}"),
        }
    }
    assert!(exited, "{name}: a case ends with shutdown or an agent exit");
    let last = agent.id();
    trace.extend(
        collect_until(&mut events, T, |e| {
            e.kind == EventKind::AgentExited && e.agent == last
        })
        .await,
    );
    trace.iter().filter_map(normalise).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_matches_its_expected_trace() {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(scenarios_dir().join("conformance/cases.json")).unwrap(),
    )
    .unwrap();
    let cwd = doc["cwd"].as_str().unwrap().to_owned();
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    for case in doc["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        write_fixtures(&doc, &cwd);
        let trace = run_case(case, &cwd).await;
        let path = scenarios_dir()
            .join("conformance/expected")
            .join(format!("{name}.json"));
        let got = json!({ "case": name, "events": trace });
        if update {
            // Keys sorted: the files do not depend on whether serde_json keeps insertion order.
            let text = serde_json::to_string_pretty(&sorted_keys(got)).unwrap();
            std::fs::write(&path, text + "\n").unwrap();
            continue;
        }
        let want: Value = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).unwrap(),
            Err(_) => {
                failures.push(format!(
                    "{name}: missing {} (UPDATE_EXPECT=1 creates it)",
                    path.display()
                ));
                continue;
            }
        };
        if want != got {
            let w = want["events"].as_array().cloned().unwrap_or_default();
            let g = got["events"].as_array().cloned().unwrap_or_default();
            let first = w
                .iter()
                .zip(g.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(w.len().min(g.len()));
            failures.push(format!(
                "{name}: trace differs at event {first}\n  want: {}\n  got:  {}",
                w.get(first)
                    .map(Value::to_string)
                    .unwrap_or_else(|| "<end>".into()),
                g.get(first)
                    .map(Value::to_string)
                    .unwrap_or_else(|| "<end>".into()),
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
