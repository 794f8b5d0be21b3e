//! `NativePool`, `NativePooledSession`: thin handles over the core's `Pool` and `PooledSession`.
//!
//! The host keeps every pool it made until the pool is shut down or the host closes (`Pools`),
//! as it keeps its agents: a script that drops its `Pool` object does not lose the processes,
//! and `Host.close()` leaves none behind.
//!
//! Calls that change the pool's books (`open_session`, `release`, `shutdown`) run as their own
//! tasks, so that a caller that gives up (a `timeout`, Ctrl-C, a cancelled asyncio task) never
//! drops them half-way: a session opened for a caller that is gone is released at once.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use acp_host::{Error, Pool, PooledSession, SessionOptions, TurnResult};
use pyo3::prelude::*;
use serde_json::Value;

use crate::events::{Streams, Subscription};
use crate::host::{NativeAgent, opt_timeout, parse_json};
use crate::session::{NativeSession, TurnTuple, turn_tuple};
use crate::{call, errors, rt, within};

/// The pools of a host that are not shut down yet.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pools(Arc<Mutex<PoolList>>);

#[derive(Debug, Default)]
pub(crate) struct PoolList {
    next: u64,
    live: Vec<(u64, Pool)>,
}

impl Pools {
    fn lock(&self) -> std::sync::MutexGuard<'_, PoolList> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `make` a pool and keep it, unless the host is `closed` (checked under the lock).
    pub(crate) fn add(
        &self,
        closed: &AtomicBool,
        make: impl FnOnce() -> acp_host::Result<Pool>,
    ) -> Option<acp_host::Result<(u64, Pool)>> {
        let mut list = self.lock();
        if closed.load(Ordering::SeqCst) {
            return None;
        }
        Some(make().map(|pool| {
            list.next += 1;
            let id = list.next;
            list.live.push((id, pool.clone()));
            (id, pool)
        }))
    }

    fn remove(&self, id: u64) -> bool {
        let mut list = self.lock();
        let before = list.live.len();
        list.live.retain(|(i, _)| *i != id);
        list.live.len() != before
    }

    fn contains(&self, id: u64) -> bool {
        self.lock().live.iter().any(|(i, _)| *i == id)
    }

    /// Every pool, forgotten here (the host is closing).
    pub(crate) fn take_all(&self) -> Vec<Pool> {
        std::mem::take(&mut self.lock().live)
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
}

/// Shut `pools` down side by side.
pub(crate) async fn shutdown_all(pools: Vec<Pool>) {
    let tasks: Vec<_> = pools
        .into_iter()
        .map(|p| tokio::spawn(async move { p.shutdown().await }))
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}

/// Run `fut` as a task of its own and wait for its result: dropping the wait leaves the task
/// running to its end.
async fn detached<T, F>(fut: F) -> acp_host::Result<T>
where
    F: Future<Output = acp_host::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    rt().spawn(fut)
        .await
        .unwrap_or_else(|e| Err(Error::Closed(format!("the pool's task failed: {e}"))))
}

/// `pool.open_session(opts)` as a task of its own: a session it opens after its caller gave up
/// is released at once.
async fn open_detached(pool: Pool, opts: SessionOptions) -> acp_host::Result<PooledSession> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    rt().spawn(async move {
        if let Err(Ok(left)) = tx.send(pool.open_session(opts).await) {
            let _ = left.release().await;
        }
    });
    rx.await.unwrap_or_else(|_| {
        Err(Error::Closed(
            "the pool's task ended without a result".into(),
        ))
    })
}

#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct NativePool {
    id: u64,
    pool: Pool,
    pools: Pools,
    streams: Arc<Streams>,
}

impl NativePool {
    pub(crate) fn new(id: u64, pool: Pool, pools: Pools, streams: Arc<Streams>) -> NativePool {
        NativePool {
            id,
            pool,
            pools,
            streams,
        }
    }
}

#[pymethods]
impl NativePool {
    /// Whether the pool was shut down (by `shutdown` or the host's `close`).
    #[getter]
    fn closed(&self) -> bool {
        !self.pools.contains(self.id)
    }

    /// `(agents, spares, starting, sessions)`.
    fn stats(&self) -> (usize, usize, usize, usize) {
        let s = self.pool.stats();
        (s.agents, s.spares, s.starting, s.sessions)
    }

    /// A session on a pooled process: one with room (shared), else a warm spare, else a new
    /// process under the cap, else `busy`. After `timeout` seconds the call fails with `timeout`;
    /// a session opened anyway is released.
    /// `options_json`: the session options document (docs/OPTIONS.md).
    #[pyo3(signature = (options_json, *, aio=false, timeout=None))]
    fn open_session(
        &self,
        py: Python<'_>,
        options_json: &str,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let opts = crate::host::session_options(py, options_json)?;
        let pool = self.pool.clone();
        let streams = self.streams.clone();
        call(py, aio, async move {
            let open = open_detached(pool, opts);
            let session = within("session/new".into(), timeout, open).await?;
            Ok(NativePooledSession::new(session, streams))
        })
    }

    /// Resolves once the warm spares are up (or the pool is at its cap); fails with the error
    /// of a spare that could not start, or `closed`.
    #[pyo3(signature = (*, aio=false, timeout=None))]
    fn ready(&self, py: Python<'_>, aio: bool, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let pool = self.pool.clone();
        call(py, aio, async move {
            within("pool ready".into(), timeout, pool.ready()).await
        })
    }

    /// End every process of the pool (spares, idle and busy ones); sessions opened later fail
    /// with `closed`. Idempotent.
    #[pyo3(signature = (*, aio=false))]
    fn shutdown(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        self.pools.remove(self.id);
        let pool = self.pool.clone();
        call(py, aio, async move {
            detached(async move {
                pool.shutdown().await;
                Ok(())
            })
            .await
        })
    }
}

#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct NativePooledSession {
    session: PooledSession,
    streams: Arc<Streams>,
    /// Prompts handed to the session and not settled (the running one and the queued ones).
    pending: Arc<AtomicUsize>,
    released: AtomicBool,
}

impl NativePooledSession {
    fn new(session: PooledSession, streams: Arc<Streams>) -> NativePooledSession {
        NativePooledSession {
            session,
            streams,
            pending: Arc::new(AtomicUsize::new(0)),
            released: AtomicBool::new(false),
        }
    }
}

impl Drop for NativePooledSession {
    /// The Python object is gone: release the session (on the runtime, where the core can also
    /// shut a process-per-session process down). A no-op after `release`.
    fn drop(&mut self) {
        let session = self.session.clone();
        rt().spawn(async move {
            let _ = session.release().await;
        });
    }
}

/// One of `pending` while its prompt is out.
struct Out(Arc<AtomicUsize>);

impl Drop for Out {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A pooled prompt (its place in the queue taken when it was called), counted in `pending` from
/// its first poll on unless it finished there.
async fn counted_prompt(
    turn: impl Future<Output = acp_host::Result<TurnResult>>,
    pending: Arc<AtomicUsize>,
) -> acp_host::Result<TurnResult> {
    let mut fut = pin!(turn);
    let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
    if let Poll::Ready(out) = first {
        return out;
    }
    pending.fetch_add(1, Ordering::SeqCst);
    let _out = Out(pending);
    fut.await
}

#[pymethods]
impl NativePooledSession {
    #[getter]
    fn id(&self) -> &str {
        self.session.id()
    }

    /// The pooled process serving the session.
    fn agent(&self) -> NativeAgent {
        NativeAgent::new(self.session.agent().clone(), self.streams.clone())
    }

    /// The underlying session (its state, modes, models; prompting it directly bypasses the
    /// queue).
    fn session(&self) -> NativeSession {
        NativeSession::new(self.session.session().clone(), self.streams.clone())
    }

    /// Prompts handed to this session and not settled yet (the running one and the queued ones).
    #[getter]
    fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    #[getter]
    fn released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    /// Prompt (`content_json`: an array of ACP content blocks); while another prompt of this
    /// session runs, wait for it (FIFO). Same tuple as `NativeSession.prompt`. Abandoning the call
    /// (Ctrl-C, `timeout`, a cancelled task) takes a queued prompt out of the queue (nothing is
    /// sent) and abandons a running turn (`session/cancel`).
    #[pyo3(signature = (content_json, *, aio=false, timeout=None))]
    fn prompt(
        &self,
        py: Python<'_>,
        content_json: &str,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let content = match parse_json(py, "prompt", content_json)? {
            Value::Array(a) => a,
            _ => {
                return Err(errors::local(
                    py,
                    "invalid_argument",
                    "prompt content must be a list of content blocks",
                ));
            }
        };
        // The place in line is taken by this call, in Python call order (two asyncio calls'
        // futures may first be polled in either order).
        let turn = self.session.prompt(content);
        let pending = self.pending.clone();
        let streams = self.streams.clone();
        let session = self.session.session().clone();
        call(py, aio, async move {
            let turn = counted_prompt(turn, pending);
            let t = within("session/prompt".into(), timeout, turn).await?;
            // As for a plain session: every event of the turn is in the streams first.
            crate::session::delivered(&streams, &session, &t).await?;
            Ok::<TurnTuple, acp_host::Error>(turn_tuple(t))
        })
    }

    /// Cancel the running turn (`session/cancel`) and fail every queued prompt with `cancelled`.
    #[pyo3(signature = (*, aio=false))]
    fn cancel(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        // The queued prompts are dropped by this call, in call order.
        let cancel = self.session.cancel();
        call(py, aio, cancel)
    }

    /// Give the session back to the pool (`session/close` when the agent supports it; in
    /// process-per-session mode its process is shut down). Later prompts fail with `closed`.
    /// Idempotent.
    #[pyo3(signature = (*, aio=false))]
    fn release(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        self.released.store(true, Ordering::SeqCst);
        // Marked released by this call, in call order; the rest runs detached.
        let release = self.session.release();
        call(py, aio, async move { detached(release).await })
    }

    /// This session's events, as `NativeSession.subscribe`.
    fn subscribe(&self) -> Subscription {
        self.streams
            .session(self.session.agent().id(), self.session.id())
    }
}
