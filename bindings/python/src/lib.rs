//! `acp_host._native`: the private native module behind the `acp_host` Python package.
//!
//! One tokio runtime (pyo3-async-runtimes') runs every host of the process. Every operation
//! exists twice over one Rust future: blocking (`aio=False`: the GIL is released while the
//! future runs on the runtime; Ctrl-C is checked every few milliseconds) and awaitable
//! (`aio=True`: an asyncio future on the caller's loop). Events cross into Python in batches
//! through a pump that fans the host's single stream out to subscriptions (`events.rs`).
//! The public, typed API is the Python package (`python/acp_host/`); this module is private.

mod errors;
mod events;
mod host;
mod permission;
mod services;

use std::future::Future;
use std::time::Duration;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;

/// How often a blocking wait looks at pending signals (Ctrl-C).
const SIGNAL_TICK: Duration = Duration::from_millis(50);

/// The module's tokio runtime (shared with pyo3-async-runtimes).
pub(crate) fn rt() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// What a blocking wait ended with.
pub(crate) enum Waited<T> {
    Done(T),
    /// A signal handler raised (KeyboardInterrupt, ...). The future keeps running on the runtime;
    /// the caller decides what to do with it.
    Interrupted(
        PyErr,
        tokio::task::JoinHandle<()>,
        std::sync::mpsc::Receiver<T>,
    ),
}

/// Run `fut` on the runtime and wait for it with the GIL released, checking signals.
pub(crate) fn wait<T, F>(py: Python<'_>, fut: F) -> PyResult<Waited<T>>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let handle = rt().spawn(async move {
        let out = fut.await;
        let _ = tx.send(out);
    });
    let mut rx = rx;
    loop {
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_TICK), rx));
        rx = back;
        match got {
            Ok(v) => return Ok(Waited::Done(v)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    return Ok(Waited::Interrupted(e, handle, rx));
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "acp_host: internal task ended without a result",
                ));
            }
        }
    }
}

/// Blocking run: on a signal the future is dropped (the core tells the agent) and the error raised.
pub(crate) fn block<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    match wait(py, fut)? {
        Waited::Done(v) => Ok(v),
        Waited::Interrupted(e, handle, _) => {
            handle.abort();
            Err(e)
        }
    }
}

/// One operation, blocking (`aio == false`) or as an awaitable on the running asyncio loop.
pub(crate) fn call<T, F>(py: Python<'_>, aio: bool, fut: F) -> PyResult<Py<PyAny>>
where
    F: Future<Output = Result<T, acp_host::Error>> + Send + 'static,
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    if aio {
        let fut = async move {
            match fut.await {
                Ok(v) => Ok(v),
                Err(e) => Err(Python::attach(|py| errors::to_py(py, &e))),
            }
        };
        Ok(pyo3_async_runtimes::tokio::future_into_py(py, fut)?.unbind())
    } else {
        match block(py, fut)? {
            Ok(v) => v.into_py_any(py),
            Err(e) => Err(errors::to_py(py, &e)),
        }
    }
}

/// Seconds (float) from Python into a `Duration`.
pub(crate) fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "{what} must be a finite, non-negative number of seconds, got {s}"
        ))
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().thread_name("acp-host");
    pyo3_async_runtimes::tokio::init(builder);
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PROTOCOL_VERSION", acp_host::PROTOCOL_VERSION)?;
    m.add_class::<host::NativeHost>()?;
    m.add_class::<host::NativeAgent>()?;
    m.add_class::<host::NativeSession>()?;
    m.add_class::<events::Event>()?;
    m.add_class::<events::Subscription>()?;
    m.add_class::<permission::Reply>()?;
    m.add_class::<permission::Settled>()?;
    m.add_class::<services::ServiceReply>()?;
    Ok(())
}
