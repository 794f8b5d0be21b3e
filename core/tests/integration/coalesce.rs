//! Opt-in coalescing of `tool_call_update` bursts (`HostConfig::coalesce_tool_call_updates`),
//! against an agent that resends the whole accumulated output in every update.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{EventKind, Host, HostConfig, SessionOptions};
use common::*;
use serde_json::Value;

const UPDATES: u64 = 200;

/// Runs one turn of `--cumulative UPDATES` while nobody pulls, then pulls everything.
async fn burst(coalesce: bool, scenario: Option<&str>) -> Vec<acp_host::Event> {
    let host = Host::new(HostConfig {
        coalesce_tool_call_updates: coalesce,
        ..HostConfig::default()
    });
    let mut events = host.events().expect("events");
    let mut spec = mock(scenario);
    if scenario.is_none() {
        spec = spec.args(["--cumulative", &UPDATES.to_string()]);
    }
    let agent = host.spawn(spec).await.expect("spawn");
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .expect("session");
    // The turn's events all wait in the queue: the prompt returns after they are queued.
    session.prompt_text("build").await.expect("prompt");
    let evs = drain(&mut events, Duration::from_millis(200)).await;
    assert_seq_strictly_increasing(&evs);
    for (a, b) in evs.iter().zip(evs.iter().skip(1)) {
        assert_eq!(a.seq + 1, b.seq, "seq without gaps");
    }
    evs
}

fn tool_updates(evs: &[acp_host::Event]) -> Vec<Value> {
    evs.iter()
        .filter(|e| e.update_kind().as_deref() == Some("tool_call_update"))
        .map(|e| e.data_value())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_for_one_tool_call_is_one_event_with_the_latest_fields() {
    let off = burst(false, None).await;
    let on = burst(true, None).await;
    let (all, merged) = (tool_updates(&off), tool_updates(&on));
    assert_eq!(all.len() as u64, UPDATES + 1, "off: every update as sent");
    assert_eq!(merged.len(), 1, "on: the unpulled burst is one event");
    let last_content = &all[all.len() - 2]["content"];
    assert_eq!(&merged[0]["content"], last_content, "the newest output");
    assert_eq!(
        merged[0]["status"], "completed",
        "fields of later updates win"
    );
    assert_eq!(merged[0]["_meta"]["acpHost"]["coalesced"], UPDATES + 1);
    // The rest of the stream is the same, in the same order.
    let kinds = |evs: &[acp_host::Event]| {
        let mut k = kinds(evs);
        k.dedup();
        k
    };
    assert_eq!(kinds(&off), kinds(&on));
    let bytes = |evs: &[acp_host::Event]| evs.iter().map(|e| e.data.get().len()).sum::<usize>();
    assert!(
        bytes(&on) * 20 < bytes(&off),
        "delivered {} bytes with coalescing vs {} without",
        bytes(&on),
        bytes(&off)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_of_different_tool_calls_or_with_events_between_are_not_merged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("interleaved.json");
    let upd = |id: &str, text: &str| {
        serde_json::json!({"update": {"sessionUpdate": "tool_call_update", "toolCallId": id,
            "content": [{"type": "content", "content": {"type": "text", "text": text}}]}})
    };
    let steps = vec![
        serde_json::json!({"update": {"sessionUpdate": "tool_call", "toolCallId": "a", "title": "A"}}),
        serde_json::json!({"update": {"sessionUpdate": "tool_call", "toolCallId": "b", "title": "B"}}),
        upd("a", "a1"),
        upd("b", "b1"),
        upd("a", "a2"),
        serde_json::json!({"update": {"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "between"}}}),
        upd("a", "a3"),
        upd("a", "a4"),
    ];
    let scenario = serde_json::json!({ "prompts": [steps] });
    std::fs::write(&path, scenario.to_string()).expect("write");
    let evs = burst(true, Some(path.to_str().expect("utf-8"))).await;
    let texts: Vec<String> = tool_updates(&evs)
        .iter()
        .map(|u| {
            format!(
                "{}:{}",
                u["toolCallId"].as_str().unwrap_or_default(),
                u["content"][0]["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
            )
        })
        .collect();
    // Only the last two (same call, nothing between) merge.
    assert_eq!(texts, ["a:a1", "b:b1", "a:a2", "a:a4"]);
    let merged = tool_updates(&evs);
    assert_eq!(merged[3]["_meta"]["acpHost"]["coalesced"], 2);
    assert!(
        merged[0].get("_meta").is_none(),
        "unmerged updates are verbatim"
    );
    assert_eq!(of_kind(&evs, EventKind::TurnEnded).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_keeps_up_gets_every_update_even_with_coalescing_on() {
    let host = Host::new(HostConfig {
        coalesce_tool_call_updates: true,
        ..HostConfig::default()
    });
    let mut events = host.events().expect("events");
    let spec = mock(None).args(["--cumulative", "20"]);
    let agent = host.spawn(spec).await.expect("spawn");
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .expect("session");
    drain(&mut events, Duration::from_millis(100)).await;
    let prompt = tokio::spawn(async move { session.prompt_text("build").await });
    let evs = collect_until(&mut events, Duration::from_secs(10), |e| {
        e.kind == EventKind::TurnEnded
    })
    .await;
    prompt.await.expect("join").expect("prompt");
    // However many were merged, the last state is complete and nothing is lost in sum.
    let updates = tool_updates(&evs);
    let represented: u64 = updates
        .iter()
        .map(|u| u["_meta"]["acpHost"]["coalesced"].as_u64().unwrap_or(1))
        .sum();
    assert_eq!(represented, 21);
    assert_eq!(
        updates.last().map(|u| u["status"].clone()),
        Some("completed".into())
    );
}
