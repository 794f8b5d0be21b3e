//! The embedder's log handler (`new Host({ onLog })`): the core's log records (`acp_host::log`)
//! handed to JS, in order. Off by default: without a handler the core has no sink and never even
//! formats a record.
//!
//! The core calls its sink on its own tasks, which must never wait for JS (a slow handler would
//! stall turns). So the sink only formats the record and queues it on a threadsafe function
//! (never blocking); the JS thread takes it from there to the facade's delivery function, which
//! calls the handler. At most [`LOG_QUEUE`] records wait for the JS thread: past that, new ones
//! are dropped and counted (`host.droppedLogRecords()`), and the next record delivered carries how
//! many were lost since the handler was last told (the facade then gives it one `warn` record with
//! target `log`). The threadsafe function is weak: waiting records never keep the Node process
//! alive. Closing the host delivers what is queued, then stops ([`LogBridge::close`]).

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use acp_host::log::{LogRecord, LogSink};
use napi::Status;
use napi::bindgen_prelude::{FnArgs, Function, Result};
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use tokio::sync::oneshot;

/// Records waiting for the JS thread at most; more are dropped and counted.
pub(crate) const LOG_QUEUE: usize = 1024;

/// What crosses to the JS thread.
enum Msg {
    /// A record's JSON (`LogRecord::to_json` without its `null` fields).
    Record(String),
    /// Everything queued before it was delivered: the host is closing.
    Flush(oneshot::Sender<()>),
}

/// `(recordJson | null, lost) => void`: the facade's delivery function. `null` (with the close's
/// flush) carries no record; `lost` > 0 says how many were dropped since the last call.
/// (`FnArgs`: two arguments, not one array.)
pub(crate) type JsDeliver<'env> = Function<'env, FnArgs<(Option<String>, f64)>, ()>;
type DeliverFn = ThreadsafeFunction<Msg, (), FnArgs<(Option<String>, f64)>, Status, false, true>;

#[derive(Default)]
struct State {
    /// `None` once closed: records go nowhere.
    deliver: Option<DeliverFn>,
    /// Records queued for the JS thread and not yet handed to the handler.
    waiting: usize,
    /// Records dropped in all, and since the handler was last told.
    dropped: u64,
    untold: u64,
}

#[derive(Default)]
struct Shared(Mutex<State>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A host's log handler: the core's sink and the handle `close` and `dropped` use.
pub(crate) struct LogBridge {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LogBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogBridge").finish_non_exhaustive()
    }
}

impl LogBridge {
    /// A bridge to `deliver` (on the JS thread) and the core's sink for it.
    pub(crate) fn new(deliver: &JsDeliver<'_>) -> Result<(LogBridge, Arc<dyn LogSink>)> {
        let shared = Arc::new(Shared::default());
        // Weak: the threadsafe function is owned by `shared`, whose callback must not own it back.
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        let tsfn = deliver
            .build_threadsafe_function::<Msg>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |ctx: ThreadsafeCallContext<Msg>| {
                // Taken now, on the JS thread, right before the handler gets the record.
                let lost = weak.upgrade().map_or(0, |s| {
                    let mut st = s.lock();
                    if matches!(ctx.value, Msg::Record(_)) {
                        st.waiting = st.waiting.saturating_sub(1);
                    }
                    std::mem::take(&mut st.untold)
                });
                let args = match ctx.value {
                    Msg::Record(json) => (Some(json), lost as f64),
                    Msg::Flush(done) => {
                        let _ = done.send(());
                        (None, lost as f64)
                    }
                };
                Ok(FnArgs::from(args))
            })?;
        shared.lock().deliver = Some(tsfn);
        let sink = Arc::new(Sink(shared.clone()));
        Ok((LogBridge { shared }, sink))
    }

    /// Records dropped so far because the handler fell [`LOG_QUEUE`] records behind.
    pub(crate) fn dropped(&self) -> u64 {
        self.shared.lock().dropped
    }

    /// Resolves once every record queued so far was handed to the handler (and it was told of
    /// any loss); records made afterwards go nowhere. Idempotent.
    pub(crate) async fn close(&self) {
        let rx = {
            let mut st = self.shared.lock();
            let Some(deliver) = st.deliver.take() else {
                return;
            };
            let (tx, rx) = oneshot::channel();
            if deliver.call(Msg::Flush(tx), ThreadsafeFunctionCallMode::NonBlocking) != Status::Ok {
                return;
            }
            // Dropped here: released, the threadsafe function still delivers what it holds.
            rx
        };
        // An error: the environment is going away and delivers nothing more.
        let _ = rx.await;
    }
}

/// The core's sink: format, queue, never wait.
struct Sink(Arc<Shared>);

impl LogSink for Sink {
    fn log(&self, record: &LogRecord) {
        let mut json = record.to_json();
        if let Some(fields) = json.as_object_mut() {
            // `agent`/`session` only when the record has them, as the events' envelope.
            fields.retain(|_, v| !v.is_null());
        }
        let json = json.to_string();
        let mut st = self.0.lock();
        // Queued under the lock: records reach JS in the order the sink got them.
        let status = match &st.deliver {
            None => return,
            Some(_) if st.waiting >= LOG_QUEUE => {
                st.dropped += 1;
                st.untold += 1;
                return;
            }
            Some(deliver) => {
                deliver.call(Msg::Record(json), ThreadsafeFunctionCallMode::NonBlocking)
            }
        };
        if status == Status::Ok {
            st.waiting += 1;
        }
    }
}
