//! A scripted fake agent over in-memory pipes (`Host::connect`), for tests that need exact
//! control of what the agent sends and when.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use acp_host::{Agent, Host};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// The agent's side of the connection.
pub struct Fake {
    /// What the host wrote, line by line. Set it to `None` to stop reading (the host's writes
    /// then fail with a broken pipe).
    pub from_host: Option<tokio::io::Lines<BufReader<DuplexStream>>>,
    pub to_host: DuplexStream,
}

impl Fake {
    pub async fn send(&mut self, msg: Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.to_host.write_all(line.as_bytes()).await.unwrap();
        self.to_host.flush().await.unwrap();
    }

    /// The next message from the host (bounded wait).
    pub async fn recv(&mut self, within: Duration) -> Option<Value> {
        let lines = self.from_host.as_mut()?;
        match tokio::time::timeout(within, lines.next_line()).await {
            Ok(Ok(Some(line))) => Some(serde_json::from_str(&line).unwrap()),
            Ok(_) => None,
            Err(_) => panic!("the host sent nothing for {within:?}"),
        }
    }

    /// Skip messages until one with `method` arrives; returns it.
    pub async fn expect(&mut self, method: &str) -> Value {
        loop {
            let msg = self
                .recv(Duration::from_secs(5))
                .await
                .unwrap_or_else(|| panic!("stream ended waiting for {method}"));
            if msg["method"] == method {
                return msg;
            }
        }
    }

    /// Answer the host's request `req` with `result`.
    pub async fn answer(&mut self, req: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": result}))
            .await;
    }

    /// Open a session: wait for `session/new`, answer it with `id`.
    pub async fn open_session(&mut self, id: &str) {
        let req = self.expect("session/new").await;
        self.answer(&req, json!({ "sessionId": id })).await;
    }
}

/// Connect `host` to a fake agent and complete the handshake. `buffer` is the pipe size.
pub async fn connect(host: &Host, buffer: usize) -> (Agent, Fake) {
    // duplex: what one end writes, the other reads.
    let (host_reads, agent_writes) = tokio::io::duplex(buffer);
    let (agent_reads, host_writes) = tokio::io::duplex(buffer);
    let mut fake = Fake {
        from_host: Some(BufReader::new(agent_reads).lines()),
        to_host: agent_writes,
    };
    let h = host.clone();
    let connecting = tokio::spawn(async move { h.connect(host_reads, host_writes).await });
    let init = fake.expect("initialize").await;
    fake.answer(
        &init,
        json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}, "authMethods": []}),
    )
    .await;
    let agent = connecting.await.unwrap().expect("handshake");
    (agent, fake)
}
