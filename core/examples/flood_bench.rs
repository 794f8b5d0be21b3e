//! Throughput and memory benchmark for the event path (driven by `scripts/bench`).
//!
//! ```text
//! flood_bench rust  [--agent PATH] [--updates N] [--capacity C] [--batch B]
//! flood_bench record [--agent PATH] [--updates N] [--capacity C] [--batch B] [--max-bytes B]
//! flood_bench typed [--agent PATH] [--updates N] [--capacity C] [--batch B]
//! flood_bench serde [--agent PATH] [--updates N]
//! flood_bench raw   [--agent PATH] [--updates N]
//! flood_bench rss   [--agent PATH] [--updates N] [--stall-ms MS] [--capacity C] [--batch B]
//! ```
//!
//! Every mode runs `acp-mock-agent --flood N` (default: the binary next to this example's
//! directory, i.e. `target/<profile>/acp-mock-agent`) and prints exactly one JSON line on stdout:
//!
//! - `rust`: N `session_update` events through `Host`/`EventStream` (consumer pulls with
//!   `next_batch`), timed from prompt send to `turn_ended`.
//! - `record`: `rust` with the connection recorded (`HostConfig::record`, redaction on) into a
//!   temporary directory, `maxBytes` from `--max-bytes` (default: large enough for any flood, so
//!   the cost is of recording everything); also reports the file's size and what it left out
//!   (`gap` lines, `end.droppedLines`, `truncated`), read back once the file is complete.
//! - `typed`: `rust`, and the consumer also decodes every update into the pinned ACP schema's
//!   types (`Event::decode`): what typed payloads cost an embedder that uses them.
//! - `serde`: the same flood read by a bare `BufReader` line loop that parses every line into a
//!   `serde_json::Value` (the practical upper bound), timed from prompt send to the response.
//! - `raw`: the serde loop without parsing the updates (a substring test finds them): how fast
//!   the mock agent produces and the pipe carries the flood, the ceiling for both of the above.
//! - `rss`: like `rust`, but the consumer stops pulling for `--stall-ms` after ~1000 updates;
//!   reports the process's RSS (sampled every 50 ms) before spawning, during the stall and at peak.
//!
//! A wrong update count exits with status 1.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark command: its output is the point"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use acp_host::record::RecordConfig;
use acp_host::{AgentSpec, Event, EventKind, Host, HostConfig, SessionOptions};
use serde_json::{Value, json};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Clone)]
struct Args {
    mode: String,
    agent: PathBuf,
    updates: u64,
    capacity: usize,
    batch: usize,
    stall_ms: u64,
    max_bytes: u64,
}

const USAGE: &str = "usage: flood_bench rust|record|typed|serde|raw|rss [--agent PATH] \
                     [--updates N] [--capacity C] [--batch B] [--stall-ms MS] [--max-bytes B]";

fn parse_args() -> Result<Args, BoxError> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or(USAGE)?;
    if !matches!(
        mode.as_str(),
        "rust" | "record" | "typed" | "serde" | "raw" | "rss"
    ) {
        return Err(format!("unknown mode `{mode}`\n{USAGE}").into());
    }
    let mut args = Args {
        mode,
        agent: default_agent(),
        updates: 200_000,
        capacity: 4096,
        batch: 1024,
        stall_ms: 2000,
        max_bytes: 1 << 40,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--agent" => args.agent = PathBuf::from(value()?),
            "--updates" => args.updates = value()?.replace('_', "").parse()?,
            "--capacity" => args.capacity = value()?.parse()?,
            "--batch" => args.batch = value()?.parse()?,
            "--stall-ms" => args.stall_ms = value()?.parse()?,
            "--max-bytes" => args.max_bytes = value()?.replace('_', "").parse()?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option `{other}`\n{USAGE}").into()),
        }
    }
    Ok(args)
}

/// `target/<profile>/examples/flood_bench` → `target/<profile>/acp-mock-agent`.
fn default_agent() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent()
        .and_then(|d| d.parent())
        .map(|d| d.join(format!("acp-mock-agent{}", std::env::consts::EXE_SUFFIX)))
        .unwrap_or_else(|| PathBuf::from("acp-mock-agent"))
}

fn main() {
    let result = parse_args().and_then(|args| match args.mode.as_str() {
        "serde" | "raw" => serde_mode(&args),
        _ => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(BoxError::from)
            .and_then(|rt| rt.block_on(host_mode(&args))),
    });
    match result {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("flood_bench: {e}");
            std::process::exit(1);
        }
    }
}

// ----- rust / rss ---------------------------------------------------------------------------

/// What the consumer saw.
#[derive(Debug)]
struct Consumed {
    updates: u64,
    /// `typed`: updates that did not decode exactly (must be 0).
    inexact: u64,
    turn_ended_at: Option<Instant>,
}

async fn host_mode(args: &Args) -> Result<Value, BoxError> {
    let rss_mode = args.mode == "rss";
    let sampler = rss_mode.then(RssSampler::start);
    let baseline = rss_kib("VmRSS:").unwrap_or(0);

    let record_dir = if args.mode == "record" {
        Some(tempfile::tempdir()?)
    } else {
        None
    };
    let host = Host::new(HostConfig {
        event_capacity: args.capacity,
        record: record_dir.as_ref().map(|d| RecordConfig {
            dir: Some(d.path().to_owned()),
            max_bytes: args.max_bytes,
            ..RecordConfig::default()
        }),
        ..HostConfig::default()
    });
    let events = host.events().ok_or("event stream already taken")?;

    // Only updates that belong to a turn count (a scenario may send updates on session/new).
    let stall = rss_mode.then(|| Duration::from_millis(args.stall_ms));
    let batch = args.batch.max(1);
    let stall_flag = sampler.as_ref().map(|s| s.stalled.clone());
    let typed = args.mode == "typed";
    let consumer = tokio::spawn(async move {
        let mut buf: Vec<Event> = Vec::with_capacity(batch);
        let mut seen = Consumed {
            updates: 0,
            inexact: 0,
            turn_ended_at: None,
        };
        let mut stall_pending = stall;
        'outer: loop {
            if events.next_batch(&mut buf, batch).await == 0 {
                break;
            }
            for ev in buf.drain(..) {
                match ev.kind {
                    EventKind::SessionUpdate if ev.turn.is_some() => {
                        seen.updates += 1;
                        if typed && !ev.decode().is_exact() {
                            seen.inexact += 1;
                        }
                    }
                    EventKind::TurnEnded => {
                        seen.turn_ended_at = Some(Instant::now());
                        break 'outer;
                    }
                    _ => {}
                }
            }
            if seen.updates >= 1000
                && let Some(pause) = stall_pending.take()
            {
                if let Some(flag) = &stall_flag {
                    flag.store(true, Ordering::SeqCst);
                }
                tokio::time::sleep(pause).await;
                if let Some(flag) = &stall_flag {
                    flag.store(false, Ordering::SeqCst);
                }
            }
        }
        seen
    });

    let spec = AgentSpec::new(args.agent.to_string_lossy())
        .args(["--flood".to_owned(), args.updates.to_string()]);
    let agent = host.spawn(spec).await?;
    let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
    let session = agent.new_session(SessionOptions::new(cwd)).await?;

    let cpu0 = cpu_seconds();
    let threads0 = thread_cpu();
    let start = Instant::now();
    let turn = session.prompt_text("flood").await?;
    let seen = consumer.await?;
    let cpu = cpu_seconds() - cpu0;
    let threads = thread_cpu_since(&threads0, seen.updates);
    let end = seen
        .turn_ended_at
        .ok_or("event stream ended before turn_ended")?;
    let seconds = end.duration_since(start).as_secs_f64();
    agent.shutdown().await;
    drop(session);
    host.shutdown().await;
    let recorded = match &record_dir {
        Some(dir) => Some(read_recording(dir.path(), end).await?),
        None => None,
    };

    if turn.stop_reason != "end_turn" {
        return Err(format!("turn ended with {}", turn.stop_reason).into());
    }
    if seen.inexact != 0 {
        return Err(format!("{} updates did not decode exactly", seen.inexact).into());
    }
    if seen.updates != args.updates {
        return Err(format!(
            "expected {} session_update events, got {}",
            args.updates, seen.updates
        )
        .into());
    }
    if let Some(r) = recorded {
        return Ok(json!({
            "mode": args.mode,
            "updates": seen.updates,
            "seconds": seconds,
            "updates_per_sec": rate(seen.updates, seconds),
            "cpu_seconds": cpu,
            "cpu_us_per_update": cpu_us_per_update(cpu, seen.updates),
            "threads_cpu_us_per_update": threads,
            "max_bytes": args.max_bytes,
            "record_bytes": r.bytes,
            "record_lines": r.lines,
            "record_gaps": r.gaps,
            "dropped_lines": r.dropped,
            "truncated": r.truncated,
            "complete_after_seconds": r.complete_after,
        }));
    }
    Ok(match sampler {
        None => json!({
            "mode": args.mode,
            "updates": seen.updates,
            "seconds": seconds,
            "updates_per_sec": rate(seen.updates, seconds),
            "cpu_seconds": cpu,
            "cpu_us_per_update": cpu_us_per_update(cpu, seen.updates),
            "threads_cpu_us_per_update": threads,
        }),
        Some(sampler) => {
            let s = sampler.finish();
            json!({
                "mode": "rss",
                "updates": seen.updates,
                "seconds": seconds,
                "updates_per_sec": rate(seen.updates, seconds),
                "capacity": args.capacity,
                "stall_ms": args.stall_ms,
                "baseline_rss_kib": baseline,
                "rss_during_stall_kib": s.stall_max,
                "rss_stall_first_kib": s.stall_first,
                "rss_stall_last_kib": s.stall_last,
                "peak_rss_kib": s.peak,
                "vm_hwm_kib": rss_kib("VmHWM:").unwrap_or(0),
                "samples": s.samples,
            })
        }
    })
}

/// What a `record` run left on disk.
#[derive(Debug)]
struct Recorded {
    bytes: u64,
    lines: u64,
    gaps: u64,
    dropped: u64,
    truncated: bool,
    /// From `turn_ended` until the file had its `end` line (shutdown included).
    complete_after: f64,
}

/// The one recording in `dir`, once complete (its `end` line written; 60 s at most).
async fn read_recording(dir: &std::path::Path, turn_ended: Instant) -> Result<Recorded, BoxError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut files = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
        if files.len() != 1 {
            return Err(format!(
                "expected one recording in {}, found {}",
                dir.display(),
                files.len()
            )
            .into());
        }
        let path = files.remove(0).path();
        let text = std::fs::read_to_string(&path)?;
        let last = text.lines().last().unwrap_or_default();
        if let Ok(end) = serde_json::from_str::<Value>(last)
            && let Some(end) = end.get("end")
        {
            let complete_after = turn_ended.elapsed().as_secs_f64();
            let gaps = text.lines().filter(|l| l.starts_with("{\"gap\":")).count() as u64;
            return Ok(Recorded {
                bytes: text.len() as u64,
                lines: text.lines().count() as u64,
                gaps,
                dropped: end["droppedLines"].as_u64().unwrap_or(0),
                truncated: end["truncated"].as_bool().unwrap_or(false),
                complete_after,
            });
        }
        if Instant::now() > deadline {
            return Err(format!("{} has no `end` line after 60 s", path.display()).into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn rate(updates: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        (updates as f64 / seconds).round()
    } else {
        0.0
    }
}

/// User + system CPU time of this whole process so far, in seconds (Linux only; 0 elsewhere).
/// `/proc/self/stat` counts clock ticks (USER_HZ, 100 on every mainstream Linux): ±10 ms.
/// The process's CPU time (all its threads, those gone included), to the nanosecond: the
/// recording's cost is a few tenths of a microsecond per update, less than a clock tick over a
/// whole flood.
#[cfg(unix)]
fn cpu_seconds() -> f64 {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map_or(0.0, |t| t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9)
}

#[cfg(not(unix))]
fn cpu_seconds() -> f64 {
    0.0
}

/// CPU nanoseconds of each of this process's live threads, by thread id, with its name (Linux
/// only: `/proc/self/task/*/schedstat`; empty elsewhere).
fn thread_cpu() -> std::collections::BTreeMap<String, (String, u64)> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let dir = task.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        out.insert(
            task.file_name().to_string_lossy().into_owned(),
            (name.trim().to_owned(), ns),
        );
    }
    out
}

/// Each thread name's CPU per update since `before` (threads alive at both ends, or started
/// since: the connection's thread is a runtime worker, the recording's `acph-record`).
fn thread_cpu_since(
    before: &std::collections::BTreeMap<String, (String, u64)>,
    updates: u64,
) -> Value {
    let mut by_name = std::collections::BTreeMap::<String, u64>::new();
    for (tid, (name, ns)) in thread_cpu() {
        let was = before.get(&tid).map_or(0, |(_, ns)| *ns);
        *by_name.entry(name).or_default() += ns.saturating_sub(was);
    }
    by_name
        .into_iter()
        .filter(|(_, ns)| *ns > 0)
        .map(|(name, ns)| (name, json!(cpu_us_per_update(ns as f64 / 1e9, updates))))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn cpu_us_per_update(cpu: f64, updates: u64) -> f64 {
    if updates == 0 {
        return 0.0;
    }
    (cpu * 1e6 / updates as f64 * 1000.0).round() / 1000.0
}

// ----- RSS sampling -------------------------------------------------------------------------

/// A `/proc/self/status` field in KiB (Linux only; `None` elsewhere).
fn rss_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[derive(Debug, Default)]
struct RssSummary {
    peak: u64,
    stall_max: u64,
    stall_first: u64,
    stall_last: u64,
    samples: u64,
}

#[derive(Debug)]
struct RssSampler {
    stalled: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<RssSummary>,
}

impl RssSampler {
    fn start() -> RssSampler {
        let stalled = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (stalled.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut s = RssSummary::default();
            let mut stall_samples = 0u64;
            while !sp.load(Ordering::SeqCst) {
                if let Some(kib) = rss_kib("VmRSS:") {
                    s.samples += 1;
                    s.peak = s.peak.max(kib);
                    if st.load(Ordering::SeqCst) {
                        if stall_samples == 0 {
                            s.stall_first = kib;
                        }
                        stall_samples += 1;
                        s.stall_last = kib;
                        s.stall_max = s.stall_max.max(kib);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            s
        });
        RssSampler {
            stalled,
            stop,
            thread,
        }
    }

    fn finish(self) -> RssSummary {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

// ----- serde: the bare line loop --------------------------------------------------------------

fn serde_mode(args: &Args) -> Result<Value, BoxError> {
    let parse = args.mode == "serde";
    let mut child = Command::new(&args.agent)
        .args(["--flood", &args.updates.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawning {}: {e}", args.agent.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::with_capacity(64 * 1024, child.stdout.take().ok_or("no stdout")?);
    let mut line = String::with_capacity(1024);

    // Read until the response to `id`; returns it and how many session/update lines came first.
    let mut wait_for = |id: u64, line: &mut String| -> Result<(Value, u64), BoxError> {
        let mut updates = 0u64;
        loop {
            line.clear();
            if stdout.read_line(line)? == 0 {
                return Err(format!("agent closed stdout before answering request {id}").into());
            }
            if !parse {
                // `raw`: no JSON at all, only enough to find the end (what the agent can produce).
                if line.contains("\"session/update\"") {
                    updates += 1;
                    continue;
                }
            }
            let msg: Value = serde_json::from_str(line)?;
            if msg.get("method").and_then(Value::as_str) == Some("session/update") {
                updates += 1;
            } else if msg.get("id").and_then(Value::as_u64) == Some(id)
                && msg.get("method").is_none()
            {
                return Ok((msg, updates));
            }
        }
    };
    let mut send = move |v: Value| -> Result<(), BoxError> {
        let mut s = serde_json::to_string(&v)?;
        s.push('\n');
        stdin.write_all(s.as_bytes())?;
        stdin.flush()?;
        Ok(())
    };

    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1,
            "clientCapabilities": {},
            "clientInfo": {"name": "flood_bench", "version": "0"},
        }}),
    )?;
    wait_for(1, &mut line)?;
    let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {
            "cwd": cwd,
            "mcpServers": [],
        }}),
    )?;
    let (resp, _) = wait_for(2, &mut line)?;
    let session = resp
        .pointer("/result/sessionId")
        .and_then(Value::as_str)
        .ok_or("session/new response has no sessionId")?
        .to_owned();

    let cpu0 = cpu_seconds();
    let start = Instant::now();
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
            "sessionId": session,
            "prompt": [{"type": "text", "text": "flood"}],
        }}),
    )?;
    let (resp, updates) = wait_for(3, &mut line)?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;

    drop(send); // closes the agent's stdin: it exits
    let _ = child.wait();
    let stop = resp.pointer("/result/stopReason").and_then(Value::as_str);
    if stop != Some("end_turn") {
        return Err(format!("prompt response: {resp}").into());
    }
    if updates != args.updates {
        return Err(format!(
            "expected {} session/update lines, got {updates}",
            args.updates
        )
        .into());
    }
    Ok(json!({
        "mode": args.mode,
        "updates": updates,
        "seconds": seconds,
        "updates_per_sec": rate(updates, seconds),
        "cpu_seconds": cpu,
        "cpu_us_per_update": cpu_us_per_update(cpu, updates),
    }))
}
