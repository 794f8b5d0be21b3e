//! [`Agent`]: one agent as the embedder holds it. Its calls go to the current connection (a
//! [`Link`]); a supervised agent ([`AgentSpec::restart`]) gets a new link when its process is
//! restarted, so the embedder's `Agent` and `Session` handles keep working.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use crate::connection::{AgentInfo, AgentShared, Command, HostShared, ReqCtx};
use crate::error::{Error, ExitInfo, Result};
use crate::events::{PendingEvent, raw_json};
use crate::host::{Host, HostInner};
use crate::orchestration::supervisor::Supervision;
use crate::session::Session;
use crate::transport::AgentSpec;

/// An agent's result as a tree: text no tree holds (a number out of range, a lone surrogate) is
/// `protocol`, not a silent `null`.
mod unstable;
pub use unstable::{SessionDefaults, SessionStatusInfo};

fn result_tree(method: &str, raw: &RawValue) -> Result<Value> {
    serde_json::from_str(raw.get()).map_err(|e| {
        Error::Protocol(format!(
            "the agent's {method} result is not JSON this host can hold: {e}"
        ))
    })
}

/// Options of `session/new` (and of load/resume/fork).
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Absolute working directory of the session.
    pub cwd: String,
    /// Extra roots (absolute); sent only when the agent supports `additionalDirectories`.
    pub additional_directories: Vec<String>,
    /// MCP server configurations, in ACP shape.
    pub mcp_servers: Vec<Value>,
}

impl SessionOptions {
    pub fn new(cwd: impl Into<String>) -> Self {
        SessionOptions {
            cwd: cwd.into(),
            ..Default::default()
        }
    }

    pub(crate) fn params(
        &self,
        info: &AgentInfo,
        session_id: Option<&str>,
        mcp_required: bool,
    ) -> Result<Value> {
        if !std::path::Path::new(&self.cwd).is_absolute() {
            return Err(Error::InvalidField {
                path: "cwd".into(),
                message: format!("must be an absolute path, got `{}`", self.cwd),
            });
        }
        if let Some(why) = crate::transport::unusable_dir(std::path::Path::new(&self.cwd)) {
            return Err(Error::InvalidField {
                path: "cwd".into(),
                message: format!("the session's working directory {why}"),
            });
        }
        let mut p = serde_json::json!({ "cwd": self.cwd });
        if let Some(id) = session_id {
            p["sessionId"] = Value::from(id);
        }
        if mcp_required || !self.mcp_servers.is_empty() {
            p["mcpServers"] = Value::from(self.mcp_servers.clone());
        }
        if !self.additional_directories.is_empty() {
            if !info.session_capability("additionalDirectories") {
                return Err(Error::Unsupported(
                    "agent does not advertise sessionCapabilities.additionalDirectories".into(),
                ));
            }
            if let Some(bad) = self
                .additional_directories
                .iter()
                .find(|d| !std::path::Path::new(d).is_absolute())
            {
                return Err(Error::InvalidArgument(format!(
                    "additional directory must be absolute: `{bad}`"
                )));
            }
            p["additionalDirectories"] = Value::from(self.additional_directories.clone());
        }
        Ok(p)
    }
}

/// A connected, initialized agent. Cheap to clone; when every handle (including sessions) is
/// dropped, the agent is shut down.
#[derive(Debug, Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

/// One connection to one agent process: the actor's command channel and the state it shares.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub(crate) cmd: mpsc::Sender<Command>,
    pub(crate) shared: Arc<AgentShared>,
}

impl Link {
    /// Put `events` into the host's stream in order after everything this connection emitted so
    /// far; returns once they are queued (so what the caller emits next comes after them).
    pub(crate) async fn emit(&self, events: Vec<PendingEvent>) {
        let (tx, rx) = oneshot::channel();
        if self
            .cmd
            .send(Command::Emit { events, reply: tx })
            .await
            .is_ok()
        {
            let _ = rx.await;
        }
    }
}

#[derive(Debug)]
pub(crate) struct AgentInner {
    pub(crate) id: u64,
    /// The current connection; replaced (never while a lock is held across `.await`) when a
    /// supervised agent is restarted.
    link: RwLock<Link>,
    pub(crate) host: Arc<HostShared>,
    /// How it was started (`None` for `connect`): terminal login and the supervisor relaunch it.
    pub(crate) spec: Option<AgentSpec>,
    /// The host, to relaunch the agent (weak: an agent does not keep its host alive).
    pub(crate) owner: Weak<HostInner>,
    /// Sessions opened through this agent and not closed by the embedder, with the options they
    /// were opened with: what the supervisor reopens after a restart.
    pub(crate) opened: Mutex<BTreeMap<Arc<str>, SessionOptions>>,
    /// The restart policy's task, for a supervised agent.
    pub(crate) supervision: Mutex<Option<Supervision>>,
}

impl Agent {
    pub(crate) fn new(
        id: u64,
        link: Link,
        host: Arc<HostShared>,
        spec: Option<AgentSpec>,
        owner: Weak<HostInner>,
    ) -> Agent {
        Agent {
            inner: Arc::new(AgentInner {
                id,
                link: RwLock::new(link),
                host,
                spec,
                owner,
                opened: Mutex::new(BTreeMap::new()),
                supervision: Mutex::new(None),
            }),
        }
    }

    pub(crate) fn from_inner(inner: Arc<AgentInner>) -> Agent {
        Agent { inner }
    }

    pub(crate) fn downgrade(&self) -> Weak<AgentInner> {
        Arc::downgrade(&self.inner)
    }

    /// The current connection.
    pub(crate) fn link(&self) -> Link {
        self.inner
            .link
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Make `link` the agent's connection (a restarted process).
    pub(crate) fn set_link(&self, link: Link) {
        *self.inner.link.write().unwrap_or_else(|p| p.into_inner()) = link;
    }

    pub(crate) fn inner_supervision(&self) -> &Mutex<Option<Supervision>> {
        &self.inner.supervision
    }

    pub(crate) fn host_shared(&self) -> &Arc<HostShared> {
        &self.inner.host
    }

    /// The host, while it lives.
    pub(crate) fn owner(&self) -> Option<Host> {
        self.inner.owner.upgrade().map(Host::from_inner)
    }

    pub(crate) fn spec(&self) -> Option<&AgentSpec> {
        self.inner.spec.as_ref()
    }

    /// The sessions to reopen after a restart, in id order.
    pub(crate) fn opened_sessions(&self) -> Vec<(Arc<str>, SessionOptions)> {
        self.inner
            .opened
            .lock()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    pub(crate) fn forget_session(&self, id: &str) {
        if let Ok(mut m) = self.inner.opened.lock() {
            m.remove(id);
        }
    }

    fn remember_session(&self, id: &Arc<str>, options: &SessionOptions) {
        if let Ok(mut m) = self.inner.opened.lock() {
            m.insert(id.clone(), options.clone());
        }
    }

    /// The host's id for this agent (the `agent` field of events).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// What the agent negotiated in `initialize` (of its current process, for a supervised agent).
    pub fn info(&self) -> Option<Arc<AgentInfo>> {
        self.link().shared.info.get().cloned()
    }

    /// The agent's process id (leader of its process group); `None` for `Host::connect` agents.
    /// A restarted agent has a new one.
    pub fn pid(&self) -> Option<u32> {
        self.link().shared.pid.get().copied()
    }

    /// How the agent's current process ended, once it has. For a supervised agent this is
    /// cleared again when a restart succeeds.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        self.link().shared.exit.get().cloned()
    }

    /// Whether the agent ended for good: its process is gone and no restart is coming (it is not
    /// supervised, was shut down, or its supervisor gave up). A supervised agent between a crash
    /// and its restart is not gone. For faces that keep a list of live agents.
    pub fn is_gone(&self) -> bool {
        if self.link().shared.exit.get().is_none() {
            return false;
        }
        self.inner
            .supervision
            .lock()
            .map_or(true, |s| s.as_ref().is_none_or(Supervision::gave_up))
    }

    /// Whether the supervisor gave up on this agent (`agent_failed`): it stays down.
    pub fn restarts_exhausted(&self) -> bool {
        self.inner
            .supervision
            .lock()
            .is_ok_and(|s| s.as_ref().is_some_and(Supervision::gave_up))
    }

    /// Resolves once the agent's current process has ended (its [`Agent::exit_info`] is set; its
    /// `agent_exited` event is being queued), at once if it already has.
    pub async fn exited(&self) {
        let shared = self.link().shared;
        loop {
            let woken = shared.exited.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if shared.exit.get().is_some() {
                return;
            }
            woken.await;
        }
    }

    pub(crate) fn require_info(&self) -> Result<Arc<AgentInfo>> {
        self.info()
            .ok_or_else(|| Error::Closed("agent not initialized".into()))
    }

    /// The agent's info, if its capabilities allow `method` (the method table's gate); else
    /// `Unsupported` naming the capability, and nothing is sent.
    fn require_gate(&self, method: &str) -> Result<Arc<AgentInfo>> {
        let info = self.require_info()?;
        match crate::protocol::method(method) {
            Some(m) if !m.allowed_by_agent(&info.gates) => Err(Error::Unsupported(format!(
                "agent does not advertise {} ({method})",
                m.gate.describe()
            ))),
            _ => Ok(info),
        }
    }

    pub(crate) async fn send(&self, cmd: Command) -> Result<()> {
        let link = self.link();
        link.cmd.send(cmd).await.map_err(|_| gone(&link))
    }

    pub(crate) async fn request(
        &self,
        method: impl Into<Cow<'static, str>>,
        params: &Value,
        ctx: ReqCtx,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        self.request_abortable(method, params, ctx, timeout, std::future::pending())
            .await
    }

    /// [`Agent::request`] that settles once `abort` resolves: at once with [`Error::Cancelled`]
    /// (the agent gets `$/cancel_request`), or for a prompt after `session/cancel` and at most
    /// `HostConfig::cancel_grace` waiting for the agent's answer (returned when it comes in time).
    /// The request stays registered: a late answer ends the turn (`turn_ended`) exactly once.
    pub(crate) async fn request_abortable(
        &self,
        method: impl Into<Cow<'static, str>>,
        params: &Value,
        ctx: ReqCtx,
        timeout: Option<Duration>,
        abort: impl Future<Output = ()>,
    ) -> Result<Box<RawValue>> {
        let is_prompt = matches!(ctx, ReqCtx::Prompt { .. });
        // The embedder's JSON in the params must leave the line within the limit the host holds
        // the agent to. Checked without recursing, before anything is serialised or sent.
        crate::wire::depth::check_fits(params, 2, "the request's params (the JSON given)")?;
        // One connection for the whole call: a restart in between must not split it.
        let link = self.link();
        let id = link.shared.next_request.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        link.cmd
            .send(Command::Request {
                id,
                method: method.into(),
                params: raw_json(params),
                ctx,
                timeout,
                reply: tx,
            })
            .await
            .map_err(|_| gone(&link))?;
        // If this future is dropped before the answer, the agent is told (best effort).
        let mut guard = InFlight {
            cmd: &link.cmd,
            id,
            done: false,
        };
        let host = &self.inner.host;
        let stall = host
            .config
            .event_stall_timeout
            .filter(|_| host.bus.enabled());
        let mut rx = rx;
        let stalled = async {
            match stall {
                Some(limit) => host.bus.wait_stalled(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(stalled, abort);
        let mut aborted = false;
        let res = loop {
            tokio::select! {
                biased;
                r = &mut rx => break r.unwrap_or_else(|_| Err(gone(&link))),
                waited = &mut stalled => match rx.try_recv() {
                    // The answer made it after all: prefer it.
                    Ok(r) => break r,
                    // Abandoned (the agent is told, a prompt is cancelled) by the guard.
                    Err(_) => {
                        return Err(Error::EventsStalled {
                            waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                        });
                    }
                },
                () = &mut abort, if !aborted => {
                    if !is_prompt {
                        // The guard sends `$/cancel_request`; the caller has its answer now.
                        return Err(Error::Cancelled);
                    }
                    // The actor sends `session/cancel` (cancelling the session's pending
                    // permission requests) and answers within `cancel_grace`: the agent's own
                    // answer if it comes in time, else `cancelled`.
                    aborted = true;
                    let _ = link.cmd.send(Command::Abandon { id }).await;
                }
            }
        };
        guard.done = true;
        res
    }

    pub(crate) fn control_timeout(&self) -> Option<Duration> {
        self.inner.host.config.request_timeout
    }

    /// Send an extension request (a `_`-prefixed method, e.g. `_vendor/thing`) and get its raw
    /// result. Any other method is refused with `invalid_argument` (the protocol's own methods
    /// go through their typed calls, which keep the session and turn bookkeeping).
    pub async fn ext_request(&self, method: &str, params: &Value) -> Result<Value> {
        if !method.starts_with('_') {
            return Err(Error::InvalidArgument(format!(
                "`{method}` is not an extension method (they start with `_`)"
            )));
        }
        let raw = self
            .request(
                method.to_owned(),
                params,
                ReqCtx::Plain,
                self.control_timeout(),
            )
            .await?;
        result_tree(method, &raw)
    }

    /// `authenticate` with one of the advertised agent-type auth methods.
    /// The agent's `authMethods`, parsed: which need `authenticate` and which a terminal login.
    pub fn auth_methods(&self) -> Vec<crate::auth::AuthMethodInfo> {
        self.info()
            .map(|i| {
                i.auth_methods
                    .iter()
                    .filter_map(crate::auth::AuthMethodInfo::parse)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Terminal login ([`crate::auth`]): run the login of `method_id` (a `terminal` method, or one
    /// with the legacy `_meta["terminal-auth"]`) through `HostConfig::terminal_auth`; when it
    /// exits 0, shut this agent down and start it again from the same spec (a new handshake),
    /// and return the new agent. Retry the call that failed with `auth_required` on it; sessions
    /// of this agent are gone (`load`/`resume` them on the new one). A login that exits non-zero
    /// is `auth_required` and leaves this agent running. `authenticate` is never sent.
    pub async fn terminal_auth(&self, method_id: &str) -> Result<Agent> {
        let crate::auth::TerminalAuth::Runner(runner) =
            self.inner.host.config.terminal_auth.clone()
        else {
            return Err(Error::Unsupported(
                "terminal login needs a runner (HostConfig::terminal_auth)".into(),
            ));
        };
        let Some(spec) = self.inner.spec.clone() else {
            return Err(Error::Unsupported(
                "terminal login relaunches the agent: this one was not spawned by the host".into(),
            ));
        };
        let info = self.require_info()?;
        let method = info.auth_method(method_id).ok_or_else(|| {
            Error::InvalidArgument(format!("agent does not offer auth method `{method_id}`"))
        })?;
        let command = crate::auth::terminal_command(method, &spec).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "auth method `{method_id}` is not a terminal login (use authenticate)"
            ))
        })?;
        let step = crate::progress::Step::new(crate::progress::Phase::Login);
        let (shared, id) = (&self.inner.host, self.inner.id);
        let started = step.report(
            crate::progress::Stage::Started,
            None,
            Some(method_id.to_owned()),
        );
        crate::host::progress_to(shared, id, started).await;
        let run = crate::services::serving(id, runner.run(command));
        let code = crate::host::waiting(shared, id, step, "the terminal login to end", run).await;
        let failed = match &code {
            Ok(0) => None,
            Ok(code) => Some(format!("exited with status {code}")),
            Err(e) => Some(format!("could not run: {e}")),
        };
        let stage = if failed.is_some() {
            crate::progress::Stage::Failed
        } else {
            crate::progress::Stage::Done
        };
        crate::host::progress_to(shared, id, step.report(stage, None, failed)).await;
        let code = code.map_err(|e| Error::AuthRequired {
            message: format!("terminal login `{method_id}` could not run: {e}"),
            data: None,
        })?;
        if code != 0 {
            return Err(Error::AuthRequired {
                message: format!("terminal login `{method_id}` exited with status {code}"),
                data: Some(serde_json::json!({ "exitCode": code })),
            });
        }
        let host = self
            .owner()
            .ok_or_else(|| Error::Closed("the host is gone".into()))?;
        self.shutdown().await;
        host.spawn(spec).await
    }

    pub async fn authenticate(&self, method_id: &str) -> Result<()> {
        let info = self.require_info()?;
        match info.auth_method(method_id) {
            None if !info.auth_methods.is_empty() => {
                return Err(Error::InvalidArgument(format!(
                    "agent does not offer auth method `{method_id}`"
                )));
            }
            Some(m)
                if m.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t != "agent") =>
            {
                return Err(Error::Unsupported(format!(
                    "auth method `{method_id}` is not an `agent` method (a terminal login: use \
                     terminal_auth, which relaunches the agent)"
                )));
            }
            _ => {}
        }
        let params = serde_json::json!({ "methodId": method_id });
        self.request(
            "authenticate",
            &params,
            ReqCtx::Plain,
            self.control_timeout(),
        )
        .await?;
        Ok(())
    }

    /// `logout` (needs `agentCapabilities.auth.logout`): the agent forgets its credentials;
    /// calls that need them fail with `auth_required` until `authenticate` again.
    pub async fn logout(&self) -> Result<()> {
        self.require_gate("logout")?;
        self.request(
            "logout",
            &serde_json::json!({}),
            ReqCtx::Plain,
            self.control_timeout(),
        )
        .await?;
        Ok(())
    }

    /// `session/new`.
    pub async fn new_session(&self, options: SessionOptions) -> Result<Session> {
        let info = self.require_info()?;
        if !info.supports_sessions() {
            return Err(Error::Unsupported(
                "agent does not advertise capabilities.session (ACP v2): no session/new".into(),
            ));
        }
        let params = options.params(&info, None, true)?;
        let raw = self
            .request(
                "session/new",
                &params,
                ReqCtx::NewSession {
                    cwd: options.cwd.clone(),
                    extra: options.additional_directories.clone(),
                },
                self.control_timeout(),
            )
            .await?;
        self.session_from_result(&raw, None, &options)
    }

    /// `session/load` (needs `loadSession`): the agent replays the conversation, delivered as
    /// `session_update` events with `replay: true` after `session_opened`.
    pub async fn load_session(&self, session_id: &str, options: SessionOptions) -> Result<Session> {
        self.require_gate("session/load")?;
        self.open_existing("session/load", session_id, options, true, "load")
            .await
    }

    /// `session/resume` (needs `sessionCapabilities.resume`): reopen without replay.
    pub async fn resume_session(
        &self,
        session_id: &str,
        options: SessionOptions,
    ) -> Result<Session> {
        self.require_gate("session/resume")?;
        self.open_existing("session/resume", session_id, options, false, "resume")
            .await
    }

    async fn open_existing(
        &self,
        method: &'static str,
        session_id: &str,
        options: SessionOptions,
        replay: bool,
        origin: &'static str,
    ) -> Result<Session> {
        let info = self.require_info()?;
        let params = options.params(&info, Some(session_id), method == "session/load")?;
        let id: Arc<str> = Arc::from(session_id);
        let ctx = ReqCtx::OpenSession {
            id: id.clone(),
            cwd: options.cwd.clone(),
            extra: options.additional_directories.clone(),
            replay,
            origin,
        };
        let raw = self
            .request(method, &params, ctx, self.control_timeout())
            .await?;
        self.session_from_result(&raw, Some(id), &options)
    }

    /// `session/fork` (unstable: needs `"session/fork"` in [`HostConfig::unstable`], and the
    /// agent's `sessionCapabilities.fork`): a new session that starts from `session_id`'s history.
    pub async fn fork_session(&self, session_id: &str, options: SessionOptions) -> Result<Session> {
        self.require_opt_in("session/fork")?;
        let info = self.require_gate("session/fork")?;
        let params = options.params(&info, Some(session_id), false)?;
        let raw = self
            .request(
                "session/fork",
                &params,
                ReqCtx::ForkSession {
                    cwd: options.cwd.clone(),
                    extra: options.additional_directories.clone(),
                },
                self.control_timeout(),
            )
            .await?;
        self.session_from_result(&raw, None, &options)
    }

    fn session_from_result(
        &self,
        raw: &RawValue,
        known: Option<Arc<str>>,
        options: &SessionOptions,
    ) -> Result<Session> {
        let id: Arc<str> = match known {
            Some(id) => id,
            None => {
                let v: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                match v.get("sessionId").and_then(Value::as_str) {
                    Some(s) => Arc::from(s),
                    None => return Err(Error::Protocol("response has no sessionId".into())),
                }
            }
        };
        let view = self
            .link()
            .shared
            .session_view(&id)
            .ok_or_else(|| Error::Closed(format!("session {id} closed while opening")))?;
        self.remember_session(&id, options);
        Ok(Session::new(self.clone(), id, view))
    }

    /// `session/list` (needs `sessionCapabilities.list`). Returns `{sessions, nextCursor?}`.
    pub async fn list_sessions(&self, cwd: Option<&str>, cursor: Option<&str>) -> Result<Value> {
        self.require_gate("session/list")?;
        let mut params = serde_json::json!({});
        if let Some(cwd) = cwd {
            params["cwd"] = Value::from(cwd);
        }
        if let Some(c) = cursor {
            params["cursor"] = Value::from(c);
        }
        let raw = self
            .request(
                "session/list",
                &params,
                ReqCtx::Plain,
                self.control_timeout(),
            )
            .await?;
        result_tree("session/list", &raw)
    }

    /// `session/close` (needs `sessionCapabilities.close`).
    pub async fn close_session(&self, session_id: &str) -> Result<()> {
        self.require_gate("session/close")?;
        let params = serde_json::json!({ "sessionId": session_id });
        let ctx = ReqCtx::CloseSession {
            id: Arc::from(session_id),
        };
        self.request("session/close", &params, ctx, self.control_timeout())
            .await?;
        self.forget_session(session_id);
        Ok(())
    }

    /// `session/delete` (needs `sessionCapabilities.delete`).
    pub async fn delete_session(&self, session_id: &str) -> Result<()> {
        self.require_gate("session/delete")?;
        let params = serde_json::json!({ "sessionId": session_id });
        let ctx = ReqCtx::DeleteSession {
            id: Arc::from(session_id),
        };
        self.request("session/delete", &params, ctx, self.control_timeout())
            .await?;
        self.forget_session(session_id);
        Ok(())
    }

    /// A handle to an open session of this agent.
    pub fn session(&self, session_id: &str) -> Option<Session> {
        let view = self.link().shared.session_view(session_id)?;
        Some(Session::new(self.clone(), Arc::from(session_id), view))
    }

    /// Shut the agent down (ladder: stdin EOF → grace → SIGTERM → grace → SIGKILL, to its whole
    /// process group). Pending calls fail with `closed`. Returns how it ended. A supervised agent
    /// is not restarted after this (a restart in progress is stopped and its process shut down).
    pub async fn shutdown(&self) -> ExitInfo {
        let supervision = self
            .inner
            .supervision
            .lock()
            .ok()
            .and_then(|mut s| s.take());
        if let Some(s) = supervision {
            s.stop().await;
        }
        self.shutdown_because(None).await
    }

    pub(crate) async fn shutdown_because(&self, error: Option<Value>) -> ExitInfo {
        let link = self.link();
        if let Some(info) = link.shared.exit.get() {
            return info.clone();
        }
        let (tx, rx) = oneshot::channel();
        if link
            .cmd
            .send(Command::Shutdown { reply: tx, error })
            .await
            .is_err()
        {
            return link.shared.exit.get().cloned().unwrap_or_default();
        }
        rx.await.unwrap_or_default()
    }
}

/// Sends `Command::Abandon` when a request future is dropped before its answer arrived.
struct InFlight<'a> {
    cmd: &'a mpsc::Sender<Command>,
    id: u64,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.cmd.try_send(Command::Abandon { id: self.id });
        }
    }
}

/// The error of a call on a connection that is gone: how the agent ended, once known.
pub(crate) fn gone(link: &Link) -> Error {
    link.shared
        .exit
        .get()
        .cloned()
        .map(Error::AgentExited)
        .unwrap_or_else(closed)
}

pub(crate) fn closed() -> Error {
    Error::Closed("agent connection ended".into())
}
