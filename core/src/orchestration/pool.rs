//! A pool of agents for one spec: sessions are handed out on pooled agent processes.
//!
//! - **Mode**: [`PoolMode::ProcessPerSession`] gives every session its own process (for agents
//!   that refuse a second connection or serialize permissions across sessions) and shuts it down
//!   when the session is released; [`PoolMode::Shared`] packs up to `max_sessions` sessions onto
//!   each process, least-loaded first.
//! - **Warm spares**: `warm_spares` processes are kept spawned and initialized, so a new session
//!   costs one `session/new` instead of a cold start; a background task refills them.
//! - **Cap**: at most `max_agents` live processes (spares and starting ones included); a session
//!   that would need more waits for a warm spare being started, if any, else fails at once with
//!   `busy`.
//! - **Idle eviction**: a shared process with no session for `idle_timeout` is shut down (the
//!   shutdown ladder signals its whole process group, so its MCP servers and tools go too).
//! - **Prompt queue**: [`PooledSession::prompt`] while a turn runs waits its turn (FIFO, in call
//!   order) instead of failing `busy`; [`PooledSession::cancel`] cancels the running turn and
//!   fails every queued prompt with `cancelled` (they are never sent).
//!
//! The pool's task holds the pool weakly: dropping every [`Pool`] handle stops refilling; live
//! sessions keep their processes until they are released. [`Pool::shutdown`] ends them all.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{Notify, oneshot};

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

    /// The faces' JSON form `{"mode": "process-per-session"|"shared", "maxSessionsPerAgent",
    /// "warmSpares", "maxAgents", "idleTimeoutMs" (null: never)}` over [`PoolConfig::new`]`(spec)`,
    /// checked by the option table (errors at `pool.<field>`; docs/OPTIONS.md).
    pub fn from_json(spec: AgentSpec, v: &Value) -> Result<PoolConfig> {
        crate::options::pool(spec, v, crate::options::Face::Rust)
    }

    /// The table's rules for a config built in Rust (the JSON form is checked as it is read).
    fn check(&self) -> Result<()> {
        let bad = |path: &str, m: String| {
            Err(Error::InvalidConfig {
                path: path.into(),
                message: m,
            })
        };
        if self.max_agents == 0 {
            return bad(
                "pool.maxAgents",
                "expected a whole number in 1 ..= 1024, got 0".into(),
            );
        }
        if self.warm_spares > self.max_agents {
            return bad(
                "pool.warmSpares",
                format!("cannot exceed `maxAgents` ({})", self.max_agents),
            );
        }
        if matches!(self.mode, PoolMode::Shared { max_sessions: 0 }) {
            return bad(
                "pool.maxSessionsPerAgent",
                "expected a whole number in 1 ..= 65536, got 0".into(),
            );
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
    /// Of `starting`: warm spares (a session at the cap waits for one).
    spares_starting: usize,
    /// Processes let go of (released, evicted) and still shutting down.
    ending: Vec<Agent>,
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

/// A cold start counted in `starting`; uncounted when dropped armed (the caller went away
/// while the process started), so `shutdown` never waits for a start that will not finish.
struct Reserved<'a> {
    inner: &'a PoolInner,
    armed: bool,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.inner.lock().starting -= 1;
            self.inner.wake.notify_waiters();
        }
    }
}

/// What [`Pool::claim`] found for a session.
enum Claim {
    Agent(Agent),
    /// A cold start, reserved (counted in `starting`).
    Start,
    WaitForSpare,
    Busy,
    Closed,
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

    /// Resolves once the warm spares are ready (or the pool is at its cap with no spare being
    /// started); fails with the error of a spare that could not be started, or `closed` after
    /// [`Pool::shutdown`].
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
                // At the cap, a spare still starting is waited for (it is what a session gets).
                if st.spares.len() >= self.inner.config.warm_spares
                    || (st.live() >= self.inner.config.max_agents && st.spares_starting == 0)
                {
                    return Ok(());
                }
            }
            woken.await;
        }
    }

    /// Open a session on a pooled process: a shared process with room, else a warm spare, else
    /// a new process (cold start) while under the cap; else, when a warm spare is being started,
    /// that spare once it is ready; else `busy`.
    pub async fn open_session(&self, options: SessionOptions) -> Result<PooledSession> {
        let inner = &self.inner;
        let agent = loop {
            if inner.closed.load(Ordering::SeqCst) {
                return Err(Error::Closed("the pool is shut down".into()));
            }
            let woken = inner.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            match self.claim() {
                Claim::Agent(agent) => break agent,
                Claim::Start => {
                    let agent = self.cold_start().await?;
                    if inner.closed.load(Ordering::SeqCst) {
                        agent.shutdown().await;
                        return Err(Error::Closed("the pool is shut down".into()));
                    }
                    break agent;
                }
                Claim::WaitForSpare => woken.await,
                Claim::Closed => return Err(Error::Closed("the pool is shut down".into())),
                Claim::Busy => {
                    return Err(Error::Busy(format!(
                        "the pool is at its cap of {} agent processes and none has room for a \
                         session",
                        inner.config.max_agents
                    )));
                }
            }
        };
        inner.wake.notify_waiters();
        // The lease exists before `session/new`: when it fails, or this future is dropped while
        // it runs (a cancelled caller), dropping the lease gives the process's place back.
        let lease = Arc::new(Lease {
            pool: Arc::downgrade(inner),
            agent: agent.clone(),
            closing: AtomicBool::new(false),
            released: AtomicBool::new(false),
        });
        let session = agent.new_session(options).await?;
        Ok(PooledSession {
            session,
            queue: Arc::new(PromptQueue::default()),
            lease,
        })
    }

    /// Under one lock: a process with room (shared) or a warm spare, counted as holding one more
    /// session; else a cold start reserved under the cap; else wait for a spare being started.
    fn claim(&self) -> Claim {
        let mut st = self.inner.lock();
        if self.inner.closed.load(Ordering::SeqCst) {
            return Claim::Closed;
        }
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
            return Claim::Agent(m.agent.clone());
        }
        if let Some(agent) = st.spares.pop_front() {
            st.members.push(Member {
                agent: agent.clone(),
                sessions: 1,
                idle_since: None,
            });
            return Claim::Agent(agent);
        }
        if st.live() < self.inner.config.max_agents {
            st.starting += 1;
            return Claim::Start;
        }
        if st.spares_starting > 0 {
            return Claim::WaitForSpare;
        }
        Claim::Busy
    }

    /// The cold start [`Pool::claim`] reserved (given back if this future is dropped).
    async fn cold_start(&self) -> Result<Agent> {
        let inner = &self.inner;
        let mut reserved = Reserved { inner, armed: true };
        let spawned = inner.host.spawn(inner.config.spec.clone()).await;
        let result = {
            let mut st = inner.lock();
            st.starting -= 1;
            reserved.armed = false;
            spawned.inspect(|agent| {
                st.members.push(Member {
                    agent: agent.clone(),
                    sessions: 1,
                    idle_since: None,
                });
            })
        };
        inner.wake.notify_waiters();
        result
    }

    /// Shut every process of the pool down (spares, idle and busy ones; their sessions end) and
    /// stop refilling. Sessions opened later fail with `closed`.
    pub async fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.wake.notify_waiters();
        let (agents, ending): (Vec<Agent>, Vec<Agent>) = {
            let mut st = self.inner.lock();
            let mut all: Vec<Agent> = st.members.drain(..).map(|m| m.agent).collect();
            all.extend(st.spares.drain(..));
            (all, st.ending.clone())
        };
        let mut tasks: Vec<_> = agents
            .into_iter()
            .map(|a| tokio::spawn(async move { a.shutdown().await }))
            .collect();
        // Released or evicted ones still on their way down: wait for them too.
        tasks.extend(ending.into_iter().map(|a| {
            tokio::spawn(async move {
                a.exited().await;
                a.exit_info().unwrap_or_default()
            })
        }));
        for t in tasks {
            let _ = t.await;
        }
        // A start in flight ends up in `members` or `spares` and is shut down there (see
        // `maintain` and `open_session`).
        while self.inner.lock().starting > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
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
    fn release(self: &Arc<Self>, agent: &Agent) {
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
            self.shutdown_later(m.agent);
        }
        self.wake.notify_waiters();
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        // The task holds the pool weakly: let it see that the pool is gone.
        self.wake.notify_waiters();
    }
}

impl PoolInner {
    /// Shut a process the pool let go of (released, evicted) down in the background; it stays
    /// in `ending` until it has exited, so [`Pool::shutdown`] waits for it too.
    fn shutdown_later(self: &Arc<Self>, agent: Agent) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            // Without a runtime the handle's drop ends the agent (its last handle).
            return;
        };
        self.lock().ending.push(agent.clone());
        let weak = Arc::downgrade(self);
        rt.spawn(async move {
            agent.shutdown().await;
            if let Some(inner) = weak.upgrade() {
                inner.lock().ending.retain(|a| a.id() != agent.id());
            }
        });
    }
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
                inner.shutdown_later(agent);
            }
        }
        // Refill one spare at a time (each start is awaited outside the lock).
        let want = {
            let mut st = inner.lock();
            st.prune();
            let short = st.spares.len() + st.spares_starting < inner.config.warm_spares;
            let room = st.live() < inner.config.max_agents;
            // Checked under the lock `shutdown` takes to wait for starts: a start either began
            // before (and `shutdown` waits for it) or sees the pool closed.
            let open = !inner.closed.load(Ordering::SeqCst);
            if short && room && open {
                st.starting += 1;
                st.spares_starting += 1;
            }
            short && room && open
        };
        if want {
            let spawned = inner.host.spawn(inner.config.spec.clone()).await;
            {
                let mut st = inner.lock();
                st.starting -= 1;
                st.spares_starting -= 1;
                match spawned {
                    // Also when the pool was shut down meanwhile: `shutdown` waits for this start
                    // and then ends the spares, so the process is gone when it returns.
                    Ok(agent) => {
                        failures = 0;
                        st.spare_error = None;
                        st.spares.push_back(agent);
                    }
                    Err(e) => {
                        failures += 1;
                        inner.host.config().log.emit(
                            crate::log::Level::Warn,
                            "pool",
                            None,
                            None,
                            || format!("starting a warm spare failed: {e}"),
                        );
                        st.spare_error = Some(e);
                    }
                }
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
    /// Prompts run one at a time, in call order.
    queue: Arc<PromptQueue>,
    lease: Arc<Lease>,
}

#[derive(Debug)]
struct Lease {
    pool: Weak<PoolInner>,
    agent: Agent,
    /// `release` began: prompts that have not started fail with `closed`.
    closing: AtomicBool,
    released: AtomicBool,
}

impl Lease {
    fn release(&self) -> bool {
        self.closing.store(true, Ordering::SeqCst);
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

/// The prompt queue of one pooled session. A place is taken when `prompt` is *called* (not when
/// its future is first polled), so the order is the call order and a `cancel` drops exactly the
/// prompts called before it that have not started: faces that hand the future to another
/// executor (C calls, Kotlin coroutines) get the same order as Rust callers.
#[derive(Debug, Default)]
struct PromptQueue {
    state: Mutex<QueueState>,
}

#[derive(Debug, Default)]
struct QueueState {
    /// A prompt holds the turn (running, or handed the turn and not yet polled).
    running: bool,
    /// The places in line; a dropped sender fails its prompt (`cancel`, `release`).
    waiting: VecDeque<oneshot::Sender<()>>,
}

impl PromptQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The turn at once when nothing runs, else a place at the end of the line.
    fn enter(self: &Arc<Self>) -> Place {
        let mut st = self.lock();
        if !st.running {
            st.running = true;
            return Place {
                queue: self.clone(),
                waiting: None,
                holding: true,
            };
        }
        let (tx, rx) = oneshot::channel();
        st.waiting.push_back(tx);
        Place {
            queue: self.clone(),
            waiting: Some(rx),
            holding: false,
        }
    }

    /// The turn ended: hand it to the first place still waiting, or go idle.
    fn hand_on(&self) {
        let mut st = self.lock();
        while let Some(next) = st.waiting.pop_front() {
            if next.send(()).is_ok() {
                return;
            }
        }
        st.running = false;
    }

    /// Fail every waiting place (the running prompt keeps the turn).
    fn drop_waiting(&self) {
        let dropped = std::mem::take(&mut self.lock().waiting);
        drop(dropped);
    }
}

/// One prompt's place in the queue; dropping it (the prompt finished, or its future was dropped
/// while waiting or running) passes the turn on, so an abandoned prompt never wedges the queue.
#[derive(Debug)]
struct Place {
    queue: Arc<PromptQueue>,
    waiting: Option<oneshot::Receiver<()>>,
    holding: bool,
}

impl Place {
    /// Wait for the turn: false when the place was dropped by `cancel` or `release`.
    async fn turn(&mut self) -> bool {
        if let Some(rx) = self.waiting.as_mut() {
            let handed = rx.await.is_ok();
            self.waiting = None;
            self.holding = handed;
        }
        self.holding
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(mut rx) = self.waiting.take() {
            // Handed the turn just before being dropped: pass it on.
            rx.close();
            if rx.try_recv().is_ok() {
                self.holding = true;
            }
        }
        if self.holding {
            self.queue.hand_on();
        }
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

    /// Prompt; while another prompt of this session runs, wait for it instead of failing
    /// `busy`. Prompts run in the order they were called (the place in line is taken by this
    /// call, before the future is polled). A prompt still queued when [`PooledSession::cancel`]
    /// is called fails with `cancelled` without being sent; dropping the future leaves the line
    /// (or, once running, cancels the turn, and the next prompt waits until it has settled).
    pub fn prompt(
        &self,
        content: Vec<Value>,
    ) -> impl Future<Output = Result<TurnResult>> + Send + use<> {
        self.prompt_abortable(content, std::future::pending())
    }

    /// [`PooledSession::prompt`] with a Stop button (as [`Session::prompt_abortable`]): once
    /// `abort` resolves, a queued prompt fails with `cancelled` at once (never sent) and a
    /// running one is cancelled with `session/cancel` and settles within the cancel grace.
    /// Dropping the future of a running prompt cancels its turn the same way; the next prompt
    /// starts once that turn has settled (a tokio runtime must be current when it starts).
    pub fn prompt_abortable<A>(
        &self,
        content: Vec<Value>,
        abort: A,
    ) -> impl Future<Output = Result<TurnResult>> + Send + use<A>
    where
        A: Future<Output = ()> + Send,
    {
        // Called after `release`: no place in line, it fails `closed` at once.
        let mut place = (!self.lease.closing.load(Ordering::SeqCst)).then(|| self.queue.enter());
        let this = self.clone();
        async move {
            let Some(mut place) = place.take() else {
                return Err(Error::Closed("the session was released".into()));
            };
            let abort = abort;
            tokio::pin!(abort);
            let turn = tokio::select! {
                biased;
                () = &mut abort => return Err(Error::Cancelled),
                turn = place.turn() => turn,
            };
            if this.lease.closing.load(Ordering::SeqCst) {
                return Err(Error::Closed("the session was released".into()));
            }
            if !turn {
                return Err(Error::Cancelled);
            }
            // The turn runs in a task of its own that holds the place: when this future is
            // dropped mid-turn (a cancelled coroutine, a timed-out wait) the turn is cancelled
            // (`session/cancel`) and settles there, so the next prompt never finds it in flight.
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            let session = this.session.clone();
            let mut task = tokio::spawn(async move {
                let stop = async move {
                    let _ = stop_rx.await;
                };
                let result = session.prompt_abortable(content, stop).await;
                drop(place);
                result
            });
            let mut stop_tx = Some(stop_tx);
            loop {
                tokio::select! {
                    joined = &mut task => {
                        return joined.unwrap_or_else(|e| {
                            Err(Error::Closed(format!("the prompt's task ended: {e}")))
                        });
                    }
                    () = &mut abort, if stop_tx.is_some() => {
                        // Dropping the sender stops the turn.
                        stop_tx = None;
                    }
                }
            }
        }
    }

    pub fn prompt_text(
        &self,
        text: &str,
    ) -> impl Future<Output = Result<TurnResult>> + Send + use<> {
        self.prompt(vec![serde_json::json!({ "type": "text", "text": text })])
    }

    /// Cancel the running turn (`session/cancel`) and fail every queued prompt with `cancelled`
    /// (the queued ones are dropped by this call, before the future is polled).
    pub fn cancel(&self) -> impl Future<Output = Result<()>> + Send + use<> {
        self.queue.drop_waiting();
        let session = self.session.clone();
        async move { session.cancel().await }
    }

    /// Give the session back: it is closed on the agent (when it supports `session/close`), the
    /// pool counts one session less on the process, and in process-per-session mode the process
    /// is shut down. Queued and later prompts fail with `closed` (this call marks the session
    /// released and drops the queued prompts before the future is polled, so "later" is call
    /// order in every face). Idempotent; a dropped future leaves the rest to the last handle's
    /// drop.
    pub fn release(&self) -> impl Future<Output = Result<()>> + Send + use<> {
        let first = !self.lease.closing.swap(true, Ordering::SeqCst);
        if first {
            self.queue.drop_waiting();
        }
        let this = self.clone();
        async move {
            if !first {
                return Ok(());
            }
            let info = this.agent().info();
            let closable = info.is_some_and(|i| i.session_capability("close"));
            let mut result = Ok(());
            if closable && this.agent().exit_info().is_none() {
                result = this.session.close().await;
            } else {
                this.agent().forget_session(this.id());
            }
            this.lease.release();
            result
        }
    }
}
