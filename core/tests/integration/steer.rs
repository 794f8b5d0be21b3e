//! Steering (`Session::steer`, docs/STEERING.md): into the running turn when the agent
//! advertises the `_session/steering` extension, else (or when the agent asks for a prompt)
//! queued as the session's next prompt; a cancel, the session closing and the agent ending
//! reject queued steers; every outcome is a `steer` event; the queue is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{
    Agent, Event, EventKind, EventStream, Host, HostConfig, Session, SessionOptions, TurnResult,
};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

fn opted_in() -> HostConfig {
    HostConfig {
        unstable: vec!["_session/steering".into()],
        ..HostConfig::default()
    }
}

async fn open(config: HostConfig, scenario: &str) -> (Host, EventStream, Agent, Session) {
    let host = Host::new(config);
    let events = host.events().unwrap();
    let agent = host.spawn(mock(Some(scenario))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    (host, events, agent, session)
}

/// Prompt "go" in a task; returns once its `turn_started` is seen (with the events so far).
async fn running_turn(
    session: &Session,
    events: &mut EventStream,
) -> (
    tokio::task::JoinHandle<acp_host::Result<TurnResult>>,
    Vec<Event>,
) {
    let s = session.clone();
    let task = tokio::spawn(async move { s.prompt_text("go").await });
    let seen = collect_until(events, T, |e| e.kind == EventKind::TurnStarted).await;
    (task, seen)
}

fn steers(events: &[Event]) -> Vec<(u64, String, Option<u64>)> {
    of_kind(events, EventKind::Steer)
        .into_iter()
        .map(|e| {
            let d = e.data_value();
            (
                d["steer"].as_u64().unwrap(),
                d["outcome"].as_str().unwrap().to_owned(),
                e.turn,
            )
        })
        .collect()
}

fn turn_frames(events: &[Event]) -> Vec<(String, Option<u64>)> {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::TurnStarted | EventKind::TurnEnded))
        .map(|e| (e.kind.to_string(), e.turn))
        .collect()
}

fn text(t: &str) -> Vec<Value> {
    vec![json!({ "type": "text", "text": t })]
}

#[tokio::test]
async fn without_the_opt_in_steer_is_unsupported_and_nothing_is_sent() {
    let (_host, mut events, _agent, session) = open(HostConfig::default(), "steering").await;
    let err = session.steer(text("hello")).await.unwrap_err();
    assert_eq!(err.kind(), "unsupported", "{err}");
    assert!(err.to_string().contains("_session/steering"), "{err}");
    let rest = drain(&mut events, Duration::from_millis(200)).await;
    assert!(of_kind(&rest, EventKind::Steer).is_empty());
    assert!(of_kind(&rest, EventKind::TurnStarted).is_empty());
}

#[tokio::test]
async fn an_agent_that_advertises_steering_takes_it_into_the_running_turn() {
    let (_host, mut events, _agent, session) = open(opted_in(), "steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let r = session.steer(text("go left")).await.unwrap();
    assert_eq!(r.to_json()["outcome"], "injected");
    let turn = task.await.unwrap().unwrap();
    assert_eq!(r.turn, Some(turn.turn));
    assert_eq!(turn.text, "workingsteered: go left done");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(
        steers(&evs),
        vec![(r.steer, "injected".into(), Some(turn.turn))]
    );
    let ev = of_kind(&evs, EventKind::Steer)[0].data_value();
    assert_eq!(ev["prompt"][0]["text"], "go left");
    // One turn: no frame of its own for the steer.
    let after = drain(&mut events, Duration::from_millis(300)).await;
    assert!(of_kind(&after, EventKind::TurnStarted).is_empty());
}

#[tokio::test]
async fn the_agent_asking_for_a_prompt_queues_the_steer_as_the_next_turn() {
    let (_host, mut events, _agent, session) = open(opted_in(), "steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let r = session.steer(text("!promptRequired redo")).await.unwrap();
    assert_eq!(r.to_json()["outcome"], "queued");
    assert_eq!(r.turn, None);
    let first = task.await.unwrap().unwrap();
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::TurnEnded && e.turn != Some(first.turn)
    })
    .await;
    let second = first.turn + 1;
    assert_eq!(
        steers(&evs),
        vec![
            (r.steer, "queued".into(), None),
            (r.steer, "prompted".into(), Some(second)),
        ]
    );
    assert_eq!(
        turn_frames(&evs),
        vec![
            ("turn_ended".into(), Some(first.turn)),
            ("turn_started".into(), Some(second)),
            ("turn_ended".into(), Some(second)),
        ]
    );
    let started = of_kind(&evs, EventKind::TurnStarted)[0].data_value();
    assert_eq!(started["prompt"][0]["text"], "!promptRequired redo");
    // prompted comes right before its turn_started
    let pos = |k: EventKind, turn| {
        evs.iter()
            .position(|e| e.kind == k && e.turn == Some(turn))
            .unwrap()
    };
    assert_eq!(
        pos(EventKind::Steer, second) + 1,
        pos(EventKind::TurnStarted, second)
    );
    let ended = of_kind(&evs, EventKind::TurnEnded)[1].data_value();
    assert_eq!(ended["stopReason"], "end_turn");
}

#[tokio::test]
async fn without_steering_the_text_waits_and_is_prompted_when_the_turn_ends() {
    let (_host, mut events, _agent, session) = open(opted_in(), "no-steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let a = session.steer(text("first")).await.unwrap();
    let b = session.steer(text("second")).await.unwrap();
    assert_eq!(a.to_json()["outcome"], "queued");
    assert_eq!(b.to_json()["outcome"], "queued");
    assert!(b.steer > a.steer);
    let first = task.await.unwrap().unwrap();
    assert_eq!(first.stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::TurnEnded && e.turn == Some(first.turn + 2)
    })
    .await;
    let outcomes: Vec<_> = steers(&evs)
        .into_iter()
        .map(|(s, o, t)| (s, o, t.map(|t| t - first.turn)))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (a.steer, "queued".into(), None),
            (b.steer, "queued".into(), None),
            (a.steer, "prompted".into(), Some(1)),
            (b.steer, "prompted".into(), Some(2)),
        ]
    );
    let texts: Vec<_> = of_kind(&evs, EventKind::TurnStarted)
        .iter()
        .map(|e| e.data_value()["prompt"][0]["text"].clone())
        .collect();
    assert_eq!(texts, vec![json!("first"), json!("second")]);
    // Each in its own turn, one turn_started and one turn_ended each.
    assert_eq!(turn_frames(&evs).len(), 5);
    // Nothing was sent as `_session/steering` to an agent that did not advertise it.
    assert!(
        !of_kind(&evs, EventKind::Steer)
            .iter()
            .any(|e| e.data_value()["outcome"] == "failed")
    );
}

#[tokio::test]
async fn with_no_turn_running_a_steer_is_the_next_prompt_at_once() {
    let (_host, mut events, _agent, session) = open(opted_in(), "no-steering").await;
    let r = session.steer(text("hi")).await.unwrap();
    assert_eq!(r.to_json()["outcome"], "prompted");
    let turn = r.turn.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(steers(&evs), vec![(r.steer, "prompted".into(), Some(turn))]);
    assert_eq!(
        turn_frames(&evs),
        vec![
            ("turn_started".into(), Some(turn)),
            ("turn_ended".into(), Some(turn))
        ]
    );
    // The session's turn is busy now as for any prompt: a prompt during it is refused.
}

#[tokio::test]
async fn what_the_agent_refuses_fails_with_its_reason_and_nothing_is_queued() {
    let (_host, mut events, _agent, session) = open(opted_in(), "steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let err = session.steer(text("!failed now")).await.unwrap_err();
    assert_eq!(err.kind(), "agent_error", "{err}");
    assert!(err.to_string().contains("the mock refuses"), "{err}");
    let first = task.await.unwrap().unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let steer = of_kind(&evs, EventKind::Steer)[0].data_value();
    assert_eq!(steer["outcome"], "failed");
    assert_eq!(steer["reason"], "the mock refuses");
    assert_eq!(steer["error"]["kind"], "agent_error");
    assert_eq!(steer["prompt"][0]["text"], "!failed now");
    assert_eq!(of_kind(&evs, EventKind::Steer)[0].turn, Some(first.turn));
    let after = drain(&mut events, Duration::from_millis(300)).await;
    assert!(of_kind(&after, EventKind::TurnStarted).is_empty());
}

#[tokio::test]
async fn an_agent_error_or_an_answer_without_an_outcome_is_a_typed_failure() {
    for (word, kind) in [("!error", "agent_error"), ("!empty", "protocol")] {
        let (_host, mut events, _agent, session) = open(opted_in(), "steering").await;
        let (task, _) = running_turn(&session, &mut events).await;
        let err = session.steer(text(word)).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{word}: {err}");
        task.await.unwrap().unwrap();
        let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
        let steer = of_kind(&evs, EventKind::Steer)[0].data_value();
        assert_eq!(steer["outcome"], "failed", "{word}");
        assert_eq!(steer["error"]["kind"], kind, "{word}");
    }
}

#[tokio::test]
async fn an_agent_that_starts_a_turn_of_its_own_is_reported_so() {
    let (_host, mut events, _agent, session) = open(opted_in(), "steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let r = session.steer(text("!startedNewTurn")).await.unwrap();
    assert_eq!(r.to_json()["outcome"], "started_new_turn");
    assert_eq!(r.turn, None);
    task.await.unwrap().unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(
        steers(&evs),
        vec![(r.steer, "started_new_turn".into(), None)]
    );
}

#[tokio::test]
async fn a_cancel_rejects_every_queued_steer_and_nothing_more_is_prompted() {
    let (_host, mut events, _agent, session) = open(opted_in(), "no-steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let a = session.steer(text("one")).await.unwrap();
    let b = session.steer(text("two")).await.unwrap();
    session.cancel().await.unwrap();
    let turn = task.await.unwrap().unwrap();
    assert_eq!(turn.stop_reason, "cancelled");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let rejected: Vec<_> = of_kind(&evs, EventKind::Steer)
        .iter()
        .map(|e| e.data_value())
        .filter(|d| d["outcome"] == "rejected")
        .map(|d| {
            (
                d["steer"].as_u64().unwrap(),
                d["reason"].clone(),
                d["prompt"][0]["text"].clone(),
            )
        })
        .collect();
    assert_eq!(
        rejected,
        vec![
            (a.steer, json!("cancelled"), json!("one")),
            (b.steer, json!("cancelled"), json!("two")),
        ]
    );
    let after = drain(&mut events, Duration::from_millis(500)).await;
    assert!(
        of_kind(&after, EventKind::TurnStarted).is_empty(),
        "{:?}",
        kinds(&after)
    );
    // The session takes steers again afterwards.
    let again = session.steer(text("three")).await.unwrap();
    assert_eq!(again.to_json()["outcome"], "prompted");
}

#[tokio::test]
async fn closing_the_session_rejects_its_queued_steers() {
    let (_host, mut events, _agent, session) = open(opted_in(), "no-steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let a = session.steer(text("later")).await.unwrap();
    session.close().await.unwrap();
    let _ = task.await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::SessionClosed).await;
    let d = of_kind(&evs, EventKind::Steer)
        .iter()
        .map(|e| e.data_value())
        .find(|d| d["outcome"] == "rejected")
        .unwrap();
    assert_eq!(d["steer"], a.steer);
    assert_eq!(d["reason"], "closed");
    // Never prompted: the turn the close cancelled is the only one.
    assert!(
        of_kind(&evs, EventKind::TurnStarted).is_empty(),
        "{:?}",
        kinds(&evs)
    );
    let err = session.steer(text("after")).await.unwrap_err();
    assert_eq!(err.kind(), "not_found", "{err}");
}

#[tokio::test]
async fn the_agent_ending_rejects_queued_steers_before_its_session_closes() {
    let (_host, mut events, agent, session) = open(opted_in(), "no-steering").await;
    let (_task, _) = running_turn(&session, &mut events).await;
    let a = session.steer(text("later")).await.unwrap();
    agent.shutdown().await;
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    let order: Vec<String> = evs
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Steer | EventKind::SessionClosed | EventKind::TurnEnded
            )
        })
        .map(|e| match e.kind {
            EventKind::Steer => format!("steer:{}", e.data_value()["outcome"].as_str().unwrap()),
            k => k.to_string(),
        })
        .collect();
    assert_eq!(
        order,
        vec![
            "steer:queued",
            "turn_ended",
            "steer:rejected",
            "session_closed"
        ],
        "{order:?}"
    );
    let d = of_kind(&evs, EventKind::Steer)[1].data_value();
    assert_eq!(d["steer"], a.steer);
    assert_eq!(d["reason"], "shutdown");
    let err = session.steer(text("after")).await.unwrap_err();
    assert!(["closed", "agent_exited"].contains(&err.kind()), "{err}");
}

#[tokio::test]
async fn pending_steers_are_bounded_per_session() {
    let (_host, mut events, _agent, session) = open(opted_in(), "no-steering").await;
    let (_task, _) = running_turn(&session, &mut events).await;
    for i in 0..16 {
        let r = session.steer(text(&format!("s{i}"))).await.unwrap();
        assert_eq!(r.to_json()["outcome"], "queued");
    }
    let err = session.steer(text("one too many")).await.unwrap_err();
    assert_eq!(err.kind(), "busy", "{err}");
    assert!(err.to_string().contains("16"), "{err}");
}

#[tokio::test]
async fn content_the_agent_did_not_advertise_is_refused_locally() {
    let (_host, mut events, _agent, session) = open(opted_in(), "no-steering").await;
    let (_task, _) = running_turn(&session, &mut events).await;
    let err = session
        .steer(vec![
            json!({ "type": "audio", "data": "", "mimeType": "audio/wav" }),
        ])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "unsupported", "{err}");
    let err = session
        .steer(vec![json!({ "type": "bogus" })])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_argument", "{err}");
}

#[tokio::test]
async fn the_agent_crashing_rejects_queued_steers_as_agent_exited() {
    let host = Host::new(opted_in());
    let mut events = host.events().unwrap();
    // The mock exits (code 9) when a `session/set_mode` request arrives: a crash on cue.
    let spec = mock(Some("no-steering")).env("ACP_MOCK_EXIT_ON", "session/set_mode");
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let (task, _) = running_turn(&session, &mut events).await;
    let a = session.steer(text("later")).await.unwrap();
    assert_eq!(a.to_json()["outcome"], "queued");
    let _ = session.set_mode("code").await;
    assert_eq!(task.await.unwrap().unwrap_err().kind(), "agent_exited");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    let d = of_kind(&evs, EventKind::Steer)
        .iter()
        .map(|e| e.data_value())
        .find(|d| d["outcome"] == "rejected")
        .unwrap();
    assert_eq!(d["steer"], a.steer);
    assert_eq!(d["reason"], "agent_exited");
    assert_eq!(d["prompt"][0]["text"], "later");
    drop(agent);
}

fn v2_opted_in() -> HostConfig {
    HostConfig {
        unstable: vec!["_session/steering".into(), "protocol/v2".into()],
        ..HostConfig::default()
    }
}

/// v2: a steer while the turn runs is a `session/prompt` insertion into that work (the mock's
/// `v2-steering` does not advertise `_session/steering`): `injected`, one turn.
#[tokio::test]
async fn on_v2_a_steer_is_inserted_into_the_running_work() {
    let (_host, mut events, _agent, session) = open(v2_opted_in(), "v2-steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let r = session.steer(text("go left")).await.unwrap();
    assert_eq!(r.to_json()["outcome"], "injected");
    let turn = task.await.unwrap().unwrap();
    assert_eq!(r.turn, Some(turn.turn));
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.text, "workingsteered: go left done");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(
        steers(&evs),
        vec![(r.steer, "injected".into(), Some(turn.turn))]
    );
    let after = drain(&mut events, Duration::from_millis(300)).await;
    assert!(
        of_kind(&after, EventKind::TurnStarted).is_empty(),
        "{after:?}"
    );
    assert!(of_kind(&after, EventKind::Steer).is_empty(), "{after:?}");
}

/// v2: an insertion the agent refuses (an error answer: not inserted) waits as the next prompt.
#[tokio::test]
async fn on_v2_a_refused_insertion_waits_as_the_next_prompt() {
    let (_host, mut events, _agent, session) = open(v2_opted_in(), "v2-steering").await;
    let (task, _) = running_turn(&session, &mut events).await;
    let r = session.steer(text("!error later")).await.unwrap();
    assert_eq!(r.to_json()["outcome"], "queued");
    let first = task.await.unwrap().unwrap();
    assert_eq!(first.text, "working done");
    let evs = collect_until(&mut events, T, |e| {
        e.kind == EventKind::TurnEnded && e.turn != Some(first.turn)
    })
    .await;
    let second = of_kind(&evs, EventKind::TurnStarted)[0].turn;
    assert_eq!(
        steers(&evs),
        vec![
            (r.steer, "queued".into(), None),
            (r.steer, "prompted".into(), second)
        ]
    );
    let frames = turn_frames(&evs);
    assert_eq!(
        frames,
        vec![
            ("turn_ended".into(), Some(first.turn)),
            ("turn_started".into(), second),
            ("turn_ended".into(), second)
        ]
    );
}

/// v2 with no turn running: the steer is the next prompt at once, as on v1.
#[tokio::test]
async fn on_v2_with_no_turn_running_a_steer_is_prompted() {
    let (_host, mut events, _agent, session) = open(v2_opted_in(), "v2-steering").await;
    let r = session.steer(text("hello")).await.unwrap();
    assert_eq!(r.to_json()["outcome"], "prompted");
    // Turn 1 of the mock waits for an insertion; steer into it to let it end.
    let s = session.clone();
    collect_until(&mut events, T, |e| {
        e.update_kind().as_deref() == Some("agent_message_chunk")
    })
    .await;
    let inserted = s.steer(text("more")).await.unwrap();
    assert_eq!(inserted.to_json()["outcome"], "injected");
    assert_eq!(inserted.turn, r.turn);
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(of_kind(&evs, EventKind::TurnEnded)[0].turn, r.turn);
}

/// Opted into v2 but the agent answers v1: the vendor `_session/steering` path, as without v2.
#[tokio::test]
async fn opted_into_v2_with_a_v1_agent_steering_stays_the_vendor_extension() {
    let (_host, mut events, agent, session) = open(v2_opted_in(), "steering").await;
    assert_eq!(agent.info().unwrap().protocol_version, 1);
    let (task, _) = running_turn(&session, &mut events).await;
    let r = session.steer(text("go left")).await.unwrap();
    assert_eq!(r.to_json()["outcome"], "injected");
    let turn = task.await.unwrap().unwrap();
    assert_eq!(turn.text, "workingsteered: go left done");
}
