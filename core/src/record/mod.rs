//! Recording an agent connection (`HostConfig::record`; docs/RECORDING.md): one JSON Lines file
//! per connection, a header (versions, platform, the agent's command, both sides' capabilities,
//! the agent's `initialize` answer), then every wire message in both directions and every event
//! of the connection, each with a monotonic time `t` (seconds since the connection started).
//!
//! Never in the connection's way: the actor copies what it records (the raw message, the event's
//! fields) into the queue of the recording's own thread, bounded by bytes, and that thread makes
//! the lines (`lines.rs`: framing, the secret scan, redaction, see `redact.rs`); when the disk falls behind the queue's bound, lines are dropped and a
//! `gap` line says how many. The file is bounded too (`maxBytes`): past it a `truncated` line
//! ends it. The last line, `end`, counts what was written and dropped.

pub mod format;
mod lines;
pub mod redact;
mod writer;

pub(crate) use writer::Closing;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use lines::{HELD_BEFORE_HEADER, Lines};

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

/// `t` of a line: microseconds since the start, written as seconds (`0.004531`, `3.2`, `1`): what
/// `f64` would print, without its cost on every line.
pub(crate) struct Seconds(pub(crate) u64);

impl Seconds {
    /// Appended to `out` (every line has one: without the formatting machinery, in one push).
    pub(crate) fn push_to(&self, out: &mut String) {
        let (secs, micros) = (self.0 / 1_000_000, self.0 % 1_000_000);
        let mut buf = [b'0'; 28];
        let mut end = 20;
        let start = digits(&mut buf[..20], secs);
        if micros != 0 {
            buf[20] = b'.';
            let mut rest = micros;
            for d in buf[21..27].iter_mut().rev() {
                *d = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            end = 27 - buf[21..27].iter().rev().take_while(|d| **d == b'0').count();
        }
        out.push_str(ascii(&buf[start..end]));
    }
}

impl std::fmt::Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        self.push_to(&mut s);
        f.write_str(&s)
    }
}

/// `n`'s decimal digits at the end of `buf` (20 bytes hold any `u64`); returns where they start.
fn digits(buf: &mut [u8], mut n: u64) -> usize {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return i;
        }
    }
}

/// Digits (and a point) as text.
fn ascii(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("0")
}

/// `n` in decimal, appended to `out`.
fn push_u64(out: &mut String, n: u64) {
    let mut buf = [0u8; 20];
    let start = digits(&mut buf, n);
    out.push_str(ascii(&buf[start..]));
}

/// One connection's recording, owned by its actor: what it records is copied into the
/// recording thread's queue (`lines.rs`), which makes the lines.
#[derive(Debug)]
pub(crate) struct Recorder {
    out: writer::Sink,
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
        Ok(Recorder {
            out,
            start: Instant::now(),
            header_written: false,
            held: 0,
            held_wires: 0,
            wires: 0,
            last_t: 0,
            ended: false,
        })
    }

    /// Where this recording is written.
    pub(crate) fn path(&self) -> &Path {
        self.out.path()
    }

    /// Now (microseconds), and remembered as the latest line's time.
    fn t(&mut self) -> u64 {
        // Microseconds: enough to order what one actor step did, short enough to read.
        self.last_t = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.last_t
    }

    /// Queue a record (`len` bytes of payload). Returns the file's index of this wire line
    /// (`wire`) when it is queued after the header: a later event may refer to it. A line
    /// queued before the header, or dropped (the queue is full), has none.
    fn queue(&mut self, wire: bool, len: usize, put: impl FnOnce(&mut Vec<u8>)) -> Option<u64> {
        if !self.out.push(len, put) {
            return None;
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

    /// The header goes out (after what is queued), the held lines after it.
    fn header_now(&mut self) {
        if !self.header_written {
            self.out.push(0, lines::put_header);
            self.header_written = true;
            self.wires += std::mem::take(&mut self.held_wires);
        }
    }

    /// A message the agent sent (its raw line). Returns its index among the file's wire lines
    /// when it is queued after the header (see [`Recorder::event`]).
    pub(crate) fn wire_in(&mut self, raw: &str) -> Option<u64> {
        self.wire(true, raw)
    }

    /// A message the host sent (its line, without the newline).
    pub(crate) fn wire_out(&mut self, raw: &str) {
        self.wire(false, raw);
    }

    fn wire(&mut self, inbound: bool, raw: &str) -> Option<u64> {
        if self.ended {
            return None;
        }
        let t = self.t();
        self.queue(true, raw.len(), |buf| lines::put_wire(buf, inbound, t, raw))
    }

    /// An event of the connection (its envelope without `seq`, which the host's queue assigns).
    /// `wire`: the event is an update whose data is the `params.update` of the agent's
    /// `session/update` that [`Recorder::wire_in`] queued as that wire line; the event's line
    /// refers to it instead of repeating it (format 2, `record::format`).
    pub(crate) fn event(&mut self, ev: &PendingEvent, wire: Option<u64>) {
        if ev.kind == EventKind::Wire || self.ended {
            return; // the wire lines are recorded as such
        }
        // An update made from the line just recorded has its time: the clock is not read
        // twice per update (a read was about 5% of the recording's cost on a flood, perf).
        let t = match wire {
            Some(_) => self.last_t,
            None => self.t(),
        };
        let record = lines::EventRecord {
            t,
            kind: ev.kind.as_str(),
            session: ev.session.as_deref(),
            turn: ev.turn,
            replay: ev.replay,
            wire,
            data: ev.data.get(),
        };
        let len = record.kind.len()
            + record.session.map_or(0, str::len)
            + if wire.is_some() { 0 } else { record.data.len() };
        self.queue(false, len, |buf| lines::put_event(buf, &record));
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
        self.ended = true;
        let t = self.t();
        self.out.finish(t)
    }
}

/// `s` as a JSON string (the common case, nothing to escape, without a `Value`).
fn json_string(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Value::from(s).to_string());
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
    use super::Seconds;

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
            let mut pushed = String::from("t=");
            Seconds(us).push_to(&mut pushed);
            assert_eq!(pushed, format!("t={text}"));
            assert_eq!(text.parse::<f64>().ok(), Some(us as f64 / 1e6));
        }
    }

    #[test]
    fn integers_print_in_decimal() {
        for n in [0, 7, 10, 1234, u64::MAX] {
            let mut out = String::from(",");
            super::push_u64(&mut out, n);
            assert_eq!(out, format!(",{n}"));
        }
    }
}
