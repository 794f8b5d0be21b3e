//! Memory bounds under hostile agent input (driven by `scripts/bench`; prints, never asserts).
//!
//! ```text
//! bounds_bench [--requests N] [--tool-calls N] [--reads N] [--read-mib M]
//! ```
//!
//! An in-process fake agent (over `Host::connect`, so the numbers are the host's own) runs five
//! phases and prints one JSON line per phase with the process's peak RSS during it
//! (`VmHWM`, reset between phases through `/proc/self/clear_refs`) and its RSS before:
//!
//! - `permission_flood_policy`: N `session/request_permission` sent without waiting, each
//!   answered by the policy (deny-all) at once; the embedder pulls events.
//! - `permission_flood_pending`: N requests nobody answers (manual handler): at most
//!   `max_pending_agent_requests` are held, the rest are refused at once.
//! - `tool_calls`: a session with N `tool_call` + N `tool_call_update` updates; the embedder
//!   pulls events and reads `state()` every 10,000 updates; reports the view's table size.
//! - `reads`: N (64) `fs/read_text_file` of one M MiB (16) file of plain text (under the default
//!   limits), sent at once; the agent reads nothing for 500 ms, then reads every answer (counted,
//!   not kept). Reports how many were answered in full and whether the connection ended first.
//! - `nul_read`: one read of an 11 MiB file of NUL bytes (66 MiB as JSON text), then a read of a
//!   small file: reports what each was answered with.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark command: its output is the point"
)]

use std::time::{Duration, Instant};

use acp_host::{Agent, EventStream, Host, HostConfig, PermissionHandler, SessionOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

struct Fake {
    lines: tokio::io::Lines<BufReader<DuplexStream>>,
    out: DuplexStream,
}

impl Fake {
    async fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.out.write_all(line.as_bytes()).await.unwrap();
    }
    async fn expect(&mut self, method: &str) -> Value {
        loop {
            let line = self.lines.next_line().await.unwrap().expect("host closed");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["method"] == method {
                return v;
            }
        }
    }
}

async fn connect(host: &Host) -> (Agent, Fake) {
    connect_in(host, "/tmp").await
}

async fn connect_in(host: &Host, cwd: &str) -> (Agent, Fake) {
    let (host_reads, agent_writes) = tokio::io::duplex(1 << 20);
    let (agent_reads, host_writes) = tokio::io::duplex(1 << 20);
    let mut fake = Fake {
        lines: BufReader::new(agent_reads).lines(),
        out: agent_writes,
    };
    let h = host.clone();
    let connecting = tokio::spawn(async move { h.connect(host_reads, host_writes).await });
    let init = fake.expect("initialize").await;
    fake.send(&json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1,"agentCapabilities":{}}}))
        .await;
    let agent = connecting.await.unwrap().unwrap();
    let a = agent.clone();
    let cwd = cwd.to_owned();
    let opening = tokio::spawn(async move { a.new_session(SessionOptions::new(cwd)).await });
    let req = fake.expect("session/new").await;
    fake.send(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"sessionId":"s1"}}))
        .await;
    opening.await.unwrap().unwrap();
    (agent, fake)
}

/// Pull every event until told to stop; returns how many.
fn drain(events: EventStream) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut n = 0u64;
        let mut buf = Vec::new();
        while events.next_batch(&mut buf, 512).await > 0 {
            n += buf.len() as u64;
            buf.clear();
        }
        n
    })
}

async fn permission_flood(name: &str, handler: PermissionHandler, n: u64) {
    let before = status_kib("VmRSS:");
    reset_peak();
    let host = Host::new(HostConfig {
        permission: handler,
        ..HostConfig::default()
    });
    let consumer = drain(host.events().unwrap());
    let (agent, fake) = connect(&host).await;
    let Fake { mut lines, mut out } = fake;
    let started = Instant::now();
    let writer = tokio::spawn(async move {
        let mut block = String::new();
        for id in 0..n {
            block.push_str(&json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{
                "sessionId":"s1","toolCall":{"toolCallId":format!("t{id}"),"title":"Edit","kind":"edit"},
                "options":[{"optionId":"a","name":"Allow","kind":"allow_once"},{"optionId":"r","name":"Reject","kind":"reject_once"}]}}).to_string());
            block.push('\n');
            if block.len() > 64 * 1024 {
                out.write_all(block.as_bytes()).await.unwrap();
                block.clear();
            }
        }
        out.write_all(block.as_bytes()).await.unwrap();
        out
    });
    // Every request gets exactly one answer right away, unless it is one of the held ones.
    let limit = host.config().max_pending_agent_requests as u64;
    let expect = if name.ends_with("pending") {
        n - limit.min(n)
    } else {
        n
    };
    let (mut answered, mut refused) = (0u64, 0u64);
    while answered + refused < expect {
        let line = lines.next_line().await.unwrap().unwrap();
        if line.contains("\"error\"") {
            refused += 1;
        } else {
            answered += 1;
        }
    }
    let elapsed = started.elapsed();
    let _out = writer.await.unwrap();
    let peak = status_kib("VmHWM:");
    agent.shutdown().await;
    drop(agent);
    drop(host);
    let events = consumer.await.unwrap_or(0);
    println!(
        "{}",
        json!({"phase": name, "requests": n, "answered": answered, "refused": refused,
               "events": events, "seconds": elapsed.as_secs_f64(),
               "rssBeforeKiB": before, "peakRssKiB": peak})
    );
}

async fn tool_calls(n: u64) {
    let before = status_kib("VmRSS:");
    reset_peak();
    let host = Host::new(HostConfig::default());
    let consumer = drain(host.events().unwrap());
    let (agent, mut fake) = connect(&host).await;
    let session = agent.session("s1").expect("open session");
    let started = Instant::now();
    let a = session.clone();
    let prompt = tokio::spawn(async move { a.prompt_text("go").await });
    let req = fake.expect("session/prompt").await;
    let mut max_table = 0;
    let mut block = String::new();
    for i in 0..n {
        for update in [
            json!({"sessionUpdate":"tool_call","toolCallId":format!("c{i}"),"title":"Read file","kind":"read","status":"pending","locations":[{"path":format!("/tmp/f{i}.rs")}]}),
            json!({"sessionUpdate":"tool_call_update","toolCallId":format!("c{i}"),"status":"completed"}),
        ] {
            block.push_str(&json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":update}}).to_string());
            block.push('\n');
        }
        if block.len() > 64 * 1024 {
            fake.out.write_all(block.as_bytes()).await.unwrap();
            block.clear();
        }
        if i % 10_000 == 0 {
            max_table = max_table.max(session.state().tool_calls.len());
        }
    }
    fake.out.write_all(block.as_bytes()).await.unwrap();
    fake.send(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"stopReason":"end_turn"}}))
        .await;
    prompt.await.unwrap().unwrap();
    let state = session.state();
    let elapsed = started.elapsed();
    let peak = status_kib("VmHWM:");
    agent.shutdown().await;
    drop((agent, session));
    drop(host);
    let events = consumer.await.unwrap_or(0);
    println!(
        "{}",
        json!({"phase": "tool_calls", "toolCalls": n, "events": events,
               "tableSize": state.tool_calls.len().max(max_table), "dropped": state.tool_calls_dropped,
               "seconds": elapsed.as_secs_f64(), "rssBeforeKiB": before, "peakRssKiB": peak})
    );
}

/// What [`next_line`] keeps of a line.
const HEAD: usize = 4096;

/// The next line of the host's output: its length and its first [`HEAD`] bytes (a 16 MiB answer
/// is counted, not kept); `None` at EOF or after `timeout`.
async fn next_line(
    rx: &mut BufReader<DuplexStream>,
    timeout: Duration,
) -> Option<(usize, Vec<u8>)> {
    let read = async {
        let (mut len, mut head) = (0usize, Vec::new());
        loop {
            let buf = rx.fill_buf().await.ok()?;
            if buf.is_empty() {
                return None;
            }
            let end = buf.iter().position(|&b| b == b'\n');
            let part = &buf[..end.unwrap_or(buf.len())];
            let keep = part.len().min(HEAD - head.len().min(HEAD));
            head.extend_from_slice(&part[..keep]);
            len += part.len();
            let used = end.map_or(buf.len(), |i| i + 1);
            rx.consume(used);
            if end.is_some() {
                return Some((len, head));
            }
        }
    };
    tokio::time::timeout(timeout, read).await.ok().flatten()
}

fn read_line(id: u64, path: &str) -> String {
    let mut line = json!({"jsonrpc":"2.0","id":id,"method":"fs/read_text_file",
        "params":{"sessionId":"s1","path":path}})
    .to_string();
    line.push('\n');
    line
}

async fn reads(n: u64, file_mib: usize) {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let cwd = dir.path().to_string_lossy().into_owned();
    let path = format!("{cwd}/big.txt");
    let file_bytes = file_mib << 20;
    std::fs::write(&path, vec![b'a'; file_bytes]).unwrap();
    let before = status_kib("VmRSS:");
    reset_peak();
    let host = Host::new(HostConfig {
        fs_limits: acp_host::services::fs::FsLimits {
            max_read_bytes: (file_bytes as u64).max(16 << 20),
            ..Default::default()
        },
        ..HostConfig::default()
    });
    let consumer = drain(host.events().unwrap());
    let (agent, fake) = connect_in(&host, &cwd).await;
    let Fake { lines, mut out } = fake;
    let mut rx = lines.into_inner();
    let started = Instant::now();
    let block: String = (0..n).map(|i| read_line(1000 + i, &path)).collect();
    out.write_all(block.as_bytes()).await.unwrap();
    // The agent reads nothing for a while: what the host prepares meanwhile, it holds.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (mut answered, mut errors, mut ended) = (0u64, 0u64, false);
    while answered + errors < n {
        match next_line(&mut rx, Duration::from_secs(60)).await {
            // Answers to our reads (ids 1000..): in full, or an error.
            Some((len, head)) if head.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":") => {
                if len > file_bytes {
                    answered += 1;
                } else if String::from_utf8_lossy(&head).contains("\"error\"") {
                    errors += 1;
                }
            }
            Some(_) => {}
            None => {
                ended = true;
                break;
            }
        }
    }
    let elapsed = started.elapsed();
    let peak = status_kib("VmHWM:");
    agent.shutdown().await;
    drop((agent, out, rx));
    drop(host);
    let events = consumer.await.unwrap_or(0);
    println!(
        "{}",
        json!({"phase": "reads", "requests": n, "fileBytes": file_bytes, "answered": answered,
               "errors": errors, "connectionEnded": ended, "events": events,
               "seconds": elapsed.as_secs_f64(), "rssBeforeKiB": before, "peakRssKiB": peak})
    );
}

async fn nul_read() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let cwd = dir.path().to_string_lossy().into_owned();
    let nul = format!("{cwd}/nul.bin");
    std::fs::write(&nul, vec![0u8; 11 << 20]).unwrap();
    std::fs::write(format!("{cwd}/small.txt"), "hello\n").unwrap();
    let before = status_kib("VmRSS:");
    reset_peak();
    let host = Host::new(HostConfig::default());
    let consumer = drain(host.events().unwrap());
    let (agent, fake) = connect_in(&host, &cwd).await;
    let Fake { lines, mut out } = fake;
    let mut rx = lines.into_inner();
    let started = Instant::now();
    let mut answers = Vec::new();
    for (id, path) in [(1, nul), (2, format!("{cwd}/small.txt"))] {
        if out
            .write_all(read_line(id, &path).as_bytes())
            .await
            .is_err()
        {
            answers.push("the connection ended".to_owned());
            break;
        }
        // What it was answered with, in a few words.
        answers.push(match next_line(&mut rx, Duration::from_secs(30)).await {
            Some((len, head)) => match serde_json::from_slice::<Value>(&head) {
                Ok(v) if v["error"].is_object() => format!(
                    "error {} {} ({} bytes)",
                    v["error"]["code"], v["error"]["data"]["reason"], len
                ),
                _ => format!("an answer of {len} bytes"),
            },
            None => "the connection ended".to_owned(),
        });
    }
    let elapsed = started.elapsed();
    let peak = status_kib("VmHWM:");
    agent.shutdown().await;
    drop((agent, out, rx));
    drop(host);
    let events = consumer.await.unwrap_or(0);
    println!(
        "{}",
        json!({"phase": "nul_read", "answers": answers, "events": events,
               "seconds": elapsed.as_secs_f64(), "rssBeforeKiB": before, "peakRssKiB": peak})
    );
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let requests = arg(&args, "--requests", 100_000);
    let calls = arg(&args, "--tool-calls", 100_000);
    let t = Instant::now();
    permission_flood(
        "permission_flood_policy",
        PermissionHandler::DenyAll,
        requests,
    )
    .await;
    permission_flood(
        "permission_flood_pending",
        PermissionHandler::Manual,
        requests,
    )
    .await;
    tool_calls(calls).await;
    reads(
        arg(&args, "--reads", 64),
        usize::try_from(arg(&args, "--read-mib", 16)).unwrap(),
    )
    .await;
    nul_read().await;
    eprintln!("bounds_bench: done in {:.1?}", t.elapsed());
    let _ = Duration::ZERO;
}
