//! `Host::connect` over a stream the embedder opened: the mock agent on a loopback TCP socket
//! (`--connect`; the test listens, never the library). Every guarantee but process containment
//! holds: the handshake, ordered events, a turn, and a typed end when the peer goes away.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use acp_host::{EventKind, Host, HostConfig, SessionOptions};
use common::{collect_until, mock_agent};

const T: Duration = Duration::from_secs(30);

/// The mock agent connected to a fresh loopback listener, and the accepted socket.
async fn agent_on_a_socket(args: &[&str]) -> (tokio::net::TcpStream, std::process::Child) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let child = std::process::Command::new(mock_agent())
        .args(["--connect", &addr])
        .args(args)
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (socket, _) = tokio::time::timeout(T, listener.accept())
        .await
        .unwrap()
        .unwrap();
    (socket, child)
}

#[tokio::test]
async fn a_turn_over_a_tcp_socket() {
    let (socket, mut child) = agent_on_a_socket(&[]).await;
    let host = Host::new(HostConfig::default());
    let mut events = host.events().unwrap();
    let (r, w) = socket.into_split();
    let agent = host.connect(r, w).await.unwrap();
    assert_eq!(agent.info().unwrap().name(), Some("acp-mock-agent"));
    let dir = tempfile::tempdir().unwrap();
    let session = agent
        .new_session(SessionOptions::new(dir.path().to_str().unwrap()))
        .await
        .unwrap();
    let turn = session.prompt_text("hello").await.unwrap();
    assert_eq!(turn.stop_reason, "end_turn");
    let evs = collect_until(&mut events, T, |e| e.kind == EventKind::TurnEnded).await;
    assert!(evs.iter().any(|e| e.kind == EventKind::SessionUpdate));
    host.shutdown().await;
    // Closing our end is all a connected agent gets: it sees EOF and leaves.
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn a_peer_that_goes_away_fails_the_turn_at_once() {
    let (socket, mut child) = agent_on_a_socket(&["--scenario", "hang"]).await;
    let host = Host::new(HostConfig::default());
    let (r, w) = socket.into_split();
    let agent = host.connect(r, w).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = agent
        .new_session(SessionOptions::new(dir.path().to_str().unwrap()))
        .await
        .unwrap();
    let turn = tokio::spawn(async move { session.prompt_text("hang").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    child.kill().unwrap();
    let _ = child.wait();
    let r = tokio::time::timeout(T, turn)
        .await
        .expect("no hang")
        .unwrap();
    let e = r.expect_err("the peer is gone");
    assert_eq!(e.kind(), "agent_exited", "{e}");
    host.shutdown().await;
}
