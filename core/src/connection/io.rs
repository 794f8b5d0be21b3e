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

/// Largest batch handed over at once.
const BATCH: usize = 256;
/// How much of a noise line is kept for the event.
const NOISE_PREVIEW: usize = 1024;

pub(crate) async fn reader_task(
    reader: BoxReader,
    max_line: usize,
    wire: bool,
    tx: mpsc::Sender<Vec<ReaderMsg>>,
) {
    let mut lines = LineReader::new(reader, max_line);
    let mut interner = Interner::default();
    loop {
        let mut batch = Vec::with_capacity(16);
        let mut done = false;
        match lines.next_frame_ref().await {
            Ok(Some(frame)) => push_frame(&mut batch, frame, wire, &mut interner),
            Ok(None) => {
                batch.push(ReaderMsg::Eof(None));
                done = true;
            }
            Err(e) => {
                batch.push(ReaderMsg::Eof(Some(e.to_string())));
                done = true;
            }
        }
        while !done && batch.len() < BATCH {
            match lines.next_buffered_ref() {
                Some(frame) => push_frame(&mut batch, frame, wire, &mut interner),
                None => break,
            }
        }
        if tx.send(batch).await.is_err() || done {
            return;
        }
    }
}

fn push_frame(
    batch: &mut Vec<ReaderMsg>,
    frame: FrameRef<'_>,
    wire: bool,
    interner: &mut Interner,
) {
    match frame {
        FrameRef::TooLong { len } => batch.push(ReaderMsg::TooLong { len }),
        FrameRef::Line(bytes) => {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return; // blank lines carry nothing
            }
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
