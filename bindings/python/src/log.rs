//! The log hook of the Python face: the core's records (`acp_host::log`) go to the standard
//! `logging` logger `acp_host.<target>` (`python/acp_host/_logging.py` makes the `LogRecord`).
//! Only a host given `log_level` has a hook; without one the core never even formats a record.
//!
//! The core calls its sink on its own tasks, often in the middle of an agent's I/O: they must
//! never wait for Python (the GIL, a slow handler). So the sink only queues the record, never
//! blocking; one `acp-host-log` thread per host takes the records from there, in order, and hands
//! them to `logging` with the GIL held (a whole batch per GIL acquisition: taking the GIL once per
//! record would cost a switch interval each while other threads run Python). At most [`QUEUE`]
//! records wait (the one being delivered included); past that new ones are dropped and counted
//! (`Host.dropped_log_records`), and the next record delivered is followed by one `warn` record
//! (target `log`) saying how many were lost. What a logging handler raises loses that record only
//! (`_logging._emit` catches it; nothing is printed). Closing the host waits, bounded, until the
//! records queued by its shutdown were delivered.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, SystemTime};

use acp_host::log::{Level, LogRecord, LogSink};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Records waiting for `logging` (the one being delivered included) past which new ones are
/// dropped and counted.
pub(crate) const QUEUE: usize = 1024;

/// How long closing a host waits for its records to be delivered (a handler stuck for good must
/// not hang `close` or the interpreter's exit).
pub(crate) const FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// The thread's name (also the Python-visible name of the thread, `record.threadName`).
const THREAD: &str = "acp-host-log";

enum Msg {
    Record(LogRecord),
    /// Answered once every message before it was handled.
    Flush(tokio::sync::oneshot::Sender<()>),
}

#[derive(Debug, Default)]
struct Counts {
    /// Records queued or being delivered.
    pending: AtomicUsize,
    /// Records dropped since the host was made.
    dropped: AtomicU64,
    /// Records dropped that `logging` was not told about yet.
    untold: AtomicU64,
}

thread_local! {
    /// Set on `acp-host-log` threads: a handler that closes the host must not wait for itself.
    static ON_LOG_THREAD: Cell<bool> = const { Cell::new(false) };
}

pub(crate) fn on_log_thread() -> bool {
    ON_LOG_THREAD.with(Cell::get)
}

/// The core's sink: queue without ever waiting.
struct Sink {
    tx: Sender<Msg>,
    counts: Arc<Counts>,
}

impl LogSink for Sink {
    fn log(&self, record: &LogRecord) {
        let c = &self.counts;
        if c.pending.fetch_add(1, Ordering::AcqRel) >= QUEUE {
            c.pending.fetch_sub(1, Ordering::AcqRel);
            c.dropped.fetch_add(1, Ordering::Relaxed);
            c.untold.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.tx.send(Msg::Record(record.clone())).is_err() {
            // The log thread ended (it panicked): nobody reads records.
            c.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A host's log thread: what closing the host and `dropped_log_records` need.
#[derive(Debug)]
pub(crate) struct LogBridge {
    tx: Sender<Msg>,
    counts: Arc<Counts>,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").finish_non_exhaustive()
    }
}

impl LogBridge {
    /// Start the thread; returns the bridge and the sink for the core's hook. The thread ends
    /// once the core dropped the sink and the host dropped the bridge (both senders gone).
    pub(crate) fn start() -> std::io::Result<(Arc<LogBridge>, Arc<dyn LogSink>)> {
        let (tx, rx) = channel();
        let counts = Arc::new(Counts::default());
        let told = counts.clone();
        std::thread::Builder::new()
            .name(THREAD.into())
            .spawn(move || deliver(&rx, &told))?;
        let sink = Arc::new(Sink {
            tx: tx.clone(),
            counts: counts.clone(),
        });
        Ok((Arc::new(LogBridge { tx, counts }), sink))
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.counts.dropped.load(Ordering::Relaxed)
    }

    /// Wait (at most `limit`) until every record queued before this call was handed to
    /// `logging`, and a pending loss was told.
    pub(crate) async fn flush(&self, limit: Duration) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.tx.send(Msg::Flush(tx)).is_ok() {
            let _ = tokio::time::timeout(limit, rx).await;
        }
    }
}

/// Records handed to Python per GIL acquisition at most.
const BATCH: usize = 256;

fn deliver(rx: &Receiver<Msg>, counts: &Counts) {
    ON_LOG_THREAD.with(|f| f.set(true));
    while let Ok(first) = rx.recv() {
        let mut batch = Vec::with_capacity(16);
        batch.push(first);
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        let n = batch.iter().filter(|m| matches!(m, Msg::Record(_))).count();
        // Not once the interpreter is exiting: the batch is dropped (a flush is answered by the
        // dropped sender: `close` goes on).
        let delivered = crate::attach(|py| {
            for m in batch {
                match m {
                    Msg::Record(r) => {
                        emit(py, &r);
                        counts.pending.fetch_sub(1, Ordering::AcqRel);
                        tell_loss(py, counts);
                    }
                    Msg::Flush(done) => {
                        tell_loss(py, counts);
                        let _ = done.send(());
                    }
                }
            }
        });
        if delivered.is_none() {
            counts.pending.fetch_sub(n, Ordering::AcqRel);
        }
    }
}

/// After a delivered record: one `warn` record saying how many were dropped since last told.
fn tell_loss(py: Python<'_>, counts: &Counts) {
    let lost = counts.untold.swap(0, Ordering::Relaxed);
    if lost > 0 {
        emit(
            py,
            &LogRecord {
                level: Level::Warn,
                target: "log",
                message: format!(
                    "{lost} log records dropped: the `acp_host` logging handlers fell {QUEUE} records behind"
                ),
                agent: None,
                session: None,
                at: SystemTime::now(),
            },
        );
    }
}

/// `logging`'s number for a level (`TRACE` is 5, registered by the package).
fn levelno(level: Level) -> u32 {
    match level {
        Level::Error => 40,
        Level::Warn => 30,
        Level::Info => 20,
        Level::Debug => 10,
        Level::Trace => 5,
    }
}

static EMIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Hand one record to `acp_host._logging._emit`. It catches what a handler raises; anything that
/// still fails here loses the record and is never printed.
fn emit(py: Python<'_>, r: &LogRecord) {
    let Ok(f) = EMIT.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("acp_host._logging")?.getattr("_emit")?.unbind())
    }) else {
        return;
    };
    let created =
        r.at.duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
    let _ = f.bind(py).call1((
        levelno(r.level),
        r.target,
        r.message.as_str(),
        r.agent,
        r.session.as_deref(),
        created,
        THREAD,
    ));
}
