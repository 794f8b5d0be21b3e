//! Bytes in versus bytes delivered for an agent that resends the whole accumulated output in
//! every `tool_call_update` (driven by `scripts/bench`).
//!
//! ```text
//! coalesce_bench [--agent PATH] [--updates N] [--render-us US] off|on
//! ```
//!
//! Runs `acp-mock-agent --cumulative N` (one tool call, N updates, each carrying all output so
//! far, then `completed`) while the consumer takes `--render-us` per event (a UI that renders
//! each one), with `HostConfig::coalesce_tool_call_updates` off or on. Prints one JSON line: the
//! updates the agent sent and their bytes (`bytes_in`), the `tool_call_update` events delivered
//! and their bytes, the final content's size (equal in both modes, or exit 1) and the seconds
//! from prompt to `turn_ended`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark command: its output is the point"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use acp_host::{AgentSpec, EventKind, Host, HostConfig, SessionOptions};
use serde_json::{Value, json};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str = "usage: coalesce_bench [--agent PATH] [--updates N] [--render-us US] off|on";

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build();
    let result = rt.map_err(BoxError::from).and_then(|rt| rt.block_on(run()));
    match result {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("coalesce_bench: {e}");
            std::process::exit(1);
        }
    }
}

async fn run() -> Result<Value, BoxError> {
    let exe = std::env::current_exe()?;
    let mut agent = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("acp-mock-agent"))
        .unwrap_or_else(|| PathBuf::from("acp-mock-agent"));
    let (mut updates, mut render_us, mut mode) = (1000u64, 500u64, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--agent" => agent = PathBuf::from(value()?),
            "--updates" => updates = value()?.parse()?,
            "--render-us" => render_us = value()?.parse()?,
            "off" | "on" => mode = Some(a == "on"),
            _ => return Err(format!("unknown argument `{a}`\n{USAGE}").into()),
        }
    }
    let coalesce = mode.ok_or(USAGE)?;
    let host = Host::new(HostConfig {
        coalesce_tool_call_updates: coalesce,
        ..HostConfig::default()
    });
    let events = host.events().ok_or("no event stream")?;
    let spec = AgentSpec::new(agent.to_string_lossy())
        .args(["--cumulative".to_owned(), updates.to_string()]);
    let a = host.spawn(spec).await?;
    let session = a
        .new_session(SessionOptions::new(std::env::temp_dir().to_string_lossy()))
        .await?;
    let render = Duration::from_micros(render_us);
    let start = Instant::now();
    let prompt = tokio::spawn(async move { session.prompt_text("build").await });
    let (mut delivered, mut bytes_out, mut represented, mut last) = (0u64, 0usize, 0u64, 0usize);
    while let Some(ev) = events.next().await {
        if ev.kind == EventKind::TurnEnded {
            break;
        }
        if ev.update_kind().as_deref() != Some("tool_call_update") {
            continue;
        }
        delivered += 1;
        bytes_out += ev.data.get().len();
        let v = ev.data_value();
        represented += v["_meta"]["acpHost"]["coalesced"].as_u64().unwrap_or(1);
        if let Some(text) = v["content"][0]["content"]["text"].as_str() {
            last = text.len();
        }
        // The UI's work per event (a busy wait: sleep granularity is too coarse).
        let until = Instant::now() + render;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    prompt.await??;
    host.shutdown().await;
    // What the agent sent: update i carries i chunks of output (the mock's default chunk).
    let chunk = "compiling crate … ok (a line of build output, about sixty-four bytes)\n".len();
    let final_len = chunk * updates as usize;
    if represented != updates + 1 || last != final_len {
        return Err(format!(
            "lost updates: {represented} of {} represented, last output {last} B of {final_len}",
            updates + 1
        )
        .into());
    }
    Ok(json!({
        "mode": if coalesce { "on" } else { "off" },
        "updates_in": updates + 1,
        "output_bytes_in": chunk as u64 * updates * (updates + 1) / 2,
        "events_delivered": delivered,
        "bytes_delivered": bytes_out,
        "final_output_bytes": last,
        "seconds": seconds,
    }))
}
