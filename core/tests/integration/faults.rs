//! Faults: the agent crashes, hangs, lies, floods or pollutes stdout. No hang, no panic, a typed
//! error, and no process left behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use acp_host::{Error, EventKind, Host, HostConfig, SessionOptions};
use common::*;
use serde_json::json;

const T: Duration = Duration::from_secs(20);

async fn run_turn(
    scenario: &str,
    config: HostConfig,
) -> (
    Vec<acp_host::Event>,
    acp_host::Result<acp_host::TurnResult>,
    u32,
    acp_host::Agent,
) {
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some(scenario))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let result = tokio::time::timeout(T, session.prompt_text("go"))
        .await
        .expect("prompt must not hang");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let pid = agent_pid(&evs);
    // keep the host alive until the caller is done with the agent
    std::mem::forget(host);
    (evs, result, pid, agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_turn_fails_the_prompt_with_exit_status_and_stderr() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("crash-mid-turn"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let err = tokio::time::timeout(T, session.prompt_text("go"))
        .await
        .expect("no hang")
        .unwrap_err();
    let Error::AgentExited(info) = &err else {
        panic!("expected agent_exited, got {err:?}")
    };
    assert_eq!(info.code, Some(3));
    assert_eq!(info.last_stderr_line(), Some("fatal: mock crash"));
    assert!(err.to_string().contains("exit code 3"), "{err}");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    let k = kinds(&evs);
    let chunks = k
        .iter()
        .filter(|x| *x == "session_update:agent_message_chunk")
        .count();
    assert_eq!(
        chunks, 2,
        "updates sent before the crash are delivered: {k:?}"
    );
    let ended = of_kind(&evs, EventKind::TurnEnded);
    assert_eq!(ended[0].data_value()["error"]["kind"], "agent_exited");
    let exited = evs.last().unwrap().data_value();
    assert_eq!(exited["exitCode"], 3);
    assert!(
        exited["stderrTail"]
            .as_str()
            .unwrap()
            .contains("fatal: mock crash")
    );
    assert!(
        k.iter().position(|x| x == "turn_ended") < k.iter().position(|x| x == "session_closed")
    );
    assert!(!alive(agent_pid(&evs)));
    // Later calls fail at once with the same typed error.
    let again = session.prompt_text("again").await.unwrap_err();
    assert_eq!(again.kind(), "agent_exited");
    assert_eq!(
        agent
            .new_session(SessionOptions::new(tmp_cwd()))
            .await
            .unwrap_err()
            .kind(),
        "agent_exited"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_agent_is_shut_down_and_the_pending_prompt_fails() {
    let host = Host::new(HostConfig {
        shutdown_grace: Duration::from_millis(300),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("hang"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("go").await });
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnStarted).await;
    let pid = agent_pid(&evs);
    tokio::time::sleep(Duration::from_millis(200)).await;
    agent.shutdown().await;
    let err = tokio::time::timeout(T, turn)
        .await
        .expect("prompt must not hang")
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), "closed");
    assert!(wait_gone(pid, Duration::from_secs(5)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_ignoring_stdin_eof_is_terminated_by_the_ladder() {
    let host = Host::new(HostConfig {
        shutdown_grace: Duration::from_millis(300),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("ignore-stdin-eof"))).await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentReady).await;
    let pid = agent_pid(&evs);
    let started = Instant::now();
    let exit = agent.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(exit.signal.is_some() || exit.code.is_some(), "{exit:?}");
    assert!(
        wait_gone(pid, Duration::from_secs(5)).await,
        "agent survived the ladder"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_host_and_agent_kills_the_process() {
    let pid;
    {
        let host = Host::new(HostConfig {
            shutdown_grace: Duration::from_millis(200),
            ..HostConfig::default()
        });
        let mut events = host.events().unwrap();
        let agent = host.spawn(mock(Some("ignore-stdin-eof"))).await.unwrap();
        let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentReady).await;
        pid = agent_pid(&evs);
        assert!(alive(pid));
        drop(agent);
        drop(host);
    }
    assert!(
        wait_gone(pid, Duration::from_secs(5)).await,
        "agent outlived its host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_shutdown_kills_the_process_group() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let host = Host::new(HostConfig::default());
            let mut events = host.events().unwrap();
            let agent = host.spawn(mock(Some("ignore-stdin-eof"))).await.unwrap();
            let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentReady).await;
            tx.send(agent_pid(&evs)).unwrap();
            std::mem::forget(agent);
            std::mem::forget(host);
        });
        drop(rt); // tasks dropped without any shutdown call
    });
    let pid = rx.recv().unwrap();
    assert!(
        wait_gone(pid, Duration::from_secs(5)).await,
        "agent outlived the runtime"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_json_stdout_is_reported_as_noise_and_the_turn_completes() {
    let (evs, result, _, _) = run_turn("garbage-stdout", HostConfig::default()).await;
    assert_eq!(result.unwrap().stop_reason, "end_turn");
    let noise = of_kind(&evs, EventKind::ProtocolNoise);
    assert!(!noise.is_empty());
    let counts: Vec<u64> = noise
        .iter()
        .map(|e| e.data_value()["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, (1..=counts.len() as u64).collect::<Vec<_>>());
    assert!(of_kind(&evs, EventKind::SessionUpdate).len() >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_long_line_is_skipped_and_the_connection_survives() {
    let config = HostConfig {
        max_line_bytes: 1024 * 1024,
        ..HostConfig::default()
    };
    let (evs, result, _, _) = run_turn("huge-line", config).await;
    assert_eq!(result.unwrap().stop_reason, "end_turn");
    let errors = of_kind(&evs, EventKind::ProtocolError);
    assert_eq!(errors.len(), 1);
    let d = errors[0].data_value();
    assert_eq!(d["reason"], "line_too_long");
    assert!(d["bytes"].as_u64().unwrap() > 2_000_000);
    // and with the default 64 MiB bound the same line is accepted
    let (evs, result, _, _) = run_turn("huge-line", HostConfig::default()).await;
    assert_eq!(result.unwrap().stop_reason, "end_turn");
    assert!(of_kind(&evs, EventKind::ProtocolError).is_empty());
    assert!(evs.iter().any(|e| e.data.get().len() > 2_000_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_is_decoded_lossily_and_reported() {
    let (evs, result, _, _) = run_turn("invalid-utf8", HostConfig::default()).await;
    assert_eq!(result.unwrap().stop_reason, "end_turn");
    let errors = of_kind(&evs, EventKind::ProtocolError);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].data_value()["reason"], "invalid_utf8");
    let lossy = evs
        .iter()
        .find(|e| e.kind == EventKind::SessionUpdate && e.data.get().contains('\u{FFFD}'));
    assert!(lossy.is_some(), "the update still arrives, with U+FFFD");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_duplicate_responses_are_reported_and_ignored() {
    let (evs, result, _, agent) = run_turn("unknown-response-id", HostConfig::default()).await;
    assert_eq!(result.unwrap().stop_reason, "end_turn");
    let errs: Vec<String> = of_kind(&evs, EventKind::ProtocolError)
        .iter()
        .map(|e| e.data_value()["reason"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        errs.iter().all(|r| r == "unknown_response_id") && !errs.is_empty(),
        "{errs:?}"
    );
    drop(agent);

    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("duplicate-response"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert_eq!(
        session.prompt_text("1").await.unwrap().stop_reason,
        "end_turn"
    );
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ProtocolError).await;
    assert_eq!(
        evs.last().unwrap().data_value()["reason"],
        "duplicate_response"
    );
    // still usable afterwards
    assert_eq!(
        session.prompt_text("2").await.unwrap().stop_reason,
        "end_turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_ignoring_cancel_keeps_streaming_and_ends_its_way() {
    // A grace longer than the agent's second of ignoring: its own answer ends the turn.
    let host = Host::new(HostConfig {
        cancel_grace: Duration::from_secs(30),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("ignore-cancel"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("go").await });
    collect_until(&mut events, T, |e| e.kind == EventKind::SessionUpdate).await;
    session.cancel().await.unwrap();
    let result = tokio::time::timeout(T, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(result.stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert!(
        !of_kind(&evs, EventKind::SessionUpdate).is_empty(),
        "updates after cancel still delivered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_flood_is_drained_and_bounded() {
    let config = HostConfig {
        stderr_tail_bytes: 4096,
        ..HostConfig::default()
    };
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("stderr-flood"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("go").await });
    let mut stderr_lines = 0;
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    stderr_lines += of_kind(&evs, EventKind::AgentStderr).len();
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, "end_turn");
    let info = agent.shutdown().await;
    let rest = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    stderr_lines += of_kind(&rest, EventKind::AgentStderr).len();
    assert!(
        stderr_lines >= 20_000,
        "every stderr line is reported: {stderr_lines}"
    );
    assert!(info.stderr_tail.len() <= 4096);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_mismatch_is_a_typed_error_and_the_agent_is_shut_down() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let err = host
        .spawn(mock(Some("version-mismatch")))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::VersionUnsupported { .. }), "{err:?}");
    assert_eq!(err.data()["agentVersion"], json!(2));
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    assert!(of_kind(&evs, EventKind::AgentReady).is_empty());
    let exited = evs.last().unwrap().data_value();
    assert_eq!(exited["reason"], "shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_agent_command_is_a_spawn_error() {
    let host = Host::new(HostConfig::default());
    let err = host
        .spawn(acp_host::AgentSpec::new("/nonexistent/agent-binary"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "spawn_failed");
    assert!(err.to_string().contains("/nonexistent/agent-binary"));
    let err = host.spawn(acp_host::AgentSpec::new("")).await.unwrap_err();
    assert_eq!(err.kind(), "invalid_argument");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_reading_agent_still_completes() {
    let (_, result, _, _) = run_turn("slow-read", HostConfig::default()).await;
    assert_eq!(result.unwrap().stop_reason, "end_turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_consumer_applies_backpressure_and_loses_nothing() {
    let config = HostConfig {
        event_capacity: 64,
        ..HostConfig::default()
    };
    let host = Host::new(config);
    let events = host.events().unwrap();
    let agent = host
        .spawn(mock(None).args(["--flood", "50000"]))
        .await
        .unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("flood").await });
    // Do not pull for a while: the turn cannot finish, the queue holds at most its capacity.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        !turn.is_finished(),
        "the turn finished although nobody pulled 50k events"
    );
    let mut updates = 0u64;
    let mut last_seq = 0;
    loop {
        let ev = tokio::time::timeout(T, events.next())
            .await
            .unwrap()
            .unwrap();
        assert!(ev.seq > last_seq);
        last_seq = ev.seq;
        if ev.kind == EventKind::SessionUpdate {
            updates += 1;
        }
        if ev.kind == EventKind::TurnEnded {
            break;
        }
    }
    assert_eq!(updates, 50_000, "every update delivered");
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, "end_turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_request_timeout_is_typed_and_cancels_on_the_wire() {
    // An in-memory peer that answers initialize and nothing else.
    let (client_side, agent_side) = tokio::io::duplex(64 * 1024);
    let (agent_read, mut agent_write) = tokio::io::split(agent_side);
    tokio::spawn(async move {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let mut lines = BufReader::new(agent_read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: serde_json::Value = serde_json::from_str(&line).unwrap();
            if msg["method"] == "initialize" {
                let resp = json!({"jsonrpc":"2.0","id":msg["id"],"result":{"protocolVersion":1}});
                agent_write
                    .write_all(format!("{resp}\n").as_bytes())
                    .await
                    .unwrap();
            } else if msg["method"] == "$/cancel_request" {
                let note =
                    json!({"jsonrpc":"2.0","method":"_test/saw_cancel","params":msg["params"]});
                agent_write
                    .write_all(format!("{note}\n").as_bytes())
                    .await
                    .unwrap();
            }
        }
    });
    let (r, w) = tokio::io::split(client_side);
    let host = Host::new(HostConfig {
        request_timeout: Some(Duration::from_millis(200)),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.connect(r, w).await.unwrap();
    let err = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "timeout", "{err}");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::ExtNotification).await;
    assert_eq!(evs.last().unwrap().data_value()["params"]["requestId"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_timeout_fails_the_turn_and_cancels_it() {
    let config = HostConfig {
        prompt_timeout: Some(Duration::from_millis(300)),
        wire_events: true,
        ..HostConfig::default()
    };
    let host = Host::new(config);
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("hang"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let err = tokio::time::timeout(T, session.prompt_text("go"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), "timeout");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(evs.last().unwrap().data_value()["error"]["kind"], "timeout");
    let more = drain(&mut events, Duration::from_millis(200)).await;
    let sent: Vec<String> = more
        .iter()
        .filter(|e| e.kind == EventKind::Wire && e.data_value()["direction"] == "out")
        .filter_map(|e| {
            e.data_value()["message"]["method"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(sent.contains(&"session/cancel".to_owned()), "{sent:?}");
    // The session is usable again (no turn in flight locally).
    assert!(session.state().active_turn.is_none());
}

/// What an agent wrote before it exited reaches the stream even when the consumer pulls slowly:
/// while events wait for room the agent's stdout is not read, and the half-second grace after
/// the exit used to end the connection there, dropping the lines still unread (found by the C
/// test's crash under valgrind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_written_before_an_exit_survive_a_slow_consumer() {
    let host = Host::new(HostConfig {
        event_capacity: 1,
        event_stall_timeout: None,
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        let mut turn = false;
        loop {
            // Once the turn started: slower than the exit grace, several times over.
            if turn {
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
            match tokio::time::timeout(T, events.next()).await {
                Ok(Some(ev)) => {
                    let last = ev.kind == EventKind::AgentExited;
                    turn |= ev.kind == EventKind::TurnStarted;
                    got.push(ev);
                    if last {
                        return got;
                    }
                }
                _ => return got,
            }
        }
    });
    let agent = host.spawn(mock(Some("crash-mid-turn"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let err = tokio::time::timeout(T, session.prompt_text("go"))
        .await
        .expect("no hang")
        .unwrap_err();
    assert_eq!(err.kind(), "agent_exited");
    let evs = reader.await.unwrap();
    let k = kinds(&evs);
    assert_eq!(
        k.iter()
            .filter(|x| *x == "session_update:agent_message_chunk")
            .count(),
        2,
        "{k:?}"
    );
    assert_eq!(k.last().map(String::as_str), Some("agent_exited"), "{k:?}");
    assert_eq!(evs.last().unwrap().data_value()["exitCode"], 3);
}
