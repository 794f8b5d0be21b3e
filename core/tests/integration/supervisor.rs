//! The supervisor (`AgentSpec::restart`): a dead agent is restarted, its sessions reopened
//! (resume, else load, else lost) and the embedder's handles keep working; a crash loop gives up
//! with `agent_failed`; shutdown, dropped handles and a dropped host stop it. The agent is the
//! mock behind a small shell wrapper that counts its starts and reads per-start instructions
//! (`start.N`, else `start.rest`) from the test's directory; `ACP_MOCK_STATE_DIR` makes the mock
//! keep its sessions across processes, as real agents do.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use acp_host::{
    AgentSpec, Error, Event, EventKind, EventStream, Host, HostConfig, RestartPolicy,
    SessionOptions,
};
use common::{alive, collect_until, kinds, mock_agent, tmp_cwd, wait_gone};
use serde_json::{Value, json};

const WRAPPER: &str = r#"d=$0; m=$1; n=$(( $(cat "$d/starts" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/starts"; ARGS=""
if [ -f "$d/start.$n" ]; then . "$d/start.$n"; elif [ -f "$d/start.rest" ]; then . "$d/start.rest"; fi
exec "$m" $ARGS"#;

const LONG: Duration = Duration::from_secs(20);

fn fast(max_restarts: u32) -> RestartPolicy {
    RestartPolicy {
        max_restarts,
        backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        reset_after: Duration::from_secs(60),
    }
}

/// The supervised wrapper around the mock; `starts` maps a start number (or `rest`) to the shell
/// lines run before the mock (set `ARGS`, export a variable, or `exit N`).
fn agent(dir: &Path, starts: &[(&str, &str)], policy: RestartPolicy) -> AgentSpec {
    for (n, body) in starts {
        std::fs::write(dir.join(format!("start.{n}")), body).unwrap();
    }
    AgentSpec::new("/bin/sh")
        .args([
            "-c".to_owned(),
            WRAPPER.to_owned(),
            dir.display().to_string(),
            mock_agent().display().to_string(),
        ])
        .env("ACP_MOCK_STATE_DIR", dir.display().to_string())
        .env_remove("ACP_MOCK_EXIT_ON")
        .env_remove("ACP_MOCK_CREDENTIALS")
        .restart(policy)
}

fn starts(dir: &Path) -> u32 {
    std::fs::read_to_string(dir.join("starts"))
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(0)
}

/// A scenario file in `dir` whose `initialize` advertises `caps` (for the start that uses it).
fn scenario_with_caps(dir: &Path, name: &str, caps: Value) -> String {
    let path = dir.join(format!("{name}.json"));
    let doc = json!({ "description": "core/tests/integration/supervisor.rs", "initialize": { "agentCapabilities": caps } });
    std::fs::write(&path, doc.to_string()).unwrap();
    format!("ARGS=\"--scenario {}\"", path.display())
}

fn host() -> (Host, EventStream) {
    let host = Host::new(HostConfig::default());
    let events = host.events().unwrap();
    (host, events)
}

fn is(kind: EventKind) -> impl Fn(&Event) -> bool {
    move |e| e.kind == kind
}

/// Kinds without the agents' stderr lines (their timing is the OS's).
fn trace(events: &[Event]) -> Vec<String> {
    kinds(events)
        .into_iter()
        .filter(|k| k != "agent_stderr")
        .collect()
}

fn data(events: &[Event], kind: EventKind) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.kind == kind)
        .map(Event::data_value)
        .collect()
}

#[tokio::test]
async fn a_crash_mid_turn_fails_the_prompt_then_the_same_handles_work_on_the_restarted_agent() {
    let dir = tempfile::tempdir().unwrap();
    let spec = agent(
        dir.path(),
        &[("1", "ARGS=\"--scenario crash-mid-turn\"")],
        fast(3),
    );
    let (host, mut events) = host();
    let agent = host.spawn(spec).await.unwrap();
    let first_pid = agent.pid().unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();

    // In flight: fails at once with the typed exit error.
    let err = session.prompt_text("go").await.unwrap_err();
    let Error::AgentExited(exit) = &err else {
        panic!("expected agent_exited, got {err:?}");
    };
    assert_eq!(exit.code, Some(3));
    assert!(exit.stderr_tail.contains("fatal: mock crash"), "{exit:?}");

    let got = collect_until(&mut events, LONG, is(EventKind::AgentRestarted)).await;
    let trace = trace(&got);
    let tail: Vec<&str> = trace
        .iter()
        .map(String::as_str)
        .skip_while(|k| *k != "turn_ended")
        .collect();
    assert_eq!(
        tail,
        [
            "turn_ended",
            "session_closed",
            "agent_exited",
            "agent_restarting",
            "agent_ready",
            "session_opened",
            "agent_restarted"
        ],
        "{trace:?}"
    );
    common::assert_seq_strictly_increasing(&got);
    assert!(got.iter().all(|e| e.agent == agent.id()), "one agent id");
    let restarting = &data(&got, EventKind::AgentRestarting)[0];
    assert_eq!(restarting["attempt"], 1);
    assert_eq!(restarting["maxRestarts"], 3);
    assert_eq!(restarting["error"]["kind"], "agent_exited");
    assert_eq!(restarting["error"]["data"]["exitCode"], 3);
    let opened = got
        .iter()
        .rfind(|e| e.kind == EventKind::SessionOpened)
        .unwrap();
    assert_eq!(opened.session.as_deref(), Some(session.id()));
    assert_eq!(opened.data_value()["origin"], "resume");
    let restarted = &data(&got, EventKind::AgentRestarted)[0];
    assert_eq!(
        restarted["recovered"],
        json!([{ "sessionId": session.id(), "via": "resume" }])
    );
    assert_eq!(restarted["lost"], json!([]));

    // The embedder's handles reach the new process.
    let new_pid = agent.pid().unwrap();
    assert_ne!(new_pid, first_pid);
    assert_eq!(restarted["pid"], new_pid);
    assert!(agent.exit_info().is_none());
    let turn = session.prompt_text("again").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    assert!(!turn.text.is_empty());
    assert!(session.state().open);
    assert!(wait_gone(first_pid, Duration::from_secs(5)).await);
    assert_eq!(starts(dir.path()), 2);

    let last = agent.shutdown().await;
    assert!(last.signal.is_none(), "{last:?}");
    assert!(wait_gone(new_pid, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn an_agent_killed_while_idle_comes_back_with_its_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut events) = host();
    let agent = host.spawn(agent(dir.path(), &[], fast(3))).await.unwrap();
    let a = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let b = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let closed = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    closed.close().await.unwrap();
    let pid = agent.pid().unwrap();
    nix_kill(pid);

    let got = collect_until(&mut events, LONG, is(EventKind::AgentRestarted)).await;
    let exited = &data(&got, EventKind::AgentExited)[0];
    assert_eq!(exited["signal"], "SIGKILL");
    // The crash's end is marked: a reader knows the agent and its sessions go on.
    assert_eq!(exited["restart"], true, "{exited}");
    let closes = data(&got, EventKind::SessionClosed);
    assert!(
        closes
            .iter()
            .any(|c| c["reason"] == "agent_exited" && c["restart"] == true),
        "{closes:?}"
    );
    let restarted = &data(&got, EventKind::AgentRestarted)[0];
    // Only the sessions still open are reopened, in id order.
    let mut want = vec![a.id().to_owned(), b.id().to_owned()];
    want.sort();
    let got_ids: Vec<&str> = restarted["recovered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(got_ids, want);
    for s in [&a, &b] {
        assert_eq!(s.prompt_text("hi").await.unwrap().stop_reason, "end_turn");
    }
    agent.shutdown().await;
}

#[tokio::test]
async fn a_restarted_agent_without_resume_gets_its_sessions_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let load_only = scenario_with_caps(
        dir.path(),
        "load-only",
        json!({ "loadSession": true, "sessionCapabilities": {} }),
    );
    let spec = agent(dir.path(), &[("rest", &load_only)], fast(3));
    let (host, mut events) = host();
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    nix_kill(agent.pid().unwrap());
    let got = collect_until(&mut events, LONG, is(EventKind::AgentRestarted)).await;
    assert_eq!(
        data(&got, EventKind::AgentRestarted)[0]["recovered"],
        json!([{ "sessionId": session.id(), "via": "load" }])
    );
    let opened = got
        .iter()
        .rfind(|e| e.kind == EventKind::SessionOpened)
        .unwrap();
    assert_eq!(opened.data_value()["origin"], "load");
    assert_eq!(
        session.prompt_text("hi").await.unwrap().stop_reason,
        "end_turn"
    );
    agent.shutdown().await;
}

#[tokio::test]
async fn a_session_that_cannot_be_reopened_is_reported_lost() {
    let dir = tempfile::tempdir().unwrap();
    let neither = scenario_with_caps(
        dir.path(),
        "neither",
        json!({ "loadSession": false, "sessionCapabilities": {} }),
    );
    let spec = agent(dir.path(), &[("rest", &neither)], fast(3));
    let (host, mut events) = host();
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    nix_kill(agent.pid().unwrap());
    let got = collect_until(&mut events, LONG, is(EventKind::AgentRestarted)).await;
    let lost = got
        .iter()
        .find(|e| e.kind == EventKind::SessionLost)
        .expect("session_lost");
    assert_eq!(lost.session.as_deref(), Some(session.id()));
    assert_eq!(lost.data_value()["error"]["kind"], "unsupported");
    let restarted = &data(&got, EventKind::AgentRestarted)[0];
    assert_eq!(restarted["recovered"], json!([]));
    assert_eq!(restarted["lost"], json!([session.id()]));
    // The agent itself works again: a new session can be opened and prompted.
    let fresh = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert_eq!(
        fresh.prompt_text("hi").await.unwrap().stop_reason,
        "end_turn"
    );
    // The lost one is not open on the new process.
    assert!(!session.state().open);
    assert!(session.prompt_text("hi").await.is_err());
    agent.shutdown().await;
}

#[tokio::test]
async fn a_crash_during_recovery_is_the_next_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let spec = agent(
        dir.path(),
        &[("2", "export ACP_MOCK_EXIT_ON=session/resume")],
        fast(3),
    );
    let (host, mut events) = host();
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    nix_kill(agent.pid().unwrap());
    let got = collect_until(&mut events, LONG, is(EventKind::AgentRestarted)).await;
    let restarting = data(&got, EventKind::AgentRestarting);
    assert_eq!(restarting.len(), 2, "{:?}", trace(&got));
    assert_eq!(restarting[1]["attempt"], 2);
    assert_eq!(restarting[1]["error"]["kind"], "agent_exited");
    assert_eq!(restarting[1]["error"]["data"]["exitCode"], 9);
    let restarted = &data(&got, EventKind::AgentRestarted)[0];
    assert_eq!(restarted["attempt"], 2);
    assert_eq!(
        restarted["recovered"],
        json!([{ "sessionId": session.id(), "via": "resume" }])
    );
    assert_eq!(starts(dir.path()), 3);
    assert_eq!(
        session.prompt_text("hi").await.unwrap().stop_reason,
        "end_turn"
    );
    agent.shutdown().await;
}

#[tokio::test]
async fn an_agent_that_cannot_restart_gives_up_after_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let spec = agent(
        dir.path(),
        &[("1", ""), ("rest", "echo 'cannot start' >&2; exit 7")],
        fast(2),
    );
    let (host, mut events) = host();
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    nix_kill(agent.pid().unwrap());
    let got = collect_until(&mut events, LONG, is(EventKind::AgentFailed)).await;
    let restarting = data(&got, EventKind::AgentRestarting);
    assert_eq!(
        restarting
            .iter()
            .map(|d| d["attempt"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2]
    );
    // The second attempt says why the first one failed.
    assert!(
        restarting[1]["error"].to_string().contains("exit")
            || restarting[1]["error"]["kind"] == "agent_exited",
        "{}",
        restarting[1]
    );
    let failed = &data(&got, EventKind::AgentFailed)[0];
    assert_eq!(failed["attempts"], 2);
    assert!(failed["error"]["kind"].is_string());
    assert!(agent.restarts_exhausted());
    assert!(agent.is_gone());
    assert_eq!(starts(dir.path()), 3);
    // Terminal: nothing more from this agent, and its calls fail with the typed exit error.
    let after = common::drain(&mut events, Duration::from_millis(300)).await;
    assert!(
        after.iter().all(|e| e.agent != agent.id()),
        "{:?}",
        trace(&after)
    );
    assert!(matches!(
        session.prompt_text("hi").await,
        Err(Error::AgentExited(_))
    ));
    assert!(matches!(
        agent.new_session(SessionOptions::new(tmp_cwd())).await,
        Err(Error::AgentExited(_))
    ));
}

#[tokio::test]
async fn max_restarts_zero_reports_failed_without_restarting() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut events) = host();
    let agent = host.spawn(agent(dir.path(), &[], fast(0))).await.unwrap();
    nix_kill(agent.pid().unwrap());
    let got = collect_until(&mut events, LONG, is(EventKind::AgentFailed)).await;
    assert!(data(&got, EventKind::AgentRestarting).is_empty());
    assert_eq!(data(&got, EventKind::AgentFailed)[0]["attempts"], 0);
    // `agent_failed` follows, so the exit is not the agent's last event.
    assert_eq!(data(&got, EventKind::AgentExited)[0]["restart"], true);
    assert_eq!(starts(dir.path()), 1);
}

#[tokio::test]
async fn a_healthy_run_resets_the_attempt_count() {
    let dir = tempfile::tempdir().unwrap();
    let policy = RestartPolicy {
        reset_after: Duration::from_millis(300),
        ..fast(1)
    };
    let (host, mut events) = host();
    let agent = host.spawn(agent(dir.path(), &[], policy)).await.unwrap();
    for round in 1..=3 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        nix_kill(agent.pid().unwrap());
        let got = collect_until(&mut events, LONG, |e| {
            matches!(e.kind, EventKind::AgentRestarted | EventKind::AgentFailed)
        })
        .await;
        assert!(
            data(&got, EventKind::AgentFailed).is_empty(),
            "round {round}"
        );
        assert_eq!(data(&got, EventKind::AgentRestarted)[0]["attempt"], 1);
    }
    // Without the healthy pause, the last restart's one allowed attempt is still used up.
    nix_kill(agent.pid().unwrap());
    let got = collect_until(&mut events, LONG, is(EventKind::AgentFailed)).await;
    assert!(data(&got, EventKind::AgentRestarting).is_empty());
    assert_eq!(data(&got, EventKind::AgentFailed)[0]["attempts"], 1);
}

#[tokio::test]
async fn shutdown_is_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut events) = host();
    let agent = host.spawn(agent(dir.path(), &[], fast(3))).await.unwrap();
    let pid = agent.pid().unwrap();
    agent.shutdown().await;
    assert!(wait_gone(pid, Duration::from_secs(5)).await);
    let got = common::drain(&mut events, Duration::from_millis(500)).await;
    assert!(
        !trace(&got).iter().any(|k| k.starts_with("agent_restart")),
        "{:?}",
        trace(&got)
    );
    assert_eq!(starts(dir.path()), 1);
    // The shutdown's exit is the agent's last event, marked as such (no `restart`).
    let exits = data(&got, EventKind::AgentExited);
    assert_eq!(exits.len(), 1, "{exits:?}");
    assert_eq!(exits[0]["reason"], "shutdown");
    assert!(exits[0].get("restart").is_none(), "{exits:?}");
}

#[tokio::test]
async fn shutdown_during_the_backoff_stops_the_restart_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let policy = RestartPolicy {
        backoff: Duration::from_secs(30),
        max_backoff: Duration::from_secs(30),
        ..fast(3)
    };
    let (host, mut events) = host();
    let agent = host.spawn(agent(dir.path(), &[], policy)).await.unwrap();
    nix_kill(agent.pid().unwrap());
    collect_until(&mut events, LONG, is(EventKind::AgentRestarting)).await;
    // Dead but coming back: not gone (faces keep it in their list of agents to shut down).
    assert!(agent.exit_info().is_some());
    assert!(!agent.is_gone());
    let t = Instant::now();
    agent.shutdown().await;
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(agent.is_gone());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(starts(dir.path()), 1);
    // The crash's exit said a restart follows; none does: a final `agent_exited` marks the end.
    let got = common::drain(&mut events, Duration::from_millis(500)).await;
    assert_eq!(trace(&got), ["agent_exited"], "{:?}", trace(&got));
    let last = &data(&got, EventKind::AgentExited)[0];
    assert_eq!(last["reason"], "shutdown");
    assert!(last.get("restart").is_none(), "{last}");
    assert_eq!(
        last["signal"], "SIGKILL",
        "the dead process's status: {last}"
    );
}

#[tokio::test]
async fn a_shutdown_racing_a_crash_still_marks_the_end() {
    // Whatever the order of the crash and the shutdown, exactly one `agent_exited` without
    // `restart` ends the agent's events, and nothing follows it.
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let (host, mut events) = host();
        let agent = host.spawn(agent(dir.path(), &[], fast(3))).await.unwrap();
        nix_kill(agent.pid().unwrap());
        if round % 2 == 1 {
            tokio::time::sleep(Duration::from_millis(round * 5)).await;
        }
        agent.shutdown().await;
        let got = common::drain(&mut events, Duration::from_millis(800)).await;
        let exits = data(&got, EventKind::AgentExited);
        let finals: Vec<_> = exits
            .iter()
            .filter(|e| e.get("restart").is_none())
            .collect();
        assert_eq!(finals.len(), 1, "round {round}: {:?}", trace(&got));
        let last = got.iter().rev().find(|e| e.agent == agent.id()).unwrap();
        assert_eq!(
            last.kind,
            EventKind::AgentExited,
            "round {round}: {:?}",
            trace(&got)
        );
        assert!(last.data_value().get("restart").is_none(), "round {round}");
    }
}

#[tokio::test]
async fn shutdown_while_the_new_process_starts_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    // The second process never answers `initialize` (it records its pid first).
    let spec = agent(
        dir.path(),
        &[("2", "echo $$ > \"$d/pid.2\"; exec sleep 600")],
        fast(3),
    );
    let (host, mut events) = host();
    let agent = host.spawn(spec).await.unwrap();
    nix_kill(agent.pid().unwrap());
    collect_until(&mut events, LONG, is(EventKind::AgentRestarting)).await;
    let pid_file = dir.path().join("pid.2");
    let deadline = Instant::now() + LONG;
    while !pid_file.exists() {
        assert!(Instant::now() < deadline, "second start never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    agent.shutdown().await;
    assert!(wait_gone(pid, Duration::from_secs(10)).await, "pid {pid}");
}

#[tokio::test]
async fn dropping_every_handle_ends_a_supervised_agent_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut events) = host();
    let agent = host.spawn(agent(dir.path(), &[], fast(3))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let pid = agent.pid().unwrap();
    drop(session);
    drop(agent);
    assert!(wait_gone(pid, Duration::from_secs(10)).await);
    let got = common::drain(&mut events, Duration::from_millis(500)).await;
    assert!(
        !trace(&got).iter().any(|k| k.starts_with("agent_restart")),
        "{:?}",
        trace(&got)
    );
    let last = got
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::AgentExited)
        .unwrap();
    assert!(
        last.data_value().get("restart").is_none(),
        "{:?}",
        trace(&got)
    );
    assert_eq!(starts(dir.path()), 1);
    drop(host);
}

#[tokio::test]
async fn a_dropped_host_takes_its_supervised_agents_down_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _events) = host();
    let agent = host.spawn(agent(dir.path(), &[], fast(3))).await.unwrap();
    let pid = agent.pid().unwrap();
    drop(host);
    assert!(wait_gone(pid, Duration::from_secs(10)).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(starts(dir.path()), 1);
    assert!(agent.exit_info().is_some());
    assert!(!alive(pid));
}

#[test]
fn restart_policy_from_json_and_backoff() {
    let p = RestartPolicy::from_json(
        &json!({ "maxRestarts": 5, "backoffMs": 100, "maxBackoffMs": 350 }),
    )
    .unwrap();
    assert_eq!(p.max_restarts, 5);
    assert_eq!(
        (1..=4).map(|a| p.delay(a).as_millis()).collect::<Vec<_>>(),
        [100, 200, 350, 350]
    );
    assert_eq!(p.delay(u32::MAX), Duration::from_millis(350));
    assert_eq!(p.reset_after, RestartPolicy::default().reset_after);
    for bad in [
        json!({ "maxRestart": 1 }),
        json!({ "maxRestarts": -1 }),
        json!({ "backoffMs": "1s" }),
        json!([1]),
        json!({ "maxRestarts": 1u64 << 40 }),
    ] {
        let err = RestartPolicy::from_json(&bad).unwrap_err();
        assert_eq!(err.kind(), "invalid_config", "{bad}");
    }
}

fn nix_kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}
