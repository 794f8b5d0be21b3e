//! The pool: process-per-session and shared modes, warm spares, the cap, idle eviction, the
//! per-session prompt queue and cancel, release and shutdown leaving no process behind. The agent
//! is the mock behind a wrapper that counts its starts (so "no cold start happened" is checked,
//! not timed).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use acp_host::{
    AgentSpec, Error, EventKind, Host, HostConfig, Pool, PoolConfig, PoolMode, SessionOptions,
};
use common::{alive, collect_until, mock_agent, tmp_cwd, wait_gone};
use serde_json::json;

const COUNTING: &str = r#"d=$0; m=$1; shift; n=$(( $(cat "$d/starts" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/starts"; exec "$m" "$@""#;

/// The mock, counting its starts in `dir/starts`; extra mock arguments after.
fn spec(dir: &Path, args: &[&str]) -> AgentSpec {
    AgentSpec::new("/bin/sh")
        .args([
            "-c".to_owned(),
            COUNTING.to_owned(),
            dir.display().to_string(),
            mock_agent().display().to_string(),
        ])
        .args(args.iter().map(|a| a.to_string()))
        .env(TAG, dir.display().to_string())
        .env_remove("ACP_MOCK_STATE_DIR")
        .env_remove("ACP_MOCK_EXIT_ON")
}

/// Set in every agent's environment: the process table is searched for it (an `exec`ed agent's
/// command line no longer names the test's directory).
const TAG: &str = "ACPH_POOL_TEST_DIR";

/// Live processes whose environment carries `TAG=dir`.
fn tagged(dir: &Path) -> Vec<u32> {
    let want = format!("{TAG}={}", dir.display()).into_bytes();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ"))
            && env.split(|b| *b == 0).any(|kv| kv == want.as_slice())
            && alive(pid)
        {
            found.push(pid);
        }
    }
    found
}

fn starts(dir: &Path) -> u32 {
    std::fs::read_to_string(dir.join("starts"))
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(0)
}

fn config(dir: &Path, mode: PoolMode, spares: usize, max: usize) -> PoolConfig {
    PoolConfig {
        mode,
        warm_spares: spares,
        max_agents: max,
        idle_timeout: None,
        ..PoolConfig::new(spec(dir, &[]))
    }
}

fn opts() -> SessionOptions {
    SessionOptions::new(tmp_cwd())
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn process_per_session_gives_each_session_its_own_process_and_ends_it_on_release() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(&host, config(dir.path(), PoolMode::ProcessPerSession, 1, 4)).unwrap();
    pool.ready().await.unwrap();
    assert_eq!(pool.stats().spares, 1);
    assert_eq!(starts(dir.path()), 1);

    // The first session takes the warm spare: no cold start for it.
    let a = pool.open_session(opts()).await.unwrap();
    let spare_pid = a.agent().pid().unwrap();
    let b = pool.open_session(opts()).await.unwrap();
    let c = pool.open_session(opts()).await.unwrap();
    let pids = [
        spare_pid,
        b.agent().pid().unwrap(),
        c.agent().pid().unwrap(),
    ];
    assert!(
        pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2],
        "{pids:?}"
    );
    for s in [&a, &b, &c] {
        assert_eq!(s.prompt_text("hi").await.unwrap().stop_reason, "end_turn");
    }
    assert_eq!(pool.stats().sessions, 3);

    a.release().await.unwrap();
    assert!(wait_gone(pids[0], Duration::from_secs(10)).await);
    assert!(alive(pids[1]) && alive(pids[2]));
    assert!(matches!(a.prompt_text("late").await, Err(Error::Closed(_))));
    // Dropping the last clone releases too.
    drop(b);
    assert!(wait_gone(pids[1], Duration::from_secs(10)).await);
    // The spare is refilled.
    pool.ready().await.unwrap();
    eventually("a refilled spare", || pool.stats().spares == 1).await;

    let spare = pool.stats();
    pool.shutdown().await;
    assert!(wait_gone(pids[2], Duration::from_secs(10)).await);
    assert_eq!(spare.spares, 1);
    assert_eq!(pool.stats(), acp_host::PoolStats::default());
    assert!(matches!(
        pool.open_session(opts()).await,
        Err(Error::Closed(_))
    ));
}

#[tokio::test]
async fn shared_mode_packs_sessions_least_loaded_first() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(
        &host,
        config(dir.path(), PoolMode::Shared { max_sessions: 2 }, 0, 4),
    )
    .unwrap();
    let s1 = pool.open_session(opts()).await.unwrap();
    let s2 = pool.open_session(opts()).await.unwrap();
    let s3 = pool.open_session(opts()).await.unwrap();
    assert_eq!(s1.agent().id(), s2.agent().id());
    assert_ne!(s1.agent().id(), s3.agent().id());
    assert_eq!(starts(dir.path()), 2);
    // Room again on the first process: the next session goes there (least loaded is the
    // second, with one session; both have room: the one with fewer sessions wins).
    s1.release().await.unwrap();
    let s4 = pool.open_session(opts()).await.unwrap();
    assert_eq!(starts(dir.path()), 2);
    assert_eq!(pool.stats().agents, 2);
    assert_eq!(pool.stats().sessions, 3);
    // Sessions on one process run side by side.
    let (r2, r4) = tokio::join!(s2.prompt_text("a"), s4.prompt_text("b"));
    assert_eq!(r2.unwrap().stop_reason, "end_turn");
    assert_eq!(r4.unwrap().stop_reason, "end_turn");
    pool.shutdown().await;
}

#[tokio::test]
async fn the_cap_refuses_a_session_with_busy_until_one_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(&host, config(dir.path(), PoolMode::ProcessPerSession, 0, 2)).unwrap();
    let a = pool.open_session(opts()).await.unwrap();
    let _b = pool.open_session(opts()).await.unwrap();
    let err = pool.open_session(opts()).await.unwrap_err();
    assert_eq!(err.kind(), "busy", "{err}");
    assert_eq!(starts(dir.path()), 2);
    let pid = a.agent().pid().unwrap();
    a.release().await.unwrap();
    assert!(wait_gone(pid, Duration::from_secs(10)).await);
    let c = pool.open_session(opts()).await.unwrap();
    assert_eq!(c.prompt_text("hi").await.unwrap().stop_reason, "end_turn");
    pool.shutdown().await;
}

/// At the cap, a session waits for a warm spare that is being started (the refill of the spare
/// the previous session took) instead of failing `busy`; `ready` waits for that spare too.
#[tokio::test]
async fn at_the_cap_a_session_waits_for_a_spare_being_started() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(&host, config(dir.path(), PoolMode::ProcessPerSession, 1, 2)).unwrap();
    pool.ready().await.unwrap();
    let a = pool.open_session(opts()).await.unwrap();
    // The refill is starting now (the cap counts it): the next session gets it.
    let b = pool.open_session(opts()).await.unwrap();
    assert_ne!(a.agent().id(), b.agent().id());
    assert_eq!(starts(dir.path()), 2);
    assert_eq!(pool.open_session(opts()).await.unwrap_err().kind(), "busy");
    a.release().await.unwrap();
    // The refill after the release: `ready` resolves once it is up, not while it starts.
    pool.ready().await.unwrap();
    let st = pool.stats();
    assert_eq!((st.spares, st.starting), (1, 0), "{st:?}");
    pool.shutdown().await;
}

#[tokio::test]
async fn an_idle_shared_process_is_evicted_with_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    // The agent leaves a child in its process group (as an MCP server would).
    let wrapper = format!(
        "sleep 600 & echo $! > {}/child.pid; exec \"$0\"",
        dir.path().display()
    );
    let spec = AgentSpec::new("/bin/sh").args([
        "-c".to_owned(),
        wrapper,
        mock_agent().display().to_string(),
    ]);
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(
        &host,
        PoolConfig {
            mode: PoolMode::Shared { max_sessions: 4 },
            warm_spares: 0,
            max_agents: 2,
            idle_timeout: Some(Duration::from_millis(200)),
            ..PoolConfig::new(spec)
        },
    )
    .unwrap();
    let s = pool.open_session(opts()).await.unwrap();
    let pid = s.agent().pid().unwrap();
    let child: u32 = std::fs::read_to_string(dir.path().join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Busy processes are never evicted.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(alive(pid));
    s.release().await.unwrap();
    assert!(wait_gone(pid, Duration::from_secs(10)).await);
    assert!(
        wait_gone(child, Duration::from_secs(10)).await,
        "the group's child"
    );
    eventually("no agents", || pool.stats().agents == 0).await;
}

#[tokio::test]
async fn a_second_prompt_queues_and_runs_after_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("slow.json");
    std::fs::write(
        &scenario,
        json!({ "description": "slow turn", "prompts": [[
            { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "one" } } },
            { "sleepMs": 300 }
        ]] })
        .to_string(),
    )
    .unwrap();
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let pool = Pool::new(
        &host,
        PoolConfig {
            warm_spares: 0,
            ..PoolConfig::new(spec(
                dir.path(),
                &["--scenario", &scenario.display().to_string()],
            ))
        },
    )
    .unwrap();
    let s = pool.open_session(opts()).await.unwrap();
    let first = s.prompt_text("first");
    let second = s.prompt_text("second");
    let (r1, r2) = tokio::join!(first, second);
    let (r1, r2) = (r1.unwrap(), r2.unwrap());
    assert_eq!(r1.stop_reason, "end_turn");
    assert_eq!(r2.stop_reason, "end_turn");
    assert!(r1.turn < r2.turn);
    // The queue made them sequential (the plain session refuses an overlapping prompt).
    let (plain1, plain2) = tokio::join!(s.session().prompt_text("direct"), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        s.session().prompt_text("overlap").await
    });
    assert_eq!(plain1.unwrap().stop_reason, "end_turn");
    assert_eq!(plain2.unwrap_err().kind(), "busy");
    let got = collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnEnded && e.turn == Some(r2.turn)
    })
    .await;
    let turns: Vec<(String, Option<u64>)> = got
        .iter()
        .filter(|e| matches!(e.kind, EventKind::TurnStarted | EventKind::TurnEnded))
        .map(|e| (e.kind.to_string(), e.turn))
        .collect();
    assert_eq!(
        turns,
        [
            ("turn_started".to_owned(), Some(r1.turn)),
            ("turn_ended".to_owned(), Some(r1.turn)),
            ("turn_started".to_owned(), Some(r2.turn)),
            ("turn_ended".to_owned(), Some(r2.turn)),
        ]
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn cancel_stops_the_running_turn_and_drops_the_queued_ones() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let pool = Pool::new(
        &host,
        PoolConfig {
            warm_spares: 0,
            ..PoolConfig::new(spec(dir.path(), &["--scenario", "wait-for-cancel"]))
        },
    )
    .unwrap();
    let s = pool.open_session(opts()).await.unwrap();
    let running = tokio::spawn({
        let s = s.clone();
        async move { s.prompt_text("long").await }
    });
    collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnStarted
    })
    .await;
    let queued: Vec<_> = (0..2)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move { s.prompt_text(&format!("queued {i}")).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.cancel().await.unwrap();
    assert_eq!(running.await.unwrap().unwrap().stop_reason, "cancelled");
    for q in queued {
        assert!(matches!(q.await.unwrap(), Err(Error::Cancelled)));
    }
    // Nothing of the queued prompts reached the agent.
    let rest = common::drain(&mut events, Duration::from_millis(300)).await;
    assert!(
        rest.iter().all(|e| e.kind != EventKind::TurnStarted),
        "{:?}",
        common::kinds(&rest)
    );
    // The session works on: a prompt after the cancel runs.
    let next = tokio::spawn({
        let s = s.clone();
        async move { s.prompt_text("after").await }
    });
    collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnStarted
    })
    .await;
    s.cancel().await.unwrap();
    assert_eq!(next.await.unwrap().unwrap().stop_reason, "cancelled");
    pool.shutdown().await;
}

/// The place in line is taken by the call, not by the first poll: faces hand the future to
/// another executor, so polling order must not decide the turn order or what a cancel drops.
#[tokio::test]
async fn the_queue_follows_call_order_and_cancel_drops_prompts_not_yet_polled() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let pool = Pool::new(&host, config(dir.path(), PoolMode::ProcessPerSession, 0, 1)).unwrap();
    let s = pool.open_session(opts()).await.unwrap();
    let first = s.prompt_text("first");
    let second = s.prompt_text("second");
    // Polled in the opposite order: the first call still runs first.
    let (r2, r1) = tokio::join!(second, first);
    assert!(r1.unwrap().turn < r2.unwrap().turn);

    // A prompt abandoned while queued leaves the line: the next one runs.
    let running = s.prompt_text("one");
    let abandoned = s.prompt_text("abandoned");
    let after = s.prompt_text("after");
    drop(abandoned);
    let (r1, r3) = tokio::join!(running, after);
    assert_eq!(r1.unwrap().stop_reason, "end_turn");
    assert_eq!(r3.unwrap().stop_reason, "end_turn");

    // Cancel drops a queued prompt that was never polled; one called after the cancel runs.
    let waiting = Pool::new(
        &host,
        PoolConfig {
            warm_spares: 0,
            ..PoolConfig::new(spec(dir.path(), &["--scenario", "wait-for-cancel"]))
        },
    )
    .unwrap();
    let w = waiting.open_session(opts()).await.unwrap();
    let _ = common::drain(&mut events, Duration::from_millis(100)).await;
    let running = tokio::spawn(w.prompt_text("long"));
    collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnStarted
    })
    .await;
    let queued = w.prompt_text("queued");
    let cancel = w.cancel();
    let later = tokio::spawn(w.prompt_text("later"));
    cancel.await.unwrap();
    assert!(matches!(queued.await, Err(Error::Cancelled)));
    assert_eq!(running.await.unwrap().unwrap().stop_reason, "cancelled");
    collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnStarted
    })
    .await;
    w.cancel().await.unwrap();
    assert_eq!(later.await.unwrap().unwrap().stop_reason, "cancelled");
    waiting.shutdown().await;

    // Release fails what waits with `closed`, and takes effect at the call: a prompt called
    // after it (its future not yet polled) fails too, whichever is polled first.
    let running = s.prompt_text("x");
    let queued = s.prompt_text("y");
    let release = s.release();
    let later = s.prompt_text("z");
    assert!(matches!(later.await, Err(Error::Closed(_))));
    release.await.unwrap();
    let _ = running.await;
    assert!(matches!(queued.await, Err(Error::Closed(_))));
    pool.shutdown().await;
}

/// A running prompt whose future is dropped (a cancelled coroutine, a timed-out wait) cancels its
/// turn; the queued prompt runs once that turn has settled instead of finding it in flight.
#[tokio::test]
async fn dropping_a_running_prompt_lets_the_next_run_after_the_turn_settled() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let pool = Pool::new(
        &host,
        PoolConfig {
            warm_spares: 0,
            ..PoolConfig::new(spec(dir.path(), &["--scenario", "wait-for-cancel"]))
        },
    )
    .unwrap();
    let s = pool.open_session(opts()).await.unwrap();
    let running = tokio::spawn(s.prompt_text("dropped"));
    let first = collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnStarted
    })
    .await;
    let first_turn = first.last().unwrap().turn;
    let next = tokio::spawn(s.prompt_text("next"));
    running.abort();
    // The dropped turn ends (cancelled by the agent), then the next one starts.
    let got = collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnStarted
    })
    .await;
    let ended = got
        .iter()
        .position(|e| e.kind == EventKind::TurnEnded && e.turn == first_turn);
    assert!(ended.is_some(), "{:?}", common::kinds(&got));
    s.cancel().await.unwrap();
    assert_eq!(next.await.unwrap().unwrap().stop_reason, "cancelled");
    pool.shutdown().await;
}

#[tokio::test]
async fn a_dead_pooled_process_is_not_handed_out_again() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(
        &host,
        config(dir.path(), PoolMode::Shared { max_sessions: 4 }, 0, 2),
    )
    .unwrap();
    let s = pool.open_session(opts()).await.unwrap();
    let pid = s.agent().pid().unwrap();
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    s.agent().exited().await;
    let t = pool.open_session(opts()).await.unwrap();
    assert_ne!(t.agent().pid(), Some(pid));
    assert_eq!(t.prompt_text("hi").await.unwrap().stop_reason, "end_turn");
    pool.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_spares_and_busy_processes() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(&host, config(dir.path(), PoolMode::ProcessPerSession, 2, 4)).unwrap();
    pool.ready().await.unwrap();
    let s = pool.open_session(opts()).await.unwrap();
    eventually("two spares", || pool.stats().spares == 2).await;
    assert_eq!(tagged(dir.path()).len(), 3);
    let busy = s.agent().pid().unwrap();
    let all: Vec<u32> = (1..=3).collect();
    assert_eq!(starts(dir.path()), all.len() as u32);
    pool.shutdown().await;
    assert!(wait_gone(busy, Duration::from_secs(10)).await);
    // Every process the pool started is gone, spares included (found by their environment).
    assert_eq!(tagged(dir.path()).len(), 0, "{:?}", tagged(dir.path()));
    assert!(matches!(
        s.prompt_text("x").await,
        Err(Error::AgentExited(_)) | Err(Error::Closed(_))
    ));
}

/// Live processes whose environment has `ACP_POOL_TEST_MARK=<mark>`.
fn marked_processes(mark: &str) -> Vec<u32> {
    let want = format!("ACP_POOL_TEST_MARK={mark}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
                .unwrap_or(false)
                && alive(*pid)
        })
        .collect()
}

/// `shutdown` returns only once every process is gone: also one just released (on its way
/// down) and the spare refill started by that release.
#[tokio::test]
async fn shutdown_right_after_a_release_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().display().to_string();
    let host = Host::new(HostConfig::default());
    let mut c = config(dir.path(), PoolMode::ProcessPerSession, 1, 3);
    c.spec = c.spec.env("ACP_POOL_TEST_MARK", mark.clone());
    let pool = Pool::new(&host, c).unwrap();
    pool.ready().await.unwrap();
    let a = pool.open_session(opts()).await.unwrap();
    pool.ready().await.unwrap();
    assert_eq!(marked_processes(&mark).len(), 2);
    a.release().await.unwrap();
    pool.shutdown().await;
    assert_eq!(marked_processes(&mark), Vec::<u32>::new());
}

/// An `open_session` dropped midway (a cancelled caller, a timed-out wait) gives its place back:
/// the cap is free again and `shutdown` does not wait for a start nobody finishes.
#[tokio::test]
async fn a_session_abandoned_while_it_opens_gives_its_place_back() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(&host, config(dir.path(), PoolMode::ProcessPerSession, 0, 1)).unwrap();
    for wait in [0, 1, 5, 20] {
        let _ = tokio::time::timeout(Duration::from_millis(wait), pool.open_session(opts())).await;
        eventually("the place given back", || {
            pool.stats() == acp_host::PoolStats::default()
        })
        .await;
    }
    let s = pool.open_session(opts()).await.unwrap();
    assert_eq!(s.prompt_text("hi").await.unwrap().stop_reason, "end_turn");
    tokio::time::timeout(Duration::from_secs(20), pool.shutdown())
        .await
        .expect("shutdown returns");
}

#[tokio::test]
async fn a_spec_that_cannot_start_fails_the_session_and_does_not_spin() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(
        &host,
        PoolConfig {
            warm_spares: 1,
            ..PoolConfig::new(AgentSpec::new(
                dir.path().join("missing").display().to_string(),
            ))
        },
    )
    .unwrap();
    let err = pool.open_session(opts()).await.unwrap_err();
    assert_eq!(err.kind(), "spawn_failed", "{err}");
    assert_eq!(pool.ready().await.unwrap_err().kind(), "spawn_failed");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stats = pool.stats();
    assert_eq!((stats.agents, stats.spares), (0, 0));
    pool.shutdown().await;
}

#[test]
fn pool_config_from_json() {
    let spec = AgentSpec::new("agent");
    let c = PoolConfig::from_json(
        spec.clone(),
        &json!({ "mode": "shared", "maxSessionsPerAgent": 3, "warmSpares": 2, "maxAgents": 5, "idleTimeoutMs": 1500 }),
    )
    .unwrap();
    assert_eq!(c.mode, PoolMode::Shared { max_sessions: 3 });
    assert_eq!((c.warm_spares, c.max_agents), (2, 5));
    assert_eq!(c.idle_timeout, Some(Duration::from_millis(1500)));
    let c = PoolConfig::from_json(spec.clone(), &json!({ "idleTimeoutMs": null })).unwrap();
    assert_eq!(c.mode, PoolMode::ProcessPerSession);
    assert_eq!(c.idle_timeout, None);
    for bad in [
        json!({ "mode": "per-session" }),
        json!({ "maxSessionsPerAgent": 2 }),
        json!({ "mode": "shared", "maxSessionsPerAgent": 0 }),
        json!({ "maxAgents": 0 }),
        json!({ "warmSpares": 3, "maxAgents": 2 }),
        json!({ "warmSpare": 1 }),
        json!({ "maxAgents": -1 }),
        json!("shared"),
    ] {
        let err = PoolConfig::from_json(spec.clone(), &bad).unwrap_err();
        assert_eq!(err.kind(), "invalid_config", "{bad}");
    }
}

fn slow_spec(dir: &Path, delay: &str) -> AgentSpec {
    AgentSpec::new("/bin/sh")
        .args([
            "-c".to_owned(),
            format!("sleep {delay}; exec \"$0\""),
            mock_agent().display().to_string(),
        ])
        .env(TAG, dir.display().to_string())
}

#[tokio::test]
async fn ready_waits_for_a_spare_that_is_starting_even_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    let pool = Pool::new(
        &host,
        PoolConfig {
            warm_spares: 1,
            max_agents: 1,
            ..PoolConfig::new(slow_spec(dir.path(), "0.3"))
        },
    )
    .unwrap();
    pool.ready().await.unwrap();
    assert_eq!(pool.stats().spares, 1);
    pool.shutdown().await;
    eventually("no tagged process", || tagged(dir.path()).is_empty()).await;
}

#[tokio::test]
async fn an_abandoned_open_session_gives_back_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::default());
    // Each start takes 500 ms: a caller that gives up after 100 ms abandons a cold start.
    let pool = Pool::new(
        &host,
        PoolConfig {
            mode: PoolMode::Shared { max_sessions: 1 },
            warm_spares: 0,
            max_agents: 1,
            idle_timeout: None,
            ..PoolConfig::new(slow_spec(dir.path(), "0.5"))
        },
    )
    .unwrap();
    let gave_up = tokio::time::timeout(Duration::from_millis(100), pool.open_session(opts())).await;
    assert!(gave_up.is_err());
    assert_eq!(pool.stats(), acp_host::PoolStats::default());
    // The cap is free again; a session dropped without `release` gives its place back too.
    let s = pool.open_session(opts()).await.unwrap();
    assert_eq!(pool.stats().sessions, 1);
    drop(s);
    assert_eq!(pool.stats().sessions, 0);
    let again = pool.open_session(opts()).await.unwrap();
    assert_eq!(
        again.prompt_text("hi").await.unwrap().stop_reason,
        "end_turn"
    );
    let t = std::time::Instant::now();
    pool.shutdown().await;
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    eventually("no tagged process", || tagged(dir.path()).is_empty()).await;
}

#[tokio::test]
async fn cancel_fails_queued_prompts_at_once_even_while_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig {
        cancel_grace: Duration::from_secs(5),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let pool = Pool::new(
        &host,
        PoolConfig {
            warm_spares: 0,
            ..PoolConfig::new(spec(dir.path(), &["--scenario", "ignore-cancel"]))
        },
    )
    .unwrap();
    let s = pool.open_session(opts()).await.unwrap();
    let running = tokio::spawn({
        let s = s.clone();
        async move { s.prompt_text("long").await }
    });
    collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnStarted
    })
    .await;
    let queued = tokio::spawn({
        let s = s.clone();
        async move { s.prompt_text("queued").await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.cancel().await.unwrap();
    // The queued prompt fails now, not once the agent (ignoring the cancel) ends its turn.
    let failed = tokio::time::timeout(Duration::from_millis(400), queued)
        .await
        .expect("the queued prompt failed at once")
        .unwrap();
    assert!(matches!(failed, Err(Error::Cancelled)));
    assert!(!running.is_finished());
    let _ = running.await.unwrap();
    pool.shutdown().await;
}
