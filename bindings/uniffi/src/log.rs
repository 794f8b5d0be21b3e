//! The embedder's log handler (Kotlin `LogHandler`, or `logHandler { record -> … }`): the core's
//! log records (`acp_host::log`), typed. Off by default; the library never prints.
//!
//! The core calls its sink on its own tasks, which must never wait for a foreign handler (a slow
//! Kotlin handler would stall turns). So the sink only queues: a bounded queue of
//! [`LOG_QUEUE`] records, drained by one thread of this face that calls the handler in order.
//! When the handler falls that far behind, new records are dropped and counted
//! (`Host.droppedLogRecords()`), and the next record it gets is followed by a `warn` record
//! (target `log`) saying how many were lost. What the handler throws loses that record only.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::SystemTime;

use crate::error::AcpError;
use crate::handlers::HandlerError;

/// Records queued for the handler at most; more are dropped and counted.
pub(crate) const LOG_QUEUE: usize = 1024;

/// How much a record matters (`Error` is the most severe); the `logLevel` option names the
/// least severe one the handler gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl From<acp_host::log::Level> for LogLevel {
    fn from(l: acp_host::log::Level) -> LogLevel {
        use acp_host::log::Level;
        match l {
            Level::Error => LogLevel::Error,
            Level::Warn => LogLevel::Warn,
            Level::Info => LogLevel::Info,
            Level::Debug => LogLevel::Debug,
            Level::Trace => LogLevel::Trace,
        }
    }
}

/// One log record: what the host did or met, and why.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct LogRecord {
    pub level: LogLevel,
    /// The part of the host it comes from: `spawn`, `handshake`, `permission`, `elicitation`,
    /// `transport`, `protocol`, `pool`, `auth` (and `log` for this face's dropped-records notice).
    pub target: String,
    pub message: String,
    /// The host's id of the agent it is about, if any.
    pub agent: Option<u64>,
    /// The session it is about, if any.
    pub session: Option<String>,
    /// When it was made (Kotlin: `java.time.Instant`).
    pub at: SystemTime,
}

impl From<&acp_host::log::LogRecord> for LogRecord {
    fn from(r: &acp_host::log::LogRecord) -> LogRecord {
        LogRecord {
            level: r.level.into(),
            target: r.target.to_owned(),
            message: r.message.clone(),
            agent: r.agent,
            session: r.session.clone(),
            at: r.at,
        }
    }
}

/// Gets the host's log records, in order, on a thread of its own (never the host's: it may be
/// slow, but records past 1024 waiting are dropped). What it throws is ignored.
#[uniffi::export(with_foreign)]
pub trait LogHandler: Send + Sync {
    fn log(&self, record: LogRecord) -> Result<(), HandlerError>;
}

/// The core's sink: queues without ever waiting.
struct Queue {
    tx: SyncSender<LogRecord>,
    dropped: Arc<Dropped>,
}

/// Records lost to a full queue: in all, and since the handler was last told.
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    pub total: AtomicU64,
    untold: AtomicU64,
}

impl acp_host::log::LogSink for Queue {
    fn log(&self, record: &acp_host::log::LogRecord) {
        match self.tx.try_send(record.into()) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.total.fetch_add(1, Ordering::Relaxed);
                self.dropped.untold.fetch_add(1, Ordering::Relaxed);
            }
            // The delivery thread is gone (it only ends with the queue): nothing to do.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// The core's sink for `handler` and the count of what it drops. The delivery thread ends once
/// the core drops the sink (the host is gone) and the queue is drained.
pub(crate) fn sink(
    handler: Arc<dyn LogHandler>,
) -> Result<(Arc<dyn acp_host::log::LogSink>, Arc<Dropped>), AcpError> {
    let (tx, rx) = sync_channel(LOG_QUEUE);
    let dropped = Arc::new(Dropped::default());
    let told = dropped.clone();
    std::thread::Builder::new()
        .name("acp-host-log".into())
        .spawn(move || deliver(&rx, handler.as_ref(), &told))
        .map_err(|e| AcpError::Io {
            detail: format!("cannot start the log handler's thread: {e}"),
            data: None,
        })?;
    Ok((
        Arc::new(Queue {
            tx,
            dropped: dropped.clone(),
        }),
        dropped,
    ))
}

fn deliver(rx: &Receiver<LogRecord>, handler: &dyn LogHandler, dropped: &Dropped) {
    let call = |r: LogRecord| {
        // A handler's failure loses its record only; a panic must not end the thread.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler.log(r)));
    };
    while let Ok(record) = rx.recv() {
        call(record);
        let lost = dropped.untold.swap(0, Ordering::Relaxed);
        if lost > 0 {
            call(LogRecord {
                level: LogLevel::Warn,
                target: "log".into(),
                message: format!(
                    "{lost} log records dropped: the log handler fell {LOG_QUEUE} records behind"
                ),
                agent: None,
                session: None,
                at: SystemTime::now(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    struct Slow {
        gate: Mutex<Receiver<()>>,
        got: Mutex<Vec<LogRecord>>,
    }

    impl LogHandler for Slow {
        fn log(&self, record: LogRecord) -> Result<(), HandlerError> {
            let _ = self.gate.lock().unwrap().recv();
            self.got.lock().unwrap().push(record);
            Err(HandlerError::Failed {
                reason: "ignored".into(),
            })
        }
    }

    fn record(n: usize) -> acp_host::log::LogRecord {
        acp_host::log::LogRecord {
            level: acp_host::log::Level::Info,
            target: "spawn",
            message: format!("r{n}"),
            agent: Some(1),
            session: None,
            at: SystemTime::now(),
        }
    }

    #[test]
    fn a_stuck_handler_never_blocks_the_sink_and_the_loss_is_counted_and_told() {
        let (open, gate) = channel();
        let slow = Arc::new(Slow {
            gate: Mutex::new(gate),
            got: Mutex::new(Vec::new()),
        });
        let (sink, dropped) = sink(slow.clone()).unwrap();
        // The handler holds the first record; LOG_QUEUE more fit; the rest are dropped at once.
        let extra = 10;
        for n in 0..LOG_QUEUE + 1 + extra {
            sink.log(&record(n));
        }
        let lost = dropped.total.load(Ordering::Relaxed) as usize;
        assert!(lost >= extra, "{lost}");
        drop(sink);
        // Every record that was queued, then one notice.
        let want = LOG_QUEUE + 1 + extra - lost + 1;
        for _ in 0..want {
            open.send(()).unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while slow.got.lock().unwrap().len() < want && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let got = slow.got.lock().unwrap();
        assert_eq!(got.len(), want);
        assert_eq!(got[0].message, "r0", "in order");
        // Counted while the handler held r0: told right after it.
        let notice = &got[1];
        assert_eq!(
            (notice.level, notice.target.as_str()),
            (LogLevel::Warn, "log")
        );
        assert!(
            notice
                .message
                .starts_with(&format!("{lost} log records dropped")),
            "{}",
            notice.message
        );
        assert_eq!(got[2].message, "r1");
    }
}
