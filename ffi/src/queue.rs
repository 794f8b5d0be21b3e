//! The C face's view of the core's event stream: pulled directly (one bounded queue, no second
//! buffer in between), with a pollable fd that is readable exactly while events (or the end of
//! the stream) are waiting, and the embedder's wake-up callback.
//!
//! Pulling straight from the core means that when a call returns, every event it caused is
//! already pullable (the core queues a step's events before it answers the step's callers).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use acp_host::{Event, EventStream};

use crate::status::acph_status;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The fd's state; its lock orders "became non-empty" against "drained to empty".
#[derive(Debug, Default)]
struct Signal {
    /// Whether a byte is waiting in the fd.
    signalled: bool,
}

#[derive(Debug)]
pub(crate) struct Queue {
    /// `None` when the configuration disabled events (or after teardown).
    stream: Mutex<Option<Arc<EventStream>>>,
    signal: Mutex<Signal>,
    #[cfg(unix)]
    fd_read: std::os::unix::net::UnixStream,
    #[cfg(unix)]
    fd_write: std::os::unix::net::UnixStream,
}

impl Queue {
    pub(crate) fn new(stream: Option<EventStream>) -> std::io::Result<Arc<Queue>> {
        #[cfg(unix)]
        let (fd_read, fd_write) = {
            let (r, w) = std::os::unix::net::UnixStream::pair()?;
            r.set_nonblocking(true)?;
            w.set_nonblocking(true)?;
            (r, w)
        };
        let q = Arc::new(Queue {
            stream: Mutex::new(stream.map(Arc::new)),
            signal: Mutex::new(Signal::default()),
            #[cfg(unix)]
            fd_read,
            #[cfg(unix)]
            fd_write,
        });
        if q.stream().is_none() {
            // No events at all: the stream is over from the start.
            q.raise();
        }
        Ok(q)
    }

    fn stream(&self) -> Option<Arc<EventStream>> {
        lock(&self.stream).clone()
    }

    /// Register `wake` to run (on a library thread) whenever events start waiting; the fd is
    /// raised first.
    pub(crate) fn start(self: &Arc<Self>, wake: impl Fn() + Send + Sync + 'static) {
        let Some(stream) = self.stream() else { return };
        let weak = Arc::downgrade(self);
        stream.set_waker(Some(Arc::new(move || {
            if let Some(q) = weak.upgrade() {
                q.raise();
                wake();
            }
        })));
    }

    #[cfg(unix)]
    pub(crate) fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.fd_read.as_raw_fd()
    }

    /// Make the fd readable.
    fn raise(&self) {
        let mut s = lock(&self.signal);
        if s.signalled {
            return;
        }
        #[cfg(unix)]
        {
            use std::io::Write;
            let _ = (&self.fd_write).write(&[1]);
        }
        s.signalled = true;
    }

    /// After a pull: clear the fd if nothing is waiting any more (under the signal lock, so a
    /// concurrent "became non-empty" raises it again after us, never before).
    fn settle_fd(&self, stream: &EventStream) {
        let mut s = lock(&self.signal);
        if !s.signalled || !stream.is_empty() || stream.is_ended() {
            return;
        }
        #[cfg(unix)]
        {
            use std::io::Read;
            let mut buf = [0u8; 64];
            while matches!((&self.fd_read).read(&mut buf), Ok(n) if n > 0) {}
        }
        s.signalled = false;
    }

    /// Whether events (or the end of the stream) are waiting.
    pub(crate) fn is_ready(&self) -> bool {
        match self.stream() {
            Some(s) => !s.is_empty() || s.is_ended(),
            None => true,
        }
    }

    /// Take the next event, waiting up to `timeout` (`None`: for ever). `EMPTY` on timeout,
    /// `CLOSED` once the stream ended and everything was taken.
    pub(crate) fn pop(&self, timeout: Option<Duration>) -> Result<Event, acph_status> {
        let Some(stream) = self.stream() else {
            return Err(acph_status::ACPH_STATUS_CLOSED);
        };
        let ev = match timeout {
            Some(Duration::ZERO) => stream.try_next(),
            t => stream.blocking_next_timeout(t),
        };
        self.settle_fd(&stream);
        match ev {
            Some(ev) => Ok(ev),
            None if stream.is_ended() => Err(acph_status::ACPH_STATUS_CLOSED),
            None => Err(acph_status::ACPH_STATUS_EMPTY),
        }
    }

    /// Host teardown: drop the stream (queued events are discarded and nothing waits for a
    /// reader any more).
    pub(crate) fn discard(&self) {
        let stream = lock(&self.stream).take();
        if let Some(s) = &stream {
            s.set_waker(None);
        }
        drop(stream);
        self.raise();
    }
}
