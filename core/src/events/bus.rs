//! The host-wide event queue: bounded in events and in bytes, never awaited by a connection actor.
//!
//! Producers push without waiting ([`EventBus::try_push`]); what does not fit stays with the
//! producer (the actor's backlog), which stops reading its agent until [`EventBus::wait_room`]
//! says the consumer made room. So a consumer that stops pulling stops the agents being *read*,
//! and nothing else: commands, timers, cancel and shutdown keep running. `seq` is assigned under
//! the queue's lock, so queue order and `seq` order are the same across agents.
//!
//! The consumer side ([`EventStream`](crate::EventStream)) pulls from async code, from blocking
//! code with a timeout (the C face), and can register a waker that is told when the queue goes
//! from empty to non-empty (event fds, wake-up callbacks).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Notify;

use super::{Event, PendingEvent};

/// Called (from whichever thread queued the event, with no lock held) when the queue goes from
/// empty to non-empty, and once when the stream ends. Must be quick and must not block.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// Bounds of the host's event queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    /// At most this many events are queued.
    pub max_events: usize,
    /// At most about this many bytes of events are queued (payload + envelope estimate; one
    /// event may overshoot it, so a single event larger than the bound still gets through).
    pub max_bytes: usize,
}

impl Default for QueueLimits {
    fn default() -> Self {
        QueueLimits {
            max_events: 65_536,
            max_bytes: 32 * 1024 * 1024,
        }
    }
}

/// Bookkeeping bytes counted per event on top of its payload.
const EVENT_OVERHEAD: usize = 160;

fn cost(ev: &PendingEvent) -> usize {
    ev.data.get().len() + ev.session.as_deref().map_or(0, str::len) + EVENT_OVERHEAD
}

/// The producers' handle. Cloned into every connection; the stream ends when the last clone is
/// gone and everything was pulled.
#[derive(Clone)]
pub(crate) struct EventBus {
    inner: Arc<Inner>,
    _token: Arc<SenderToken>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

/// Dropped with the last producer handle: ends the stream.
struct SenderToken {
    inner: Arc<Inner>,
}

impl Drop for SenderToken {
    fn drop(&mut self) {
        let cv = {
            let mut st = self.inner.lock();
            st.senders_gone = true;
            st.cv_waiters > 0
        };
        self.inner.wake_consumer(true, cv);
    }
}

pub(crate) struct Inner {
    state: Mutex<State>,
    /// Wakes an async consumer.
    data: Notify,
    /// Wakes a blocking consumer.
    data_cv: Condvar,
    /// Wakes producers waiting for room.
    room: Notify,
    limits: QueueLimits,
    enabled: bool,
    /// `HostConfig::coalesce_tool_call_updates`.
    coalesce: bool,
    waker: Mutex<Option<Waker>>,
}

#[derive(Debug)]
struct State {
    /// Each event with its cost and, for a coalescable `tool_call_update`, its tool call id.
    queue: VecDeque<(Event, usize, Option<Arc<str>>)>,
    bytes: usize,
    seq: u64,
    senders_gone: bool,
    receiver_gone: bool,
    last_pull: Instant,
    /// Since when a producer has been holding events that did not fit.
    blocked_since: Option<Instant>,
    /// Threads waiting in `blocking_pull` (the condvar is only signalled when there are some).
    cv_waiters: usize,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake_consumer(&self, call_waker: bool, cv_waiters: bool) {
        self.data.notify_one();
        if cv_waiters {
            self.data_cv.notify_all();
        }
        if call_waker {
            let waker = self.waker.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(w) = waker {
                w();
            }
        }
    }

    fn has_room(&self, st: &State) -> bool {
        st.queue.len() < self.limits.max_events && st.bytes < self.limits.max_bytes
    }

    /// Producers blocked on a full queue are woken once it is half empty (not on every pull).
    fn below_low_water(&self, st: &State) -> bool {
        st.queue.len() <= self.limits.max_events / 2 && st.bytes <= self.limits.max_bytes / 2
    }

    /// Take the oldest event (the caller holds the lock).
    fn pop(&self, st: &mut State) -> Option<Event> {
        let (ev, size, _) = st.queue.pop_front()?;
        st.bytes -= size;
        st.last_pull = Instant::now();
        if st.blocked_since.is_some() && self.below_low_water(st) {
            st.blocked_since = None;
            self.room.notify_waiters();
        }
        Some(ev)
    }
}

/// Merge `next` (a `tool_call_update`) into the queue's last event when that one is a
/// not-yet-pulled update of the same tool call (same agent, session, turn and replay flag): the
/// newer fields replace the older ones, `_meta.acpHost.coalesced` counts the updates it stands
/// for, and it keeps its place and `seq`. Only the tail is merged, so no event overtakes another.
fn coalesce_into_tail(st: &mut State, next: &PendingEvent) -> bool {
    let Some(key) = &next.coalesce else {
        return false;
    };
    let Some((tail, size, Some(tail_key))) = st.queue.back_mut() else {
        return false;
    };
    if tail_key != key
        || tail.agent != next.agent
        || tail.session != next.session
        || tail.turn != next.turn
        || tail.replay != next.replay
    {
        return false;
    }
    let (Ok(serde_json::Value::Object(mut merged)), Ok(serde_json::Value::Object(newer))) = (
        serde_json::from_str::<serde_json::Value>(tail.data.get()),
        serde_json::from_str::<serde_json::Value>(next.data.get()),
    ) else {
        return false;
    };
    let count = merged
        .get("_meta")
        .and_then(|m| m.get("acpHost"))
        .and_then(|m| m.get("coalesced"))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(1);
    for (k, v) in newer {
        merged.insert(k, v);
    }
    let meta = merged
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if !meta.is_object() {
        *meta = serde_json::Value::Object(Default::default());
    }
    let host = &mut meta["acpHost"];
    if !host.is_object() {
        *host = serde_json::Value::Object(Default::default());
    }
    host["coalesced"] = serde_json::Value::from(count + 1);
    let Ok(raw) = serde_json::value::to_raw_value(&merged) else {
        return false;
    };
    let old = tail.data.get().len();
    let new = raw.get().len();
    tail.data = raw;
    *size = *size - old + new;
    st.bytes = st.bytes - old + new;
    true
}

/// What a pull returned.
#[derive(Debug)]
pub(crate) enum Pulled {
    Event(Event),
    /// Nothing queued right now.
    Empty,
    /// Nothing queued and nothing ever will be.
    Ended,
}

impl EventBus {
    /// A bus and its single consumer end (`None` when events are disabled: everything is dropped
    /// at once, nobody is there to lose it for).
    pub fn new(limits: QueueLimits, enabled: bool, coalesce: bool) -> (EventBus, Option<Consumer>) {
        let limits = QueueLimits {
            max_events: limits.max_events.max(1),
            max_bytes: limits.max_bytes.max(1),
        };
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                bytes: 0,
                seq: 0,
                senders_gone: false,
                receiver_gone: !enabled,
                last_pull: Instant::now(),
                blocked_since: None,
                cv_waiters: 0,
            }),
            data: Notify::new(),
            data_cv: Condvar::new(),
            room: Notify::new(),
            limits,
            enabled,
            coalesce,
            waker: Mutex::new(None),
        });
        let bus = EventBus {
            inner: inner.clone(),
            _token: Arc::new(SenderToken {
                inner: inner.clone(),
            }),
        };
        let consumer = enabled.then(|| Consumer { inner });
        (bus, consumer)
    }

    /// Queue events from the front of `events` while they fit (each gets the next `seq`); what
    /// does not fit stays in `events`. Never waits. Returns whether everything was taken.
    pub fn try_push(&self, events: &mut VecDeque<PendingEvent>) -> bool {
        if events.is_empty() {
            return true;
        }
        let inner = &*self.inner;
        let (was_empty, cv);
        {
            let mut st = inner.lock();
            if st.receiver_gone || st.senders_gone {
                events.clear();
                return true;
            }
            was_empty = st.queue.is_empty();
            cv = st.cv_waiters > 0;
            let at = SystemTime::now();
            loop {
                // A coalesced update takes no room: it replaces the queue's tail.
                if inner.coalesce
                    && let Some(front) = events.front()
                    && coalesce_into_tail(&mut st, front)
                {
                    events.pop_front();
                    continue;
                }
                if !inner.has_room(&st) {
                    break;
                }
                let Some(mut ev) = events.pop_front() else {
                    break;
                };
                let size = cost(&ev);
                let key = ev.coalesce.take();
                st.seq += 1;
                let seq = st.seq;
                st.bytes += size;
                st.queue.push_back((ev.into_event(seq, at), size, key));
            }
            if !events.is_empty() && st.blocked_since.is_none() {
                st.blocked_since = Some(Instant::now());
            }
        }
        inner.wake_consumer(was_empty, cv);
        events.is_empty()
    }

    /// Queue events, waiting for room as needed (for producers that are not a connection actor
    /// and may wait: the faces' call reports).
    pub async fn emit_many(&self, events: Vec<PendingEvent>) {
        let mut events: VecDeque<PendingEvent> = events.into();
        while !self.try_push(&mut events) {
            self.wait_room().await;
        }
    }

    pub async fn emit(&self, ev: PendingEvent) {
        self.emit_many(vec![ev]).await;
    }

    /// Resolves when a producer holding events should try again: the queue drained to half its
    /// bounds, or the consumer is gone.
    pub async fn wait_room(&self) {
        loop {
            let notified = self.inner.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.inner.lock();
                if st.receiver_gone
                    || st.senders_gone
                    || st.blocked_since.is_none()
                    || self.inner.has_room(&st)
                {
                    return;
                }
            }
            notified.await;
        }
    }

    /// How long producers have been held back while nobody pulled anything: `Some` only while the
    /// queue is full and a producer is waiting.
    pub fn stalled_for(&self) -> Option<Duration> {
        let st = self.inner.lock();
        let since = st.blocked_since?;
        Some(Instant::now().saturating_duration_since(since.max(st.last_pull)))
    }

    /// Resolves once the queue has been stalled (full, a producer waiting, nothing pulled) for
    /// `limit`; returns how long. Polls at a coarse interval: it only runs while a call waits.
    pub async fn wait_stalled(&self, limit: Duration) -> Duration {
        let tick = (limit / 4).clamp(Duration::from_millis(10), Duration::from_millis(250));
        loop {
            match self.stalled_for() {
                Some(d) if d >= limit => return d,
                Some(d) => tokio::time::sleep((limit - d).min(tick)).await,
                None => tokio::time::sleep(tick).await,
            }
        }
    }

    /// End the stream after what is queued now; later events are discarded.
    pub fn close(&self) {
        let cv = {
            let mut st = self.inner.lock();
            if st.senders_gone {
                return;
            }
            st.senders_gone = true;
            st.cv_waiters > 0
        };
        self.inner.room.notify_waiters();
        self.inner.wake_consumer(true, cv);
    }

    pub fn enabled(&self) -> bool {
        self.inner.enabled
    }
}

/// The single consumer end of the bus (wrapped by [`crate::EventStream`]).
pub(crate) struct Consumer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").finish_non_exhaustive()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        // Nobody will pull any more: drop what is queued and let every producer go on.
        let dropped = {
            let mut st = self.inner.lock();
            st.receiver_gone = true;
            st.bytes = 0;
            st.blocked_since = None;
            std::mem::take(&mut st.queue)
        };
        drop(dropped);
        self.inner.room.notify_waiters();
    }
}

impl Consumer {
    pub fn try_pull(&self) -> Pulled {
        let mut st = self.inner.lock();
        match self.inner.pop(&mut st) {
            Some(ev) => Pulled::Event(ev),
            None if st.senders_gone => Pulled::Ended,
            None => Pulled::Empty,
        }
    }

    /// Whether nothing is queued right now (for event fds: clear readiness only when true).
    pub fn is_empty(&self) -> bool {
        self.inner.lock().queue.is_empty()
    }

    /// Whether the stream ended and everything was pulled.
    pub fn is_ended(&self) -> bool {
        let st = self.inner.lock();
        st.queue.is_empty() && st.senders_gone
    }

    /// The next event; `None` once the stream ended and everything was pulled.
    pub async fn next(&self) -> Option<Event> {
        loop {
            let notified = self.inner.data.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.try_pull() {
                Pulled::Event(ev) => return Some(ev),
                Pulled::Ended => return None,
                Pulled::Empty => notified.await,
            }
        }
    }

    /// Up to `limit` events (at least one unless the stream ended); returns how many.
    pub async fn next_batch(&self, buf: &mut Vec<Event>, limit: usize) -> usize {
        let limit = limit.max(1);
        loop {
            let notified = self.inner.data.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.inner.lock();
                let mut n = 0;
                while n < limit {
                    match self.inner.pop(&mut st) {
                        Some(ev) => {
                            buf.push(ev);
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n > 0 {
                    return n;
                }
                if st.senders_gone {
                    return 0;
                }
            }
            notified.await;
        }
    }

    /// Blocking pull for threads outside any runtime: waits up to `timeout` (`None`: for ever).
    pub fn blocking_pull(&self, timeout: Option<Duration>) -> Pulled {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = self.inner.lock();
        loop {
            if let Some(ev) = self.inner.pop(&mut st) {
                return Pulled::Event(ev);
            }
            if st.senders_gone {
                return Pulled::Ended;
            }
            let wait = match deadline {
                None => None,
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Pulled::Empty;
                    }
                    Some(d - now)
                }
            };
            st.cv_waiters += 1;
            st = match wait {
                None => self
                    .inner
                    .data_cv
                    .wait(st)
                    .unwrap_or_else(|p| p.into_inner()),
                Some(left) => self
                    .inner
                    .data_cv
                    .wait_timeout(st, left)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0),
            };
            st.cv_waiters -= 1;
        }
    }

    /// Register (or clear) the waker; called at once if events are already waiting.
    pub fn set_waker(&self, waker: Option<Waker>) {
        *self.inner.waker.lock().unwrap_or_else(|p| p.into_inner()) = waker.clone();
        let ready = {
            let st = self.inner.lock();
            !st.queue.is_empty() || st.senders_gone
        };
        if ready && let Some(w) = waker {
            w();
        }
    }
}
