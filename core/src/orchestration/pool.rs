//! A pool of agents for one spec: sessions are handed out on pooled agent processes.
//!
//! - **Mode**: [`PoolMode::ProcessPerSession`] gives every session its own process (for agents
//!   that refuse a second connection or serialize permissions across sessions) and shuts it down
//!   when the session is released; [`PoolMode::Shared`] packs up to `max_sessions` sessions onto
//!   each process, least-loaded first.
//! - **Warm spares**: `warm_spares` processes are kept spawned and initialized, so a new session
//!   costs one `session/new` instead of a cold start; a background task refills them.
//! - **Cap**: at most `max_agents` live processes (spares and starting ones included); a session
//!   that would need more fails at once with `busy`.
//! - **Idle eviction**: a shared process with no session for `idle_timeout` is shut down (the
//!   shutdown ladder signals its whole process group, so its MCP servers and tools go too).
//! - **Prompt queue**: [`PooledSession::prompt`] while a turn runs waits its turn (FIFO) instead
//!   of failing `busy`; [`PooledSession::cancel`] cancels the running turn and fails every queued
//!   prompt with `cancelled` (they are never sent).
//!
//! The pool's task holds the pool weakly: dropping every [`Pool`] handle stops refilling; live
//! sessions keep their processes until they are released. [`Pool::shutdown`] ends them all.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

use crate::agent::{Agent, SessionOptions};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::session::{Session, TurnResult};
use crate::transport::AgentSpec;

/// How sessions map onto processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolMode {
    /// One process per session, shut down when the session is released.
    ProcessPerSession,
    /// Up to `max_sessions` sessions per process (at least 1).
    Shared { max_sessions: usize },
}

/// A pool's settings. `Default` (with a spec): process per session, 1 warm spare, 8 agents,
/// idle processes evicted after 5 minutes.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    pub spec: AgentSpec,
    pub mode: PoolMode,
    /// Processes kept started and initialized, ready for a session.
    pub warm_spares: usize,
    /// Live processes at most (spares and starting ones count).
    pub max_agents: usize,
    /// A shared process without sessions this long is shut down; `None`: never.
    pub idle_timeout: Option<Duration>,
}

impl PoolConfig {
    pub fn new(spec: AgentSpec) -> PoolConfig {
        PoolConfig {
            spec,
            mode: PoolMode::ProcessPerSession,
            warm_spares: 1,
            max_agents: 8,
            idle_timeout: Some(Duration::from_secs(300)),
        }
    }

    /// Apply the faces' JSON form `{"mode": "process-per-session"|"shared",
    /// "maxSessionsPerAgent", "warmSpares", "maxAgents", "idleTimeoutMs" (null: never)}` (every
    /// field optional; unknown fields refused) over [`PoolConfig::new`]`(spec)`.
    pub fn from_json(spec: AgentSpec, v: &Value) -> Result<PoolConfig> {
        let bad = |m: String| Error::InvalidConfig {
            path: "pool".into(),
            message: m,
        };
        let obj = v
            .as_object()
            .ok_or_else(|| bad("must be an object".into()))?;
        let mut c = PoolConfig::new(spec);
        let count = |k: &str, v: &Value| -> Result<usize> {
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad(format!("`{k}` must be a non-negative integer")))
        };
        let mut shared = None;
        let mut per_agent = None;
        for (k, val) in obj {
            match k.as_str() {
                "mode" => match val.as_str() {
                    Some("process-per-session") => shared = Some(false),
                    Some("shared") => shared = Some(true),
                    _ => {
                        return Err(bad(
                            "`mode` must be \"process-per-session\" or \"shared\"".into()
                        ));
                    }
                },
                "maxSessionsPerAgent" => per_agent = Some(count(k, val)?),
                "warmSpares" => c.warm_spares = count(k, val)?,
                "maxAgents" => c.max_agents = count(k, val)?,
                "idleTimeoutMs" => {
                    c.idle_timeout = if val.is_null() {
                        None
                    } else {
                        Some(Duration::from_millis(count(k, val)? as u64))
                    };
                }
                other => {
                    return Err(bad(format!(
                        "unknown field `{other}` (mode, maxSessionsPerAgent, warmSpares, \
                         maxAgents, idleTimeoutMs)"
                    )));
                }
            }
        }
        c.mode = match (shared, per_agent) {
            (Some(true), n) => PoolMode::Shared {
                max_sessions: n.unwrap_or(8),
            },
            (_, Some(_)) if shared != Some(true) => {
                return Err(bad("`maxSessionsPerAgent` needs `mode: \"shared\"`".into()));
            }
            _ => PoolMode::ProcessPerSession,
        };
        c.check()?;
        Ok(c)
    }

    fn check(&self) -> Result<()> {
        let bad = |m: &str| {
            Err(Error::InvalidConfig {
                path: "pool".into(),
                message: m.into(),
            })
        };
        if self.max_agents == 0 {
            return bad("`maxAgents` must be at least 1");
        }
        if self.warm_spares > self.max_agents {
            return bad("`warmSpares` cannot exceed `maxAgents`");
        }
        if matches!(self.mode, PoolMode::Shared { max_sessions: 0 }) {
            return bad("`maxSessionsPerAgent` must be at least 1");
        }
        Ok(())
    }
}

/// What the pool holds right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Processes serving sessions (or idle, in shared mode, until evicted).
    pub agents: usize,
    /// Warm spares ready for a session.
    pub spares: usize,
    /// Processes being started.
    pub starting: usize,
    /// Sessions handed out and not released.
    pub sessions: usize,
}

/// A pool of agents for one spec. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

#[derive(Debug)]
struct PoolInner {
    host: Host,
    config: PoolConfig,
    state: Mutex<State>,
    /// Wakes the pool's task (a spare taken, a session released, shutdown, the pool dropped).
    wake: Arc<Notify>,
    closed: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    members: Vec<Member>,
    spares: VecDeque<Agent>,
    starting: usize,
    /// Why the last warm spare could not be started (cleared by the next success).
    spare_error: Option<Error>,
}

#[derive(Debug)]
struct Member {
    agent: Agent,
    sessions: usize,
    idle_since: Option<Instant>,
}

impl State {
    fn live(&self) -> usize {
        self.members.len() + self.spares.len() + self.starting
    }

    /// Forget processes that ended for good (crashed and not supervised, or given up on).
    fn prune(&mut self) {
        self.members.retain(|m| !m.agent.is_gone());
        self.spares.retain(|a| !a.is_gone());
    }
}

impl Pool {
    /// A pool on `host`; starts filling its warm spares in the background (a tokio runtime must
    /// be current).
    pub fn new(host: &Host, config: PoolConfig) -> Result<Pool> {
        config.check()?;
        let inner = Arc::new(PoolInner {
            host: host.clone(),
            config,
            state: Mutex::new(State::default()),
            wake: Arc::new(Notify::new()),
            closed: AtomicBool::new(false),
        });
        tokio::spawn(maintain(Arc::downgrade(&inner)));
        Ok(Pool { inner })
    }

    pub fn config(&self) -> &PoolConfig {
        &self.inner.config
    }

    pub fn stats(&self) -> PoolStats {
        let st = self.inner.lock();
        PoolStats {
            agents: st.members.len(),
            spares: st.spares.len(),
            starting: st.starting,
            sessions: st.members.iter().map(|m| m.sessions).sum(),
        }
    }

    /// Resolves once the warm spares are ready (or the pool is at its cap); fails with the
    /// error of a spare that could not be started, or `closed` after [`Pool::shutdown`].
    pub async fn ready(&self) -> Result<()> {
        loop {
            let woken = self.inner.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            {
                let st = self.inner.lock();
                if self.inner.closed.load(Ordering::SeqCst) {
                    return Err(Error::Closed("the pool is shut down".into()));
                }
                if let Some(e) = &st.spare_error {
                    return Err(e.clone());
                }
                // At the cap with nothing starting, no spare can come: ready as it gets.
                if st.spares.len() >= self.inner.config.warm_spares
                    || (st.live() >= self.inner.config.max_agents && st.starting == 0)
                {
                    return Ok(());
                }
            }
            woken.await;
        }
    }

    /// Open a session on a pooled process: a shared process with room, else a warm spare, else
    /// a new process (cold start) while under the cap; else `busy`.
    pub async fn open_session(&self, options: SessionOptions) -> Result<PooledSession> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed("the pool is shut down".into()));
        }
        let agent = match self.claim() {
            Some(agent) => agent,
            None => {
                let agent = self.start_for_session().await?;
                if inner.closed.load(Ordering::SeqCst) {
                    agent.shutdown().await;
                    return Err(Error::Closed("the pool is shut down".into()));
                }
                agent
            }
        };
        inner.wake.notify_waiters();
        // From here the process counts one session more: a failed `session/new`, or this future
        // dropped before it answered, gives it back (the lease does the same later).
        let lease = Lease {
            pool: Arc::downgrade(inner),
            agent: agent.clone(),
            released: AtomicBool::new(false),
        };
        let session = agent.new_session(options).await?;
        Ok(PooledSession {
            session,
            queue: Arc::new(tokio::sync::Mutex::new(())),
            cancels: Arc::new(tokio::sync::watch::channel(0).0),
            lease: Arc::new(lease),
        })
    }

    /// A process with room (shared) or a warm spare, counted as holding one more session.
    fn claim(&self) -> Option<Agent> {
        let mut st = self.inner.lock();
        st.prune();
        if let PoolMode::Shared { max_sessions } = self.inner.config.mode
            && let Some(m) = st
                .members
                .iter_mut()
                .filter(|m| m.sessions < max_sessions)
                .min_by_key(|m| m.sessions)
        {
            m.sessions += 1;
            m.idle_since = None;
            return Some(m.agent.clone());
        }
        let agent = st.spares.pop_front()?;
        st.members.push(Member {
            agent: agent.clone(),
            sessions: 1,
            idle_since: None,
        });
        Some(agent)
    }

    /// A cold start for a session, if under the cap.
    async fn start_for_session(&self) -> Result<Agent> {
        let inner = &self.inner;
        {
            let mut st = inner.lock();
            if st.live() >= inner.config.max_agents {
                return Err(Error::Busy(format!(
                    "the pool is at its cap of {} agent processes and none has room for a session",
                    inner.config.max_agents
                )));
            }
            st.starting += 1;
        }
        let starting = Starting(inner);
        let spawned = inner.host.spawn(inner.config.spec.clone()).await;
        let mut st = inner.lock();
        std::mem::forget(starting);
        st.starting -= 1;
        let agent = spawned?;
        st.members.push(Member {
            agent: agent.clone(),
            sessions: 1,
            idle_since: None,
        });
        Ok(agent)
    }

    /// Shut every process of the pool down (spares, idle and busy ones; their sessions end) and
    /// stop refilling. Sessions opened later fail with `closed`.
    pub async fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.wake.notify_waiters();
        let agents: Vec<Agent> = {
            let mut st = self.inner.lock();
            let mut all: Vec<Agent> = st.members.drain(..).map(|m| m.agent).collect();
            all.extend(st.spares.drain(..));
            all
        };
        let tasks: Vec<_> = agents
            .into_iter()
            .map(|a| tokio::spawn(async move { a.shutdown().await }))
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        // A start in flight ends up in `members` or `spares` (or is dropped, see `Starting`)
        // and is shut down below.
        loop {
            let woken = self.inner.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.inner.lock().starting == 0 {
                break;
            }
            woken.await;
        }
        let late: Vec<Agent> = {
            let mut st = self.inner.lock();
            let mut all: Vec<Agent> = st.members.drain(..).map(|m| m.agent).collect();
            all.extend(st.spares.drain(..));
            all
        };
        for a in late {
            a.shutdown().await;
        }
    }
}

impl PoolInner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A session of `agent` ended: one less on it; in process-per-session mode its process goes.
    fn release(&self, agent: &Agent) {
        let mut st = self.lock();
        let Some(i) = st.members.iter().position(|m| m.agent.id() == agent.id()) else {
            return;
        };
        let m = &mut st.members[i];
        m.sessions = m.sessions.saturating_sub(1);
        let evict = matches!(self.config.mode, PoolMode::ProcessPerSession) && m.sessions == 0;
        if m.sessions == 0 {
            m.idle_since = Some(Instant::now());
        }
        if evict {
            let m = st.members.swap_remove(i);
            drop(st);
            shutdown_later(m.agent);
        }
        self.wake.notify_waiters();
    }
}

/// One process being started (`State::starting`); dropped before the start finished (the future
/// was abandoned), it gives the count back so the cap and `shutdown` do not wait for it forever.
struct Starting<'a>(&'a PoolInner);

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.starting = st.starting.saturating_sub(1);
        drop(st);
        self.0.wake.notify_waiters();
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        // The task holds the pool weakly: let it see that the pool is gone.
        self.wake.notify_waiters();
    }
}

fn shutdown_later(agent: Agent) {
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(async move {
            agent.shutdown().await;
        });
    }
    // Without a runtime the handle's drop ends the agent (its last handle).
}

/// The pool's task: keeps the warm spares filled and evicts idle shared processes.
async fn maintain(weak: Weak<PoolInner>) {
    let mut failures = 0u32;
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if inner.closed.load(Ordering::SeqCst) {
            return;
        }
        let wake = inner.wake.clone();
        let woken = wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        // Idle eviction.
        let mut next_check: Option<Duration> = None;
        if let Some(limit) = inner.config.idle_timeout {
            let mut st = inner.lock();
            st.prune();
            let now = Instant::now();
            let mut evicted = Vec::new();
            st.members.retain(|m| match m.idle_since {
                Some(t) if m.sessions == 0 && now.duration_since(t) >= limit => {
                    evicted.push(m.agent.clone());
                    false
                }
                Some(t) if m.sessions == 0 => {
                    let left = limit - now.duration_since(t);
                    next_check = Some(next_check.map_or(left, |n| n.min(left)));
                    true
                }
                _ => true,
            });
            drop(st);
            for agent in evicted {
                shutdown_later(agent);
            }
        }
        // Refill one spare at a time (each start is awaited outside the lock).
        let want = {
            let mut st = inner.lock();
            st.prune();
            let short = st.spares.len() + st.starting < inner.config.warm_spares;
            let room = st.live() < inner.config.max_agents;
            if short && room {
                st.starting += 1;
            }
            short && room
        };
        if want {
            let starting = Starting(&inner);
            let spawned = inner.host.spawn(inner.config.spec.clone()).await;
            let unwanted = {
                let mut st = inner.lock();
                std::mem::forget(starting);
                st.starting -= 1;
                match spawned {
                    Ok(agent) if !inner.closed.load(Ordering::SeqCst) => {
                        failures = 0;
                        st.spare_error = None;
                        st.spares.push_back(agent);
                        None
                    }
                    Ok(agent) => Some(agent),
                    Err(e) => {
                        failures += 1;
                        tracing::warn!(error = %e, "pool: starting a warm spare failed");
                        st.spare_error = Some(e);
                        None
                    }
                }
            };
            if let Some(agent) = unwanted {
                agent.shutdown().await;
            }
            inner.wake.notify_waiters();
            if failures > 0 {
                // A spec that cannot start must not spin: back off up to 30 s.
                let pause =
                    Duration::from_millis(100u64 << failures.min(8)).min(Duration::from_secs(30));
                drop(inner);
                tokio::time::sleep(pause).await;
            }
            continue;
        }
        drop(inner);
        match next_check {
            Some(d) => {
                let _ = tokio::time::timeout(d, woken).await;
            }
            None => woken.await,
        }
    }
}

/// A session handed out by a [`Pool`]. Cheap to clone; the session is released (closed on the
/// agent when it supports `session/close`; in process-per-session mode its process is shut down)
/// by [`PooledSession::release`] or when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct PooledSession {
    session: Session,
    /// Prompts run one at a time, in call order (tokio's mutex is fair).
    queue: Arc<tokio::sync::Mutex<()>>,
    /// Bumped by `cancel`: prompts queued before it fail at once instead of running.
    cancels: Arc<tokio::sync::watch::Sender<u64>>,
    lease: Arc<Lease>,
}

#[derive(Debug)]
struct Lease {
    pool: Weak<PoolInner>,
    agent: Agent,
    released: AtomicBool,
}

impl Lease {
    fn release(&self) -> bool {
        if self.released.swap(true, Ordering::SeqCst) {
            return false;
        }
        if let Some(pool) = self.pool.upgrade() {
            pool.release(&self.agent);
        }
        true
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.release();
    }
}

impl PooledSession {
    pub fn id(&self) -> &str {
        self.session.id()
    }

    /// The underlying session (state, modes, config options, models).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The pooled process serving it.
    pub fn agent(&self) -> &Agent {
        self.session.agent()
    }

    /// Prompt; while another prompt of this session runs, wait for it (FIFO) instead of failing
    /// `busy`. A prompt still queued when [`PooledSession::cancel`] is called fails with
    /// `cancelled` without being sent.
    pub async fn prompt(&self, content: Vec<Value>) -> Result<TurnResult> {
        let mut cancels = self.cancels.subscribe();
        let generation = *cancels.borrow_and_update();
        let _turn = tokio::select! {
            biased;
            _ = cancels.changed() => return Err(Error::Cancelled),
            turn = self.queue.lock() => turn,
        };
        if *self.cancels.borrow() != generation {
            return Err(Error::Cancelled);
        }
        if self.lease.released.load(Ordering::SeqCst) {
            return Err(Error::Closed("the session was released".into()));
        }
        self.session.prompt(content).await
    }

    pub async fn prompt_text(&self, text: &str) -> Result<TurnResult> {
        self.prompt(vec![serde_json::json!({ "type": "text", "text": text })])
            .await
    }

    /// Cancel the running turn (`session/cancel`) and fail every queued prompt with `cancelled`.
    pub async fn cancel(&self) -> Result<()> {
        self.cancels.send_modify(|g| *g += 1);
        self.session.cancel().await
    }

    /// Give the session back: it is closed on the agent (when it supports `session/close`), the
    /// pool counts one session less on the process, and in process-per-session mode the process
    /// is shut down. Later prompts fail with `closed`. Idempotent.
    pub async fn release(&self) -> Result<()> {
        if self.lease.released.load(Ordering::SeqCst) {
            return Ok(());
        }
        let info = self.agent().info();
        let closable = info.is_some_and(|i| i.session_capability("close"));
        let mut result = Ok(());
        if closable && self.agent().exit_info().is_none() {
            result = self.session.close().await;
        } else {
            self.agent().forget_session(self.id());
        }
        self.lease.release();
        result
    }
}
