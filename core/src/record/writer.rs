//! The recording's own thread: lines in, the file out, never a wait for the connection.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

/// Bytes of lines waiting for the thread before new ones are dropped (and counted).
const QUEUE_BYTES: usize = 16 << 20;

#[derive(Debug, Default)]
struct Queue {
    lines: VecDeque<String>,
    bytes: usize,
    /// Lines dropped since the last `gap` line (the queue was full).
    dropped: u64,
    /// The connection ended: write what is queued, the `end` line, close.
    finished: Option<f64>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// The connection's side: hands lines to the thread.
#[derive(Debug)]
pub(super) struct Sink {
    shared: Arc<Shared>,
    path: PathBuf,
    finished: bool,
}

impl Sink {
    /// Create the file (never over an existing one) and start its thread.
    pub(super) fn create(path: &Path, max_bytes: u64) -> std::io::Result<Sink> {
        let file = File::options().write(true).create_new(true).open(path)?;
        let shared = Arc::new(Shared::default());
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("acph-record".into())
            .spawn(move || write_all(&thread_shared, BufWriter::new(file), max_bytes))?;
        Ok(Sink {
            shared,
            path: path.to_owned(),
            finished: false,
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.shared.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn push(&self, line: String) {
        let mut q = self.queue();
        if q.bytes + line.len() > QUEUE_BYTES {
            q.dropped += 1;
            return;
        }
        q.bytes += line.len();
        q.lines.push_back(line);
        drop(q);
        self.shared.ready.notify_one();
    }

    pub(super) fn finish(&mut self, t: f64) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.queue().finished = Some(t);
        self.shared.ready.notify_one();
    }
}

/// What the thread has written.
#[derive(Debug, Default)]
struct Written {
    bytes: u64,
    lines: u64,
    dropped: u64,
    truncated: bool,
}

fn write_all(shared: &Shared, mut file: BufWriter<File>, max_bytes: u64) {
    let mut w = Written::default();
    loop {
        let (lines, dropped, finished) = {
            let mut q = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            while q.lines.is_empty() && q.finished.is_none() && q.dropped == 0 {
                q = shared.ready.wait(q).unwrap_or_else(|p| p.into_inner());
            }
            q.bytes = 0;
            (
                std::mem::take(&mut q.lines),
                std::mem::take(&mut q.dropped),
                q.finished,
            )
        };
        for line in lines {
            put(&mut file, &mut w, max_bytes, line);
        }
        if dropped > 0 {
            w.dropped += dropped;
            let gap = format!("{{\"gap\":{{\"droppedLines\":{dropped}}}}}");
            put(&mut file, &mut w, max_bytes, gap);
        }
        if let Some(t) = finished {
            let end = format!(
                "{{\"t\":{t},\"end\":{{\"lines\":{},\"bytes\":{},\"droppedLines\":{},\"truncated\":{}}}}}",
                w.lines, w.bytes, w.dropped, w.truncated
            );
            // The `end` line is written even past the bound: it says the file is whole.
            let _ = writeln!(file, "{end}");
            let _ = file.flush();
            return;
        }
        // Written out while the connection is quiet: a reader (or a crash) sees what happened.
        if shared
            .queue
            .lock()
            .map(|q| q.lines.is_empty())
            .unwrap_or(true)
        {
            let _ = file.flush();
        }
    }
}

/// Write one line unless the file's bound was reached (then one `truncated` line, once).
fn put(file: &mut BufWriter<File>, w: &mut Written, max_bytes: u64, line: String) {
    if w.truncated {
        w.dropped += 1;
        return;
    }
    let len = line.len() as u64 + 1;
    if w.bytes + len > max_bytes {
        w.truncated = true;
        w.dropped += 1;
        let _ = writeln!(file, "{{\"truncated\":{{\"maxBytes\":{max_bytes}}}}}");
        return;
    }
    if writeln!(file, "{line}").is_ok() {
        w.bytes += len;
        w.lines += 1;
    }
}
