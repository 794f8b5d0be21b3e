//! Unit tests of the event hub: fed by hand (`EventHub::feed`), no host.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::*;
use crate::events::raw_json;

static SEQ: AtomicU64 = AtomicU64::new(0);

fn ev(agent: u64, session: Option<&str>, kind: EventKind, turn: Option<u64>) -> Event {
    Event {
        seq: SEQ.fetch_add(1, Ordering::Relaxed) + 1,
        at: SystemTime::now(),
        agent,
        session: session.map(Arc::from),
        turn,
        kind,
        replay: false,
        data: raw_json(&serde_json::json!({"sessionUpdate": "agent_message_chunk"})),
    }
}

fn update(agent: u64, session: &str) -> Event {
    ev(agent, Some(session), EventKind::SessionUpdate, Some(1))
}

fn limits(max_events: usize, history_events: usize) -> HubLimits {
    HubLimits {
        max_events,
        max_bytes: 1 << 30,
        history_events,
        stall: Some(Duration::from_secs(5)),
    }
}

fn seqs(v: &[Arc<Event>]) -> Vec<u64> {
    v.iter().map(|e| e.seq).collect()
}

/// Feeding in a task: resolves when everything was taken by the hub.
fn feed_all(hub: &EventHub, events: Vec<Event>) -> tokio::task::JoinHandle<()> {
    let hub = hub.clone();
    tokio::spawn(async move {
        for e in events {
            hub.feed(e).await;
        }
    })
}

async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[tokio::test]
async fn every_reader_sees_the_one_order() {
    let hub = EventHub::new(limits(100, 100));
    let host = hub.take_host().expect("first take");
    assert!(hub.take_host().is_none(), "the host reader is taken once");
    let all = hub.subscribe(Scope::All);
    let agent2 = hub.subscribe(Scope::Agent(2));
    let sess = hub.session(1, "s");
    let events = vec![
        ev(1, Some("s"), EventKind::SessionOpened, None),
        ev(2, None, EventKind::AgentReady, None),
        update(1, "s"),
        ev(2, Some("t"), EventKind::SessionOpened, None),
        update(1, "s"),
    ];
    let want: Vec<u64> = events.iter().map(|e| e.seq).collect();
    feed_all(&hub, events).await.expect("fed");
    hub.end();
    let h = host.next_batch(100).await;
    assert_eq!(seqs(&h), want);
    assert_eq!(seqs(&all.next_batch(100).await), want);
    assert_eq!(seqs(&agent2.next_batch(100).await), vec![want[1], want[3]]);
    assert_eq!(
        seqs(&sess.next_batch(100).await),
        vec![want[0], want[2], want[4]]
    );
    for r in [&host, &all, &agent2, &sess] {
        assert!(
            r.next_batch(10).await.is_empty(),
            "ended after the host's end"
        );
        assert!(r.is_ended());
    }
}

#[tokio::test]
async fn late_session_reader_starts_at_the_session_beginning() {
    let hub = EventHub::new(limits(100, 100));
    let opened = ev(1, Some("s"), EventKind::SessionOpened, None);
    let first = opened.seq;
    feed_all(&hub, vec![opened, update(1, "s"), update(1, "s")])
        .await
        .expect("fed");
    let late = hub.session(1, "s");
    assert_eq!(late.missed(), 0);
    let got = late.next_batch(100).await;
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].seq, first);
    assert_eq!(got[0].kind, EventKind::SessionOpened);
    // Then live, without a gap or a duplicate.
    let next = update(1, "s");
    let next_seq = next.seq;
    feed_all(&hub, vec![next]).await.expect("fed");
    assert_eq!(seqs(&late.next_batch(100).await), vec![next_seq]);
}

#[tokio::test]
async fn overflowed_history_reports_what_it_left_out() {
    let hub = EventHub::new(limits(100, 4));
    let events: Vec<Event> = std::iter::once(ev(1, Some("s"), EventKind::SessionOpened, None))
        .chain((0..9).map(|_| update(1, "s")))
        .collect();
    let last4: Vec<u64> = events[6..].iter().map(|e| e.seq).collect();
    feed_all(&hub, events)
        .await
        .expect("nobody reads: never waits");
    let late = hub.session(1, "s");
    assert_eq!(late.missed(), 6);
    assert_eq!(seqs(&late.next_batch(100).await), last4);
}

#[tokio::test]
async fn slow_session_reader_holds_the_pump_and_loses_nothing() {
    let hub = EventHub::new(limits(100, 4));
    let reader = hub.session(1, "s");
    let events: Vec<Event> = (0..12).map(|_| update(1, "s")).collect();
    let want: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let feeding = feed_all(&hub, events);
    settle().await;
    assert!(
        !feeding.is_finished(),
        "a full history with an unread reader makes the pump wait"
    );
    let mut got = Vec::new();
    while got.len() < want.len() {
        got.extend(seqs(&reader.next_batch(3).await));
    }
    assert_eq!(got, want, "everything, in order");
    feeding.await.expect("fed");
    assert_eq!(reader.missed(), 0);
}

#[tokio::test]
async fn full_host_and_live_readers_make_the_pump_wait() {
    let hub = EventHub::new(limits(2, 100));
    let host = hub.take_host().expect("taken");
    let live = hub.subscribe(Scope::All);
    let events: Vec<Event> = (0..6)
        .map(|i| ev(i, None, EventKind::AgentReady, None))
        .collect();
    let want: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let feeding = feed_all(&hub, events);
    settle().await;
    assert!(!feeding.is_finished());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    while a.len() < 6 || b.len() < 6 {
        if a.len() < 6 {
            a.extend(seqs(&host.next_batch(1).await));
        }
        if b.len() < 6 {
            b.extend(seqs(&live.next_batch(1).await));
        }
    }
    assert_eq!(a, want);
    assert_eq!(b, want);
    feeding.await.expect("fed");
    assert_eq!(
        host.dropped(),
        0,
        "a taken reader is bounded by waiting, not by dropping"
    );
}

#[tokio::test]
async fn a_dropped_reader_frees_its_hold() {
    let hub = EventHub::new(limits(2, 2));
    let live = hub.subscribe(Scope::Agent(1));
    let sess = hub.session(1, "s");
    let feeding = feed_all(&hub, (0..10).map(|_| update(1, "s")).collect());
    settle().await;
    assert!(!feeding.is_finished());
    assert_eq!(live.next_batch(1).await.len(), 1, "reads a little");
    drop(live);
    settle().await;
    assert!(!feeding.is_finished(), "the session reader still holds it");
    sess.close();
    tokio::time::timeout(Duration::from_secs(5), feeding)
        .await
        .expect("no reader holds the pump")
        .expect("fed");
    assert!(sess.next_batch(1).await.is_empty(), "a closed reader ended");
}

#[tokio::test]
async fn the_host_reader_before_it_is_taken_drops_the_oldest_and_counts() {
    let hub = EventHub::new(limits(3, 100));
    let events: Vec<Event> = (0..10)
        .map(|i| ev(i, None, EventKind::AgentReady, None))
        .collect();
    let last3: Vec<u64> = events[7..].iter().map(|e| e.seq).collect();
    feed_all(&hub, events)
        .await
        .expect("nobody took it: never waits");
    let host = hub.take_host().expect("taken");
    assert_eq!(host.dropped(), 7);
    assert_eq!(seqs(&host.next_batch(10).await), last3);
    // A closed host reader drops what comes later: it never stalls the agents.
    host.close();
    feed_all(
        &hub,
        (0..10)
            .map(|i| ev(i, None, EventKind::AgentReady, None))
            .collect(),
    )
    .await
    .expect("fed");
    assert!(host.next_batch(1).await.is_empty());
}

#[tokio::test]
async fn session_reader_ends_after_session_closed() {
    let hub = EventHub::new(limits(10, 10));
    let r = hub.session(1, "s");
    feed_all(
        &hub,
        vec![
            ev(1, Some("s"), EventKind::SessionOpened, None),
            ev(1, Some("s"), EventKind::SessionClosed, None),
        ],
    )
    .await
    .expect("fed");
    assert_eq!(r.next_batch(10).await.len(), 2);
    assert!(r.next_batch(10).await.is_empty());
    assert!(r.is_ended());
    // A reader opened after the close still gets the (kept) history, then ends.
    let late = hub.session(1, "s");
    assert_eq!(late.next_batch(10).await.len(), 2);
    assert!(late.next_batch(10).await.is_empty());
}

#[tokio::test]
async fn closed_sessions_are_kept_bounded() {
    let hub = EventHub::new(limits(10, 3));
    let mut events = Vec::new();
    for i in 0..(CLOSED_KEPT + 40) {
        let s = format!("s{i}");
        events.push(ev(1, Some(&s), EventKind::SessionOpened, None));
        for _ in 0..5 {
            events.push(update(1, &s));
        }
        events.push(ev(1, Some(&s), EventKind::SessionClosed, None));
    }
    feed_all(&hub, events).await.expect("fed");
    let st = hub.shared.lock();
    assert!(
        st.sessions.len() <= CLOSED_KEPT,
        "{} kept",
        st.sessions.len()
    );
    assert!(st.sessions.values().all(|h| h.events.len() <= 3));
    assert!(
        st.sessions
            .contains_key(&(1, Arc::from(format!("s{}", CLOSED_KEPT + 39))))
    );
    assert!(!st.sessions.contains_key(&(1, Arc::from("s0"))));
}

#[tokio::test]
async fn turn_delivered_without_readers_needs_only_the_pump() {
    let hub = EventHub::new(limits(10, 10));
    let waiting = {
        let hub = hub.clone();
        tokio::spawn(async move { hub.turn_delivered(1, "s", 7).await })
    };
    settle().await;
    assert!(
        !waiting.is_finished(),
        "its turn_ended has not been pumped yet"
    );
    feed_all(&hub, vec![ev(1, Some("s"), EventKind::TurnEnded, Some(7))])
        .await
        .expect("fed");
    let got = tokio::time::timeout(Duration::from_secs(5), waiting).await;
    assert!(matches!(got, Ok(Ok(Ok(())))));
}

#[tokio::test]
async fn turn_delivered_waits_for_every_open_reader_to_hand_it_on() {
    let hub = EventHub::new(limits(10, 10));
    let reader = hub.session(1, "s");
    feed_all(
        &hub,
        vec![
            ev(1, Some("s"), EventKind::TurnStarted, Some(7)),
            ev(1, Some("s"), EventKind::TurnEnded, Some(7)),
        ],
    )
    .await
    .expect("fed");
    let waiting = {
        let hub = hub.clone();
        tokio::spawn(async move { hub.turn_delivered(1, "s", 7).await })
    };
    assert_eq!(reader.next_batch(10).await.len(), 2);
    settle().await;
    assert!(!waiting.is_finished(), "taken, but not yet handed on");
    // Coming back for more says the batch was handed on.
    assert!(reader.try_next_batch(10).is_some_and(|v| v.is_empty()));
    let got = tokio::time::timeout(Duration::from_secs(5), waiting).await;
    assert!(matches!(got, Ok(Ok(Ok(())))));
}

#[tokio::test]
async fn turn_delivered_fails_typed_when_a_reader_stalls() {
    let mut l = limits(10, 10);
    l.stall = Some(Duration::from_millis(100));
    let hub = EventHub::new(l);
    let _stuck = hub.session(1, "s");
    feed_all(&hub, vec![ev(1, Some("s"), EventKind::TurnEnded, Some(3))])
        .await
        .expect("fed");
    let err = hub.turn_delivered(1, "s", 3).await.expect_err("stalled");
    assert_eq!(err.kind(), "events_stalled");
    // Once the host's stream ended nothing waits.
    hub.end();
    assert!(hub.turn_delivered(1, "s", 3).await.is_ok());
}

#[tokio::test]
async fn a_flood_nobody_reads_stays_bounded() {
    let hub = EventHub::new(HubLimits {
        max_events: 50,
        max_bytes: 4096,
        history_events: 100,
        stall: None,
    });
    let feeding = feed_all(&hub, (0..20_000).map(|_| update(1, "flood")).collect());
    tokio::time::timeout(Duration::from_secs(20), feeding)
        .await
        .expect("never waits for nobody")
        .expect("fed");
    let st = hub.shared.lock();
    assert!(st.host.queue.events.len() <= 50);
    assert!(st.host.queue.bytes <= 4096);
    assert_eq!(
        st.host.dropped + st.host.queue.events.len() as u64,
        20_000,
        "counted"
    );
    let h = &st.sessions[&(1, Arc::from("flood"))];
    assert!(h.events.len() <= 100 && h.bytes <= 4096);
    assert_eq!(h.base + h.events.len() as u64, 20_000);
}

#[test]
fn blocking_pulls_wait_time_out_and_end() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let hub = EventHub::new(limits(10, 10));
    let reader = hub.session(1, "s");
    let got = reader.blocking_next_batch(10, Some(Duration::from_millis(30)));
    assert!(got.is_some_and(|v| v.is_empty()), "timed out");
    let feeder = hub.clone();
    rt.spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        feeder.feed(update(1, "s")).await;
        feeder.end();
    });
    let got = reader.blocking_next_batch(10, None).expect("one event");
    assert_eq!(got.len(), 1);
    assert!(reader.blocking_next_batch(10, None).is_none(), "ended");
}

#[tokio::test]
async fn a_hub_over_a_host_ends_with_the_hosts_stream() {
    let host = crate::Host::new(crate::HostConfig::default());
    let stream = host.events().expect("first call");
    let hub = EventHub::start(stream, host.config(), &tokio::runtime::Handle::current());
    let reader = hub.take_host().expect("taken");
    host.close_events();
    let got = tokio::time::timeout(Duration::from_secs(5), reader.next_batch(10)).await;
    assert!(got.is_ok_and(|v| v.is_empty()), "ended");
    assert!(hub.is_ended() && reader.is_ended());
}

#[tokio::test]
async fn made_up_session_ids_do_not_pile_up_histories() {
    let hub = EventHub::new(limits(10, 10));
    let opened = ev(1, Some("real"), EventKind::SessionOpened, None);
    let mut events = vec![opened];
    for i in 0..5_000 {
        events.push(update(1, &format!("made-up-{i}")));
    }
    events.push(update(1, "real"));
    feed_all(&hub, events).await.expect("fed");
    let st = hub.shared.lock();
    assert!(
        st.sessions.len() <= STRAYS_KEPT + 1,
        "{} kept",
        st.sessions.len()
    );
    assert_eq!(
        st.sessions[&(1, Arc::from("real"))].events.len(),
        2,
        "an opened session stays"
    );
}

fn with(agent: u64, session: Option<&str>, kind: EventKind, data: serde_json::Value) -> Event {
    Event {
        data: raw_json(&data),
        ..ev(agent, session, kind, None)
    }
}

/// Pull until the reader ends (bounded): everything it yielded.
async fn drain(r: &HubReader) -> Vec<Arc<Event>> {
    let mut out = Vec::new();
    loop {
        let got = tokio::time::timeout(Duration::from_secs(5), r.next_batch(100))
            .await
            .expect("the reader ends");
        if got.is_empty() {
            return out;
        }
        out.extend(got);
    }
}

fn kinds(v: &[Arc<Event>]) -> Vec<EventKind> {
    v.iter().map(|e| e.kind).collect()
}

#[tokio::test]
async fn a_supervised_restart_does_not_end_session_or_agent_readers() {
    let hub = EventHub::new(limits(100, 100));
    let sess = hub.session(1, "s");
    let agent = hub.subscribe(Scope::Agent(1));
    let restart = serde_json::json!({"reason": "agent_exited", "restart": true});
    feed_all(
        &hub,
        vec![
            ev(1, Some("s"), EventKind::SessionOpened, None),
            with(1, Some("s"), EventKind::SessionClosed, restart.clone()),
            with(1, None, EventKind::AgentExited, restart),
            ev(1, None, EventKind::AgentRestarting, None),
            ev(1, Some("s"), EventKind::SessionOpened, None),
            update(1, "s"),
            ev(1, None, EventKind::AgentRestarted, None),
        ],
    )
    .await
    .expect("fed");
    settle().await;
    let got = sess.try_next_batch(100).expect("open");
    assert_eq!(got.len(), 4, "{:?}", kinds(&got));
    assert!(!sess.is_ended(), "the session lives on across the restart");
    assert!(!agent.is_ended());
    // The supervisor gives up: the agent's last event ends both.
    feed_all(&hub, vec![ev(1, None, EventKind::AgentFailed, None)])
        .await
        .expect("fed");
    assert!(drain(&sess).await.is_empty());
    assert_eq!(
        kinds(&drain(&agent).await).last(),
        Some(&EventKind::AgentFailed)
    );
    // Opened after the end: end at once (the session's history first).
    assert_eq!(drain(&hub.subscribe(Scope::Agent(1))).await.len(), 0);
    assert_eq!(drain(&hub.session(1, "s")).await.len(), 4);
}

#[tokio::test]
async fn the_agents_final_exit_ends_its_readers_and_a_stray_after_a_close_does_not_hold_one() {
    let hub = EventHub::new(limits(100, 100));
    let lost = hub.session(1, "lost");
    let closed = hub.session(1, "closed");
    let open = hub.session(1, "open");
    let agent = hub.subscribe(Scope::Agent(1));
    let other = hub.subscribe(Scope::Agent(2));
    feed_all(
        &hub,
        vec![
            ev(1, Some("lost"), EventKind::SessionOpened, None),
            ev(1, Some("closed"), EventKind::SessionOpened, None),
            ev(1, Some("open"), EventKind::SessionOpened, None),
            ev(1, Some("lost"), EventKind::SessionLost, None),
            with(
                1,
                Some("closed"),
                EventKind::SessionClosed,
                serde_json::json!({"reason": "closed"}),
            ),
            // An agent may still send updates for a session id it closed: delivered to
            // nobody waiting on the closed session's reader.
            update(1, "closed"),
            // A crash's exit with a restart pending, then the final exit of a shutdown.
            with(
                1,
                None,
                EventKind::AgentExited,
                serde_json::json!({"reason": "exited", "restart": true}),
            ),
            with(
                1,
                None,
                EventKind::AgentExited,
                serde_json::json!({"reason": "shutdown"}),
            ),
            ev(2, None, EventKind::AgentReady, None),
        ],
    )
    .await
    .expect("fed");
    assert_eq!(
        kinds(&drain(&lost).await).last(),
        Some(&EventKind::SessionLost)
    );
    assert_eq!(
        kinds(&drain(&closed).await).last(),
        Some(&EventKind::SessionClosed)
    );
    assert_eq!(kinds(&drain(&open).await), vec![EventKind::SessionOpened]);
    assert_eq!(drain(&agent).await.len(), 9 - 1);
    settle().await;
    assert!(!other.is_ended(), "another agent's reader goes on");
}
