//! Happy paths against the mock agent: handshake, sessions, turns, ordered events, state.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use acp_host::{
    DecidedBy, Error, EventKind, Host, HostConfig, PermissionHandler, PermissionRequest,
    SessionOptions,
};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_turn_denied_by_default_policy_streams_ordered_events() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let info = agent.info().unwrap();
    assert_eq!(info.protocol_version, 1);
    assert_eq!(info.name(), Some("acp-mock-agent"));
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("hello").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    // The one result shape every face returns.
    let j = turn.to_json();
    let mut keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "raw",
            "stopReason",
            "text",
            "textTruncated",
            "thought",
            "turn",
            "usage"
        ]
    );
    assert_eq!(j["stopReason"], "end_turn");
    assert_eq!(j["raw"]["stopReason"], "end_turn");

    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_seq_strictly_increasing(&evs);
    let k = kinds(&evs);
    let pos = |name: &str| {
        k.iter()
            .position(|x| x == name)
            .unwrap_or_else(|| panic!("{name} missing in {k:?}"))
    };
    assert_eq!(k[0], "agent_ready");
    assert!(pos("session_opened") < pos("turn_started"));
    assert!(pos("turn_started") < pos("session_update:agent_message_chunk"));
    assert!(pos("session_update:tool_call") < pos("permission_requested"));
    assert!(pos("permission_requested") < pos("permission_resolved"));
    assert_eq!(k.last().unwrap(), "turn_ended");

    let resolved = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(resolved.len(), 1, "exactly one resolution");
    let data = resolved[0].data_value();
    assert_eq!(data["decidedBy"], "rule");
    assert_eq!(
        data["outcome"],
        json!({"outcome":"selected","optionId":"reject-once"})
    );
    // The agent saw the denial: the tool call failed.
    let state = session.state();
    assert_eq!(state.tool_calls.len(), 1);
    assert_eq!(state.tool_calls[0]["status"], "failed");
    assert_eq!(state.last_stop_reason.as_deref(), Some("end_turn"));
    assert!(state.usage.is_some());
    // Turn ids tag the turn's events.
    let ended = evs.last().unwrap();
    assert_eq!(ended.turn, Some(turn.turn));
    assert_eq!(ended.data_value()["stopReason"], "end_turn");
    assert!(
        evs.iter()
            .filter(|e| e.kind == EventKind::SessionUpdate)
            .all(|e| e.turn == Some(turn.turn))
    );

    let pid = agent_pid(&evs);
    let exit = agent.shutdown().await;
    assert_eq!(exit.code, Some(0), "mock exits 0 on stdin EOF");
    assert!(
        wait_gone(pid, Duration::from_secs(5)).await,
        "agent process left behind"
    );
    let rest = collect_until(&mut events, T, |e| e.kind == EventKind::AgentExited).await;
    let exited = rest.last().unwrap().data_value();
    assert_eq!(exited["reason"], "shutdown");
    assert!(kinds(&rest).contains(&"session_closed".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decider_allow_reaches_the_agent() {
    let host = Host::new(HostConfig {
        permission: allow_once(),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    session.prompt_text("go").await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let resolved = of_kind(&evs, EventKind::PermissionResolved)[0].data_value();
    assert_eq!(resolved["decidedBy"], "host");
    assert_eq!(resolved["optionKind"], "allow_once");
    assert_eq!(session.state().tool_calls[0]["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_update_kind_is_delivered_and_materialised() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("all-updates"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    session.prompt_text("all").await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let updates: Vec<String> = evs.iter().filter_map(|e| e.update_kind()).collect();
    for kind in [
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "future_kind",
    ] {
        assert!(
            updates.iter().any(|u| u == kind),
            "{kind} missing from {updates:?}"
        );
    }
    let st = session.state();
    assert!(st.plan.is_some());
    assert!(st.available_commands.is_some());
    assert!(st.title.is_some());
    assert!(st.usage.is_some());
    assert!(!st.tool_calls.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_before_the_session_new_response_follow_session_opened() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("early-updates"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let evs = drain(&mut events, Duration::from_millis(300)).await;
    let k = kinds(&evs);
    assert_eq!(
        k,
        vec![
            "agent_ready",
            "session_opened",
            "session_update:session_info_update",
            "session_update:available_commands_update",
            "session_update:current_mode_update"
        ]
    );
    assert!(
        evs[2..]
            .iter()
            .all(|e| e.session.as_deref() == Some(session.id()))
    );
    let st = session.state();
    assert_eq!(st.title.as_deref(), Some("Early bird"));
    assert_eq!(st.current_mode_id.as_deref(), Some("code"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_replays_history_tagged_as_replay() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("load-replay"))).await.unwrap();
    let session = agent
        .load_session("sess_old", SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let evs = drain(&mut events, Duration::from_millis(300)).await;
    let opened = evs
        .iter()
        .position(|e| e.kind == EventKind::SessionOpened)
        .unwrap();
    assert_eq!(evs[opened].data_value()["origin"], "load");
    let replayed: Vec<_> = evs
        .iter()
        .filter(|e| e.kind == EventKind::SessionUpdate)
        .collect();
    assert!(replayed.len() >= 4, "history replayed: {:?}", kinds(&evs));
    assert!(replayed.iter().all(|e| e.replay && e.seq > evs[opened].seq));
    assert!(!session.state().tool_calls.is_empty());
    // Live turns after the load are not replay.
    session.prompt_text("more").await.unwrap();
    let live = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert!(live.iter().all(|e| !e.replay));
    // Unknown id: the agent's error, and nothing left behind.
    let err = agent
        .load_session("nope", SessionOptions::new(tmp_cwd()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "agent_error", "{err}");
    assert!(agent.session("nope").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_resume_close_delete() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host
        .spawn(mock(Some("list-resume-close-delete")))
        .await
        .unwrap();
    let page = agent.list_sessions(None, None).await.unwrap();
    let first: Vec<String> = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(first.len(), 2);
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let page2 = agent.list_sessions(None, Some(&cursor)).await.unwrap();
    assert!(!page2["sessions"].as_array().unwrap().is_empty());

    let resumed = agent
        .resume_session(&first[0], SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    resumed.close().await.unwrap();
    assert!(!resumed.state().open);
    agent.delete_session(&first[1]).await.unwrap();
    let evs = drain(&mut events, Duration::from_millis(300)).await;
    let k = kinds(&evs);
    assert!(
        k.contains(&"session_opened".to_owned()) && k.contains(&"session_closed".to_owned()),
        "{k:?}"
    );
    assert!(
        evs.iter().all(|e| !e.replay),
        "resume must not be tagged replay"
    );
    let again = agent.list_sessions(None, None).await.unwrap();
    assert!(
        !again.to_string().contains(&format!("\"{}\"", first[1])),
        "deleted session still listed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capability_gating_fails_locally_and_sends_nothing() {
    let host = Host::new(HostConfig {
        wire_events: true,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("minimal"))).await.unwrap();
    assert!(agent.info().unwrap().agent_info.is_null());
    for err in [
        agent
            .load_session("x", SessionOptions::new(tmp_cwd()))
            .await
            .unwrap_err(),
        agent
            .resume_session("x", SessionOptions::new(tmp_cwd()))
            .await
            .unwrap_err(),
        agent.list_sessions(None, None).await.unwrap_err(),
        agent.close_session("x").await.unwrap_err(),
        agent.delete_session("x").await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), "unsupported", "{err}");
    }
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let img = json!({"type":"image","data":"AAAA","mimeType":"image/png"});
    let err = session.prompt(vec![img]).await.unwrap_err();
    assert_eq!(err.kind(), "unsupported");
    assert_eq!(
        session.set_mode("code").await.unwrap_err().kind(),
        "unsupported"
    );
    let err = agent
        .new_session(SessionOptions::new("relative/dir"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_argument");
    let evs = drain(&mut events, Duration::from_millis(200)).await;
    let sent: Vec<String> = evs
        .iter()
        .filter(|e| e.kind == EventKind::Wire && e.data_value()["direction"] == "out")
        .filter_map(|e| {
            e.data_value()["message"]["method"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(
        sent,
        vec!["initialize", "session/new"],
        "gated calls must not reach the wire"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_required_until_authenticate() {
    let host = Host::new(HostConfig::default());
    let agent = host.spawn(mock(Some("auth-required"))).await.unwrap();
    let err = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AuthRequired { .. }), "{err:?}");
    assert_eq!(
        agent.authenticate("nope").await.unwrap_err().kind(),
        "invalid_argument"
    );
    assert_eq!(
        agent
            .authenticate("mock-terminal")
            .await
            .unwrap_err()
            .kind(),
        "unsupported"
    );
    agent.authenticate("mock-login").await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert_eq!(
        session.prompt_text("hi").await.unwrap().stop_reason,
        "end_turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_and_config_options() {
    let host = Host::new(HostConfig::default());
    let agent = host.spawn(mock(Some("modes-config"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let st = session.state();
    let modes = st.modes.clone().expect("modes");
    let other = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .find(|m| Some(m.as_str()) != st.current_mode_id.as_deref())
        .unwrap();
    session.set_mode(&other).await.unwrap();
    assert_eq!(
        session.state().current_mode_id.as_deref(),
        Some(other.as_str())
    );
    assert_eq!(
        session.set_mode("no-such-mode").await.unwrap_err().kind(),
        "invalid_argument"
    );

    let opts = st.config_options.clone().expect("config options");
    let select = opts
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "select")
        .unwrap()
        .clone();
    let values: Vec<Value> = select["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o.get("value").cloned())
        .collect();
    let target = values
        .iter()
        .find(|v| **v != select["currentValue"])
        .unwrap()
        .clone();
    let updated = session
        .set_config_option(select["id"].as_str().unwrap(), target.clone())
        .await
        .unwrap();
    let now = updated
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == select["id"])
        .unwrap();
    assert_eq!(now["currentValue"], target);
    assert_eq!(session.state().config_options.unwrap(), updated);
    assert_eq!(
        session
            .set_config_option("nope", json!(1))
            .await
            .unwrap_err()
            .kind(),
        "invalid_argument"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn string_request_ids_are_echoed() {
    let host = Host::new(HostConfig {
        permission: allow_once(),
        wire_events: true,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("string-ids"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    session.prompt_text("x").await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let out_ids: Vec<Value> = evs
        .iter()
        .filter(|e| e.kind == EventKind::Wire && e.data_value()["direction"] == "out")
        .map(|e| e.data_value()["message"].clone())
        .filter(|m| m.get("method").is_none())
        .map(|m| m["id"].clone())
        .collect();
    assert!(out_ids.contains(&json!("perm-1")), "{out_ids:?}");
    assert!(
        out_ids.iter().all(|id| id.is_string()),
        "string ids must stay strings: {out_ids:?}"
    );
    assert!(of_kind(&evs, EventKind::ProtocolError).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_notifications_become_events_and_ext_requests_get_method_not_found() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("ext-notification"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    session.prompt_text("x").await.unwrap();
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let ext = of_kind(&evs, EventKind::ExtNotification);
    let methods: Vec<Value> = ext
        .iter()
        .map(|e| e.data_value()["method"].clone())
        .collect();
    assert_eq!(
        methods,
        vec![json!("_vendor/foo"), json!("_vendor/no_params")]
    );
    assert_eq!(
        ext[0].data_value()["params"]["nested"],
        json!({"list": [1, 2, 3]})
    );
    assert_eq!(ext[0].session.as_deref(), Some(session.id()));
    // The mock reports the answer it got for `_vendor/ask` in a chunk.
    let text: String = evs
        .iter()
        .filter(|e| e.update_kind().as_deref() == Some("agent_message_chunk"))
        .map(|e| {
            e.data_value()["content"]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert!(text.contains("-32601"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_turn_cancelled_and_answers_pending_permissions_cancelled() {
    let host = Host::new(HostConfig {
        permission: PermissionHandler::Manual,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host
        .spawn(mock(Some("cancel-pending-permission")))
        .await
        .unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("x").await });
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionRequested).await;
    let request_id = evs.last().unwrap().data_value()["requestId"]
        .as_u64()
        .unwrap();
    session.cancel().await.unwrap();
    let result = turn.await.unwrap().unwrap();
    assert_eq!(result.stop_reason, "cancelled");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let resolved = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].data_value()["decidedBy"], "cancelled");
    assert_eq!(
        resolved[0].data_value()["outcome"],
        json!({"outcome":"cancelled"})
    );
    // A late answer from the host is an error and changes nothing.
    let err = host
        .respond_permission(request_id, Some("allow-once".into()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "already_resolved");
    assert!(
        drain(&mut events, Duration::from_millis(200))
            .await
            .iter()
            .all(|e| e.kind != EventKind::PermissionResolved)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_permission_answered_through_respond_permission() {
    let host = Host::new(HostConfig {
        permission: PermissionHandler::Manual,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let turn = tokio::spawn(async move { s2.prompt_text("x").await });
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::PermissionRequested).await;
    let req = evs.last().unwrap().data_value();
    assert_eq!(req["toolCall"]["title"], "Write notes.txt");
    let id = req["requestId"].as_u64().unwrap();
    // An option that was not offered denies (and says so).
    let err = host
        .respond_permission(id, Some("yolo".into()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_argument");
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let resolved = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].data_value()["decidedBy"], "invalid_answer");
    assert_eq!(session.state().tool_calls[0]["status"], "failed");
    assert_eq!(
        host.respond_permission(987_654, None)
            .await
            .unwrap_err()
            .kind(),
        "not_found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_timeout_denies() {
    let host = Host::new(HostConfig {
        permission: PermissionHandler::Manual,
        permission_timeout: Duration::from_millis(200),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert_eq!(
        session.prompt_text("x").await.unwrap().stop_reason,
        "end_turn"
    );
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let resolved = of_kind(&evs, EventKind::PermissionResolved);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].data_value()["decidedBy"], "timeout");
    assert_eq!(session.state().tool_calls[0]["status"], "failed");
    let _ = DecidedBy::Timeout;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_or_panicking_decider_denies() {
    for panics in [false, true] {
        let decider =
            PermissionHandler::Decider(Arc::new(move |_req: PermissionRequest| async move {
                if panics {
                    panic!("decider bug");
                }
                Err::<Option<String>, String>("no UI".into())
            }));
        let host = Host::new(HostConfig {
            permission: decider,
            ..HostConfig::default()
        });
        let mut events = host.events().unwrap();
        let agent = host.spawn(mock(None)).await.unwrap();
        let session = agent
            .new_session(SessionOptions::new(tmp_cwd()))
            .await
            .unwrap();
        assert_eq!(
            session.prompt_text("x").await.unwrap().stop_reason,
            "end_turn"
        );
        let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
        let resolved = of_kind(&evs, EventKind::PermissionResolved);
        assert_eq!(resolved.len(), 1);
        assert_eq!(resolved[0].data_value()["decidedBy"], "invalid_answer");
        assert_eq!(session.state().tool_calls[0]["status"], "failed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_prompt_while_busy_is_refused() {
    let host = Host::new(HostConfig::default());
    let agent = host.spawn(mock(Some("wait-for-cancel"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let s2 = session.clone();
    let first = tokio::spawn(async move { s2.prompt_text("1").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(session.prompt_text("2").await.unwrap_err().kind(), "busy");
    session.cancel().await.unwrap();
    assert_eq!(first.await.unwrap().unwrap().stop_reason, "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decider_is_told_when_its_request_was_settled_elsewhere() {
    let (seen_tx, seen_rx) = tokio::sync::oneshot::channel::<u64>();
    let seen_tx = Arc::new(std::sync::Mutex::new(Some(seen_tx)));
    let decider = PermissionHandler::Decider(Arc::new(move |req: PermissionRequest| {
        let seen_tx = seen_tx.clone();
        async move {
            let mut settled = req.settled.clone();
            let id = req.request_id;
            // A UI would dismiss its prompt here; the decider itself never answers.
            tokio::spawn(async move {
                settled.wait().await;
                if let Some(tx) = seen_tx.lock().unwrap().take() {
                    let _ = tx.send(id);
                }
            });
            std::future::pending::<Result<Option<String>, String>>().await
        }
    }));
    let host = Host::new(HostConfig {
        permission: decider,
        permission_timeout: Duration::from_millis(200),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert_eq!(
        session.prompt_text("x").await.unwrap().stop_reason,
        "end_turn"
    );
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    let resolved = of_kind(&evs, EventKind::PermissionResolved)[0].data_value();
    assert_eq!(resolved["decidedBy"], "timeout");
    let id = tokio::time::timeout(T, seen_rx).await.unwrap().unwrap();
    assert_eq!(Some(id), resolved["requestId"].as_u64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_prompt_future_cancels_the_turn_on_the_wire() {
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("wait-for-cancel"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    // The caller gives up after 300 ms (e.g. Ctrl-C in a script): the future is dropped.
    let gave_up = tokio::time::timeout(Duration::from_millis(300), session.prompt_text("x")).await;
    assert!(gave_up.is_err());
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert_eq!(evs.last().unwrap().data_value()["stopReason"], "cancelled");
    // The session is free for the next turn.
    assert!(session.state().active_turn.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_is_refused_locally_without_the_opt_in() {
    let host = Host::new(HostConfig {
        wire_events: true,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let original = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let err = agent
        .fork_session(original.id(), SessionOptions::new(tmp_cwd()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "unsupported");
    assert!(err.to_string().contains("unstable"), "{err}");
    let evs = drain(&mut events, Duration::from_millis(200)).await;
    let sent_fork = of_kind(&evs, EventKind::Wire)
        .iter()
        .any(|e| e.data_value()["message"]["method"] == "session/fork");
    assert!(!sent_fork, "nothing may be sent without the opt-in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_opens_a_new_session_with_its_own_id() {
    let host = Host::new(HostConfig {
        unstable: vec!["session/fork".into()],
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let original = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let fork = agent
        .fork_session(original.id(), SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert_ne!(fork.id(), original.id());
    let evs = drain(&mut events, Duration::from_millis(200)).await;
    let opened: Vec<Value> = of_kind(&evs, EventKind::SessionOpened)
        .iter()
        .map(|e| e.data_value())
        .collect();
    assert_eq!(opened.len(), 2);
    assert_eq!(opened[1]["origin"], "fork");
    assert_eq!(opened[1]["sessionId"], fork.id());
    // Gated like everything else.
    let minimal = host.spawn(mock(Some("minimal"))).await.unwrap();
    let s = minimal
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    assert_eq!(
        minimal
            .fork_session(s.id(), SessionOptions::new(tmp_cwd()))
            .await
            .unwrap_err()
            .kind(),
        "unsupported"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_returns_only_after_its_events_are_in_the_stream() {
    let host = Host::new(HostConfig::default());
    let events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let ready: Vec<String> = std::iter::from_fn(|| events.try_next())
        .map(|e| describe(&e))
        .collect();
    assert_eq!(
        ready,
        vec!["agent_ready"],
        "spawn returned before agent_ready was queued"
    );
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let opened: Vec<String> = std::iter::from_fn(|| events.try_next())
        .map(|e| describe(&e))
        .collect();
    assert_eq!(opened, vec!["session_opened"]);
    for _ in 0..5 {
        session.prompt_text("x").await.unwrap();
        // Without waiting: everything of the turn, turn_ended last, is already there.
        let turn: Vec<String> = std::iter::from_fn(|| events.try_next())
            .map(|e| describe(&e))
            .collect();
        assert_eq!(
            turn.last().map(String::as_str),
            Some("turn_ended"),
            "{turn:?}"
        );
    }
    agent.shutdown().await;
    let end: Vec<String> = std::iter::from_fn(|| events.try_next())
        .map(|e| describe(&e))
        .collect();
    assert_eq!(
        end.last().map(String::as_str),
        Some("agent_exited"),
        "{end:?}"
    );
}

/// A decider whose `decide` itself panics (before returning a future).
struct PanicsAtOnce;

impl acp_host::PermissionDecider for PanicsAtOnce {
    fn decide(&self, _request: PermissionRequest) -> acp_host::permission::DecisionFuture {
        panic!("bug in the embedder's decide()");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decider_panicking_synchronously_denies_and_the_host_survives() {
    let host = Host::new(HostConfig {
        permission: PermissionHandler::Decider(Arc::new(PanicsAtOnce)),
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(None)).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    for _ in 0..2 {
        assert_eq!(
            session.prompt_text("x").await.unwrap().stop_reason,
            "end_turn"
        );
        let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
        let resolved = of_kind(&evs, EventKind::PermissionResolved);
        assert_eq!(resolved.len(), 1);
        assert_eq!(resolved[0].data_value()["decidedBy"], "invalid_answer");
    }
    assert_eq!(session.state().tool_calls[0]["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_result_carries_the_assembled_text_and_thoughts() {
    let host = Host::new(HostConfig::default());
    let agent = host.spawn(mock(Some("all-updates"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let turn = session.prompt_text("all").await.unwrap();
    // What the events carried, assembled: every agent_message_chunk text, and the thoughts apart.
    assert_eq!(turn.text, "Here comes every update kind. Done.");
    assert_eq!(turn.thought, "Let me think about every update kind.");
    assert!(!turn.text_truncated);
    // A second turn starts from nothing.
    let again = session.prompt_text("all").await.unwrap();
    assert_eq!(again.text, turn.text);
    agent.shutdown().await;
}
