//! What the host holds for the agent's own requests (issue 24, items 4 and 5): answers to the
//! agent's requests hold a bounded number of bytes however many requests come at once, the queue
//! to the agent's stdin never holds more than `max_outbound_bytes`, and an answer that cannot fit
//! becomes a typed error for that request, never the agent's death.
//!
//! Memory is measured by this test binary's own allocator (every heap byte of the process: the
//! host, the runtime and the in-memory fake agent alike), so the tests run one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_host::services::fs::FsLimits;
use acp_host::services::{FsHandler, FsRead, FsService, FsWrite, ServiceFuture};
use acp_host::{Agent, EventKind, EventStream, Host, HostConfig, SessionOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

// ----- a counting allocator ------------------------------------------------------------------

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// The only `unsafe` outside src/transport/pdeathsig.rs, and in a test binary: a global
// allocator is `unsafe` to implement. Every call is passed to `System` as it came; the counters
// are only arithmetic.
#[allow(unsafe_code)]
// SAFETY: see above; `System` upholds `GlobalAlloc`'s contract and nothing else touches memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `System::alloc`, with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `System::alloc_zeroed`, with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `System::realloc`, with the caller's arguments.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Start measuring: the peak is reset to what is allocated now, which is returned.
fn measure_from_here() -> usize {
    let now = CURRENT.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    now
}

fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

const MIB: usize = 1 << 20;

/// One test at a time (the allocator counts the whole process), each on its own runtime.
fn run<F: std::future::Future<Output = ()>>(test: impl FnOnce() -> F) {
    static SERIAL: Mutex<()> = Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(test());
}

// ----- an in-memory agent that reads answers without holding them ---------------------------

/// The agent's side of a `Host::connect`: writes requests, reads the host's lines one at a time,
/// keeping only their first bytes (a 16 MiB answer is counted, not held).
struct Agent_ {
    rx: BufReader<DuplexStream>,
    tx: DuplexStream,
}

/// A line from the host: its length (without the newline) and its first `KEEP` bytes.
#[derive(Debug)]
struct Line {
    len: usize,
    head: Vec<u8>,
}

const KEEP: usize = 64 * 1024;

impl Line {
    /// The line as JSON, when it was short enough to be kept whole.
    fn json(&self) -> Option<Value> {
        (self.len == self.head.len())
            .then(|| serde_json::from_slice(&self.head).ok())
            .flatten()
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.head).into_owned()
    }
}

impl Agent_ {
    async fn send(&mut self, v: &Value) {
        self.send_raw(&format!("{v}\n")).await;
    }
    async fn send_raw(&mut self, s: &str) {
        self.tx.write_all(s.as_bytes()).await.unwrap();
    }

    /// The next line, or `None` at EOF / after `timeout`.
    async fn line(&mut self, timeout: Duration) -> Option<Line> {
        tokio::time::timeout(timeout, self.line_inner())
            .await
            .ok()
            .flatten()
    }

    async fn line_inner(&mut self) -> Option<Line> {
        let mut line = Line {
            len: 0,
            head: Vec::new(),
        };
        loop {
            let buf = self.rx.fill_buf().await.ok()?;
            if buf.is_empty() {
                return None;
            }
            let (part, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let keep = part.len().min(KEEP.saturating_sub(line.head.len()));
            line.head.extend_from_slice(&part[..keep]);
            line.len += part.len();
            let used = done.unwrap_or(buf.len());
            self.rx.consume(used);
            if done.is_some() {
                return Some(line);
            }
        }
    }

    /// Lines until one is a request or notification for `method` (others are dropped).
    async fn wait_method(&mut self, method: &str) -> Value {
        loop {
            let line = self
                .line(Duration::from_secs(10))
                .await
                .unwrap_or_else(|| panic!("no {method}"));
            if let Some(v) = line.json()
                && v["method"] == method
            {
                return v;
            }
        }
    }
}

/// Connect an in-memory agent over pipes of 64 KiB and open session `s1` in `cwd`.
async fn connect(host: &Host, cwd: &str) -> (Agent, Agent_) {
    let (host_reads, agent_writes) = tokio::io::duplex(64 * 1024);
    let (agent_reads, host_writes) = tokio::io::duplex(64 * 1024);
    let mut fake = Agent_ {
        rx: BufReader::with_capacity(64 * 1024, agent_reads),
        tx: agent_writes,
    };
    let h = host.clone();
    let connecting = tokio::spawn(async move { h.connect(host_reads, host_writes).await });
    let init = fake.wait_method("initialize").await;
    fake.send(&json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1,"agentCapabilities":{}}}))
        .await;
    let agent = connecting.await.unwrap().unwrap();
    let a = agent.clone();
    let cwd = cwd.to_owned();
    let opening = tokio::spawn(async move { a.new_session(SessionOptions::new(cwd)).await });
    let req = fake.wait_method("session/new").await;
    fake.send(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"sessionId":"s1"}}))
        .await;
    opening.await.unwrap().unwrap();
    (agent, fake)
}

fn read_request(id: u64, path: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"fs/read_text_file",
           "params":{"sessionId":"s1","path":path}})
}

/// The `stdin_stalled` reports and whether the agent exited, among the events so far.
fn stalls_and_exit(events: &EventStream) -> (usize, bool) {
    let (mut stalled, mut exited) = (0, false);
    while let Some(ev) = events.try_next() {
        if ev.kind == EventKind::ProtocolError && ev.data_value()["reason"] == "stdin_stalled" {
            stalled += 1;
        }
        exited |= ev.kind == EventKind::AgentExited;
    }
    (stalled, exited)
}

fn workspace() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir
        .path()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // Without Windows' verbatim prefix (`\\?\C:\...`), in which the `/` the tests join with
    // is not a separator.
    let cwd = match cwd.strip_prefix(r"\\?\") {
        Some(plain) => plain.to_owned(),
        None => cwd,
    };
    (dir, cwd)
}

/// The answer line's content length, if it is `{"jsonrpc":"2.0","id":ID,"result":{"content":"…"}}`
/// with `id`.
fn content_len(line: &Line, id: u64) -> Option<usize> {
    let head = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":\"");
    let tail = "\"}}";
    (line.head.starts_with(head.as_bytes())).then(|| line.len - head.len() - tail.len())
}

/// Many concurrent reads of one large file while the agent does not read its stdin: each answer
/// is read and encoded only when there is room for it, so the host holds at most the served
/// answers' budget (half of `max_outbound_bytes`), whatever the number of requests; every read
/// is answered, in full, and the agent is not killed.
async fn concurrent_reads(reads: u64, file_bytes: usize, max_outbound: usize) {
    let (dir, cwd) = workspace();
    let path = format!("{cwd}/big.txt");
    std::fs::write(&path, vec![b'a'; file_bytes]).unwrap();
    let host = Host::new(HostConfig {
        max_outbound_bytes: max_outbound,
        fs_limits: FsLimits {
            max_read_bytes: file_bytes as u64,
            max_write_bytes: file_bytes as u64,
        },
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    let (agent, mut fake) = connect(&host, &cwd).await;
    let before = measure_from_here();
    // Every request in one write, ids 1000.. (the same width: every answer is as long).
    let mut block = String::new();
    for i in 0..reads {
        block.push_str(&read_request(1000 + i, &path).to_string());
        block.push('\n');
    }
    fake.send_raw(&block).await;
    // The agent reads nothing for a while: whatever the host prepares meanwhile, it holds.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut answered = 0;
    while answered < reads {
        let line = fake
            .line(Duration::from_secs(60))
            .await
            .unwrap_or_else(|| panic!("only {answered} of {reads} reads were answered"));
        let id = answered_id(&line);
        assert_eq!(
            content_len(&line, id),
            Some(file_bytes),
            "read {id}: {}",
            &line.text()[..line.head.len().min(300)]
        );
        answered += 1;
    }
    let grown = peak().saturating_sub(before);
    let (stalled, exited) = stalls_and_exit(&events);
    assert_eq!(
        (stalled, exited),
        (0, false),
        "the agent must not be killed"
    );
    assert!(!agent.is_gone());
    // The served answers' budget is half the bound; 1 MiB for the runtime, pipes and events.
    let ceiling = max_outbound / 2 + MIB;
    assert!(
        grown <= ceiling,
        "{reads} reads of {file_bytes} bytes grew the heap by {grown} bytes, over {ceiling}"
    );
    agent.shutdown().await;
    drop(dir);
}

fn answered_id(line: &Line) -> u64 {
    let text = String::from_utf8_lossy(&line.head[..line.head.len().min(64)]).into_owned();
    text.split("\"id\":")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("not an answer: {text}"))
}

#[test]
fn concurrent_reads_of_a_large_file_hold_a_bounded_number_of_bytes() {
    // As in the report: 64 reads of a 16 MiB file (the default read limit) at the default
    // 64 MiB bound. Today's host answers them one or two at a time: a heap growth of ~16 MiB,
    // where it was 1.4 GB (and the agent killed once 64 MiB were queued).
    let defaults = HostConfig::default();
    run(|| concurrent_reads(64, 16 * MIB, defaults.max_outbound_bytes));
}

#[test]
fn the_queue_to_an_agent_that_reads_late_never_passes_its_bound() {
    // A small bound: 64 answers of 100 KB are 6.4 MB, the bound 1 MiB. Answers wait for room
    // (backpressure on the agent's own requests) instead of piling up, so the agent that reads
    // late is served, in full, not killed as "stalled".
    run(|| concurrent_reads(64, 100_000, MIB));
}

/// An allowed file whose answer cannot fit (NUL bytes are six bytes each as JSON): a typed
/// error for that request, without the big line ever being made, and the agent carries on.
#[test]
fn a_read_whose_answer_cannot_fit_is_a_typed_error_and_the_agent_carries_on() {
    run(|| async {
        let (dir, cwd) = workspace();
        // Not "nul.*": that is the NUL device on Windows.
        let nul = format!("{cwd}/zeros.bin");
        std::fs::write(&nul, vec![0u8; 11 * MIB]).unwrap();
        std::fs::write(format!("{cwd}/small.txt"), "hello\n").unwrap();
        let host = Host::new(HostConfig::default());
        let events = host.events().unwrap();
        let (agent, mut fake) = connect(&host, &cwd).await;
        let before = measure_from_here();
        fake.send(&read_request(1, &nul)).await;
        let line = fake
            .line(Duration::from_secs(20))
            .await
            .expect("the read is answered");
        let answer = line.json().unwrap_or_else(|| {
            panic!(
                "a short error, not {} bytes: {}",
                line.len,
                &line.text()[..200]
            )
        });
        assert_eq!(answer["id"], 1, "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let data = &answer["error"]["data"];
        assert_eq!(data["reason"], "too_large", "{answer}");
        assert_eq!(data["size"], 11 * MIB, "{answer}");
        assert_eq!(data["encodedSize"], 6 * 11 * MIB, "{answer}");
        assert_eq!(data["limit"], 16 * MIB, "{answer}");
        // The file was read (11 MiB); its 66 MiB line was never made.
        let grown = peak().saturating_sub(before);
        assert!(grown < 16 * MIB, "the heap grew by {grown} bytes");
        // The session carries on.
        fake.send(&read_request(2, &format!("{cwd}/small.txt")))
            .await;
        let line = fake.line(Duration::from_secs(20)).await.expect("answer");
        let answer = line.json().unwrap();
        assert_eq!(answer["id"], 2, "{answer}");
        assert_eq!(answer["result"]["content"], "hello\n", "{answer}");
        let (stalled, exited) = stalls_and_exit(&events);
        assert_eq!((stalled, exited), (0, false));
        assert!(!agent.is_gone());
        agent.shutdown().await;
        drop(dir);
    });
}

/// An editor serving reads from its buffers: `a.txt` is `text`, anything else is small.
struct Buffers {
    text: String,
}

impl FsHandler for Buffers {
    fn read_text_file(&self, r: FsRead) -> ServiceFuture<String> {
        let text = if r.path.ends_with("a.txt") {
            self.text.clone()
        } else {
            "small buffer\n".to_owned()
        };
        Box::pin(async move { Ok(text) })
    }
    fn write_text_file(&self, _: FsWrite) -> ServiceFuture<()> {
        Box::pin(async { Ok(()) })
    }
}

/// The same limit holds for text the embedder serves.
#[test]
fn an_embedder_read_whose_answer_cannot_fit_is_a_typed_error() {
    run(|| async {
        let (dir, cwd) = workspace();
        let host = Host::new(HostConfig {
            fs: FsService::Embedder(std::sync::Arc::new(Buffers {
                text: "\0".repeat(11 * MIB),
            })),
            ..HostConfig::default()
        });
        let events = host.events().unwrap();
        let (agent, mut fake) = connect(&host, &cwd).await;
        fake.send(&read_request(1, &format!("{cwd}/a.txt"))).await;
        let line = fake.line(Duration::from_secs(20)).await.expect("answer");
        let answer = line
            .json()
            .unwrap_or_else(|| panic!("a short error, not {} bytes", line.len));
        assert_eq!(answer["error"]["data"]["reason"], "too_large", "{answer}");
        assert_eq!(
            answer["error"]["data"]["encodedSize"],
            6 * 11 * MIB,
            "{answer}"
        );
        // The connection carries on: the agent's next request is served.
        fake.send(&read_request(2, &format!("{cwd}/b.txt"))).await;
        let line = fake.line(Duration::from_secs(20)).await.expect("answer");
        let answer = line.json().unwrap();
        assert_eq!(answer["id"], 2, "{answer}");
        assert_eq!(answer["result"]["content"], "small buffer\n", "{answer}");
        let (stalled, exited) = stalls_and_exit(&events);
        assert_eq!((stalled, exited), (0, false));
        agent.shutdown().await;
        drop(dir);
    });
}

/// An extension answer larger than the bound: a typed error for that request, not a kill.
#[test]
fn an_extension_answer_that_cannot_fit_is_a_typed_error() {
    run(|| async {
        let (dir, cwd) = workspace();
        let host = Host::new(HostConfig {
            max_outbound_bytes: 4 * MIB,
            ext: acp_host::services::ExtService::Embedder(std::sync::Arc::new(
                |method: String, _params: Value| async move {
                    let size = if method == "_x/big" { 5 * MIB } else { 10 };
                    Ok(json!({ "pad": "x".repeat(size) }))
                },
            )),
            ..HostConfig::default()
        });
        let events = host.events().unwrap();
        let (agent, mut fake) = connect(&host, &cwd).await;
        fake.send(&json!({"jsonrpc":"2.0","id":1,"method":"_x/big","params":{}}))
            .await;
        let line = fake.line(Duration::from_secs(20)).await.expect("answer");
        let answer = line
            .json()
            .unwrap_or_else(|| panic!("a short error, not {} bytes", line.len));
        assert_eq!(answer["id"], 1, "{answer}");
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        assert_eq!(answer["error"]["data"]["reason"], "too_large", "{answer}");
        fake.send(&json!({"jsonrpc":"2.0","id":2,"method":"_x/small","params":{}}))
            .await;
        let line = fake.line(Duration::from_secs(20)).await.expect("answer");
        let answer = line.json().unwrap();
        assert_eq!(answer["id"], 2, "{answer}");
        assert!(answer["result"]["pad"].is_string(), "{answer}");
        let (stalled, exited) = stalls_and_exit(&events);
        assert_eq!((stalled, exited), (0, false));
        agent.shutdown().await;
        drop(dir);
    });
}

/// A message of the host's own larger than the queue could ever hold fails that call with
/// `invalid_argument` before anything is sent; the agent is not killed and the next call works.
#[test]
fn a_host_request_larger_than_the_bound_fails_with_invalid_argument() {
    run(|| async {
        let (dir, cwd) = workspace();
        let host = Host::new(HostConfig {
            max_outbound_bytes: 256 * 1024,
            ..HostConfig::default()
        });
        let events = host.events().unwrap();
        let (agent, mut fake) = connect(&host, &cwd).await;
        // The agent answers whatever it is asked.
        let answering = tokio::spawn(async move {
            let mut seen = Vec::new();
            while let Some(line) = fake.line(Duration::from_secs(10)).await {
                if let Some(v) = line.json()
                    && v["id"].is_u64()
                    && v["method"].is_string()
                {
                    seen.push(v["method"].as_str().unwrap().to_owned());
                    fake.send(&json!({"jsonrpc":"2.0","id":v["id"],"result":{}}))
                        .await;
                }
            }
            seen
        });
        let big = json!({ "pad": "x".repeat(200 * 1024) });
        let err = agent
            .ext_request("_x/big", &big)
            .await
            .expect_err("a request larger than half the bound is refused");
        assert_eq!(err.kind(), "invalid_argument", "{err}");
        agent
            .ext_request("_x/small", &json!({}))
            .await
            .expect("the next call works");
        let (stalled, exited) = stalls_and_exit(&events);
        assert_eq!((stalled, exited), (0, false));
        agent.shutdown().await;
        let seen = answering.await.unwrap();
        assert_eq!(seen, ["_x/small"], "the big request was never sent");
        drop(dir);
    });
}
