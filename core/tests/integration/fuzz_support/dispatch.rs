//! The dispatch harness: a fake agent over an in-memory duplex completes the handshake, opens
//! session `s`, writes an arbitrary script of lines at the host, and then checks that the host
//! answered every request exactly once, stayed responsive (a barrier request, a prompt round trip
//! and an orderly shutdown, each within [`BOUND`]), kept its event stream consistent and ended it
//! with `agent_exited`. Shared by `core/tests/integration/fuzz_dispatch.rs` and `fuzz/fuzz_targets/dispatch.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_host::permission::policy::Policy;
use acp_host::wire::LineReader;
use acp_host::wire::message::Interner;
use acp_host::{EventKind, Host, HostConfig, PermissionHandler, PermissionRequest, SessionOptions};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::AsyncWriteExt;
use tokio::sync::{Notify, mpsc};

use super::wire::{Decoded, decode_frame, model_frames};

/// How long any one step may take before the host counts as hung.
pub const BOUND: Duration = Duration::from_secs(10);
/// The id of the request the fake agent sends after the script: its answer proves the host has
/// worked through every line before it.
pub const BARRIER_ID: &str = "\"fuzz-barrier\"";
/// The session the fake agent opens.
pub const SESSION: &str = "s";

/// Who answers permission requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// The fail-closed default (no decider).
    DenyAll,
    /// A decider that, by request id, picks the first option, an option that was not offered,
    /// denies, fails, or answers after a few milliseconds. It never hangs.
    Decider,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub handler: Handler,
    pub wire_events: bool,
    pub max_line: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            handler: Handler::Decider,
            wire_events: false,
            max_line: 4096,
        }
    }
}

/// What the fake agent saw from the host.
#[derive(Debug, Default)]
struct Seen {
    /// Raw id text of every response the host sent → how many.
    responses: BTreeMap<String, usize>,
    /// Lines from the host that were not JSON objects.
    bad_lines: Vec<String>,
}

/// What one run observed (for growth checks by the caller).
#[derive(Debug)]
pub struct Report {
    pub responses: BTreeMap<String, usize>,
    pub expected: BTreeMap<String, usize>,
    pub events: usize,
    pub tool_calls: usize,
}

/// What the host should make of the script, by the public decoder (checked in its own right by
/// `fuzz_wire.rs`): request id → how many requests used it, and how many tool-call updates name
/// session `s`.
pub fn expectations(
    script: &[u8],
    max_line: usize,
) -> Result<(BTreeMap<String, usize>, usize), String> {
    let mut data = script.to_vec();
    data.push(b'\n');
    let mut interner = Interner::default();
    let mut expected = BTreeMap::new();
    let mut tool_updates = 0;
    for frame in model_frames(&data, max_line) {
        match decode_frame(&frame, &mut interner)? {
            Decoded::Request { id, .. }
            | Decoded::TooDeep {
                id: Some(id),
                method: Some(_),
            } => *expected.entry(id).or_insert(0) += 1,
            Decoded::Update { session, kind }
                if session == SESSION && (kind == "tool_call" || kind == "tool_call_update") =>
            {
                tool_updates += 1;
            }
            _ => {}
        }
    }
    Ok((expected, tool_updates))
}

fn decider() -> PermissionHandler {
    PermissionHandler::Decider(Arc::new(|req: PermissionRequest| async move {
        let first = req.options.first().map(|o| o.option_id.clone());
        match req.request_id % 6 {
            0 => Ok(first),
            1 => Ok(Some("not-offered".to_owned())),
            2 => Ok(None),
            3 => Err("decider failed".to_owned()),
            n => {
                tokio::time::sleep(Duration::from_millis(n * 3)).await;
                Ok(first)
            }
        }
    }))
}

fn config(opts: &Options) -> Result<HostConfig, String> {
    // Reads allowed (so fs/read_text_file reaches the sandbox), writes and commands denied (the
    // script must not run anything), permission requests go to the handler.
    let policy = match opts.handler {
        Handler::DenyAll => None,
        Handler::Decider => Some(
            Policy::from_json(
                r#"{"preset":"ask","rules":[{"action":"deny","operations":["write","execute"]}]}"#,
            )
            .map_err(|e| format!("test policy: {e}"))?,
        ),
    };
    Ok(HostConfig {
        max_line_bytes: opts.max_line,
        wire_events: opts.wire_events,
        permission: match opts.handler {
            Handler::DenyAll => PermissionHandler::DenyAll,
            Handler::Decider => decider(),
        },
        policy,
        // With a decider, elicitations are advertised and answered (valid or not: the core
        // checks content against the requested schema).
        elicitation: match opts.handler {
            Handler::DenyAll => acp_host::ElicitationHandler::Unsupported,
            Handler::Decider => acp_host::ElicitationHandler::Decider {
                modes: acp_host::ElicitationModes::FORM_AND_URL,
                decider: std::sync::Arc::new(|req: acp_host::ElicitationRequest| async move {
                    Ok(match req.kind {
                        acp_host::ElicitationKind::Form { .. } => {
                            acp_host::ElicitationAnswer::Accept(acp_host::elicitation::content(
                                serde_json::json!({"x": 1}),
                            ))
                        }
                        acp_host::ElicitationKind::Url { .. } => {
                            acp_host::ElicitationAnswer::Accept(None)
                        }
                    })
                }),
            },
        },
        request_timeout: Some(BOUND),
        permission_timeout: Duration::from_secs(5),
        shutdown_grace: Duration::from_millis(200),
        ..HostConfig::default()
    })
}

#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
}

fn line(v: &Value) -> Vec<u8> {
    let mut s = v.to_string().into_bytes();
    s.push(b'\n');
    s
}

/// The fake agent's reading side: answers the host's requests, counts the host's responses.
async fn respond(
    reader: tokio::io::ReadHalf<tokio::io::DuplexStream>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    seen: Arc<Mutex<Seen>>,
    progress: Arc<Notify>,
) {
    let mut lines = LineReader::new(reader, usize::MAX / 2);
    while let Ok(Some(frame)) = lines.next_frame().await {
        let acp_host::wire::Frame::Line(bytes) = frame else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let Ok(head) = serde_json::from_str::<Head<'_>>(&text) else {
            if let Ok(mut s) = seen.lock() {
                s.bad_lines.push(text.clone());
            }
            continue;
        };
        let id: Option<Value> = head.id.and_then(|r| serde_json::from_str(r.get()).ok());
        match (head.method.as_deref(), id) {
            (Some(method), Some(id)) => {
                let reply = match method {
                    "initialize" => {
                        serde_json::json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":1}})
                    }
                    "session/new" => {
                        serde_json::json!({"jsonrpc":"2.0","id":id,"result":{"sessionId":SESSION}})
                    }
                    "session/prompt" => {
                        let chunk = serde_json::json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":SESSION,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"still here"}}}});
                        let _ = out.send(line(&chunk));
                        serde_json::json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn"}})
                    }
                    _ => {
                        serde_json::json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"fake agent"}})
                    }
                };
                let _ = out.send(line(&reply));
            }
            (Some(_), None) => {} // a notification from the host (session/cancel, ...)
            (None, _) => {
                let raw = head.id.map_or("null".to_owned(), |r| r.get().to_owned());
                if let Ok(mut s) = seen.lock() {
                    *s.responses.entry(raw).or_insert(0) += 1;
                }
                progress.notify_waiters();
            }
        }
    }
    // The host closed our stdin: close our stdout in turn (drop the last sender but the script's).
}

async fn write_all(
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let mut writer = writer;
    while let Some(bytes) = rx.recv().await {
        if writer.write_all(&bytes).await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(BOUND, fut)
        .await
        .map_err(|_| format!("hang: {what} did not complete within {BOUND:?}"))
}

/// Wait until `done(seen)` holds (re-checked on every response the fake agent gets).
async fn wait_seen(
    what: &str,
    seen: &Arc<Mutex<Seen>>,
    progress: &Notify,
    done: impl Fn(&Seen) -> bool,
) -> Result<(), String> {
    within(what, async {
        loop {
            let notified = progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if seen.lock().map(|s| done(&s)).unwrap_or(true) {
                return;
            }
            // A timer too: a served request may be answered between check and wait.
            let _ = tokio::time::timeout(Duration::from_millis(20), notified).await;
        }
    })
    .await
}

/// Run `script` (raw bytes, written as they are, then a newline and the barrier request) against
/// a host and check every invariant. `Err` describes the first one broken.
pub async fn run(script: &[u8], opts: &Options) -> Result<Report, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let cwd = dir
        .path()
        .canonicalize()
        .map_err(|e| format!("canonicalize: {e}"))?;
    std::fs::write(cwd.join("hello.txt"), "hello\nworld\n").map_err(|e| format!("write: {e}"))?;
    // `@CWD@` stands inside JSON strings: a Windows path's backslashes are escaped there, and
    // its verbatim prefix (`\\?\`, from canonicalize) dropped, as an agent would send it.
    let cwd = match cwd.to_string_lossy().strip_prefix(r"\\?\") {
        Some(plain) => PathBuf::from(plain),
        None => cwd,
    };
    let cwd_json = serde_json::to_string(&cwd.to_string_lossy()).map_err(|e| e.to_string())?;
    let cwd_json = cwd_json.trim_matches('"');
    let script = substitute(script, b"@CWD@", cwd_json.as_bytes());
    let script = script.as_slice();
    let (expected, tool_updates) = expectations(script, opts.max_line)?;

    let host = Host::new(config(opts)?);
    let stream = host.events().ok_or("no event stream")?;
    // Drain events all along (a full queue would stop the host reading the agent) and keep what
    // the checks need.
    let collector = tokio::spawn(async move {
        let mut kinds: Vec<EventKind> = Vec::new();
        let mut requested = Vec::new();
        let mut resolved = Vec::new();
        while let Some(ev) = stream.next().await {
            match ev.kind {
                EventKind::PermissionRequested => {
                    requested.push(ev.data_value()["requestId"].clone())
                }
                EventKind::PermissionResolved => {
                    resolved.push(ev.data_value()["requestId"].clone())
                }
                _ => {}
            }
            kinds.push(ev.kind);
            if ev.kind == EventKind::AgentExited {
                break;
            }
        }
        (kinds, requested, resolved, stream)
    });

    let (client_side, agent_side) = tokio::io::duplex(64 * 1024);
    let (agent_read, agent_write) = tokio::io::split(agent_side);
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let progress = Arc::new(Notify::new());
    let writer = tokio::spawn(write_all(agent_write, out_rx));
    let responder = tokio::spawn(respond(
        agent_read,
        out_tx.clone(),
        seen.clone(),
        progress.clone(),
    ));

    let (r, w) = tokio::io::split(client_side);
    let agent = within("the initialize handshake", host.connect(r, w))
        .await?
        .map_err(|e| format!("connect: {e}"))?;
    let session = within(
        "session/new",
        agent.new_session(SessionOptions::new(cwd.to_string_lossy())),
    )
    .await?
    .map_err(|e| format!("session/new: {e}"))?;

    let mut bytes = script.to_vec();
    bytes.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":");
    bytes.extend_from_slice(BARRIER_ID.as_bytes());
    bytes.extend_from_slice(b",\"method\":\"fuzz/barrier\"}\n");
    out_tx.send(bytes).map_err(|_| "fake agent writer gone")?;
    wait_seen(
        "the barrier request after the script",
        &seen,
        &progress,
        |s| s.responses.contains_key(BARRIER_ID),
    )
    .await?;
    // Served requests (fs reads, terminal calls) and deciders answer from tasks: wait for them.
    wait_seen(
        "an answer to every request of the script",
        &seen,
        &progress,
        |s| expected.keys().all(|id| s.responses.contains_key(id)),
    )
    .await?;

    let turn = within(
        "a prompt round trip after the script",
        session.prompt_text("final"),
    )
    .await?
    .map_err(|e| format!("final prompt: {e}"))?;
    if turn.stop_reason != "end_turn" {
        return Err(format!("final prompt stopped with {}", turn.stop_reason));
    }
    let tool_calls = session.state().tool_calls.len();
    if tool_calls > tool_updates {
        return Err(format!(
            "{tool_calls} tool calls in the session view from {tool_updates} tool-call updates"
        ));
    }

    drop(out_tx);
    within("agent.shutdown()", agent.shutdown()).await?;
    let (mut kinds, requested, resolved, stream) = within("agent_exited", collector)
        .await?
        .map_err(|e| format!("event collector: {e}"))?;
    within("the fake agent's reader", responder)
        .await?
        .map_err(|e| format!("fake agent: {e}"))?;
    within("the fake agent's writer", writer)
        .await?
        .map_err(|e| format!("fake agent: {e}"))?;

    // Everything is shut down: an event queued after agent_exited would be a bug.
    tokio::task::yield_now().await;
    while let Some(late) = stream.try_next() {
        kinds.push(late.kind);
    }
    let exits = kinds
        .iter()
        .filter(|k| **k == EventKind::AgentExited)
        .count();
    if exits != 1 || kinds.last() != Some(&EventKind::AgentExited) {
        return Err(format!(
            "the event stream must end with exactly one agent_exited; tail: {:?}",
            &kinds[kinds.len().saturating_sub(5)..]
        ));
    }
    let req: BTreeSet<String> = requested.iter().map(Value::to_string).collect();
    let res: BTreeSet<String> = resolved.iter().map(Value::to_string).collect();
    if req.len() != requested.len() || res.len() != resolved.len() || req != res {
        return Err(format!(
            "permission_requested {requested:?} vs permission_resolved {resolved:?}: each must be resolved exactly once"
        ));
    }

    let seen = std::mem::take(&mut *seen.lock().map_err(|_| "seen poisoned")?);
    if let Some(bad) = seen.bad_lines.first() {
        return Err(format!(
            "the host wrote a line that is not JSON-RPC: {bad:?}"
        ));
    }
    // The script may itself use the barrier's id: count the barrier as one more request.
    let mut expected = expected;
    *expected.entry(BARRIER_ID.to_owned()).or_insert(0) += 1;
    for (id, &n) in &seen.responses {
        match expected.get(id) {
            None => {
                return Err(format!(
                    "the host answered id {id} that no request used ({n}x)"
                ));
            }
            Some(&k) if n > k => {
                return Err(format!("id {id}: {n} answers to {k} request(s)"));
            }
            _ => {}
        }
    }
    for (id, &k) in &expected {
        let n = seen.responses.get(id).copied().unwrap_or(0);
        // A reused id while the first is pending is refused without an answer (duplicate_request_id).
        if n == 0 || (k == 1 && n != 1) {
            return Err(format!("id {id}: {n} answers to {k} request(s)"));
        }
    }
    Ok(Report {
        responses: seen.responses,
        expected,
        events: kinds.len(),
        tool_calls,
    })
}

/// `data` with every `pat` replaced by `with`.
pub fn substitute(data: &[u8], pat: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        if data[i..].starts_with(pat) {
            out.extend_from_slice(with);
            i += pat.len();
        } else {
            out.push(data[i]);
            i += 1;
        }
    }
    out
}

/// Entry point for libFuzzer: the first byte picks the options, the rest is the script.
pub fn fuzz_one(rt: &tokio::runtime::Runtime, data: &[u8]) -> Result<(), String> {
    let (opts, script) = match data.split_first() {
        Some((&b, rest)) => (
            Options {
                handler: if b & 1 == 0 {
                    Handler::Decider
                } else {
                    Handler::DenyAll
                },
                wire_events: b & 2 != 0,
                max_line: if b & 4 != 0 { 128 } else { 4096 },
            },
            rest,
        ),
        None => (Options::default(), data),
    };
    rt.block_on(run(script, &opts)).map(|_| ())
}
