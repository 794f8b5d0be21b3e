//! What the connection hands its recording's thread, and how that thread makes the file's lines.
//!
//! The connection's side of a recording is a copy: a few bytes of framing (a tag, the time) and
//! the raw message or the event's fields, appended to the queue (`Record::*` below, `put_*`).
//! Everything else a line costs — the secret scan, redaction (parsing and writing a suspect
//! message again), JSON framing, the header's completion from the handshake, remembering which
//! answers are elicitation forms — is done by the recording's thread ([`Lines`]), which reads the
//! records in the order they were queued. A flood of updates so costs the connection one copy of
//! each line, and the rest runs beside it.

use std::collections::VecDeque;

use serde_json::Value;

use super::format::REFERRING_KIND;
use super::{Seconds, json_string, push_u64, redact};

/// Lines held back until the handshake's answer completes the header (past it the header is
/// written without the answer).
pub(super) const HELD_BEFORE_HEADER: usize = 256;
/// Attachments given back to the connection at a time, and the largest given back (a flood's
/// batches are tens of KiB; a batch of a few huge lines is not kept).
pub(super) const SPENT_KEPT: usize = 4;
pub(super) const SPENT_ROOM: usize = 256 << 10;
/// Elicitation request ids remembered (their answers' form values are redacted).
const ELICITATIONS_KEPT: usize = 256;

/// A batch's buffer done with, kept in `spent`, emptied, for a later batch (the reader then reads
/// into memory already allocated rather than a new buffer per batch), if it is not too large and
/// `spent` not full.
pub(super) fn keep_spent(spent: &mut Vec<String>, mut done: String) {
    if done.capacity() > 0 && done.capacity() <= SPENT_ROOM && spent.len() < SPENT_KEPT {
        done.clear();
        spent.push(done);
    }
}

const LINE: u8 = 0;
const WIRE_IN: u8 = 1;
const WIRE_OUT: u8 = 2;
const EVENT: u8 = 3;
const HEADER: u8 = 4;
const DROPPED: u8 = 5;
const ATTACH: u8 = 6;
const WIRE_IN_AT: u8 = 7;

/// A line given whole (the writer's tests).
#[cfg(test)]
pub(super) fn put_line(buf: &mut Vec<u8>, line: &str) {
    buf.push(LINE);
    put_bytes(buf, line.as_bytes());
}

/// A wire message (`inbound`: the agent sent it) at `t` microseconds.
pub(super) fn put_wire(buf: &mut Vec<u8>, inbound: bool, t: u64, raw: &str) {
    buf.push(if inbound { WIRE_IN } else { WIRE_OUT });
    buf.extend_from_slice(&t.to_le_bytes());
    put_bytes(buf, raw.as_bytes());
}

/// The next of the records' attachments (a batch's raw lines, end to end), read at `t`.
pub(super) fn put_attach(buf: &mut Vec<u8>, t: u64) {
    buf.push(ATTACH);
    buf.extend_from_slice(&t.to_le_bytes());
}

/// A message the agent sent: bytes `start..end` of the current attachment (no copy of the line
/// on the connection's side).
pub(super) fn put_wire_at(buf: &mut Vec<u8>, start: u32, end: u32) {
    buf.push(WIRE_IN_AT);
    buf.extend_from_slice(&start.to_le_bytes());
    buf.extend_from_slice(&end.to_le_bytes());
}

/// An event's line: `data` is its payload, or `None` when it refers to wire line `wire`.
/// `t: None`, `kind`/`session: Same`: what the previous event record said (a flood's updates
/// are one session's, each at its line's time: their records carry neither).
pub(super) struct EventRecord<'a> {
    pub(super) t: Option<u64>,
    pub(super) kind: Field<'a>,
    pub(super) session: Field<'a>,
    pub(super) turn: Option<u64>,
    pub(super) replay: bool,
    pub(super) wire: Option<u64>,
    pub(super) data: &'a str,
}

/// An event record's field.
#[derive(Clone, Copy)]
pub(super) enum Field<'a> {
    None,
    /// As in the previous event record (which had one).
    Same,
    Is(&'a str),
}

const HAS_TURN: u8 = 1;
const REPLAY: u8 = 2;
const HAS_WIRE: u8 = 4;
const HAS_SESSION: u8 = 8;
const SAME_SESSION: u8 = 16;
const SAME_KIND: u8 = 32;
const LINE_T: u8 = 64;

pub(super) fn put_event(buf: &mut Vec<u8>, ev: &EventRecord<'_>) {
    buf.push(EVENT);
    let flag = |on: bool, bit: u8| if on { bit } else { 0 };
    let flags = flag(ev.turn.is_some(), HAS_TURN)
        | flag(ev.replay, REPLAY)
        | flag(ev.wire.is_some(), HAS_WIRE)
        | flag(!matches!(ev.session, Field::None), HAS_SESSION)
        | flag(matches!(ev.session, Field::Same), SAME_SESSION)
        | flag(!matches!(ev.kind, Field::Is(_)), SAME_KIND)
        | flag(ev.t.is_none(), LINE_T);
    buf.push(flags);
    if let Some(t) = ev.t {
        buf.extend_from_slice(&t.to_le_bytes());
    }
    if let Field::Is(kind) = ev.kind {
        put_bytes(buf, kind.as_bytes());
    }
    if let Field::Is(session) = ev.session {
        put_bytes(buf, session.as_bytes());
    }
    if let Some(turn) = ev.turn {
        buf.extend_from_slice(&turn.to_le_bytes());
    }
    match ev.wire {
        Some(n) => buf.extend_from_slice(&n.to_le_bytes()),
        None => put_bytes(buf, ev.data.as_bytes()),
    }
}

/// The header now, with what it has (the handshake has not answered within
/// [`HELD_BEFORE_HEADER`] lines).
pub(super) fn put_header(buf: &mut Vec<u8>) {
    buf.push(HEADER);
}

/// The bytes of a [`put_dropped`] record.
pub(super) const DROPPED_LEN: usize = 9;

/// Lines dropped here (what waits for the thread was at its bound): the `gap` line's place.
/// Returns where its count is, for [`add_dropped`].
pub(super) fn put_dropped(buf: &mut Vec<u8>) -> usize {
    buf.push(DROPPED);
    let at = buf.len();
    buf.extend_from_slice(&1u64.to_le_bytes());
    at
}

/// One more line dropped, counted in the [`put_dropped`] record whose count is at `at`.
pub(super) fn add_dropped(buf: &mut [u8], at: usize) {
    if let Some(count) = buf
        .get_mut(at..at + 8)
        .and_then(|b| <&mut [u8; 8]>::try_from(b).ok())
    {
        *count = (u64::from_le_bytes(*count) + 1).to_le_bytes();
    }
}

/// How many bytes a record of `payload` bytes takes at most (the queue's bound counts them).
pub(super) const fn record_len(payload: usize) -> usize {
    payload + 64
}

fn put_bytes(buf: &mut Vec<u8>, b: &[u8]) {
    // A line is at most the transport's line bound (far below 4 GiB).
    buf.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_le_bytes());
    buf.extend_from_slice(&b[..b.len().min(u32::MAX as usize)]);
}

/// Reads records back (the queue holds only what `put_*` wrote: a short read ends the buffer).
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn u64(&mut self) -> Option<u64> {
        let (b, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*b))
    }
    fn u32(&mut self) -> Option<u32> {
        let (b, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_le_bytes(*b))
    }
    /// A payload: text the connection queued from a `&str` (kept as bytes: checking it again
    /// was a quarter of this thread's time on a flood).
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let (n, rest) = self.0.split_first_chunk::<4>()?;
        let n = u32::from_le_bytes(*n) as usize;
        let b = rest.get(..n)?;
        self.0 = &rest[n..];
        Some(b)
    }
}

/// The recording thread's state: it turns records into the file's lines.
#[derive(Debug)]
pub(super) struct Lines {
    redact: bool,
    /// The header's fields known at the start, completed by the handshake; `None` once written.
    header: Option<Value>,
    /// Lines made before the header was written (each ends in `\n`), and how many.
    held: Vec<u8>,
    held_lines: u64,
    /// Ids (as JSON text) of the agent's `elicitation/create` requests not answered yet.
    elicitations: VecDeque<String>,
    /// Lines the connection dropped (its `gap` records) since [`Lines::take_dropped`].
    dropped: u64,
    /// The latest line's time: a batch's lines (read at once, recorded as the connection gets
    /// to them) are never before a line written earlier.
    last_t: u64,
    /// The attachment `WIRE_IN_AT` records are in now (its records may come in later buffers
    /// than it), and when it was read.
    attached: String,
    attached_t: u64,
    /// The last line's `t` and its text: a batch's lines share the time it was read at, so a
    /// flood's is formatted once per batch, not per line.
    t_text: (u64, Vec<u8>),
    /// Attachments done with, emptied, for the connection's next batches (the writer thread
    /// takes them: [`Lines::take_spent`]).
    spent: Vec<String>,
    /// The last event record's kind and session (a record may say "the same").
    ev_kind: Vec<u8>,
    ev_session: Vec<u8>,
    /// Wire lines made so far (what an event record's `wire` counts: every wire record the
    /// connection queued, in order).
    wire_lines: u64,
    /// The agent's wire line just made still ends `out` there: an update's event made from it
    /// is folded into it (format 3) rather than written as a line of its own.
    open: Option<usize>,
}

impl Lines {
    pub(super) fn new(header: Value, redact: bool) -> Lines {
        Lines {
            redact,
            header: Some(header),
            held: Vec::new(),
            held_lines: 0,
            elicitations: VecDeque::new(),
            dropped: 0,
            last_t: 0,
            attached: String::new(),
            attached_t: 0,
            t_text: (0, Vec::new()),
            spent: Vec::new(),
            ev_kind: Vec::new(),
            ev_session: Vec::new(),
            wire_lines: 0,
            open: None,
        }
    }

    /// Lines without a header (the writer's tests).
    #[cfg(test)]
    pub(super) fn headerless() -> Lines {
        Lines {
            header: None,
            ..Lines::new(Value::Null, false)
        }
    }

    /// The lines of every record in `records` (whose `ATTACH` records are `attachments`, taken
    /// in order), appended to `out`; returns how many.
    pub(super) fn make(
        &mut self,
        records: &[u8],
        attachments: &mut Vec<String>,
        out: &mut Vec<u8>,
    ) -> u64 {
        let mut r = Reader(records);
        let mut next = attachments.drain(..);
        let mut lines = 0;
        while !r.0.is_empty() {
            match self.one(&mut r, &mut next, out) {
                Some(n) => lines += n,
                None => break,
            }
        }
        lines
    }

    /// The attachments done with since the last call, appended to `to`.
    pub(super) fn take_spent(&mut self, to: &mut Vec<String>) {
        to.append(&mut self.spent);
    }

    /// The header (if not written yet) and what was held for it.
    pub(super) fn header_now(&mut self, out: &mut Vec<u8>) -> u64 {
        let Some(header) = self.header.take() else {
            return 0;
        };
        // A `Value` always serializes.
        let _ = serde_json::to_writer(&mut *out, &header);
        out.push(b'\n');
        out.append(&mut self.held);
        1 + std::mem::take(&mut self.held_lines)
    }

    /// One record's line, made in place at the end of `out` (held instead while the header
    /// waits); returns the lines added to `out`.
    fn one(
        &mut self,
        r: &mut Reader<'_>,
        attachments: &mut impl Iterator<Item = String>,
        out: &mut Vec<u8>,
    ) -> Option<u64> {
        // Any line made closes the agent's line for folding; an attachment makes none.
        let open = self.open.take();
        match r.u8()? {
            ATTACH => {
                self.attached_t = r.u64()?;
                let done =
                    std::mem::replace(&mut self.attached, attachments.next().unwrap_or_default());
                keep_spent(&mut self.spent, done);
                self.open = open;
                Some(0)
            }
            WIRE_IN_AT => {
                let (start, end) = (r.u32()? as usize, r.u32()? as usize);
                let attached = std::mem::take(&mut self.attached);
                // Never out of its attachment (the connection wrote both): skipped if it were.
                let made = attached.as_bytes().get(start..end).map(|raw| {
                    let t = self.attached_t.max(self.last_t);
                    let at = out.len();
                    self.wire(out, true, t, raw);
                    self.end_wire_line(out, at, true)
                });
                self.attached = attached;
                self.wire_lines += 1;
                Some(made.unwrap_or(0))
            }
            LINE => {
                let start = out.len();
                out.extend_from_slice(r.bytes()?);
                Some(self.end_line(out, start))
            }
            tag @ (WIRE_IN | WIRE_OUT) => {
                let t = r.u64()?;
                let raw = r.bytes()?;
                let start = out.len();
                self.wire(out, tag == WIRE_IN, t, raw);
                self.wire_lines += 1;
                Some(self.end_wire_line(out, start, tag == WIRE_IN))
            }
            EVENT => {
                let flags = r.u8()?;
                let t = if flags & LINE_T != 0 {
                    self.last_t
                } else {
                    r.u64()?
                };
                // The previous record's kind and session, or this one's (kept for the next).
                let mut kind = std::mem::take(&mut self.ev_kind);
                if flags & SAME_KIND == 0 {
                    kind.clear();
                    kind.extend_from_slice(r.bytes()?);
                }
                let mut session = std::mem::take(&mut self.ev_session);
                if flags & (HAS_SESSION | SAME_SESSION) == HAS_SESSION {
                    session.clear();
                    session.extend_from_slice(r.bytes()?);
                }
                let turn = if flags & HAS_TURN != 0 {
                    Some(r.u64()?)
                } else {
                    None
                };
                let wire = if flags & HAS_WIRE != 0 {
                    Some(r.u64()?)
                } else {
                    None
                };
                let data = if wire.is_some() { &[][..] } else { r.bytes()? };
                let mut written = 0;
                if kind == b"agent_ready" && self.header.is_some() {
                    self.complete_header(data);
                    written = self.header_now(out);
                }
                let replay = flags & REPLAY != 0;
                // The update of the agent's line just made, at its time: folded into it.
                let folds = flags & LINE_T != 0
                    && open.is_some_and(|end| end == out.len())
                    && wire.is_some_and(|n| n + 1 == self.wire_lines)
                    && kind == REFERRING_KIND.as_bytes();
                let made = if folds {
                    Self::fold(out, turn, replay);
                    0
                } else {
                    let start = out.len();
                    let has_session = flags & HAS_SESSION != 0;
                    let ev = (t, &kind[..], has_session.then_some(&session[..]), turn);
                    self.event(out, ev, replay, wire, data);
                    self.end_line(out, start)
                };
                self.ev_kind = kind;
                self.ev_session = session;
                Some(written + made)
            }
            HEADER => Some(self.header_now(out)),
            DROPPED => {
                let n = r.u64()?;
                self.dropped += n;
                Some(self.gap(n, out))
            }
            _ => None,
        }
    }

    /// Ends the line made at `out[start..]`: it stays (1 line), or waits in `held` for the
    /// header (0).
    fn end_line(&mut self, out: &mut Vec<u8>, start: usize) -> u64 {
        out.push(b'\n');
        if self.header.is_some() {
            self.held.extend_from_slice(&out[start..]);
            out.truncate(start);
            self.held_lines += 1;
            return 0;
        }
        1
    }

    /// [`Lines::end_line`] for a wire line; the agent's (`inbound`), kept in `out`, stays open
    /// for its update's event.
    fn end_wire_line(&mut self, out: &mut Vec<u8>, start: usize, inbound: bool) -> u64 {
        let n = self.end_line(out, start);
        if inbound && n == 1 {
            self.open = Some(out.len());
        }
        n
    }

    /// `…}\n` → `…,"event":{"turn":…}}\n`: the update's event in its wire line (format 3; its
    /// kind, session, data and time are the line's).
    fn fold(out: &mut Vec<u8>, turn: Option<u64>, replay: bool) {
        out.truncate(out.len() - 2);
        out.extend_from_slice(b",\"event\":{");
        if let Some(turn) = turn {
            out.extend_from_slice(b"\"turn\":");
            push_u64(out, turn);
        }
        if replay {
            out.extend_from_slice(if turn.is_some() {
                b",\"replay\":true"
            } else {
                b"\"replay\":true"
            });
        }
        out.extend_from_slice(b"}}\n");
    }

    /// Lines the connection dropped since the last call (each made a `gap` line).
    pub(super) fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    /// The `gap` line: `dropped` records were not queued (the queue was full).
    fn gap(&mut self, dropped: u64, out: &mut Vec<u8>) -> u64 {
        let start = out.len();
        out.extend_from_slice(b"{\"gap\":{\"droppedLines\":");
        push_u64(out, dropped);
        out.extend_from_slice(b"}}");
        self.end_line(out, start)
    }

    /// The handshake's answer (`agent_ready`'s data) into the header.
    fn complete_header(&mut self, ready: &[u8]) {
        let Some(header) = &mut self.header else {
            return;
        };
        if let Ok(ready) = serde_json::from_slice::<Value>(ready) {
            header["protocolVersion"] = ready["protocolVersion"].clone();
            let mut init = ready;
            if self.redact {
                redact::message(&mut init, false);
            }
            header["initialize"] = init;
        }
    }

    /// `{"t":…,"dir":…,"msg":…}`.
    fn wire(&mut self, out: &mut Vec<u8>, inbound: bool, t: u64, raw: &[u8]) {
        self.last_t = t;
        let (secret, answer) = if inbound {
            let found = redact::scan(raw);
            if found.elicitation {
                self.remember_elicitation(raw);
            }
            (found.secret, false)
        } else {
            if let Some(header) = &mut self.header
                && memchr::memmem::find(raw, b"\"initialize\"").is_some()
                && let Ok(msg) = serde_json::from_slice::<Value>(raw)
                && msg.get("method").and_then(Value::as_str) == Some("initialize")
            {
                header["clientInfo"] = msg["params"]["clientInfo"].clone();
                header["clientCapabilities"] = msg["params"]["clientCapabilities"].clone();
            }
            let answer = !self.elicitations.is_empty() && self.answers_elicitation(raw);
            (redact::secret(raw), answer)
        };
        out.extend_from_slice(b"{\"t\":");
        self.push_t(out, t);
        out.extend_from_slice(if inbound {
            b",\"dir\":\"in\",\"msg\":"
        } else {
            b",\"dir\":\"out\",\"msg\":"
        });
        self.redacted(out, raw, secret || answer, answer);
        out.push(b'}');
    }

    /// `t` as a line's time (`Seconds`), appended to `out`.
    fn push_t(&mut self, out: &mut Vec<u8>, t: u64) {
        let (of, text) = &mut self.t_text;
        if *of != t || text.is_empty() {
            text.clear();
            Seconds(t).push_to(text);
            *of = t;
        }
        out.extend_from_slice(text);
    }

    fn remember_elicitation(&mut self, raw: &[u8]) {
        if let Ok(msg) = serde_json::from_slice::<Value>(raw)
            && msg.get("method").and_then(Value::as_str) == Some("elicitation/create")
            && let Some(id) = msg.get("id")
        {
            self.elicitations.push_back(id.to_string());
            if self.elicitations.len() > ELICITATIONS_KEPT {
                self.elicitations.pop_front();
            }
        }
    }

    /// Whether `raw` is a response to a remembered `elicitation/create` (forgotten then).
    fn answers_elicitation(&mut self, raw: &[u8]) -> bool {
        let Ok(msg) = serde_json::from_slice::<Value>(raw) else {
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
    fn redacted(&self, out: &mut Vec<u8>, raw: &[u8], suspect: bool, elicitation_answer: bool) {
        if !self.redact || !suspect {
            out.extend_from_slice(raw);
            return;
        }
        // A `Value` always serializes.
        let _ = match serde_json::from_slice::<Value>(raw) {
            Ok(mut msg) => {
                redact::message(&mut msg, elicitation_answer);
                serde_json::to_writer(out, &msg)
            }
            // Not JSON (never, from the connection): recorded as a string.
            Err(_) => serde_json::to_writer(out, &String::from_utf8_lossy(raw)),
        };
    }

    /// `{"t":…,"event":{"kind":…,…}}`: the data, or (format 2) the wire line it came from.
    fn event(
        &mut self,
        out: &mut Vec<u8>,
        (t, kind, session, turn): (u64, &[u8], Option<&[u8]>, Option<u64>),
        replay: bool,
        wire: Option<u64>,
        data: &[u8],
    ) {
        self.last_t = t;
        out.extend_from_slice(b"{\"t\":");
        self.push_t(out, t);
        out.extend_from_slice(b",\"event\":{\"kind\":\"");
        out.extend_from_slice(kind);
        out.push(b'"');
        if let Some(session) = session {
            out.extend_from_slice(b",\"session\":");
            json_string(out, session);
        }
        if let Some(turn) = turn {
            out.extend_from_slice(b",\"turn\":");
            push_u64(out, turn);
        }
        if replay {
            out.extend_from_slice(b",\"replay\":true");
        }
        match wire {
            Some(n) => {
                out.extend_from_slice(b",\"wire\":");
                push_u64(out, n);
            }
            None => {
                out.extend_from_slice(b",\"data\":");
                self.redacted(out, data, redact::secret(data), false);
            }
        }
        out.extend_from_slice(b"}}");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn text(lines: &mut Lines, records: &[u8]) -> (String, u64) {
        let mut out = Vec::new();
        let n = lines.make(records, &mut Vec::new(), &mut out);
        (String::from_utf8(out).unwrap(), n)
    }

    fn ready(t: u64) -> Vec<u8> {
        let mut buf = Vec::new();
        put_event(
            &mut buf,
            &EventRecord {
                t: Some(t),
                kind: Field::Is("agent_ready"),
                session: Field::None,
                turn: None,
                replay: false,
                wire: None,
                data: r#"{"protocolVersion":1,"agentInfo":{"name":"mock"}}"#,
            },
        );
        buf
    }

    /// Before the handshake's answer every line waits; the answer completes the header, which
    /// comes first, then the held lines in order, then the `agent_ready` line.
    #[test]
    fn the_header_comes_first_with_the_handshake_and_the_held_lines_after_it() {
        let mut lines = Lines::new(serde_json::json!({"acpRecording": 2}), true);
        let mut buf = Vec::new();
        put_wire(
            &mut buf,
            false,
            10,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"t"},"clientCapabilities":{"fs":{}}}}"#,
        );
        put_wire(
            &mut buf,
            true,
            20,
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
        );
        assert_eq!(text(&mut lines, &buf), (String::new(), 0), "held");
        // A gap while the header waits is held too: the header stays the first line.
        let mut out = Vec::new();
        assert_eq!(lines.gap(3, &mut out), 0);
        assert!(out.is_empty());
        let (got, n) = text(&mut lines, &ready(30));
        let got: Vec<&str> = got.lines().collect();
        assert_eq!(n, 5);
        let header: Value = serde_json::from_str(got[0]).unwrap();
        assert_eq!(header["protocolVersion"], 1);
        assert_eq!(header["clientInfo"]["name"], "t");
        assert_eq!(header["initialize"]["agentInfo"]["name"], "mock");
        assert!(
            got[1].starts_with(r#"{"t":0.00001,"dir":"out","msg":{"jsonrpc""#),
            "{}",
            got[1]
        );
        assert!(
            got[2].starts_with(r#"{"t":0.00002,"dir":"in","msg":"#),
            "{}",
            got[2]
        );
        assert_eq!(got[3], r#"{"gap":{"droppedLines":3}}"#);
        assert!(
            got[4].starts_with(r#"{"t":0.00003,"event":{"kind":"agent_ready","data":{"#),
            "{}",
            got[4]
        );
    }

    /// The thread remembers the agent's form requests and redacts the host's answers to them,
    /// in the order the connection queued both.
    #[test]
    fn an_answer_to_a_form_is_redacted_by_the_thread() {
        let mut lines = Lines::headerless();
        lines.redact = true;
        let mut buf = Vec::new();
        put_wire(
            &mut buf,
            true,
            1,
            r#"{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"mode":"form"}}"#,
        );
        put_wire(
            &mut buf,
            false,
            2,
            r#"{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{"pin":"1234"}}}"#,
        );
        put_wire(
            &mut buf,
            false,
            3,
            r#"{"jsonrpc":"2.0","id":"e2","result":{"content":{"pin":"5678"}}}"#,
        );
        let (got, n) = text(&mut lines, &buf);
        assert_eq!(n, 3);
        assert!(!got.contains("1234"), "{got}");
        assert!(got.contains("pin"), "the field's name is kept: {got}");
        assert!(got.contains("5678"), "not an answer to a form: {got}");
    }

    /// An update's event refers to its wire line (format 2) or carries its data; a record
    /// that says "the same" kind or session, or "its line's time", gets the previous ones.
    #[test]
    fn events_carry_their_envelope_and_a_wire_reference_or_data() {
        let mut lines = Lines::headerless();
        let mut buf = Vec::new();
        put_wire(&mut buf, true, 1_250_000, r#"{"u":1}"#);
        let ev = EventRecord {
            t: Some(1_500_000),
            kind: Field::Is("session_update"),
            session: Field::Is("s\"1"),
            turn: Some(4),
            replay: true,
            wire: Some(7),
            data: "",
        };
        put_event(&mut buf, &ev);
        put_event(
            &mut buf,
            &EventRecord {
                wire: None,
                data: r#"{"x":1}"#,
                turn: None,
                replay: false,
                kind: Field::Same,
                session: Field::Same,
                ..ev
            },
        );
        put_wire(&mut buf, true, 2_000_000, r#"{"u":2}"#);
        put_event(
            &mut buf,
            &EventRecord {
                t: None,
                kind: Field::Same,
                session: Field::Same,
                wire: Some(8),
                ..ev
            },
        );
        put_event(
            &mut buf,
            &EventRecord {
                t: Some(2_000_000),
                kind: Field::Is("agent_exited"),
                session: Field::None,
                turn: None,
                replay: false,
                wire: None,
                data: "{}",
            },
        );
        let (got, n) = text(&mut lines, &buf);
        assert_eq!(n, 6);
        let got: Vec<&str> = got.lines().filter(|l| l.contains("event")).collect();
        assert_eq!(
            got,
            [
                "{\"t\":1.5,\"event\":{\"kind\":\"session_update\",\"session\":\"s\\\"1\",\"turn\":4,\"replay\":true,\"wire\":7}}",
                "{\"t\":1.5,\"event\":{\"kind\":\"session_update\",\"session\":\"s\\\"1\",\"data\":{\"x\":1}}}",
                "{\"t\":2,\"event\":{\"kind\":\"session_update\",\"session\":\"s\\\"1\",\"turn\":4,\"replay\":true,\"wire\":8}}",
                "{\"t\":2,\"event\":{\"kind\":\"agent_exited\",\"data\":{}}}",
            ]
        );
    }

    /// Format 3: an update's event at its line's time, right after the agent's line it was made
    /// from, is folded into that line; anything else between them, a line of the host's, another
    /// line's index or a line already written out leaves it a line of its own.
    #[test]
    fn an_update_right_after_its_line_is_folded_into_it() {
        let update = |wire: u64, turn: Option<u64>, replay: bool| {
            let mut buf = Vec::new();
            put_event(
                &mut buf,
                &EventRecord {
                    t: None,
                    kind: Field::Is("session_update"),
                    session: Field::Is("s"),
                    turn,
                    replay,
                    wire: Some(wire),
                    data: "",
                },
            );
            buf
        };
        let mut lines = Lines::headerless();
        let mut buf = Vec::new();
        put_wire(&mut buf, true, 1_000_000, r#"{"u":0}"#);
        buf.extend(update(0, Some(2), false));
        put_attach(&mut buf, 1_100_000); // makes no line: the next still folds
        put_wire(&mut buf, true, 1_250_000, r#"{"u":1}"#);
        put_attach(&mut buf, 1_300_000);
        buf.extend(update(1, None, true));
        put_wire(&mut buf, false, 1_500_000, r#"{"h":2}"#);
        buf.extend(update(2, Some(2), false)); // the host's line: never folded
        put_wire(&mut buf, true, 2_000_000, r#"{"u":3}"#);
        buf.extend(update(2, Some(2), false)); // not the line just made
        let (got, n) = text(&mut lines, &buf);
        assert_eq!(
            got.lines().collect::<Vec<_>>(),
            [
                r#"{"t":1,"dir":"in","msg":{"u":0},"event":{"turn":2}}"#,
                r#"{"t":1.25,"dir":"in","msg":{"u":1},"event":{"replay":true}}"#,
                r#"{"t":1.5,"dir":"out","msg":{"h":2}}"#,
                r#"{"t":1.5,"event":{"kind":"session_update","session":"s","turn":2,"wire":2}}"#,
                r#"{"t":2,"dir":"in","msg":{"u":3}}"#,
                r#"{"t":2,"event":{"kind":"session_update","session":"s","turn":2,"wire":2}}"#,
            ]
        );
        assert_eq!(n, 6, "a folded event adds no line");
        // The agent's line in one buffer, its update in the next: folded while the chunk still
        // ends with the line; a line of its own once the chunk was written out.
        let mut lines = Lines::headerless();
        let mut out = Vec::new();
        let mut first = Vec::new();
        put_wire(&mut first, true, 1_000_000, r#"{"u":0}"#);
        lines.make(&first, &mut Vec::new(), &mut out);
        lines.make(&update(0, Some(1), false), &mut Vec::new(), &mut out);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "{\"t\":1,\"dir\":\"in\",\"msg\":{\"u\":0},\"event\":{\"turn\":1}}\n"
        );
        out.clear();
        let mut second = Vec::new();
        put_wire(&mut second, true, 2_000_000, r#"{"u":1}"#);
        lines.make(&second, &mut Vec::new(), &mut out);
        out.clear(); // written out
        assert_eq!(
            lines.make(&update(1, Some(1), false), &mut Vec::new(), &mut out),
            1
        );
        assert_eq!(
            String::from_utf8_lossy(&out),
            "{\"t\":2,\"event\":{\"kind\":\"session_update\",\"session\":\"s\",\"turn\":1,\"wire\":1}}\n"
        );
    }

    /// A cut record (never written by the connection, which writes whole ones) ends the buffer
    /// rather than being read past.
    #[test]
    fn a_short_record_ends_the_buffer() {
        let mut lines = Lines::headerless();
        let mut buf = Vec::new();
        put_wire(&mut buf, true, 1, r#"{"a":1}"#);
        put_wire(&mut buf, true, 2, r#"{"b":2}"#);
        buf.truncate(buf.len() - 3);
        let (got, n) = text(&mut lines, &buf);
        assert_eq!(n, 1);
        assert!(got.contains(r#"{"a":1}"#));
    }
}
