//! What every Rust benchmark client shares: the command line, the prompt text of a round-trip
//! workload, RSS from `/proc/self/status`, percentiles and the one JSON line of output.
//!
//! Included by path (`#[path = …] mod common;`) from `acp-bench-rust` (`bench/`) and from
//! `acp-bench-rust-sdk` (`bench/sdk/`, a workspace of its own because of the official SDK's
//! schema pin), so it depends on nothing but `std` and `serde_json`.

#![allow(dead_code, reason = "each binary uses its own subset of these helpers")]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The workloads: `permission`/`read` (round trips timed by `acp-bench-agent`), `flood`
/// (`acp-mock-agent --flood N`), `spawn` (`acp-mock-agent`, spawn → initialize → session/new).
pub const WORKLOADS: [&str; 4] = ["permission", "read", "flood", "spawn"];

#[derive(Debug, Clone)]
pub struct Args {
    pub client: String,
    pub workload: String,
    pub agent: PathBuf,
    pub workspace: PathBuf,
    /// Round trips (permission, read), updates (flood) or spawns (spawn).
    pub n: u64,
    pub file: Option<PathBuf>,
}

pub fn parse_args(usage: &str, clients: &[&str]) -> Result<Args, BoxError> {
    let mut it = std::env::args().skip(1);
    let client = it.next().ok_or(usage)?;
    if matches!(client.as_str(), "-h" | "--help") {
        return Err(usage.into());
    }
    if !clients.contains(&client.as_str()) {
        return Err(format!("unknown client `{client}`\n{usage}").into());
    }
    let workload = it.next().ok_or(usage)?;
    if !WORKLOADS.contains(&workload.as_str()) {
        return Err(format!("unknown workload `{workload}`\n{usage}").into());
    }
    let mut args = Args {
        n: match workload.as_str() {
            "flood" => 200_000,
            "spawn" => 50,
            _ => 2000,
        },
        client,
        workload,
        agent: PathBuf::new(),
        workspace: PathBuf::new(),
        file: None,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag}: missing value"));
        match flag.as_str() {
            "--agent" => args.agent = PathBuf::from(value()?),
            "--workspace" => args.workspace = PathBuf::from(value()?),
            "--n" => args.n = value()?.replace('_', "").parse()?,
            "--file" => args.file = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument `{flag}`\n{usage}").into()),
        }
    }
    if args.agent.as_os_str().is_empty() {
        return Err(format!("--agent is required\n{usage}").into());
    }
    if args.workspace.as_os_str().is_empty() {
        args.workspace = std::env::current_dir()?;
    }
    if args.n == 0 {
        return Err("--n must be at least 1".into());
    }
    Ok(args)
}

/// The prompt that makes `acp-bench-agent` run a round-trip workload.
pub fn prompt_text(args: &Args) -> Result<String, BoxError> {
    Ok(match args.workload.as_str() {
        "permission" => format!("permission {}", args.n),
        "read" => {
            let file = args.file.as_ref().ok_or("read needs --file")?;
            format!("read {} {}", args.n, file.display())
        }
        other => return Err(format!("workload `{other}` sends no bench prompt").into()),
    })
}

/// Prints the run's one JSON line (with `client`, as `rust:CLIENT`, and `workload`), or the error
/// and exits 1. The agent's `failures` must be 0 and a flood must have counted exactly `--n`
/// updates.
pub fn finish(prog: &str, args: &Args, result: Result<Value, BoxError>) {
    let mut stats = match result {
        Ok(stats) => stats,
        Err(e) => {
            eprintln!("{prog}: {} {}: {e}", args.client, args.workload);
            std::process::exit(1);
        }
    };
    if let Some(failures) = stats.get("failures")
        && failures.as_u64() != Some(0)
    {
        eprintln!("{prog}: the agent counted failures: {stats}");
        std::process::exit(1);
    }
    if let Some(updates) = stats.get("updates")
        && updates.as_u64() != Some(args.n)
    {
        eprintln!("{prog}: expected {} updates: {stats}", args.n);
        std::process::exit(1);
    }
    stats["client"] = json!(format!("rust:{}", args.client));
    stats["workload"] = json!(args.workload);
    println!("{stats}");
}

/// A `/proc/self/status` field in KiB (`VmRSS:`, `VmHWM:`); 0 where there is no `/proc`.
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU time of this whole process so far, in seconds (Linux; 0 elsewhere).
/// `/proc/self/stat` counts clock ticks (USER_HZ, 100 on every mainstream Linux): ±10 ms.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the `(comm)`, which may itself contain spaces: utime is field 14, stime 15.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// The flood's JSON line. `idle_rss_kib` was read before the agent was spawned; the peak is the
/// process's high-water mark (`VmHWM`) now, at the end.
pub fn flood_stats(updates: u64, seconds: f64, cpu: f64, idle_rss_kib: u64) -> Value {
    let per_sec = if seconds > 0.0 {
        (updates as f64 / seconds).round()
    } else {
        0.0
    };
    let cpu_us = if updates > 0 {
        (cpu * 1e6 / updates as f64 * 100.0).round() / 100.0
    } else {
        0.0
    };
    json!({
        "updates": updates,
        "seconds": seconds,
        "updates_per_sec": per_sec,
        "cpu_seconds": cpu,
        "cpu_us_per_update": cpu_us,
        "idle_rss_kib": idle_rss_kib,
        "peak_rss_kib": status_kib("VmHWM:"),
    })
}

/// The spawn workload's JSON line: per run, spawn start → `session/new` answered (`p50_ms`, …)
/// and spawn start → `initialize` answered (`init_p50_ms`, `init_p99_ms`), in ms (percentiles
/// as `acp-bench-agent` takes them: nearest rank on the sorted samples).
pub fn spawn_stats(samples: &[SpawnSample]) -> Value {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let sorted = |f: fn(&SpawnSample) -> Duration| {
        let mut v: Vec<f64> = samples.iter().map(|s| ms(f(s))).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let pct = |v: &[f64], p: f64| -> f64 {
        if v.is_empty() {
            return 0.0;
        }
        v[((v.len() as f64 - 1.0) * p).round() as usize]
    };
    let session = sorted(|s| s.session);
    let init = sorted(|s| s.initialized);
    let mean = if session.is_empty() {
        0.0
    } else {
        session.iter().sum::<f64>() / session.len() as f64
    };
    json!({
        "n": samples.len(),
        "p50_ms": pct(&session, 0.50),
        "p90_ms": pct(&session, 0.90),
        "p99_ms": pct(&session, 0.99),
        "mean_ms": mean,
        "min_ms": pct(&session, 0.0),
        "max_ms": pct(&session, 1.0),
        "init_p50_ms": pct(&init, 0.50),
        "init_p99_ms": pct(&init, 0.99),
    })
}

/// One spawn of the spawn workload: from spawn start to `initialize` answered and to
/// `session/new` answered.
#[derive(Debug, Clone, Copy)]
pub struct SpawnSample {
    pub initialized: Duration,
    pub session: Duration,
}
