//! The fail-closed matrix: every way a permission request can end without a valid "allow" denies,
//! resolves exactly once, reaches the agent, and the tool effect (a file write) does not happen.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use acp_host::permission::policy::Policy;
use acp_host::{
    Event, EventKind, Host, HostConfig, PermissionHandler, PermissionRequest, SessionOptions,
};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

struct Run {
    events: Vec<Event>,
    dir: tempfile::TempDir,
}

impl Run {
    fn resolutions(&self) -> Vec<Value> {
        of_kind(&self.events, EventKind::PermissionResolved)
            .iter()
            .map(|e| e.data_value())
            .collect()
    }
    fn written(&self) -> bool {
        self.dir.path().join("hello.txt").exists()
    }
    fn tool_status(&self) -> Option<String> {
        self.events
            .iter()
            .rev()
            .filter(|e| e.update_kind().as_deref() == Some("tool_call_update"))
            .find_map(|e| e.data_value()["status"].as_str().map(str::to_owned))
    }
}

/// Drive `permission-write` with `config`; `during` runs once the permission was requested.
async fn permission_write<F, Fut>(config: HostConfig, during: F) -> Run
where
    F: FnOnce(Host, acp_host::Session, u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir
        .path()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let host = Host::new(config);
    let mut stream = host.events().unwrap();
    let agent = host.spawn(mock(Some("permission-write"))).await.unwrap();
    let session = agent.new_session(SessionOptions::new(&cwd)).await.unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("write").await });
    let mut events =
        collect_until(&mut stream, T, |e| e.kind == EventKind::PermissionRequested).await;
    let id = events.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    during(host.clone(), session.clone(), id).await;
    let _ = tokio::time::timeout(T, turn).await.expect("turn must end");
    agent.shutdown().await;
    events.extend(collect_until(&mut stream, T, |e| e.kind == EventKind::AgentExited).await);
    Run { events, dir }
}

fn assert_denied(run: &Run, decided_by: &str) {
    let res = run.resolutions();
    assert_eq!(res.len(), 1, "exactly one resolution: {res:?}");
    assert_eq!(res[0]["decidedBy"], decided_by, "{res:?}");
    assert!(
        !run.written(),
        "the file was written although the request was denied ({decided_by})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_by_the_host_the_write_happens() {
    let run = permission_write(
        HostConfig {
            permission: allow_once(),
            ..HostConfig::default()
        },
        |_, _, _| async {},
    )
    .await;
    assert_eq!(run.resolutions()[0]["decidedBy"], "host");
    assert!(run.written(), "control case: an allowed write lands");
    let writes = of_kind(&run.events, EventKind::FsWrite);
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].data_value()["outcome"], "ok");
    assert_eq!(run.tool_status().as_deref(), Some("completed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_policy_without_a_decider_denies() {
    let run = permission_write(HostConfig::default(), |_, _, _| async {}).await;
    assert_denied(&run, "rule");
    assert_eq!(
        run.resolutions()[0]["outcome"],
        json!({"outcome":"selected","optionId":"reject-once"})
    );
    assert_eq!(
        run.tool_status().as_deref(),
        Some("failed"),
        "the agent saw the denial"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_denies() {
    let config = HostConfig {
        permission: PermissionHandler::Manual,
        permission_timeout: Duration::from_millis(200),
        ..HostConfig::default()
    };
    let run = permission_write(config, |_, _, _| async {}).await;
    assert_denied(&run, "timeout");
    assert_eq!(run.tool_status().as_deref(), Some("failed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decider_error_and_panic_deny() {
    for panics in [false, true] {
        let decider =
            PermissionHandler::Decider(Arc::new(move |_r: PermissionRequest| async move {
                if panics {
                    panic!("decider bug");
                }
                Err::<Option<String>, String>("UI unavailable".into())
            }));
        let run = permission_write(
            HostConfig {
                permission: decider,
                ..HostConfig::default()
            },
            |_, _, _| async {},
        )
        .await;
        assert_denied(&run, "invalid_answer");
        // The denial says why: the handler's failure, as the face reported it.
        let reason = run.resolutions()[0]["reason"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let want = if panics {
            "decider bug"
        } else {
            "UI unavailable"
        };
        assert!(reason.contains(want), "reason {reason:?} lacks {want:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_option_that_was_not_offered_denies() {
    let decider = PermissionHandler::Decider(Arc::new(|_r: PermissionRequest| async move {
        Ok(Some("allow-everything-forever".to_owned()))
    }));
    let run = permission_write(
        HostConfig {
            permission: decider,
            ..HostConfig::default()
        },
        |_, _, _| async {},
    )
    .await;
    assert_denied(&run, "invalid_answer");
    let reason = run.resolutions()[0]["reason"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        reason.contains("allow-everything-forever") && reason.contains("allow-once"),
        "the reason names the answer and the offered ids: {reason:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_stale_and_duplicate_answers_change_nothing() {
    let config = HostConfig {
        permission: PermissionHandler::Manual,
        ..HostConfig::default()
    };
    let run = permission_write(config, |host, _, id| async move {
        assert_eq!(
            host.respond_permission(id + 1000, Some("allow-once".into()))
                .await
                .unwrap_err()
                .kind(),
            "not_found"
        );
        host.respond_permission(id, None).await.unwrap();
        // The duplicate (and now stale) answer is an error to the host and changes nothing.
        let err = host
            .respond_permission(id, Some("allow-once".into()))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "already_resolved");
    })
    .await;
    assert_denied(&run, "host");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_cancel_answers_cancelled() {
    let config = HostConfig {
        permission: PermissionHandler::Manual,
        ..HostConfig::default()
    };
    let run = permission_write(config, |_, session, _| async move {
        session.cancel().await.unwrap()
    })
    .await;
    assert_denied(&run, "cancelled");
    assert_eq!(
        run.resolutions()[0]["outcome"],
        json!({"outcome":"cancelled"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_shutdown_resolves_as_disconnected() {
    let config = HostConfig {
        permission: PermissionHandler::Manual,
        shutdown_grace: Duration::from_millis(300),
        ..HostConfig::default()
    };
    let run = permission_write(config, |host, _, _| async move { host.shutdown().await }).await;
    assert_denied(&run, "disconnected");
    assert!(run.resolutions()[0]["outcome"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_deny_beats_a_host_allow() {
    let policy = Policy::from_json(
        r#"{"preset":"ask","rules":[{"action":"deny","paths":["**/hello.txt"]}]}"#,
    )
    .unwrap();
    let config = HostConfig {
        permission: allow_once(),
        policy: Some(policy),
        ..HostConfig::default()
    };
    let run = permission_write(config, |_, _, _| async {}).await;
    assert_denied(&run, "rule");
    assert!(
        run.resolutions()[0]["rule"]
            .as_str()
            .unwrap()
            .contains("hello.txt")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_grants_the_session_and_nothing_else() {
    let picks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let p2 = picks.clone();
    let decider = PermissionHandler::Decider(Arc::new(move |req: PermissionRequest| {
        p2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            Ok(req
                .option_of_kind("allow_always")
                .map(|o| o.option_id.clone()))
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir
        .path()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let host = Host::new(HostConfig {
        permission: decider,
        ..HostConfig::default()
    });
    let mut stream = host.events().unwrap();
    let agent = host.spawn(mock(Some("permission-write"))).await.unwrap();
    let s1 = agent.new_session(SessionOptions::new(&cwd)).await.unwrap();
    s1.prompt_text("1").await.unwrap();
    s1.prompt_text("2").await.unwrap();
    let s2 = agent.new_session(SessionOptions::new(&cwd)).await.unwrap();
    s2.prompt_text("3").await.unwrap();
    let evs = drain(&mut stream, Duration::from_millis(300)).await;
    let by: Vec<String> = of_kind(&evs, EventKind::PermissionResolved)
        .iter()
        .map(|e| e.data_value()["decidedBy"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        by,
        vec!["host", "grant", "host"],
        "the grant covers its session only"
    );
    assert_eq!(picks.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// A hand-written agent over an in-memory pipe, for the causes the mock agent cannot stage: it
/// answers `initialize` and `session/new` (session `s`), then writes `after_new` (one message a
/// line) and, with `close_after`, goes away. Every answer the host sends it (a message without a
/// method) comes out of the returned channel. Returns the host's side of the pipe.
fn fake_agent(
    after_new: Vec<String>,
    close_after: bool,
) -> (
    tokio::io::DuplexStream,
    tokio::sync::mpsc::UnboundedReceiver<Value>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client_side, agent_side) = tokio::io::duplex(64 * 1024);
    let (agent_read, mut agent_write) = tokio::io::split(agent_side);
    let (answers_tx, answers_rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        let mut lines = BufReader::new(agent_read).lines();
        let mut after_new = Some(after_new);
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: Value = serde_json::from_str(&line).unwrap();
            let result = match msg["method"].as_str() {
                Some("initialize") => json!({"protocolVersion": 1}),
                Some("session/new") => json!({"sessionId": "s"}),
                None => {
                    let _ = answers_tx.send(msg);
                    continue;
                }
                _ => continue,
            };
            let r = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
            agent_write
                .write_all(format!("{r}\n").as_bytes())
                .await
                .unwrap();
            if msg["method"] == "session/new" {
                for line in after_new.take().unwrap_or_default() {
                    agent_write.write_all(line.as_bytes()).await.unwrap();
                    agent_write.write_all(b"\n").await.unwrap();
                }
                if close_after {
                    return; // the agent goes away with its requests pending
                }
            }
        }
    });
    (client_side, answers_rx)
}

const TWO_OPTIONS: &str = r#"[{"optionId":"ok","name":"OK","kind":"allow_once"},{"optionId":"no","name":"No","kind":"reject_once"}]"#;

/// A permission request `p1` the agent withdraws (or leaves pending as it goes away).
async fn fake_agent_permission(close_after: bool) -> Vec<Event> {
    let ask = format!(
        r#"{{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{{"sessionId":"s","toolCall":{{"toolCallId":"t","title":"Edit","kind":"edit"}},"options":{TWO_OPTIONS}}}}}"#
    );
    let withdraw =
        r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"p1"}}"#.to_owned();
    let after_new = match close_after {
        true => vec![ask],
        false => vec![ask, withdraw],
    };
    let (client_side, mut answers) = fake_agent(after_new, close_after);
    let (r, w) = tokio::io::split(client_side);
    let host = Host::new(HostConfig {
        permission: PermissionHandler::Manual,
        ..HostConfig::default()
    });
    let mut stream = host.events().unwrap();
    let agent = host.connect(r, w).await.unwrap();
    // When the agent vanishes right away, the session may already be gone when the call returns.
    let opened = agent.new_session(SessionOptions::new(tmp_cwd())).await;
    assert!(close_after || opened.is_ok(), "{opened:?}");
    let evs = collect_until(&mut stream, T, |e| e.kind == EventKind::PermissionResolved).await;
    if !close_after {
        let answer = tokio::time::timeout(T, answers.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(answer["id"], "p1");
        assert_eq!(
            answer["error"]["code"], -32800,
            "withdrawn request answered -32800: {answer}"
        );
    }
    evs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_withdrawing_the_request_resolves_it_once() {
    let evs = fake_agent_permission(false).await;
    let res = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(res.len(), 1);
    assert_eq!(res[0].data_value()["decidedBy"], "agent_cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_exit_resolves_pending_requests_as_disconnected() {
    let evs = fake_agent_permission(true).await;
    let res = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(res.len(), 1);
    assert_eq!(res[0].data_value()["decidedBy"], "disconnected");
}

#[allow(dead_code)]
fn _uses(_: &Path) {}

/// With events off (nothing is reported, nothing even serialized), permissions are decided the
/// same: a decider's allow lands the write, and without one the request is denied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_events_off_permissions_are_decided_the_same() {
    for (permission, expect_written) in [(allow_once(), true), (PermissionHandler::DenyAll, false)]
    {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let host = Host::new(HostConfig {
            permission,
            events_enabled: false,
            ..HostConfig::default()
        });
        assert!(host.events().is_none());
        let agent = host.spawn(mock(Some("permission-write"))).await.unwrap();
        let session = agent
            .new_session(SessionOptions::new(cwd.to_string_lossy()))
            .await
            .unwrap();
        let turn = tokio::time::timeout(T, session.prompt_text("write"))
            .await
            .expect("turn must end")
            .unwrap();
        assert_eq!(turn.stop_reason, "end_turn");
        assert_eq!(
            cwd.join("hello.txt").exists(),
            expect_written,
            "written iff allowed"
        );
        agent.shutdown().await;
    }
}

/// A tool call whose text no JSON tree holds (a number out of range, a lone surrogate), wherever
/// it hides, is answered -32602 and reported: no decider is asked (it would see a different tool
/// call than the policy), nothing is requested or resolved, and the connection carries on (a
/// well-formed request after them is decided as usual). Nesting past the parser's limit never
/// gets this far: the whole message is refused first (-32600, `too_deep`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_no_tree_holds_is_refused_before_anyone_decides() {
    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    let ask = |id: &str, call: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"session/request_permission","params":{{"sessionId":"s","toolCall":{call},"options":{TWO_OPTIONS}}}}}"#
        )
    };
    let mut lines: Vec<String> = ["1e400", r#""\ud800""#, deep.as_str()]
        .iter()
        .flat_map(|bad| {
            [
                format!(r#"{{"toolCallId":"t","kind":"edit","_meta":{{"n":{bad}}}}}"#),
                format!(r#"{{"toolCallId":"t","kind":"edit","title":{bad}}}"#),
                format!(r#"{{"toolCallId":"t","kind":"edit","rawInput":{{"path":"/w/.git/x","x":{bad}}}}}"#),
            ]
        })
        .enumerate()
        .map(|(i, call)| ask(&i.to_string(), &call))
        .collect();
    let asked = lines.len();
    // The control: a request every tree holds.
    lines.push(ask(
        r#""good""#,
        r#"{"toolCallId":"t","kind":"edit","title":"Edit"}"#,
    ));
    let (client_side, mut answers_rx) = fake_agent(lines, false);
    let decided = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let d2 = decided.clone();
    let decider = PermissionHandler::Decider(Arc::new(move |req: PermissionRequest| {
        d2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            Ok(req
                .option_of_kind("allow_once")
                .map(|o| o.option_id.clone()))
        }
    }));
    let (r, w) = tokio::io::split(client_side);
    let host = Host::new(HostConfig {
        permission: decider,
        ..HostConfig::default()
    });
    let mut stream = host.events().unwrap();
    let agent = host.connect(r, w).await.unwrap();
    agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let mut answers = Vec::new();
    while answers.len() < asked + 1 {
        let answer = tokio::time::timeout(T, answers_rx.recv())
            .await
            .expect("every request is answered")
            .unwrap();
        answers.push(answer);
    }
    // The last three nest 300 levels: refused as messages, before the permission path.
    let too_deep = 3;
    for (i, answer) in answers[..asked].iter().enumerate() {
        assert_eq!(answer["id"], i, "answered in order: {answer}");
        let code = if i < asked - too_deep { -32602 } else { -32600 };
        assert_eq!(answer["error"]["code"], code, "{answer}");
    }
    assert_eq!(answers[asked]["id"], "good");
    assert_eq!(
        answers[asked]["result"]["outcome"]["optionId"], "ok",
        "{}",
        answers[asked]
    );
    let evs = collect_until(&mut stream, T, |e| e.kind == EventKind::PermissionResolved).await;
    assert_eq!(decided.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(of_kind(&evs, EventKind::PermissionRequested).len(), 1);
    let reasons: Vec<Value> = of_kind(&evs, EventKind::ProtocolError)
        .iter()
        .map(|e| e.data_value()["reason"].clone())
        .collect();
    let count = |r: &str| reasons.iter().filter(|x| *x == r).count();
    assert_eq!(
        count("invalid_params"),
        asked - too_deep,
        "each refusal is reported"
    );
    assert_eq!(count("too_deep"), too_deep, "{reasons:?}");
}
