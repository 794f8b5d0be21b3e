//! Where the host's Python handlers are called from: one long-lived thread that keeps its Python
//! thread state, or, while it is busy, the runtime's blocking pool.
//!
//! A thread Python did not create gets a fresh thread state every time it attaches, and CPython
//! 3.11 gives each one a data stack of its own (an `mmap`, and an `munmap` with a TLB shootdown
//! across the process when it detaches): most of a handler call's cost when the handler answers
//! at once. The handler thread attaches once, for good, and afterwards only takes and releases
//! the GIL. A handler that blocks (a human at a prompt) keeps that thread busy; calls made
//! meanwhile go to the blocking pool (fresh thread states) and still run side by side.

use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use pyo3::prelude::*;

type Job = Box<dyn FnOnce() + Send>;

/// Jobs for the handler thread; `None` if it could not be started.
static JOBS: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
/// The handler thread has a job (queued or running): at most one is ever waiting for it.
static BUSY: AtomicBool = AtomicBool::new(false);

fn handler_thread() -> Option<&'static mpsc::Sender<Job>> {
    JOBS.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("acp-host-python".into())
            .spawn(move || serve(rx))
            .ok()
            .map(|_| tx)
    })
    .as_ref()
}

fn serve(rx: mpsc::Receiver<Job>) {
    let run = move || {
        while let Ok(job) = rx.recv() {
            // A panic in a job drops its reply (the caller fails closed); the thread lives on.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
            BUSY.store(false, Ordering::Release);
        }
    };
    // Attached once, counted in flight only while attaching (the interpreter's exit waits for
    // that); then detached for good: the thread state stays, and each job's own
    // `crate::attach` only takes the GIL. The thread never leaves the detached section, so
    // it never re-enters an interpreter that finalized meanwhile.
    let Some(guard) = crate::InFlight::enter() else {
        return run();
    };
    let mut guard = Some(guard);
    let mut run = Some(run);
    let _ = Python::try_attach(|py| {
        drop(guard.take());
        if let Some(run) = run.take() {
            py.detach(run);
        }
    });
    // Not attached (the interpreter is not running): serve anyway; jobs attach on their own.
    if let Some(run) = run.take() {
        run();
    }
}

/// Run `work` (which attaches to call Python) on the handler thread, or on the blocking pool
/// while the handler thread is busy.
pub(crate) async fn run<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    if let Some(jobs) = handler_thread()
        && BUSY
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(work());
        });
        if let Err(mpsc::SendError(job)) = jobs.send(job) {
            BUSY.store(false, Ordering::Release);
            tokio::task::spawn_blocking(job)
                .await
                .map_err(|e| e.to_string())?;
        }
        return rx.await.map_err(|_| "the handler call panicked".to_owned());
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| e.to_string())
}
