//! The reader and writer tasks that sit between the pipes and the connection actor.
//!
//! The reader decodes lines into [`Incoming`] messages off the actor's task (so decoding runs in
//! parallel with event delivery) and hands them over in batches through a bounded channel: when
//! the actor stops taking them (the embedder stopped pulling events), the reader stops reading
//! and the agent's stdout pipe carries the backpressure.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::value::RawValue;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use crate::transport::{BoxReader, BoxWriter};
use crate::wire::message::{self, Incoming, Interner};
use crate::wire::{FrameRef, LineReader};

/// What the reader hands the actor.
#[derive(Debug)]
pub(crate) enum ReaderMsg {
    Message {
        msg: Incoming,
        /// The line was not valid UTF-8 and was decoded lossily.
        lossy: bool,
        /// The raw line, only when wire events are on.
        raw: Option<Box<RawValue>>,
    },
    /// A non-JSON line.
    Noise { line: String, bytes: usize },
    /// A line over the size bound (skipped).
    TooLong { len: u64 },
    /// End of the agent's stdout (with the read error, if any).
    Eof(Option<String>),
}

/// Largest batch handed over at once, in messages and (roughly) in bytes.
const BATCH: usize = 256;
const BATCH_BYTES: usize = 1 << 20;
/// Bytes of decoded lines in flight between the reader and the actor (at least one line of the
/// maximum length always fits): a hostile agent cannot make the host hold more than this.
const IN_FLIGHT_BYTES: usize = 8 << 20;

/// Messages from the reader, holding their share of the in-flight byte budget until the actor
/// has handled them.
#[derive(Debug)]
pub(crate) struct Batch {
    pub msgs: Vec<ReaderMsg>,
    _budget: Option<tokio::sync::OwnedSemaphorePermit>,
}
/// How much of a noise line is kept for the event.
const NOISE_PREVIEW: usize = 1024;

pub(crate) async fn reader_task(
    reader: BoxReader,
    max_line: usize,
    wire: bool,
    tx: mpsc::Sender<Batch>,
) {
    let mut lines = LineReader::new(reader, max_line);
    let mut interner = Interner::default();
    let budget_total = IN_FLIGHT_BYTES.max(max_line.saturating_add(BATCH_BYTES));
    let budget = Arc::new(tokio::sync::Semaphore::new(budget_total));
    loop {
        let mut batch = Vec::with_capacity(16);
        let mut bytes = 0usize;
        let mut done = false;
        match lines.next_frame_ref().await {
            Ok(Some(frame)) => bytes += push_frame(&mut batch, frame, wire, &mut interner),
            Ok(None) => {
                batch.push(ReaderMsg::Eof(None));
                done = true;
            }
            Err(e) => {
                batch.push(ReaderMsg::Eof(Some(e.to_string())));
                done = true;
            }
        }
        while !done && batch.len() < BATCH && bytes < BATCH_BYTES {
            match lines.next_buffered_ref() {
                Some(frame) => bytes += push_frame(&mut batch, frame, wire, &mut interner),
                None => break,
            }
        }
        let want = u32::try_from(bytes.clamp(1, budget_total)).unwrap_or(u32::MAX);
        let Ok(permit) = budget.clone().acquire_many_owned(want).await else {
            return;
        };
        let batch = Batch {
            msgs: batch,
            _budget: Some(permit),
        };
        if tx.send(batch).await.is_err() || done {
            return;
        }
    }
}

/// Decode one frame into `batch`; returns the bytes it holds on to.
fn push_frame(
    batch: &mut Vec<ReaderMsg>,
    frame: FrameRef<'_>,
    wire: bool,
    interner: &mut Interner,
) -> usize {
    match frame {
        FrameRef::TooLong { len } => {
            batch.push(ReaderMsg::TooLong { len });
            0
        }
        FrameRef::Line(bytes) => {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return 0; // blank lines carry nothing
            }
            let held = bytes.len() * if wire { 2 } else { 1 };
            // Valid UTF-8 (the normal case) is decoded in place, without a copy.
            let lossy_text;
            let (text, lossy) = match std::str::from_utf8(bytes) {
                Ok(s) => (s, false),
                Err(_) => {
                    lossy_text = String::from_utf8_lossy(bytes).into_owned();
                    (lossy_text.as_str(), true)
                }
            };
            match message::decode_with(text, interner) {
                Ok(msg) => {
                    // A message nested too deep is not forwarded, not even to wire events.
                    let raw = if wire && !matches!(msg, Incoming::TooDeep { .. }) {
                        RawValue::from_string(text.to_owned()).ok()
                    } else {
                        None
                    };
                    batch.push(ReaderMsg::Message { msg, lossy, raw });
                }
                Err(_) => {
                    let mut cut = text.len().min(NOISE_PREVIEW);
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    batch.push(ReaderMsg::Noise {
                        line: text[..cut].to_owned(),
                        bytes: text.len(),
                    });
                }
            }
            held
        }
    }
}

/// The way to the agent's stdin, shared by the actor and the writer task.
///
/// The actor writes a line itself when nothing is waiting before it: one non-blocking write,
/// no hop to another task (most of an answer's round trip is task hops). Whatever does not go
/// out at once (a full pipe, a slow `connect` transport) waits in `buf`, in order, for the
/// writer task, which owns the writer while it waits on the agent and hands it back when done.
pub(crate) struct Outbound {
    state: std::sync::Mutex<OutState>,
    wake: tokio::sync::Notify,
    /// Bytes accepted but not yet written, so the actor can tell an agent that stopped reading
    /// its stdin.
    queued: AtomicUsize,
}

struct OutState {
    /// `None` while the writer task holds it.
    writer: Option<BoxWriter>,
    buf: Vec<u8>,
    /// Close the agent's stdin once `buf` is out (first rung of the shutdown ladder).
    close: bool,
    /// A write the actor made failed; the writer task reports it.
    failed: Option<std::io::Error>,
    /// The actor wrote bytes whose flush did not finish: the writer task flushes them.
    unflushed: bool,
}

impl Outbound {
    pub(crate) fn new(writer: BoxWriter) -> Arc<Outbound> {
        Arc::new(Outbound {
            state: std::sync::Mutex::new(OutState {
                writer: Some(writer),
                buf: Vec::new(),
                close: false,
                failed: None,
                unflushed: false,
            }),
            wake: tokio::sync::Notify::new(),
            queued: AtomicUsize::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OutState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes accepted and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Send `line` and a newline, in order after everything sent before; returns the bytes
    /// still queued afterwards. Never waits.
    pub(crate) fn send(&self, line: String) -> usize {
        let mut st = self.lock();
        if st.close || st.failed.is_some() {
            return self.queued();
        }
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        let mut sent = 0;
        if st.buf.is_empty()
            && !st.unflushed
            && let Some(writer) = st.writer.as_mut()
        {
            match write_now(writer, &bytes) {
                Ok((n, flushed)) => {
                    sent = n;
                    st.unflushed = !flushed;
                }
                Err(e) => st.failed = Some(e),
            }
            if st.failed.is_none() && sent == bytes.len() && !st.unflushed {
                return self.queued();
            }
        }
        if st.failed.is_some() {
            drop(st);
            self.wake.notify_one();
            return self.queued();
        }
        st.buf.extend_from_slice(&bytes[sent..]);
        let added = bytes.len() - sent;
        drop(st);
        let queued = self.queued.fetch_add(added, Ordering::Relaxed) + added;
        self.wake.notify_one();
        queued
    }

    /// Close the agent's stdin once what was sent is out.
    pub(crate) fn close(&self) {
        self.lock().close = true;
        self.wake.notify_one();
    }
}

/// The actor's side of [`Outbound`]: dropping it (the actor ended) closes the agent's stdin.
pub(crate) struct OutHandle(pub(crate) Arc<Outbound>);

impl std::ops::Deref for OutHandle {
    type Target = Outbound;
    fn deref(&self) -> &Outbound {
        &self.0
    }
}

impl Drop for OutHandle {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// One non-blocking attempt to write `bytes` and flush: how many went out, and whether the
/// flush finished (a buffered transport holds bytes until flushed).
fn write_now(writer: &mut BoxWriter, bytes: &[u8]) -> std::io::Result<(usize, bool)> {
    use std::task::Poll;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut done = 0;
    while done < bytes.len() {
        match writer.as_mut().poll_write(&mut cx, &bytes[done..]) {
            Poll::Ready(Ok(0)) => return Err(std::io::ErrorKind::WriteZero.into()),
            Poll::Ready(Ok(n)) => done += n,
            Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => return Ok((done, false)),
        }
    }
    match writer.as_mut().poll_flush(&mut cx) {
        Poll::Ready(Ok(())) => Ok((done, true)),
        Poll::Ready(Err(e)) => Err(e),
        Poll::Pending => Ok((done, false)),
    }
}

/// Writes what the actor could not write at once, in order; closes the agent's stdin when
/// asked (the actor's `OutHandle` asks when dropped).
pub(crate) async fn writer_task(out: Arc<Outbound>) -> Result<(), std::io::Error> {
    loop {
        let work = {
            let mut st = out.lock();
            if let Some(e) = st.failed.take() {
                return Err(e);
            }
            if st.buf.is_empty() && !st.close && !st.unflushed {
                None
            } else {
                let Some(writer) = st.writer.take() else {
                    return Ok(()); // closed already
                };
                st.unflushed = false;
                Some((writer, std::mem::take(&mut st.buf), st.close))
            }
        };
        let Some((mut writer, mut buf, close)) = work else {
            out.wake.notified().await;
            continue;
        };
        let n = buf.len();
        let res = async {
            if !buf.is_empty() {
                writer.write_all(&buf).await?;
            }
            writer.flush().await
        }
        .await;
        out.queued
            .fetch_sub(n.min(out.queued.load(Ordering::Relaxed)), Ordering::Relaxed);
        res?;
        if close {
            let _ = writer.shutdown().await;
            return Ok(());
        }
        buf.clear();
        let mut st = out.lock();
        if st.buf.is_empty() && buf.capacity() <= 4 << 20 {
            // Keep the allocation (unless one huge line needed it).
            st.buf = buf;
        }
        st.writer = Some(writer);
    }
}
