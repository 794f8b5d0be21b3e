//! The replay itself: the recorded agent's side of one connection, played towards a live host.
//!
//! The recording is walked in order. An agent entry is sent (at the recorded pace, or at once);
//! a host entry is waited for. Host messages are matched as they come, not by position: a request
//! or notification to the first unmatched recorded one of the same method, an answer to the
//! recorded answer to the same agent request, so two messages the host sends concurrently may
//! come in either order. What the host sends that the recording does not hold, or holds with
//! other fields, is a divergence; so is a recorded host message that does not come within
//! `wait`, or at all before the host closes the connection.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::diff::{self, Bindings};
use super::recording::{Recording, What};
use super::{Divergence, DivergenceKind, Pace, ReplayOptions, Report};
use crate::wire::framing::{Frame, LineReader};

/// The longest line read from the host.
const MAX_HOST_LINE: usize = 64 << 20;
/// Divergences kept in the report (the count goes on).
const MAX_DIVERGENCES: usize = 1000;
/// The JSON-RPC error code of the answer to a request the recording does not have.
const DIVERGED: i64 = -32603;

/// The cancellation of a request by its id (ACP v2; unstable in v1).
const CANCEL_REQUEST: &str = "$/cancel_request";

/// What the host sent, read by the reader task.
enum HostLine {
    Message(Value),
    Invalid(String),
}

/// A JSON-RPC message's shape.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Request { method: String, id: String },
    Notification { method: String },
    Response { id: String },
    Other,
}

fn shape(msg: &Value) -> Shape {
    let id = msg
        .get("id")
        .filter(|id| !id.is_null())
        .map(Value::to_string);
    match (msg.get("method").and_then(Value::as_str), id) {
        (Some(m), Some(id)) => Shape::Request {
            method: m.into(),
            id,
        },
        (Some(m), None) => Shape::Notification { method: m.into() },
        (None, Some(id)) => Shape::Response { id },
        (None, None) => Shape::Other,
    }
}

/// Play `recording`'s agent side over `input`/`output` (the host's view: its stdin and stdout),
/// writing the agent's stderr lines and the replay's own readable lines (`replay: …`) to
/// `stderr`. Returns when the host closes `input`, or when the recorded agent exited on its own.
pub async fn serve<R, W, E>(
    recording: &Recording,
    options: &ReplayOptions,
    input: R,
    output: W,
    stderr: E,
) -> Report
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
    E: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::channel(64);
    let reader = tokio::spawn(read_host(input, tx));
    let mut engine = Engine::new(recording, options, output, stderr, rx);
    engine.run().await;
    reader.abort();
    engine.finish().await
}

async fn read_host<R: AsyncRead + Unpin>(input: R, tx: mpsc::Sender<HostLine>) {
    let mut lines = LineReader::new(input, MAX_HOST_LINE);
    while let Ok(Some(frame)) = lines.next_frame().await {
        let line = match frame {
            Frame::Line(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(msg) if msg.is_object() => HostLine::Message(msg),
                _ if bytes.iter().all(u8::is_ascii_whitespace) => continue,
                _ => HostLine::Invalid(String::from_utf8_lossy(&bytes).into_owned()),
            },
            Frame::TooLong { len } => HostLine::Invalid(format!("<a line of {len} bytes>")),
        };
        if tx.send(line).await.is_err() {
            return;
        }
    }
}

struct Engine<'a, W, E> {
    rec: &'a Recording,
    options: &'a ReplayOptions,
    out: W,
    err: E,
    input: mpsc::Receiver<HostLine>,
    eof: bool,
    /// Per entry: each entry's shape (wire entries only).
    shapes: Vec<Shape>,
    /// Per host entry: matched (or given up on).
    matched: Vec<bool>,
    /// Per matched host request: the id the live host gave it.
    live_id: Vec<Option<Value>>,
    /// Per agent answer: the host request entry it answers.
    answers: Vec<Option<usize>>,
    /// Agent requests sent and not answered yet: id → entry.
    asked: HashMap<String, usize>,
    bindings: Bindings,
    ignore: Vec<String>,
    report: Report,
    /// The last entry done: its recorded time and when it was done.
    anchor: (f64, Instant),
    /// The recorded agent exited on its own at this point.
    exited: Option<Option<i32>>,
}

impl<'a, W: AsyncWrite + Unpin, E: AsyncWrite + Unpin> Engine<'a, W, E> {
    fn new(
        rec: &'a Recording,
        options: &'a ReplayOptions,
        out: W,
        err: E,
        input: mpsc::Receiver<HostLine>,
    ) -> Self {
        let shapes: Vec<Shape> = rec
            .entries
            .iter()
            .map(|e| match &e.what {
                What::Agent(m) | What::AgentLossy(m) | What::Host(m) => shape(m),
                _ => Shape::Other,
            })
            .collect();
        // An agent answer answers the latest host request with its id before it.
        let mut last_request: HashMap<&str, usize> = HashMap::new();
        let mut answers = vec![None; shapes.len()];
        for (i, (entry, s)) in rec.entries.iter().zip(&shapes).enumerate() {
            match (&entry.what, s) {
                (What::Host(_), Shape::Request { id, .. }) => {
                    last_request.insert(id, i);
                }
                (What::Agent(_) | What::AgentLossy(_), Shape::Response { id }) => {
                    answers[i] = last_request.get(id.as_str()).copied();
                }
                _ => {}
            }
        }
        let mut ignore = options.ignore.clone();
        // Who the host says it is is not how it behaves (and differs between faces and versions).
        ignore.push("params.clientInfo".into());
        let expected = rec
            .entries
            .iter()
            .filter(|e| matches!(e.what, What::Host(_)))
            .count();
        let mut notes = Vec::new();
        if !rec.ended {
            notes.push("the recording has no `end` line: it was cut short".into());
        }
        if rec.truncated {
            notes.push("the recording reached its maxBytes: what followed was not recorded".into());
        }
        if rec.dropped_lines > 0 {
            notes.push(format!(
                "the recorder dropped {} lines to keep up: they are not replayed",
                rec.dropped_lines
            ));
        }
        Engine {
            rec,
            options,
            out,
            err,
            input,
            eof: false,
            matched: vec![false; shapes.len()],
            live_id: vec![None; shapes.len()],
            answers,
            shapes,
            asked: HashMap::new(),
            bindings: Bindings::default(),
            ignore,
            report: Report {
                recording: rec.path.display().to_string(),
                pace: options.pace,
                complete: false,
                agent_messages_sent: 0,
                host_messages_expected: expected,
                host_messages_matched: 0,
                divergence_count: 0,
                divergences: Vec::new(),
                notes,
                agent_exited: false,
                exit_code: None,
            },
            anchor: (0.0, Instant::now()),
            exited: None,
        }
    }

    async fn run(&mut self) {
        for note in self.report.notes.clone() {
            self.say(&format!("replay: note: {note}")).await;
        }
        for i in 0..self.rec.entries.len() {
            let entry = &self.rec.entries[i];
            match &entry.what {
                What::Host(_) => self.expect(i).await,
                What::Agent(msg) => {
                    self.pace(entry.t).await;
                    self.send_agent(i, msg.clone(), false).await;
                }
                What::AgentLossy(msg) => {
                    self.pace(entry.t).await;
                    self.send_agent(i, msg.clone(), true).await;
                }
                What::Stderr { start, bytes } => {
                    self.pace(entry.t).await;
                    if filled(&mut self.err, start, *bytes).await.is_err() {
                        // A replay without a stderr reader goes on without it.
                    }
                }
                What::Noise { start, bytes } => {
                    self.pace(entry.t).await;
                    if filled(&mut self.out, start, *bytes).await.is_err() {
                        self.eof = true;
                    }
                }
                What::TooLong { bytes } => {
                    self.pace(entry.t).await;
                    if filled(&mut self.out, "", *bytes).await.is_err() {
                        self.eof = true;
                    }
                }
                What::Exited { code } => {
                    self.exited = Some(*code);
                    break;
                }
            }
            if self.eof {
                break;
            }
        }
        // What the host still sends is not in the recording; the replay ends with the host's
        // connection, or at once when the recorded agent exited.
        while self.exited.is_none() && !self.eof {
            match self.input.recv().await {
                Some(line) => self.on_host(line).await,
                None => self.eof = true,
            }
        }
        self.eof_missing().await;
    }

    /// Wait for host entry `i` (matched as the host's messages come).
    async fn expect(&mut self, i: usize) {
        let deadline = self.options.wait.map(|w| Instant::now() + w);
        while !self.matched[i] && !self.eof {
            let line = match deadline {
                Some(d) => match tokio::time::timeout_at(d, self.input.recv()).await {
                    Ok(line) => line,
                    Err(_) => break,
                },
                None => self.input.recv().await,
            };
            match line {
                Some(line) => self.on_host(line).await,
                None => self.eof = true,
            }
        }
        if self.eof && !self.matched[i] {
            return; // reported once, by `eof_missing`
        }
        if !self.matched[i] {
            self.matched[i] = true;
            let kind = match self.shapes[i] {
                Shape::Response { .. } => DivergenceKind::MissingAnswer,
                _ => DivergenceKind::MissingMessage,
            };
            let waited = self.options.wait.unwrap_or_default();
            let what = format!("the host did not send it within {} ms", waited.as_millis());
            self.diverge(kind, Some(i), None, Vec::new(), 0, what).await;
        }
        self.anchor = (self.rec.entries[i].t, Instant::now());
    }

    /// The host closed the connection: the first recorded host message that did not come.
    async fn eof_missing(&mut self) {
        let left: Vec<usize> = (0..self.rec.entries.len())
            .filter(|&i| matches!(self.rec.entries[i].what, What::Host(_)) && !self.matched[i])
            .collect();
        let Some(&first) = left.first() else {
            return;
        };
        let kind = match self.shapes[first] {
            Shape::Response { .. } => DivergenceKind::MissingAnswer,
            _ => DivergenceKind::MissingMessage,
        };
        let what = if self.exited.is_some() {
            format!(
                "the recorded agent exited before it came ({} recorded host messages in all did not come)",
                left.len()
            )
        } else {
            format!(
                "the host closed the connection before sending it ({} recorded host messages in all did not come)",
                left.len()
            )
        };
        self.diverge(kind, Some(first), None, Vec::new(), 0, what)
            .await;
    }

    /// Sleep until the recorded time `t` (after the last entry done), taking the host's messages
    /// meanwhile.
    async fn pace(&mut self, t: f64) {
        if self.options.pace == Pace::Fast {
            return;
        }
        let delay = Duration::from_secs_f64((t - self.anchor.0).clamp(0.0, 3600.0));
        let until = self.anchor.1 + delay;
        while !self.eof {
            match tokio::time::timeout_at(until, self.input.recv()).await {
                Ok(Some(line)) => self.on_host(line).await,
                Ok(None) => self.eof = true,
                Err(_) => break,
            }
        }
        self.anchor = (t, Instant::now().max(until));
    }

    async fn send_agent(&mut self, i: usize, mut msg: Value, lossy: bool) {
        match &self.shapes[i] {
            Shape::Response { .. } => {
                if let Some(request) = self.answers[i] {
                    match self.live_id[request].clone() {
                        Some(id) => msg["id"] = id,
                        // The request never came (reported): nothing to answer.
                        None => return,
                    }
                }
            }
            Shape::Request { id, .. } => {
                self.asked.insert(id.clone(), i);
            }
            _ => {}
        }
        self.bindings.apply(&mut msg);
        let line = msg.to_string();
        if lossy {
            // Each U+FFFD the host decoded was a byte that is not UTF-8: 0xFF is one.
            let mut bytes = Vec::with_capacity(line.len() + 1);
            let mut rest = line.as_str();
            while let Some(at) = rest.find('\u{FFFD}') {
                bytes.extend_from_slice(&rest.as_bytes()[..at]);
                bytes.push(0xFF);
                rest = &rest[at + '\u{FFFD}'.len_utf8()..];
            }
            bytes.extend_from_slice(rest.as_bytes());
            bytes.push(b'\n');
            if self.out.write_all(&bytes).await.is_err() || self.out.flush().await.is_err() {
                self.eof = true;
            }
        } else {
            self.write_out(&line).await;
        }
        self.report.agent_messages_sent += 1;
        self.anchor = (self.rec.entries[i].t, Instant::now());
    }

    async fn write_out(&mut self, line: &str) {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        if self.out.write_all(&buf).await.is_err() || self.out.flush().await.is_err() {
            // The host stopped reading: it is gone.
            self.eof = true;
        }
    }

    async fn say(&mut self, text: &str) {
        let _ = self.err.write_all(format!("{text}\n").as_bytes()).await;
        let _ = self.err.flush().await;
    }

    /// A message from the host: matched against the recording, or a divergence.
    async fn on_host(&mut self, line: HostLine) {
        let msg = match line {
            HostLine::Message(msg) => msg,
            HostLine::Invalid(text) => {
                let live = Value::String(text);
                let what = "the host sent a line that is not a JSON-RPC message".to_owned();
                self.diverge_live(DivergenceKind::InvalidMessage, live, what)
                    .await;
                return;
            }
        };
        match shape(&msg) {
            Shape::Request { method, .. } => self.on_host_call(msg, &method, true).await,
            Shape::Notification { method } => self.on_host_call(msg, &method, false).await,
            Shape::Response { id } => self.on_host_answer(msg, &id).await,
            Shape::Other => {
                let what = "the host sent a message with neither a method nor an id".to_owned();
                self.diverge_live(DivergenceKind::InvalidMessage, msg, what)
                    .await;
            }
        }
    }

    async fn on_host_call(&mut self, msg: Value, method: &str, request: bool) {
        let found = (0..self.rec.entries.len()).find(|&i| {
            !self.matched[i]
                && matches!(self.rec.entries[i].what, What::Host(_))
                && match &self.shapes[i] {
                    Shape::Request { method: m, .. } => request && m == method,
                    Shape::Notification { method: m } => !request && m == method,
                    _ => false,
                }
        });
        let Some(i) = found else {
            let what = format!(
                "the recording has no{} `{method}` {} from the host here",
                if self.report.host_messages_matched > 0 {
                    " further"
                } else {
                    ""
                },
                if request { "request" } else { "notification" }
            );
            if request {
                let id = msg["id"].clone();
                let divergence = self
                    .diverge_live(DivergenceKind::UnexpectedMessage, msg, what.clone())
                    .await;
                let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": DIVERGED,
                    "message": format!("replay: {what}"),
                    "data": {"replayDivergence": divergence},
                }});
                self.write_out(&answer.to_string()).await;
            } else {
                self.diverge_live(DivergenceKind::UnexpectedMessage, msg, what)
                    .await;
            }
            return;
        };
        if request {
            self.live_id[i] = Some(msg["id"].clone());
        }
        let mut msg = msg;
        if method == CANCEL_REQUEST {
            self.recorded_request_id(&mut msg);
        }
        let what = format!("`{method}` with other params than recorded");
        self.matched_with(i, msg, &["params"], DivergenceKind::ParamsDiffer, what)
            .await;
    }

    /// The host's `$/cancel_request` names one of its requests by the id it gave it: compared as
    /// the id the recorded host gave the same request (the two hosts may number differently). A
    /// request the replay did not match keeps its live id (and differs).
    fn recorded_request_id(&self, msg: &mut Value) {
        let Some(live) = msg.pointer("/params/requestId").cloned() else {
            return;
        };
        let recorded = self
            .live_id
            .iter()
            .position(|id| id.as_ref() == Some(&live))
            .and_then(|j| match &self.rec.entries[j].what {
                What::Host(m) => m.get("id").cloned(),
                _ => None,
            });
        if let Some(id) = recorded {
            msg["params"]["requestId"] = id;
        }
    }

    /// Host entry `i` came as `msg`: counted, and its `fields` compared with the recording's
    /// (a divergence of `kind` when they differ).
    async fn matched_with(
        &mut self,
        i: usize,
        msg: Value,
        fields: &[&str],
        kind: DivergenceKind,
        what: String,
    ) {
        self.matched[i] = true;
        self.report.host_messages_matched += 1;
        let What::Host(recorded) = &self.rec.entries[i].what else {
            return;
        };
        let pick = |m: &Value| {
            let mut o = serde_json::Map::new();
            for key in fields {
                if let Some(v) = m.get(*key) {
                    o.insert((*key).into(), v.clone());
                }
            }
            Value::Object(o)
        };
        let (differences, count) = diff::compare(
            &pick(recorded),
            &pick(&msg),
            &self.ignore,
            &mut self.bindings,
        );
        if count > 0 {
            self.diverge(kind, Some(i), Some(msg), differences, count, what)
                .await;
        }
    }

    async fn on_host_answer(&mut self, msg: Value, id: &str) {
        let Some(asked) = self.asked.remove(id) else {
            let what = format!("the host answered id {id}, which the agent's side did not ask");
            self.diverge_live(DivergenceKind::UnexpectedMessage, msg, what)
                .await;
            return;
        };
        let found = (asked + 1..self.rec.entries.len()).find(|&i| {
            !self.matched[i]
                && matches!(self.rec.entries[i].what, What::Host(_))
                && self.shapes[i] == Shape::Response { id: id.to_owned() }
        });
        let method = match &self.shapes[asked] {
            Shape::Request { method, .. } => method.clone(),
            _ => String::new(),
        };
        let Some(i) = found else {
            // The recording ends before the recorded host answered: nothing to compare with.
            return;
        };
        let what = format!("the host answered `{method}` otherwise than recorded");
        self.matched_with(
            i,
            msg,
            &["result", "error"],
            DivergenceKind::AnswerDiffers,
            what,
        )
        .await;
    }

    async fn diverge_live(&mut self, kind: DivergenceKind, live: Value, what: String) -> Value {
        self.diverge(kind, None, Some(live), Vec::new(), 0, what)
            .await
    }

    /// Record a divergence, say it on stderr; returns it as JSON.
    async fn diverge(
        &mut self,
        kind: DivergenceKind,
        entry: Option<usize>,
        live: Option<Value>,
        differences: Vec<diff::Difference>,
        count: usize,
        what: String,
    ) -> Value {
        let recorded = entry.and_then(|i| match &self.rec.entries[i].what {
            What::Host(m) => Some(m.clone()),
            _ => None,
        });
        let method = [recorded.as_ref(), live.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|m| m.get("method").and_then(Value::as_str))
            .map(str::to_owned)
            .or_else(|| {
                // An answer: the method of the agent request it answers.
                let id = recorded.as_ref().or(live.as_ref())?.get("id")?.to_string();
                (0..self.rec.entries.len())
                    .rev()
                    .find_map(|i| match &self.shapes[i] {
                        Shape::Request { method, id: rid }
                            if *rid == id && matches!(self.rec.entries[i].what, What::Agent(_)) =>
                        {
                            Some(method.clone())
                        }
                        _ => None,
                    })
            });
        let session = [recorded.as_ref(), live.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|m| m.pointer("/params/sessionId").and_then(Value::as_str))
            .map(str::to_owned);
        let d = Divergence {
            kind,
            line: entry.map(|i| self.rec.entries[i].line),
            method,
            session,
            message: what,
            more_differences: count.saturating_sub(differences.len()),
            differences,
            recorded,
            live,
        };
        self.report.divergence_count += 1;
        let n = self.report.divergence_count;
        let text = d.describe(n);
        self.say(&text).await;
        let json = serde_json::to_value(&d).unwrap_or(Value::Null);
        if self.report.divergences.len() < MAX_DIVERGENCES {
            self.report.divergences.push(d);
        }
        json
    }

    async fn finish(mut self) -> Report {
        self.report.complete = self.report.host_messages_matched
            == self.report.host_messages_expected
            && self.report.divergence_count == 0;
        if let Some(code) = self.exited {
            self.report.agent_exited = true;
            self.report.exit_code = code;
        }
        let r = &self.report;
        let summary = format!(
            "replay: ended: {} divergence{}; {} of {} recorded host messages matched, {} agent messages sent",
            r.divergence_count,
            if r.divergence_count == 1 { "" } else { "s" },
            r.host_messages_matched,
            r.host_messages_expected,
            r.agent_messages_sent,
        );
        self.say(&summary).await;
        // Written before the connection ends, so whoever waits for the agent's exit can read it.
        if let Some(path) = &self.options.report {
            let text = serde_json::to_string_pretty(&self.report).unwrap_or_default() + "\n";
            if let Err(e) = tokio::fs::write(path, text).await {
                let text = format!("replay: cannot write the report {}: {e}", path.display());
                self.say(&text).await;
            }
        }
        let _ = self.out.shutdown().await;
        self.report
    }
}

/// Write `start` (newlines made spaces: one line), then filler up to `bytes` in all, then a
/// newline, in chunks (a recorded length is never held in memory).
async fn filled<W: AsyncWrite + Unpin>(w: &mut W, start: &str, bytes: u64) -> std::io::Result<()> {
    const CHUNK: [u8; 16 << 10] = [b'x'; 16 << 10];
    let start = start.replace(['\n', '\r'], " ");
    w.write_all(start.as_bytes()).await?;
    let mut left = bytes.saturating_sub(start.len() as u64);
    while left > 0 {
        let n = left.min(CHUNK.len() as u64) as usize;
        w.write_all(&CHUNK[..n]).await?;
        left -= n as u64;
    }
    w.write_all(b"\n").await?;
    w.flush().await
}
