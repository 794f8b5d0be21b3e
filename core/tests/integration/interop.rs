//! Interop against agents nobody here wrote (installed by `scripts/setup`):
//! the official TypeScript SDK 1.9.0 example agent and the official Python SDK 0.12.1 echo agent.
//! Set `ACP_SKIP_INTEROP=1` to skip them on a machine without Node/Python.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use acp_host::{
    AgentSpec, EventKind, Host, HostConfig, PermissionHandler, PermissionRequest, SessionOptions,
};
use common::*;
use serde_json::json;

const T: Duration = Duration::from_secs(60);

fn peer(name: &str) -> Option<AgentSpec> {
    if std::env::var_os("ACP_SKIP_INTEROP").is_some() {
        return None;
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/interop")
        .join(name);
    let marker = match name {
        "ts-agent" => {
            "../fixtures/interop/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js"
        }
        _ => "../fixtures/interop/.cache/agent_client_protocol-0.12.1/examples/echo_agent.py",
    };
    assert!(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(marker)
            .exists(),
        "interop peer {name} is not installed: run scripts/setup (or set ACP_SKIP_INTEROP=1)"
    );
    Some(AgentSpec::new(path.to_string_lossy().into_owned()))
}

async fn ts_turn(permission: PermissionHandler) -> (Vec<acp_host::Event>, acp_host::SessionView) {
    let spec = peer("ts-agent").expect("interop");
    let (evs, state) = ts_session(spec, permission, None).await;
    let pid = agent_pid(&evs);
    assert!(wait_gone(pid, Duration::from_secs(5)).await);
    (evs, state)
}

/// The TypeScript SDK example agent's turn (`spec`: the agent, or a replay of its recording),
/// recorded into `record` when given; the agent is shut down at the end.
pub(crate) async fn ts_session(
    spec: AgentSpec,
    permission: PermissionHandler,
    record: Option<PathBuf>,
) -> (Vec<acp_host::Event>, acp_host::SessionView) {
    let host = recording_host(permission, record);
    let mut events = host.events().unwrap();
    let agent = host.spawn(spec).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = tokio::time::timeout(T, session.prompt_text("hello"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let state = session.state();
    agent.shutdown().await;
    (evs, state)
}

/// A host answering with `permission`, recording into `record` when given.
fn recording_host(permission: PermissionHandler, record: Option<PathBuf>) -> Host {
    Host::new(HostConfig {
        permission,
        record: record.map(|file| acp_host::record::RecordConfig {
            file: Some(file),
            ..Default::default()
        }),
        ..HostConfig::default()
    })
}

pub(crate) fn allow_once_handler() -> PermissionHandler {
    PermissionHandler::Decider(Arc::new(|req: PermissionRequest| async move {
        Ok(req
            .option_of_kind("allow_once")
            .map(|o| o.option_id.clone()))
    }))
}

/// With `ACP_INTEROP_RECORDINGS_OUT=DIR` the interop agents' turns are recorded into `DIR`
/// (scripts/gen-recordings: fixtures/recordings/interop/, replayed by `interop_replay.rs`
/// without Node or Python).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_the_interop_agents_when_asked() {
    let Some(out) = std::env::var_os("ACP_INTEROP_RECORDINGS_OUT") else {
        return;
    };
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out).unwrap();
    let ts = peer("ts-agent").expect("the interop agents are needed to record them");
    for (name, permission) in [
        ("ts-sdk-allowed", allow_once_handler()),
        ("ts-sdk-denied", PermissionHandler::DenyAll),
    ] {
        let file = out.join(format!("{name}.acprec.jsonl"));
        let _ = std::fs::remove_file(&file);
        ts_session(ts.clone(), permission, Some(file)).await;
    }
    let file = out.join("python-sdk-echo.acprec.jsonl");
    let _ = std::fs::remove_file(&file);
    py_echo_session(peer("py-echo-agent").unwrap(), Some(file)).await;
}

/// The Python SDK echo agent's session (`spec`: the agent, or a replay of its recording): the
/// unsupported call refused locally, one turn; the chunks of the turn.
pub(crate) async fn py_echo_session(
    spec: AgentSpec,
    record: Option<PathBuf>,
) -> Vec<acp_host::Event> {
    let host = recording_host(PermissionHandler::DenyAll, record);
    let mut events = host.events().unwrap();
    let agent = host.spawn(spec).await.unwrap();
    // It advertises no capabilities at all: everything gated is refused locally.
    assert_eq!(
        agent.list_sessions(None, None).await.unwrap_err().kind(),
        "unsupported"
    );
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = tokio::time::timeout(T, session.prompt_text("hello from acp-host"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    agent.shutdown().await;
    evs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_example_agent_turn_denied() {
    if peer("ts-agent").is_none() {
        return;
    }
    let (evs, state) = ts_turn(PermissionHandler::DenyAll).await;
    assert_seq_strictly_increasing(&evs);
    let requested = of_kind(&evs, EventKind::PermissionRequested);
    assert_eq!(requested.len(), 1);
    let resolved = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        resolved[0].data_value()["outcome"],
        json!({"outcome":"selected","optionId":"reject"})
    );
    // Denied: the edit tool call never completes.
    let call2 = state.tool_call("call_2").cloned().unwrap();
    assert_eq!(call2["status"], "pending");
    assert_eq!(state.tool_call("call_1").unwrap()["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_example_agent_turn_allowed() {
    if peer("ts-agent").is_none() {
        return;
    }
    let allow = PermissionHandler::Decider(Arc::new(|req: PermissionRequest| async move {
        Ok(req
            .option_of_kind("allow_once")
            .map(|o| o.option_id.clone()))
    }));
    let (evs, state) = ts_turn(allow).await;
    let resolved = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        resolved[0].data_value()["outcome"],
        json!({"outcome":"selected","optionId":"allow"})
    );
    assert_eq!(resolved[0].data_value()["decidedBy"], "host");
    assert_eq!(state.tool_call("call_2").unwrap()["status"], "completed");
    let k = kinds(&evs);
    assert!(
        k.iter()
            .filter(|x| *x == "session_update:agent_message_chunk")
            .count()
            >= 2,
        "{k:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_echo_agent_turn() {
    let Some(spec) = peer("py-echo-agent") else {
        return;
    };
    let evs = py_echo_session(spec, None).await;
    let chunks: Vec<_> = evs
        .iter()
        .filter(|e| e.update_kind().as_deref() == Some("agent_message_chunk"))
        .collect();
    assert_eq!(chunks.len(), 1);
    let data = chunks[0].data_value();
    assert_eq!(data["content"]["text"], "hello from acp-host");
    assert_eq!(
        data["_meta"],
        json!({"echo": true}),
        "the update is forwarded exactly as sent"
    );
    let pid = agent_pid(&evs);
    assert!(wait_gone(pid, Duration::from_secs(5)).await);
}
