//! The unstable session methods besides fork (`session/status`, `session/set_title`,
//! `session/archive` / `session/unarchive`, `session/options`): opt-in, gated on the agent's
//! capabilities, typed results, the agent's errors passed through, malformed answers refused,
//! the session view kept in step (a new title; an archived session closed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{Agent, Event, EventKind, Host, HostConfig, SessionOptions};
use common::*;
use serde_json::{Value, json};

const ALL: [&str; 5] = [
    "session/status",
    "session/set_title",
    "session/archive",
    "session/unarchive",
    "session/options",
];

fn opted_in() -> HostConfig {
    HostConfig {
        unstable: ALL.iter().map(|m| (*m).to_owned()).collect(),
        wire_events: true,
        ..HostConfig::default()
    }
}

/// Each of the five calls on `sid`, as `(method, Result<json, kind>)`.
async fn call_all(agent: &Agent, sid: &str) -> Vec<(&'static str, Result<Value, String>)> {
    let kind = |e: acp_host::Error| e.kind().to_owned();
    vec![
        (
            "session/status",
            agent
                .session_status(sid)
                .await
                .map(|s| serde_json::to_value(s).unwrap())
                .map_err(kind),
        ),
        (
            "session/set_title",
            agent
                .set_session_title(sid, "t")
                .await
                .map(Value::from)
                .map_err(kind),
        ),
        (
            "session/archive",
            agent
                .archive_session(sid)
                .await
                .map(|()| json!({}))
                .map_err(kind),
        ),
        (
            "session/unarchive",
            agent
                .unarchive_session(sid)
                .await
                .map(|()| json!({}))
                .map_err(kind),
        ),
        (
            "session/options",
            agent
                .session_options(&SessionOptions::new(tmp_cwd()), Some(sid))
                .await
                .map(|d| serde_json::to_value(d).unwrap())
                .map_err(kind),
        ),
    ]
}

fn sent(evs: &[Event], method: &str) -> bool {
    of_kind(evs, EventKind::Wire)
        .iter()
        .any(|e| e.data_value()["message"]["method"] == method)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_opt_in_or_the_capability_nothing_is_sent() {
    // Advertised by the agent, not opted into by the host.
    let host = Host::new(HostConfig {
        wire_events: true,
        ..HostConfig::default()
    });
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("unstable-sessions"))).await.unwrap();
    for (method, got) in call_all(&agent, "sess_stored").await {
        assert_eq!(got, Err("unsupported".to_owned()), "{method}");
    }
    let err = agent.session_status("sess_stored").await.unwrap_err();
    assert!(
        err.to_string().contains("unstable: [\"session/status\"]"),
        "{err}"
    );
    // Opted in, not advertised (the default mock advertises none of them).
    let host2 = Host::new(opted_in());
    let mut events2 = host2.events().unwrap();
    let plain = host2.spawn(mock(None)).await.unwrap();
    for (method, got) in call_all(&plain, "sess_1").await {
        assert_eq!(got, Err("unsupported".to_owned()), "{method}");
    }
    let err = plain
        .session_options(&SessionOptions::new(tmp_cwd()), None)
        .await;
    assert_eq!(err.unwrap_err().kind(), "unsupported");
    let err = plain.set_session_title("sess_1", "x").await.unwrap_err();
    assert!(
        err.to_string().contains("sessionCapabilities.title"),
        "{err}"
    );
    let evs = drain(&mut events, Duration::from_millis(200)).await;
    let evs2 = drain(&mut events2, Duration::from_millis(200)).await;
    for m in ALL {
        assert!(!sent(&evs, m) && !sent(&evs2, m), "{m} was sent");
    }
    // An unknown name in `unstable` is a configuration error.
    assert!(acp_host::protocol::methods::check_opt_in(&["session/nope".into()]).is_err());
    assert!(acp_host::protocol::methods::check_opt_in(&ALL.map(String::from)).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_title_archive_and_options_against_the_mock() {
    let host = Host::new(opted_in());
    let mut events = host.events().unwrap();
    let agent = host.spawn(mock(Some("unstable-sessions"))).await.unwrap();
    let session = agent
        .new_session(SessionOptions::new(tmp_cwd()))
        .await
        .unwrap();
    let sid = session.id().to_owned();

    // session/status: open for the live session, saved for the stored one.
    let st = agent.session_status(&sid).await.unwrap();
    assert_eq!((st.status.as_str(), st.is_open()), ("open", true));
    let st = agent.session_status("sess_stored").await.unwrap();
    assert_eq!(
        serde_json::to_value(&st).unwrap(),
        json!({"status": "saved", "reported": "saved"})
    );
    // A status the host does not know is `saved` (the spec), the agent's value kept.
    let st = agent.session_status("_mock_custom_status").await.unwrap();
    assert_eq!(
        (st.status.as_str(), st.reported.as_str()),
        ("saved", "_hibernating")
    );

    // session/set_title: the stored (normalised) title is returned and becomes the view's.
    assert_eq!(session.state().title, None);
    let stored = agent
        .set_session_title(&sid, "  Release notes  ")
        .await
        .unwrap();
    assert_eq!(stored, "Release notes");
    assert_eq!(session.state().title.as_deref(), Some("Release notes"));
    let listed = agent.list_sessions(None, None).await.unwrap();
    let mine = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == sid.as_str())
        .unwrap()
        .clone();
    assert_eq!(mine["title"], "Release notes");
    assert_eq!(mine["archived"], false);
    // A session not open here can be retitled too.
    assert_eq!(
        agent.set_session_title("sess_stored", "Old").await.unwrap(),
        "Old"
    );

    // session/options: what a new session would start with, nothing created.
    let defaults = agent
        .session_options(&SessionOptions::new(tmp_cwd()), None)
        .await
        .unwrap();
    assert_eq!(defaults.modes.as_ref().unwrap()["currentModeId"], "ask");
    assert!(!defaults.config_options.as_ref().unwrap().is_empty());
    assert_eq!(
        serde_json::to_value(&defaults).unwrap()["configOptions"],
        json!(defaults.config_options)
    );
    let evs = drain(&mut events, Duration::from_millis(200)).await;
    assert!(
        of_kind(&evs, EventKind::SessionOpened).len() == 1,
        "options opened nothing"
    );
    let wire: Vec<Value> = of_kind(&evs, EventKind::Wire)
        .iter()
        .map(|e| e.data_value()["message"].clone())
        .filter(|m| m["method"] == "session/options")
        .collect();
    assert_eq!(wire.len(), 1);
    assert_eq!(
        wire[0]["params"],
        json!({"cwd": tmp_cwd()}),
        "no mcpServers, no sessionId"
    );
    let of_session = agent
        .session_options(&SessionOptions::new(tmp_cwd()), Some(&sid))
        .await
        .unwrap();
    assert_eq!(of_session.modes, session.state().modes);

    // session/archive closes the open session here too, and hides it from the list.
    agent.archive_session(&sid).await.unwrap();
    let evs = collect_until(&mut events, Duration::from_secs(10), |e| {
        e.kind == EventKind::SessionClosed
    })
    .await;
    let closed = evs.last().unwrap();
    assert_eq!(closed.data_value()["reason"], "archived");
    assert_eq!(closed.session.as_deref(), Some(sid.as_str()));
    assert!(!session.state().open);
    assert_eq!(agent.session_status(&sid).await.unwrap().status, "saved");
    let listed = agent.list_sessions(None, None).await.unwrap();
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["sessionId"] != sid.as_str()),
        "{listed}"
    );
    // Archiving again succeeds; unarchiving brings it back without opening it.
    agent.archive_session(&sid).await.unwrap();
    agent.unarchive_session(&sid).await.unwrap();
    let listed = agent.list_sessions(None, None).await.unwrap();
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == sid.as_str() && s["archived"] == false)
    );
    assert!(agent.session(&sid).is_none(), "unarchive never reopens");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_errors_pass_through_and_malformed_answers_are_protocol_errors() {
    let host = Host::new(opted_in());
    let agent = host.spawn(mock(Some("unstable-sessions"))).await.unwrap();
    // Unknown session: the agent's -32002, as every other call reports it.
    for (method, got) in call_all(&agent, "sess_nope").await {
        assert_eq!(got, Err("agent_error".to_owned()), "{method}");
    }
    let err = agent.session_status("sess_nope").await.unwrap_err();
    assert_eq!(err.data()["code"], -32002, "{err}");
    // The agent's validation: an empty title after trimming is -32602.
    let err = agent
        .set_session_title("sess_stored", "   ")
        .await
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.data()["code"].clone()),
        ("agent_error", json!(-32602))
    );
    // Results of the wrong shape: a typed `protocol` error, never a panic or a guess.
    for (method, got) in call_all(&agent, "_mock_malformed").await {
        match method {
            // `{}` is all an archive answer has to be; the mock's `[]` / `"yes"` are not read.
            "session/archive" | "session/unarchive" => assert!(got.is_ok(), "{method}: {got:?}"),
            _ => assert_eq!(got, Err("protocol".to_owned()), "{method}"),
        }
    }
    // Local argument checks come first: a relative cwd is refused, nothing sent.
    let err = agent
        .session_options(&SessionOptions::new("relative/dir"), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_argument");
    assert_eq!(err.data()["path"], "cwd");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_for_an_existing_session_needs_load_or_resume() {
    let host = Host::new(opted_in());
    let mut events = host.events().unwrap();
    let (agent, mut fake) =
        fake::connect_with_caps(&host, json!({"sessionCapabilities": {"options": {}}})).await;
    let err = agent
        .session_options(&SessionOptions::new(tmp_cwd()), Some("s1"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "unsupported");
    assert!(err.to_string().contains("loadSession"), "{err}");
    // Without a session id it is sent; `configOptions: null` and no `modes` are fine.
    let a = agent.clone();
    let call = tokio::spawn(async move {
        a.session_options(&SessionOptions::new(tmp_cwd()), None)
            .await
    });
    let req = fake
        .wait_method("session/options", Duration::from_secs(5))
        .await;
    fake.respond(&req["id"], json!({"configOptions": null}))
        .await;
    let d = call.await.unwrap().unwrap();
    assert_eq!((d.modes, d.config_options), (None, None));
    // An answer that is not an object is a protocol error.
    let a = agent.clone();
    let call = tokio::spawn(async move {
        a.session_options(&SessionOptions::new(tmp_cwd()), None)
            .await
    });
    let req = fake
        .wait_method("session/options", Duration::from_secs(5))
        .await;
    fake.respond(&req["id"], json!(null)).await;
    assert_eq!(call.await.unwrap().unwrap_err().kind(), "protocol");
    let _ = drain(&mut events, Duration::from_millis(50)).await;
}
