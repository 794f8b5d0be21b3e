//! Event output: NDJSON (`--json`) or a readable transcript.
//!
//! stdout carries the transcript (or nothing but event JSON lines); warnings, agent stderr (with
//! `--verbose`) and the permission prompt go to stderr.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufWriter, IsTerminal, Stdout, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use acp_host::{Event, EventKind, EventStream, display};
use serde_json::Value;

use crate::order::SharedOrder;

/// What was written last on stdout, so streamed text and bracketed lines stay tidy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    None,
    Message,
    Thought,
}

/// The process's stdout, shared by the event printer and the rare other writer (the permission
/// prompt makes sure it starts on a fresh line).
#[derive(Debug)]
pub struct Out {
    w: BufWriter<Stdout>,
    at_line_start: bool,
    stream: Stream,
    color: bool,
}

pub type SharedOut = Arc<Mutex<Out>>;

impl Out {
    pub fn shared() -> SharedOut {
        let color = std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::env::var("TERM").map_or(true, |t| t != "dumb");
        Arc::new(Mutex::new(Out {
            w: BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            at_line_start: true,
            stream: Stream::None,
            color,
        }))
    }

    /// Write errors (a closed pipe) are ignored: the events are still drained to the end.
    fn raw(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        crate::status::clear();
        let _ = self.w.write_all(s.as_bytes());
        self.at_line_start = s.ends_with('\n');
    }

    /// End a partial line, if any.
    pub fn newline(&mut self) {
        if !self.at_line_start {
            self.raw("\n");
        }
        self.stream = Stream::None;
    }

    /// One complete line (bracketed status lines), dimmed when `dim` and colours are on.
    pub fn line(&mut self, text: &str, dim: bool) {
        self.newline();
        if dim && self.color {
            self.raw(&format!("\x1b[2m{text}\x1b[0m\n"));
        } else {
            self.raw(&format!("{text}\n"));
        }
    }

    fn chunk(&mut self, stream: Stream, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.stream != stream {
            self.newline();
            if stream == Stream::Thought && !self.color {
                self.raw("[thought] ");
            }
            self.stream = stream;
        }
        if stream == Stream::Thought && self.color {
            let _ = self.w.write_all(b"\x1b[2;3m");
            let _ = self.w.write_all(text.as_bytes());
            let _ = self.w.write_all(b"\x1b[0m");
            self.at_line_start = text.ends_with('\n');
        } else {
            self.raw(text);
        }
    }

    pub fn flush(&mut self) {
        let _ = self.w.flush();
    }
}

pub fn lock(out: &SharedOut) -> MutexGuard<'_, Out> {
    out.lock().unwrap_or_else(|p| p.into_inner())
}

/// Write one line to stderr (the caller flushes stdout first when ordering matters).
pub fn eprint_line(text: &str) {
    crate::status::clear();
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{text}");
}

/// Agent-provided running text (message and thought chunks, stderr lines): what could reorder or
/// hide text is escaped visibly as `<U+XXXX>` (controls, bidi and other format characters, ...);
/// newlines, tabs and ordinary non-ASCII text (accents, CJK, emoji sequences) are kept
/// ([`acp_host::display::escape_text`]).
pub fn clean(s: &str) -> Cow<'_, str> {
    display::escape_text(s)
}

/// Agent-provided text for a single line, whole: newlines, CRs and tabs folded to spaces, then
/// every control, format, separator, private-use, unassigned and default-ignorable character
/// escaped as `<U+XXXX>` ([`acp_host::display::escape`]), trailing whitespace trimmed. What a
/// prompt asks consent for is shown this way, never shortened.
pub fn full_line(s: &str) -> String {
    let folded: String = s
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let mut out = display::escape(&folded).into_owned();
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out
}

/// Agent-provided text for a transcript line: [`full_line`], shortened to 200 characters.
pub fn one_line(s: &str) -> String {
    let mut out = full_line(s);
    if out.chars().count() > 200 {
        out = out.chars().take(199).collect();
        out.push('…');
    }
    out
}

/// Our own text for a single line, not shortened: whitespace runs (newlines included) folded to
/// one space, anything unsafe escaped as in [`full_line`] (it may quote a file name).
pub fn flat_line(s: &str) -> String {
    s.split(|c: char| c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(|w| display::escape(w).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Turns events into output. Owned by the printer task.
#[derive(Debug)]
pub struct Renderer {
    out: SharedOut,
    json: bool,
    verbose: bool,
    /// toolCallId → (title, kind)
    tools: HashMap<String, (String, String)>,
    /// permission request id → title
    permissions: HashMap<u64, String>,
    /// Agents being relaunched after a terminal login: their `agent_exited` does not end output.
    relaunching: Relaunching,
    /// Held after a permission request's event while its question is asked.
    order: SharedOrder,
    /// The agent's command line, shown when it sends no name.
    command: String,
}

/// Ids of agents `acph run` is replacing (terminal login): set before the old one is shut down.
pub type Relaunching = std::sync::Arc<std::sync::Mutex<std::collections::HashSet<u64>>>;

impl Renderer {
    pub fn new(
        out: SharedOut,
        json: bool,
        verbose: bool,
        relaunching: Relaunching,
        order: SharedOrder,
        command: String,
    ) -> Renderer {
        Renderer {
            out,
            json,
            verbose,
            tools: HashMap::new(),
            permissions: HashMap::new(),
            relaunching,
            order,
            command,
        }
    }

    /// Print events until the first `agent_exited` of an agent that is not being relaunched
    /// (printed too) or the end of the stream.
    pub async fn pump(mut self, events: EventStream) {
        let mut batch = Vec::with_capacity(256);
        loop {
            batch.clear();
            if events.next_batch(&mut batch, 256).await == 0 {
                break;
            }
            if self.handle_batch(&batch).await {
                break;
            }
        }
        lock(&self.out).flush();
        self.order.close();
    }

    /// Returns true once `agent_exited` was handled.
    async fn handle_batch(&mut self, batch: &[Event]) -> bool {
        let mut rest = batch;
        loop {
            let (done, held) = self.print_some(&mut rest);
            if let Some(id) = held {
                // Shown: the question may follow; nothing more until it is answered.
                self.order.shown(id);
                self.order.wait_answered(id).await;
            }
            if done || rest.is_empty() {
                return done;
            }
        }
    }

    /// Print events from the front of `rest` up to the end, an `agent_exited` that ends the
    /// output (`.0`) or a permission request (`.1`, its id: the printer holds there).
    fn print_some(&mut self, rest: &mut &[Event]) -> (bool, Option<u64>) {
        let shared = self.out.clone();
        let mut out = lock(&shared);
        while let Some((ev, tail)) = rest.split_first() {
            *rest = tail;
            if ev.kind == EventKind::Progress {
                crate::status::progress(&ev.data_value());
            }
            if self.json {
                if ev.kind != EventKind::Progress || !crate::status::own_events() {
                    out.raw(&ev.to_json());
                    out.raw("\n");
                }
            } else {
                self.readable(&mut out, ev);
            }
            if ev.kind == EventKind::PermissionRequested
                && let Some(id) = ev.data_value().get("requestId").and_then(Value::as_u64)
            {
                out.flush();
                return (false, Some(id));
            }
            if ev.kind == EventKind::AgentExited
                && !self
                    .relaunching
                    .lock()
                    .map(|r| r.contains(&ev.agent))
                    .unwrap_or(false)
            {
                out.flush();
                return (true, None);
            }
        }
        out.flush();
        (false, None)
    }

    /// A warning on stderr, after what stdout already shows.
    fn warn(&self, out: &mut Out, text: &str) {
        out.flush();
        eprint_line(&format!("acph: warning: {text}"));
    }

    fn readable(&mut self, out: &mut Out, ev: &Event) {
        let data = ev.data_value();
        match ev.kind {
            EventKind::AgentReady => {
                let info = data.get("agentInfo").cloned().unwrap_or(Value::Null);
                let proto = data.get("protocolVersion").cloned().unwrap_or(Value::Null);
                let name = str_at(&info, "title").or_else(|| str_at(&info, "name"));
                let line = match name.filter(|n| !n.trim().is_empty()) {
                    Some(name) => match str_at(&info, "version").filter(|v| !v.is_empty()) {
                        Some(v) => format!("[agent] {name} {v} (protocol {proto})"),
                        None => format!("[agent] {name} (protocol {proto})"),
                    },
                    // No name: what was started, so the line still says which agent this is.
                    None => format!("[agent] {} (protocol {proto}; no name sent)", self.command),
                };
                out.line(&one_line(&line), true);
            }
            EventKind::SessionOpened => {
                let id = str_at(&data, "sessionId").unwrap_or("?");
                let mut line = format!("[session] {id}");
                if let Some(cwd) = str_at(&data, "cwd") {
                    line.push_str(&format!(" in {cwd}"));
                }
                if let Some(mode) = data.get("modes").and_then(|m| str_at(m, "currentModeId")) {
                    line.push_str(&format!(" (mode: {mode})"));
                }
                out.line(&one_line(&line), true);
            }
            EventKind::SessionUpdate => self.update(out, &data),
            EventKind::TurnEnded => {
                // A failed turn is reported once, by the caller, on stderr.
                if let Some(reason) = str_at(&data, "stopReason") {
                    out.line(&format!("[turn ended: {}]", one_line(reason)), false);
                }
            }
            EventKind::PermissionRequested => {
                let tool = data.get("toolCall").cloned().unwrap_or(Value::Null);
                let title = one_line(str_at(&tool, "title").unwrap_or("(untitled tool call)"));
                let kind = str_at(&tool, "kind").map(one_line);
                if let Some(id) = data.get("requestId").and_then(Value::as_u64) {
                    self.permissions.insert(id, title.clone());
                }
                let options: Vec<String> = data
                    .get("options")
                    .and_then(Value::as_array)
                    .map(|o| {
                        o.iter()
                            .filter_map(|x| str_at(x, "optionId").map(one_line))
                            .collect()
                    })
                    .unwrap_or_default();
                let mut line = format!("[permission] {title}");
                if let Some(kind) = kind {
                    line.push_str(&format!(" ({kind})"));
                }
                line.push_str(&format!(" requested; options: {}", options.join(", ")));
                out.line(&line, false);
            }
            EventKind::ElicitationRequested => {
                let mode = str_at(&data, "mode").unwrap_or("?");
                let message = one_line(str_at(&data, "message").unwrap_or(""));
                let mut line = format!("[elicitation] {mode}: {message}");
                if let Some(url) = str_at(&data, "url") {
                    // Whole, as a browser reads it, and where it goes (the prompt has the rest).
                    let url = display::url(url);
                    match url.host {
                        Some(host) => line.push_str(&format!(" ({}; host {host})", url.shown)),
                        None => line.push_str(&format!(" ({})", url.shown)),
                    }
                }
                out.line(&line, false);
            }
            EventKind::ElicitationResolved => {
                let action = str_at(&data, "action").unwrap_or("abandoned");
                let by = str_at(&data, "decidedBy").unwrap_or("?").replace('_', " ");
                let mut line = format!("[elicitation] -> {action} by {by}");
                if let Some(reason) = str_at(&data, "reason") {
                    line.push_str(&format!(" ({})", one_line(reason)));
                }
                out.line(&line, true);
            }
            EventKind::ElicitationCompleted => {
                let id = one_line(str_at(&data, "elicitationId").unwrap_or("?"));
                out.line(&format!("[elicitation] {id} completed"), true);
            }
            EventKind::PermissionResolved => {
                let title = data
                    .get("requestId")
                    .and_then(Value::as_u64)
                    .and_then(|id| self.permissions.remove(&id))
                    .unwrap_or_else(|| "request".to_owned());
                let by = str_at(&data, "decidedBy").unwrap_or("?").replace('_', " ");
                let outcome = data.get("outcome").cloned().unwrap_or(Value::Null);
                let verdict = match str_at(&outcome, "outcome") {
                    Some("selected") => {
                        let id = one_line(str_at(&outcome, "optionId").unwrap_or("?"));
                        match str_at(&data, "optionKind") {
                            Some(k) if k.starts_with("allow") => format!("allowed ({id})"),
                            Some(k) if k.starts_with("reject") => format!("denied ({id})"),
                            _ => format!("selected ({id})"),
                        }
                    }
                    Some("cancelled") => "cancelled".to_owned(),
                    _ => "abandoned".to_owned(),
                };
                let mut line = format!("[permission] {title} -> {verdict} by {by}");
                // The policy rule (or session grant) that decided.
                if let Some(rule) = str_at(&data, "rule") {
                    line.push_str(&format!(": {}", one_line(rule)));
                }
                out.line(&line, false);
            }
            EventKind::FsRead | EventKind::FsWrite => {
                let verb = if ev.kind == EventKind::FsRead {
                    "read"
                } else {
                    "write"
                };
                let path = one_line(str_at(&data, "path").unwrap_or("?"));
                let subject = format!("[fs] {verb} {path}");
                match served(&data) {
                    Served::Ok => {
                        let line = match data.get("bytes").and_then(Value::as_u64) {
                            Some(n) => format!("{subject} ({n} bytes)"),
                            None => subject,
                        };
                        out.line(&line, true);
                    }
                    Served::Denied(rule) => out.line(&format!("{subject} DENIED{rule}"), false),
                    Served::Failed(why) => out.line(&format!("{subject} failed: {why}"), false),
                }
            }
            EventKind::TerminalCreated => {
                let cmd = command_line(&data);
                match served(&data) {
                    Served::Ok => {
                        let id = one_line(str_at(&data, "terminalId").unwrap_or("?"));
                        let mut line = format!("[terminal] {id} started: {cmd}");
                        if let Some(cwd) = str_at(&data, "cwd") {
                            line.push_str(&format!(" (cwd {})", one_line(cwd)));
                        }
                        out.line(&line, true);
                    }
                    Served::Denied(rule) => {
                        out.line(&format!("[terminal] DENIED: {cmd}{rule}"), false)
                    }
                    Served::Failed(why) => {
                        out.line(&format!("[terminal] {cmd} failed: {why}"), false)
                    }
                }
            }
            EventKind::TerminalExited => {
                let id = one_line(str_at(&data, "terminalId").unwrap_or("?"));
                let status = match (
                    data.get("exitCode").and_then(Value::as_i64),
                    str_at(&data, "signal"),
                ) {
                    (Some(c), _) => format!(" (code {c})"),
                    (None, Some(s)) => format!(" (signal {})", one_line(s)),
                    _ => String::new(),
                };
                out.line(&format!("[terminal] {id} exited{status}"), true);
            }
            EventKind::AgentStderr if self.verbose => {
                let line = str_at(&data, "line").unwrap_or("");
                out.flush();
                eprint_line(&format!("[agent stderr] {}", clean(line)));
            }
            EventKind::ProtocolNoise => {
                let bytes = data.get("bytes").cloned().unwrap_or(Value::Null);
                let line = str_at(&data, "line").map(one_line).unwrap_or_default();
                self.warn(
                    out,
                    &format!("agent wrote a non-protocol line to stdout ({bytes} bytes): {line}"),
                );
            }
            EventKind::ProtocolError => {
                let msg = str_at(&data, "message").unwrap_or("protocol error");
                self.warn(out, &format!("protocol error: {}", one_line(msg)));
            }
            EventKind::AgentExited if self.verbose => {
                let status = match (
                    data.get("exitCode").and_then(Value::as_i64),
                    str_at(&data, "signal"),
                ) {
                    (Some(c), _) => format!("exit code {c}"),
                    (None, Some(s)) => format!("killed by {s}"),
                    _ => "unknown status".to_owned(),
                };
                out.line(&format!("[agent exited: {status}]"), true);
            }
            EventKind::SessionClosed if self.verbose => {
                let reason = str_at(&data, "reason").unwrap_or("closed");
                out.line(&format!("[session closed: {}]", one_line(reason)), true);
            }
            EventKind::ExtNotification if self.verbose => {
                let method = str_at(&data, "method").unwrap_or("?");
                out.line(&format!("[ext] {}", one_line(method)), true);
            }
            // turn_started, wire, and kinds added later: nothing to show.
            _ => {}
        }
    }

    fn update(&mut self, out: &mut Out, u: &Value) {
        match str_at(u, "sessionUpdate").unwrap_or("") {
            kind @ ("agent_message_chunk" | "agent_thought_chunk") => {
                let stream = if kind == "agent_message_chunk" {
                    Stream::Message
                } else {
                    Stream::Thought
                };
                let content = u.get("content").cloned().unwrap_or(Value::Null);
                match str_at(&content, "type") {
                    Some("text") => {
                        out.chunk(stream, &clean(str_at(&content, "text").unwrap_or("")))
                    }
                    Some(other) => out.chunk(stream, &format!("[{}]", one_line(other))),
                    None => {}
                }
            }
            "tool_call" => {
                let id = str_at(u, "toolCallId").unwrap_or("").to_owned();
                let title = one_line(str_at(u, "title").unwrap_or("(untitled)"));
                let kind = one_line(str_at(u, "kind").unwrap_or("other"));
                let status = one_line(str_at(u, "status").unwrap_or("pending"));
                out.line(&format!("[tool] {title} ({kind}) {status}"), false);
                self.tools.insert(id, (title, kind));
            }
            "tool_call_update" => {
                let id = str_at(u, "toolCallId").unwrap_or("").to_owned();
                let entry = self
                    .tools
                    .entry(id)
                    .or_insert_with(|| ("(unknown tool call)".to_owned(), "other".to_owned()));
                let retitled = str_at(u, "title").map(one_line);
                if let Some(t) = &retitled {
                    entry.0 = t.clone();
                }
                if let Some(k) = str_at(u, "kind") {
                    entry.1 = one_line(k);
                }
                let status = str_at(u, "status").map(one_line);
                if status.is_none() && retitled.is_none() {
                    return;
                }
                let mut line = format!("[tool] {}", entry.0);
                if retitled.is_some() {
                    line.push_str(&format!(" ({})", entry.1));
                }
                if let Some(s) = &status {
                    line.push_str(&format!(" {s}"));
                    let done = s == "completed" || s == "failed";
                    if let Some(text) = first_text(u.get("content")).filter(|_| done) {
                        line.push_str(&format!(": {}", one_line(text)));
                    }
                }
                out.line(&line, false);
            }
            "plan" => {
                out.line("[plan]", false);
                for e in u
                    .get("entries")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let mark = match str_at(e, "status") {
                        Some("completed") => "[x]",
                        Some("in_progress") => "[~]",
                        _ => "[ ]",
                    };
                    let content = one_line(str_at(e, "content").unwrap_or(""));
                    out.line(&format!("  {mark} {content}"), false);
                }
            }
            "usage_update" => {
                // JSON text of what should be numbers: a string would print unescaped.
                let json = |v: Option<&Value>| one_line(&v.unwrap_or(&Value::Null).to_string());
                let (used, size) = (json(u.get("used")), json(u.get("size")));
                let mut line = format!("[usage] {used} / {size} tokens");
                if let Some(cost) = u.get("cost") {
                    let amount = json(cost.get("amount"));
                    let currency = str_at(cost, "currency").unwrap_or("");
                    line.push_str(&format!(", cost {amount} {}", one_line(currency)));
                }
                out.line(&line, true);
            }
            "current_mode_update" => {
                let mode = str_at(u, "currentModeId")
                    .or_else(|| str_at(u, "modeId"))
                    .unwrap_or("?");
                out.line(&format!("[mode] {}", one_line(mode)), false);
            }
            "config_option_update" => {
                let values: Vec<String> = u
                    .get("configOptions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|o| {
                        let id = str_at(o, "id")?;
                        let v = o.get("currentValue")?;
                        let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                        Some(one_line(&format!("{id}={v}")))
                    })
                    .collect();
                out.line(&format!("[config] {}", values.join(", ")), true);
            }
            "session_info_update" => {
                if let Some(title) = str_at(u, "title") {
                    out.line(&format!("[title] {}", one_line(title)), true);
                }
            }
            "available_commands_update" if self.verbose => {
                let names: Vec<String> = u
                    .get("availableCommands")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| str_at(c, "name").map(|n| format!("/{}", one_line(n))))
                    .collect();
                out.line(&format!("[commands] {}", names.join(" ")), true);
            }
            // user_message_chunk (our own prompt), unknown future kinds: nothing to show.
            _ => {}
        }
    }
}

/// How the host handled an fs/terminal request (`outcome` of `fs_read`, `fs_write`,
/// `terminal_created`).
#[derive(Debug, PartialEq, Eq)]
enum Served {
    Ok,
    /// ` (rule: ...)`, or empty when the event names no rule.
    Denied(String),
    /// `<outcome>: <error>`.
    Failed(String),
}

fn served(data: &Value) -> Served {
    match str_at(data, "outcome").unwrap_or("error") {
        "ok" => Served::Ok,
        "denied" => Served::Denied(
            str_at(data, "rule")
                .map(|r| format!(" (rule: {})", one_line(r)))
                .unwrap_or_default(),
        ),
        outcome => {
            let mut why = one_line(outcome);
            if let Some(e) = str_at(data, "error") {
                why.push_str(&format!(": {}", one_line(e)));
            }
            Served::Failed(why)
        }
    }
}

/// `command arg1 arg2` of a `terminal_created` event, for one line.
fn command_line(data: &Value) -> String {
    let mut line = str_at(data, "command").unwrap_or("?").to_owned();
    for a in data
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        line.push(' ');
        line.push_str(a);
    }
    one_line(&line)
}

/// The first text of a tool call's `content` (`[{type: "content", content: {type: "text"}}]`).
fn first_text(content: Option<&Value>) -> Option<&str> {
    content?.as_array()?.iter().find_map(|c| {
        let inner = c.get("content")?;
        (str_at(inner, "type") == Some("text"))
            .then(|| str_at(inner, "text"))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_escapes_controls_visibly_but_keeps_newlines() {
        assert_eq!(clean("a\x1b[31mb\nc\td"), "a<U+001B>[31mb\nc\td");
        assert!(matches!(clean("plain\n"), Cow::Borrowed(_)));
    }

    /// Message text keeps ordinary non-ASCII text; what reorders or hides text is escaped.
    #[test]
    fn clean_keeps_text_and_escapes_bidi_and_invisibles() {
        let text = "café 日本 👩\u{200D}💻 ❤\u{FE0F}\n";
        assert_eq!(clean(text), text);
        assert_eq!(
            clean("run \u{202E}txt.exe\u{202C} now\u{200B}\u{2028}"),
            "run <U+202E>txt.exe<U+202C> now<U+200B><U+2028>"
        );
    }

    #[test]
    fn one_line_folds_escapes_and_bounds() {
        assert_eq!(one_line("a\nb\x07c\r  "), "a b<U+0007>c");
        assert_eq!(one_line(&"x".repeat(500)).chars().count(), 200);
        // Titles, names, paths: every bidi control, invisible and the emoji joiner escaped.
        assert_eq!(
            one_line("Read \u{202E}txt.exe \u{2066}x\u{2069} 👩\u{200D}💻 \u{E0041}\u{85}"),
            "Read <U+202E>txt.exe <U+2066>x<U+2069> 👩<U+200D>💻 <U+E0041><U+0085>"
        );
    }

    #[test]
    fn full_line_is_never_shortened() {
        let cmd = format!("echo {}; rm -rf ~\u{202E}", "x".repeat(300));
        let line = full_line(&cmd);
        assert!(line.ends_with("; rm -rf ~<U+202E>"), "{line}");
    }

    #[test]
    fn flat_line_folds_without_shortening() {
        let long = format!("a\n  b\x07c {}", "x".repeat(300));
        let flat = flat_line(&long);
        assert!(flat.starts_with("a b<U+0007>c x"), "{flat}");
        assert_eq!(flat.chars().count(), "a b<U+0007>c ".len() + 300);
    }

    #[test]
    fn served_outcomes() {
        use serde_json::json;
        assert_eq!(served(&json!({"outcome": "ok"})), Served::Ok);
        assert_eq!(
            served(&json!({"outcome": "denied", "rule": "preset deny-all"})),
            Served::Denied(" (rule: preset deny-all)".into())
        );
        assert_eq!(
            served(&json!({"outcome": "denied"})),
            Served::Denied(String::new())
        );
        assert_eq!(
            served(&json!({"outcome": "outside_roots", "error": "/etc/x is outside\nthe roots"})),
            Served::Failed("outside_roots: /etc/x is outside the roots".into())
        );
        assert_eq!(
            command_line(&json!({"command": "echo", "args": ["a b", "c"]})),
            "echo a b c"
        );
    }

    #[test]
    fn first_text_finds_content_text() {
        let v = serde_json::json!([{"type":"terminal","terminalId":"t"},{"type":"content","content":{"type":"text","text":"done"}}]);
        assert_eq!(first_text(Some(&v)), Some("done"));
    }
}
