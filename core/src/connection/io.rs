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
                    let raw = if wire {
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

/// What the actor hands the writer.
#[derive(Debug)]
pub(crate) enum Out {
    Line(String),
    /// Close the agent's stdin (first rung of the shutdown ladder).
    Close,
}

/// Writes lines in order, coalescing whatever is queued into one write. `queued` counts bytes
/// accepted but not yet written, so the actor can tell an agent that stopped reading its stdin.
pub(crate) async fn writer_task(
    mut writer: BoxWriter,
    mut rx: mpsc::UnboundedReceiver<Out>,
    queued: Arc<AtomicUsize>,
) -> Result<(), std::io::Error> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    while let Some(first) = rx.recv().await {
        let mut close = false;
        let mut next = Some(first);
        while let Some(out) = next.take() {
            match out {
                Out::Line(line) => {
                    buf.extend_from_slice(line.as_bytes());
                    buf.push(b'\n');
                }
                Out::Close => {
                    close = true;
                    break;
                }
            }
            if buf.len() < 1 << 20 {
                next = rx.try_recv().ok();
            }
        }
        if !buf.is_empty() {
            let n = buf.len();
            let res = async {
                writer.write_all(&buf).await?;
                writer.flush().await
            }
            .await;
            queued.fetch_sub(n.min(queued.load(Ordering::Relaxed)), Ordering::Relaxed);
            buf.clear();
            if buf.capacity() > 4 << 20 {
                // Give back what one huge line needed.
                buf = Vec::with_capacity(64 * 1024);
            }
            res?;
        }
        if close {
            let _ = writer.shutdown().await;
            return Ok(());
        }
    }
    let _ = writer.shutdown().await;
    Ok(())
}
