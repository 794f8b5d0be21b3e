//! The pool's numbers (driven by `scripts/bench`; prints, never asserts).
//!
//! ```text
//! pool_bench --agent PATH [--agents N] [--reps N] [--real-agent PATH]
//! ```
//!
//! 1. `N` concurrent agents in one host process: a process-per-session pool opens `N` sessions
//!    at once (each a process of `--agent`), then runs one prompt on each at once. Prints the wall
//!    time of both, the host process's RSS before and after (and per agent), and the agents' own
//!    mean RSS.
//! 2. Time to a first session, `--reps` times each, median and p90: a cold start (spawn +
//!    `initialize` + `session/new`) versus a warm spare (`session/new` on a pool's ready spare).
//!    With `--real-agent` (e.g. the official TypeScript SDK's example agent, a Node process), the
//!    same for it: a mock starts in milliseconds; real agents take much longer.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark command: its output is the point"
)]

use std::time::{Duration, Instant};

use acp_host::{AgentSpec, Host, HostConfig, Pool, PoolConfig, PoolMode, SessionOptions};

fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn cwd() -> SessionOptions {
    SessionOptions::new(std::env::temp_dir().to_string_lossy().into_owned())
}

async fn concurrent(agent: &str, n: usize) {
    let host = Host::new(HostConfig {
        events_enabled: false,
        ..HostConfig::default()
    });
    let pool = Pool::new(
        &host,
        PoolConfig {
            mode: PoolMode::ProcessPerSession,
            warm_spares: 0,
            max_agents: n,
            idle_timeout: None,
            ..PoolConfig::new(AgentSpec::new(agent))
        },
    )
    .unwrap();
    let before = rss_kib("self");
    let t = Instant::now();
    let sessions = futures_join(
        (0..n)
            .map(|_| {
                let pool = pool.clone();
                tokio::spawn(async move { pool.open_session(cwd()).await.unwrap() })
            })
            .collect(),
    )
    .await;
    let open = t.elapsed();
    let t = Instant::now();
    let turns = futures_join(
        sessions
            .iter()
            .map(|s| {
                let s = s.clone();
                tokio::spawn(async move { s.prompt_text("hi").await.unwrap().stop_reason })
            })
            .collect(),
    )
    .await;
    let prompts = t.elapsed();
    assert!(turns.iter().all(|r| r == "end_turn"));
    let after = rss_kib("self");
    let agents_kib: u64 = sessions
        .iter()
        .map(|s| rss_kib(&s.agent().pid().unwrap().to_string()))
        .sum();
    println!("{n} concurrent agents in one host process (process per session, one session each)");
    println!(
        "  open {n} sessions at once   {:>9.1} ms   ({:.2} ms per agent)",
        ms(open),
        ms(open) / n as f64
    );
    println!("  one prompt on each at once  {:>9.1} ms", ms(prompts));
    println!(
        "  host RSS                    {:>9.1} MiB before, {:.1} MiB with {n} agents: {:.0} KiB per agent",
        mib(before),
        mib(after),
        after.saturating_sub(before) as f64 / n as f64
    );
    println!(
        "  agent processes' own RSS    {:>9.1} MiB mean ({} in all)",
        mib(agents_kib) / n as f64,
        n
    );
    pool.shutdown().await;
}

async fn futures_join<T: Send + 'static>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

async fn first_session(label: &str, agent: &[String], reps: usize) {
    let spec = AgentSpec::new(agent[0].clone()).args(agent[1..].iter().cloned());
    let host = Host::new(HostConfig {
        events_enabled: false,
        ..HostConfig::default()
    });
    let mut cold = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let a = host.spawn(spec.clone()).await.unwrap();
        let _s = a.new_session(cwd()).await.unwrap();
        cold.push(t.elapsed());
        a.shutdown().await;
    }
    let mut warm = Vec::new();
    for _ in 0..reps {
        let pool = Pool::new(
            &host,
            PoolConfig {
                warm_spares: 1,
                max_agents: 2,
                ..PoolConfig::new(spec.clone())
            },
        )
        .unwrap();
        pool.ready().await.unwrap();
        let t = Instant::now();
        let _s = pool.open_session(cwd()).await.unwrap();
        warm.push(t.elapsed());
        pool.shutdown().await;
    }
    cold.sort();
    warm.sort();
    let (c50, w50) = (percentile(&cold, 0.5), percentile(&warm, 0.5));
    println!("time to first session, {label} ({reps} runs each)");
    println!(
        "  cold spawn + initialize + session/new  median {:>8.2} ms  p90 {:>8.2} ms",
        ms(c50),
        ms(percentile(&cold, 0.9))
    );
    println!(
        "  warm spare: session/new only           median {:>8.2} ms  p90 {:>8.2} ms",
        ms(w50),
        ms(percentile(&warm, 0.9))
    );
    println!(
        "  warm / cold = {:.3} (median)",
        w50.as_secs_f64() / c50.as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let mut agent = None;
    let mut real = None;
    let mut n = 100usize;
    let mut reps = 20usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--agent" => agent = Some(value()),
            "--real-agent" => real = Some(value()),
            "--agents" => n = value().parse().expect("--agents N"),
            "--reps" => reps = value().parse().expect("--reps N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let agent = agent.expect("--agent PATH");
    concurrent(&agent, n).await;
    println!();
    first_session("mock agent", &[agent], reps).await;
    if let Some(real) = real {
        println!();
        first_session(&format!("real agent ({real})"), &[real], reps.min(5)).await;
    }
}
