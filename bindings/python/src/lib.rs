//! `acp_host._native`: the private native module behind the `acp_host` Python package.
//!
//! One tokio runtime (pyo3-async-runtimes') runs every host of the process. Every operation
//! exists twice over one Rust future: blocking (`aio=False`: the GIL is released while the
//! future runs on the runtime; Ctrl-C is checked every few milliseconds) and awaitable
//! (`aio=True`: an asyncio future on the caller's loop). Events cross into Python in batches
//! from the core's hub readers (`events.rs`).
//! The public, typed API is the Python package (`python/acp_host/`); this module is private.

mod connect;
mod elicitation;
mod errors;
mod events;
mod handler_thread;
mod host;
mod log;
mod permission;
mod pool;
mod registry;
mod services;
mod session;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;

/// How often a blocking wait looks at pending signals (Ctrl-C).
const SIGNAL_TICK: Duration = Duration::from_millis(50);

// ------------------------------------------------------------------ interpreter exit
//
// CPython (before 3.14) ends any thread that takes the GIL once finalization has begun with
// `pthread_exit`; its forced unwinding through Rust frames aborts the whole process (SIGABRT,
// "<no Python frame>"), and a tokio thread that attaches then can also find its thread state gone.
// So the package's atexit hook (after closing every host) calls `_at_exit`: it waits, bounded, until
// no thread of ours is between leaving and re-entering Python, then sets `EXITING`. From then on no
// thread of ours enters Python: new blocking calls fail, a blocking wait that ends parks its thread
// (a daemon thread, about to be ended anyway; CPython 3.14 does the same), handlers are not called
// and awaitables are never resolved.

/// Set once by `_at_exit`: the interpreter is about to finalize.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Threads of ours that are out of Python and will come back (blocking waits), attached to run
/// Python for the host (handlers), or carrying an awaitable's result to its loop.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn exiting() -> bool {
    EXITING.load(Ordering::SeqCst)
}

/// One unit of `IN_FLIGHT`; `None` once the interpreter is exiting.
pub(crate) struct InFlight(());

impl InFlight {
    pub(crate) fn enter() -> Option<InFlight> {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        if exiting() {
            IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(InFlight(()))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The thread that called `_at_exit` (the one that finalizes): it alone still runs after it.
static EXIT_THREAD: std::sync::OnceLock<std::thread::ThreadId> = std::sync::OnceLock::new();

fn is_exit_thread() -> bool {
    EXIT_THREAD.get() == Some(&std::thread::current().id())
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// Park a Python thread for good, the GIL released (the process is about to exit).
fn park_detached<R>(py: Python<'_>) -> R {
    loop {
        py.detach(|| -> () { park_forever() });
    }
}

/// Run `f`, which may execute Python code (bytecode can hand the GIL to another thread, and a
/// thread switched out with our frames on its stack must not be woken by finalization), counted
/// in `IN_FLIGHT`. Once the interpreter is exiting, any thread but the exiting one parks instead.
pub(crate) fn python_code<R>(py: Python<'_>, f: impl FnOnce() -> R) -> R {
    match InFlight::enter() {
        Some(_guard) => f(),
        None if is_exit_thread() => f(),
        None => park_detached(py),
    }
}

fn exiting_error(py: Python<'_>) -> PyErr {
    errors::local(py, "closed", "the interpreter is exiting")
}

/// `py.detach(f)` that never re-enters a finalizing interpreter: fails at once when it is
/// exiting, and parks the thread instead of returning when it began exiting meanwhile.
pub(crate) fn detach<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    F: Send + FnOnce() -> T,
    T: Send,
{
    let Some(guard) = InFlight::enter() else {
        if is_exit_thread() {
            return Err(exiting_error(py));
        }
        return park_detached(py);
    };
    Ok(py.detach(move || {
        let out = f();
        if exiting() {
            drop(guard);
            park_forever();
        }
        drop(guard);
        out
    }))
}

/// `Python::attach` for threads of ours (runtime workers, the blocking pool): `None` (and no
/// Python touched) once the interpreter is exiting.
pub(crate) fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    let _guard = InFlight::enter()?;
    Python::try_attach(f)
}

/// The ACP method table this module was built with (docs/PROTOCOL.md), as JSON text.
#[pyfunction]
fn methods_json() -> String {
    acp_host::protocol::methods_json().to_string()
}

/// The core's option table (`acp_host::options::table_json`), as JSON text: the package derives
/// its seconds spellings and nested option objects from it.
#[pyfunction]
fn options_table_json() -> String {
    acp_host::options::table_json().to_string()
}

/// A prompt content block built from a file (acp_host::content::from_file), as JSON text.
#[pyfunction]
fn content_from_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<String> {
    acp_host::content::from_file(&path)
        .map(|b| b.to_string())
        .map_err(|e| errors::to_py(py, &e))
}

/// Called by the atexit hook once every host is closed: wait up to `grace` seconds for our
/// threads to be back in Python, then stop entering it (see above).
#[pyfunction]
fn _at_exit(py: Python<'_>, grace: f64) -> PyResult<()> {
    let grace = seconds("grace", grace)?;
    let _ = EXIT_THREAD.set(std::thread::current().id());
    py.detach(move || {
        let settle = |until: std::time::Instant| {
            while IN_FLIGHT.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        settle(std::time::Instant::now() + grace);
        EXITING.store(true, Ordering::SeqCst);
        // Whoever entered just before the flag (an awaitable's result on its way) finishes now.
        settle(std::time::Instant::now() + grace);
    });
    Ok(())
}

/// Cancelling the asyncio future aborts the task (which drops the operation's future: for a
/// prompt, the core cancels the turn).
#[pyclass(frozen, module = "acp_host._native")]
struct AbortOnCancel(tokio::task::AbortHandle);

#[pymethods]
impl AbortOnCancel {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if fut.call_method0("cancelled")?.is_truthy()? {
            self.0.abort();
        }
        Ok(())
    }
}

static RESOLVE: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// `fut` as an awaitable on the running asyncio loop. Not pyo3-async-runtimes' `future_into_py`:
/// its result is handed to the loop with Python code (`call_soon_threadsafe`) outside anything we
/// can count, and a blocking-pool thread switched out there when finalization begins crashes the
/// process. Here the whole hand-over is one counted [`attach`], and once the interpreter is
/// exiting the awaitable is never resolved.
pub(crate) fn awaitable<'py, T, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, acp_host::Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    python_code(py, || {
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        let py_fut = event_loop.call_method0("create_future")?;
        let resolve = RESOLVE
            .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                Ok(py.import("acp_host._bridge")?.getattr("resolve")?.unbind())
            })?
            .clone_ref(py);
        let (lp, pf) = (event_loop.unbind(), py_fut.clone().unbind());
        let task = rt().spawn(async move {
            let out = fut.await;
            let _ = tokio::task::spawn_blocking(move || {
                attach(move |py| {
                    let (ok, value) = match out.map(|v| v.into_py_any(py)) {
                        Ok(Ok(v)) => (true, v),
                        Ok(Err(e)) => (false, e.into_value(py).into_any()),
                        Err(e) => (false, errors::to_py(py, &e).into_value(py).into_any()),
                    };
                    // A closed loop: nobody awaits any more.
                    let _ = lp
                        .bind(py)
                        .call_method1("call_soon_threadsafe", (resolve, pf, ok, value));
                });
            })
            .await;
        });
        py_fut.call_method1("add_done_callback", (AbortOnCancel(task.abort_handle()),))?;
        Ok(py_fut)
    })
}

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
        let (got, back) = detach(py, move || (rx.recv_timeout(SIGNAL_TICK), rx))?;
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
        Ok(awaitable(py, fut)?.unbind())
    } else {
        match block(py, fut)? {
            Ok(v) => v.into_py_any(py),
            Err(e) => Err(errors::to_py(py, &e)),
        }
    }
}

/// `fut`, given up after `timeout`: dropping it abandons the call exactly as Ctrl-C does (the core
/// sends `$/cancel_request`), and the caller gets the core's `timeout` error (`{what, afterMs}`).
pub(crate) async fn within<T, F>(
    what: String,
    timeout: Option<Duration>,
    fut: F,
) -> Result<T, acp_host::Error>
where
    F: Future<Output = Result<T, acp_host::Error>>,
{
    let Some(limit) = timeout else {
        return fut.await;
    };
    match tokio::time::timeout(limit, fut).await {
        Ok(out) => out,
        Err(_) => Err(timed_out(what, limit)),
    }
}

pub(crate) fn timed_out(what: String, after: Duration) -> acp_host::Error {
    acp_host::Error::Timeout {
        what,
        after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
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
    m.add_function(wrap_pyfunction!(_at_exit, m)?)?;
    m.add_function(wrap_pyfunction!(methods_json, m)?)?;
    m.add_function(wrap_pyfunction!(options_table_json, m)?)?;
    m.add_function(wrap_pyfunction!(content_from_file, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PROTOCOL_VERSION", acp_host::PROTOCOL_VERSION)?;
    m.add_class::<host::NativeHost>()?;
    m.add_class::<host::NativeAgent>()?;
    m.add_class::<session::NativeSession>()?;
    m.add_class::<pool::NativePool>()?;
    m.add_class::<pool::NativePooledSession>()?;
    m.add_class::<events::Event>()?;
    m.add_class::<events::Subscription>()?;
    m.add_class::<permission::Reply>()?;
    m.add_class::<permission::Settled>()?;
    m.add_class::<services::ServiceReply>()?;
    m.add_class::<registry::NativeRegistry>()?;
    m.add_class::<connect::Bridge>()?;
    Ok(())
}
