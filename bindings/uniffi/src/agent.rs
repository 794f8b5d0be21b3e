//! `Agent` and `Session`, and the records they take and return.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::error::AcpError;
use crate::events::SessionEventStream;
use crate::options::SessionOptions;
use crate::runtime::on_rt;
use acp_host::EventHub;

/// How a prompt turn ended: the core's one result shape (`turn`, `stopReason`, `usage`, `raw`,
/// `text`, `thought`, `textTruncated`), JSON values as JSON text; `json` is the whole result as
/// every face serialises it.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct TurnResult {
    /// The host's turn id (the `turn` of its events).
    pub turn: u64,
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`, `cancelled` (or a future value).
    pub stop_reason: String,
    /// `usage` of the prompt response as JSON, when sent.
    pub usage: Option<String>,
    /// The whole prompt response as JSON.
    pub raw: String,
    /// The agent's message text of the turn (its `agent_message_chunk` text blocks).
    pub text: String,
    /// The thought text (`agent_thought_chunk`).
    pub thought: String,
    /// `text` or `thought` reached 4 MiB and was cut there.
    pub text_truncated: bool,
    /// The core's `TurnResult::to_json()` as JSON text, the same in every face.
    pub json: String,
}

impl From<acp_host::TurnResult> for TurnResult {
    fn from(t: acp_host::TurnResult) -> TurnResult {
        let json = t.to_json().to_string();
        TurnResult {
            turn: t.turn,
            stop_reason: t.stop_reason,
            usage: t.usage.map(|u| u.to_string()),
            raw: t.raw.to_string(),
            text: t.text,
            thought: t.thought,
            text_truncated: t.text_truncated,
            json,
        }
    }
}

/// How an agent process ended.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ExitStatus {
    pub exit_code: Option<i32>,
    /// `SIGKILL`, `SIGTERM`, … when killed by a signal.
    pub signal: Option<String>,
    /// The last bytes of its stderr (bounded).
    pub stderr_tail: String,
}

impl From<&acp_host::ExitInfo> for ExitStatus {
    fn from(e: &acp_host::ExitInfo) -> ExitStatus {
        ExitStatus {
            exit_code: e.code,
            signal: e.signal.clone(),
            stderr_tail: e.stderr_tail.clone(),
        }
    }
}

pub(crate) fn json_arg(what: &str, text: &str) -> Result<Value, AcpError> {
    serde_json::from_str(text)
        .map_err(|e| AcpError::invalid_argument(format!("{what} is not JSON: {e}"), Some(what)))
}

/// A connected, initialized agent.
#[derive(Debug, uniffi::Object)]
pub struct Agent {
    pub(crate) agent: acp_host::Agent,
    /// The host's list of the agents it owns (a relaunched agent joins it).
    owned: Arc<Mutex<Vec<acp_host::Agent>>>,
    hub: Option<EventHub>,
}

impl Agent {
    pub(crate) fn new(
        agent: acp_host::Agent,
        owned: Arc<Mutex<Vec<acp_host::Agent>>>,
        hub: Option<EventHub>,
    ) -> Agent {
        Agent { agent, owned, hub }
    }

    /// The one path of new/load/resume/fork: check the options, run `open` on the runtime.
    async fn open<F, Fut>(&self, options: SessionOptions, open: F) -> Result<Arc<Session>, AcpError>
    where
        F: FnOnce(acp_host::Agent, acp_host::SessionOptions) -> Fut,
        Fut: std::future::Future<Output = acp_host::Result<acp_host::Session>>,
    {
        let opened = open(self.agent.clone(), options.to_core()?);
        let hub = self.hub.clone();
        on_rt(async move { Ok(Session::wrap(opened.await?, hub)) }).await
    }
}

#[uniffi::export]
impl Agent {
    /// The host's id for this agent (the `agent` of events).
    pub fn id(&self) -> u64 {
        self.agent.id()
    }

    /// The process id (null for a connected transport).
    pub fn pid(&self) -> Option<u32> {
        self.agent.pid()
    }

    /// What `initialize` returned: `{protocolVersion, agentInfo, agentCapabilities,
    /// authMethods}` as JSON.
    pub fn info(&self) -> String {
        match self.agent.info() {
            Some(i) => serde_json::json!({
                "protocolVersion": i.protocol_version,
                "agentInfo": i.agent_info,
                "agentCapabilities": i.capabilities,
                "authMethods": i.auth_methods,
            })
            .to_string(),
            None => "null".into(),
        }
    }

    /// How its current process ended, once it has (a supervised agent's is cleared again when a
    /// restart succeeds).
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.agent.exit_info().as_ref().map(ExitStatus::from)
    }

    /// Whether the supervisor gave up on this agent (after its `agent_failed` event): it stays
    /// down. Always false for an agent spawned without `restart`.
    pub fn restarts_exhausted(&self) -> bool {
        self.agent.restarts_exhausted()
    }

    /// Open a new session.
    pub async fn new_session(&self, options: SessionOptions) -> Result<Arc<Session>, AcpError> {
        self.open(options, |a, o| async move { a.new_session(o).await })
            .await
    }

    /// `session/load` (needs `loadSession`): the history replays as `replay` events first.
    pub async fn load_session(
        &self,
        session_id: String,
        options: SessionOptions,
    ) -> Result<Arc<Session>, AcpError> {
        self.open(options, |a, o| async move {
            a.load_session(&session_id, o).await
        })
        .await
    }

    /// `session/resume` (needs `sessionCapabilities.resume`): reopen without replay.
    pub async fn resume_session(
        &self,
        session_id: String,
        options: SessionOptions,
    ) -> Result<Arc<Session>, AcpError> {
        self.open(options, |a, o| async move {
            a.resume_session(&session_id, o).await
        })
        .await
    }

    /// `session/fork` (unstable: `HostOptions.unstable = listOf("session/fork")`).
    pub async fn fork_session(
        &self,
        session_id: String,
        options: SessionOptions,
    ) -> Result<Arc<Session>, AcpError> {
        self.open(options, |a, o| async move {
            a.fork_session(&session_id, o).await
        })
        .await
    }

    /// `session/list` (one page) as JSON: `{sessions, nextCursor?}`.
    pub async fn list_sessions(
        &self,
        cwd: Option<String>,
        cursor: Option<String>,
    ) -> Result<String, AcpError> {
        let agent = self.agent.clone();
        on_rt(async move {
            Ok(agent
                .list_sessions(cwd.as_deref(), cursor.as_deref())
                .await?
                .to_string())
        })
        .await
    }

    /// `session/close` for a session id.
    pub async fn close_session(&self, session_id: String) -> Result<(), AcpError> {
        let agent = self.agent.clone();
        on_rt(async move { Ok(agent.close_session(&session_id).await?) }).await
    }

    /// `session/delete` (unstable in ACP; gated on the agent's capability).
    pub async fn delete_session(&self, session_id: String) -> Result<(), AcpError> {
        let agent = self.agent.clone();
        on_rt(async move { Ok(agent.delete_session(&session_id).await?) }).await
    }

    /// `authenticate` with one of the agent's `authMethods`.
    pub async fn authenticate(&self, method_id: String) -> Result<(), AcpError> {
        let agent = self.agent.clone();
        on_rt(async move { Ok(agent.authenticate(&method_id).await?) }).await
    }

    /// `logout` (only when the agent advertises `auth.logout`; nothing is sent otherwise).
    pub async fn logout(&self) -> Result<(), AcpError> {
        let agent = self.agent.clone();
        on_rt(async move { Ok(agent.logout().await?) }).await
    }

    /// An extension request (`_`-prefixed method) with JSON params; the result as JSON.
    pub async fn ext_request(&self, method: String, params: String) -> Result<String, AcpError> {
        let params = json_arg("params", &params)?;
        let agent = self.agent.clone();
        on_rt(async move { Ok(agent.ext_request(&method, &params).await?.to_string()) }).await
    }

    /// Log in with an auth method of `type: "terminal"` through the host's `terminalAuth`
    /// runner; on exit 0 the agent is relaunched and the new agent returned (this one has
    /// exited). `authenticate` is never sent for these methods.
    pub async fn terminal_auth(&self, method_id: String) -> Result<Arc<Agent>, AcpError> {
        let agent = self.agent.clone();
        let owned = self.owned.clone();
        let hub = self.hub.clone();
        on_rt(async move {
            let next = agent.terminal_auth(&method_id).await?;
            if let Ok(mut all) = owned.lock() {
                all.retain(|a| !a.is_gone());
                all.push(next.clone());
            }
            Ok(Arc::new(Agent::new(next, owned, hub)))
        })
        .await
    }

    /// A session of this agent that is open, by id.
    pub fn session(&self, session_id: String) -> Option<Arc<Session>> {
        self.agent
            .session(&session_id)
            .map(|s| Session::wrap(s, self.hub.clone()))
    }

    /// Shut the agent down (stdin EOF → SIGTERM → SIGKILL to its process group) and wait.
    pub async fn shutdown(&self) -> ExitStatus {
        let agent = self.agent.clone();
        on_rt(async move { ExitStatus::from(&agent.shutdown().await) }).await
    }

    /// Wait until the agent has ended.
    pub async fn exited(&self) -> ExitStatus {
        let agent = self.agent.clone();
        on_rt(async move {
            agent.exited().await;
            agent
                .exit_info()
                .as_ref()
                .map(ExitStatus::from)
                .unwrap_or(ExitStatus {
                    exit_code: None,
                    signal: None,
                    stderr_tail: String::new(),
                })
        })
        .await
    }
}

/// What `session.steer` did with the text: the core's one shape (`steer`, `outcome`, `turn`);
/// `json` is the whole result as every face serialises it. Its later fate is in `steer` events.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct SteerResult {
    /// The host's id for the steer (the `steer` field of its events).
    pub steer: u64,
    /// `injected`, `started_new_turn`, `queued` or `prompted`.
    pub outcome: String,
    /// `injected`: the turn it joined; `prompted`: its own turn.
    pub turn: Option<u64>,
    /// The core's `SteerResult::to_json()` as JSON text.
    pub json: String,
}

impl From<acp_host::SteerResult> for SteerResult {
    fn from(r: acp_host::SteerResult) -> SteerResult {
        let json = r.to_json();
        SteerResult {
            steer: r.steer,
            outcome: json["outcome"].as_str().unwrap_or_default().to_owned(),
            turn: r.turn,
            json: json.to_string(),
        }
    }
}

/// An open session.
#[derive(Debug, uniffi::Object)]
pub struct Session {
    pub(crate) session: acp_host::Session,
    hub: Option<EventHub>,
}

impl Session {
    pub(crate) fn wrap(session: acp_host::Session, hub: Option<EventHub>) -> Arc<Session> {
        Arc::new(Session { session, hub })
    }
}

/// A turn's result once its events reached the session's open streams (docs: the ordering
/// contract; `EventHub::turn_delivered`).
pub(crate) async fn settled(
    turn: acp_host::Result<acp_host::TurnResult>,
    session: &acp_host::Session,
    hub: Option<EventHub>,
) -> Result<TurnResult, AcpError> {
    let turn = turn?;
    if let Some(hub) = hub {
        let delivered = hub.turn_delivered(session.agent().id(), session.id(), turn.turn);
        if let Err(acp_host::Error::EventsStalled { waited_ms }) = delivered.await {
            // Kotlin's usual cause: a prompt awaited inside its own session's collector.
            return Err(AcpError::EventsStalled {
                detail: format!(
                    "turn {} ended, but an open event stream of its session took nothing for {waited_ms} ms (a prompt awaited inside that session's own collector waits for itself: launch it instead)",
                    turn.turn
                ),
                data: None,
            });
        }
    }
    Ok(turn.into())
}

#[uniffi::export]
impl Session {
    pub fn id(&self) -> String {
        self.session.id().to_owned()
    }

    /// The id of its agent.
    pub fn agent_id(&self) -> u64 {
        self.session.agent().id()
    }

    /// A snapshot of the session's state (modes, config options, models, tool calls, plan,
    /// commands, …) as JSON (docs/EVENTS.md, "SessionView").
    pub fn state(&self) -> String {
        serde_json::to_string(&self.session.state()).unwrap_or_default()
    }

    /// The host's id of the turn in flight (the `turn` of its events), null when idle. After a
    /// cancelled prompt it stays set until the agent answers (its `turn_ended`).
    pub fn active_turn(&self) -> Option<u64> {
        self.session.state().active_turn
    }

    /// This session's events (Kotlin: `session.events()`): from the oldest its bounded history
    /// holds — `session_opened`, unless more than `earlyUpdateLimit` events or `eventQueueBytes`
    /// bytes came before (then the first event's `dropped` counts what was left out) — then
    /// live, until `session_closed`. While such a stream is open, `prompt` returns only after it
    /// has handed on the turn's `turn_ended`. `Unsupported` when events are disabled.
    pub fn event_stream(&self) -> Result<Arc<SessionEventStream>, AcpError> {
        match &self.hub {
            Some(hub) => Ok(Arc::new(SessionEventStream::new(
                hub.session(self.session.agent().id(), self.session.id()),
            ))),
            None => Err(AcpError::Unsupported {
                detail: "events are disabled (events = false)".into(),
                data: None,
            }),
        }
    }

    /// The models offered (`{current, available, via}` as JSON), null when none.
    pub fn models(&self) -> Option<String> {
        self.session
            .models()
            .and_then(|m| serde_json::to_string(&m).ok())
    }

    /// Send one text block and wait for the turn to end: the result comes once every open
    /// event stream of this session (`session.events()` collections) has taken the turn's
    /// `turn_ended`. Cancelling the calling coroutine abandons the turn: the agent gets
    /// `session/cancel`.
    pub async fn prompt(&self, text: String) -> Result<TurnResult, AcpError> {
        let (session, hub) = (self.session.clone(), self.hub.clone());
        on_rt(async move { settled(session.prompt_text(&text).await, &session, hub).await }).await
    }

    /// Send content blocks (each an ACP content block as JSON) and wait for the turn to end.
    pub async fn prompt_content(&self, blocks: Vec<String>) -> Result<TurnResult, AcpError> {
        let mut content = Vec::with_capacity(blocks.len());
        for (i, b) in blocks.iter().enumerate() {
            content.push(json_arg(&format!("blocks[{i}]"), b)?);
        }
        let (session, hub) = (self.session.clone(), self.hub.clone());
        on_rt(async move { settled(session.prompt(content).await, &session, hub).await }).await
    }

    /// Steer with one text block (unstable: `HostOptions.unstable = listOf("_session/steering")`):
    /// into the running turn when the agent advertises steering (`injected`), else queued as
    /// the session's next prompt (`queued`, then a `steer` event `prompted` with its own turn;
    /// `prompted` at once when no turn runs). A cancel, a close or the agent ending reject
    /// queued steers. docs/STEERING.md.
    pub async fn steer(&self, text: String) -> Result<SteerResult, AcpError> {
        let session = self.session.clone();
        on_rt(async move { Ok(session.steer_text(&text).await?.into()) }).await
    }

    /// Steer with content blocks (each an ACP content block as JSON), as `steer`.
    pub async fn steer_content(&self, blocks: Vec<String>) -> Result<SteerResult, AcpError> {
        let mut content = Vec::with_capacity(blocks.len());
        for (i, b) in blocks.iter().enumerate() {
            content.push(json_arg(&format!("blocks[{i}]"), b)?);
        }
        let session = self.session.clone();
        on_rt(async move { Ok(session.steer(content).await?.into()) }).await
    }

    /// `session/cancel`: the turn in flight ends `cancelled` (or fails `cancelled` after the
    /// cancel grace when the agent ignores it); pending permission requests are answered
    /// `cancelled`.
    pub async fn cancel(&self) -> Result<(), AcpError> {
        let session = self.session.clone();
        on_rt(async move { Ok(session.cancel().await?) }).await
    }

    pub async fn set_mode(&self, mode_id: String) -> Result<(), AcpError> {
        let session = self.session.clone();
        on_rt(async move { Ok(session.set_mode(&mode_id).await?) }).await
    }

    /// `session/set_config_option` with a JSON value; returns the new config options as JSON.
    pub async fn set_config_option(
        &self,
        config_id: String,
        value: String,
    ) -> Result<String, AcpError> {
        let value = json_arg("value", &value)?;
        let session = self.session.clone();
        on_rt(async move {
            Ok(session
                .set_config_option(&config_id, value)
                .await?
                .to_string())
        })
        .await
    }

    pub async fn set_model(&self, model_id: String) -> Result<(), AcpError> {
        let session = self.session.clone();
        on_rt(async move { Ok(session.set_model(&model_id).await?) }).await
    }

    /// `session/close` (when the agent supports it; else the session is forgotten locally).
    pub async fn close_session(&self) -> Result<(), AcpError> {
        let session = self.session.clone();
        on_rt(async move { Ok(session.close().await?) }).await
    }
}
