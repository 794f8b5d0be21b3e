//! The generated event schema (`schema/events.schema.json`) matches the payload types, and the
//! payload types match what the host actually emits (every event of every conformance trace
//! decodes exactly). Regenerate with `UPDATE_EXPECT=1 cargo test -p acp-host --features
//! json-schema --test integration event_schema::`, then regenerate the Node and Python types from it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "json-schema")]

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn generated() -> String {
    let schema = acp_host::events::payload::events_schema();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[test]
fn the_committed_schema_is_generated_from_the_payload_types() {
    let path = root().join("schema/events.schema.json");
    let fresh = generated();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &fresh).expect("write schema");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "schema/events.schema.json is stale: regenerate it (UPDATE_EXPECT=1 cargo test -p acp-host \
         --features json-schema --test integration event_schema::) and the face types (scripts/gen-types)"
    );
}

#[test]
fn the_schema_has_one_property_per_event_kind_and_the_acp_types() {
    let schema: serde_json::Value = serde_json::from_str(&generated()).expect("json");
    let props = schema["properties"].as_object().expect("properties");
    for kind in [
        "agent_ready",
        "session_update",
        "permission_requested",
        "elicitation_requested",
        "turn_ended",
        "call_completed",
    ] {
        assert!(props.contains_key(kind), "{kind}");
    }
    let defs = schema["$defs"].as_object().expect("$defs");
    for def in [
        "SessionUpdate",
        "ToolCall",
        "ToolCallUpdate",
        "ContentBlock",
        "PermissionOption",
        "Plan",
        "SessionConfigOption",
    ] {
        assert!(defs.contains_key(def), "{def} missing from $defs");
    }
}

/// The typed shapes are checked against the host's real output: every event of every
/// conformance trace (all kinds the scenarios produce) decodes without a repair.
#[test]
fn every_event_of_every_conformance_trace_decodes_exactly() {
    let dir = root().join("fixtures/scenarios/conformance/expected");
    let mut seen = std::collections::BTreeSet::new();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("traces") {
        let path = entry.expect("entry").path();
        let trace: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        for ev in trace["events"].as_array().expect("events") {
            let kind = ev["kind"].as_str().expect("kind");
            let kind = acp_host::EventKind::from_name(kind).expect("a known kind");
            let decoded = acp_host::events::decode_data(kind, &ev["data"].to_string());
            if ev["data"]["sessionUpdate"] == "future_kind" {
                // The scenario's deliberately unknown update: typed as Unknown, with a note.
                assert_eq!(decoded.payload, acp_host::Payload::Unknown);
                assert_eq!(decoded.notes[0].reason, "unknown_update_kind");
                continue;
            }
            assert!(
                decoded.is_exact(),
                "{}: {kind} {} -> {:?}",
                path.display(),
                ev["data"],
                decoded.notes
            );
            seen.insert(kind.as_str());
            n += 1;
        }
    }
    assert!(n > 300, "only {n} events");
    assert!(seen.len() >= 18, "kinds seen: {seen:?}");
}
