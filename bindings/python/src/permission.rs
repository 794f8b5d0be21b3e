//! The permission-handler bridge: the core's decider asks a Python callable.
//!
//! The callable is handed to `acp_host._bridge.dispatch` from a blocking-pool thread (never a
//! runtime worker, so a slow handler stalls nobody). `dispatch` calls it there for the sync `Host`
//! (a coroutine then runs on a private loop), or on the caller's asyncio loop for `AsyncHost`;
//! the answer comes back through `Reply`. Everything but an offered option id denies, and when
//! the request is settled elsewhere (timeout, cancel, agent exit) the decider future is dropped,
//! which cancels a pending coroutine.

use std::sync::{Arc, Mutex};

use acp_host::permission::DecisionFuture;
use acp_host::{PermissionAnswer, PermissionDecider, PermissionRequest};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::sync::oneshot;

type Answer = Result<PermissionAnswer, String>;

static DISPATCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The asyncio loop coroutine handlers run on (`AsyncHost`), shared with the host.
pub(crate) type LoopSlot = Arc<Mutex<Option<Py<PyAny>>>>;

#[derive(Debug)]
pub(crate) struct PyDecider {
    pub handler: Arc<Py<PyAny>>,
    pub event_loop: LoopSlot,
}

/// Cancels a pending coroutine handler when the decision is no longer wanted.
struct CancelOnDrop(Option<Py<PyAny>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
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
            let (tx, rx) = oneshot::channel::<Answer>();
            let raw = serde_json::to_string(&request).map_err(|e| e.to_string())?;
            let settled = Settled(request.settled.clone());
            let call = move || {
                crate::attach(|py| -> PyResult<Option<Py<PyAny>>> {
                    let dispatch = DISPATCH.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                        Ok(py.import("acp_host._bridge")?.getattr("dispatch")?.unbind())
                    })?;
                    let lp = event_loop
                        .lock()
                        .ok()
                        .and_then(|l| l.as_ref().map(|l| l.clone_ref(py)));
                    let reply = Reply {
                        tx: Mutex::new(Some(tx)),
                    };
                    let cancel =
                        dispatch
                            .bind(py)
                            .call1((handler.as_ref(), raw, settled, lp, reply))?;
                    Ok((!cancel.is_none()).then(|| cancel.unbind()))
                })
            };
            // A blocking-pool thread: the handler may take minutes (a human), and no runtime
            // worker waits for it. (`block_in_place` measured no faster.)
            let started = tokio::task::spawn_blocking(call).await;
            let cancel = match started {
                Ok(Some(Ok(cancel))) => cancel,
                Ok(None) => return Err("the interpreter is exiting".into()),
                Ok(Some(Err(e))) => return Err(format!("permission handler bridge failed: {e}")),
                Err(e) => return Err(format!("permission handler bridge failed: {e}")),
            };
            let mut guard = CancelOnDrop(cancel);
            let answer = rx
                .await
                .unwrap_or_else(|_| Err("permission handler gave no answer".into()));
            guard.0 = None;
            answer
        })
    }
}

/// Carries one answer back to the core: `reply(option_id_or_None, error_or_None)`.
#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct Reply {
    tx: Mutex<Option<oneshot::Sender<Answer>>>,
}

#[pymethods]
impl Reply {
    /// Answer once (later calls are ignored): an option id, `None` (deny), or an error (deny).
    #[pyo3(signature = (option_id, error=None))]
    fn __call__(&self, option_id: Option<String>, error: Option<String>) -> bool {
        let tx = self.tx.lock().ok().and_then(|mut t| t.take());
        match tx {
            Some(tx) => tx
                .send(match error {
                    Some(e) => Err(e),
                    None => Ok(option_id),
                })
                .is_ok(),
            None => false,
        }
    }
}

/// Whether a permission request was already resolved (by a timeout, a cancel, another answer).
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
