//! `acp-bench-agent`: the agent every round-trip benchmark client talks to.
//!
//! A single-threaded, blocking stdio ACP v1 agent with no scripting: it answers `initialize` and
//! `session/new`, and each `session/prompt` runs the workload its text names:
//!
//! - `permission N`: N sequential `session/request_permission` requests (a realistic tool call
//!   and the four standard options);
//! - `read N PATH`: N sequential `fs/read_text_file` requests for PATH;
//!
//! timing each round trip agent-side: from just before the request is written to just after its
//! response line is read (what an agent waits for). The turn then ends (`end_turn`) with the
//! statistics in the response's `_meta.bench`, and the same JSON is written to the file named by
//! `ACP_BENCH_OUT` when set, so a client needs no way to see `_meta`. An answer that is an error,
//! a permission not `selected`, or read content of the wrong length counts in `failures`.
//!
//! Reading directly from a locked stdin on the one thread keeps the agent's own overhead off the
//! measurement (the mock agent reads on a thread of its own and hands lines over a channel).

#![allow(
    clippy::print_stderr,
    reason = "a benchmark tool; its diagnostics go to stderr"
)]

use std::io::{BufRead, BufWriter, Write};
use std::time::Instant;

use serde_json::{Value, json};

fn main() {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut line = String::new();
    let mut next_id: u64 = 1_000_000;
    let mut cwd = String::from("/");
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(method), Some(id)) = (msg.get("method").and_then(Value::as_str), msg.get("id"))
        else {
            continue; // a notification (session/cancel) or a stray response
        };
        let id = id.clone();
        let result = match method {
            "initialize" => json!({
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": false},
                "authMethods": [],
                "agentInfo": {"name": "acp-bench-agent", "version": "0"},
            }),
            "session/new" => {
                cwd = msg["params"]["cwd"].as_str().unwrap_or("/").to_owned();
                json!({"sessionId": "bench-1"})
            }
            "session/prompt" => {
                let session = msg["params"]["sessionId"]
                    .as_str()
                    .unwrap_or("bench-1")
                    .to_owned();
                let text = prompt_text(&msg["params"]);
                match run_workload(&text, &session, &cwd, &mut input, &mut out, &mut next_id) {
                    Ok(stats) => {
                        if let Some(path) = std::env::var_os("ACP_BENCH_OUT") {
                            let _ = std::fs::write(path, stats.to_string());
                        }
                        json!({"stopReason": "end_turn", "_meta": {"bench": stats}})
                    }
                    Err(e) => {
                        write_line(
                            &mut out,
                            &json!({"jsonrpc": "2.0", "id": id,
                                    "error": {"code": -32602, "message": e}}),
                        );
                        continue;
                    }
                }
            }
            _ => {
                write_line(
                    &mut out,
                    &json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "method not found"}}),
                );
                continue;
            }
        };
        write_line(
            &mut out,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
    }
}

fn write_line(out: &mut impl Write, v: &Value) {
    let mut bytes = serde_json::to_vec(v).unwrap_or_default();
    bytes.push(b'\n');
    // The client went away: nothing left to do but end quietly at the next read's EOF.
    let _ = out.write_all(&bytes).and_then(|()| out.flush());
}

fn prompt_text(params: &Value) -> String {
    params["prompt"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn run_workload(
    text: &str,
    session: &str,
    cwd: &str,
    input: &mut impl BufRead,
    out: &mut impl Write,
    next_id: &mut u64,
) -> Result<Value, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let count = |s: Option<&&str>| -> Result<usize, String> {
        s.and_then(|s| s.replace('_', "").parse().ok())
            .ok_or_else(|| format!("expected `permission N` or `read N PATH`, got `{text}`"))
    };
    let (kind, n, path) = match words.first().copied() {
        Some("permission") => ("permission", count(words.get(1))?, None),
        Some("read") => {
            let path = words.get(2).ok_or("read N PATH: no PATH")?.to_string();
            ("read", count(words.get(1))?, Some(path))
        }
        _ => {
            return Err(format!(
                "unknown workload `{text}` (permission N | read N PATH)"
            ));
        }
    };
    let expected_len = match &path {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| format!("read {p}: {e}"))?
                .len(),
        ),
        None => None,
    };
    let mut samples_ns: Vec<u64> = Vec::with_capacity(n);
    let mut failures = 0u64;
    let mut line = String::new();
    for i in 0..n {
        *next_id += 1;
        let id = *next_id;
        let request = match kind {
            "permission" => permission_request(id, session, cwd, i),
            _ => json!({"jsonrpc": "2.0", "id": id, "method": "fs/read_text_file",
                        "params": {"sessionId": session, "path": path}}),
        };
        let mut bytes = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        let start = Instant::now();
        out.write_all(&bytes)
            .and_then(|()| out.flush())
            .map_err(|e| format!("write: {e}"))?;
        // Read until this request's response; anything else (an update the client sends? none
        // in ACP, but be lenient) is skipped.
        let response = loop {
            line.clear();
            match input.read_line(&mut line) {
                Ok(0) => return Err("client closed stdin mid-workload".into()),
                Ok(_) => {}
                Err(e) => return Err(format!("read: {e}")),
            }
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v.get("id").and_then(Value::as_u64) == Some(id)
                && v.get("method").is_none()
            {
                break v;
            }
        };
        let elapsed = start.elapsed();
        samples_ns.push(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
        let ok = match kind {
            "permission" => response["result"]["outcome"]["outcome"] == "selected",
            _ => response["result"]["content"].as_str().map(str::len) == expected_len,
        };
        if !ok {
            failures += 1;
            if failures == 1 {
                eprintln!("acp-bench-agent: unexpected answer: {}", line.trim_end());
            }
        }
    }
    samples_ns.sort_unstable();
    let pct = |p: f64| -> f64 {
        if samples_ns.is_empty() {
            return 0.0;
        }
        let idx = ((samples_ns.len() as f64 - 1.0) * p).round() as usize;
        samples_ns[idx] as f64 / 1000.0
    };
    let mean = if samples_ns.is_empty() {
        0.0
    } else {
        samples_ns.iter().map(|&s| s as f64).sum::<f64>() / samples_ns.len() as f64 / 1000.0
    };
    Ok(json!({
        "kind": kind,
        "n": n,
        "failures": failures,
        "p50_us": pct(0.50),
        "p90_us": pct(0.90),
        "p99_us": pct(0.99),
        "mean_us": mean,
        "min_us": pct(0.0),
        "max_us": pct(1.0),
    }))
}

/// A permission request shaped like a real agent's: an edit tool call with input and a location.
fn permission_request(id: u64, session: &str, cwd: &str, i: usize) -> Value {
    let file = format!("{}/src/main.rs", cwd.trim_end_matches('/'));
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "session/request_permission",
        "params": {
            "sessionId": session,
            "toolCall": {
                "toolCallId": format!("call-{i}"),
                "title": "Edit src/main.rs",
                "kind": "edit",
                "status": "pending",
                "rawInput": {"path": file, "old_string": "fn main() {}", "new_string": "fn main() { println!(\"hi\"); }"},
                "locations": [{"path": file, "line": 1}],
            },
            "options": [
                {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
                {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
            ],
        },
    })
}
