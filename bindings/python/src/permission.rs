//! The permission-handler bridge: the core's decider asks a Python callable.
//!
//! The callable is handed to `acp_host._bridge.dispatch` from the handler thread, or a
//! blocking-pool thread while that one is busy (never a runtime worker, so a slow handler stalls
//! nobody; see `handler_thread.rs`). `dispatch` calls it there for the sync `Host`
//! (a coroutine then runs on a private loop), or on the caller's asyncio loop for `AsyncHost`;
//! the answer comes back through `Reply`. Everything but an offered option id denies, and when
//! the request is settled elsewhere (timeout, cancel, agent exit) the decider future is dropped,
//! which cancels a pending coroutine. The elicitation handler (`elicitation.rs`) goes through the
//! same bridge ([`ask_python`]).

use std::sync::{Arc, Mutex};

use acp_host::permission::DecisionFuture;
use acp_host::{PermissionDecider, PermissionRequest};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::sync::oneshot;

/// What a handler passed back: a permission option id (`None`: deny) or an elicitation answer
/// as JSON text; `Err` when it failed (the core then answers the fail-closed way).
type Answer = Result<Option<String>, String>;

static DISPATCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The asyncio loop coroutine handlers run on (`AsyncHost`), shared with the host.
pub(crate) type LoopSlot = Arc<Mutex<Option<Py<PyAny>>>>;

#[derive(Debug)]
pub(crate) struct PyDecider {
    pub handler: Arc<Py<PyAny>>,
    pub event_loop: LoopSlot,
}

/// A handler started from a blocking-pool thread, shared with the future waiting for its answer.
/// The future may be dropped (the request was settled elsewhere) before that thread has started
/// the handler or handed back its cancel callable: then the handler is not started at all, or is
/// cancelled as soon as the callable arrives, instead of running on for a settled request.
#[derive(Debug, Default)]
pub(crate) struct Pending(Mutex<PendingState>);

#[derive(Debug, Default)]
struct PendingState {
    /// The answer is no longer wanted (or was received).
    over: bool,
    /// Cancels a still-running coroutine handler.
    cancel: Option<Py<PyAny>>,
}

impl Pending {
    /// Whether the handler should still be started.
    pub(crate) fn wanted(&self) -> bool {
        self.0.lock().map(|p| !p.over).unwrap_or(false)
    }

    /// The handler is running (`cancel` stops it; called with the GIL held): kept for later, or
    /// called at once when the answer is no longer wanted.
    pub(crate) fn started(&self, cancel: &Bound<'_, PyAny>) {
        if cancel.is_none() {
            return;
        }
        let late = match self.0.lock() {
            Ok(mut p) if !p.over => {
                p.cancel = Some(cancel.clone().unbind());
                false
            }
            _ => true,
        };
        if late {
            let _ = cancel.call0();
        }
    }

    fn close(&self) -> Option<Py<PyAny>> {
        let mut p = self.0.lock().unwrap_or_else(|e| e.into_inner());
        p.over = true;
        p.cancel.take()
    }
}

/// Cancels the handler when the answer is no longer wanted (dropped before [`answered`]).
///
/// [`answered`]: CancelOnDrop::answered
pub(crate) struct CancelOnDrop {
    pending: Arc<Pending>,
    answered: bool,
}

impl CancelOnDrop {
    pub(crate) fn new(pending: Arc<Pending>) -> CancelOnDrop {
        CancelOnDrop {
            pending,
            answered: false,
        }
    }

    /// The answer arrived: nothing to cancel.
    pub(crate) fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let cancel = self.pending.close();
        if let Some(cancel) = cancel.filter(|_| !self.answered) {
            // Not once the interpreter is exiting: nothing is left to cancel then.
            let _ = crate::attach(|py| {
                let _ = cancel.bind(py).call0();
            });
        }
    }
}

impl PermissionDecider for PyDecider {
    fn decide(&self, request: PermissionRequest) -> DecisionFuture {
        let handler = self.handler.clone();
        let event_loop = self.event_loop.clone();
        Box::pin(async move {
            let raw = serde_json::to_string(&request).map_err(|e| e.to_string())?;
            ask_python(
                &DISPATCH,
                "dispatch",
                "permission",
                handler,
                event_loop,
                raw,
                request.settled.clone(),
            )
            .await
        })
    }
}

/// Ask a Python handler through `acp_host._bridge.<name>(handler, raw, settled, loop, reply)`:
/// what it passed to `reply` (`Ok(text or None)`, or `Err` for a failure). Used for permission
/// and elicitation handlers. When the returned future is dropped (the request was settled
/// elsewhere), a still-pending coroutine handler is cancelled.
pub(crate) async fn ask_python(
    dispatch: &'static PyOnceLock<Py<PyAny>>,
    name: &'static str,
    what: &'static str,
    handler: Arc<Py<PyAny>>,
    event_loop: LoopSlot,
    raw: String,
    settled: acp_host::Settled,
) -> Result<Option<String>, String> {
    let (tx, rx) = oneshot::channel::<Answer>();
    let settled = Settled(settled);
    let pending = Arc::new(Pending::default());
    // From here on, dropping this future (the request settled elsewhere) stops the handler.
    let guard = CancelOnDrop::new(pending.clone());
    let call = move || {
        crate::attach(|py| -> PyResult<()> {
            if !pending.wanted() {
                return Ok(()); // settled before the handler was asked: it is not asked
            }
            let dispatch = dispatch.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                Ok(py.import("acp_host._bridge")?.getattr(name)?.unbind())
            })?;
            let lp = event_loop
                .lock()
                .ok()
                .and_then(|l| l.as_ref().map(|l| l.clone_ref(py)));
            let reply = Reply {
                tx: Mutex::new(Some(tx)),
            };
            let cancel = dispatch
                .bind(py)
                .call1((handler.as_ref(), raw, settled, lp, reply))?;
            pending.started(&cancel);
            Ok(())
        })
    };
    // Never a runtime worker: the handler may take minutes (a human), and no runtime worker
    // waits for it (`handler_thread`: its own thread, or the blocking pool while that is busy).
    match crate::handler_thread::run(call).await {
        Ok(Some(Ok(()))) => {}
        Ok(None) => return Err("the interpreter is exiting".into()),
        Ok(Some(Err(e))) => return Err(format!("{what} handler bridge failed: {e}")),
        Err(e) => return Err(format!("{what} handler bridge failed: {e}")),
    }
    let answer = rx
        .await
        .unwrap_or_else(|_| Err(format!("{what} handler gave no answer")));
    guard.answered();
    answer
}

/// Carries one answer back to the core: `reply(answer_or_None, error_or_None)` (the answer is an
/// option id for a permission, JSON text for an elicitation).
#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct Reply {
    tx: Mutex<Option<oneshot::Sender<Answer>>>,
}

#[pymethods]
impl Reply {
    /// Answer once (later calls are ignored): an option id / answer JSON, `None`, or an error
    /// (fail-closed).
    #[pyo3(signature = (answer, error=None))]
    fn __call__(&self, answer: Option<String>, error: Option<String>) -> bool {
        let tx = self.tx.lock().ok().and_then(|mut t| t.take());
        match tx {
            Some(tx) => tx
                .send(match error {
                    Some(e) => Err(e),
                    None => Ok(answer),
                })
                .is_ok(),
            None => false,
        }
    }
}

/// Whether a permission or elicitation request was already resolved (by a timeout, a cancel,
/// another answer).
#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct Settled(acp_host::Settled);

#[pymethods]
impl Settled {
    fn __bool__(&self) -> bool {
        self.0.is_settled()
    }

    fn is_settled(&self) -> bool {
        self.0.is_settled()
    }
}
