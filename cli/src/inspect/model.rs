//! The report's model: the recording's lines turned into the timeline rows the page shows, each
//! linked to the wire messages it came from.
//!
//! Every row is `{k, u?, e?, t, s?, n?, h, p, w}`: `k` the kind the page marks it with
//! (`data-kind`: the event's kind, or a session update's `sessionUpdate` kind; `terminal_output`,
//! `gap`, `truncated`, `end`, `cut_short`, `skipped` for what is not an event), `e` the event's
//! kind, `t` the time, `s`/`n` session and turn, `h` a title, `p` the parts the page renders
//! (`text`, `kv`, `diff`, `json`), `w` the indices of its wire messages. Everything taken from
//! the recording stays data: the page only ever sets it as text.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

use acp_host::record::format::{self, EventData};
use serde_json::{Map, Value, json};

use super::parts::{content_parts, header_parts, kv, ms, s, text, tool_call_parts};

/// One row of the timeline.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) kind: String,
    event: Option<String>,
    t: f64,
    session: Option<String>,
    turn: Option<u64>,
    pub(crate) title: String,
    parts: Vec<Value>,
    /// `parts` as JSON once a later row was added (only the last row still merges chunks):
    /// text takes a fraction of the memory of parsed values.
    frozen: Option<String>,
    wire: Vec<usize>,
    /// A request whose response joins `wire` once the recording is read.
    answer_of: Option<usize>,
    /// Consecutive text chunks of one kind, session and turn are merged into one row.
    merge: Option<(String, Option<String>, Option<u64>)>,
}

impl Row {
    fn new(kind: &str, t: f64, title: String) -> Row {
        Row {
            kind: kind.to_owned(),
            event: None,
            t,
            session: None,
            turn: None,
            title,
            parts: Vec::new(),
            frozen: None,
            wire: Vec::new(),
            answer_of: None,
            merge: None,
        }
    }

    fn freeze(&mut self) {
        if self.frozen.is_none() {
            self.frozen = Some(Value::from(std::mem::take(&mut self.parts)).to_string());
        }
    }

    fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut o = Map::new();
        o.insert("k".into(), self.kind.clone().into());
        if let Some(e) = &self.event {
            o.insert("e".into(), e.clone().into());
        }
        o.insert("t".into(), self.t.into());
        if let Some(s) = &self.session {
            o.insert("s".into(), s.clone().into());
        }
        if let Some(n) = self.turn {
            o.insert("n".into(), n.into());
        }
        o.insert("h".into(), self.title.clone().into());
        o.insert("w".into(), self.wire.clone().into());
        let head = Value::Object(o).to_string();
        // `{…}` without its `}`, then the parts.
        out.write_all(&head.as_bytes()[..head.len() - 1])?;
        out.write_all(b",\"p\":")?;
        match &self.frozen {
            Some(p) => out.write_all(p.as_bytes())?,
            None => serde_json::to_writer(&mut *out, &self.parts)?,
        }
        out.write_all(b"}")
    }
}

/// One wire message: `[t, dir, label, msg]` in the page's data. The message is kept as its
/// compact JSON text, not as a parsed value (a fraction of the memory), with what the links need.
#[derive(Debug)]
struct Wire {
    t: f64,
    dir: &'static str,
    label: String,
    method: Option<String>,
    /// A `terminal/output` request's terminal and session.
    terminal: Option<(String, Option<String>)>,
    raw: String,
}

/// The model being built, line by line.
#[derive(Debug, Default)]
pub(crate) struct Model {
    pub(crate) rows: Vec<Row>,
    wire: Vec<Wire>,
    pub(crate) events: usize,
    /// The response to each answered request (by the request's wire index).
    answers: HashMap<usize, usize>,
    /// Requests awaiting their response: (the request's direction, its id as JSON) → index.
    pending: HashMap<(&'static str, String), usize>,
    /// The latest request or notification of each method, per direction.
    last_in: HashMap<String, usize>,
    /// The latest `in` request of a method about one file, terminal or tool call: (method, path)
    /// for `fs/*`, (`terminal`, id) for every `terminal/*` method but `create`, (method, tool
    /// call id) for permission requests.
    last_in_about: HashMap<(String, String), usize>,
    last_out: HashMap<String, usize>,
    /// Rows waiting for the next `out` message of a method (`turn_started` → `session/prompt`).
    next_out: Vec<(usize, &'static str)>,
    /// Per permission / elicitation request id: the requested row's time and the wire request.
    permissions: HashMap<String, (f64, Option<usize>)>,
    elicitations: HashMap<String, (f64, Option<usize>)>,
    /// Per turn: its start time and the row of its `turn_started`.
    turns: HashMap<u64, (f64, usize)>,
    /// What is left for aligning diffs (`diff.rs`).
    diff_budget: super::diff::Budget,
    /// The latest wire message, parsed, with its index and direction: what a format 2 update
    /// refers to (almost always), without parsing its text again.
    latest: Option<(usize, &'static str, Value)>,
}

impl Model {
    /// A wire message the host sent (`out`) or received (`in`).
    pub(crate) fn wire(&mut self, t: f64, dir: &'static str, msg: Value) {
        let idx = self.wire.len();
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg
            .get("id")
            .filter(|id| !id.is_null())
            .map(Value::to_string);
        let label = match (&method, &id) {
            (Some(m), Some(id)) => {
                self.pending.insert((dir, id.clone()), idx);
                format!("{m} #{id}")
            }
            (Some(m), None) if m == "session/update" => {
                let kind = msg.pointer("/params/update/sessionUpdate");
                format!("{m} {}", kind.map(s).unwrap_or_default())
            }
            (Some(m), None) => m.clone(),
            (None, Some(id)) => {
                let other = if dir == "in" { "out" } else { "in" };
                let outcome = if msg.get("error").is_some() {
                    "error"
                } else {
                    "result"
                };
                match self.pending.remove(&(other, id.clone())) {
                    Some(req) => {
                        self.answers.insert(req, idx);
                        let m = self.wire[req].method.clone().unwrap_or_default();
                        if m == "terminal/output" && dir == "out" {
                            self.terminal_output(t, req, idx, &msg);
                        }
                        format!("{outcome} #{id} ({m})")
                    }
                    None => format!("{outcome} #{id}"),
                }
            }
            (None, None) => "(no method, no id)".to_owned(),
        };
        let terminal = (method.as_deref() == Some("terminal/output")).then(|| {
            let p = |k: &str| msg.pointer(k).map(s);
            (
                p("/params/terminalId").unwrap_or_default(),
                p("/params/sessionId"),
            )
        });
        if let (Some(m), "in") = (&method, dir) {
            let params = msg.get("params");
            let about = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_str);
            if let (true, Some(path)) = (m.starts_with("fs/"), about("path")) {
                self.last_in_about.insert((m.clone(), path.to_owned()), idx);
            }
            if let (true, Some(id)) = (m.starts_with("terminal/"), about("terminalId")) {
                self.last_in_about
                    .insert(("terminal".into(), id.to_owned()), idx);
            }
            let tool_call = msg
                .pointer("/params/toolCall/toolCallId")
                .and_then(Value::as_str);
            if let (true, Some(id)) = (m == "session/request_permission", tool_call) {
                self.last_in_about.insert((m.clone(), id.to_owned()), idx);
            }
        }
        if let Some(m) = &method {
            let last = if dir == "in" {
                &mut self.last_in
            } else {
                &mut self.last_out
            };
            last.insert(m.clone(), idx);
            if dir == "out" {
                for (row, _) in self.next_out.iter().filter(|(_, want)| want == m) {
                    self.rows[*row].wire.push(idx);
                    self.rows[*row].answer_of = Some(idx);
                }
                self.next_out.retain(|(_, want)| want != m);
            }
        }
        self.wire.push(Wire {
            t,
            dir,
            label,
            method,
            terminal,
            raw: msg.to_string(),
        });
        self.latest = Some((idx, dir, msg));
    }

    /// An event line's data: in the line, or (format 2) the update of the wire line it refers
    /// to, with that line's index; `Err` says why the line is not read (a reference that does
    /// not hold: `record::format`).
    pub(crate) fn event_data<'e>(
        &self,
        ev: &'e Map<String, Value>,
    ) -> Result<(Cow<'e, Value>, Option<usize>), String> {
        let i = match format::event_data(ev)? {
            EventData::Inline(data) => return Ok((Cow::Borrowed(data), None)),
            EventData::Wire(i) => i,
        };
        let parsed;
        let line = match (&self.latest, self.wire.get(i)) {
            (Some((j, dir, msg)), _) if *j == i => Some((*dir, msg)),
            (_, Some(w)) => {
                // Its text was JSON when it was read.
                parsed = serde_json::from_str(&w.raw).unwrap_or(Value::Null);
                Some((w.dir, &parsed))
            }
            (_, None) => None,
        };
        let data = format::referenced_data(ev, i, line)?;
        Ok((Cow::Owned(data.clone()), Some(i)))
    }

    fn push(&mut self, row: Row) {
        if let Some(last) = self.rows.last_mut() {
            last.freeze();
        }
        self.rows.push(row);
    }

    /// The host's answer to `terminal/output`: the terminal's output so far.
    fn terminal_output(&mut self, t: f64, req: usize, resp: usize, msg: &Value) {
        let (id, session) = self.wire[req].terminal.clone().unwrap_or_default();
        let mut row = Row::new("terminal_output", t, format!("Terminal {id} output"));
        row.session = session;
        let r = msg.get("result").unwrap_or(&Value::Null);
        row.parts
            .push(json!({ "pre": r.get("output").map(s).unwrap_or_default() }));
        let exit = r.get("exitStatus").filter(|v| !v.is_null());
        row.parts.push(kv(vec![
            ("truncated", r.get("truncated").map(s).unwrap_or_default()),
            ("exit", exit.map(|e| e.to_string()).unwrap_or_default()),
        ]));
        row.wire = vec![req, resp];
        self.push(row);
    }

    /// The wire index of the latest `in` message of `method`.
    fn link_in(&self, method: &str) -> Option<usize> {
        self.last_in.get(method).copied()
    }

    /// The latest `in` request of `method` about `what` (a path, a terminal id), else the latest
    /// of `method`: with several in flight, the one the event is about.
    fn link_about(&self, method: &str, what: &str) -> Option<usize> {
        self.last_in_about
            .get(&(method.to_owned(), what.to_owned()))
            .copied()
            .or_else(|| self.link_in(method))
    }

    fn last_any(&self) -> Vec<usize> {
        self.wire.len().checked_sub(1).into_iter().collect()
    }

    /// An event line's envelope with its data ([`Model::event_data`]: `from`, the wire line it
    /// was read from).
    pub(crate) fn event(
        &mut self,
        t: f64,
        ev: &Map<String, Value>,
        data: &Value,
        from: Option<usize>,
    ) {
        self.events += 1;
        let kind = ev
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("(no kind)");
        let null = Value::Null;
        let session = ev.get("session").and_then(Value::as_str).map(str::to_owned);
        let turn = ev.get("turn").and_then(Value::as_u64);
        let mut row = Row::new(kind, t, kind.replace('_', " "));
        row.event = Some(kind.to_owned());
        row.session = session;
        row.turn = turn;
        let field = |k: &str| data.get(k).map(s).unwrap_or_default();
        let mut request = None;
        match kind {
            "session_update" => {
                let update = data.get("sessionUpdate").map(s).unwrap_or_default();
                request = from.or_else(|| self.link_in("session/update"));
                if self.update(t, &update, data, &mut row, request) {
                    return;
                }
            }
            "turn_started" => {
                row.title = format!(
                    "Turn {} started",
                    turn.map(|n| n.to_string()).unwrap_or_default()
                );
                row.parts.extend(content_parts(data.get("prompt")));
                if let Some(n) = turn {
                    self.turns.insert(n, (t, self.rows.len()));
                }
                self.next_out.push((self.rows.len(), "session/prompt"));
            }
            "turn_ended" => {
                let started = turn.and_then(|n| self.turns.get(&n)).copied();
                let stop = field("stopReason");
                row.title = format!(
                    "Turn {} ended: {}",
                    turn.map(|n| n.to_string()).unwrap_or_default(),
                    if stop.is_empty() { "error" } else { &stop }
                );
                let err = data.get("error").filter(|e| !e.is_null());
                row.parts.push(kv(vec![
                    ("stop reason", stop.clone()),
                    (
                        "duration",
                        started.map(|(t0, _)| ms(t - t0)).unwrap_or_default(),
                    ),
                    ("error", err.map(|e| e.to_string()).unwrap_or_default()),
                ]));
                if let Some(usage) = data.get("usage").filter(|u| !u.is_null()) {
                    row.parts.push(json!({ "json": usage }));
                }
                // The prompt's answer: the `in` response to the `session/prompt` of the turn.
                let prompt = started.and_then(|(_, r)| self.rows[r].answer_of);
                row.wire = prompt
                    .and_then(|p| self.answers.get(&p).copied())
                    .into_iter()
                    .collect();
            }
            "permission_requested" => {
                let tc = data.get("toolCall").unwrap_or(&null);
                let about = tc.get("toolCallId").map(s).unwrap_or_default();
                request = self.link_about("session/request_permission", &about);
                row.title = format!(
                    "Permission requested: {}",
                    tc.get("title").map(s).unwrap_or_default()
                );
                row.parts.push(kv(vec![
                    ("tool call", tc.get("toolCallId").map(s).unwrap_or_default()),
                    ("tool kind", tc.get("kind").map(s).unwrap_or_default()),
                ]));
                let options = data.get("options").and_then(Value::as_array);
                let opts: Vec<Value> = options
                    .into_iter()
                    .flatten()
                    .map(|o| {
                        let name = o.get("name").map(s).unwrap_or_default();
                        let detail = format!(
                            "{} ({})",
                            o.get("optionId").map(s).unwrap_or_default(),
                            o.get("kind").map(s).unwrap_or_default()
                        );
                        json!([name, detail])
                    })
                    .collect();
                row.parts.push(json!({ "kv": opts, "label": "options" }));
                row.parts.extend(tool_call_parts(tc, &mut self.diff_budget));
                self.permissions.insert(field("requestId"), (t, request));
            }
            "permission_resolved" | "elicitation_resolved" => {
                let table = if kind == "permission_resolved" {
                    &self.permissions
                } else {
                    &self.elicitations
                };
                let asked = table.get(&field("requestId")).copied();
                let outcome = data.get("outcome").filter(|o| !o.is_null());
                let chosen = outcome
                    .and_then(|o| o.get("optionId"))
                    .map(s)
                    .or_else(|| outcome.and_then(|o| o.get("outcome")).map(s))
                    .unwrap_or_else(|| field("action"));
                let what = if kind == "permission_resolved" {
                    "Permission"
                } else {
                    "Elicitation"
                };
                row.title = format!(
                    "{what} resolved: {} by {}",
                    if chosen.is_empty() {
                        "nothing sent"
                    } else {
                        &chosen
                    },
                    field("decidedBy")
                );
                row.parts.push(kv(vec![
                    ("decided by", field("decidedBy")),
                    ("took", asked.map(|(t0, _)| ms(t - t0)).unwrap_or_default()),
                    ("option kind", field("optionKind")),
                    ("rule", field("rule")),
                    (
                        "fields",
                        data.get("fields")
                            .map(|f| f.to_string())
                            .unwrap_or_default(),
                    ),
                    ("reason", field("reason")),
                ]));
                request = asked.and_then(|(_, w)| w);
            }
            "elicitation_requested" => {
                request = self.link_in("elicitation/create");
                row.title = format!("Elicitation requested ({})", field("mode"));
                row.parts.push(text(field("message")));
                row.parts.push(kv(vec![
                    ("url", field("url")),
                    ("tool call", field("toolCallId")),
                ]));
                if let Some(schema) = data.get("requestedSchema").filter(|v| !v.is_null()) {
                    row.parts.push(json!({ "json": schema }));
                }
                self.elicitations.insert(field("requestId"), (t, request));
            }
            "elicitation_completed" => {
                request = self.link_in("elicitation/complete");
                row.parts
                    .push(kv(vec![("elicitation", field("elicitationId"))]));
            }
            "fs_read" | "fs_write" => {
                let m = if kind == "fs_read" {
                    "fs/read_text_file"
                } else {
                    "fs/write_text_file"
                };
                request = self.link_about(m, &field("path"));
                row.title = format!(
                    "{} {}: {}",
                    if kind == "fs_read" { "Read" } else { "Write" },
                    field("path"),
                    field("outcome")
                );
                row.parts.push(kv(vec![
                    ("bytes", field("bytes")),
                    ("line", field("line")),
                    ("limit", field("limit")),
                    ("rule", field("rule")),
                    ("error", field("error")),
                ]));
            }
            "terminal_created" => {
                request = self.link_in("terminal/create");
                let args: Vec<String> = data
                    .get("args")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(s)
                    .collect();
                row.title = format!(
                    "Terminal {}: {} {}",
                    field("terminalId"),
                    field("command"),
                    args.join(" ")
                );
                row.parts.push(kv(vec![
                    ("cwd", field("cwd")),
                    ("outcome", field("outcome")),
                    ("rule", field("rule")),
                    ("error", field("error")),
                ]));
            }
            "terminal_exited" => {
                // Reported before the answer to the request that lets the agent see the exit
                // (`wait_for_exit`, `output`, `kill`, `release`): that request, when it is
                // still unanswered.
                request = self
                    .last_in_about
                    .get(&("terminal".to_owned(), field("terminalId")))
                    .copied()
                    .filter(|r| !self.answers.contains_key(r));
                row.title = format!("Terminal {} exited", field("terminalId"));
                row.parts.push(kv(vec![
                    ("exit code", field("exitCode")),
                    ("signal", field("signal")),
                ]));
            }
            "agent_stderr" => {
                row.title = "stderr".into();
                row.parts.push(json!({ "pre": field("line") }));
                if data.get("omittedBytes").is_some() {
                    row.parts
                        .push(kv(vec![("omitted bytes", field("omittedBytes"))]));
                }
            }
            "protocol_noise" => {
                row.title = format!("Protocol noise (line {} of the agent's)", field("count"));
                row.parts.push(json!({ "pre": field("line") }));
                row.parts.push(kv(vec![("bytes", field("bytes"))]));
            }
            "protocol_error" => {
                row.title = format!("Protocol error: {}", field("reason"));
                row.parts.push(text(field("message")));
                row.parts.push(json!({ "json": data }));
            }
            "ext_notification" | "ext_request" => {
                request = self.link_in(&field("method"));
                row.title = format!("{}: {}", kind.replace('_', " "), field("method"));
                row.parts.push(json!({ "json": data }));
            }
            "agent_exited" => {
                let how = match (
                    data.get("exitCode").filter(|c| !c.is_null()),
                    data.get("signal").filter(|c| !c.is_null()),
                ) {
                    (Some(c), _) => format!("exit code {}", s(c)),
                    (None, Some(sig)) => s(sig),
                    (None, None) => "no status".to_owned(),
                };
                row.title = format!("Agent exited ({}): {how}", field("reason"));
                let err = data.get("error").filter(|e| !e.is_null());
                row.parts.push(kv(vec![
                    ("restart", field("restart")),
                    ("error", err.map(Value::to_string).unwrap_or_default()),
                ]));
                let tail = field("stderrTail");
                if !tail.is_empty() {
                    row.parts
                        .push(json!({ "label": "stderr tail", "pre": tail }));
                }
            }
            "agent_ready" => {
                let info = data.get("agentInfo").unwrap_or(&null);
                row.title = format!(
                    "Agent ready: {} {}",
                    info.get("name").map(s).unwrap_or_default(),
                    info.get("version").map(s).unwrap_or_default()
                );
                request = self.last_out.get("initialize").copied();
                row.parts.push(json!({ "json": data }));
            }
            "session_opened" => {
                row.title = format!(
                    "Session {} opened ({})",
                    field("sessionId"),
                    field("origin")
                );
                request = [
                    "session/new",
                    "session/load",
                    "session/resume",
                    "session/fork",
                ]
                .iter()
                .filter_map(|m| self.last_out.get(*m).copied())
                .max();
                row.parts.push(kv(vec![("cwd", field("cwd"))]));
                row.parts.push(json!({ "json": data }));
            }
            _ => row.parts.push(json!({ "json": data })),
        }
        if row.wire.is_empty() {
            match request {
                Some(r) => {
                    row.wire.push(r);
                    row.answer_of = Some(r);
                }
                None if kind != "turn_started" => row.wire = self.last_any(),
                None => {}
            }
        }
        self.push(row);
    }

    /// A session update; true when it was merged into the row before it.
    fn update(
        &mut self,
        t: f64,
        update: &str,
        data: &Value,
        row: &mut Row,
        request: Option<usize>,
    ) -> bool {
        row.kind = update.to_owned();
        match update {
            "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" => {
                let who = match update {
                    "agent_message_chunk" => "Agent",
                    "agent_thought_chunk" => "Thought",
                    _ => "User",
                };
                let content = data.get("content").unwrap_or(&Value::Null);
                if let Some(txt) = content
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|_| content.get("type").and_then(Value::as_str) == Some("text"))
                {
                    let key = (update.to_owned(), row.session.clone(), row.turn);
                    if let Some(last) = self
                        .rows
                        .last_mut()
                        .filter(|r| r.merge.as_ref() == Some(&key))
                    {
                        if let Some(Value::Object(p)) = last.parts.last_mut()
                            && let Some(Value::String(acc)) = p.get_mut("text")
                        {
                            acc.push_str(txt);
                        }
                        last.wire.extend(request);
                        return true;
                    }
                    row.merge = Some(key);
                    row.title = who.into();
                    row.parts.push(text(txt));
                } else {
                    row.title = who.into();
                    row.parts
                        .extend(content_parts(Some(&Value::Array(vec![content.clone()]))));
                }
            }
            "tool_call" | "tool_call_update" => {
                row.title = format!(
                    "{} {} {}",
                    if update == "tool_call" {
                        "Tool call"
                    } else {
                        "Tool call update"
                    },
                    data.get("toolCallId").map(s).unwrap_or_default(),
                    data.get("title").map(s).unwrap_or_default()
                )
                .trim_end()
                .to_owned();
                row.parts
                    .extend(tool_call_parts(data, &mut self.diff_budget));
            }
            "plan" => {
                row.title = "Plan".into();
                let entries: Vec<Value> = data
                    .get("entries")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|e| {
                        json!([
                            e.get("status").map(s).unwrap_or_default(),
                            e.get("content").map(s).unwrap_or_default()
                        ])
                    })
                    .collect();
                row.parts.push(json!({ "kv": entries }));
            }
            _ => {
                row.title = update.replace('_', " ");
                row.parts.push(json!({ "json": data }));
            }
        }
        let _ = t;
        false
    }

    /// A line that is not a wire message nor an event: `gap`, `truncated`, `end`, `cut_short`,
    /// `skipped`.
    pub(crate) fn mark(&mut self, kind: &str, t: f64, title: String, detail: Option<&Value>) {
        let mut row = Row::new(kind, t, title);
        if let Some(d) = detail {
            row.parts.push(json!({ "json": d }));
        }
        row.wire = self.last_any();
        self.push(row);
    }

    /// The time of the last line read (for marks without one of their own).
    pub(crate) fn last_t(&self) -> f64 {
        let w = self.wire.last().map_or(0.0, |w| w.t);
        let r = self.rows.last().map_or(0.0, |r| r.t);
        w.max(r)
    }

    /// Links each row to the answers of its requests, once every line is read.
    pub(crate) fn link_answers(&mut self) {
        for row in &mut self.rows {
            if let Some(resp) = row.answer_of.and_then(|r| self.answers.get(&r))
                && !row.wire.contains(resp)
            {
                row.wire.push(*resp);
            }
        }
    }

    pub(crate) fn wire_count(&self) -> usize {
        self.wire.len()
    }

    /// The page's data as JSON, written piece by piece (never held whole): `header` (the
    /// header's facts as parts), `summary`, `file`, `wire`, `rows`.
    pub(crate) fn write_json(
        &self,
        out: &mut dyn Write,
        header: &Value,
        summary: &Value,
        file: &str,
    ) -> std::io::Result<()> {
        out.write_all(b"{\"header\":")?;
        serde_json::to_writer(&mut *out, &header_parts(header))?;
        out.write_all(b",\"summary\":")?;
        serde_json::to_writer(&mut *out, summary)?;
        out.write_all(b",\"file\":")?;
        serde_json::to_writer(&mut *out, file)?;
        out.write_all(b",\"wire\":[")?;
        for (i, w) in self.wire.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(b"[")?;
            serde_json::to_writer(&mut *out, &w.t)?;
            write!(out, ",\"{}\",", w.dir)?;
            serde_json::to_writer(&mut *out, &w.label)?;
            write!(out, ",{}]", w.raw)?;
        }
        out.write_all(b"],\"rows\":[")?;
        for (i, r) in self.rows.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            r.write(out)?;
        }
        out.write_all(b"]}")
    }
}
