//! Recording an agent connection (`HostConfig::record`; docs/RECORDING.md): one JSON Lines file
//! per connection, a header (versions, platform, the agent's command, both sides' capabilities,
//! the agent's `initialize` answer), then every wire message in both directions and every event
//! of the connection, each with a monotonic time `t` (seconds since the connection started).
//!
//! Never in the connection's way: the actor copies what it records (the raw message, the event's
//! fields) into a buffer of its own, handed whole to the recording's thread (at the end of each
//! of the actor's steps, or every 64 KiB); that thread makes the lines (`lines.rs`: framing, the
//! secret scan, redaction, see `redact.rs`). What waits for the thread is bounded by bytes: when
//! the disk falls behind, lines are dropped and a `gap` line, where they were, says how many. The file is bounded too (`maxBytes`): past it a `truncated` line
//! ends it. The last line, `end`, counts what was written and dropped.

pub mod format;
mod lines;
pub mod redact;
mod writer;

pub(crate) use writer::Closing;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use lines::{Field, HELD_BEFORE_HEADER, Lines};

use crate::events::{EventKind, PendingEvent};
use crate::transport::AgentSpec;

pub use format::FORMAT_VERSION;

/// Where and how connections are recorded (`HostConfig::record`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordConfig {
    /// A file per connection in this directory (`agent<id>-<n>-<pid>-<ms>.acprec.jsonl`).
    pub dir: Option<PathBuf>,
    /// This file for the host's first connection; `FILE.2`, `FILE.3`, … for later ones (a
    /// supervised agent's restarts, other agents).
    pub file: Option<PathBuf>,
    /// The file's bound in bytes: past it a `truncated` line ends the recording.
    pub max_bytes: u64,
    /// Leave secrets out (`redact.rs`); on by default.
    pub redact: bool,
}

impl Default for RecordConfig {
    fn default() -> Self {
        RecordConfig {
            dir: None,
            file: None,
            max_bytes: 256 << 20,
            redact: true,
        }
    }
}

/// Where connection `n` (1-based, per host) of agent `agent` is recorded.
fn path_for(config: &RecordConfig, agent: u64, n: u64) -> Option<PathBuf> {
    if let Some(file) = &config.file {
        if n == 1 {
            return Some(file.clone());
        }
        let mut name = file.as_os_str().to_owned();
        name.push(format!(".{n}"));
        return Some(PathBuf::from(name));
    }
    let dir = config.dir.as_ref()?;
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let process = std::process::id();
    Some(dir.join(format!("agent{agent}-{n}-{process}-{ms}.acprec.jsonl")))
}

/// Records the actor collects before handing them to the thread mid-step (a flood's batch is
/// up to 256 lines: a few hand-offs per batch, not one per line).
const HAND_OFF: usize = 64 << 10;
/// A buffer's room for that (below the allocator's 128 KiB `mmap` threshold: no system call
/// for a new one).
const LOCAL_ROOM: usize = HAND_OFF + HAND_OFF / 2;

/// `t` of a line: microseconds since the start, written as seconds (`0.004531`, `3.2`, `1`): what
/// `f64` would print, without its cost on every line.
pub(crate) struct Seconds(pub(crate) u64);

impl Seconds {
    /// Appended to `out` (every line has one: without the formatting machinery).
    pub(crate) fn push_to(&self, out: &mut Vec<u8>) {
        let (secs, mut micros) = (self.0 / 1_000_000, self.0 % 1_000_000);
        push_u64(out, secs);
        if micros != 0 {
            // The fraction's digits without its trailing zeros: `width` of them, zero-padded.
            let mut width = 6;
            while micros % 10 == 0 {
                micros /= 10;
                width -= 1;
            }
            let mut buf = itoa::Buffer::new();
            let digits = buf.format(micros).as_bytes();
            out.push(b'.');
            out.extend(std::iter::repeat_n(b'0', width - digits.len()));
            out.extend_from_slice(digits);
        }
    }
}

impl std::fmt::Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = Vec::new();
        self.push_to(&mut s);
        f.write_str(std::str::from_utf8(&s).unwrap_or("0"))
    }
}

/// `n` in decimal, appended to `out`.
fn push_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// One connection's recording, owned by its actor: what it records is copied into the
/// recording thread's queue (`lines.rs`), which makes the lines.
#[derive(Debug)]
pub(crate) struct Recorder {
    out: writer::Sink,
    /// Records not handed to the thread yet (`lines.rs`): no lock, no wake per record.
    local: Vec<u8>,
    /// Their attachments (batches of the agent's raw lines), and their bytes.
    attachments: Vec<String>,
    attached_bytes: usize,
    /// Attachments the thread is done with, emptied: the buffers of the connection's next
    /// batches ([`Recorder::spare_buffer`]).
    spent: Vec<String>,
    /// The agent's lines being handled are in the last attachment (not dropped).
    attached: bool,
    /// Records queued so far (not dropped).
    queued: u64,
    /// The kind and session of the last event queued (a record may say "the same").
    ev_kind: Option<EventKind>,
    ev_session: Option<Arc<str>>,
    /// Where in `local` the last record, a count of dropped lines, is (more drops add to it).
    dropped_at: Option<usize>,
    start: Instant,
    /// The header is written (in the queue's order): wire lines queued from now on have an
    /// index a later event may refer to.
    header_written: bool,
    /// Lines queued before the header, and how many of them are wire lines.
    held: usize,
    held_wires: u64,
    /// Wire lines queued after the header (and held ones, once it is written): the index the
    /// next one gets in the file.
    wires: u64,
    /// The latest line's `t` (microseconds).
    last_t: u64,
    /// The `end` was asked for: nothing more is recorded (docs/RECORDING.md, "The end").
    ended: bool,
}

impl Recorder {
    /// Start recording agent `agent`'s new connection (`n`: the host's count of connections), or
    /// `Err` with why the file could not be created.
    pub(crate) fn start(
        config: &RecordConfig,
        agent: u64,
        n: u64,
        spec: Option<&AgentSpec>,
    ) -> Result<Recorder, String> {
        let path = path_for(config, agent, n).ok_or("no `dir` or `file` to record into")?;
        let agent_json = spec.map(|s| {
            serde_json::json!({
                "command": s.command,
                "args": s.args,
                "cwd": s.cwd,
                // Names only: values are secrets as often as not (and with `redact` off, still
                // the embedder's environment, not the protocol's).
                "env": s.env.keys().collect::<Vec<_>>(),
            })
        });
        let header = serde_json::json!({
            "acpRecording": FORMAT_VERSION,
            "acpHost": env!("CARGO_PKG_VERSION"),
            "startedAt": crate::events::format_timestamp(std::time::SystemTime::now()),
            "platform": {
                "os": std::env::consts::OS,
                "arch": std::env::consts::ARCH,
                "family": std::env::consts::FAMILY,
            },
            "agentId": agent,
            "connection": n,
            "agent": agent_json,
            "redacted": config.redact,
            "maxBytes": config.max_bytes,
            "protocolVersion": null,
            "clientInfo": null,
            "clientCapabilities": null,
            "initialize": null,
        });
        let out = writer::Sink::create(&path, config.max_bytes, Lines::new(header, config.redact))
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(Recorder::over(out))
    }

    /// A recording into `out`'s thread.
    fn over(out: writer::Sink) -> Recorder {
        Recorder {
            out,
            local: Vec::with_capacity(LOCAL_ROOM),
            attachments: Vec::new(),
            attached_bytes: 0,
            spent: Vec::new(),
            attached: false,
            queued: 0,
            ev_kind: None,
            ev_session: None,
            dropped_at: None,
            start: Instant::now(),
            header_written: false,
            held: 0,
            held_wires: 0,
            wires: 0,
            last_t: 0,
            ended: false,
        }
    }

    /// Where this recording is written.
    pub(crate) fn path(&self) -> &Path {
        self.out.path()
    }

    /// Now (microseconds), and remembered as the latest line's time.
    fn t(&mut self) -> u64 {
        self.t_at(Instant::now())
    }

    /// The time of something that happened `at`, and remembered as the latest line's time;
    /// never before the latest (a batch's lines share the time they were read, and the actor's
    /// own lines in between are later: the file's times do not go back).
    fn t_at(&mut self, at: Instant) -> u64 {
        // Microseconds: enough to order what one actor step did, short enough to read.
        let t =
            u64::try_from(at.saturating_duration_since(self.start).as_micros()).unwrap_or(u64::MAX);
        self.last_t = self.last_t.max(t);
        self.last_t
    }

    /// Queue a record (`len` bytes of payload). Returns the file's index of this wire line
    /// (`wire`) when it is queued after the header: a later event may refer to it. A line
    /// queued before the header, or dropped (what waits for the thread is at its bound), has
    /// none.
    fn queue(&mut self, wire: bool, len: usize, put: impl FnOnce(&mut Vec<u8>)) -> Option<u64> {
        if !self
            .out
            .has_room(self.local.len() + self.attached_bytes + lines::record_len(len))
        {
            self.dropped();
            return None;
        }
        put(&mut self.local);
        self.queued += 1;
        self.dropped_at = None;
        if self.local.len() >= HAND_OFF {
            self.hand_off();
        }
        if !self.header_written {
            self.held += 1;
            self.held_wires += u64::from(wire);
            if self.held >= HELD_BEFORE_HEADER {
                self.header_now();
            }
            return None;
        }
        if !wire {
            return None;
        }
        self.wires += 1;
        Some(self.wires - 1)
    }

    /// A line dropped here: counted in the `gap` record at this place (one for a run of drops).
    fn dropped(&mut self) {
        match self.dropped_at {
            Some(at) => lines::add_dropped(&mut self.local, at),
            None => self.dropped_at = Some(lines::put_dropped(&mut self.local)),
        }
    }

    /// What is recorded so far goes to the recording's thread (the actor calls this at the end
    /// of each step: a record waits for at most one step of the actor, and then the thread's
    /// linger). Only a count of dropped lines stays, to count the next steps' drops too (one
    /// `gap` line for a stuck disk, not one per step).
    pub(crate) fn hand_off(&mut self) {
        if self.dropped_at == Some(1) && self.local.len() == lines::DROPPED_LEN {
            return;
        }
        self.send();
    }

    /// Everything recorded so far to the recording's thread.
    fn send(&mut self) {
        if !self.local.is_empty() {
            self.out
                .hand_off(&mut self.local, &mut self.attachments, &mut self.spent);
            self.attached_bytes = 0;
            self.dropped_at = None;
            if self.local.capacity() < HAND_OFF {
                self.local.reserve(LOCAL_ROOM);
            }
        }
    }

    /// The header goes out (after what is queued), the held lines after it.
    fn header_now(&mut self) {
        if !self.header_written {
            lines::put_header(&mut self.local);
            self.dropped_at = None;
            self.header_written = true;
            self.wires += std::mem::take(&mut self.held_wires);
        }
    }

    /// The agent's lines of a batch the connection is about to handle, end to end (`raw`), read
    /// `at`: each is recorded by [`Recorder::wire_in_at`] as the connection gets to it, without
    /// being copied again. When they do not fit (the disk is behind), each is dropped instead.
    pub(crate) fn attach(&mut self, raw: String, at: Option<Instant>) {
        self.attached = false;
        let len = raw.len();
        if self.ended
            || len == 0
            || !self
                .out
                .has_room(self.local.len() + self.attached_bytes + len + 16)
        {
            lines::keep_spent(&mut self.spent, raw); // not recorded: kept for the next batch
            return;
        }
        let t = self.t_at(at.unwrap_or_else(Instant::now));
        lines::put_attach(&mut self.local, t);
        self.dropped_at = None;
        self.attachments.push(raw);
        self.attached_bytes += len;
        self.attached = true;
    }

    /// An empty buffer for the connection's next batch of the agent's lines: one the recording
    /// is done with, when there is one (a flood's batches so reuse a few buffers, as they do
    /// unrecorded, rather than each allocating one that the recording's thread frees).
    pub(crate) fn spare_buffer(&mut self) -> String {
        self.spent.pop().unwrap_or_default()
    }

    /// A message the agent sent: bytes `span` of the last [`Recorder::attach`]ed batch. Returns
    /// its index among the file's wire lines, like [`Recorder::wire_in`].
    pub(crate) fn wire_in_at(&mut self, span: std::ops::Range<usize>) -> Option<u64> {
        if self.ended {
            return None;
        }
        let (Ok(start), Ok(end)) = (u32::try_from(span.start), u32::try_from(span.end)) else {
            self.dropped();
            return None;
        };
        if !self.attached {
            self.dropped();
            return None;
        }
        self.queue(true, 0, |buf| lines::put_wire_at(buf, start, end))
    }

    /// A message the host sent (its line, without the newline).
    pub(crate) fn wire_out(&mut self, raw: &str) {
        if self.ended {
            return;
        }
        let t = self.t();
        self.queue(true, raw.len(), |buf| lines::put_wire(buf, false, t, raw));
    }

    /// A batch of one line (tests).
    #[cfg(test)]
    fn wire_in(&mut self, raw: &str, at: Option<Instant>) -> Option<u64> {
        self.attach(raw.to_owned(), at);
        self.wire_in_at(0..raw.len())
    }

    /// An event of the connection (its envelope without `seq`, which the host's queue assigns).
    /// `wire`: the event is an update whose data is the `params.update` of the agent's
    /// `session/update` that [`Recorder::wire_in`] queued as that wire line; the event's line
    /// refers to it instead of repeating it (format 2, `record::format`).
    pub(crate) fn event(&mut self, ev: &PendingEvent, wire: Option<u64>) {
        if ev.kind == EventKind::Wire || self.ended {
            return; // the wire lines are recorded as such
        }
        // An update made from the line just recorded has its time (the clock is not read
        // twice per update); its kind and session are mostly the previous event's: the record
        // says so rather than carrying them (a flood's update records are a few bytes).
        let t = match wire {
            Some(_) => None,
            None => Some(self.t()),
        };
        let same_session = match (&ev.session, &self.ev_session) {
            (Some(s), Some(last)) => Arc::ptr_eq(s, last) || s == last,
            _ => false,
        };
        let record = lines::EventRecord {
            t,
            kind: if self.ev_kind == Some(ev.kind) {
                Field::Same
            } else {
                Field::Is(ev.kind.as_str())
            },
            session: match &ev.session {
                None => Field::None,
                Some(_) if same_session => Field::Same,
                Some(s) => Field::Is(s),
            },
            turn: ev.turn,
            replay: ev.replay,
            wire,
            data: ev.data.get(),
        };
        let len = ev.kind.as_str().len()
            + ev.session.as_deref().map_or(0, str::len)
            + if wire.is_some() { 0 } else { record.data.len() };
        let queued = self.queued;
        self.queue(false, len, |buf| lines::put_event(buf, &record));
        if self.queued != queued {
            // What the thread will take "the same" for.
            self.ev_kind = Some(ev.kind);
            if ev.session.is_some() && !same_session {
                self.ev_session.clone_from(&ev.session);
            }
        }
        // The handshake's answer completes the header: the thread writes it before this
        // event's line.
        if ev.kind == EventKind::AgentReady && !self.header_written {
            self.header_written = true;
            self.wires += std::mem::take(&mut self.held_wires);
        }
    }

    /// The connection ended: the header (if the handshake never completed), what is held, the
    /// `end` line; the file is closed by the recording's thread, and the returned [`Closing`]
    /// (the first time only) says when. Nothing is recorded after this.
    pub(crate) fn finish(&mut self) -> Option<Closing> {
        self.send();
        self.ended = true;
        let t = self.t();
        self.out.finish(t)
    }
}

/// `s` (text) as a JSON string (the common case, nothing to escape, without a `Value`).
fn json_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s);
        out.push(b'"');
    } else {
        // A `String` always serializes.
        let _ = serde_json::to_writer(out, &String::from_utf8_lossy(s));
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // The thread closes the file on its own; nobody waits here (a drop may run on a
        // runtime's thread).
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::Write;
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::{Duration, Instant};

    use serde_json::Value;

    use super::{Lines, Recorder, Seconds, writer};

    /// Whether the disk is open, and what it was given.
    type Disk = Mutex<(bool, Vec<u8>)>;

    /// A disk that takes nothing until it is opened, then keeps what it is given.
    #[derive(Clone, Default)]
    struct Gate(Arc<(Disk, Condvar)>);

    impl Gate {
        fn open(&self) {
            self.0.0.lock().unwrap().0 = true;
            self.0.1.notify_all();
        }
        /// The file's lines once its `end` line is written (30 s at most: a loaded machine).
        fn lines(&self) -> Vec<Value> {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let text = String::from_utf8(self.0.0.lock().unwrap().1.clone()).unwrap();
                if text.contains("\"end\":") {
                    return text
                        .lines()
                        .map(|l| serde_json::from_str(l).unwrap())
                        .collect();
                }
                assert!(
                    Instant::now() < deadline,
                    "no end line: {} bytes",
                    text.len()
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (lock, ready) = &*self.0;
            let mut g = lock.lock().unwrap();
            while !g.0 {
                g = ready.wait(g).unwrap();
            }
            g.1.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn recorder(disk: &Gate) -> Recorder {
        let sink = writer::Sink::start(
            std::path::Path::new("x"),
            disk.clone(),
            1 << 40,
            Lines::headerless(),
        )
        .unwrap();
        // Its header taken as written (the thread's `Lines` has none).
        let mut r = Recorder::over(sink);
        r.header_written = true;
        r
    }

    /// The buffers the agent's lines come in go round: once the thread has written a batch's
    /// lines, a later batch gets that buffer back, emptied, its room kept (not one allocated
    /// per batch); the lines recorded from a reused buffer are their own; a buffer that grew
    /// past `SPENT_ROOM` (a batch of huge lines) is not kept.
    #[test]
    fn a_batch_buffer_comes_back_emptied_and_the_lines_read_into_it_are_their_own() {
        let disk = Gate::default();
        disk.open();
        let mut r = recorder(&disk);
        let mut reused = 0;
        let huge = "h".repeat(super::lines::SPENT_ROOM + 1);
        for i in 0..40 {
            let mut raw = r.spare_buffer();
            assert!(
                raw.is_empty(),
                "batch {i} was given a buffer holding {raw:?}"
            );
            assert!(
                raw.capacity() <= super::lines::SPENT_ROOM,
                "a huge buffer came back"
            );
            reused += usize::from(raw.capacity() > 0);
            let pad = if i == 20 { huge.as_str() } else { "" };
            let a = format!(r#"{{"batch":{i},"n":1,"pad":"{pad}"}}"#);
            let b = format!(r#"{{"batch":{i},"n":2}}"#);
            raw.push_str(&a);
            raw.push_str(&b);
            r.attach(raw, None);
            assert!(r.wire_in_at(0..a.len()).is_some());
            assert!(r.wire_in_at(a.len()..a.len() + b.len()).is_some());
            r.hand_off();
            // The thread takes the batch before the next (so its buffer can come back).
            let deadline = Instant::now() + Duration::from_secs(30);
            while !r.out.has_room(writer::QUEUE_BYTES) {
                assert!(Instant::now() < deadline, "the thread never took batch {i}");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert!(reused >= 30, "{reused} of 40 batches got a buffer back");
        let _ = r.finish();
        let got: Vec<(u64, u64)> = disk
            .lines()
            .iter()
            .filter_map(|l| Some((l["msg"]["batch"].as_u64()?, l["msg"]["n"].as_u64()?)))
            .collect();
        let want: Vec<(u64, u64)> = (0..40).flat_map(|i| [(i, 1), (i, 2)]).collect();
        assert_eq!(got, want);
    }

    /// A disk that does not keep up: what waits for it reaches its bound, the lines past it are
    /// dropped, one `gap` line counts them where they were, the `end` line too; the lines after
    /// are recorded, and a wire line's index is still its place among the file's wire lines.
    #[test]
    fn lines_past_the_bound_are_counted_where_they_were_dropped() {
        let disk = Gate::default();
        let mut r = recorder(&disk);
        // (Each of the lines dropped while the disk is stuck is a step of its own.)
        let big = format!("{{\"x\":\"{}\"}}", "a".repeat(1 << 20));
        let mut kept = Vec::new();
        let mut dropped = 0u64;
        // The thread takes the first line and is stuck writing it: nothing leaves the queue
        // until the disk opens.
        kept.push(r.wire_in(&big, None).unwrap());
        r.hand_off();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !r.out.has_room(writer::QUEUE_BYTES) {
            assert!(
                Instant::now() < deadline,
                "the thread never took the first line"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        for _ in 0..40 {
            match r.wire_in(&big, None) {
                Some(i) => {
                    assert_eq!(dropped, 0, "a line kept after one dropped");
                    kept.push(i);
                }
                None => dropped += 1,
            }
            r.hand_off();
        }
        assert!(
            dropped > 0 && !kept.is_empty(),
            "kept {} dropped {dropped}",
            kept.len()
        );
        assert_eq!(kept, (0..kept.len() as u64).collect::<Vec<_>>());
        disk.open();
        while !r.out.has_room(1 << 10) {
            assert!(Instant::now() < deadline, "the queue never emptied");
            std::thread::sleep(Duration::from_millis(5));
        }
        let after = r.wire_in(r#"{"after":1}"#, None);
        assert_eq!(after, Some(kept.len() as u64), "the next wire line's index");
        let _ = r.finish();
        let lines = disk.lines();
        let wires = lines.iter().filter(|l| l.get("msg").is_some()).count();
        assert_eq!(wires, kept.len() + 1);
        let gap = lines.iter().position(|l| l.get("gap").is_some()).unwrap();
        assert_eq!(lines[gap]["gap"]["droppedLines"], dropped);
        assert_eq!(gap, kept.len(), "the gap comes after the kept lines");
        assert_eq!(lines[gap + 1]["msg"]["after"], 1);
        assert_eq!(lines.last().unwrap()["end"]["droppedLines"], dropped);
    }

    /// A batch's lines carry the time they were read, never before a line recorded earlier:
    /// the file's times do not go back.
    #[test]
    fn times_never_go_back() {
        let disk = Gate::default();
        disk.open();
        let mut r = recorder(&disk);
        let read = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        r.wire_out(r#"{"out":1}"#);
        // Two lines read together, and handled one at a time: the host's answer to the first
        // comes between them.
        r.attach(r#"{"in":1}{"in":2}"#.to_owned(), Some(read));
        assert_eq!(r.wire_in_at(0..8), Some(1));
        std::thread::sleep(Duration::from_millis(20));
        r.wire_out(r#"{"out":2}"#);
        assert_eq!(r.wire_in_at(8..16), Some(3));
        let _ = r.finish();
        let lines = disk.lines();
        let msgs: Vec<String> = lines
            .iter()
            .filter_map(|l| Some(l.get("msg")?.to_string()))
            .collect();
        assert_eq!(
            msgs,
            [r#"{"out":1}"#, r#"{"in":1}"#, r#"{"out":2}"#, r#"{"in":2}"#]
        );
        let ts: Vec<f64> = lines.iter().filter_map(|l| l["t"].as_f64()).collect();
        assert_eq!(ts.len(), 5, "{ts:?}");
        assert!(ts[0] >= 0.02 && ts[2] >= 0.04, "{ts:?}");
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    }

    #[test]
    fn seconds_print_as_the_shortest_decimal() {
        for (us, text) in [
            (0, "0"),
            (1, "0.000001"),
            (4531, "0.004531"),
            (3_200_000, "3.2"),
            (1_000_000, "1"),
            (12_345_670, "12.34567"),
            (u64::MAX, "18446744073709.551615"),
            (10_000_000, "10"),
            (10_000_001, "10.000001"),
            (999_999, "0.999999"),
        ] {
            assert_eq!(Seconds(us).to_string(), text);
            let mut pushed = b"t=".to_vec();
            Seconds(us).push_to(&mut pushed);
            assert_eq!(pushed, format!("t={text}").into_bytes());
            assert_eq!(text.parse::<f64>().ok(), Some(us as f64 / 1e6));
        }
    }

    #[test]
    fn integers_print_in_decimal() {
        for n in [0, 7, 10, 1234, u64::MAX] {
            let mut out = b",".to_vec();
            super::push_u64(&mut out, n);
            assert_eq!(out, format!(",{n}").into_bytes());
        }
    }
}
