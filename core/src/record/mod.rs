//! Recording an agent connection (`HostConfig::record`; docs/RECORDING.md): one JSON Lines file
//! per connection, a header (versions, platform, the agent's command, both sides' capabilities,
//! the agent's `initialize` answer), then every wire message in both directions and every event
//! of the connection, each with a monotonic time `t` (seconds since the connection started).
//!
//! Never in the connection's way: the actor formats a line (a raw copy, parsed again only when
//! it may hold a secret, see `redact.rs`) and hands it to the recording's own thread through a
//! queue bounded by bytes; when the disk falls behind the queue's bound, lines are dropped and a
//! `gap` line says how many. The file is bounded too (`maxBytes`): past it a `truncated` line
//! ends it. The last line, `end`, counts what was written and dropped.

pub mod format;
pub mod redact;
mod writer;

pub(crate) use writer::Closing;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use crate::events::{EventKind, PendingEvent};
use crate::transport::AgentSpec;

pub use format::FORMAT_VERSION;
/// Lines held back until the handshake's answer completes the header (past it the header is
/// written without the answer).
const HELD_BEFORE_HEADER: usize = 256;
/// Elicitation request ids remembered (their answers' form values are redacted).
const ELICITATIONS_KEPT: usize = 256;

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

/// One connection's recording, owned by its actor.
#[derive(Debug)]
pub(crate) struct Recorder {
    out: writer::Sink,
    start: Instant,
    redact: bool,
    /// The header's fields known at the start; completed by the handshake.
    header: Option<Value>,
    /// Lines made before the header could be written (and whether each is a wire line).
    held: Vec<(String, bool)>,
    /// Wire lines queued (after the header): the index the next one gets in the file.
    wires: u64,
    /// The latest line's `t` (microseconds).
    last_t: u64,
    /// Ids (as JSON text) of the agent's `elicitation/create` requests not answered yet.
    elicitations: VecDeque<String>,
    /// The line being made (reused: no allocation per line).
    scratch: String,
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
        let out = writer::Sink::create(&path, config.max_bytes)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
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
        Ok(Recorder {
            out,
            start: Instant::now(),
            redact: config.redact,
            header: Some(header),
            held: Vec::new(),
            wires: 0,
            last_t: 0,
            elicitations: VecDeque::new(),
            scratch: String::with_capacity(1024),
            ended: false,
        })
    }

    /// Where this recording is written.
    pub(crate) fn path(&self) -> &Path {
        self.out.path()
    }

    /// Now, and remembered as the latest line's time.
    fn t(&mut self) -> Seconds {
        // Microseconds: enough to order what one actor step did, short enough to read.
        self.last_t = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
        Seconds(self.last_t)
    }

    /// Hand the line in `scratch` on (held back until the header is written). Returns the
    /// file's index of this wire line (`wire`) when it is queued for the file now: a later event
    /// may refer to it. A line that is held, or dropped (the queue is full), has none.
    fn line(&mut self, wire: bool) -> Option<u64> {
        if self.header.is_some() {
            self.held.push((self.scratch.clone(), wire));
            if self.held.len() >= HELD_BEFORE_HEADER {
                self.write_header();
            }
            return None;
        }
        self.queue(wire)
    }

    /// Queue `scratch`, counting it when it is a wire line.
    fn queue(&mut self, wire: bool) -> Option<u64> {
        if !self.out.push(&self.scratch) || !wire {
            return None;
        }
        self.wires += 1;
        Some(self.wires - 1)
    }

    fn write_header(&mut self) {
        if let Some(header) = self.header.take() {
            self.out.push(&header.to_string());
            for (line, wire) in std::mem::take(&mut self.held) {
                self.scratch = line;
                self.queue(wire);
            }
        }
    }

    /// A message the agent sent (its raw line). Returns its index among the file's wire lines
    /// when it is queued for the file at once (see [`Recorder::event`]).
    pub(crate) fn wire_in(&mut self, raw: &str) -> Option<u64> {
        if self.ended {
            return None;
        }
        let found = redact::scan(raw);
        if found.elicitation
            && let Ok(msg) = serde_json::from_str::<Value>(raw)
            && msg.get("method").and_then(Value::as_str) == Some("elicitation/create")
            && let Some(id) = msg.get("id")
        {
            self.elicitations.push_back(id.to_string());
            if self.elicitations.len() > ELICITATIONS_KEPT {
                self.elicitations.pop_front();
            }
        }
        self.wire("in", raw, found.secret, false)
    }

    /// A message the host sent (its line, without the newline).
    pub(crate) fn wire_out(&mut self, raw: &str) {
        if self.ended {
            return;
        }
        if let Some(header) = &mut self.header
            && raw.contains("\"initialize\"")
            && let Ok(msg) = serde_json::from_str::<Value>(raw)
            && msg.get("method").and_then(Value::as_str) == Some("initialize")
        {
            header["clientInfo"] = msg["params"]["clientInfo"].clone();
            header["clientCapabilities"] = msg["params"]["clientCapabilities"].clone();
        }
        let answer = !self.elicitations.is_empty() && self.answers_elicitation(raw);
        let secret = redact::secret(raw);
        self.wire("out", raw, secret, answer);
    }

    /// `{"t":…,"dir":…,"msg":…}` into `scratch`, then on.
    fn wire(
        &mut self,
        dir: &str,
        raw: &str,
        secret: bool,
        elicitation_answer: bool,
    ) -> Option<u64> {
        let t = self.t();
        let mut line = std::mem::take(&mut self.scratch);
        line.clear();
        line.push_str("{\"t\":");
        t.push_to(&mut line);
        line.push_str(",\"dir\":\"");
        line.push_str(dir);
        line.push_str("\",\"msg\":");
        self.redacted(
            &mut line,
            raw,
            secret || elicitation_answer,
            elicitation_answer,
        );
        line.push('}');
        self.scratch = line;
        self.line(true)
    }

    /// Whether `raw` is a response to a remembered `elicitation/create` (forgotten then).
    fn answers_elicitation(&mut self, raw: &str) -> bool {
        let Ok(msg) = serde_json::from_str::<Value>(raw) else {
            return false;
        };
        if msg.get("method").is_some() {
            return false;
        }
        let Some(id) = msg.get("id").map(Value::to_string) else {
            return false;
        };
        match self.elicitations.iter().position(|e| *e == id) {
            Some(i) => {
                self.elicitations.remove(i);
                true
            }
            None => false,
        }
    }

    /// `raw` as recorded, appended to `out`: as is, or parsed, redacted and written again when
    /// it may hold a secret (`suspect`: `redact::scan` found a trigger, or it is an answer to a
    /// form).
    fn redacted(&self, out: &mut String, raw: &str, suspect: bool, elicitation_answer: bool) {
        if !self.redact || !suspect {
            out.push_str(raw);
            return;
        }
        match serde_json::from_str::<Value>(raw) {
            Ok(mut msg) => {
                redact::message(&mut msg, elicitation_answer);
                out.push_str(&msg.to_string());
            }
            // Not JSON (never, from the connection): recorded as a string.
            Err(_) => out.push_str(&Value::from(raw).to_string()),
        }
    }

    /// An event of the connection (its envelope without `seq`, which the host's queue assigns).
    /// `wire`: the event is an update whose data is the `params.update` of the agent's
    /// `session/update` that [`Recorder::wire_in`] queued as that wire line; the event's line
    /// refers to it instead of repeating it (format 2, `record::format`).
    pub(crate) fn event(&mut self, ev: &PendingEvent, wire: Option<u64>) {
        if ev.kind == EventKind::Wire || self.ended {
            return; // the wire lines are recorded as such
        }
        if ev.kind == EventKind::AgentReady
            && let Some(header) = &mut self.header
        {
            if let Ok(ready) = serde_json::from_str::<Value>(ev.data.get()) {
                header["protocolVersion"] = ready["protocolVersion"].clone();
                let mut init = ready;
                if self.redact {
                    redact::message(&mut init, false);
                }
                header["initialize"] = init;
            }
            self.write_header();
        }
        // An update made from the line just recorded has its time: the clock is not read
        // twice per update (a read was about 5% of the recording's cost on a flood, perf).
        let t = match wire {
            Some(_) => Seconds(self.last_t),
            None => self.t(),
        };
        let mut line = std::mem::take(&mut self.scratch);
        line.clear();
        line.push_str("{\"t\":");
        t.push_to(&mut line);
        line.push_str(",\"event\":{\"kind\":\"");
        line.push_str(ev.kind.as_str());
        line.push('"');
        if let Some(session) = &ev.session {
            line.push_str(",\"session\":");
            json_string(&mut line, session);
        }
        if let Some(turn) = ev.turn {
            line.push_str(",\"turn\":");
            push_u64(&mut line, turn);
        }
        if ev.replay {
            line.push_str(",\"replay\":true");
        }
        match wire {
            Some(n) => {
                line.push_str(",\"wire\":");
                push_u64(&mut line, n);
            }
            None => {
                line.push_str(",\"data\":");
                let data = ev.data.get();
                self.redacted(&mut line, data, redact::secret(data), false);
            }
        }
        line.push_str("}}");
        self.scratch = line;
        self.line(false);
    }

    /// The connection ended: the header (if the handshake never completed), what is held, the
    /// `end` line; the file is closed by the recording's thread, and the returned [`Closing`]
    /// (the first time only) says when. Nothing is recorded after this.
    pub(crate) fn finish(&mut self) -> Option<Closing> {
        self.write_header();
        self.ended = true;
        let t = self.t();
        self.out.finish(t.0)
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
