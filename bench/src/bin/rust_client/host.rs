//! The acp-host client: the library's Rust API as an embedder uses it.
//!
//! - permission: a `PermissionDecider` that answers `allow-once` at once;
//! - read: the built-in sandboxed fs service (the file lies in the session's cwd);
//! - flood: `Host` + `EventStream::next_batch` on a consumer task, counting the turn's
//!   `session_update` events until `turn_ended` (as `core/examples/flood_bench.rs` `rust`);
//! - spawn: one `Host`, `host.spawn` (which answers once `initialize` is) + `agent.new_session`,
//!   then `agent.shutdown`.

use std::sync::Arc;
use std::time::Instant;

use acp_host::{
    AgentSpec, Event, EventKind, Host, HostConfig, PermissionHandler, PermissionRequest,
    SessionOptions,
};
use serde_json::Value;

use crate::common::{self, Args, BoxError, SpawnSample};

pub async fn run(args: &Args) -> Result<Value, BoxError> {
    match args.workload.as_str() {
        "permission" | "read" => round_trips(args).await,
        "flood" => flood(args).await,
        "spawn" => spawn(args).await,
        other => Err(format!("unknown workload `{other}`").into()),
    }
}

fn cwd(args: &Args) -> String {
    args.workspace.to_string_lossy().into_owned()
}

async fn round_trips(args: &Args) -> Result<Value, BoxError> {
    let text = common::prompt_text(args)?;
    let decider = |_req: PermissionRequest| async { Ok(Some("allow-once".to_owned())) };
    let host = Host::new(HostConfig {
        events_enabled: false,
        permission: PermissionHandler::Decider(Arc::new(decider)),
        ..HostConfig::default()
    });
    let agent = host
        .spawn(AgentSpec::new(args.agent.to_string_lossy()))
        .await?;
    let session = agent.new_session(SessionOptions::new(cwd(args))).await?;
    let turn = session.prompt_text(&text).await?;
    agent.shutdown().await;
    drop(session);
    host.shutdown().await;
    if turn.stop_reason != "end_turn" {
        return Err(format!("turn ended with {}", turn.stop_reason).into());
    }
    Ok(turn.raw["_meta"]["bench"].clone())
}

async fn flood(args: &Args) -> Result<Value, BoxError> {
    let host = Host::new(HostConfig::default());
    let events = host.events().ok_or("event stream already taken")?;
    // Only updates that belong to a turn count.
    let consumer = tokio::spawn(async move {
        let mut buf: Vec<Event> = Vec::with_capacity(1024);
        let mut updates = 0u64;
        loop {
            if events.next_batch(&mut buf, 1024).await == 0 {
                return (updates, None);
            }
            for ev in buf.drain(..) {
                match ev.kind {
                    EventKind::SessionUpdate if ev.turn.is_some() => updates += 1,
                    EventKind::TurnEnded => return (updates, Some(Instant::now())),
                    _ => {}
                }
            }
        }
    });
    let idle = common::status_kib("VmRSS:");
    let spec = AgentSpec::new(args.agent.to_string_lossy())
        .args(["--flood".to_owned(), args.n.to_string()]);
    let agent = host.spawn(spec).await?;
    let session = agent.new_session(SessionOptions::new(cwd(args))).await?;

    let cpu0 = common::cpu_seconds();
    let start = Instant::now();
    let turn = session.prompt_text("flood").await?;
    let (updates, ended) = consumer.await?;
    let cpu = common::cpu_seconds() - cpu0;
    let seconds = ended
        .ok_or("event stream ended before turn_ended")?
        .duration_since(start)
        .as_secs_f64();
    agent.shutdown().await;
    drop(session);
    host.shutdown().await;
    if turn.stop_reason != "end_turn" {
        return Err(format!("turn ended with {}", turn.stop_reason).into());
    }
    Ok(common::flood_stats(updates, seconds, cpu, idle))
}

async fn spawn(args: &Args) -> Result<Value, BoxError> {
    let host = Host::new(HostConfig {
        events_enabled: false,
        ..HostConfig::default()
    });
    let mut samples = Vec::with_capacity(usize::try_from(args.n).unwrap_or(0));
    for _ in 0..args.n {
        let start = Instant::now();
        let agent = host
            .spawn(AgentSpec::new(args.agent.to_string_lossy()))
            .await?;
        let initialized = start.elapsed();
        let session = agent.new_session(SessionOptions::new(cwd(args))).await?;
        samples.push(SpawnSample {
            initialized,
            session: start.elapsed(),
        });
        drop(session);
        agent.shutdown().await;
    }
    host.shutdown().await;
    Ok(common::spawn_stats(&samples))
}
