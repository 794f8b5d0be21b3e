//! The recording's own thread: records in, the file out. The connection never waits for it: it
//! collects records (`lines.rs`: the raw message or the event's fields, framed) in a buffer of
//! its own and hands the buffer over whole, taking back one the thread has emptied (a step's few
//! records are appended to the queue's last buffer instead): no allocation or copy per record,
//! nothing freed across threads. The thread takes the whole queue at a time, makes its lines and
//! writes them with one call. At the end, whoever
//! ends the connection may await the file's close ([`Closing`]) without holding a thread.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

#[cfg(test)]
use super::lines;
use super::lines::{Lines, SPENT_KEPT};

/// Bytes of records waiting for the thread (queued, or collected by the connection) before new
/// ones are dropped (and counted).
pub(super) const QUEUE_BYTES: usize = 16 << 20;
/// The thread wakes when this much is waiting, or `LINGER` after the first line came: one write
/// per chunk, not per line (a flood of small lines would otherwise cost a wake and a write call
/// each, on the cores the connection runs on).
const CHUNK: usize = 256 << 10;
/// How long a line may wait for company before it is written (what a reader, or a crash, may
/// miss of a quiet connection).
const LINGER: Duration = Duration::from_millis(20);
/// A buffer's room kept between chunks (more is given back after a burst).
const KEEP: usize = 4 * CHUNK;
/// Records handed over in fewer bytes than this are copied into the queue's last buffer (a
/// quiet connection's steps), more are handed over as their buffer.
const APPEND_BELOW: usize = 4 << 10;
/// Emptied buffers kept for the connection (a flood's hand-offs reuse them).
const SPARES: usize = 8;

#[derive(Debug, Default)]
struct Queue {
    /// Buffers of whole records (`lines.rs`), in order, each with its records' attachments.
    full: Vec<(Vec<u8>, Vec<String>)>,
    /// Bytes in `full`.
    bytes: usize,
    /// Emptied buffers, their room kept, for the connection's next hand-offs.
    spare: Vec<Vec<u8>>,
    /// Emptied attachments, for the connection's next batches of the agent's lines.
    spare_raw: Vec<String>,
    /// The connection ended: write what is queued, the `end` line, close.
    finished: Option<u64>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// `queue.bytes`, read without the lock by the connection, which checks each record against
    /// the bound (only the thread lowers it: the check errs on the safe side).
    queued: AtomicUsize,
}

impl Shared {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How long the connection's end waits for the file to be complete (a process that exits right
/// after its agent's shutdown must find the recording whole; a stuck disk must not hold it).
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// The file being closed by the recording's thread.
#[derive(Debug)]
pub(crate) struct Closing(oneshot::Receiver<()>);

impl Closing {
    /// Until the `end` line is written and the file closed (at most 2 s): an `.await`, so the
    /// runtime's thread keeps working meanwhile.
    pub(crate) async fn wait(self) {
        // A thread that is gone (its sender dropped) has nothing more to write either.
        let _ = tokio::time::timeout(CLOSE_WAIT, self.0).await;
    }
}

/// The connection's side: hands lines to the thread.
#[derive(Debug)]
pub(super) struct Sink {
    shared: Arc<Shared>,
    path: PathBuf,
    /// Taken by `finish`.
    closed: Option<oneshot::Receiver<()>>,
}

impl Sink {
    /// Create the file (never over an existing one) and start its thread, which makes the
    /// lines with `lines`.
    pub(super) fn create(path: &Path, max_bytes: u64, lines: Lines) -> std::io::Result<Sink> {
        let file = File::options().write(true).create_new(true).open(path)?;
        Sink::start(path, file, max_bytes, lines)
    }

    /// The thread writing into `out` (a file; in tests, any writer).
    pub(super) fn start(
        path: &Path,
        out: impl Write + Send + 'static,
        max_bytes: u64,
        lines: Lines,
    ) -> std::io::Result<Sink> {
        let shared = Arc::new(Shared::default());
        let thread_shared = shared.clone();
        let (tx, rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("acph-record".into())
            .spawn(move || write_all(&thread_shared, out, max_bytes, lines, tx))?;
        Ok(Sink {
            shared,
            path: path.to_owned(),
            closed: Some(rx),
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `bytes` more (records the connection holds, and one more) stay within the
    /// queue's bound: if not, the record is dropped (and counted where it was: `lines.rs`).
    pub(super) fn has_room(&self, bytes: usize) -> bool {
        self.shared
            .queued
            .load(Ordering::Relaxed)
            .saturating_add(bytes)
            <= QUEUE_BYTES
    }

    /// Queue the records in `records` and their `attachments` (emptied; `records` may come back
    /// as another, emptied buffer); attachments the thread is done with are added to `spent`
    /// (up to `SPENT_KEPT` in all), emptied, for the connection's next batches.
    /// Nothing is queued after `finish`: the thread is done with the file. A queued record's
    /// line is written unless the file reached its bound or a write failed: then nothing after
    /// it is written either (so the file's lines are those queued, in order, up to a cut: what a
    /// version 2 event's `wire` index counts on).
    pub(super) fn hand_off(
        &self,
        records: &mut Vec<u8>,
        attachments: &mut Vec<String>,
        spent: &mut Vec<String>,
    ) {
        let mut q = self.shared.queue();
        let back = q
            .spare_raw
            .len()
            .min(SPENT_KEPT.saturating_sub(spent.len()));
        let from = q.spare_raw.len() - back;
        spent.extend(q.spare_raw.drain(from..));
        if q.finished.is_some() {
            records.clear();
            attachments.clear();
            return;
        }
        let before = q.bytes;
        let len = records.len() + attachments.iter().map(String::len).sum::<usize>();
        match q.full.last_mut() {
            Some((last, _))
                if attachments.is_empty()
                    && len < APPEND_BELOW
                    && last.capacity() - last.len() >= len =>
            {
                last.extend_from_slice(records);
                records.clear();
            }
            _ => {
                let spare = q.spare.pop().unwrap_or_default();
                let full = (
                    std::mem::replace(records, spare),
                    std::mem::take(attachments),
                );
                q.full.push(full);
            }
        }
        q.bytes += len;
        let after = q.bytes;
        self.shared.queued.store(after, Ordering::Relaxed);
        drop(q);
        // The thread sleeps on an empty queue, or until a chunk is full: wake it only then.
        if before == 0 || (before < CHUNK && after >= CHUNK) {
            self.shared.ready.notify_one();
        }
    }

    /// The connection ended at `t` (microseconds): the thread writes what is queued and the `end` line, then
    /// closes the file. Returns the close to await (once; `None` after).
    pub(super) fn finish(&mut self, t: u64) -> Option<Closing> {
        let closed = self.closed.take()?;
        self.shared.queue().finished = Some(t);
        self.shared.ready.notify_one();
        Some(Closing(closed))
    }
}

/// What the thread has written.
#[derive(Debug, Default)]
struct Written {
    bytes: u64,
    lines: u64,
    dropped: u64,
    truncated: bool,
    /// A write failed: nothing more is written (a line after a lost one could refer to it).
    failed: bool,
}

fn write_all(
    shared: &Shared,
    mut file: impl Write,
    max_bytes: u64,
    mut lines: Lines,
    closed: oneshot::Sender<()>,
) {
    let mut w = Written::default();
    let mut taken: Vec<(Vec<u8>, Vec<String>)> = Vec::new();
    let mut chunk = Vec::new();
    loop {
        let finished = {
            let mut q = shared.queue();
            // The buffers emptied last round go back to the connection (the room of those a
            // burst grew is given back once it is over).
            let burst = taken.len() > 1;
            lines.take_spent(&mut q.spare_raw);
            q.spare_raw.truncate(SPENT_KEPT);
            for (mut buf, _) in taken.drain(..) {
                if q.spare.len() < SPARES {
                    buf.clear();
                    if !burst && buf.capacity() > KEEP {
                        buf.shrink_to(KEEP);
                    }
                    q.spare.push(buf);
                }
            }
            let mut first_seen: Option<Instant> = None;
            loop {
                if q.finished.is_some() || q.bytes >= CHUNK {
                    break;
                }
                if q.bytes == 0 {
                    first_seen = None;
                    q = shared.ready.wait(q).unwrap_or_else(|p| p.into_inner());
                    continue;
                }
                let since = *first_seen.get_or_insert_with(Instant::now);
                let left = LINGER.saturating_sub(since.elapsed());
                if left.is_zero() {
                    break;
                }
                q = match shared.ready.wait_timeout(q, left) {
                    Ok((q, _)) => q,
                    Err(p) => p.into_inner().0,
                };
            }
            std::mem::swap(&mut q.full, &mut taken);
            q.bytes = 0;
            shared.queued.store(0, Ordering::Relaxed);
            q.finished
        };
        let mut n = 0;
        for (records, attachments) in &mut taken {
            n += lines.make(records, attachments, &mut chunk);
        }
        w.dropped += lines.take_dropped();
        if finished.is_some() {
            // A connection that never completed its handshake: the header as it is, then what
            // was held for it.
            n += lines.header_now(&mut chunk);
        }
        put(&mut file, &mut w, max_bytes, &chunk, n);
        // Room is given back once a burst is over (this round was small), not between a burst's
        // chunks: shrinking and growing again cost page faults on every chunk of a flood.
        if chunk.len() < KEEP && chunk.capacity() > 2 * KEEP {
            chunk.shrink_to(KEEP);
        }
        chunk.clear();
        if let Some(t) = finished {
            let end = format!(
                // After a failed write the file may end mid-line: the `end` starts its own.
                "{}{{\"t\":{},\"end\":{{\"lines\":{},\"bytes\":{},\"droppedLines\":{},\"truncated\":{}}}}}\n",
                if w.failed { "\n" } else { "" },
                super::Seconds(t),
                w.lines,
                w.bytes,
                w.dropped,
                w.truncated
            );
            // The `end` line is written even past the bound: it says the file is whole.
            let _ = file.write_all(end.as_bytes());
            let _ = file.flush();
            drop(file);
            let _ = closed.send(());
            return;
        }
        let _ = file.flush();
    }
}

/// Write `chunk` (`lines` whole lines) up to the file's bound; the line that would cross it and
/// all after are dropped, one `truncated` line marking the cut.
fn put(file: &mut impl Write, w: &mut Written, max_bytes: u64, chunk: &[u8], lines: u64) {
    if chunk.is_empty() {
        return;
    }
    if w.truncated || w.failed {
        w.dropped += lines;
        return;
    }
    let room = max_bytes.saturating_sub(w.bytes);
    if chunk.len() as u64 <= room {
        if file.write_all(chunk).is_ok() {
            w.bytes += chunk.len() as u64;
            w.lines += lines;
        } else {
            w.dropped += lines;
            w.failed = true;
        }
        return;
    }
    // The bound falls inside this chunk: the whole lines before it, then the marker.
    let head = &chunk[..usize::try_from(room).unwrap_or(usize::MAX).min(chunk.len())];
    let cut = memchr::memrchr(b'\n', head).map_or(0, |i| i + 1);
    let fitted = memchr::memchr_iter(b'\n', &chunk[..cut]).count() as u64;
    if file.write_all(&chunk[..cut]).is_ok() {
        w.bytes += cut as u64;
        w.lines += fitted;
        w.dropped += lines - fitted;
    } else {
        w.dropped += lines;
        w.failed = true;
        return;
    }
    w.truncated = true;
    let _ = writeln!(file, "{{\"truncated\":{{\"maxBytes\":{max_bytes}}}}}");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn push_line(sink: &Sink, line: &str) -> bool {
        let mut records = Vec::new();
        lines::put_line(&mut records, line);
        if !sink.has_room(records.len()) {
            return false;
        }
        sink.hand_off(&mut records, &mut Vec::new(), &mut Vec::new());
        true
    }

    /// A disk that takes `delay` per write call, keeping what it was given.
    #[derive(Clone)]
    struct Slow {
        delay: Duration,
        got: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Slow {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            std::thread::sleep(self.delay);
            self.got.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn slow(delay: Duration) -> Slow {
        Slow {
            delay,
            got: Arc::default(),
        }
    }

    #[test]
    fn lines_are_written_whole_with_the_end_counting_them() {
        let disk = slow(Duration::ZERO);
        let mut sink =
            Sink::start(Path::new("x"), disk.clone(), 1 << 20, Lines::headerless()).unwrap();
        for i in 0..1000 {
            push_line(&sink, &format!("{{\"n\":{i}}}"));
        }
        let closing = sink.finish(1_500_000).unwrap();
        assert!(sink.finish(2_000_000).is_none(), "one end");
        push_line(&sink, "{\"after\":true}");
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(closing.wait());
        let text = String::from_utf8(disk.got.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1001);
        assert_eq!(lines[999], "{\"n\":999}");
        assert!(
            lines[1000].starts_with("{\"t\":1.5,\"end\":{\"lines\":1000,"),
            "{}",
            lines[1000]
        );
        assert!(!text.contains("after"), "nothing follows the end");
    }

    #[test]
    fn the_bound_cuts_between_lines_and_counts_the_rest() {
        let disk = slow(Duration::ZERO);
        // 10 lines of 10 bytes (with the newline): 35 bytes hold 3.
        let mut sink = Sink::start(Path::new("x"), disk.clone(), 35, Lines::headerless()).unwrap();
        for i in 0..10 {
            push_line(&sink, &format!("{{\"n\":{i:03}}}"));
        }
        let closing = sink.finish(500_000).unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(closing.wait());
        let text = String::from_utf8(disk.got.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..3], ["{\"n\":000}", "{\"n\":001}", "{\"n\":002}"]);
        assert_eq!(lines[3], "{\"truncated\":{\"maxBytes\":35}}");
        assert_eq!(
            lines[4],
            "{\"t\":0.5,\"end\":{\"lines\":3,\"bytes\":30,\"droppedLines\":7,\"truncated\":true}}"
        );
        assert_eq!(lines.len(), 5);
    }

    /// A disk whose `fail`-th write call (from 1) fails, having taken the first half of it.
    #[derive(Clone)]
    struct Failing {
        fail: usize,
        calls: Arc<Mutex<usize>>,
        got: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut calls = self.calls.lock().unwrap();
            *calls += 1;
            if *calls == self.fail {
                self.got
                    .lock()
                    .unwrap()
                    .extend_from_slice(&buf[..buf.len() / 2]);
                return Err(std::io::Error::other("disk full"));
            }
            self.got.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// After a failed write nothing more is written (a later line could refer to a lost one by
    /// its index), the `end` counts the rest and starts its own line.
    #[test]
    fn a_failed_write_ends_the_writing_and_the_end_counts_the_rest() {
        let disk = Failing {
            fail: 2,
            calls: Arc::default(),
            got: Arc::default(),
        };
        let mut sink =
            Sink::start(Path::new("x"), disk.clone(), 1 << 20, Lines::headerless()).unwrap();
        let written = |n: usize| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while *disk.calls.lock().unwrap() < n {
                assert!(Instant::now() < deadline, "no write {n}");
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        assert!(push_line(&sink, "{\"n\":1}"));
        written(1);
        assert!(push_line(&sink, "{\"n\":2}"));
        written(2);
        assert!(push_line(&sink, "{\"n\":3}"), "queued: the thread drops it");
        let closing = sink.finish(1_000_000).unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(closing.wait());
        let text = String::from_utf8(disk.got.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "{\"n\":1}");
        assert_eq!(lines[1], "{\"n\"", "the half the failed write left");
        assert_eq!(
            lines[2],
            "{\"t\":1,\"end\":{\"lines\":1,\"bytes\":8,\"droppedLines\":2,\"truncated\":false}}"
        );
        assert_eq!(lines.len(), 3, "{text}");
    }

    /// The end of a recording on a slow disk: the runtime's only thread keeps running its other
    /// tasks while the file is closed (it blocked for the whole close before).
    #[test]
    fn finishing_on_a_slow_disk_does_not_hold_the_runtime() {
        let disk = slow(Duration::from_millis(300));
        let mut sink =
            Sink::start(Path::new("x"), disk.clone(), 1 << 20, Lines::headerless()).unwrap();
        push_line(&sink, "{\"n\":1}");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let (ticks, waited) = rt.block_on(async move {
            let counter = Arc::new(std::sync::atomic::AtomicU32::new(0));
            let c = counter.clone();
            let ticking = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
            let start = Instant::now();
            if let Some(closing) = sink.finish(1_000_000) {
                closing.wait().await;
            }
            let waited = start.elapsed();
            ticking.abort();
            (counter.load(std::sync::atomic::Ordering::SeqCst), waited)
        });
        assert!(
            waited >= Duration::from_millis(250),
            "{waited:?}: the close was awaited"
        );
        assert!(ticks >= 10, "{ticks} ticks of 10 ms in {waited:?}");
        let text = String::from_utf8(disk.got.lock().unwrap().clone()).unwrap();
        assert!(text.contains("\"end\""), "{text}");
    }
}
