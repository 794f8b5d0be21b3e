//! An agent that ends its lines with CRLF (as Windows programs writing in text mode do) is read
//! like any other: the `\r` is framing, never part of the JSON, the text or an event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{Event, EventKind, Host, HostConfig, SessionOptions};
use common::*;

/// One turn of the scenario that writes non-JSON lines between updates (reported as noise, with
/// their text, where a `\r` left on a line would show); wire events carry the JSON ones.
async fn turn(crlf: bool) -> Vec<Event> {
    let host = Host::new(HostConfig {
        wire_events: true,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let mut spec = mock(Some("garbage-stdout"));
    if crlf {
        spec = spec.arg("--crlf");
    }
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("hello").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let evs = collect_until(&mut events, Duration::from_secs(20), |e| {
        e.kind == EventKind::TurnEnded
    })
    .await;
    agent.shutdown().await;
    evs
}

fn noise(evs: &[Event]) -> Vec<String> {
    of_kind(evs, EventKind::ProtocolNoise)
        .iter()
        .map(|e| e.data.get().to_owned())
        .collect()
}

/// Whether a string anywhere in `v` holds a CR.
fn has_cr(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains('\r'),
        serde_json::Value::Array(a) => a.iter().any(has_cr),
        serde_json::Value::Object(o) => o.iter().any(|(k, v)| k.contains('\r') || has_cr(v)),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crlf_agent_reads_exactly_like_an_lf_agent() {
    let lf = turn(false).await;
    let crlf = turn(true).await;
    assert_eq!(kinds(&crlf), kinds(&lf));
    assert_eq!(noise(&crlf), noise(&lf));
    assert!(
        noise(&crlf)
            .iter()
            .any(|n| n.contains("\"not json at all\"")),
        "{:?}",
        noise(&crlf)
    );
    for ev in &crlf {
        let raw = ev.data.get();
        assert!(
            !raw.contains('\r') && !has_cr(&ev.data_value()),
            "a CR reached the event data: {raw:?}"
        );
    }
}
