//! Answers to the agent's own requests (`fs/*`, `terminal/*`, extension requests): encoded once,
//! into the line that goes out, and held to the connection's [`Budget`] from before they are made
//! (a read: before the file is read) until their last byte is written to the agent's stdin.
//!
//! So however many requests the agent sends at once, the host holds at most the budget's bytes
//! for their answers (half of `HostConfig::max_outbound_bytes`): an answer waits for room (the
//! agent's own requests slow down, as its stdin drains) instead of piling up. One answer never
//! needs more than the budget: a read whose content, as JSON text, would not fit is refused with
//! `too_large` before its line is made, any other answer that would not fit is an error answer
//! (`-32603`, `reason: too_large`); neither stops the agent.

use std::ops::Range;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::services::ServiceError;
use crate::services::fs::{self, FsError, OpenedRead};
use crate::wire::escape::splice_escaped;
use crate::wire::message::{RawId, codes};

/// Bytes of answers in flight on one connection: being read or encoded, waiting in the queue to
/// the agent, being written. Taken whole before the work starts (never while holding some: no
/// two answers can wait on each other), given back as the bytes reach the agent.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    sem: Arc<Semaphore>,
    total: usize,
}

impl Budget {
    pub(crate) fn new(bytes: usize) -> Budget {
        // One acquisition takes at most u32::MAX permits; a budget is never more than that.
        let total = bytes.min(u32::MAX as usize);
        Budget {
            sem: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// The most one answer may hold.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// `bytes` now, if they are free (`None`: they are not, or never could be).
    pub(crate) fn try_hold(&self, bytes: usize) -> Option<Held> {
        let n = u32::try_from(bytes).ok().filter(|_| bytes <= self.total)?;
        self.sem.clone().try_acquire_many_owned(n).ok().map(Held)
    }

    /// `bytes`, once they are free; `None` when they never will be (more than the budget, or the
    /// connection ended).
    pub(crate) async fn hold(&self, bytes: usize) -> Option<Held> {
        let n = u32::try_from(bytes).ok().filter(|_| bytes <= self.total)?;
        self.sem.clone().acquire_many_owned(n).await.ok().map(Held)
    }

    /// The connection ended: whoever waits for room stops waiting.
    pub(crate) fn close(&self) {
        self.sem.close();
    }
}

/// A share of the [`Budget`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Held(OwnedSemaphorePermit);

impl Held {
    pub(crate) fn bytes(&self) -> usize {
        self.0.num_permits()
    }

    /// Give back all but `bytes`.
    pub(crate) fn shrink_to(&mut self, bytes: usize) {
        let excess = self.bytes().saturating_sub(bytes);
        if excess > 0 {
            drop(self.0.split(excess));
        }
    }

    /// Take `other`'s share too.
    pub(crate) fn merge(&mut self, other: Held) {
        self.0.merge(other.0);
    }
}

/// An answer line (ending in `\n`) and the share of the budget it holds until it is written.
#[derive(Debug)]
pub(crate) struct Encoded {
    pub line: Vec<u8>,
    pub held: Held,
}

/// The end of a read's answer line, after the content.
const CONTENT_TAIL: &[u8] = b"\"}}\n";

/// The start of a read's answer line, up to the content.
fn content_head(id: &RawId) -> Vec<u8> {
    let mut head = Vec::with_capacity(48 + id.json().len());
    head.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    head.extend_from_slice(id.json().as_bytes());
    head.extend_from_slice(b",\"result\":{\"content\":\"");
    head
}

/// The most a read's content may take as JSON text: the configured read limit, or what one
/// answer with this id may hold, whichever is less.
pub(crate) fn content_limit(max_read_bytes: u64, budget: &Budget, id: &RawId) -> u64 {
    let envelope = content_head(id).len() + CONTENT_TAIL.len();
    max_read_bytes.min(budget.total().saturating_sub(envelope) as u64)
}

/// The most a file of `size` bytes can take as JSON text (six bytes for a control character),
/// within `max`.
fn content_bound(size: u64, max: u64) -> u64 {
    size.saturating_mul(6).min(max)
}

/// Make a read's answer from the file's bytes, in their buffer: the lines asked for, at most
/// `max` bytes as JSON text. Returns the line and the content's size.
fn encode_read(
    bytes: Vec<u8>,
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
    max: u64,
    head: &[u8],
) -> Result<(Vec<u8>, usize), FsError> {
    let range: Range<usize> = fs::content_range(&bytes, path, line, limit)?;
    let escaped = fs::check_encoded(path, bytes.len(), &bytes[range.clone()], max)?;
    let n = range.len();
    Ok((splice_escaped(bytes, range, escaped, head, CONTENT_TAIL), n))
}

/// The answer to a read the kernel can serve from its caches, made in the caller's step (see
/// `services/fs/cached.rs`), when the budget has room for the largest such answer now; `None`:
/// take the blocking path ([`ReadJob`]), which answers the same.
pub(crate) fn cached_read<G>(
    id: &RawId,
    roots: &[std::path::PathBuf],
    path: &str,
    (line, limit): (Option<u32>, Option<u32>),
    max: u64,
    budget: &Budget,
    decide: G,
) -> Option<Result<(Encoded, usize), FsError>>
where
    G: FnOnce(fs::Opened<'_>) -> Result<(), String>,
{
    let head = content_head(id);
    let envelope = head.len() + CONTENT_TAIL.len();
    let want = usize::try_from(content_bound(fs::CACHED_MAX_BYTES, max)).ok()? + envelope;
    let mut held = budget.try_hold(want)?;
    let bytes = match fs::read_cached_bytes(roots, path, max, decide)? {
        Ok(bytes) => bytes,
        Err(e) => return Some(Err(e)),
    };
    Some(
        encode_read(bytes, path, line, limit, max, &head).map(|(line, n)| {
            held.shrink_to(line.len());
            (Encoded { line, held }, n)
        }),
    )
}

/// A read on the blocking pool, in steps: each takes the budget its answer may need before
/// reading; when the budget is busy, the step ends with [`ReadStep::Need`] (holding nothing) and
/// the next one runs once that much is free.
#[derive(Debug)]
pub(crate) struct ReadJob {
    opened: OpenedRead,
    path: String,
    line: Option<u32>,
    limit: Option<u32>,
    max: u64,
    head: Vec<u8>,
    budget: Budget,
    /// The file held more than it did when opened: hold what the largest answer may need.
    worst: bool,
}

/// What a step of a [`ReadJob`] ended with.
#[derive(Debug)]
pub(crate) enum ReadStep {
    /// The answer (its line and the content's size), or why there is none.
    Done(Result<(Encoded, usize), FsError>),
    /// Run [`ReadJob::resume`] with this many bytes of the budget.
    Need(Box<ReadJob>, usize),
}

impl ReadJob {
    /// A read of `opened` (opened with `max` as its limit) answering request `id`.
    pub(crate) fn new(
        id: &RawId,
        opened: OpenedRead,
        (line, limit): (Option<u32>, Option<u32>),
        max: u64,
        budget: Budget,
    ) -> ReadJob {
        ReadJob {
            path: opened.path().to_owned(),
            opened,
            line,
            limit,
            max,
            head: content_head(id),
            budget,
            worst: false,
        }
    }

    /// The first step.
    pub(crate) fn start(self) -> ReadStep {
        self.resume(None)
    }

    /// A step, holding `held` (taken for it after a [`ReadStep::Need`]).
    pub(crate) fn resume(mut self, mut held: Option<Held>) -> ReadStep {
        let envelope = self.head.len() + CONTENT_TAIL.len();
        loop {
            let cap = if self.worst {
                self.max
            } else {
                content_bound(self.opened.size(), self.max)
            };
            let Some(want) = usize::try_from(cap)
                .ok()
                .and_then(|c| c.checked_add(envelope))
                .filter(|&w| w <= self.budget.total())
            else {
                // Not even an empty answer fits (an id as long as the budget).
                return ReadStep::Done(Err(self.too_large(self.opened.size(), None)));
            };
            let have = held.as_ref().map_or(0, Held::bytes);
            if have < want {
                match self.budget.try_hold(want - have) {
                    Some(more) => match &mut held {
                        Some(h) => h.merge(more),
                        None => held = Some(more),
                    },
                    None => {
                        // Wait for all of it, holding nothing meanwhile.
                        drop(held);
                        return ReadStep::Need(Box::new(self), want);
                    }
                }
            }
            let bytes = match self.opened.read_all(cap) {
                Ok(Some(bytes)) => bytes,
                Ok(None) if !self.worst => {
                    self.worst = true; // it grew: read again, with room for the largest answer
                    continue;
                }
                Ok(None) => {
                    let over = self.max.saturating_add(1);
                    return ReadStep::Done(Err(self.too_large(over, None)));
                }
                Err(e) => return ReadStep::Done(Err(e)),
            };
            let encoded = encode_read(
                bytes, &self.path, self.line, self.limit, self.max, &self.head,
            );
            let (line, n) = match encoded {
                Ok(done) => done,
                Err(e) => return ReadStep::Done(Err(e)),
            };
            let Some(mut held) = held else {
                return ReadStep::Done(Err(self.too_large(line.len() as u64, None)));
            };
            if line.len() > held.bytes() {
                // It grew within what was read and takes more than was held: once more, with
                // room for the largest answer.
                self.worst = true;
                drop(line);
                return self.resume(Some(held));
            }
            held.shrink_to(line.len());
            return ReadStep::Done(Ok((Encoded { line, held }, n)));
        }
    }

    fn too_large(&self, size: u64, encoded_size: Option<u64>) -> FsError {
        FsError::TooLarge {
            path: self.path.clone(),
            size,
            limit: self.max,
            encoded_size,
        }
    }

    pub(crate) fn budget(&self) -> &Budget {
        &self.budget
    }
}

/// The answer to a read whose text the embedder gave: at most `max` bytes as JSON text (else
/// `too_large`, before the line is made), escaped in the text's own buffer once its share of the
/// budget is free.
pub(crate) async fn encode_text(
    id: &RawId,
    text: String,
    path: &str,
    max: u64,
    budget: &Budget,
) -> Result<(Encoded, usize), FsError> {
    let head = content_head(id);
    let escaped = fs::check_encoded(path, text.len(), text.as_bytes(), max)?;
    let total = head.len() + escaped + CONTENT_TAIL.len();
    let held = budget.hold(total).await.ok_or_else(|| FsError::Io {
        path: path.to_owned(),
        message: "the connection ended".to_owned(),
    })?;
    let n = text.len();
    let line = splice_escaped(text.into_bytes(), 0..n, escaped, &head, CONTENT_TAIL);
    Ok((Encoded { line, held }, n))
}

/// Counts what is written to it.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A success answer, serialized once into its line when its share of the budget is free; one
/// larger than the budget is an error answer instead.
pub(crate) async fn encode_result(
    id: &RawId,
    result: &Value,
    budget: &Budget,
) -> Result<Encoded, ServiceError> {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
    const MID: &[u8] = b",\"result\":";
    const TAIL: &[u8] = b"}\n";
    let mut count = Count(0);
    // A `Value` always serializes (its keys are strings).
    let _ = serde_json::to_writer(&mut count, result);
    let total = HEAD.len() + id.json().len() + MID.len() + count.0 + TAIL.len();
    if total > budget.total() {
        return Err(ServiceError {
            code: codes::INTERNAL_ERROR,
            message: format!(
                "the answer is {total} bytes, over the {}-byte limit for one answer to the agent",
                budget.total()
            ),
            data: Some(serde_json::json!({
                "reason": "too_large",
                "size": total,
                "limit": budget.total(),
            })),
        });
    }
    let held = budget
        .hold(total)
        .await
        .ok_or_else(|| ServiceError::new(codes::INTERNAL_ERROR, "the connection ended"))?;
    let Some(mut line) = crate::buffers::with_capacity(total) else {
        return Err(ServiceError::new(
            codes::INTERNAL_ERROR,
            "out of memory for the answer",
        ));
    };
    line.extend_from_slice(HEAD);
    line.extend_from_slice(id.json().as_bytes());
    line.extend_from_slice(MID);
    let _ = serde_json::to_writer(&mut line, result);
    line.extend_from_slice(TAIL);
    Ok(Encoded { line, held })
}
