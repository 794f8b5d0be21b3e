//! Large buffers (file contents, answer lines) come from one thread.
//!
//! glibc's malloc keeps freed memory per arena, and a thread allocates in its own: once a large
//! block has been freed, its dynamic mmap threshold rises and later large blocks come from the
//! arenas, each of which may keep up to twice that threshold when they are freed. Reads served on
//! the blocking pool's many threads then leave up to "arenas × 32 MiB" resident after the bytes
//! are given back (measured: 290 MB for 64 reads of a 16 MiB file on 2 cores, where the host
//! held 16 MiB; up to 8 arenas per core). Allocated by one thread, every large buffer lives in
//! one arena (growing a block keeps it in its arena, and freeing it from any thread returns it
//! there), so what malloc keeps is bounded by one arena's (42 MB measured, however many reads).
//! Other allocators are not harmed by it.

use std::sync::mpsc::{Sender, SyncSender, channel, sync_channel};
use std::sync::{Mutex, OnceLock};

/// Buffers at least this large are allocated by the buffer thread.
pub(crate) const LARGE: usize = 1 << 20;

type Ask = (usize, SyncSender<Option<Vec<u8>>>);

/// An empty buffer with room for `n` bytes exactly; `None` when that much cannot be allocated.
/// Large ones are allocated by the buffer thread (one round trip to it; if it cannot be used,
/// here).
pub(crate) fn with_capacity(n: usize) -> Option<Vec<u8>> {
    if n >= LARGE
        && let Some(buf) = from_thread(n)
    {
        return buf;
    }
    let mut buf = Vec::new();
    buf.try_reserve_exact(n).ok()?;
    Some(buf)
}

/// `Some(answer)` from the buffer thread, `None` if it is not there.
fn from_thread(n: usize) -> Option<Option<Vec<u8>>> {
    static ASK: OnceLock<Option<Mutex<Sender<Ask>>>> = OnceLock::new();
    let ask = ASK.get_or_init(|| {
        let (tx, rx) = channel::<Ask>();
        std::thread::Builder::new()
            .name("acp-host-buffers".into())
            .spawn(move || {
                for (n, reply) in rx {
                    let mut buf = Vec::new();
                    let made = buf.try_reserve_exact(n).is_ok();
                    let _ = reply.send(made.then_some(buf));
                }
            })
            .ok()?;
        Some(Mutex::new(tx))
    });
    let (reply, answer) = sync_channel(1);
    ask.as_ref()?.lock().ok()?.send((n, reply)).ok()?;
    answer.recv().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_have_the_room_asked_for() {
        for n in [0, 10, LARGE - 1, LARGE, 3 * LARGE] {
            let buf = with_capacity(n).unwrap();
            assert!(buf.is_empty());
            assert!(buf.capacity() >= n, "{n}");
        }
        assert!(with_capacity(usize::MAX / 2).is_none());
    }
}
