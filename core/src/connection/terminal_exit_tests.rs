//! `terminal_exited` comes before any answer that tells the agent the command exited, however
//! late the exit watcher runs (it is held back here): an agent that ends its turn on learning
//! the exit must not end the host's event stream's turn before the exit is reported.

use std::sync::LazyLock;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;

use crate::{EventKind, Host, HostConfig, PermissionHandler, PermissionRequest, SessionOptions};

/// While true, every exit watcher waits after seeing its exit (the race the fix closes).
pub(super) static WATCHERS_HELD: LazyLock<watch::Sender<bool>> =
    LazyLock::new(|| watch::Sender::new(false));

const T: Duration = Duration::from_secs(30);

/// An in-memory agent: on `session/prompt` it runs a command that exits at once, asks how it
/// ended with `method` (`terminal/wait_for_exit`, or `terminal/output` until `exitStatus`), then
/// ends the turn.
fn agent(method: &'static str) -> tokio::io::DuplexStream {
    let (client, agent) = tokio::io::duplex(64 * 1024);
    let (read, mut write) = tokio::io::split(agent);
    tokio::spawn(async move {
        let mut lines = BufReader::new(read).lines();
        let mut send = async |msg: Value| {
            let _ = write.write_all(format!("{msg}\n").as_bytes()).await;
        };
        let exe = std::env::current_exe().unwrap();
        let (mut prompt, mut next) = (Value::Null, 100);
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: Value = serde_json::from_str(&line).unwrap();
            let result = |r: Value| json!({"jsonrpc":"2.0","id":msg["id"],"result":r});
            let request =
                |id: i64, m: &str, p: Value| json!({"jsonrpc":"2.0","id":id,"method":m,"params":p});
            match msg["method"].as_str() {
                Some("initialize") => send(result(json!({"protocolVersion":1}))).await,
                Some("session/new") => send(result(json!({"sessionId":"s1"}))).await,
                Some("session/prompt") => {
                    prompt = msg["id"].clone();
                    // The test binary itself: it lists its tests and exits, on every OS.
                    let create = json!({"sessionId":"s1","command":exe,"args":["--list"]});
                    send(request(1, "terminal/create", create)).await;
                }
                _ if msg["id"] == 1 => {
                    let tid = msg["result"]["terminalId"].clone();
                    send(request(
                        next,
                        method,
                        json!({"sessionId":"s1","terminalId":tid}),
                    ))
                    .await;
                }
                _ if msg["id"] == next => {
                    let done = method == "terminal/wait_for_exit"
                        || !msg["result"]["exitStatus"].is_null();
                    if done {
                        send(
                            json!({"jsonrpc":"2.0","id":prompt,"result":{"stopReason":"end_turn"}}),
                        )
                        .await;
                    } else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        next += 1;
                        let tid = json!("term_1");
                        send(request(
                            next,
                            method,
                            json!({"sessionId":"s1","terminalId":tid}),
                        ))
                        .await;
                    }
                }
                _ => {}
            }
        }
    });
    client
}

async fn exit_reported_before_the_turn_ends(method: &'static str) {
    WATCHERS_HELD.send_replace(true);
    let host = Host::new(HostConfig {
        permission: PermissionHandler::Decider(std::sync::Arc::new(
            |req: PermissionRequest| async move {
                Ok(req
                    .option_of_kind("allow_once")
                    .map(|o| o.option_id.clone()))
            },
        )),
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    let client = agent(method);
    let (r, w) = tokio::io::split(client);
    let agent = host.connect(r, w).await.unwrap();
    let cwd = std::env::temp_dir().to_string_lossy().into_owned();
    let session = agent.new_session(SessionOptions::new(cwd)).await.unwrap();
    let turn = tokio::time::timeout(T, session.prompt_text("go")).await;
    assert_eq!(turn.unwrap().unwrap().stop_reason, "end_turn");
    let mut kinds = Vec::new();
    loop {
        let ev = tokio::time::timeout(T, events.next())
            .await
            .unwrap()
            .unwrap();
        kinds.push(ev.kind);
        if ev.kind == EventKind::TurnEnded {
            break;
        }
    }
    let exited = kinds.iter().position(|k| *k == EventKind::TerminalExited);
    assert!(
        exited.is_some(),
        "terminal_exited before turn_ended: {kinds:?}"
    );
    // The watcher, let go, reports nothing more: one `terminal_exited` per terminal.
    WATCHERS_HELD.send_replace(false);
    tokio::time::sleep(Duration::from_millis(200)).await;
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_millis(100), events.next()).await {
        assert_ne!(ev.kind, EventKind::TerminalExited, "reported twice");
    }
}

// One test: the hold is process-wide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_exited_precedes_the_answer_that_reveals_the_exit() {
    exit_reported_before_the_turn_ends("terminal/wait_for_exit").await;
    exit_reported_before_the_turn_ends("terminal/output").await;
}
