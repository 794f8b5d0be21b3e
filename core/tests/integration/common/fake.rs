//! A scripted fake agent over in-memory pipes (`Host::connect`), for tests that need exact
//! control of what the agent sends and when.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use acp_host::{Agent, Event, Host, Session, SessionOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::sync::Mutex;

/// Pipe buffer: small, so that backpressure shows quickly.
const PIPE: usize = 64 * 1024;

/// The agent's side: reads what the host writes, writes lines the host reads.
pub struct Fake {
    lines: Option<Lines<BufReader<DuplexStream>>>,
    tx: Arc<Mutex<Option<DuplexStream>>>,
    /// Messages read while waiting for something else.
    stash: VecDeque<Value>,
    eof: bool,
}

impl Fake {
    /// A placeholder for `std::mem::replace`.
    pub fn dead() -> Fake {
        Fake {
            lines: None,
            tx: Arc::new(Mutex::new(None)),
            stash: VecDeque::new(),
            eof: false,
        }
    }

    /// Stop reading for good: the agent's end of the host's output pipe is dropped, so the
    /// host's next write fails (a broken pipe).
    pub fn stop_reading(&mut self) {
        self.lines = None;
    }

    /// The next message from the host (stashed ones first); `None` on timeout or EOF.
    pub async fn recv(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(v) = self.stash.pop_front() {
            return Some(v);
        }
        self.read(timeout).await
    }

    async fn read(&mut self, timeout: Duration) -> Option<Value> {
        let lines = self.lines.as_mut()?;
        match tokio::time::timeout(timeout, lines.next_line()).await {
            Ok(Ok(Some(line))) => Some(serde_json::from_str(&line).expect("host sent JSON")),
            Ok(_) => {
                self.eof = true;
                None
            }
            Err(_) => None,
        }
    }

    /// Wait for the first message matching `pred` (others are stashed); panics on timeout.
    pub async fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(i) = self.stash.iter().position(&pred) {
            return self.stash.remove(i).unwrap();
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.read(left).await {
                Some(v) if pred(&v) => return v,
                Some(v) => self.stash.push_back(v),
                None => panic!("fake agent: no {what} within {timeout:?}"),
            }
        }
    }

    /// Wait for a request or notification from the host by method.
    pub async fn wait_method(&mut self, method: &str, timeout: Duration) -> Value {
        self.wait_for(method, timeout, |v| v["method"] == method)
            .await
    }

    /// Wait for the host's response to our request `id`.
    pub async fn wait_response(&mut self, id: &Value, timeout: Duration) -> Value {
        let id = id.clone();
        self.wait_for(&format!("response to {id}"), timeout, move |v| {
            v.get("method").is_none() && v["id"] == id
        })
        .await
    }

    /// Every message that arrives within `window`.
    pub async fn recv_for(&mut self, window: Duration) -> Vec<Value> {
        let mut got: Vec<Value> = self.stash.drain(..).collect();
        let deadline = tokio::time::Instant::now() + window;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return got;
            }
            match self.read(left).await {
                Some(v) => got.push(v),
                None => return got,
            }
        }
    }

    /// Whether the host closed our stdin (a read returns EOF now).
    pub fn at_eof(&self) -> bool {
        self.eof
    }

    pub async fn send(&self, v: Value) {
        self.send_raw(&format!("{v}\n")).await;
    }

    /// Write raw bytes (several lines at once, to land in one read of the host).
    pub async fn send_raw(&self, s: &str) {
        let mut tx = self.tx.lock().await;
        if let Some(w) = tx.as_mut() {
            let _ = w.write_all(s.as_bytes()).await;
        }
    }

    pub async fn respond(&self, id: &Value, result: Value) {
        self.send(json!({"jsonrpc":"2.0","id":id,"result":result}))
            .await;
    }

    /// Send `n` `agent_message_chunk` updates (texts "0".."n-1") for `session` from a task, then,
    /// with `answer`, the `end_turn` response to that prompt id.
    pub fn spawn_flood(
        &self,
        session: &str,
        n: usize,
        answer: Option<Value>,
    ) -> tokio::task::JoinHandle<()> {
        let tx = self.tx.clone();
        let session = session.to_owned();
        tokio::spawn(async move {
            let mut tx = tx.lock().await;
            let Some(w) = tx.as_mut() else { return };
            let mut buf = String::new();
            for i in 0..n {
                buf.push_str(&update(&session, &i.to_string()).to_string());
                buf.push('\n');
                if buf.len() > 8 * 1024 {
                    if w.write_all(buf.as_bytes()).await.is_err() {
                        return;
                    }
                    buf.clear();
                }
            }
            if let Some(id) = answer {
                let r = json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn"}});
                buf.push_str(&r.to_string());
                buf.push('\n');
            }
            let _ = w.write_all(buf.as_bytes()).await;
        })
    }
}

/// A `session/update` notification with one `agent_message_chunk`.
pub fn update(session: &str, text: &str) -> Value {
    json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":session,
        "update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}})
}

/// The text of an `agent_message_chunk` event.
pub fn chunk_text(ev: &Event) -> String {
    ev.data_value()["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Connect a fake agent (answers `initialize` with `loadSession`).
pub async fn connect(host: &Host) -> (Agent, Fake) {
    connect_with_pipe(host, PIPE).await
}

/// As [`connect`], with pipes of `pipe` bytes.
pub async fn connect_with_pipe(host: &Host, pipe: usize) -> (Agent, Fake) {
    connect_with(host, pipe, json!({"loadSession": true})).await
}

/// As [`connect`], answering `initialize` with these `agentCapabilities`.
pub async fn connect_with_caps(host: &Host, caps: Value) -> (Agent, Fake) {
    connect_with(host, PIPE, caps).await
}

/// As [`connect`], answering `initialize` as a draft ACP v2 agent (the host must offer v2).
pub async fn connect_v2(host: &Host) -> (Agent, Fake) {
    connect_v2_with(host, json!({"session": {}})).await
}

/// A v2 agent advertising `capabilities` (v2's names).
pub async fn connect_v2_with(host: &Host, capabilities: Value) -> (Agent, Fake) {
    let init = json!({"protocolVersion":2,"capabilities":capabilities,"info":{"name":"fake-v2","version":"0"}});
    connect_answering(host, PIPE, init).await
}

async fn connect_with(host: &Host, pipe: usize, caps: Value) -> (Agent, Fake) {
    let init = json!({"protocolVersion":1,"agentCapabilities":caps,"authMethods":[]});
    connect_answering(host, pipe, init).await
}

async fn connect_answering(host: &Host, pipe: usize, answer: Value) -> (Agent, Fake) {
    let (host_r, agent_w) = tokio::io::duplex(pipe);
    let (agent_r, host_w) = tokio::io::duplex(pipe);
    let h = host.clone();
    let task = tokio::spawn(async move { h.connect(host_r, host_w).await });
    let mut fake = Fake {
        lines: Some(BufReader::new(agent_r).lines()),
        tx: Arc::new(Mutex::new(Some(agent_w))),
        stash: VecDeque::new(),
        eof: false,
    };
    let init = fake.wait_method("initialize", Duration::from_secs(5)).await;
    fake.respond(&init["id"], answer).await;
    let agent = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("connect returns after initialize")
        .unwrap()
        .expect("connect");
    (agent, fake)
}

/// `session/new` answered with `id`.
pub async fn open_session(agent: &Agent, fake: &mut Fake, id: &str, cwd: &str) -> Session {
    let a = agent.clone();
    let opts = SessionOptions::new(cwd);
    let task = tokio::spawn(async move { a.new_session(opts).await });
    let req = fake
        .wait_method("session/new", Duration::from_secs(5))
        .await;
    fake.respond(&req["id"], json!({ "sessionId": id })).await;
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("session/new returns")
        .unwrap()
        .expect("session/new")
}
