//! Pools (`acp_host::Pool`) for the facade's `host.pool(...)`.
//!
//! The calls of one pooled session (`prompt`, `cancel`, `release`) take effect in the order JS
//! made them: each napi call runs as its own tokio task, and two tasks started in one JS tick
//! may be polled in either order, so the core's call (which takes a prompt's place in line,
//! drops the queued prompts, or marks the session released) is made synchronously in the JS
//! call, and only its future is spawned.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_host::{Host, Pool, PoolConfig, PooledSession};
use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Result};
use napi_derive::napi;
use serde_json::Value;

use crate::{
    HostCore, NativeAgent, NativeSession, abortable, closed_err, core_err, session_options,
    turn_json, wrap_session,
};

/// A pool of agents for one spawn spec.
#[napi]
#[derive(Debug)]
pub struct NativePool {
    pool: Pool,
    id: u64,
    core: Arc<HostCore>,
    /// The spec has a restart policy: its agents are supervised.
    supervised: bool,
}

impl NativePool {
    /// Make the pool (its task starts filling the warm spares) and register it with the host,
    /// whose `close` shuts it down.
    pub(crate) fn open(core: &Arc<HostCore>, host: &Host, config: PoolConfig) -> Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let supervised = config.spec.restart.is_some();
        let mut pools = core.pools.lock().map_err(|_| closed_err())?;
        // Under the lock `close` takes the pools with: a pool is either shut down by it or refused.
        let Some(pools) = pools.as_mut() else {
            return Err(closed_err());
        };
        // `Pool::new` spawns the pool's task: it needs napi's runtime entered on this JS thread.
        let pool = napi::bindgen_prelude::within_runtime_if_available(|| Pool::new(host, config))
            .map_err(core_err)?;
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        pools.insert(id, pool.clone());
        Ok(NativePool {
            pool,
            id,
            core: core.clone(),
            supervised,
        })
    }
}

#[napi]
impl NativePool {
    /// Open a session on a pooled process (a shared one with room, a warm spare, or a cold start
    /// under the cap; else `busy`). Aborting rejects with `cancelled` at once; the open itself
    /// runs on (a start cut off midway would leave the pool's books wrong), and a session it
    /// opens anyway is released.
    #[napi]
    pub async fn open_session(
        &self,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativePooledSession> {
        let options = session_options(&options_json)?;
        let pool = self.pool.clone();
        let task = tokio::spawn(async move { pool.open_session(options).await });
        let pooled = abortable(abort, async move {
            task.await.unwrap_or_else(|e| {
                Err(acp_host::Error::Closed(format!(
                    "opening a pooled session failed: {e}"
                )))
            })
        })
        .await?;
        Ok(NativePooledSession {
            pooled,
            supervised: self.supervised,
        })
    }

    /// Resolves once the warm spares are up (or the pool is at its cap); rejects with the error
    /// of a spare that could not start, or `closed` after `shutdown`.
    #[napi]
    pub async fn ready(&self, abort: Option<u32>) -> Result<()> {
        let pool = self.pool.clone();
        abortable(abort, async move { pool.ready().await }).await
    }

    /// `{agents, spares, starting, sessions}`.
    #[napi(
        ts_return_type = "{ agents: number; spares: number; starting: number; sessions: number }"
    )]
    pub fn stats(&self) -> Value {
        let s = self.pool.stats();
        serde_json::json!({
            "agents": s.agents,
            "spares": s.spares,
            "starting": s.starting,
            "sessions": s.sessions,
        })
    }

    /// Shut every process of the pool down (spares, idle and busy ones) and stop refilling;
    /// later `openSession` calls fail with `closed`. Idempotent.
    #[napi]
    pub async fn shutdown(&self) -> Result<()> {
        self.pool.shutdown().await;
        if let Ok(mut pools) = self.core.pools.lock()
            && let Some(pools) = pools.as_mut()
        {
            pools.remove(&self.id);
        }
        Ok(())
    }
}

/// A session handed out by a pool. Dropped (garbage-collected) without `release`, it is released
/// then.
#[napi]
#[derive(Debug)]
pub struct NativePooledSession {
    pooled: PooledSession,
    supervised: bool,
}

#[napi]
impl NativePooledSession {
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.pooled.id().to_owned()
    }

    #[napi(getter)]
    pub fn agent_id(&self) -> u32 {
        self.pooled.agent().id() as u32
    }

    /// The pooled agent serving it.
    #[napi]
    pub fn agent(&self) -> NativeAgent {
        NativeAgent {
            agent: self.pooled.agent().clone(),
            supervised: self.supervised,
        }
    }

    /// The underlying session (its prompts bypass the queue).
    #[napi]
    pub fn session(&self) -> NativeSession {
        wrap_session(self.pooled.session().clone())
    }

    /// The materialised session state (docs: `SessionView`).
    #[napi]
    pub fn state(&self) -> Value {
        serde_json::to_value(self.pooled.session().state()).unwrap_or(Value::Null)
    }

    /// Prompt; while another prompt of this session runs, wait for it (FIFO in call order).
    /// Aborting withdraws a queued prompt (nothing is sent) or abandons the running turn (the
    /// agent gets `session/cancel`); the call rejects with `cancelled` at once.
    #[napi(ts_return_type = "Promise<any>")]
    pub fn prompt<'env>(
        &self,
        env: &'env Env,
        content: Vec<Value>,
        abort: Option<u32>,
    ) -> Result<PromiseRaw<'env, Value>> {
        // The place in line is taken by this call, in JS call order.
        let turn = self.pooled.prompt(content);
        env.spawn_future(async move { Ok(turn_json(abortable(abort, turn).await?)) })
    }

    /// `session/cancel` for the running turn; the prompts queued before this call reject with
    /// `cancelled` without being sent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn cancel<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        // The queued prompts are dropped by this call, in JS call order.
        let cancel = self.pooled.cancel();
        env.spawn_future(async move { cancel.await.map_err(core_err) })
    }

    /// Give the session back (closed on the agent when it supports `session/close`; in
    /// process-per-session mode its process is shut down). Later prompts reject with `closed`.
    /// Idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        // Marked released (queued and later prompts fail `closed`) by this call, in JS call order.
        let release = self.pooled.release();
        env.spawn_future(async move { release.await.map_err(core_err) })
    }
}
