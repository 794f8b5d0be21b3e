//! The reader and writer tasks that sit between the pipes and the connection actor.
//!
//! The reader decodes lines into [`Incoming`] messages off the actor's task (so decoding runs in
//! parallel with event delivery) and hands them over in batches through a bounded channel: when
//! the actor stops taking them (the embedder stopped pulling events), the reader stops reading
//! and the agent's stdout pipe carries the backpressure.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::answer::{Encoded, Held};
use crate::receipt::{Receipt, RequestState};
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
        /// Where the raw line is in its batch's [`Batch::raw`] (valid JSON: it decoded; without
        /// surrounding whitespace), only when wire events or the recording are on.
        raw: Option<RawSpan>,
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
    /// The raw lines of `msgs` (wire events or the recording on), end to end: one buffer per
    /// batch rather than an allocation per line (perf: that allocation and its free were a third
    /// of what recording a flood cost the connection's thread).
    pub raw: String,
    /// When the batch's first line was read (wire events or the recording on): the time the
    /// recording gives its lines, one clock read per batch.
    pub read_at: Option<std::time::Instant>,
    /// Where `raw` goes back once the batch is handled.
    pool: Option<RawPool>,
    _budget: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            pool.put(std::mem::take(&mut self.raw));
        }
    }
}

/// Batches' raw-line buffers, back from the actor for the reader's next batches: a flood's
/// batches reuse a few buffers (a new one per batch, up to a megabyte, cost the allocator's
/// `mmap` and its page faults on every batch). A recording takes each batch's buffer with its
/// lines and leaves it one its thread is done with (`Actor::attach_batch`), or none.
#[derive(Debug, Clone, Default)]
struct RawPool(Arc<std::sync::Mutex<Vec<String>>>);

impl RawPool {
    /// Buffers kept (the reader's batches in flight, and one).
    const KEPT: usize = 4;

    fn take(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_default()
    }

    fn put(&self, mut raw: String) {
        if raw.capacity() == 0 {
            return; // handed to the recording with its lines, and none in its place
        }
        raw.clear();
        if raw.capacity() > 2 * BATCH_BYTES {
            raw.shrink_to(BATCH_BYTES); // one long line's room is not kept
        }
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < Self::KEPT {
            kept.push(raw);
        }
    }
}

impl Batch {
    /// What the actor needs besides a message: its raw line.
    pub(crate) fn arrival(&self) -> Arrival<'_> {
        Arrival { raw: &self.raw }
    }
}

/// A message's raw line within [`Batch::raw`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawSpan {
    start: usize,
    end: usize,
}

/// A batch's raw lines, lent to the actor while it handles the batch's messages (empty once
/// handed to the recording, when wire events do not need them).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Arrival<'a> {
    raw: &'a str,
}

impl RawSpan {
    pub(crate) fn range(self) -> std::ops::Range<usize> {
        self.start..self.end
    }
}

impl<'a> Arrival<'a> {
    /// The raw line at `span` (empty if it is not this batch's: never, from the reader).
    pub(crate) fn line(&self, span: RawSpan) -> &'a str {
        self.raw.get(span.start..span.end).unwrap_or_default()
    }
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
    let pool = wire.then(RawPool::default);
    loop {
        let mut batch = Vec::with_capacity(16);
        let mut raw = pool.as_ref().map(RawPool::take).unwrap_or_default();
        let mut bytes = 0usize;
        let mut done = false;
        let first = lines.next_frame_ref().await;
        let read_at = wire.then(std::time::Instant::now);
        match first {
            Ok(Some(frame)) => {
                bytes += push_frame(&mut batch, &mut raw, frame, wire, &mut interner);
            }
            Ok(None) => {
                batch.push(ReaderMsg::Eof(None));
                done = true;
            }
            Err(e) => {
                batch.push(ReaderMsg::Eof(Some(e.to_string())));
                done = true;
            }
        }
        if wire && !done {
            // Room for every line read so far, at once (growing line by line cost a copy of
            // the batch's lines per doubling).
            raw.reserve(lines.buffered_len().min(BATCH_BYTES));
        }
        while !done && batch.len() < BATCH && bytes < BATCH_BYTES {
            match lines.next_buffered_ref() {
                Some(frame) => {
                    bytes += push_frame(&mut batch, &mut raw, frame, wire, &mut interner)
                }
                None => break,
            }
        }
        let want = u32::try_from(bytes.clamp(1, budget_total)).unwrap_or(u32::MAX);
        let Ok(permit) = budget.clone().acquire_many_owned(want).await else {
            return;
        };
        let batch = Batch {
            msgs: batch,
            raw,
            read_at,
            pool: pool.clone(),
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
    raw_lines: &mut String,
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
                    // Not checked again (`RawValue::from_string` would parse it a second time,
                    // on every line of a recorded connection): it decoded, so it is JSON.
                    // (JSON's whitespace is ASCII's but for form feed, which does not decode.)
                    let raw = if wire && !matches!(msg, Incoming::TooDeep { .. }) {
                        let start = raw_lines.len();
                        raw_lines.push_str(text.trim_ascii());
                        Some(RawSpan {
                            start,
                            end: raw_lines.len(),
                        })
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
/// out at once (a full pipe, a slow `connect` transport) waits in `queue`, in order, for the
/// writer task, which owns the writer while it waits on the agent and hands it back when done.
///
/// The queue never holds more than `max_outbound_bytes`: answers to the agent's requests hold
/// their share of the served answers' [`Budget`](super::answer::Budget) (half of it) until they
/// are written, and the host's own lines (its requests, notifications, error answers) may take
/// the rest, `own_room`. A line of its own that does not fit is not queued: see
/// [`Outbound::send`].
pub(crate) struct Outbound {
    state: std::sync::Mutex<OutState>,
    wake: tokio::sync::Notify,
    /// Woken when bytes are written or the pipe fails: answers' receipts wait on it (no
    /// waiter, no cost: `notify_waiters` is an atomic load then).
    progress: tokio::sync::Notify,
    /// The most the host's own lines may hold in the queue.
    own_room: usize,
}

/// Lines waiting for the writer, kept as they were made (no copy into one buffer): a small line
/// joins the one before it, a large one stays whole until written.
struct Chunk {
    bytes: Vec<u8>,
    /// Bytes already written.
    at: usize,
    /// One of the host's own lines (else an answer holding `held`).
    own: bool,
    held: Option<Held>,
}

impl Chunk {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }
}

/// Lines at most this long join the chunk before them (fewer writes for many small lines).
const JOIN: usize = 64 * 1024;

struct OutState {
    /// `None` while the writer task holds it.
    writer: Option<BoxWriter>,
    queue: VecDeque<Chunk>,
    /// Close the agent's stdin once the queue is out (first rung of the shutdown ladder).
    close: bool,
    /// A write the actor made failed; the writer task reports it.
    failed: Option<std::io::Error>,
    /// The actor wrote bytes whose flush did not finish: the writer task flushes them.
    unflushed: bool,
    /// Bytes accepted and not written yet (including those the writer task is writing).
    queued: usize,
    /// Of which the host's own lines.
    own: usize,
    /// Offsets in the stream of bytes sent to the agent (for receipts): every byte accepted,
    /// every byte handed to the writer, and every byte written and flushed.
    accepted: u64,
    started: u64,
    written: u64,
    /// The way to the agent failed (a write error): bytes not written by now never will be.
    broken: bool,
}

/// Where one line sits in the stream to the agent, to learn whether it was written.
#[derive(Clone)]
pub(crate) enum Ticket {
    /// Bytes `start..end` of the stream.
    Line {
        out: Arc<Outbound>,
        start: u64,
        end: u64,
    },
    /// The line was never queued (the way to the agent is closed, or it was too large).
    NotSent { code: &'static str, message: String },
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ticket::Line { start, end, .. } => write!(f, "Ticket({start}..{end})"),
            Ticket::NotSent { code, .. } => write!(f, "Ticket(not sent: {code})"),
        }
    }
}

impl Ticket {
    /// The receipt, if it is known now.
    pub(crate) fn now(&self) -> Option<Receipt> {
        self.decide(false)
    }

    /// The receipt once nothing more will be written (the agent is gone).
    pub(crate) fn at_exit(&self) -> Receipt {
        self.decide(true).unwrap_or(Receipt::Delivered)
    }

    fn decide(&self, ended: bool) -> Option<Receipt> {
        let (out, start, end) = match self {
            Ticket::NotSent { code, message } => {
                return Some(Receipt::rejected(
                    RequestState::Unavailable,
                    code,
                    message.clone(),
                ));
            }
            Ticket::Line { out, start, end } => (out, *start, *end),
        };
        let st = out.lock();
        if st.written >= end {
            return Some(Receipt::Delivered);
        }
        if !st.broken && !ended {
            return None;
        }
        // Bytes before `started` went into the pipe; a write failing with EPIPE takes none.
        Some(if st.started > start {
            Receipt::uncertain(
                "io",
                "the agent's stdin failed while the answer was being written: part of it may \
                 have reached the agent",
            )
        } else {
            Receipt::rejected(
                RequestState::Unavailable,
                "agent_exited",
                "the agent's stdin failed before the answer was written: it was not sent",
            )
        })
    }

    /// The receipt once it is known, or `uncertain` (`timeout`) after `bound`.
    pub(crate) async fn wait(&self, bound: std::time::Duration) -> Receipt {
        let out = match self {
            Ticket::Line { out, .. } => out.clone(),
            Ticket::NotSent { .. } => return self.now().unwrap_or(Receipt::Delivered),
        };
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let notified = out.progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(r) = self.now() {
                return r;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.now().unwrap_or_else(|| {
                    Receipt::uncertain(
                        "timeout",
                        format!(
                            "the answer was still waiting to be written after {} ms (the agent \
                             is not reading its stdin); it may still be delivered",
                            bound.as_millis()
                        ),
                    )
                });
            }
        }
    }
}

/// Why [`Outbound::send`] did not queue a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The host's own lines already waiting leave no room for it: the agent is not reading.
    Full { queued: usize },
    /// It is larger than the host's own lines may ever hold.
    TooLarge { len: usize, room: usize },
}

impl Outbound {
    /// `own_room`: the most the host's own lines may hold (`max_outbound_bytes` less the served
    /// answers' budget).
    pub(crate) fn new(writer: BoxWriter, own_room: usize) -> Arc<Outbound> {
        Arc::new(Outbound {
            state: std::sync::Mutex::new(OutState {
                writer: Some(writer),
                queue: VecDeque::new(),
                close: false,
                failed: None,
                unflushed: false,
                queued: 0,
                own: 0,
                accepted: 0,
                started: 0,
                written: 0,
                broken: false,
            }),
            wake: tokio::sync::Notify::new(),
            progress: tokio::sync::Notify::new(),
            own_room,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OutState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes accepted and not yet written.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.lock().queued
    }

    /// The most one of the host's own lines may be (its newline included).
    pub(crate) fn own_room(&self) -> usize {
        self.own_room
    }

    /// Send one of the host's own lines and a newline, in order after everything sent before.
    /// Never waits. Refused, and not queued, when the host's own lines waiting already leave no
    /// room for it, or when it is larger than they may ever hold. After a close or a failed
    /// write, lines are dropped.
    pub(crate) fn send(self: &Arc<Self>, line: String) -> Result<Ticket, Refused> {
        let len = line.len() + 1;
        if len > self.own_room {
            return Err(Refused::TooLarge {
                len,
                room: self.own_room,
            });
        }
        let st = self.lock();
        if st.close || st.failed.is_some() || st.broken {
            return Ok(closed_ticket());
        }
        if st.own + len > self.own_room {
            return Err(Refused::Full { queued: st.queued });
        }
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        Ok(self.enqueue(st, bytes, None))
    }

    /// Send an answer (its line ends with its newline), in order after everything sent before.
    /// Never waits, never refused: it holds its own room, given back as it is written.
    pub(crate) fn send_answer(self: &Arc<Self>, answer: Encoded) -> Ticket {
        let st = self.lock();
        if st.close || st.failed.is_some() || st.broken {
            return closed_ticket();
        }
        self.enqueue(st, answer.line, Some(answer.held))
    }

    fn enqueue(
        self: &Arc<Self>,
        mut st: std::sync::MutexGuard<'_, OutState>,
        bytes: Vec<u8>,
        held: Option<Held>,
    ) -> Ticket {
        let start = st.accepted;
        st.accepted += bytes.len() as u64;
        let ticket = Ticket::Line {
            out: self.clone(),
            start,
            end: st.accepted,
        };
        let mut sent = 0;
        if st.queue.is_empty()
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
            st.started += sent as u64;
            if st.failed.is_none() && !st.unflushed {
                st.written = st.started;
            }
            if st.failed.is_none() && sent == bytes.len() && !st.unflushed {
                return ticket;
            }
        }
        if st.failed.is_some() {
            st.broken = true;
            drop(st);
            self.progress.notify_waiters();
            self.wake.notify_one();
            return ticket;
        }
        let own = held.is_none();
        let left = bytes.len() - sent;
        st.queued += left;
        if own {
            st.own += left;
        }
        let joins = left <= JOIN
            && st
                .queue
                .back()
                .is_some_and(|last| last.own == own && last.left() + left <= JOIN);
        match st.queue.back_mut() {
            Some(last) if joins => {
                last.bytes.extend_from_slice(&bytes[sent..]);
                if let (Some(mine), Some(more)) = (&mut last.held, held) {
                    mine.merge(more);
                }
            }
            _ => st.queue.push_back(Chunk {
                bytes,
                at: sent,
                own,
                held,
            }),
        }
        drop(st);
        self.wake.notify_one();
        ticket
    }

    /// The writer task wrote `n` more bytes (not flushed yet).
    fn started(&self, n: usize) {
        self.lock().started += n as u64;
    }

    /// Everything handed to the writer is written and flushed.
    fn flushed(&self) {
        let mut st = self.lock();
        st.written = st.started;
        drop(st);
        self.progress.notify_waiters();
    }

    /// A write failed: what was not written by now never will be.
    fn broke(&self) {
        let mut st = self.lock();
        st.broken = true;
        drop(st);
        self.progress.notify_waiters();
    }

    /// `chunk` is written from `from` on (or will never be): forget its bytes, give back its
    /// room.
    fn written(&self, chunk: Chunk, from: usize) {
        let left = chunk.bytes.len() - from.min(chunk.bytes.len());
        let mut st = self.lock();
        st.queued -= left.min(st.queued);
        if chunk.own {
            st.own -= left.min(st.own);
        }
        drop(st);
        drop(chunk);
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

/// Writes what the actor could not write at once, in order, giving back each line's room as it
/// is written; closes the agent's stdin when asked (the actor's `OutHandle` asks when dropped).
pub(crate) async fn writer_task(out: Arc<Outbound>) -> Result<(), std::io::Error> {
    loop {
        let work = {
            let mut st = out.lock();
            if let Some(e) = st.failed.take() {
                st.broken = true;
                forget_all(&mut st);
                drop(st);
                out.progress.notify_waiters();
                return Err(e);
            }
            if st.queue.is_empty() && !st.close && !st.unflushed {
                None
            } else {
                let Some(writer) = st.writer.take() else {
                    return Ok(()); // closed already
                };
                st.unflushed = false;
                Some((writer, std::mem::take(&mut st.queue), st.close))
            }
        };
        let Some((mut writer, mut chunks, close)) = work else {
            out.wake.notified().await;
            continue;
        };
        let res = async {
            while let Some(mut chunk) = chunks.pop_front() {
                let from = chunk.at;
                // Written in steps, counting each: a receipt needs to know whether a line's
                // write started when the pipe fails.
                let written = async {
                    while chunk.left() > 0 {
                        match writer.write(&chunk.bytes[chunk.at..]).await {
                            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                            Ok(n) => {
                                chunk.at += n;
                                out.started(n);
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(e),
                        }
                    }
                    Ok(())
                }
                .await;
                out.written(chunk, from);
                written?;
            }
            writer.flush().await
        }
        .await;
        if let Err(e) = res {
            for chunk in chunks {
                let from = chunk.at;
                out.written(chunk, from);
            }
            out.broke();
            forget_all(&mut out.lock());
            return Err(e);
        }
        out.flushed();
        if close {
            let _ = writer.shutdown().await;
            return Ok(());
        }
        out.lock().writer = Some(writer);
    }
}

/// The ticket of a line that is not sent because the way to the agent is closed.
fn closed_ticket() -> Ticket {
    Ticket::NotSent {
        code: "agent_exited",
        message: "the agent's stdin is closed: the answer was not sent".to_owned(),
    }
}

/// Nothing more will be written: drop what waits (and the room it holds).
fn forget_all(st: &mut OutState) {
    st.queue.clear();
    st.queued = 0;
    st.own = 0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::answer::Budget;
    use tokio::io::AsyncReadExt;

    /// The queue to an agent that reads nothing never holds more than its bound: the host's own
    /// lines up to their room (then refused: the agent stalled), answers up to the budget (then
    /// they wait for room before they are made). Once the agent reads, everything arrives in
    /// order and every byte of room comes back.
    #[tokio::test]
    async fn the_queue_holds_its_bound_exactly() {
        const ROOM: usize = 1000;
        let budget = Budget::new(1000);
        let bound = ROOM + budget.total();
        // The agent's pipe takes 16 bytes, then nothing until it reads.
        let (host_end, mut agent_end) = tokio::io::duplex(16);
        let out = Outbound::new(Box::pin(host_end), ROOM);
        let writer = tokio::spawn(writer_task(out.clone()));
        let mut sent = Vec::new();
        let mut refused = None;
        for i in 0..100 {
            let line = format!("{i:03}{}", "o".repeat(96));
            match out.send(line.clone()) {
                Ok(_) => sent.push(line),
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
            assert!(out.queued() <= bound, "{} queued", out.queued());
        }
        assert!(
            matches!(refused, Some(Refused::Full { .. })),
            "{refused:?} after {} lines",
            sent.len()
        );
        assert_eq!(
            out.send("x".repeat(ROOM)).err(),
            Some(Refused::TooLarge {
                len: ROOM + 1,
                room: ROOM
            })
        );
        // Answers: as many as the budget holds.
        let mut answers = 0;
        while let Some(held) = budget.try_hold(300) {
            let text = format!("a{answers}{}", "x".repeat(297));
            sent.push(text.clone());
            let mut line = text.into_bytes();
            line.push(b'\n');
            out.send_answer(Encoded { line, held });
            answers += 1;
            assert!(out.queued() <= bound, "{} queued", out.queued());
        }
        assert_eq!(answers, 3);
        // The agent reads: everything arrives, in order, and the room comes back.
        let want: usize = sent.iter().map(|l| l.len() + 1).sum();
        let mut got = vec![0u8; want];
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            agent_end.read_exact(&mut got),
        )
        .await
        .expect("everything arrives")
        .unwrap();
        let got = String::from_utf8(got).unwrap();
        assert_eq!(got.lines().collect::<Vec<_>>(), sent);
        for _ in 0..100 {
            if out.queued() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(out.queued(), 0);
        assert!(
            budget.try_hold(budget.total()).is_some(),
            "the room came back"
        );
        assert!(out.send("after".to_owned()).is_ok());
        out.close();
        let mut rest = String::new();
        agent_end.read_to_string(&mut rest).await.unwrap();
        assert_eq!(rest, "after\n");
        writer.await.unwrap().unwrap();
    }

    /// A line's ticket: `delivered` once all of it is written; when the pipe fails, `uncertain`
    /// for the line that was partly written, `rejected` for the one behind it (none of it went).
    #[tokio::test]
    async fn tickets_follow_the_bytes() {
        let (host_end, mut agent_end) = tokio::io::duplex(16);
        let out = Outbound::new(Box::pin(host_end), 1 << 20);
        let writer = tokio::spawn(writer_task(out.clone()));
        let small = out.send("hi".to_owned()).unwrap();
        assert_eq!(small.now(), Some(Receipt::Delivered));
        let mut got = [0u8; 3];
        agent_end.read_exact(&mut got).await.unwrap();
        let big = out.send("x".repeat(100)).unwrap();
        let behind = out.send("y".repeat(10)).unwrap();
        assert_eq!(big.now(), None);
        // The agent reads a little of it, then goes away.
        let mut part = [0u8; 8];
        agent_end.read_exact(&mut part).await.unwrap();
        drop(agent_end);
        let r = big.wait(std::time::Duration::from_secs(10)).await;
        assert!(
            matches!(&r, Receipt::Uncertain { code, .. } if code == "io"),
            "{r:?}"
        );
        let r = behind.wait(std::time::Duration::from_secs(10)).await;
        assert!(
            matches!(&r, Receipt::Rejected { state: RequestState::Unavailable, code, .. } if code == "agent_exited"),
            "{r:?}"
        );
        assert!(writer.await.unwrap().is_err());
        // After the failure nothing is queued: a later line is rejected at once.
        let later = out.send("z".to_owned()).unwrap();
        assert!(matches!(later.now(), Some(Receipt::Rejected { .. })));
    }
}
