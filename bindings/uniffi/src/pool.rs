//! `Pool` and `PooledSession`: the core's agent pool (docs/ORCHESTRATION.md, "Pools").

use std::sync::{Arc, Mutex};

use crate::agent::{Agent, Session, TurnResult, json_arg, settled};
use crate::error::AcpError;
use crate::options::SessionOptions;
use crate::runtime::{on_rt, rt};
use acp_host::EventHub;

/// What a pool holds right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Record)]
pub struct PoolStats {
    /// Processes serving sessions (or idle shared ones, until evicted).
    pub agents: u32,
    /// Warm spares ready for a session.
    pub spares: u32,
    /// Processes being started.
    pub starting: u32,
    /// Sessions handed out and not released.
    pub sessions: u32,
}

/// The core pool, shut down when the last `Pool` or `PooledSession` object referring to it goes
/// (or by `shutdown()`, or by the host's shutdown).
#[derive(Debug)]
pub(crate) struct PoolShared {
    pub(crate) pool: acp_host::Pool,
}

impl Drop for PoolShared {
    fn drop(&mut self) {
        let pool = self.pool.clone();
        rt().spawn(async move { pool.shutdown().await });
    }
}

/// A pool of agent processes for one spec (`Host.pool`): sessions on warm, reused processes.
#[derive(Debug, uniffi::Object)]
pub struct Pool {
    shared: Arc<PoolShared>,
    /// The host's agents list (an `Agent` object of a pooled process shares it).
    owned: Arc<Mutex<Vec<acp_host::Agent>>>,
    hub: Option<EventHub>,
}

impl Pool {
    pub(crate) fn new(
        host: &acp_host::Host,
        config: acp_host::PoolConfig,
        owned: Arc<Mutex<Vec<acp_host::Agent>>>,
        hub: Option<EventHub>,
    ) -> Result<(Arc<Pool>, Arc<PoolShared>), AcpError> {
        let core = {
            let _enter = rt().enter();
            acp_host::Pool::new(host, config)?
        };
        let shared = Arc::new(PoolShared { pool: core });
        Ok((
            Arc::new(Pool {
                shared: shared.clone(),
                owned,
                hub,
            }),
            shared,
        ))
    }
}

#[uniffi::export]
impl Pool {
    /// A session on a pooled process: a shared process with room, else a warm spare, else a new
    /// process while under `maxAgents`, else (after waiting for a spare being started, if any)
    /// `Busy`; `Closed` after `shutdown()`.
    pub async fn open_session(
        &self,
        options: SessionOptions,
    ) -> Result<Arc<PooledSession>, AcpError> {
        let options = options.to_core()?;
        let shared = self.shared.clone();
        let owned = self.owned.clone();
        let hub = self.hub.clone();
        on_rt(async move {
            let session = shared.pool.open_session(options).await?;
            Ok(Arc::new(PooledSession {
                session,
                _pool: shared,
                owned,
                hub,
            }))
        })
        .await
    }

    /// Resolves once the warm spares are started (or the pool is at its cap); fails with the
    /// error of a spare that could not start, or `Closed` after `shutdown()`.
    pub async fn ready(&self) -> Result<(), AcpError> {
        let pool = self.shared.pool.clone();
        on_rt(async move { Ok(pool.ready().await?) }).await
    }

    /// What the pool holds right now.
    pub fn stats(&self) -> PoolStats {
        let s = self.shared.pool.stats();
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        PoolStats {
            agents: n(s.agents),
            spares: n(s.spares),
            starting: n(s.starting),
            sessions: n(s.sessions),
        }
    }

    /// Shut every process of the pool down (spares, idle and busy ones: their sessions end) and
    /// wait; later sessions fail with `Closed`.
    pub async fn shutdown(&self) {
        let pool = self.shared.pool.clone();
        on_rt(async move { pool.shutdown().await }).await;
    }
}

/// A session handed out by a `Pool`. A prompt while another of this session runs waits its turn
/// (in call order) instead of failing `Busy`. `release()` gives it back (closing the object, or
/// dropping the last reference, does too).
#[derive(Debug, uniffi::Object)]
pub struct PooledSession {
    session: acp_host::PooledSession,
    /// Keeps the pool alive while one of its sessions is held.
    _pool: Arc<PoolShared>,
    owned: Arc<Mutex<Vec<acp_host::Agent>>>,
    hub: Option<EventHub>,
}

impl Drop for PooledSession {
    /// `close()` from Kotlin/Swift (or the last reference going) releases the session.
    fn drop(&mut self) {
        let session = self.session.clone();
        rt().spawn(async move {
            let _ = session.release().await;
        });
    }
}

#[uniffi::export]
impl PooledSession {
    pub fn id(&self) -> String {
        self.session.id().to_owned()
    }

    /// The pooled process serving it (the pool starts and ends it).
    pub fn agent(&self) -> Arc<Agent> {
        Arc::new(Agent::new(
            self.session.agent().clone(),
            self.owned.clone(),
            self.hub.clone(),
        ))
    }

    /// The underlying session, for its state, modes, models and config options (its own
    /// `prompt` does not queue: a second one while a turn runs fails `Busy`).
    pub fn session(&self) -> Arc<Session> {
        Session::wrap(self.session.session().clone(), self.hub.clone())
    }

    /// Send one text block and wait for the turn to end (and for the session's open event
    /// streams to take its `turn_ended`, as `Session.prompt`); while another prompt of this
    /// session runs, wait for it first. `Cancelled` when `cancel()` is called while this one waits (it
    /// is never sent). Cancelling the calling coroutine leaves the line (a running turn is
    /// cancelled with `session/cancel`, and the next prompt starts once it has settled).
    pub async fn prompt(&self, text: String) -> Result<TurnResult, AcpError> {
        let turn = self.session.prompt_text(&text);
        let (session, hub) = (self.session.session().clone(), self.hub.clone());
        on_rt(async move { settled(turn.await, &session, hub).await }).await
    }

    /// `prompt` with content blocks (each an ACP content block as JSON).
    pub async fn prompt_content(&self, blocks: Vec<String>) -> Result<TurnResult, AcpError> {
        let mut content = Vec::with_capacity(blocks.len());
        for (i, b) in blocks.iter().enumerate() {
            content.push(json_arg(&format!("blocks[{i}]"), b)?);
        }
        let turn = self.session.prompt(content);
        let (session, hub) = (self.session.session().clone(), self.hub.clone());
        on_rt(async move { settled(turn.await, &session, hub).await }).await
    }

    /// `session/cancel` for the running turn; every prompt still waiting its turn fails with
    /// `Cancelled` (never sent).
    pub async fn cancel(&self) -> Result<(), AcpError> {
        let cancel = self.session.cancel();
        on_rt(async move { Ok(cancel.await?) }).await
    }

    /// Give the session back: prompts still waiting fail with `Closed`, the session is closed on
    /// the agent (when it supports `session/close`), and in process-per-session mode its
    /// process is shut down. Later prompts fail with `Closed`. Idempotent.
    pub async fn release(&self) -> Result<(), AcpError> {
        let release = self.session.release();
        on_rt(async move { Ok(release.await?) }).await
    }
}
