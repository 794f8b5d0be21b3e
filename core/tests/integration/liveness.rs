//! Liveness: the connection actor never waits for the host's event queue. Commands, timers,
//! cancel and shutdown proceed while nobody pulls; a call that cannot complete fails fast with
//! `events_stalled`; one flooding agent does not starve another; no stderr after `agent_exited`.
//! Ordering and withdrawn requests are in `ordering.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use acp_host::{EventKind, Host, HostConfig};
use common::fake::*;
use serde_json::json;

/// Bound of every test: a regression fails instead of hanging.
const T: Duration = Duration::from_secs(20);

/// Set up an agent whose prompt turn floods a 64-event queue nobody pulls (the fake never
/// answers the prompt).
async fn flooded(
    stall: Option<Duration>,
) -> (
    Host,
    acp_host::EventStream,
    acp_host::Agent,
    acp_host::Session,
    Fake,
    tokio::task::JoinHandle<()>,
) {
    let host = Host::new(HostConfig {
        event_capacity: 64,
        event_stall_timeout: stall,
        request_timeout: Some(Duration::from_millis(300)),
        shutdown_grace: Duration::from_millis(200),
        ..HostConfig::default()
    });
    let events = host.events().unwrap(); // taken, never pulled
    let (agent, mut fake) = connect(&host).await;
    let session = open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
    let s2 = session.clone();
    tokio::spawn(async move { s2.prompt_text("go").await });
    fake.wait_method("session/prompt", T).await;
    let flood = fake.spawn_flood("s1", 20_000, None);
    // Let the flood fill the queue and the actor's backlog.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!flood.is_finished(), "the flood should be held back");
    (host, events, agent, session, fake, flood)
}

/// Cancel and shutdown reach the agent while the queue is full and nobody pulls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_shutdown_reach_the_agent_while_nobody_pulls() {
    tokio::time::timeout(T, async {
        let (_host, _events, agent, session, mut fake, flood) = flooded(None).await;
        let started = Instant::now();
        let s2 = session.clone();
        tokio::spawn(async move { s2.cancel().await });
        let cancel = fake
            .wait_method("session/cancel", Duration::from_secs(2))
            .await;
        assert_eq!(cancel["params"]["sessionId"], "s1");
        assert!(started.elapsed() < Duration::from_secs(2));
        // Shutdown closes the agent's stdin at once (first rung of the ladder).
        tokio::spawn(async move { agent.shutdown().await });
        let rest = fake.recv_for(Duration::from_secs(2)).await;
        assert!(fake.at_eof(), "stdin not closed by shutdown; got {rest:?}");
        flood.abort();
    })
    .await
    .expect("test timed out");
}

/// Commands and timers *return* while nobody pulls: cancel, a request timeout, shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_and_timers_return_while_nobody_pulls() {
    for stall in [None, Some(Duration::from_secs(3))] {
        tokio::time::timeout(T, async {
            let (_host, _events, agent, session, mut fake, flood) = flooded(stall).await;
            tokio::time::timeout(Duration::from_secs(2), session.cancel())
                .await
                .unwrap_or_else(|_| panic!("stall {stall:?}: cancel() did not return"))
                .unwrap();
            fake.wait_method("session/cancel", Duration::from_secs(2))
                .await;
            let started = Instant::now();
            let err = tokio::time::timeout(
                Duration::from_secs(2),
                agent.ext_request("_x/never", &json!({})),
            )
            .await
            .unwrap_or_else(|_| panic!("stall {stall:?}: the request timeout did not return"))
            .unwrap_err();
            assert_eq!(err.kind(), "timeout", "stall {stall:?}: {err:?}");
            assert!(started.elapsed() >= Duration::from_millis(250));
            tokio::time::timeout(Duration::from_secs(3), agent.shutdown())
                .await
                .unwrap_or_else(|_| panic!("stall {stall:?}: shutdown() did not return"));
            flood.abort();
        })
        .await
        .expect("test timed out");
    }
}

/// A call whose answer is stuck behind a full queue nobody pulls fails with `events_stalled`, and
/// the abandoned prompt is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_cannot_complete_because_nobody_pulls_fails_fast() {
    tokio::time::timeout(T, async {
        let host = Host::new(HostConfig {
            event_capacity: 64,
            event_stall_timeout: Some(Duration::from_millis(300)),
            shutdown_grace: Duration::from_millis(200),
            ..HostConfig::default()
        });
        let _events = host.events().unwrap();
        let (agent, mut fake) = connect(&host).await;
        let session = open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
        let s2 = session.clone();
        let started = Instant::now();
        let turn = tokio::spawn(async move { s2.prompt_text("go").await });
        let prompt = fake.wait_method("session/prompt", T).await;
        let flood = fake.spawn_flood("s1", 20_000, Some(prompt["id"].clone()));
        let res = tokio::time::timeout(Duration::from_secs(4), turn)
            .await
            .expect("the prompt must fail fast, not hang")
            .unwrap();
        let err = res.expect_err("the prompt cannot complete: its events are stuck");
        assert_eq!(err.kind(), "events_stalled", "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(4));
        let cancel = fake
            .wait_method("session/cancel", Duration::from_secs(2))
            .await;
        assert_eq!(cancel["params"]["sessionId"], "s1");
        flood.abort();
    })
    .await
    .expect("test timed out");
}

/// Under the default configuration a long turn fits; right after the prompt returned, the turn's
/// events can be pulled without waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_configuration_holds_a_long_turn() {
    tokio::time::timeout(T, async {
        let host = Host::new(HostConfig::default());
        let events = host.events().unwrap();
        let (agent, mut fake) = connect(&host).await;
        let session = open_session(&agent, &mut fake, "s1", &common::tmp_cwd()).await;
        // Pull what the setup produced, so that only the turn remains.
        while events.try_next().is_some() {}
        let s2 = session.clone();
        let turn = tokio::spawn(async move { s2.prompt_text("go").await });
        let prompt = fake.wait_method("session/prompt", T).await;
        let flood = fake.spawn_flood("s1", 20_000, Some(prompt["id"].clone()));
        let res = tokio::time::timeout(Duration::from_secs(15), turn)
            .await
            .expect("the prompt must complete without anybody pulling")
            .unwrap()
            .unwrap();
        assert_eq!(res.stop_reason, "end_turn");
        flood.await.unwrap();
        let mut got = Vec::new();
        while let Some(ev) = events.try_next() {
            got.push(ev);
        }
        common::assert_seq_strictly_increasing(&got);
        let updates: Vec<_> = got
            .iter()
            .filter(|e| e.kind == EventKind::SessionUpdate)
            .collect();
        assert_eq!(updates.len(), 20_000);
        for (i, u) in updates.iter().enumerate() {
            assert_eq!(chunk_text(u), i.to_string(), "updates in wire order");
        }
        let ended = got
            .iter()
            .position(|e| e.kind == EventKind::TurnEnded)
            .expect("turn_ended is pullable when the prompt returned");
        let last_update = got
            .iter()
            .rposition(|e| e.kind == EventKind::SessionUpdate)
            .unwrap();
        assert!(last_update < ended);
    })
    .await
    .expect("test timed out");
}

/// One agent flooding a small queue does not starve another agent's turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_flooding_agent_does_not_starve_another() {
    const FLOOD: usize = 200_000;
    tokio::time::timeout(T, async {
        let host = Host::new(HostConfig {
            event_capacity: 256,
            shutdown_grace: Duration::from_millis(200),
            ..HostConfig::default()
        });
        let events = host.events().unwrap();
        let (a, mut fake_a) = connect(&host).await;
        let (b, mut fake_b) = connect(&host).await;
        let sa = open_session(&a, &mut fake_a, "sa", &common::tmp_cwd()).await;
        let sb = open_session(&b, &mut fake_b, "sb", &common::tmp_cwd()).await;
        let sa2 = sa.clone();
        let _turn_a = tokio::spawn(async move { sa2.prompt_text("flood").await });
        fake_a.wait_method("session/prompt", T).await;
        let flood = fake_a.spawn_flood("sa", FLOOD, None);

        let mut a_updates = 0usize;
        let mut b_started = false;
        let mut pulled = 0usize;
        let b_ended_at = loop {
            let ev = tokio::time::timeout(Duration::from_secs(5), events.next())
                .await
                .expect("events keep coming")
                .expect("stream open");
            pulled += 1;
            if ev.agent == a.id() && ev.kind == EventKind::SessionUpdate {
                a_updates += 1;
            }
            if ev.agent == b.id() && ev.kind == EventKind::TurnEnded {
                break a_updates;
            }
            if !b_started && a_updates >= 1_000 {
                b_started = true;
                let sb2 = sb.clone();
                tokio::spawn(async move { sb2.prompt_text("hi").await });
                let mut fb = std::mem::replace(&mut fake_b, Fake::dead());
                tokio::spawn(async move {
                    let p = fb.wait_method("session/prompt", T).await;
                    for i in 0..3 {
                        fb.send(update("sb", &i.to_string())).await;
                    }
                    fb.respond(&p["id"], json!({"stopReason":"end_turn"})).await;
                    fb
                });
            }
            // Slow but continuous consumer.
            if pulled.is_multiple_of(100) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        assert!(
            b_ended_at < FLOOD / 2,
            "B's turn ended only after {b_ended_at} of A's {FLOOD} updates were pulled"
        );
        assert!(!flood.is_finished(), "A is still flooding");
        flood.abort();
        let _ = tokio::time::timeout(Duration::from_secs(3), host.shutdown()).await;
    })
    .await
    .expect("test timed out");
}

/// Spawn `sh -c script` (never answers `initialize`) and check the agent's events: no
/// `agent_stderr` after `agent_exited` (waiting `settle_ms` for stragglers); `last` is an event
/// before it or in the stderr tail.
#[cfg(unix)]
async fn stderr_round(round: usize, script: &str, last: Option<&str>, settle_ms: u64) {
    let host = Host::new(HostConfig::default());
    let events = host.events().unwrap();
    let err = host
        .spawn(acp_host::AgentSpec::new("sh").args(["-c", script]))
        .await
        .expect_err("no initialize answer");
    assert_eq!(err.kind(), "agent_exited", "{err:?}");
    let acp_host::Error::AgentExited(info) = &err else {
        unreachable!()
    };
    let mut got = Vec::new();
    let mut exited_at = None;
    // Until agent_exited, then a little longer for stragglers.
    loop {
        let settle = if exited_at.is_some() {
            settle_ms
        } else {
            5_000
        };
        match tokio::time::timeout(Duration::from_millis(settle), events.next()).await {
            Ok(Some(ev)) => {
                if ev.kind == EventKind::AgentExited {
                    exited_at = Some(got.len());
                }
                got.push(ev);
            }
            _ => break,
        }
    }
    let exited_at = exited_at.expect("agent_exited event");
    let late: Vec<_> = got[exited_at..]
        .iter()
        .filter(|e| e.kind == EventKind::AgentStderr)
        .map(|e| e.data_value()["line"].clone())
        .collect();
    assert!(
        late.is_empty(),
        "round {round}: agent_stderr after agent_exited: {} lines, first {:?}",
        late.len(),
        late.first()
    );
    if let Some(last) = last {
        let as_event = got[..exited_at]
            .iter()
            .any(|e| e.kind == EventKind::AgentStderr && e.data_value()["line"] == last);
        assert!(
            as_event || info.stderr_tail.contains(last),
            "round {round}: the last stderr line is lost"
        );
    }
}

/// stderr lines are emitted by the connection: none follows that agent's `agent_exited`, and the
/// last line is either an event before it or in the error's stderr tail.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_never_follows_agent_exited() {
    let script = "i=0; while [ $i -lt 3000 ]; do echo line $i >&2; i=$((i+1)); done; exit 3";
    tokio::time::timeout(Duration::from_secs(25), async {
        for round in 0..20 {
            stderr_round(round, script, Some("line 2999"), 100).await;
        }
    })
    .await
    .expect("test timed out");
}

/// A child that outlives the agent keeps writing to the shared stderr: still nothing after
/// `agent_exited`.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_of_a_surviving_child_never_follows_agent_exited() {
    let script = "echo early >&2; (sleep 0.3; echo late >&2) & exit 3";
    tokio::time::timeout(Duration::from_secs(20), async {
        for round in 0..3 {
            stderr_round(round, script, Some("early"), 600).await;
        }
    })
    .await
    .expect("test timed out");
}

#[cfg(not(unix))]
#[test]
#[allow(clippy::print_stderr)]
fn stderr_ordering_needs_sh() {
    eprintln!(
        "skipped: stderr_never_follows_agent_exited and \
         stderr_of_a_surviving_child_never_follows_agent_exited script their agent in `sh`"
    );
}
