//! The object behind `acph_host *`: a tokio runtime, the core `Host`, the face's event queue (fed
//! by a pump task), the id tables, and the asynchronous call machinery.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use acp_host::{Agent, Error, Event, EventKind, Host, Pool, PoolConfig, PooledSession, Session};
use serde_json::Value;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::{oneshot, watch};

use crate::answers::Answers;
use crate::calls::{Calls, Primary};
use crate::event::kind_of;
use crate::log::LogBridge;
use crate::ptr::{self, Callback, EventBox, EventFields, acph_log_fn, acph_wakeup_fn};
use crate::queue::Queue;
use crate::services::Bridge;
use crate::sessions::Sessions;
use crate::status::{Failure, acph_status};

/// Ids the face issues (sessions, calls, service requests) come from one process-wide counter, so
/// an id from another host is never mistaken for one of this host's.
pub(crate) static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An acp-host instance (opaque). Create with `acph_host_new`, free with `acph_host_free`.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct acph_host {
    pub(crate) state: Arc<State>,
    runtime: Mutex<Option<Runtime>>,
}

/// The host's shared state; tasks hold it through an `Arc`.
#[derive(Debug)]
pub(crate) struct State {
    pub host: Host,
    pub rt: Handle,
    pub queue: Arc<Queue>,
    agents: Mutex<HashMap<u64, Agent>>,
    pools: Mutex<HashMap<u64, Pool>>,
    sessions: Mutex<Sessions>,
    /// The permission and elicitation requests the embedder answers (`src/answers.rs`).
    pub answers: Answers,
    /// Every call id the embedder holds, with its outcome once completed (`src/calls.rs`).
    pub calls: Calls,
    pub bridge: Bridge,
    /// The log callback's thread, when the host was created with one.
    pub log: Option<LogBridge>,
    wakeup: Mutex<Option<Arc<Callback<acph_wakeup_fn>>>>,
    closing: watch::Sender<bool>,
    shutdown_started: AtomicBool,
    grace: Duration,
}

// ----- creation, teardown ---------------------------------------------------------------------

impl acph_host {
    /// A host; `log` is the log callback of `acph_host_new_with_log` (its finalizer runs before
    /// this returns when creation fails).
    pub(crate) fn new(
        config: Option<&str>,
        log: Option<Callback<acph_log_fn>>,
    ) -> Result<Box<acph_host>, Failure> {
        let bridge = Bridge::default();
        let (log, sink) = match log {
            Some(cb) => {
                let (b, sink) = LogBridge::start(cb)?;
                (Some(b), Some(sink))
            }
            None => (None, None),
        };
        // On any failure below, dropping `log` ends its thread and runs the finalizer.
        let cfg = crate::config::host_config(config, &bridge, sink)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("acph-runtime")
            .enable_all()
            .on_thread_start(ptr::block_sigpipe_in_this_thread)
            .build()
            .map_err(|e| {
                Failure::new(
                    acph_status::ACPH_STATUS_IO,
                    format!("could not start the runtime: {e}"),
                )
            })?;
        let grace = cfg.core.shutdown_grace;
        let host = {
            let _enter = rt.enter();
            Host::new(cfg.core)
        };
        let queue = Queue::new(host.events()).map_err(|e| {
            Failure::new(
                acph_status::ACPH_STATUS_IO,
                format!("could not create the event fd: {e}"),
            )
        })?;
        // Only now that nothing can fail: the bridge holds the host until teardown's `clear`.
        bridge.attach(host.clone());
        let (closing, _) = watch::channel(false);
        let state = Arc::new(State {
            host,
            rt: rt.handle().clone(),
            queue,
            agents: Mutex::default(),
            pools: Mutex::default(),
            sessions: Mutex::default(),
            answers: Answers::default(),
            calls: Calls::default(),
            bridge,
            log,
            wakeup: Mutex::default(),
            closing,
            shutdown_started: AtomicBool::new(false),
            grace,
        });
        {
            let weak = Arc::downgrade(&state);
            state.queue.start(move || {
                if let Some(st) = weak.upgrade() {
                    st.wake();
                }
            });
        }
        Ok(Box::new(acph_host {
            state,
            runtime: Mutex::new(Some(rt)),
        }))
    }

    /// `acph_host_free`: shut every agent down (bounded), complete pending calls with `closed`
    /// (their events are discarded), release every call id left, stop the runtime, run the
    /// callbacks' finalizers.
    pub(crate) fn teardown(self: Box<Self>) {
        if Handle::try_current().is_ok() || crate::log::on_log_thread() {
            // Called from a library thread (a callback): the runtime cannot be stopped from one
            // of its own threads, nor the log thread joined from itself. Finish on a thread of
            // our own.
            let _ = std::thread::Builder::new()
                .name("acph-free".into())
                .spawn(move || self.teardown());
            return;
        }
        let state = self.state.clone();
        state.queue.discard();
        let runtime = lock(&self.runtime).take();
        if let Some(rt) = runtime {
            let bound = state.grace * 2 + Duration::from_secs(2);
            let st = state.clone();
            rt.block_on(async move {
                let _ = tokio::time::timeout(bound, st.shutdown_all()).await;
            });
            {
                let _enter = rt.enter();
                state.clear();
            }
            rt.shutdown_timeout(Duration::from_secs(1));
        }
        state.clear();
        // Last: the records of the shutdown are delivered, then no call of the log callback
        // follows this.
        if let Some(log) = &state.log {
            log.stop();
        }
    }
}

impl State {
    fn clear(&self) {
        let agents = std::mem::take(&mut *lock(&self.agents));
        drop(agents);
        let pools = std::mem::take(&mut *lock(&self.pools));
        drop(pools);
        let sessions = std::mem::take(&mut *lock(&self.sessions));
        drop(sessions);
        self.answers.clear();
        self.calls.clear();
        self.bridge.clear();
        let wakeup = lock(&self.wakeup).take();
        drop(wakeup);
    }

    pub(crate) fn is_closing(&self) -> bool {
        *self.closing.borrow()
    }

    pub(crate) fn check_open(&self) -> Result<(), Failure> {
        if self.is_closing() {
            Err(Failure::closed())
        } else {
            Ok(())
        }
    }

    /// Shut everything down: pending calls complete with `closed`, every agent goes down the
    /// shutdown ladder, then wait (bounded) until every call has reported.
    async fn shutdown_all(self: Arc<Self>) {
        self.closing.send_replace(true);
        // Pools first: they stop refilling their spares, then end their processes.
        let pools: Vec<Pool> = lock(&self.pools).values().cloned().collect();
        let pool_tasks: Vec<_> = pools
            .into_iter()
            .map(|p| tokio::spawn(async move { p.shutdown().await }))
            .collect();
        self.host.shutdown().await;
        for t in pool_tasks {
            let _ = t.await;
        }
        let agents: Vec<Agent> = lock(&self.agents).values().cloned().collect();
        let tasks: Vec<_> = agents
            .into_iter()
            .map(|a| tokio::spawn(async move { a.shutdown().await }))
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        let deadline = tokio::time::Instant::now() + self.grace + Duration::from_secs(1);
        self.calls.all_reported(deadline).await;
    }

    /// `acph_host_shutdown`: start shutting down; returns at once.
    pub(crate) fn start_shutdown(self: &Arc<Self>) {
        if self.shutdown_started.swap(true, Ordering::SeqCst) {
            return;
        }
        self.closing.send_replace(true);
        let st = self.clone();
        self.rt.spawn(async move {
            st.clone().shutdown_all().await;
            // Every agent answered its shutdown, so its `agent_exited` is queued: end the stream
            // after what is queued now.
            st.host.close_events();
        });
    }

    // ----- wake-up ----------------------------------------------------------------------------

    pub(crate) fn set_wakeup(self: &Arc<Self>, cb: Option<Callback<acph_wakeup_fn>>) {
        let cb = cb.map(Arc::new);
        let old = std::mem::replace(&mut *lock(&self.wakeup), cb.clone());
        drop(old);
        // Events may be waiting already: tell the new callback, from a library thread.
        if let Some(cb) = cb
            && self.queue.is_ready()
        {
            self.rt.spawn(async move { cb.wake() });
        }
    }

    pub(crate) fn wake(&self) {
        let cb = lock(&self.wakeup).clone();
        if let Some(cb) = cb {
            cb.wake();
        }
    }

    // ----- events -----------------------------------------------------------------------------

    /// Turn a core event into the C event (and keep the id tables up to date). Runs on the
    /// pulling thread.
    pub(crate) fn convert(&self, ev: Event) -> Box<EventBox> {
        let (kind, kind_name) = kind_of(ev.kind);
        let mut session = 0;
        if let Some(sid) = &ev.session {
            let mut s = lock(&self.sessions);
            session = if ev.kind == EventKind::SessionOpened {
                s.get_or_create(ev.agent, sid)
            } else {
                s.find(ev.agent, sid).unwrap_or(0)
            };
        }
        let (mut request, mut call) = (0, 0);
        match ev.kind {
            EventKind::PermissionRequested => {
                request = self.answers.permission_requested(&ev.data_value());
            }
            EventKind::PermissionResolved => {
                request = ev.data_value()["requestId"].as_u64().unwrap_or(0);
                self.answers.permission_resolved(request);
            }
            EventKind::CallCompleted => {
                call = ev.data_value()["call"].as_u64().unwrap_or(0);
            }
            EventKind::ServiceRequested => {
                request = ev.data_value()["requestId"].as_u64().unwrap_or(0);
            }
            EventKind::ElicitationRequested => {
                request = ev.data_value()["requestId"].as_u64().unwrap_or(0);
                self.answers.elicitation_requested(request);
            }
            EventKind::ElicitationResolved => {
                request = ev.data_value()["requestId"].as_u64().unwrap_or(0);
                self.answers.elicitation_resolved(request);
            }
            EventKind::AgentExited => {
                // A pooled process ended: forget the handles its released sessions left (a
                // `session_opened` pulled after the release re-creates one); handles still held
                // stay until `acph_pool_release_session`.
                let owned = lock(&self.agents).contains_key(&ev.agent);
                if !owned {
                    lock(&self.sessions).retain(|e| e.agent != ev.agent || e.pooled.is_some());
                }
            }
            _ => {}
        }
        ptr::event_box(
            EventFields {
                seq: ev.seq,
                agent: ev.agent,
                session,
                turn: ev.turn.unwrap_or(0),
                request,
                call,
                kind,
                replay: ev.replay,
                kind_name,
            },
            ev.to_json(),
            ev.session.as_deref(),
        )
    }

    // ----- lookups ----------------------------------------------------------------------------

    pub(crate) fn agent(&self, id: u64) -> Result<Agent, Failure> {
        lock(&self.agents)
            .get(&id)
            .cloned()
            .ok_or_else(|| Failure::stale("agent", id))
    }

    /// Forget an agent: its id and its sessions' handles become stale; a live agent is shut down
    /// in the background.
    pub(crate) fn release_agent(&self, id: u64) -> Result<(), Failure> {
        let agent = lock(&self.agents)
            .remove(&id)
            .ok_or_else(|| Failure::stale("agent", id))?;
        lock(&self.sessions).remove_agent(id);
        self.rt.spawn(async move {
            agent.shutdown().await;
        });
        Ok(())
    }

    /// (agent id, ACP session id) of a session handle.
    pub(crate) fn session_key(&self, handle: u64) -> Result<(u64, Arc<str>), Failure> {
        lock(&self.sessions)
            .by_handle
            .get(&handle)
            .map(|e| (e.agent, e.sid.clone()))
            .ok_or_else(|| Failure::stale("session", handle))
    }

    /// The session handle of (agent, ACP session id), if this host has one.
    pub(crate) fn find_session(&self, agent: u64, sid: &str) -> Result<u64, Failure> {
        lock(&self.sessions).find(agent, sid).ok_or_else(|| {
            Failure::new(
                acph_status::ACPH_STATUS_STALE_ID,
                format!("agent {agent} has no session \"{sid}\" in this host"),
            )
        })
    }

    /// A core handle for an open session.
    pub(crate) fn session(&self, handle: u64) -> Result<Session, Failure> {
        let (agent, sid, known) = {
            let s = lock(&self.sessions);
            let e = s
                .by_handle
                .get(&handle)
                .ok_or_else(|| Failure::stale("session", handle))?;
            (e.agent, e.sid.clone(), e.session.clone())
        };
        if let Some(s) = known {
            return Ok(s);
        }
        let open = self.agent(agent)?.session(&sid).ok_or_else(|| {
            Failure::new(
                acph_status::ACPH_STATUS_NOT_FOUND,
                format!("session {sid} is not open"),
            )
        })?;
        if let Some(e) = lock(&self.sessions).by_handle.get_mut(&handle) {
            e.session = Some(open.clone());
        }
        Ok(open)
    }

    /// An agent by id: the host's own, else a pool's process serving a session handle this host
    /// holds (for `acph_agent_info`).
    pub(crate) fn agent_or_pooled(&self, id: u64) -> Result<Agent, Failure> {
        if let Ok(a) = self.agent(id) {
            return Ok(a);
        }
        lock(&self.sessions)
            .by_handle
            .values()
            .find_map(|e| match &e.pooled {
                Some((_, p)) if e.agent == id => Some(p.agent().clone()),
                _ => None,
            })
            .ok_or_else(|| Failure::stale("agent", id))
    }

    /// What a prompt on a session handle goes through: the pool's queue for a pooled session.
    pub(crate) fn prompter(&self, handle: u64) -> Result<Prompter, Failure> {
        let pooled = lock(&self.sessions)
            .by_handle
            .get(&handle)
            .and_then(|e| e.pooled.as_ref().map(|(_, p)| p.clone()));
        match pooled {
            Some(p) => Ok(Prompter::Pooled(p)),
            None => Ok(Prompter::Plain(self.session(handle)?)),
        }
    }

    /// `ACPH_STATUS_INVALID_ARGUMENT` for a pooled session (the pool owns its lifecycle).
    pub(crate) fn not_pooled(&self, handle: u64, what: &str) -> Result<(), Failure> {
        let pooled = lock(&self.sessions)
            .by_handle
            .get(&handle)
            .is_some_and(|e| e.pooled.is_some());
        if pooled {
            return Err(Failure::invalid(format!(
                "session {handle} belongs to a pool: {what} is not for pooled sessions \
                 (give it back with acph_pool_release_session)"
            )));
        }
        Ok(())
    }

    // ----- pools ------------------------------------------------------------------------------

    /// `acph_pool_new`: a pool on this host; its warm spares start in the background.
    pub(crate) fn new_pool(&self, config: PoolConfig) -> Result<u64, Failure> {
        self.check_open()?;
        let pool = {
            let _enter = self.rt.enter();
            Pool::new(&self.host, config)?
        };
        let id = next_id();
        lock(&self.pools).insert(id, pool);
        Ok(id)
    }

    pub(crate) fn pool(&self, id: u64) -> Result<Pool, Failure> {
        lock(&self.pools)
            .get(&id)
            .cloned()
            .ok_or_else(|| Failure::stale("pool", id))
    }

    /// `acph_pool_release`: the pool's id and its sessions' handles become stale; its processes
    /// are shut down in the background.
    pub(crate) fn release_pool(&self, id: u64) -> Result<(), Failure> {
        let pool = lock(&self.pools)
            .remove(&id)
            .ok_or_else(|| Failure::stale("pool", id))?;
        let held = {
            let mut s = lock(&self.sessions);
            let held: Vec<u64> = s
                .by_handle
                .iter()
                .filter(|(_, e)| matches!(&e.pooled, Some((p, _)) if *p == id))
                .map(|(h, _)| *h)
                .collect();
            held.into_iter()
                .filter_map(|h| s.remove(h))
                .collect::<Vec<_>>()
        };
        self.rt.spawn(async move {
            pool.shutdown().await;
            drop(held);
        });
        Ok(())
    }

    pub(crate) fn op_pool_open(
        self: &Arc<Self>,
        pool_id: u64,
        pool: Pool,
        options: acp_host::SessionOptions,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static {
        let st = self.clone();
        async move {
            let pooled = pool.open_session(options).await?;
            let agent = pooled.agent().id();
            let sid = pooled.id().to_owned();
            let Some(handle) = st.register_pooled(pool_id, &pooled) else {
                // The pool was released while the session opened: it goes back at once.
                let _ = pooled.release().await;
                return Err(Error::Closed("the pool was released".into()));
            };
            Ok(serde_json::json!({ "session": handle, "sessionId": sid, "agent": agent }))
        }
    }

    /// Register a pooled session under a handle, unless its pool was released meanwhile (checked
    /// under the pools' lock, so `release_pool` either sees the handle or is seen).
    fn register_pooled(&self, pool_id: u64, pooled: &PooledSession) -> Option<u64> {
        let pools = lock(&self.pools);
        if !pools.contains_key(&pool_id) {
            return None;
        }
        let mut s = lock(&self.sessions);
        let h = s.get_or_create(pooled.agent().id(), pooled.id());
        if let Some(e) = s.by_handle.get_mut(&h) {
            e.session = Some(pooled.session().clone());
            e.pooled = Some((pool_id, pooled.clone()));
        }
        Some(h)
    }

    /// Take a pooled session out of the tables (its handle is stale from here on).
    pub(crate) fn take_pooled(&self, handle: u64) -> Result<PooledSession, Failure> {
        let mut s = lock(&self.sessions);
        match s.by_handle.get(&handle) {
            None => return Err(Failure::stale("session", handle)),
            Some(e) if e.pooled.is_none() => {
                return Err(Failure::invalid(format!(
                    "session {handle} was not opened by a pool (acph_pool_open_session)"
                )));
            }
            Some(_) => {}
        }
        s.remove(handle)
            .and_then(|e| e.pooled)
            .map(|(_, p)| p)
            .ok_or_else(|| Failure::stale("session", handle))
    }

    fn register_agent(&self, agent: Agent) -> Value {
        let json = agent_json(&agent);
        lock(&self.agents).insert(agent.id(), agent);
        json
    }

    fn register_session(&self, agent: u64, session: Session) -> u64 {
        let mut s = lock(&self.sessions);
        let h = s.get_or_create(agent, session.id());
        if let Some(e) = s.by_handle.get_mut(&h) {
            e.session = Some(session);
        }
        h
    }

    // ----- calls ------------------------------------------------------------------------------

    /// Run `fut` as an asynchronous call: returns its id at once (the embedder's until released,
    /// `src/calls.rs`); the outcome is kept for `acph_call_wait` and arrives as a `call_completed`
    /// event (in order with everything else). `agent` is the agent the call concerns (0: none; a
    /// spawn reports the new agent); `primary` the id of the result `acph_call_wait` hands over.
    pub(crate) fn start_call<F, D>(
        self: &Arc<Self>,
        agent: u64,
        primary: Primary,
        fut: F,
    ) -> Result<u64, Failure>
    where
        F: Future<Output = Result<D, Error>> + Send + 'static,
        D: Into<Value> + Send + 'static,
    {
        self.spawn_call(agent, primary, |cancel| async move {
            tokio::select! {
                r = fut => r,
                Ok(e) = cancel => Err(e),
            }
        })
    }

    /// As `start_call`, for work that settles on its own once told to stop (a prompt: cancelling
    /// the call sends `session/cancel` and the turn settles within the cancel grace). `make` gets
    /// a future that resolves when `acph_call_cancel` names the call.
    pub(crate) fn start_call_abortable<F, D>(
        self: &Arc<Self>,
        agent: u64,
        make: impl FnOnce(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>) -> F,
    ) -> Result<u64, Failure>
    where
        F: Future<Output = Result<D, Error>> + Send + 'static,
        D: Into<Value> + Send + 'static,
    {
        self.spawn_call(agent, Primary::Nothing, |cancel| {
            make(Box::pin(async move {
                if cancel.await.is_err() {
                    std::future::pending::<()>().await;
                }
            }))
        })
    }

    fn spawn_call<F, D>(
        self: &Arc<Self>,
        agent: u64,
        primary: Primary,
        make: impl FnOnce(oneshot::Receiver<Error>) -> F,
    ) -> Result<u64, Failure>
    where
        F: Future<Output = Result<D, Error>> + Send + 'static,
        D: Into<Value> + Send + 'static,
    {
        self.check_open()?;
        let id = next_id();
        let (cancel_tx, cancel_rx) = oneshot::channel::<Error>();
        self.calls.start(id, primary, cancel_tx);
        let st = self.clone();
        let mut closing = self.closing.subscribe();
        let fut = make(cancel_rx);
        self.rt.spawn(async move {
            let result = tokio::select! {
                r = fut => r.map(Into::into),
                _ = closing.wait_for(|c| *c) => Err(closed_error()),
            };
            let agent = match (&result, agent) {
                (Ok(v), 0) => v["agent"].as_u64().unwrap_or(0),
                _ => agent,
            };
            // Kept before the event is queued: whoever sees `call_completed` finds the outcome.
            st.calls.complete(id, &result);
            let reported = match &result {
                Ok(v) => Ok(v.clone()),
                Err(e) => Err(e),
            };
            st.host.report_call(id, agent, reported).await;
            st.calls.reported();
        });
        Ok(id)
    }

    /// Start a fire-and-forget task (no call id).
    fn spawn_detached<F>(&self, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.rt.spawn(fut);
    }

    // ----- operations -------------------------------------------------------------------------

    pub(crate) fn op_spawn(
        self: &Arc<Self>,
        spec: acp_host::AgentSpec,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static {
        let st = self.clone();
        async move {
            let agent = st.host.spawn(spec).await?;
            Ok(st.register_agent(agent))
        }
    }

    /// `acph_host_connect`: the handshake over the adopted stream, then the agent registered
    /// like a spawned one (no process: nothing to contain, nothing to restart).
    pub(crate) fn op_connect(
        self: &Arc<Self>,
        (reader, writer): crate::stream::Halves,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static {
        let st = self.clone();
        async move {
            let agent = st.host.connect(reader, writer).await?;
            Ok(st.register_agent(agent))
        }
    }

    /// A terminal login, then the relaunched agent registered like a spawned one (the old id
    /// stays valid until released; its `agent_exited` follows).
    pub(crate) fn op_terminal_auth(
        self: &Arc<Self>,
        agent: Agent,
        method_id: String,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static {
        let st = self.clone();
        async move {
            let fresh = agent.terminal_auth(&method_id).await?;
            Ok(st.register_agent(fresh))
        }
    }

    pub(crate) fn op_open_session(
        self: &Arc<Self>,
        agent: Agent,
        how: OpenHow,
        options: acp_host::SessionOptions,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static {
        let st = self.clone();
        async move {
            let session = match how {
                OpenHow::New => agent.new_session(options).await?,
                OpenHow::Load(id) => agent.load_session(&id, options).await?,
                OpenHow::Resume(id) => agent.resume_session(&id, options).await?,
                OpenHow::Fork(id) => agent.fork_session(&id, options).await?,
            };
            let sid = session.id().to_owned();
            let h = st.register_session(agent.id(), session);
            Ok(serde_json::json!({ "session": h, "sessionId": sid }))
        }
    }

    pub(crate) fn cancel_session(&self, handle: u64) -> Result<(), Failure> {
        self.check_open()?;
        match self.prompter(handle)? {
            Prompter::Plain(session) => self.spawn_detached(async move {
                let _ = session.cancel().await;
            }),
            Prompter::Pooled(pooled) => {
                // The queued prompts are dropped by this call, before it returns.
                let cancel = pooled.cancel();
                self.spawn_detached(async move {
                    let _ = cancel.await;
                });
            }
        }
        Ok(())
    }
}

type BoxedTurn = Pin<Box<dyn Future<Output = Result<acp_host::TurnResult, Error>> + Send>>;

/// The session a prompt goes to: a plain one (a second prompt while a turn runs is `busy`) or a
/// pooled one (it waits its turn in the pool's queue).
#[derive(Debug, Clone)]
pub(crate) enum Prompter {
    Plain(Session),
    Pooled(PooledSession),
}

impl Prompter {
    pub(crate) fn agent(&self) -> u64 {
        match self {
            Prompter::Plain(s) => s.agent().id(),
            Prompter::Pooled(p) => p.agent().id(),
        }
    }

    /// The prompt's future; a pooled prompt takes its place in line here, at the call.
    pub(crate) fn prompt<A>(&self, content: Vec<Value>, abort: A) -> BoxedTurn
    where
        A: Future<Output = ()> + Send + 'static,
    {
        match self {
            Prompter::Plain(s) => {
                let s = s.clone();
                Box::pin(async move { s.prompt_abortable(content, abort).await })
            }
            Prompter::Pooled(p) => Box::pin(p.prompt_abortable(content, abort)),
        }
    }
}

/// How a session is opened.
#[derive(Debug, Clone)]
pub(crate) enum OpenHow {
    New,
    Load(String),
    Resume(String),
    Fork(String),
}

fn closed_error() -> Error {
    Error::Closed("the host is shutting down".into())
}

/// `{"agent", "protocolVersion", "agentInfo", "agentCapabilities", "authMethods", "exited"}`.
pub(crate) fn agent_json(agent: &Agent) -> Value {
    let mut v = serde_json::json!({ "agent": agent.id() });
    if let Some(info) = agent.info() {
        v["protocolVersion"] = Value::from(info.protocol_version);
        v["agentInfo"] = info.agent_info.clone();
        v["agentCapabilities"] = info.capabilities.clone();
        v["authMethods"] = Value::from(info.auth_methods.clone());
    }
    v["exited"] = agent
        .exit_info()
        .and_then(|e| serde_json::to_value(e).ok())
        .unwrap_or(Value::Null);
    // A supervised agent whose supervisor gave up (`agent_failed`): it stays down.
    v["restartsExhausted"] = Value::Bool(agent.restarts_exhausted());
    v
}
