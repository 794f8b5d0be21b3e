//! Node addon of acp-host: a thin napi-rs layer over the Rust core. The public API is the
//! TypeScript facade in `ts/` (package `acp-host`); nothing here is meant to be used directly.
//!
//! Conventions of this layer:
//! - every core error crosses as a JS `Error` whose message is `ERR_PREFIX` + the core's
//!   `{kind, message, data}` JSON; the facade turns it into an `AcpError`;
//! - events cross in batches, as one JSON array string per `nextEvents` call (one `JSON.parse`
//!   on the JS side is far cheaper than building objects property by property through napi);
//! - JS callbacks (permission and elicitation dispatchers, fs/terminal/extension hooks) are weak
//!   threadsafe functions: they never keep the Node event loop alive on
//!   their own;
//! - a pending `nextEvents` call ends (with `null`) when the host is closed, so after `close()`
//!   no napi work is left pending.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use acp_host::elicitation::ElicitationFuture;
use acp_host::options::{Face, Hooks};
use acp_host::services::{
    ExtHandler, FsHandler, FsRead, FsWrite, ServiceError, ServiceFuture, TerminalHandler,
};
use acp_host::{
    Agent, AgentSpec, ElicitationAnswer, ElicitationDecider, ElicitationRequest, Event,
    EventStream, Host, HostConfig, PermissionDecider, PermissionRequest, Pool, Session,
    SessionOptions, TurnResult,
};
use napi::Status;
use napi::bindgen_prelude::{Promise, Result};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::watch;

mod connect;
mod log;
mod pool;
mod registry;

/// Prefix of the message of every error that carries a core error as JSON.
const ERR_PREFIX: &str = "\u{1}acp-host:";

fn core_err(e: acp_host::Error) -> napi::Error {
    napi::Error::new(
        Status::GenericFailure,
        format!("{ERR_PREFIX}{}", e.to_json()),
    )
}

fn err_json(kind: &str, message: impl Into<String>) -> napi::Error {
    let v = serde_json::json!({ "kind": kind, "message": message.into(), "data": null });
    napi::Error::new(Status::GenericFailure, format!("{ERR_PREFIX}{v}"))
}

fn invalid(message: impl Into<String>) -> napi::Error {
    err_json("invalid_argument", message)
}

fn closed_err() -> napi::Error {
    err_json("closed", "the host was closed")
}

// ------------------------------------------------------------------ JS callbacks

/// `(message) => void`: the facade's permission dispatcher. A message is either a request
/// (`PermissionRequest` plus a `token`, see `handed_request`; the facade answers with
/// `permissionDecision(token, …)`, a direct call: no Promise crosses the boundary, which saves a
/// round of callbacks per request) or `{"settled": requestId}` (no newline) once a request it
/// was handed was settled by anyone else. One function for both keeps them in order: a request
/// is always delivered before its `settled` notice (two functions are two queues, which the event
/// loop may drain in either order).
type PermissionFn = ThreadsafeFunction<String, (), String, Status, false, true>;
/// `(messageJson) => void`: the facade's elicitation dispatcher. A message is either a request
/// (the core's `ElicitationRequest` plus a `token`; the facade answers with
/// `elicitationDecision(token, …)`) or `{"settled": requestId}` once a request it was handed was
/// settled by anyone else. One function for both keeps them in order: a request is always
/// delivered before its `settled` notice.
type ElicitFn = ThreadsafeFunction<String, (), String, Status, false, true>;
/// `(callJson) => Promise<string>`: the facade's fs/terminal/extension dispatcher (a call is
/// `{"method", "params"}`; extension methods start with `_`); resolves with `{"result": …}` or
/// `{"error": {code, message, data?}}` as JSON.
type ServiceFn = ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

struct JsDecider {
    decide: Arc<PermissionFn>,
}

impl PermissionDecider for JsDecider {
    fn decide(&self, request: PermissionRequest) -> acp_host::permission::DecisionFuture {
        let decide = self.decide.clone();
        Box::pin(async move {
            let (token, rx) = Decisions::open();
            let message = handed_request(token, &request).map_err(|e| e.to_string())?;
            let status = decide.call(message, ThreadsafeFunctionCallMode::NonBlocking);
            if status != Status::Ok {
                Decisions::close(token);
                return Err(format!("permission handler unavailable: {status}"));
            }
            // This future is dropped when the request is settled by anyone else (timeout,
            // cancel, another answer, the host closing): then JS is told, unless it answered.
            let mut pending = Unanswered {
                token,
                request_id: request.request_id,
                notify: Some(decide),
            };
            let answer = rx
                .await
                .map_err(|_| "permission handler went away".to_owned())
                .and_then(|a| a);
            pending.notify = None;
            answer
        })
    }
}

/// What the facade's dispatcher is handed: the request's fields but the tool call plus its
/// `token` as one JSON object, a newline, and the tool call's JSON text as the agent sent it
/// (JSON text holds no raw newline). The facade parses the tool call only if the handler reads
/// it.
fn handed_request(token: u32, request: &PermissionRequest) -> serde_json::Result<String> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Handed<'a> {
        token: u32,
        request_id: u64,
        agent: u64,
        session_id: &'a str,
        turn: Option<u64>,
        options: &'a [acp_host::PermissionOption],
    }
    let tool_call = request.tool_call.json();
    let mut out = Vec::with_capacity(256 + tool_call.len());
    serde_json::to_writer(
        &mut out,
        &Handed {
            token,
            request_id: request.request_id,
            agent: request.agent,
            session_id: &request.session_id,
            turn: request.turn,
            options: &request.options,
        },
    )?;
    out.push(b'\n');
    out.extend_from_slice(tool_call.as_bytes());
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// A request JS was handed and has not answered: dropping it forgets the token (a late answer
/// is ignored) and tells JS the request was settled.
struct Unanswered {
    token: u32,
    request_id: u64,
    /// The dispatcher that was handed the request; `None` once JS answered.
    notify: Option<Arc<PermissionFn>>,
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        Decisions::close(self.token);
        if let Some(notify) = self.notify.take() {
            notify.call(
                format!("{{\"settled\":{}}}", self.request_id),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }
    }
}

type Decision = std::result::Result<Option<String>, String>;

/// Pending permission decisions, by token (host-independent: tokens are process-wide).
struct Decisions;

impl Decisions {
    fn map() -> &'static Mutex<HashMap<u32, tokio::sync::oneshot::Sender<Decision>>> {
        static MAP: OnceLock<Mutex<HashMap<u32, tokio::sync::oneshot::Sender<Decision>>>> =
            OnceLock::new();
        MAP.get_or_init(|| Mutex::new(HashMap::new()))
    }

    fn open() -> (u32, tokio::sync::oneshot::Receiver<Decision>) {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let token = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Ok(mut m) = Self::map().lock() {
            m.insert(token, tx);
        }
        (token, rx)
    }

    fn close(token: u32) -> Option<tokio::sync::oneshot::Sender<Decision>> {
        Self::map().lock().ok()?.remove(&token)
    }
}

struct TokenGuard(u32);

impl Drop for TokenGuard {
    fn drop(&mut self) {
        Decisions::close(self.0);
    }
}

/// The facade's answer to a permission request it was handed: the chosen option id (`null`
/// denies), or `error` when the handler failed (denies, `decidedBy: invalid_answer`). An unknown or
/// stale token is ignored (the request was already settled).
#[napi]
pub fn permission_decision(token: u32, option_id: Option<String>, error: Option<String>) {
    if let Some(tx) = Decisions::close(token) {
        let _ = tx.send(match error {
            // The core adds "the permission handler failed: ".
            Some(e) => Err(e),
            None => Ok(option_id),
        });
    }
}

struct JsElicitor {
    call: Arc<ElicitFn>,
}

impl ElicitationDecider for JsElicitor {
    fn decide(&self, request: ElicitationRequest) -> ElicitationFuture {
        let call = self.call.clone();
        Box::pin(async move {
            // Set once the handler answered: then JS already knows, and is not told again.
            let answered = Arc::new(AtomicBool::new(false));
            {
                let mut watch = request.settled.clone();
                let id = request.request_id;
                let answered = answered.clone();
                let call = call.clone();
                tokio::spawn(async move {
                    watch.wait().await;
                    if !answered.load(Ordering::Acquire) {
                        call.call(
                            format!("{{\"settled\":{id}}}"),
                            ThreadsafeFunctionCallMode::NonBlocking,
                        );
                    }
                });
            }
            let json = serde_json::to_string(&request).map_err(|e| e.to_string())?;
            let (token, rx) = Decisions::open();
            // `{"token":N,` + the request's fields.
            let json = format!("{{\"token\":{token},{}", json.get(1..).unwrap_or("}"));
            let status = call.call(json, ThreadsafeFunctionCallMode::NonBlocking);
            if status != Status::Ok {
                Decisions::close(token);
                return Err(format!("elicitation handler unavailable: {status}"));
            }
            // Dropped (timeout, settled elsewhere): the token is forgotten; a late answer is ignored.
            let guard = TokenGuard(token);
            let answer = rx
                .await
                .map_err(|_| "elicitation handler went away".to_owned())
                .and_then(|a| a);
            drop(guard);
            answered.store(true, Ordering::Release);
            let text = answer?.ok_or_else(|| "onElicitation gave no answer".to_owned())?;
            parse_answer(&text)
                .map_err(|e| format!("onElicitation returned an invalid answer: {e}"))
        })
    }
}

/// An answer in the ACP response shape, `{"action": "accept"|"decline"|"cancel", "content"?}`.
fn parse_answer(json: &str) -> std::result::Result<ElicitationAnswer, String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    if !v.is_object() {
        return Err("an answer is an object `{action, content?}`".into());
    }
    ElicitationAnswer::from_json(&v)
}

/// The facade's answer to an elicitation request it was handed: the answer as JSON, or `error`
/// when the handler failed (answers `cancel`, `decidedBy: invalid_answer`). An unknown or stale
/// token is ignored (the request was already settled).
#[napi]
pub fn elicitation_decision(token: u32, answer_json: Option<String>, error: Option<String>) {
    if let Some(tx) = Decisions::close(token) {
        let _ = tx.send(match error {
            // The facade's text names the handler (`onElicitation threw: …`).
            Some(e) => Err(e),
            None => Ok(answer_json),
        });
    }
}

struct JsServices {
    call: Arc<ServiceFn>,
}

impl JsServices {
    fn invoke(&self, call: Value) -> ServiceFuture<Value> {
        let f = self.call.clone();
        Box::pin(async move {
            let failed = |e: napi::Error| ServiceError::new(-32603, e.reason);
            let promise = f.call_async_catch(call.to_string()).await.map_err(failed)?;
            let text = promise.await.map_err(failed)?;
            let mut reply: Value = serde_json::from_str(&text)
                .map_err(|e| ServiceError::new(-32603, format!("malformed handler reply: {e}")))?;
            if let Some(err) = reply.get_mut("error").filter(|e| !e.is_null()) {
                let code = err.get("code").and_then(Value::as_i64).unwrap_or(-32603);
                let message = err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("handler error")
                    .to_owned();
                let data = err
                    .get_mut("data")
                    .map(Value::take)
                    .filter(|d| !d.is_null());
                return Err(ServiceError {
                    code,
                    message,
                    data,
                });
            }
            Ok(reply
                .get_mut("result")
                .map(Value::take)
                .unwrap_or(Value::Null))
        })
    }
}

/// Terminal logins through the service callback (`{"method": "acph/terminal_auth", "params":
/// command}` → `{"exitCode": n}`).
impl acp_host::auth::TerminalAuthRunner for JsServices {
    fn run(
        &self,
        command: acp_host::auth::TerminalAuthCommand,
    ) -> acp_host::auth::TerminalAuthFuture {
        let params = serde_json::to_value(&command).unwrap_or(Value::Null);
        let fut =
            self.invoke(serde_json::json!({ "method": "acph/terminal_auth", "params": params }));
        Box::pin(async move {
            let v = fut.await.map_err(|e| e.message)?;
            v.get("exitCode")
                .and_then(Value::as_i64)
                .map(|c| c as i32)
                .ok_or_else(|| "onTerminalAuth must return an exit code (an integer)".to_owned())
        })
    }
}

impl FsHandler for JsServices {
    fn read_text_file(&self, r: FsRead) -> ServiceFuture<String> {
        let fut = self.invoke(serde_json::json!({
            "method": "fs/read_text_file",
            "params": { "sessionId": r.session_id, "path": r.path, "line": r.line, "limit": r.limit },
        }));
        Box::pin(async move {
            match fut.await? {
                Value::String(s) => Ok(s),
                Value::Object(mut o) => match o.remove("content") {
                    Some(Value::String(s)) => Ok(s),
                    _ => Err(ServiceError::new(
                        -32603,
                        "readTextFile must return a string",
                    )),
                },
                _ => Err(ServiceError::new(
                    -32603,
                    "readTextFile must return a string",
                )),
            }
        })
    }

    fn write_text_file(&self, w: FsWrite) -> ServiceFuture<()> {
        let fut = self.invoke(serde_json::json!({
            "method": "fs/write_text_file",
            "params": { "sessionId": w.session_id, "path": w.path, "content": w.content },
        }));
        Box::pin(async move { fut.await.map(|_| ()) })
    }
}

impl TerminalHandler for JsServices {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        self.invoke(serde_json::json!({ "method": method, "params": params }))
    }
}

/// The agent's `_` extension requests: the result is sent back verbatim (absent: `null`).
impl ExtHandler for JsServices {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        self.invoke(serde_json::json!({ "method": method, "params": params }))
    }
}

// ------------------------------------------------------------------ abort registry

fn aborts() -> &'static Mutex<HashMap<u32, watch::Sender<bool>>> {
    static ABORTS: OnceLock<Mutex<HashMap<u32, watch::Sender<bool>>>> = OnceLock::new();
    ABORTS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The ACP method table this addon was built with (docs/PROTOCOL.md), as JSON.
#[napi]
pub fn methods() -> Value {
    acp_host::protocol::methods_json()
}

/// A prompt content block built from a file (`acp_host::content::from_file`).
#[napi]
pub fn content_from_file(path: String) -> Result<Value> {
    acp_host::content::from_file(Path::new(&path)).map_err(core_err)
}

/// Register an abort handle for one call; pass its id to the call, fire it with `abortFire`,
/// release it with `abortRelease` when the call settled.
#[napi]
pub fn abort_create() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    let (tx, _) = watch::channel(false);
    if let Ok(mut m) = aborts().lock() {
        m.insert(id, tx);
    }
    id
}

#[napi]
pub fn abort_fire(id: u32) {
    if let Ok(m) = aborts().lock()
        && let Some(tx) = m.get(&id)
    {
        tx.send_replace(true);
    }
}

#[napi]
pub fn abort_release(id: u32) {
    if let Ok(mut m) = aborts().lock() {
        m.remove(&id);
    }
}

/// Run `fut` unless the abort handle `abort` fires first (then the future is dropped, which tells
/// the agent with `$/cancel_request`, and the call fails with `cancelled`).
async fn abortable<T>(
    abort: Option<u32>,
    fut: impl std::future::Future<Output = acp_host::Result<T>>,
) -> Result<T> {
    let rx = abort.and_then(|id| aborts().lock().ok()?.get(&id).map(|tx| tx.subscribe()));
    let Some(mut rx) = rx else {
        return fut.await.map_err(core_err);
    };
    tokio::select! {
        r = fut => r.map_err(core_err),
        _ = rx.wait_for(|a| *a) => Err(err_json("cancelled", "aborted by the caller")),
    }
}

// ------------------------------------------------------------------ host

/// Which of the facade's callables were given (`acp_host::options::Hooks`): the one service
/// dispatcher serves each kind that is set.
#[napi(object)]
#[derive(Debug, Default)]
pub struct NativeHooks {
    pub fs: Option<bool>,
    pub terminal: Option<bool>,
    pub ext: Option<bool>,
    pub terminal_auth: Option<bool>,
}

/// An option document as the facade hands it over (JSON text), parsed by the core: text that is
/// not JSON is `invalid_config` at `$`.
fn doc(text: &str) -> Result<Value> {
    acp_host::options::document(text).map_err(core_err)
}

#[derive(Debug)]
struct EventState {
    stream: EventStream,
    buf: Vec<Event>,
}

#[derive(Debug)]
struct HostCore {
    /// `None` once closed: the `Host` is dropped so every task and process goes with it.
    host: Mutex<Option<Host>>,
    events: tokio::sync::Mutex<Option<EventState>>,
    closed: watch::Sender<bool>,
    /// The log handler's bridge, when there is one (`onLog`).
    log: Option<log::LogBridge>,
    /// Ends a pending `next_events` wait early (`interrupt_wait`): a pending napi call keeps the
    /// Node process alive, so the facade stops waiting once nothing can be waited for.
    wake: tokio::sync::Notify,
    /// The pools not shut down yet, by id (`close` shuts them down first: a pool holds the host
    /// and would start new spares on it); `None` once closed: no pool can be made any more.
    pools: Mutex<Option<HashMap<u64, Pool>>>,
}

impl HostCore {
    fn host(&self) -> Result<Host> {
        self.host
            .lock()
            .ok()
            .and_then(|h| h.clone())
            .ok_or_else(closed_err)
    }
}

#[napi]
#[derive(Debug)]
pub struct NativeHost {
    core: Arc<HostCore>,
}

/// The host's configuration: the core parses the document (`acp_host::options::host`, the same
/// table and errors as every face) and attaches the facade's callables by its one rule.
fn build_config(
    options_json: &str,
    permission: Option<PermissionFn>,
    service: Option<ServiceFn>,
    elicitation: Option<ElicitFn>,
    given: NativeHooks,
    log: Option<Arc<dyn acp_host::log::LogSink>>,
) -> Result<HostConfig> {
    let o = acp_host::options::host(&doc(options_json)?, Face::Node).map_err(core_err)?;
    let services = service.map(|f| Arc::new(JsServices { call: Arc::new(f) }));
    let when = |on: Option<bool>| services.clone().filter(|_| on == Some(true));
    let hooks = Hooks {
        permission: permission.map(|f| {
            Arc::new(JsDecider {
                decide: Arc::new(f),
            }) as Arc<dyn PermissionDecider>
        }),
        elicitation: elicitation
            .map(|f| Arc::new(JsElicitor { call: Arc::new(f) }) as Arc<dyn ElicitationDecider>),
        fs: when(given.fs).map(|s| s as Arc<dyn FsHandler>),
        terminal: when(given.terminal).map(|s| s as Arc<dyn TerminalHandler>),
        ext: when(given.ext).map(|s| s as Arc<dyn ExtHandler>),
        terminal_auth: when(given.terminal_auth)
            .map(|s| s as Arc<dyn acp_host::auth::TerminalAuthRunner>),
        log,
    };
    o.with_hooks(hooks).map_err(core_err)
}

/// An agent spec document (`acp_host::options::agent_spec`).
fn spawn_spec(spec_json: &str) -> Result<AgentSpec> {
    acp_host::options::agent_spec(&doc(spec_json)?, Face::Node).map_err(core_err)
}

/// A session options document (`acp_host::options::session`).
fn session_options(options_json: &str) -> Result<SessionOptions> {
    acp_host::options::session(&doc(options_json)?, Face::Node).map_err(core_err)
}

/// The option table (`acp_host::options::table_json`): `[{document, path, type, default, doc,
/// face}]`, from which the facade's option types are generated (scripts/gen-options.mjs).
#[napi]
pub fn options_table() -> Value {
    acp_host::options::table_json()
}

#[napi]
impl NativeHost {
    /// `options_json`: the host's option document (docs/OPTIONS.md, checked by the core);
    /// `permission`: the permission dispatcher (the permission handler: requests are answered
    /// with `permissionDecision`, and `{"settled": id}` messages tell it a request was settled by
    /// anyone else); `service`: the fs/terminal/extension/terminal-login dispatcher, serving the
    /// kinds `hooks` names; `elicitation`: the elicitation dispatcher (answered with
    /// `elicitationDecision`, `{"settled": id}` as for permissions); `log`: the log delivery
    /// function (log.rs). Which one answers is the core's rule (`HostOptions::with_hooks`).
    #[napi(constructor)]
    pub fn new(
        options_json: String,
        #[napi(ts_arg_type = "((message: string) => void) | undefined | null")] permission: Option<
            PermissionFn,
        >,
        #[napi(ts_arg_type = "((callJson: string) => Promise<string>) | undefined | null")]
        service: Option<ServiceFn>,
        #[napi(ts_arg_type = "((messageJson: string) => void) | undefined | null")]
        elicitation: Option<ElicitFn>,
        hooks: Option<NativeHooks>,
        #[napi(
            ts_arg_type = "((recordJson: string | null, lost: number) => void) | undefined | null"
        )]
        log: Option<log::JsDeliver<'_>>,
    ) -> Result<Self> {
        let (log, sink) = match log {
            Some(f) => {
                let (bridge, sink) = log::LogBridge::new(&f)?;
                (Some(bridge), Some(sink))
            }
            None => (None, None),
        };
        let config = build_config(
            &options_json,
            permission,
            service,
            elicitation,
            hooks.unwrap_or_default(),
            sink,
        )?;
        // Host::new does not spawn; agents run on napi's tokio runtime (every call below is async).
        let host = Host::new(config);
        let stream = host.events();
        let (closed, _) = watch::channel(false);
        Ok(NativeHost {
            core: Arc::new(HostCore {
                host: Mutex::new(Some(host)),
                events: tokio::sync::Mutex::new(stream.map(|stream| EventState {
                    stream,
                    buf: Vec::new(),
                })),
                closed,
                log,
                wake: tokio::sync::Notify::new(),
                pools: Mutex::new(Some(HashMap::new())),
            }),
        })
    }

    /// Capabilities advertised to agents
    /// (`{readTextFile, writeTextFile, terminal, elicitation: {form, url}}`).
    #[napi]
    pub fn client_capabilities(&self) -> Result<Value> {
        let caps = self.core.host()?.client_capabilities();
        Ok(serde_json::json!({
            "readTextFile": caps.read_text_file,
            "writeTextFile": caps.write_text_file,
            "terminal": caps.terminal,
            "elicitation": { "form": caps.elicitation.form, "url": caps.elicitation.url },
        }))
    }

    /// Spawn an agent and perform the handshake.
    #[napi]
    pub async fn spawn(&self, spec_json: String, abort: Option<u32>) -> Result<NativeAgent> {
        let host = self.core.host()?;
        // Checked before anything is started: a bad spec spawns nothing.
        let spec = spawn_spec(&spec_json)?;
        let supervised = spec.restart.is_some();
        let agent = abortable(abort, host.spawn(spec)).await?;
        Ok(NativeAgent { agent, supervised })
    }

    /// A pool of agents for one spawn spec (`acp_host::Pool`); `pool_json` is the pool's
    /// settings document (`acp_host::options::pool`, paths `pool.*`). A bad spec or setting is
    /// `invalid_config` and nothing is started.
    #[napi]
    pub fn pool(&self, spec_json: String, pool_json: String) -> Result<pool::NativePool> {
        let host = self.core.host()?;
        let spec = spawn_spec(&spec_json)?;
        let config =
            acp_host::options::pool(spec, &doc(&pool_json)?, Face::Node).map_err(core_err)?;
        pool::NativePool::open(&self.core, &host, config)
    }

    /// A connection to an agent over the embedder's stream: the facade pumps the stream through
    /// it, then calls its `handshake` (see connect.rs).
    #[napi]
    pub fn connect(&self) -> Result<connect::NativeConnection> {
        Ok(connect::NativeConnection::new(self.core.host()?))
    }

    /// Answer a pending permission request: an offered option id, or `null` to deny.
    #[napi]
    pub async fn respond_permission(
        &self,
        request_id: f64,
        option_id: Option<String>,
    ) -> Result<()> {
        let host = self.core.host()?;
        if !(request_id >= 0.0 && request_id.fract() == 0.0) {
            return Err(invalid("request id must be a non-negative integer"));
        }
        host.respond_permission(request_id as u64, option_id)
            .await
            .map_err(core_err)
    }

    /// Answer a pending elicitation request with `{"action", "content"?}` (JSON). Content that
    /// does not match the requested schema, or an answer that is not of that shape, answers the
    /// agent `cancel` (fail-closed) and fails with `invalid_argument`.
    #[napi]
    pub async fn respond_elicitation(&self, request_id: f64, answer_json: String) -> Result<()> {
        let host = self.core.host()?;
        if !(request_id >= 0.0 && request_id.fract() == 0.0) {
            return Err(invalid("request id must be a non-negative integer"));
        }
        let id = request_id as u64;
        match parse_answer(&answer_json) {
            Ok(answer) => host.respond_elicitation(id, answer).await.map_err(core_err),
            Err(why) => {
                // Like content that does not match the schema: the request (if pending) is
                // answered `cancel`; an unknown or settled id says so.
                host.reject_elicitation(id, format!("invalid elicitation answer: {why}"))
                    .await
                    .map_err(core_err)?;
                Err(invalid(format!(
                    "invalid elicitation answer: {why}; the elicitation was cancelled"
                )))
            }
        }
    }

    /// Up to `limit` events as one batch (see `encode_batch`), waiting for at least one; `null`
    /// when the stream ended (host closed and drained, or events disabled). `wait: false` takes
    /// only what is queued already: an empty batch `""` when nothing is (everything queued
    /// before the call has been handed out once such a call returns `""`).
    #[napi]
    pub async fn next_events(&self, limit: u32, wait: Option<bool>) -> Result<Option<String>> {
        let core = self.core.clone();
        let limit = (limit as usize).max(1);
        let mut closed = core.closed.subscribe();
        let mut guard = core.events.lock().await;
        let Some(st) = guard.as_mut() else {
            return Ok(None);
        };
        let n = if *closed.borrow() {
            drain_ready(st, limit)
        } else if wait == Some(false) {
            let n = drain_ready(st, limit);
            if n == 0 && !st.stream.is_ended() {
                return Ok(Some(String::new()));
            }
            n
        } else {
            tokio::select! {
                biased;
                n = st.stream.next_batch(&mut st.buf, limit) => n,
                _ = closed.wait_for(|c| *c) => drain_ready(st, limit),
                // Interrupted: an empty batch ("", not the end), the facade decides again.
                _ = core.wake.notified() => return Ok(Some(String::new())),
            }
        };
        if n == 0 {
            *guard = None;
            return Ok(None);
        }
        let out = encode_batch(&mut st.buf);
        st.buf.clear();
        Ok(Some(out))
    }

    /// End the pending (or the next) `next_events` wait with an empty batch `""`: the facade has
    /// nothing left to wait for (no live agent, no spawn, no waiting subscriber), and a pending
    /// call would keep the process alive.
    #[napi]
    pub fn interrupt_wait(&self) {
        self.core.wake.notify_one();
    }

    /// Shut every agent down (stdin EOF → SIGTERM → SIGKILL, whole process groups), end the event
    /// stream once drained, and drop the host; resolves once the log handler (if any) was handed
    /// the shutdown's records. Idempotent.
    #[napi]
    pub async fn close(&self) -> Result<()> {
        // The pools first: they would start new spares on the host while it shuts down.
        let pools: Vec<Pool> = self
            .core
            .pools
            .lock()
            .ok()
            .and_then(|mut p| p.take())
            .map(|p| p.into_values().collect())
            .unwrap_or_default();
        let tasks: Vec<_> = pools
            .into_iter()
            .map(|p| tokio::spawn(async move { p.shutdown().await }))
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        let host = self.core.host.lock().ok().and_then(|h| h.clone());
        if let Some(host) = host {
            host.shutdown().await;
        }
        if let Ok(mut h) = self.core.host.lock() {
            h.take();
        }
        // The log handler takes the shutdown's records before `close()` resolves.
        if let Some(log) = &self.core.log {
            log.close().await;
        }
        self.core.closed.send_replace(true);
        Ok(())
    }

    /// Log records dropped so far because the log handler fell behind (see log.rs).
    #[napi]
    pub fn dropped_log_records(&self) -> f64 {
        self.core.log.as_ref().map_or(0.0, |l| l.dropped() as f64)
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        *self.core.closed.borrow()
    }
}

/// The `at` of the last event serialised, formatted once per millisecond (events of one batch
/// mostly share it).
#[derive(Default)]
struct Clock {
    millis: Option<u128>,
    text: String,
    /// The last session id and its JSON-quoted form (session ids are interned by the core).
    session: Option<(Arc<str>, String)>,
}

impl Clock {
    fn format(&mut self, at: SystemTime) -> &str {
        let millis = at.duration_since(UNIX_EPOCH).map(|d| d.as_millis()).ok();
        if millis.is_none() || millis != self.millis {
            self.text = rfc3339_millis(millis.unwrap_or(0));
            self.millis = millis;
        }
        &self.text
    }

    fn quoted_session(&mut self, id: &Arc<str>) -> &str {
        let hit =
            matches!(&self.session, Some((last, _)) if Arc::ptr_eq(last, id) || **last == **id);
        if !hit {
            let quoted = serde_json::to_string(&**id).unwrap_or_else(|_| "\"\"".to_owned());
            self.session = Some((id.clone(), quoted));
        }
        self.session
            .as_ref()
            .map(|(_, q)| q.as_str())
            .unwrap_or("\"\"")
    }
}

/// `2026-11-30T14:00:00.123Z` for milliseconds since the Unix epoch: the core's formatter.
fn rfc3339_millis(millis: u128) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX));
    acp_host::events::format_timestamp(at)
}

/// The envelope fields of an event besides `seq` and `data`; events of a batch mostly share them.
#[derive(PartialEq)]
struct EnvKey {
    millis: Option<u128>,
    agent: u64,
    session: Option<Arc<str>>,
    turn: Option<u64>,
    kind: acp_host::EventKind,
    replay: bool,
}

/// Encode a batch for the facade, columnar, as one JSON document:
/// `{"seq":S,"envs":[[at,agent,session|null,turn|null,kind,replay],…],"idx":[…],"data":[…]}`:
/// event `i` is `seq` S+i (a batch is a contiguous range of the host's order; if it ever were
/// not, `"seqs":[…]` lists them), envelope `envs[idx[i]]` and payload `data[i]` (verbatim). The
/// facade rebuilds exactly the envelope of docs/EVENTS.md from it: one `JSON.parse` of the
/// payloads plus a few distinct envelopes is much cheaper in V8 than parsing every envelope.
fn encode_batch(buf: &mut [Event]) -> String {
    use std::fmt::Write as _;
    let payload: usize = buf.iter().map(|e| e.data.get().len() + 8).sum();
    let mut envs = String::with_capacity(256);
    let mut idx = String::with_capacity(buf.len() * 2);
    let mut keys: Vec<EnvKey> = Vec::new();
    let mut clock = Clock::default();
    let first = buf.first().map(|e| e.seq).unwrap_or(0);
    let contiguous = buf
        .iter()
        .enumerate()
        .all(|(i, e)| e.seq == first + i as u64);
    let mut last = usize::MAX;
    for (i, ev) in buf.iter().enumerate() {
        let key = EnvKey {
            millis: ev.at.duration_since(UNIX_EPOCH).map(|d| d.as_millis()).ok(),
            agent: ev.agent,
            session: ev.session.clone(),
            turn: ev.turn,
            kind: ev.kind,
            replay: ev.replay,
        };
        let slot = if last != usize::MAX && keys[last] == key {
            last
        } else if let Some(found) = keys.iter().rposition(|k| *k == key) {
            found
        } else {
            if !keys.is_empty() {
                envs.push(',');
            }
            let _ = write!(envs, "[\"{}\",{},", clock.format(ev.at), ev.agent);
            match &ev.session {
                Some(s) => envs.push_str(clock.quoted_session(s)),
                None => envs.push_str("null"),
            }
            match ev.turn {
                Some(t) => {
                    let _ = write!(envs, ",{t},\"");
                }
                None => envs.push_str(",null,\""),
            }
            envs.push_str(ev.kind.as_str());
            envs.push_str(if ev.replay { "\",true]" } else { "\",false]" });
            keys.push(key);
            keys.len() - 1
        };
        last = slot;
        if i > 0 {
            idx.push(',');
        }
        let _ = write!(idx, "{slot}");
    }
    let mut out = String::with_capacity(payload + envs.len() + idx.len() + 64);
    let _ = write!(out, "{{\"seq\":{first},\"envs\":[{envs}],\"idx\":[{idx}]");
    if !contiguous {
        out.push_str(",\"seqs\":[");
        for (i, ev) in buf.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{}", ev.seq);
        }
        out.push(']');
    }
    out.push_str(",\"data\":[");
    for (i, ev) in buf.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(ev.data.get());
    }
    out.push_str("]}");
    out
}

fn drain_ready(st: &mut EventState, limit: usize) -> usize {
    let mut n = 0;
    while n < limit {
        match st.stream.try_next() {
            Some(ev) => {
                st.buf.push(ev);
                n += 1;
            }
            None => break,
        }
    }
    n
}

// ------------------------------------------------------------------ agent

#[napi]
#[derive(Debug)]
pub struct NativeAgent {
    agent: Agent,
    /// Spawned with a restart policy (its relaunch after a terminal login is too).
    supervised: bool,
}

fn wrap_session(session: Session) -> NativeSession {
    NativeSession { session }
}

#[napi]
impl NativeAgent {
    /// The host's id for this agent (the `agent` field of events).
    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.agent.id() as u32
    }

    /// `{protocolVersion, agentInfo, agentCapabilities, authMethods}` from `initialize`.
    #[napi]
    pub fn info(&self) -> Value {
        match self.agent.info() {
            Some(i) => serde_json::json!({
                "protocolVersion": i.protocol_version,
                "agentInfo": i.agent_info,
                "agentCapabilities": i.capabilities,
                "authMethods": i.auth_methods,
            }),
            None => Value::Null,
        }
    }

    /// `{exitCode, signal, stderrTail}` once the agent's current process ended, else `null` (a
    /// supervised agent's is `null` again once it was restarted).
    #[napi]
    pub fn exit_info(&self) -> Value {
        self.agent
            .exit_info()
            .and_then(|e| serde_json::to_value(e).ok())
            .unwrap_or(Value::Null)
    }

    /// The process id of the agent's current process (a restarted agent has a new one).
    #[napi]
    pub fn pid(&self) -> Option<u32> {
        self.agent.pid()
    }

    /// Whether it was spawned with a restart policy.
    #[napi(getter)]
    pub fn supervised(&self) -> bool {
        self.supervised
    }

    /// Ended for good: its process is gone and no restart is coming (`Agent::is_gone`).
    #[napi]
    pub fn is_gone(&self) -> bool {
        self.agent.is_gone()
    }

    /// The supervisor gave up (`agent_failed`): the agent stays down.
    #[napi]
    pub fn restarts_exhausted(&self) -> bool {
        self.agent.restarts_exhausted()
    }

    #[napi]
    pub async fn authenticate(&self, method_id: String, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(abort, async move { agent.authenticate(&method_id).await }).await
    }

    /// The agent's `authMethods`, parsed (JSON: `[{id, name, description, kind}]`).
    #[napi]
    pub fn auth_methods(&self) -> Value {
        serde_json::to_value(self.agent.auth_methods()).unwrap_or(Value::Null)
    }

    /// Terminal login, then the relaunched agent (`Agent::terminal_auth`).
    #[napi]
    pub async fn terminal_auth(
        &self,
        method_id: String,
        abort: Option<u32>,
    ) -> Result<NativeAgent> {
        let agent = self.agent.clone();
        let fresh = abortable(abort, async move { agent.terminal_auth(&method_id).await }).await?;
        // Relaunched from the same spec, restart policy included.
        Ok(NativeAgent {
            agent: fresh,
            supervised: self.supervised,
        })
    }

    /// `logout` (needs `agentCapabilities.auth.logout`; otherwise fails with `unsupported` and
    /// nothing is sent).
    #[napi]
    pub async fn logout(&self, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(abort, async move { agent.logout().await }).await
    }

    #[napi]
    pub async fn new_session(
        &self,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativeSession> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move { agent.new_session(options).await })
            .await
            .map(wrap_session)
    }

    #[napi]
    pub async fn load_session(
        &self,
        session_id: String,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativeSession> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.load_session(&session_id, options).await
        })
        .await
        .map(wrap_session)
    }

    #[napi]
    pub async fn resume_session(
        &self,
        session_id: String,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativeSession> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.resume_session(&session_id, options).await
        })
        .await
        .map(wrap_session)
    }

    /// `session/fork` (unstable: needs `unstable: ['session/fork']`).
    #[napi]
    pub async fn fork_session(
        &self,
        session_id: String,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativeSession> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.fork_session(&session_id, options).await
        })
        .await
        .map(wrap_session)
    }

    /// `session/list`: `{sessions, nextCursor?}`.
    #[napi]
    pub async fn list_sessions(
        &self,
        cwd: Option<String>,
        cursor: Option<String>,
        abort: Option<u32>,
    ) -> Result<Value> {
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.list_sessions(cwd.as_deref(), cursor.as_deref()).await
        })
        .await
    }

    #[napi]
    pub async fn close_session(&self, session_id: String, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(abort, async move { agent.close_session(&session_id).await }).await
    }

    #[napi]
    pub async fn delete_session(&self, session_id: String, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(
            abort,
            async move { agent.delete_session(&session_id).await },
        )
        .await
    }

    /// Send an extension request (`_vendor/...`) and get its raw result.
    #[napi]
    pub async fn ext_request(
        &self,
        method: String,
        params: Value,
        abort: Option<u32>,
    ) -> Result<Value> {
        if !method.starts_with('_') {
            return Err(invalid("extension methods start with `_`"));
        }
        let agent = self.agent.clone();
        let method = intern(method);
        abortable(
            abort,
            async move { agent.ext_request(method, &params).await },
        )
        .await
    }

    /// A handle to an open session of this agent, or `null`.
    #[napi]
    pub fn session(&self, session_id: String) -> Option<NativeSession> {
        self.agent.session(&session_id).map(wrap_session)
    }

    /// Shut the agent down; resolves with `{exitCode, signal, stderrTail}`.
    #[napi]
    pub async fn shutdown(&self) -> Result<Value> {
        let info = self.agent.shutdown().await;
        Ok(serde_json::to_value(info).unwrap_or(Value::Null))
    }
}

/// The core takes request method names as `&'static str`. Extension method names are few, so
/// each distinct name is leaked once and reused (bounded by the number of distinct names).
fn intern(name: String) -> &'static str {
    static NAMES: OnceLock<Mutex<std::collections::HashSet<&'static str>>> = OnceLock::new();
    let names = NAMES.get_or_init(|| Mutex::new(std::collections::HashSet::new()));
    let Ok(mut names) = names.lock() else {
        return Box::leak(name.into_boxed_str());
    };
    if let Some(known) = names.get(name.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.insert(leaked);
    leaked
}

// ------------------------------------------------------------------ session

/// A turn's result: the core's one shape (`TurnResult::to_json`), as in every face.
fn turn_json(turn: TurnResult) -> Value {
    turn.to_json()
}

#[napi]
#[derive(Debug)]
pub struct NativeSession {
    session: Session,
}

#[napi]
impl NativeSession {
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.session.id().to_owned()
    }

    #[napi(getter)]
    pub fn agent_id(&self) -> u32 {
        self.session.agent().id() as u32
    }

    /// The materialised session state (docs: `SessionView`).
    #[napi]
    pub fn state(&self) -> Value {
        serde_json::to_value(self.session.state()).unwrap_or(Value::Null)
    }

    /// Send a prompt (an array of ACP content blocks); resolves with
    /// `{turn, stopReason, usage, raw, text, thought, textTruncated}` when the turn ends.
    #[napi]
    /// Aborting sends `session/cancel`; the call settles with the agent's answer if it comes
    /// within the host's cancel grace, else with `cancelled`.
    pub async fn prompt(&self, content: Vec<Value>, abort: Option<u32>) -> Result<Value> {
        let session = self.session.clone();
        let rx = abort.and_then(|id| aborts().lock().ok()?.get(&id).map(|tx| tx.subscribe()));
        let fired = async move {
            match rx {
                Some(mut rx) => {
                    if rx.wait_for(|a| *a).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        };
        let turn = session
            .prompt_abortable(content, fired)
            .await
            .map_err(core_err)?;
        Ok(turn_json(turn))
    }

    /// `session/cancel`.
    #[napi]
    pub async fn cancel(&self) -> Result<()> {
        self.session.cancel().await.map_err(core_err)
    }

    #[napi]
    pub async fn set_mode(&self, mode_id: String, abort: Option<u32>) -> Result<()> {
        let session = self.session.clone();
        abortable(abort, async move { session.set_mode(&mode_id).await }).await
    }

    /// Resolves with the complete updated option list.
    #[napi]
    pub async fn set_config_option(
        &self,
        config_id: String,
        value: Value,
        abort: Option<u32>,
    ) -> Result<Value> {
        let session = self.session.clone();
        abortable(abort, async move {
            session.set_config_option(&config_id, value).await
        })
        .await
    }

    /// `{current, available: [{id, name, description}], via}` (the core's `Models`), or `null`
    /// when the agent offers no model choice.
    #[napi]
    pub fn models(&self) -> Value {
        self.session
            .models()
            .and_then(|m| serde_json::to_value(m).ok())
            .unwrap_or(Value::Null)
    }

    /// Switch the model: the `model` config option, else the legacy `session/set_model`.
    #[napi]
    pub async fn set_model(&self, model_id: String, abort: Option<u32>) -> Result<()> {
        let session = self.session.clone();
        abortable(abort, async move { session.set_model(&model_id).await }).await
    }

    /// `session/close`.
    #[napi]
    pub async fn close(&self, abort: Option<u32>) -> Result<()> {
        let session = self.session.clone();
        abortable(abort, async move { session.close().await }).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_millis() {
        for (millis, want) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_123, "2000-02-29T00:00:00.123Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
            (1_798_675_200_000, "2026-12-31T00:00:00.000Z"),
            (1_764_460_800_001, "2025-11-30T00:00:00.001Z"),
        ] {
            assert_eq!(rfc3339_millis(millis), want);
        }
    }

    fn event(seq: u64, session: Option<&str>, turn: Option<u64>, data: &str) -> Event {
        Event {
            seq,
            at: UNIX_EPOCH + Duration::from_millis(1_764_460_800_001),
            agent: 1,
            session: session.map(Arc::from),
            turn,
            kind: acp_host::EventKind::SessionUpdate,
            replay: false,
            data: serde_json::value::RawValue::from_string(data.to_owned()).unwrap(),
        }
    }

    #[test]
    fn batches_are_columnar_and_rebuild_the_core_envelopes() {
        let mut buf = vec![
            event(7, Some("s\"1"), Some(2), r#"{"a":1}"#),
            event(8, Some("s\"1"), Some(2), r#"{"a":2}"#),
            event(9, None, None, r#"{"b":[1,2]}"#),
        ];
        let want: Vec<Value> = buf.iter().map(Event::to_value).collect();
        let batch: Value = serde_json::from_str(&encode_batch(&mut buf)).unwrap();
        assert_eq!(batch["seq"], 7);
        assert!(batch.get("seqs").is_none());
        assert_eq!(batch["idx"], serde_json::json!([0, 0, 1]));
        // What the facade's decodeBatch does.
        let rebuilt: Vec<Value> = (0..3)
            .map(|i| {
                let env = &batch["envs"][batch["idx"][i].as_u64().unwrap() as usize];
                let mut o = serde_json::Map::new();
                o.insert("seq".into(), Value::from(7 + i as u64));
                o.insert("at".into(), env[0].clone());
                o.insert("agent".into(), env[1].clone());
                if !env[2].is_null() {
                    o.insert("session".into(), env[2].clone());
                }
                if !env[3].is_null() {
                    o.insert("turn".into(), env[3].clone());
                }
                o.insert("kind".into(), env[4].clone());
                o.insert("replay".into(), env[5].clone());
                o.insert("data".into(), batch["data"][i].clone());
                Value::Object(o)
            })
            .collect();
        assert_eq!(rebuilt, want);
        // A gap (never produced by the core) is spelled out.
        let mut gap = vec![event(1, None, None, "{}"), event(3, None, None, "{}")];
        let batch: Value = serde_json::from_str(&encode_batch(&mut gap)).unwrap();
        assert_eq!(batch["seqs"], serde_json::json!([1, 3]));
    }
}
