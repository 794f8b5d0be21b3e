//! The interop agents' recordings (fixtures/recordings/interop/, made by `scripts/gen-recordings`
//! from the official TypeScript SDK example agent and the Python SDK echo agent) as regression
//! tests that need neither the agents nor Node nor Python: each replays through the host with no
//! divergence and the outcome the live agent gave.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use acp_host::replay::{Pace, ReplayOptions};
use acp_host::{AgentSpec, EventKind, PermissionHandler};
use serde_json::{Value, json};

use crate::common::*;
use crate::interop::{allow_once_handler, py_echo_session, ts_session};

fn recording(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("fixtures/recordings/interop")
        .join(format!("{name}.acprec.jsonl"))
}

fn replay(name: &str, report: &Path) -> AgentSpec {
    AgentSpec::replay(ReplayOptions {
        pace: Pace::Fast,
        report: Some(report.to_owned()),
        ..ReplayOptions::new(recording(name))
    })
}

fn no_divergence(report: &Path) {
    let r: Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(r["divergenceCount"], 0, "{r:#}");
    assert_eq!(r["complete"], true, "{r:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_agents_recordings_replay_with_its_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(recording("ts-sdk-allowed"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(
        header["agent"]["command"]
            .as_str()
            .unwrap()
            .ends_with("ts-agent"),
        "a recording of the real agent: {header}"
    );
    for (name, permission, option) in [
        ("ts-sdk-allowed", allow_once_handler(), "allow"),
        ("ts-sdk-denied", PermissionHandler::DenyAll, "reject"),
    ] {
        let report = dir.path().join(format!("{name}.json"));
        let (evs, state) = ts_session(replay(name, &report), permission, None).await;
        no_divergence(&report);
        let resolved = of_kind(&evs, EventKind::PermissionResolved);
        assert_eq!(resolved.len(), 1, "{name}");
        assert_eq!(
            resolved[0].data_value()["outcome"],
            json!({"outcome": "selected", "optionId": option}),
            "{name}"
        );
        if option == "allow" {
            assert_eq!(state.tool_call("call_2").unwrap()["status"], "completed");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_echo_agents_recording_replays_with_its_echo() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("py.json");
    let evs = py_echo_session(replay("python-sdk-echo", &report), None).await;
    no_divergence(&report);
    let chunks: Vec<_> = evs
        .iter()
        .filter(|e| e.update_kind().as_deref() == Some("agent_message_chunk"))
        .collect();
    assert_eq!(chunks.len(), 1);
    assert_eq!(
        chunks[0].data_value()["content"]["text"],
        "hello from acp-host"
    );
    assert_eq!(chunks[0].data_value()["_meta"], json!({"echo": true}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_denying_what_the_recorded_one_allowed_is_a_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("changed.json");
    ts_session(
        replay("ts-sdk-allowed", &report),
        PermissionHandler::DenyAll,
        None,
    )
    .await;
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let answer = r["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "answer_differs")
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(answer["method"], "session/request_permission");
    assert_eq!(answer["differences"][0]["path"], "result.outcome.optionId");
    assert_eq!(answer["differences"][0]["recorded"], "allow");
    assert_eq!(answer["differences"][0]["live"], "reject");
}
