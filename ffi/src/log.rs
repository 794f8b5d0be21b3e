//! The C face's log callback (`acph_host_new_with_log`, `acph_host_set_log_handler`): the core's
//! log records (`acp_host::log`) as UTF-8 JSON, delivered on a thread of their own.
//!
//! The core calls its sink on the host's own tasks, sometimes in the middle of an agent's I/O.
//! The sink here only formats the record and puts it in a bounded queue (never blocking); one
//! `acph-log` thread per host takes it from there to the C callback. So a slow callback delays
//! only the records (past [`QUEUE`] waiting ones are dropped and counted), never an agent, and
//! the callback runs with no lock of the library held: it may call any function of the API,
//! blocking ones included. The sink exists only when a callback was given at creation, so a host
//! without one never even formats a record (`LogHook::enabled` is false).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::SystemTime;

use acp_host::log::{Level, LogRecord, LogSink};

use crate::ptr::{Callback, acph_log_fn};
use crate::status::{Failure, acph_status};

/// Records waiting for the callback past which new ones are dropped (and counted).
pub(crate) const QUEUE: usize = 1024;

/// The level of a log record (`logLevel` names them; `ERROR` is the most severe).
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum acph_log_level {
    ACPH_LOG_ERROR = 1,
    ACPH_LOG_WARN = 2,
    ACPH_LOG_INFO = 3,
    ACPH_LOG_DEBUG = 4,
    ACPH_LOG_TRACE = 5,
}

impl From<Level> for acph_log_level {
    fn from(l: Level) -> Self {
        match l {
            Level::Error => acph_log_level::ACPH_LOG_ERROR,
            Level::Warn => acph_log_level::ACPH_LOG_WARN,
            Level::Info => acph_log_level::ACPH_LOG_INFO,
            Level::Debug => acph_log_level::ACPH_LOG_DEBUG,
            Level::Trace => acph_log_level::ACPH_LOG_TRACE,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

enum Msg {
    /// A record's JSON, NUL-terminated.
    Record(acph_log_level, Vec<u8>),
    Stop,
}

type Slot = Arc<Mutex<Option<Arc<Callback<acph_log_fn>>>>>;

thread_local! {
    /// Set on `acph-log` threads: freeing a host from its own log callback must not join the
    /// thread it runs on.
    static ON_LOG_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is a host's log thread.
pub(crate) fn on_log_thread() -> bool {
    ON_LOG_THREAD.with(Cell::get)
}

/// The core's sink: format, queue, never block.
struct Sink {
    tx: SyncSender<Msg>,
    dropped: Arc<AtomicU64>,
}

impl LogSink for Sink {
    fn log(&self, record: &LogRecord) {
        let mut json = record.to_json().to_string().into_bytes();
        json.push(0);
        match self.tx.try_send(Msg::Record(record.level.into(), json)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            // The host is being freed: nobody reads records any more.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// A host's log callback and its thread.
#[derive(Debug)]
pub(crate) struct LogBridge {
    slot: Slot,
    tx: SyncSender<Msg>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl LogBridge {
    /// Start the thread for `callback`; returns the bridge and the sink for the core's hook.
    pub(crate) fn start(
        callback: Callback<acph_log_fn>,
    ) -> Result<(LogBridge, Arc<dyn LogSink>), Failure> {
        let (tx, rx) = sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let slot: Slot = Arc::new(Mutex::new(Some(Arc::new(callback))));
        let thread = {
            let (slot, dropped) = (slot.clone(), dropped.clone());
            std::thread::Builder::new()
                .name("acph-log".into())
                .spawn(move || deliver(&rx, &slot, &dropped))
                .map_err(|e| {
                    Failure::new(
                        acph_status::ACPH_STATUS_IO,
                        format!("could not start the log thread: {e}"),
                    )
                })?
        };
        let sink = Arc::new(Sink {
            tx: tx.clone(),
            dropped,
        });
        Ok((
            LogBridge {
                slot,
                tx,
                thread: Mutex::new(Some(thread)),
            },
            sink,
        ))
    }

    /// Replace (or, with `None`, remove) the callback. The old one's finalizer runs once no
    /// invocation of it is in flight: here, or on the log thread after its current call.
    pub(crate) fn set(&self, callback: Option<Callback<acph_log_fn>>) {
        let old = std::mem::replace(&mut *lock(&self.slot), callback.map(Arc::new));
        drop(old);
    }

    /// Host teardown: deliver what is queued, then end the thread (and run the finalizer); no
    /// call of the callback follows. Not from the log thread itself (it would join itself).
    pub(crate) fn stop(&self) {
        if on_log_thread() {
            // From the callback itself: never wait for the thread we are on.
            let _ = self.tx.try_send(Msg::Stop);
        } else {
            let _ = self.tx.send(Msg::Stop);
            let thread = lock(&self.thread).take();
            if let Some(t) = thread {
                let _ = t.join();
            }
        }
        let cb = lock(&self.slot).take();
        drop(cb);
    }
}

impl Drop for LogBridge {
    fn drop(&mut self) {
        self.stop();
    }
}

fn deliver(rx: &Receiver<Msg>, slot: &Slot, dropped: &AtomicU64) {
    ON_LOG_THREAD.with(|f| f.set(true));
    while let Ok(Msg::Record(level, json)) = rx.recv() {
        let lost = dropped.swap(0, Ordering::Relaxed);
        // Clone out of the lock: the callback runs with no lock held, and replacing it meanwhile
        // defers the old finalizer until this call returned.
        let cb = lock(slot).clone();
        let Some(cb) = cb else { continue };
        if lost > 0 {
            let notice = LogRecord {
                level: Level::Warn,
                target: "log",
                message: format!(
                    "{lost} log records were dropped: the log callback is slower than the host ({QUEUE} were waiting)"
                ),
                agent: None,
                session: None,
                at: SystemTime::now(),
            };
            let mut text = notice.to_json().to_string().into_bytes();
            text.push(0);
            cb.log(acph_log_level::ACPH_LOG_WARN, &text);
        }
        cb.log(level, &json);
    }
    // Stopped: the finalizer runs after the last call, on this thread or in `stop`.
    let cb = lock(slot).take();
    drop(cb);
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use std::ffi::{CStr, c_char, c_void};
    use std::sync::atomic::AtomicBool;

    static GATE_OPEN: AtomicBool = AtomicBool::new(false);
    static SEEN: Mutex<Vec<(acph_log_level, String)>> = Mutex::new(Vec::new());

    unsafe extern "C" fn slow(
        _: *mut c_void,
        level: acph_log_level,
        text: *const c_char,
        _: usize,
    ) {
        while !GATE_OPEN.load(Ordering::Acquire) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // SAFETY: the library passes a NUL-terminated record.
        let text = unsafe { CStr::from_ptr(text) }.to_str().unwrap().to_owned();
        lock(&SEEN).push((level, text));
    }

    fn record(n: usize) -> LogRecord {
        LogRecord {
            level: Level::Info,
            target: "spawn",
            message: format!("r{n}"),
            agent: Some(1),
            session: None,
            at: SystemTime::now(),
        }
    }

    /// A callback that does not keep up: the host never waits for it; what does not fit the
    /// queue is dropped and counted in a `warn` record before the next one delivered.
    #[test]
    fn a_slow_callback_loses_records_and_is_told_how_many() {
        // SAFETY: `slow` is callable from any thread; no user data, no finalizer.
        let cb = unsafe { Callback::new(Some(slow as _), std::ptr::null_mut(), None) };
        let (bridge, sink) = LogBridge::start(cb).unwrap();
        let sent = QUEUE + 10;
        let t0 = std::time::Instant::now();
        for n in 0..sent {
            sink.log(&record(n));
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "the sink never blocks"
        );
        GATE_OPEN.store(true, Ordering::Release);
        // Once the queue drained, records are taken again.
        while lock(&SEEN).len() < QUEUE {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        sink.log(&record(sent));
        bridge.stop();
        let seen = lock(&SEEN);
        let notice: Vec<_> = seen
            .iter()
            .filter(|(_, t)| t.contains("\"target\":\"log\""))
            .collect();
        assert_eq!(notice.len(), 1, "{notice:?}");
        assert_eq!(notice[0].0, acph_log_level::ACPH_LOG_WARN);
        let v: serde_json::Value = serde_json::from_str(&notice[0].1).unwrap();
        let msg = v["message"].as_str().unwrap();
        let lost: usize = msg.split(' ').next().unwrap().parse().unwrap();
        let delivered = seen.len() - 1;
        assert_eq!(delivered + lost, sent + 1, "{msg}");
        assert!(lost >= 9, "{msg}");
        // In order, the last one included.
        assert!(seen.last().unwrap().1.contains(&format!("\"r{sent}\"")));
    }
}
