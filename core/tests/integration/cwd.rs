//! Working directories are checked before they are used: an agent spec's `cwd` before the
//! process is spawned (`invalid_config`, `data.path` `cwd`: not a `spawn_failed` that blames the
//! command), a session's `cwd` before `session/new` is sent (`invalid_argument`, `data.path`
//! `cwd`). Either way the message names the directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{Host, HostConfig, SessionOptions};
use common::{fake, mock};
use serde_json::json;

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cwd_that_does_not_exist_is_invalid_config_naming_it() {
    let host = Host::new(HostConfig::default());
    let events = host.events().unwrap();
    let dir = scratch();
    let missing = dir.path().join("no-such-dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    for (cwd, why) in [(&missing, "does not exist"), (&file, "is not a directory")] {
        let err = host.spawn(mock(None).cwd(cwd)).await.unwrap_err();
        assert_eq!(err.kind(), "invalid_config", "{err}");
        assert_eq!(err.data(), json!({ "path": "cwd" }));
        let msg = err.to_string();
        assert!(msg.contains(&*cwd.to_string_lossy()), "{msg}");
        assert!(msg.contains(why), "{msg}");
        assert!(!msg.contains("could not start agent"), "{msg}");
    }
    // Nothing was started: no agent, no event.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(events.try_next().is_none());
    // An existing directory works.
    let agent = host.spawn(mock(None).cwd(dir.path())).await.unwrap();
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cwd_that_is_not_an_existing_directory_is_invalid_argument_and_not_sent() {
    let host = Host::new(HostConfig::default());
    let (agent, mut fake) = fake::connect(&host).await;
    let dir = scratch();
    let missing = dir.path().join("gone");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    for (cwd, why) in [
        (missing.to_string_lossy().into_owned(), "does not exist"),
        (file.to_string_lossy().into_owned(), "is not a directory"),
        ("relative/dir".to_owned(), "absolute"),
    ] {
        let err = agent
            .new_session(SessionOptions::new(&cwd))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "invalid_argument", "{err}");
        assert_eq!(err.data(), json!({ "path": "cwd" }));
        let msg = err.to_string();
        assert!(msg.contains(&cwd) && msg.contains(why), "{msg}");
        let err = agent
            .load_session("s-old", SessionOptions::new(&cwd))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "invalid_argument", "{err}");
    }
    let sent = fake.recv_for(Duration::from_millis(200)).await;
    assert!(sent.is_empty(), "nothing reaches the agent: {sent:?}");
    // An existing directory is sent as given.
    let session = fake::open_session(&agent, &mut fake, "s1", &dir.path().to_string_lossy()).await;
    assert_eq!(session.id(), "s1");
    agent.shutdown().await;
}
