//! Requests the agent makes of the host (`fs/*`, `terminal/*`): checked in the actor against the
//! session's roots (on the path text, synchronous, in wire order), then served by the built-in
//! services or the embedder from spawned tasks, so the actor never waits on a disk, a process or
//! the embedder. The policy decides fs paths in the task, on the path as requested and as
//! resolved inside the root (that needs I/O); terminal commands are decided in the actor. The
//! exception is a read the kernel serves from its caches without blocking
//! (`services/fs/cached.rs`): answered in the actor's step, with the same checks. Every call is
//! reported as an event.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::Value;
use serde_json::value::RawValue;

use super::answer::{self, Encoded, ReadJob, ReadStep};
use super::io::Ticket;
use super::receipts::ParkedEvent;
use super::{Actor, Completion};
use crate::events::{EventKind, raw_json};
use crate::permission::policy::{Policy, Subject, Verdict};
use crate::services::fs::{self, FsError};
use crate::services::terminal::{CreateTerminal, TerminalError};
use crate::services::{FsRead, FsService, FsWrite, ServiceError, TerminalService};
use crate::wire::message::{RawId, codes};

/// Decides, once, whether a served request takes effect: the service task commits right before
/// its effect (rename into place, process spawn, kill, the embedder's call), the actor cancels
/// when the agent withdraws the request. Whoever comes first wins, so after "cancelled" the
/// effect never happens, and after "committed" the agent gets the real result.
#[derive(Debug, Clone, Default)]
pub(super) struct Gate(Arc<AtomicU8>);

const PENDING: u8 = 0;
const COMMITTED: u8 = 1;
const CANCELLED: u8 = 2;

impl Gate {
    /// True if the effect may happen (now committed).
    pub fn commit(&self) -> bool {
        match self
            .0
            .compare_exchange(PENDING, COMMITTED, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => true,
            Err(state) => state == COMMITTED,
        }
    }

    /// True if the request is now cancelled (it had not committed).
    pub fn cancel(&self) -> bool {
        match self
            .0
            .compare_exchange(PENDING, CANCELLED, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => true,
            Err(state) => state == CANCELLED,
        }
    }

    fn cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst) == CANCELLED
    }
}

/// A request being served, keyed by the agent's id: `token` tells this request from a later
/// one that reuses the id after this one was withdrawn.
#[derive(Debug)]
pub(super) struct Served {
    token: u64,
    gate: Gate,
}

/// The message of an effect that did not happen because the agent withdrew the request.
const WITHDRAWN: &str = "request cancelled";

/// What a service task reports back.
#[derive(Debug)]
pub(super) struct ServedResult {
    pub token: u64,
    pub gate: Gate,
    pub id: RawId,
    /// The session it belongs to (an extension request may belong to none).
    pub session: Option<Arc<str>>,
    /// The answer, made and holding its room (see `answer`), or the error for the agent.
    pub result: Result<Encoded, ServiceError>,
    /// The event describing the call (emitted when the answer is sent).
    pub event: Option<(EventKind, Value)>,
    /// The built-in terminal the call created or used (see [`TerminalRef`]).
    pub terminal: Option<TerminalRef>,
}

/// A built-in terminal whose `terminal_exited` is not reported yet.
#[derive(Debug)]
pub(super) struct ExitWatch {
    pub session: Arc<str>,
    pub exit: tokio::sync::watch::Receiver<Option<crate::services::terminal::TerminalExit>>,
}

/// A built-in terminal a served call touched, for its `terminal_exited` event.
#[derive(Debug)]
pub(super) enum TerminalRef {
    /// `terminal/create` made it: watch its exit.
    Created(String),
    /// Another `terminal/*` call used it: if its exit is recorded, report it before the answer
    /// (which may reveal the exit to the agent, and so end its turn before the watcher reports).
    Used(String),
}

/// What a service's work hands back: the result, the event reporting the call, the terminal.
type ServedOutput = (
    Result<Value, ServiceError>,
    Option<(EventKind, Value)>,
    Option<TerminalRef>,
);

/// [`ServedOutput`] with the result made into its answer line: what reaches the actor.
type Answered = (
    Result<Encoded, ServiceError>,
    Option<(EventKind, Value)>,
    Option<TerminalRef>,
);

/// Why a call was refused before being served: the agent's error and the event reporting it.
type Refusal = Box<(ServiceError, Option<(EventKind, Value)>)>;

fn refuse(err: ServiceError, event: Option<(EventKind, Value)>) -> Refusal {
    Box::new((err, event))
}

fn invalid(message: impl Into<String>) -> ServiceError {
    ServiceError::new(codes::INVALID_PARAMS, message)
}

fn denied(rule: &str) -> ServiceError {
    ServiceError {
        code: codes::INVALID_PARAMS,
        message: format!("denied by the host's policy: {rule}"),
        data: Some(serde_json::json!({ "reason": "denied", "rule": rule })),
    }
}

fn fs_error(e: &FsError) -> ServiceError {
    let (code, message, data) = e.to_rpc();
    ServiceError {
        code,
        message,
        data,
    }
}

fn terminal_error(e: &TerminalError) -> ServiceError {
    let code = match e {
        TerminalError::NotFound(_) => codes::RESOURCE_NOT_FOUND,
        TerminalError::SpawnFailed { .. } | TerminalError::TooMany(_) => codes::INTERNAL_ERROR,
    };
    ServiceError {
        code,
        message: e.to_string(),
        data: Some(serde_json::json!({ "reason": e.kind() })),
    }
}

/// The policy's answer for an fs/terminal operation: only an explicit allow lets it through (an
/// `ask` verdict has nobody to ask for a request that is already on the wire: fail closed).
fn check(policy_verdict: Verdict) -> Result<(), String> {
    match policy_verdict {
        Verdict::Allow { .. } => Ok(()),
        Verdict::Deny { rule } => Err(rule),
        Verdict::Ask => Err("operation needs approval (policy says ask)".to_owned()),
    }
}

/// The policy's answer for an fs request, decided on the path as requested *and* on the path
/// that will actually be opened (restrictive rules match either, allow rules need both), and the
/// restrictive rules also on every other name of the file (a bind mount's source).
fn decide_fs(policy: &Policy, mut subject: Subject, opened: fs::Opened<'_>) -> Result<(), String> {
    for name in opened.other_names {
        let mut other = subject.clone();
        other.paths = vec![name.clone()];
        if let Some(rule) = policy.hard_deny(&other) {
            return Err(rule);
        }
    }
    if !subject.paths.iter().any(|p| p == opened.path) {
        subject.paths.push(opened.path.to_owned());
    }
    check(policy.evaluate(&subject))
}

/// For the embedder, which opens by path later: resolve `path` inside its root now and decide
/// on both forms (`FsError::Denied` names the rule).
async fn decide_resolved(
    policy: &Policy,
    subject: Subject,
    roots: &[PathBuf],
    path: &str,
) -> Result<fs::Target, FsError> {
    let target = fs::resolve_target(roots, path).await?;
    let opened = fs::Opened {
        path: &target.path,
        other_names: &target.other_names,
    };
    decide_fs(policy, subject, opened).map_err(|rule| FsError::Denied {
        path: path.to_owned(),
        rule,
    })?;
    Ok(target)
}

/// The agent's error and the event for an fs request that failed or was refused in its task.
fn fs_failure(
    e: &FsError,
    report: &dyn Fn(&str, Value) -> (EventKind, Value),
) -> (ServiceError, (EventKind, Value)) {
    let event = match e {
        FsError::Denied { rule, .. } => report("denied", serde_json::json!({ "rule": rule })),
        other => report(
            other.kind(),
            serde_json::json!({ "error": other.to_string() }),
        ),
    };
    (fs_error(e), event)
}

/// A read's answer and the event reporting it.
fn read_answered(
    result: Result<(Encoded, usize), FsError>,
    report: &dyn Fn(&str, Value) -> (EventKind, Value),
) -> Answered {
    match result {
        Ok((answer, bytes)) => {
            let event = report("ok", serde_json::json!({ "bytes": bytes }));
            (Ok(answer), Some(event), None)
        }
        Err(e) => {
            let (err, event) = fs_failure(&e, report);
            (Err(err), Some(event), None)
        }
    }
}

fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, ServiceError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("missing `{key}`")))
}

fn u32_param(params: &Value, key: &str) -> Option<u32> {
    params
        .get(key)
        .and_then(Value::as_u64)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

impl Actor {
    /// Sandbox roots of a session: its cwd, its additional directories, the host's roots.
    fn roots(&self, session: &str) -> Option<Vec<PathBuf>> {
        let entry = self.sessions.get(session)?;
        let view = entry.view.lock().ok()?;
        let mut roots: Vec<PathBuf> = view.cwd.iter().map(PathBuf::from).collect();
        roots.extend(view.additional_directories.iter().map(PathBuf::from));
        roots.extend(self.host.config.roots.iter().cloned());
        Some(roots)
    }

    fn session_cwd(&self, session: &str) -> Option<PathBuf> {
        let entry = self.sessions.get(session)?;
        let view = entry.view.lock().ok()?;
        view.cwd.as_ref().map(PathBuf::from)
    }

    /// The check every fs/terminal call passes in the actor before anything is touched: `path`
    /// lies inside the session's roots (lexically; the task resolves links). Returns the roots; a
    /// refusal carries the agent's error and the event reporting it.
    fn admit_roots(
        &self,
        session: &str,
        path: &str,
        report: &dyn Fn(&str, Value) -> (EventKind, Value),
    ) -> Result<Vec<PathBuf>, Refusal> {
        let roots = self.roots(session).unwrap_or_default();
        if let Err(e) = fs::locate(&roots, path) {
            let ev = report(e.kind(), serde_json::json!({ "error": e.to_string() }));
            return Err(refuse(fs_error(&e), Some(ev)));
        }
        Ok(roots)
    }

    /// [`Actor::admit_roots`], then the policy allows `subject` (only an explicit allow).
    fn admit(
        &self,
        session: &str,
        path: &str,
        subject: &Subject,
        report: &dyn Fn(&str, Value) -> (EventKind, Value),
    ) -> Result<Vec<PathBuf>, Refusal> {
        let roots = self.admit_roots(session, path, report)?;
        if let Err(rule) = check(self.host.policy.evaluate(subject)) {
            let ev = report("denied", serde_json::json!({ "rule": rule }));
            return Err(refuse(denied(&rule), Some(ev)));
        }
        Ok(roots)
    }

    pub(super) async fn on_service_request(
        &mut self,
        id: RawId,
        method: Box<str>,
        params: Option<Box<RawValue>>,
    ) {
        let params = super::params_value(params.as_deref());
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .map(Arc::<str>::from);
        let Some(session) = session.filter(|s| self.sessions.contains_key(&**s)) else {
            let err = invalid("unknown or missing sessionId");
            self.emit_call(None, invalid_call_event(&method, &params, &err))
                .await;
            self.answer(&id, Err(err)).await;
            return;
        };
        let started = match &*method {
            "fs/read_text_file" => self.fs_read(&id, &session, &params),
            "fs/write_text_file" => self.fs_write(&id, &session, &params).map(|()| None),
            "terminal/create" => self.terminal_create(&id, &session, &params).map(|()| None),
            m => self
                .terminal_other(&id, &session, m, params.clone())
                .map(|()| None),
        };
        match started {
            Ok(None) => {}
            Ok(Some((result, event, _))) => {
                // Answered in this step, as `on_served` would: the answer, then the event with
                // its receipt.
                let ticket = self.answer(&id, result).await;
                self.emit_call_receipt(Some(session), event, Some(ticket))
                    .await;
            }
            Err(refusal) => {
                let (err, event) = *refusal;
                // Every fs/terminal call is reported, malformed ones included.
                let event = event.or_else(|| invalid_call_event(&method, &params, &err));
                let ticket = self.answer(&id, Err(err)).await;
                self.emit_call_receipt(Some(session), event, Some(ticket))
                    .await;
            }
        }
    }

    /// Emit the event reporting a call (not even serialized with events off).
    async fn emit_call(&self, session: Option<Arc<str>>, event: Option<(EventKind, Value)>) {
        if let Some((kind, data)) = event
            && self.host.bus.enabled()
        {
            self.emit(self.event(kind, raw_json(&data)).session(session))
                .await;
        }
    }

    /// Emit the event reporting a call whose answer was sent (`ticket`), with the answer's
    /// receipt: at once when it is known, else once it is (`receipts.rs`).
    async fn emit_call_receipt(
        &mut self,
        session: Option<Arc<str>>,
        event: Option<(EventKind, Value)>,
        ticket: Option<Ticket>,
    ) {
        let (Some((kind, mut data)), Some(ticket)) = (event.clone(), ticket) else {
            return self.emit_call(session, event).await;
        };
        if !self.host.bus.enabled() {
            return;
        }
        match self.receipt_now(&ticket) {
            Some(r) => {
                data["receipt"] = r.to_json();
                self.emit_call(session, Some((kind, data))).await;
            }
            None => {
                let Value::Object(data) = data else {
                    return self.emit_call(session, Some((kind, data))).await;
                };
                let parked = ParkedEvent {
                    kind,
                    data,
                    session,
                    turn: None,
                };
                self.park_receipt(ticket, Some(parked));
            }
        }
    }

    /// Send the answer for a served request; its ticket.
    pub(super) async fn answer(
        &mut self,
        id: &RawId,
        result: Result<Encoded, ServiceError>,
    ) -> Ticket {
        match result {
            Ok(answer) => self.write_answer(answer).await,
            Err(e) => {
                // Error `data` nested past the message limit is left out.
                let Err(e) = crate::services::within_depth(Err(e)) else {
                    return Ticket::NotSent {
                        code: "invalid_argument",
                        message: "the answer could not be made".to_owned(),
                    };
                };
                let err = crate::wire::RpcError {
                    code: e.code,
                    message: e.message,
                    data: e.data,
                };
                self.write_reply(id, crate::wire::message::error_line(id, &err))
                    .await
            }
        }
    }

    /// Register the request as served (answered when its work reports back, see `on_served`):
    /// its gate, and how the work reports.
    fn register_served(
        &mut self,
        id: &RawId,
        session: Option<&Arc<str>>,
    ) -> (Gate, impl FnOnce(Answered) + Send + 'static) {
        self.next_served += 1;
        let token = self.next_served;
        let gate = Gate::default();
        self.served.insert(
            id.clone(),
            Served {
                token,
                gate: gate.clone(),
            },
        );
        let tx = self.done_tx.clone();
        let (id, session) = (id.clone(), session.cloned());
        let served_gate = gate.clone();
        let report = move |(result, event, terminal): Answered| {
            let _ = tx.send(Completion::Served(Box::new(ServedResult {
                token,
                gate: served_gate,
                id,
                session,
                result,
                event,
                terminal,
            })));
        };
        (gate, report)
    }

    /// Run `work` in a task of its own, registered as served. `work` gets the request's gate,
    /// to commit through right before its effect. A success is made into its answer line in the
    /// task, once the served answers' budget has room for it (see `answer`).
    fn spawn_served<W, F>(&mut self, id: &RawId, session: Option<&Arc<str>>, work: W)
    where
        W: FnOnce(Gate) -> F,
        F: std::future::Future<Output = ServedOutput> + Send + 'static,
    {
        let budget = self.budget.clone();
        let answer_id = id.clone();
        self.spawn_answered(id, session, move |gate| {
            let work = work(gate);
            async move {
                let (result, event, terminal) = work.await;
                let result = match result {
                    Ok(value) => answer::encode_result(&answer_id, &value, &budget).await,
                    Err(e) => Err(e),
                };
                (result, event, terminal)
            }
        });
    }

    /// [`Actor::spawn_served`] for work that makes its answer line itself.
    fn spawn_answered<W, F>(&mut self, id: &RawId, session: Option<&Arc<str>>, work: W)
    where
        W: FnOnce(Gate) -> F,
        F: std::future::Future<Output = Answered> + Send + 'static,
    {
        let (gate, report) = self.register_served(id, session);
        let work = work(gate);
        let agent = self.agent;
        tokio::spawn(async move {
            report(crate::services::serving(agent, work).await);
        });
    }

    /// A built-in read on the runtime's blocking pool, registered as served: `open` resolves,
    /// opens and decides; then [`ReadJob`] steps read and encode, each once the budget has room
    /// (a step that finds it busy waits for it in a task, holding nothing, then runs again on
    /// the blocking pool). The last step reports to the actor from its thread.
    fn spawn_served_read<O>(
        &mut self,
        id: &RawId,
        session: &Arc<str>,
        open: O,
        path: String,
        finish: impl FnOnce(Result<(Encoded, usize), FsError>) -> Answered + Send + 'static,
    ) where
        O: FnOnce() -> Result<ReadJob, FsError> + Send + 'static,
    {
        let (_gate, report) = self.register_served(id, Some(session));
        let done = move |result| report(finish(result));
        tokio::task::spawn_blocking(move || {
            let step = guarded(&path, move || match open() {
                Ok(job) => job.start(),
                Err(e) => ReadStep::Done(Err(e)),
            });
            drive_read(step, path, done);
        });
    }

    /// An agent's `_`-prefixed extension request, handed to the embedder's handler (configured:
    /// else the dispatcher answers -32601). Served like the other embedder calls: bounded, a
    /// withdrawn request never reaches the handler, reported as `ext_request`.
    pub(super) fn on_ext_request(&mut self, id: RawId, method: Box<str>, params: Value) {
        let Some(handler) = self.host.config.ext.handler() else {
            return;
        };
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .filter(|s| self.sessions.contains_key(*s))
            .map(Arc::<str>::from);
        let method = method.to_string();
        self.spawn_served(&id, session.as_ref(), |gate| async move {
            let report = |outcome: &str, extra: Value| {
                let base = serde_json::json!({ "method": method });
                (EventKind::ExtRequest, with(&base, outcome, extra))
            };
            if !gate.commit() {
                let err = ServiceError::new(codes::REQUEST_CANCELLED, WITHDRAWN);
                return (Err(err), Some(report("cancelled", Value::Null)), None);
            }
            let result = crate::services::within_depth(handler.handle(&method, params).await);
            let event = match &result {
                Ok(_) => report("ok", Value::Null),
                Err(e) => report(
                    "error",
                    serde_json::json!({ "error": { "code": e.code, "message": e.message } }),
                ),
            };
            (result, Some(event), None)
        });
    }

    /// `Ok(Some(_))`: answered now (a read served from the caches); `Ok(None)`: being served.
    fn fs_read(
        &mut self,
        id: &RawId,
        session: &Arc<str>,
        params: &Value,
    ) -> Result<Option<Answered>, Refusal> {
        let path = str_param(params, "path")
            .map_err(|e| refuse(e, None))?
            .to_owned();
        let (line, limit) = (u32_param(params, "line"), u32_param(params, "limit"));
        let base = serde_json::json!({ "path": path, "line": line, "limit": limit });
        let report =
            move |outcome: &str, extra: Value| (EventKind::FsRead, with(&base, outcome, extra));
        let roots = self.admit_roots(session, &path, &report)?;
        // What the answer's content may take as JSON text: the read limit, or what one answer
        // may hold (half of `max_outbound_bytes`, less its envelope), whichever is less.
        let max =
            answer::content_limit(self.host.config.fs_limits.max_read_bytes, &self.budget, id);
        let host = self.host.clone();
        let budget = self.budget.clone();
        let FsService::Embedder(handler) = self.host.config.fs.clone() else {
            // A read the kernel serves from its caches is answered in this step: no hop to a
            // blocking thread and back (most of a small read's round trip).
            let decide =
                |opened: fs::Opened<'_>| decide_fs(&host.policy, Subject::read(&path), opened);
            // A panic here must not reach the actor: the blocking path (guarded too) decides
            // again from scratch.
            let cached = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                answer::cached_read(id, &roots, &path, (line, limit), max, &budget, decide)
            }));
            if let Ok(Some(result)) = cached {
                return Ok(Some(read_answered(result, &report)));
            }
            // Anything else reads on a blocking thread, which answers the actor itself.
            let answer_id = id.clone();
            let open_path = path.clone();
            let open = move || {
                let decide = |opened: fs::Opened<'_>| {
                    decide_fs(&host.policy, Subject::read(&open_path), opened)
                };
                let opened = fs::open_read(&roots, &open_path, max, decide)?;
                Ok(ReadJob::new(&answer_id, opened, (line, limit), max, budget))
            };
            self.spawn_served_read(id, session, open, path, move |result| {
                read_answered(result, &report)
            });
            return Ok(None);
        };
        let session_id = session.to_string();
        let agent = self.agent;
        let answer_id = id.clone();
        self.spawn_answered(id, Some(session), |_gate| async move {
            let subject = Subject::read(&path);
            // The embedder opens by path: decide on the path resolved inside the root now (it
            // may still change before the embedder opens it; see PERMISSIONS.md).
            if let Err(e) = decide_resolved(&host.policy, subject, &roots, &path).await {
                let (err, event) = fs_failure(&e, &report);
                return (Err(err), Some(event), None);
            }
            let req = FsRead {
                agent,
                session_id,
                path: path.clone(),
                line,
                limit,
            };
            match handler.read_text_file(req).await {
                // The same limit as the built-in service's, on the text as it would travel.
                Ok(text) => read_answered(
                    answer::encode_text(&answer_id, text, &path, max, &budget).await,
                    &report,
                ),
                Err(e) => {
                    let event = report(&outcome_of(&e), serde_json::json!({ "error": e.message }));
                    (Err(e), Some(event), None)
                }
            }
        });
        Ok(None)
    }

    fn fs_write(&mut self, id: &RawId, session: &Arc<str>, params: &Value) -> Result<(), Refusal> {
        let path = str_param(params, "path")
            .map_err(|e| refuse(e, None))?
            .to_owned();
        let content = str_param(params, "content")
            .map_err(|e| refuse(e, None))?
            .to_owned();
        let bytes = content.len();
        let base = serde_json::json!({ "path": path, "bytes": bytes });
        let report =
            move |outcome: &str, extra: Value| (EventKind::FsWrite, with(&base, outcome, extra));
        let roots = self.admit_roots(session, &path, &report)?;
        let limits = self.host.config.fs_limits;
        if bytes as u64 > limits.max_write_bytes {
            let e = FsError::TooLarge {
                path: path.clone(),
                size: bytes as u64,
                limit: limits.max_write_bytes,
                encoded_size: None,
            };
            let ev = report(e.kind(), serde_json::json!({ "error": e.to_string() }));
            return Err(refuse(fs_error(&e), Some(ev)));
        }
        let service = self.host.config.fs.clone();
        let session_id = session.to_string();
        let agent = self.agent;
        let host = self.host.clone();
        self.spawn_served(id, Some(session), |gate| async move {
            let subject = Subject::write(&path);
            let result = match service {
                FsService::Embedder(handler) => {
                    // As for reads: decided on the resolved path, opened by the embedder later.
                    let decided = decide_resolved(&host.policy, subject, &roots, &path)
                        .await
                        .and_then(|target| target.refuse_write(&path, &content));
                    if let Err(e) = decided {
                        let (err, event) = fs_failure(&e, &report);
                        return (Err(err), Some(event), None);
                    }
                    if !gate.commit() {
                        return cancelled_call(&report);
                    }
                    let req = FsWrite {
                        agent,
                        session_id,
                        path: path.clone(),
                        content,
                    };
                    handler.write_text_file(req).await
                }
                _ => {
                    // Decided, then committed, right before the write touches anything.
                    let decide = move |opened: fs::Opened<'_>| {
                        decide_fs(&host.policy, subject, opened)?;
                        if gate.commit() {
                            Ok(())
                        } else {
                            Err(WITHDRAWN.to_owned())
                        }
                    };
                    if let Err(e) =
                        fs::write_text_file_checked(&roots, &path, &content, &limits, decide).await
                    {
                        let (err, event) = fs_failure(&e, &report);
                        return (Err(err), Some(event), None);
                    }
                    Ok(())
                }
            };
            let event = match &result {
                Ok(()) => report("ok", Value::Null),
                Err(e) => report(&outcome_of(e), serde_json::json!({ "error": e.message })),
            };
            (result.map(|()| serde_json::json!({})), Some(event), None)
        });
        Ok(())
    }

    fn terminal_create(
        &mut self,
        id: &RawId,
        session: &Arc<str>,
        params: &Value,
    ) -> Result<(), Refusal> {
        let command = str_param(params, "command")
            .map_err(|e| refuse(e, None))?
            .to_owned();
        let args: Vec<String> = match params.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Some(_) => return Err(refuse(invalid("`args` must be an array of strings"), None)),
        };
        let env: Vec<(String, String)> = match params.get("env") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|e| {
                    Some((
                        e.get("name")?.as_str()?.to_owned(),
                        e.get("value")?.as_str()?.to_owned(),
                    ))
                })
                .collect(),
            Some(_) => {
                return Err(refuse(
                    invalid("`env` must be an array of {name, value}"),
                    None,
                ));
            }
        };
        let output_byte_limit = params.get("outputByteLimit").and_then(Value::as_u64);
        let cwd = match params.get("cwd").and_then(Value::as_str) {
            Some(c) => PathBuf::from(c),
            None => self.session_cwd(session).unwrap_or_default(),
        };
        let base =
            serde_json::json!({ "command": command, "args": args, "cwd": cwd.to_string_lossy() });
        let report = move |outcome: &str, extra: Value| {
            (EventKind::TerminalCreated, with(&base, outcome, extra))
        };
        // The variables are part of what rules see: `GIT_CONFIG_*` or `BASH_ENV` turn an allowed
        // `git status` or `bash -c true` into any command.
        let subject = Subject::execute(&command, &args).with_env(env.iter().map(|(name, _)| name));
        let roots = self.admit(session, &cwd.to_string_lossy(), &subject, &report)?;
        let service = self.host.config.terminal.clone();
        let terminals = self.terminals.clone();
        let session_id = session.to_string();
        let raw_params = params.clone();
        self.spawn_served(id, Some(session), |gate| async move {
            // The cwd must stay inside the roots once links are resolved, and the built-in
            // terminal starts in the resolved directory.
            let cwd = match fs::resolve_in_roots(&roots, &cwd.to_string_lossy()).await {
                Ok(resolved) => PathBuf::from(resolved),
                Err(e) => {
                    let (err, event) = fs_failure(&e, &report);
                    return (Err(err), Some(event), None);
                }
            };
            if !gate.commit() {
                return cancelled_call(&report);
            }
            let result = match service {
                TerminalService::Embedder(handler) => {
                    handler.handle("terminal/create", raw_params).await
                }
                _ => {
                    let req = CreateTerminal {
                        session_id,
                        command: command.clone(),
                        args: args.clone(),
                        env,
                        cwd: cwd.clone(),
                        output_byte_limit,
                    };
                    // Off the runtime's workers: the spawn waits for the command's `exec`,
                    // which a leased program file can hold for the kernel's lease-break time.
                    let created = tokio::task::spawn_blocking(move || terminals.create(req)).await;
                    match created {
                        Ok(created) => created
                            .map(|t| serde_json::json!({ "terminalId": t }))
                            .map_err(|e| terminal_error(&e)),
                        Err(e) => Err(terminal_error(&TerminalError::SpawnFailed {
                            command: command.clone(),
                            message: format!("spawning failed: {e}"),
                        })),
                    }
                }
            };
            let (event, new_terminal) = match &result {
                Ok(v) => {
                    let tid = v
                        .get("terminalId")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    let created = tid.clone().map(TerminalRef::Created);
                    (
                        report("ok", serde_json::json!({ "terminalId": tid })),
                        created,
                    )
                }
                Err(e) => (
                    report("error", serde_json::json!({ "error": e.message })),
                    None,
                ),
            };
            (result, Some(event), new_terminal)
        });
        Ok(())
    }

    fn terminal_other(
        &mut self,
        id: &RawId,
        session: &Arc<str>,
        method: &str,
        params: Value,
    ) -> Result<(), Refusal> {
        let terminal_id = str_param(&params, "terminalId")
            .map_err(|e| refuse(e, None))?
            .to_owned();
        let method = method.to_owned();
        let service = self.host.config.terminal.clone();
        let terminals = self.terminals.clone();
        let session_id = session.to_string();
        self.spawn_served(id, Some(session), |gate| async move {
            let effect = !matches!(
                method.as_str(),
                "terminal/output" | "terminal/wait_for_exit"
            );
            if effect && !gate.commit() {
                let err = ServiceError::new(codes::REQUEST_CANCELLED, WITHDRAWN);
                return (Err(err), None, None);
            }
            if let TerminalService::Embedder(handler) = service {
                return (handler.handle(&method, params).await, None, None);
            }
            let result = match method.as_str() {
                "terminal/output" => terminals.output(&session_id, &terminal_id).map(|o| {
                    let mut v = serde_json::json!({ "output": o.output, "truncated": o.truncated });
                    if let Some(exit) = o.exit_status {
                        v["exitStatus"] = serde_json::to_value(exit).unwrap_or(Value::Null);
                    }
                    v
                }),
                "terminal/wait_for_exit" => terminals
                    .wait_for_exit(&session_id, &terminal_id)
                    .await
                    .map(|e| serde_json::to_value(e).unwrap_or(Value::Null)),
                "terminal/kill" => terminals
                    .kill(&session_id, &terminal_id)
                    .await
                    .map(|()| serde_json::json!({})),
                "terminal/release" => terminals
                    .release(&session_id, &terminal_id)
                    .await
                    .map(|()| serde_json::json!({})),
                other => {
                    return (
                        Err(ServiceError::new(
                            codes::METHOD_NOT_FOUND,
                            format!("method not found: {other}"),
                        )),
                        None,
                        None,
                    );
                }
            };
            let used = Some(TerminalRef::Used(terminal_id));
            (result.map_err(|e| terminal_error(&e)), None, used)
        });
        Ok(())
    }

    /// A service task finished: answer the agent (unless it withdrew the request) and report.
    pub(super) async fn on_served(&mut self, done: ServedResult) {
        let ServedResult {
            token,
            gate,
            id,
            session,
            result,
            mut event,
            terminal,
        } = done;
        // The agent is gone (a task that outlived it, e.g. an embedder answering late or a
        // request abandoned at the exit): nothing of it follows `agent_exited`.
        if self.gone.is_some() {
            return;
        }
        // Only the request this task served is answered: the id may belong to a newer request
        // by now (the agent withdrew this one and reused its id).
        let mine = self.served.get(&id).is_some_and(|s| s.token == token);
        if mine {
            self.served.remove(&id);
        }
        match (&terminal, &session) {
            (Some(TerminalRef::Created(tid)), Some(session)) => self.watch_terminal(session, tid),
            (Some(TerminalRef::Used(tid)), _) => self.terminal_exited(tid, false).await,
            _ => {}
        }
        if gate.cancelled()
            && let Some((_, data)) = &mut event
        {
            data["outcome"] = Value::from("cancelled");
            if let Value::Object(d) = data {
                d.remove("error");
                d.remove("rule");
            }
        }
        if mine && self.gone.is_none() {
            let ticket = self.answer(&id, result).await;
            self.emit_call_receipt(session, event, Some(ticket)).await;
        } else {
            self.emit_call(session, event).await;
        }
    }

    /// Report a built-in terminal's exit once: from the watcher task (`watcher`: the exit is
    /// recorded or the terminal is gone), or before answering a call on it that finds the exit
    /// recorded, whichever comes first. The agent can learn the exit only from such an answer,
    /// so `terminal_exited` precedes whatever the agent does knowing it (ending its turn).
    pub(super) async fn terminal_exited(&mut self, terminal_id: &str, watcher: bool) {
        let Some(watched) = self.terminal_exits.get(terminal_id) else {
            return;
        };
        let exit = watched.exit.borrow().clone();
        if exit.is_none() && !watcher {
            return;
        }
        let Some(watched) = self.terminal_exits.remove(terminal_id) else {
            return;
        };
        let data = serde_json::json!({
            "terminalId": terminal_id,
            "exitCode": exit.as_ref().and_then(|e| e.exit_code),
            "signal": exit.as_ref().and_then(|e| e.signal.clone()),
        });
        self.emit(
            self.event(EventKind::TerminalExited, raw_json(&data))
                .session(Some(watched.session)),
        )
        .await;
    }

    fn watch_terminal(&mut self, session: &Arc<str>, terminal_id: &str) {
        let Some(exit) = self.terminals.exit_notifier(terminal_id) else {
            return;
        };
        let mut rx = exit.clone();
        self.terminal_exits.insert(
            terminal_id.to_owned(),
            ExitWatch {
                session: session.clone(),
                exit,
            },
        );
        let tx = self.done_tx.clone();
        let terminal_id = terminal_id.to_owned();
        tokio::spawn(async move {
            // Err: the terminal is gone without a recorded exit; reported with no status.
            let _ = rx.wait_for(Option::is_some).await;
            #[cfg(test)]
            let _ = super::terminal_exit_tests::WATCHERS_HELD
                .subscribe()
                .wait_for(|held| !held)
                .await;
            let _ = tx.send(Completion::TerminalExited { terminal_id });
        });
    }

    /// The agent withdrew a served request (`$/cancel_request`). If its effect has not happened
    /// yet, it never will: answer `-32800` now (the task's late result is dropped). If it already
    /// committed, the real result is sent when the task is done. Returns whether `target` was a
    /// served request.
    pub(super) async fn withdraw_served(&mut self, target: &Value) -> bool {
        let found = self
            .served
            .keys()
            .find(|k| &k.to_value() == target)
            .cloned();
        let Some(id) = found else { return false };
        let cancelled = self.served.get(&id).is_some_and(|s| s.gate.cancel());
        if cancelled {
            self.served.remove(&id);
            self.answer(
                &id,
                Err(ServiceError::new(codes::REQUEST_CANCELLED, WITHDRAWN)),
            )
            .await;
        }
        true
    }
}

/// A step of a read; a panic in it is an `io` error for that read (it must still answer the
/// agent, and never reach the actor).
fn guarded(path: &str, step: impl FnOnce() -> ReadStep) -> ReadStep {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).unwrap_or_else(|_| {
        ReadStep::Done(Err(FsError::Io {
            path: path.to_owned(),
            message: "fs worker failed".to_owned(),
        }))
    })
}

/// After a read step: report its answer, or wait for room in the budget (in a task, holding
/// nothing) and take the next step on the blocking pool.
fn drive_read<D>(step: ReadStep, path: String, done: D)
where
    D: FnOnce(Result<(Encoded, usize), FsError>) + Send + 'static,
{
    match step {
        ReadStep::Done(result) => done(result),
        ReadStep::Need(job, want) => {
            tokio::spawn(async move {
                // `None`: the connection ended, nobody is left to answer.
                let Some(held) = job.budget().hold(want).await else {
                    return;
                };
                tokio::task::spawn_blocking(move || {
                    let step = guarded(&path, move || job.resume(Some(held)));
                    drive_read(step, path, done);
                });
            });
        }
    }
}

/// The outcome of a call whose effect was skipped because the agent withdrew it (the agent
/// already got `-32800`; this result is never sent).
fn cancelled_call(report: &dyn Fn(&str, Value) -> (EventKind, Value)) -> ServedOutput {
    (
        Err(ServiceError::new(codes::REQUEST_CANCELLED, WITHDRAWN)),
        Some(report("cancelled", Value::Null)),
        None,
    )
}

/// The event for an fs/terminal call refused before it could be served (bad params, unknown
/// session): outcome `invalid_params`.
fn invalid_call_event(
    method: &str,
    params: &Value,
    err: &ServiceError,
) -> Option<(EventKind, Value)> {
    let kind = match method {
        "fs/read_text_file" => EventKind::FsRead,
        "fs/write_text_file" => EventKind::FsWrite,
        "terminal/create" => EventKind::TerminalCreated,
        _ => return None,
    };
    let mut data = serde_json::json!({ "outcome": "invalid_params", "error": err.message });
    for key in ["path", "command"] {
        if let Some(v) = params.get(key) {
            data[key] = v.clone();
        }
    }
    Some((kind, data))
}

/// Event data: `base` plus `outcome` plus the fields of `extra`.
fn with(base: &Value, outcome: &str, extra: Value) -> Value {
    let mut d = base.clone();
    d["outcome"] = Value::from(outcome);
    if let (Value::Object(d), Value::Object(e)) = (&mut d, extra) {
        d.extend(e);
    }
    d
}

/// Event `outcome` for a failed service call: the fs error kind when known, else `error`.
fn outcome_of(e: &ServiceError) -> String {
    e.data
        .as_ref()
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            if e.code == codes::RESOURCE_NOT_FOUND {
                "not_found".into()
            } else {
                "error".into()
            }
        })
}
