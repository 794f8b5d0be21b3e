//! Typed `data` of every event kind: the host's own shapes, with the ACP parts typed by the pinned
//! `agent-client-protocol-schema` crate.
//!
//! These types are what [`Event::decode`](super::Event::decode) produces and what the generated
//! JSON schema (`schema/events.schema.json`, from which the Node and Python types are generated)
//! describes. The wire JSON stays authoritative: `Event::data` is never re-serialised from these.
//! Fields a future host version adds are ignored; a field missing here is `None`.

use serde::Deserialize;
use serde_json::Value;

use agent_client_protocol_schema::v1 as acp;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// An error as every face reports it: `{kind, message, data}` (kinds in docs/ERRORS.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct ErrorInfo {
    /// The stable error kind, e.g. `agent_exited`, `cancelled`, `agent_error`.
    pub kind: String,
    pub message: String,
    #[serde(default)]
    pub data: Option<Value>,
}

/// `agent_ready`: the handshake succeeded.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentReady {
    pub protocol_version: u16,
    #[serde(default)]
    pub agent_info: Option<acp::Implementation>,
    pub agent_capabilities: acp::AgentCapabilities,
    pub auth_methods: Vec<acp::AuthMethod>,
    /// The agent's process id; null for non-process transports.
    #[serde(default)]
    pub pid: Option<u32>,
}

/// Why an agent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// It exited (or closed its stdout) on its own.
    Exited,
    /// The host shut it down (`shutdown`, the host dropped, a failed handshake).
    Shutdown,
}

/// `agent_exited`: the agent's process is gone. Its last event, unless the agent is supervised
/// (`agent_restarting` or `agent_failed` follows).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentExited {
    pub reason: ExitReason,
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that ended it, e.g. `SIGKILL`.
    #[serde(default)]
    pub signal: Option<String>,
    #[serde(default)]
    pub stderr_tail: String,
    /// Why a handshake failed (`version_unsupported`, …).
    #[serde(default)]
    pub error: Option<ErrorInfo>,
    /// A supervisor acts on this exit (`agent_restarting` or `agent_failed` follows): not the
    /// agent's last event. Absent otherwise.
    #[serde(default)]
    pub restart: bool,
}

/// How a session was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SessionOrigin {
    New,
    Load,
    Resume,
    Fork,
}

/// `session_opened`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionOpened {
    pub session_id: String,
    #[serde(default)]
    pub origin: Option<SessionOrigin>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub modes: Option<acp::SessionModeState>,
    #[serde(default)]
    pub config_options: Option<Vec<acp::SessionConfigOption>>,
    /// Set when a very long load replay forced the session open before the load response.
    #[serde(default)]
    pub partial: Option<bool>,
}

/// Why a session closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CloseReason {
    Closed,
    Deleted,
    /// `session/archive` (unstable) of a session open on this host.
    Archived,
    AgentExited,
    Shutdown,
}

/// `session_closed`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionClosed {
    pub session_id: String,
    pub reason: CloseReason,
    /// Its agent's process died and the supervisor reopens it under the same id: not the
    /// session's last event. Absent otherwise.
    #[serde(default)]
    pub restart: bool,
}

/// `turn_started`: the prompt as sent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct TurnStarted {
    pub prompt: Vec<acp::ContentBlock>,
    /// `agent`: ACP v2 work the agent started by itself (no prompt; `prompt` is empty). Absent
    /// for a prompt's turn.
    #[serde(default)]
    pub origin: Option<String>,
}

/// `turn_ended`: the `session/prompt` result (`stopReason`, `usage`, `_meta` as the agent sent
/// them), or `stopReason: null` with the `error` that ended the turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TurnEnded {
    #[serde(default)]
    pub stop_reason: Option<acp::StopReason>,
    #[serde(default)]
    pub error: Option<ErrorInfo>,
    /// Token usage, when the agent reports it (unstable in ACP, passed through as sent).
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<acp::Meta>,
    /// ACP v2: the `messageId` with which the agent accepted the prompt (absent for v1 and for
    /// an agent-initiated turn).
    #[serde(default)]
    pub message_id: Option<String>,
    /// ACP v2: the `state_update` to `idle` that ended the turn, as the agent sent it.
    #[serde(default)]
    pub state: Option<Value>,
}

/// ACP v2 (draft, `unstable: ["protocol/v2"]`): a `session_update` with `sessionUpdate:
/// "state_update"`, the session's foreground state. `idle` ends the turn (docs/EVENTS.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionStateUpdate {
    /// `running`, `idle`, `requires_action`, `unknown`, or a future state.
    pub state: String,
    /// Why the work stopped (on `idle`): `end_turn`, `cancelled`, `max_tokens`, `error`, ….
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// With `stopReason: "error"`: the failure, as a JSON-RPC error object.
    #[serde(default)]
    pub error: Option<Value>,
    /// Work running independently of the foreground work, as the agent reports it.
    #[serde(default)]
    pub background: Option<Vec<Value>>,
    /// Token usage for the completed work (unstable in ACP, passed through as sent).
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<acp::Meta>,
}

/// `permission_requested`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequested {
    /// The host's id: answer with `respond_permission(requestId, optionId | null)`.
    pub request_id: u64,
    pub session_id: String,
    /// The request's `toolCall` merged over the tool call the session already knows.
    pub tool_call: acp::ToolCallUpdate,
    pub options: Vec<acp::PermissionOption>,
}

/// Who or what settled a permission or elicitation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    Rule,
    Grant,
    Host,
    Timeout,
    Cancelled,
    Disconnected,
    InvalidAnswer,
    AgentCancelled,
}

/// `permission_resolved`: exactly one per `permission_requested`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PermissionResolved {
    pub request_id: u64,
    pub session_id: String,
    /// What the agent was answered; null when nothing could be sent.
    #[serde(default)]
    pub outcome: Option<acp::RequestPermissionOutcome>,
    #[serde(default)]
    pub option_kind: Option<acp::PermissionOptionKind>,
    pub decided_by: DecidedBy,
    /// The rule or grant that decided, when one did.
    #[serde(default)]
    pub rule: Option<String>,
    /// Why the host's answer was not used (`decidedBy: "invalid_answer"`): the handler's error
    /// (its message and stack, as the face reports it) or the unusable answer.
    #[serde(default)]
    pub reason: Option<String>,
    /// Whether the answer sent reached the agent (absent when no answer was sent:
    /// `disconnected`, `agent_cancelled`).
    #[serde(default)]
    pub receipt: Option<crate::Receipt>,
}

/// The mode of an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ElicitationMode {
    Form,
    Url,
}

/// `elicitation_requested`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRequested {
    /// The host's id: answer with `respond_elicitation(requestId, …)`.
    pub request_id: u64,
    pub agent: u64,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The id of the host's request in flight this elicitation belongs to (request scope).
    #[serde(default)]
    pub scope_request_id: Option<Value>,
    /// False when `scopeRequestId` names none of the host's requests in flight (the agent chose
    /// the id); true otherwise (session scope, or a request of the host's in flight).
    pub scope_known: bool,
    #[serde(default)]
    pub turn: Option<u64>,
    pub message: String,
    pub mode: ElicitationMode,
    /// `form` mode: the JSON schema of the requested fields.
    #[serde(default)]
    pub requested_schema: Option<acp::ElicitationSchema>,
    /// `url` mode.
    #[serde(default)]
    pub elicitation_id: Option<String>,
    /// `url` mode: shown to the user in full, never opened by the host.
    #[serde(default)]
    pub url: Option<String>,
}

/// The action an elicitation was answered with (the `action` of ACP's `ElicitationAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ElicitationActionKind {
    Accept,
    Decline,
    Cancel,
}

/// `elicitation_resolved`: exactly one per `elicitation_requested`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ElicitationResolved {
    pub request_id: u64,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Null when nothing could be sent (`disconnected`, `agent_cancelled`).
    #[serde(default)]
    pub action: Option<ElicitationActionKind>,
    pub decided_by: DecidedBy,
    /// Accepted forms: the names of the fields sent (their values are not copied here).
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// Why an answer was invalid.
    #[serde(default)]
    pub reason: Option<String>,
    /// Whether the answer sent reached the agent (absent when no answer was sent).
    #[serde(default)]
    pub receipt: Option<crate::Receipt>,
}

/// `elicitation_completed`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleted {
    pub elicitation_id: String,
}

/// How a served request (fs, terminal, extension) ended: `ok`, `denied` (with `rule`), an fs
/// refusal (`not_found`, `not_absolute`, `outside_roots`, `too_large`, `not_utf8`,
/// `is_directory`, `io`, `invalid_params`), `cancelled` or `error`.
pub type ServiceOutcome = String;

/// `fs_read`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct FsRead {
    pub path: String,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub limit: Option<u32>,
    pub outcome: ServiceOutcome,
    /// `ok`: the size of the text served.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// `denied`: the policy rule.
    #[serde(default)]
    pub rule: Option<String>,
    /// Failures: a message.
    #[serde(default)]
    pub error: Option<String>,
    /// Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts").
    #[serde(default)]
    pub receipt: Option<crate::Receipt>,
}

/// `fs_write`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct FsWrite {
    pub path: String,
    /// The content's size.
    #[serde(default)]
    pub bytes: Option<u64>,
    pub outcome: ServiceOutcome,
    #[serde(default)]
    pub rule: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    /// Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts").
    #[serde(default)]
    pub receipt: Option<crate::Receipt>,
}

/// `terminal_created`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TerminalCreated {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    pub outcome: ServiceOutcome,
    /// `ok` only.
    #[serde(default)]
    pub terminal_id: Option<String>,
    #[serde(default)]
    pub rule: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    /// Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts").
    #[serde(default)]
    pub receipt: Option<crate::Receipt>,
}

/// `terminal_exited`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TerminalExited {
    pub terminal_id: String,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub signal: Option<String>,
}

/// `progress`: a slow step of the host's (`phase`: `spawn`, `handshake`, `login`) started, is
/// still waiting (every 5 s), is done or failed. The agent has no session yet during these.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// `spawn`, `handshake`, `login` (registry installs report `download` and `extract` to their
    /// own callback).
    pub phase: String,
    /// `started`, `waiting`, `done`, `failed`.
    pub stage: String,
    /// Since the step started.
    pub elapsed_ms: u64,
    #[serde(default)]
    pub bytes: Option<u64>,
    /// What failed, or what is being waited for.
    #[serde(default)]
    pub message: Option<String>,
}

/// `agent_stderr`: one line of the agent's stderr (lossy UTF-8).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentStderr {
    pub line: String,
    /// A line over 64 KiB is reported empty, with its size here.
    #[serde(default)]
    pub omitted_bytes: Option<u64>,
}

/// `protocol_noise`: a non-JSON line on the agent's stdout, skipped.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct ProtocolNoise {
    /// Its first 1 KiB.
    pub line: String,
    pub bytes: u64,
    /// Noise lines so far from this agent.
    pub count: u64,
}

/// `protocol_error`: something the agent sent broke the protocol; ignored or repaired.
/// Further fields depend on `reason` (`id`, `bytes`, `limit`, `method`, `result`, `error`, …).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct ProtocolError {
    /// `line_too_long`, `invalid_utf8`, `unknown_response_id`, `duplicate_response`,
    /// `invalid_message`, `invalid_params`, `duplicate_request_id`, `stdin_stalled`,
    /// `late_response`, …
    pub reason: String,
    pub message: String,
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub method: Option<String>,
}

/// `ext_notification`: a notification the host does not handle.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct ExtNotification {
    pub method: String,
    #[serde(default)]
    pub params: Option<Value>,
}

/// A JSON-RPC error object as the agent was answered.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct RpcErrorInfo {
    pub code: i64,
    pub message: String,
}

/// `ext_request`: an extension request the embedder's handler served.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct ExtRequest {
    pub method: String,
    /// `ok`, `error` or `cancelled`.
    pub outcome: ServiceOutcome,
    #[serde(default)]
    pub error: Option<RpcErrorInfo>,
    /// Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts").
    #[serde(default)]
    pub receipt: Option<crate::Receipt>,
}

/// Direction of a `wire` event's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WireDirection {
    In,
    Out,
}

/// `wire` (opt-in): every JSON-RPC message in or out.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Wire {
    pub direction: WireDirection,
    pub message: Value,
}

/// `call_completed` (C ABI only): the outcome of an asynchronous call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct CallCompleted {
    pub call: u64,
    pub ok: bool,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default)]
    pub error: Option<ErrorInfo>,
}

/// `service_requested` (C ABI only, with `"services": "events"`): an agent's fs/terminal/extension
/// request or a terminal login for the embedder, answered by `requestId`
/// (`acph_service_respond` / `acph_service_fail`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ServiceRequested {
    pub request_id: u64,
    /// `fs/read_text_file`, `fs/write_text_file`, `terminal/*`, a `_` extension method, or
    /// `acph/terminal_auth`.
    pub method: String,
    /// The request's params (for fs: `{"sessionId", "path", ...}` after the host's checks).
    pub params: Value,
}

/// `agent_restarting`: a supervised agent's process ended (or the previous restart attempt
/// failed); attempt `attempt` of `maxRestarts` starts after `delayMs`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentRestarting {
    pub attempt: u32,
    pub max_restarts: u32,
    pub delay_ms: u64,
    /// Why: `agent_exited` with the dead process's status, or the failed attempt's error.
    pub error: ErrorInfo,
}

/// How a session came back after a restart.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecoveredSession {
    pub session_id: String,
    /// `resume` or `load` (a load replays the conversation as `replay: true` updates).
    pub via: String,
}

/// `agent_restarted`: the new process is the agent's connection; the embedder's handles reach
/// it. Follows the new process's `agent_ready` and the reopened sessions' `session_opened`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentRestarted {
    pub attempt: u32,
    #[serde(default)]
    pub pid: Option<u32>,
    pub recovered: Vec<RecoveredSession>,
    /// Session ids that could not be reopened (each also has a `session_lost` event).
    pub lost: Vec<String>,
}

/// `agent_failed`: the supervisor gave up after `attempts` restarts; the agent stays down.
/// Always the agent's last event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentFailed {
    pub attempts: u32,
    /// Why the last attempt (or, with `maxRestarts: 0`, the process) failed.
    pub error: ErrorInfo,
}

/// `session_lost`: a session of a restarted agent that could not be reopened (the agent offers
/// neither resume nor load, or refused); its handle no longer reaches a session.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionLost {
    pub session_id: String,
    pub error: ErrorInfo,
}

/// What became of a steer (`Session::steer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SteerOutcome {
    /// The agent took it into the running turn (the event's `turn`).
    Injected,
    /// The agent started a turn of its own for it (it ignored `idleBehavior`): no
    /// `turn_started`/`turn_ended` frame that turn, its updates carry no `turn`.
    StartedNewTurn,
    /// It waits as the session's next prompt (no steering, or the agent asked for a prompt).
    Queued,
    /// Sent as the session's next prompt: its own turn (the event's `turn`) follows.
    Prompted,
    /// Dropped unsent: `reason` says why (`cancelled`, `closed`, `agent_exited`, `shutdown`).
    Rejected,
    /// The agent did not take it: `error` says why.
    Failed,
}

/// `steer`: one step of a steer's life. `prompt` is the steer's content on every outcome but
/// `prompted` (its `turn_started` carries it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Steer {
    /// The host's id for the steer (per host, increasing; `SteerResult::steer`).
    pub steer: u64,
    pub outcome: SteerOutcome,
    #[serde(default)]
    pub prompt: Option<Vec<acp::ContentBlock>>,
    /// Why it was rejected, or the agent's `reason` for `promptRequired`/`failed`.
    #[serde(default)]
    pub reason: Option<String>,
    /// Why it failed (`failed` only).
    #[serde(default)]
    pub error: Option<ErrorInfo>,
}

/// Every kind's `data` type, one field per kind (the field name is the kind). The generated
/// schema's root: the faces build their event unions from it (`AcpEvent` in Node, the per-kind
/// event classes in Python).
#[cfg(feature = "json-schema")]
#[derive(Debug, JsonSchema)]
#[allow(dead_code)]
pub struct EventData {
    pub agent_ready: AgentReady,
    pub agent_exited: AgentExited,
    pub session_opened: SessionOpened,
    pub session_closed: SessionClosed,
    pub session_update: acp::SessionUpdate,
    pub turn_started: TurnStarted,
    pub turn_ended: TurnEnded,
    pub permission_requested: PermissionRequested,
    pub permission_resolved: PermissionResolved,
    pub elicitation_requested: ElicitationRequested,
    pub elicitation_resolved: ElicitationResolved,
    pub elicitation_completed: ElicitationCompleted,
    pub fs_read: FsRead,
    pub fs_write: FsWrite,
    pub terminal_created: TerminalCreated,
    pub terminal_exited: TerminalExited,
    pub agent_stderr: AgentStderr,
    pub protocol_noise: ProtocolNoise,
    pub protocol_error: ProtocolError,
    pub ext_notification: ExtNotification,
    pub ext_request: ExtRequest,
    pub wire: Wire,
    pub call_completed: CallCompleted,
    pub service_requested: ServiceRequested,
    pub agent_restarting: AgentRestarting,
    pub agent_restarted: AgentRestarted,
    pub agent_failed: AgentFailed,
    pub session_lost: SessionLost,
    pub progress: Progress,
    pub steer: Steer,
}

/// The event schema (`schema/events.schema.json`): [`EventData`]'s, with the ACP v2 update
/// kinds this host types ([`SessionStateUpdate`] and [`super::payload_v2`]'s) added to the
/// `SessionUpdate` union, so every face's generated types know them like the v1 kinds.
#[cfg(feature = "json-schema")]
pub fn events_schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let state = generator.subschema_for::<SessionStateUpdate>();
    let root = generator.root_schema_for::<EventData>();
    let mut schema = serde_json::to_value(root).unwrap_or(Value::Null);
    // The v2 kinds' types after the root's, appended to its `$defs`: the types already there
    // keep their place (and the generated faces their order).
    let state_row = (
        "state_update",
        "ACP v2 (draft): the session's foreground state; `idle` ends the turn.",
        state,
    );
    let rows: Vec<_> = std::iter::once(state_row)
        .chain(
            super::payload_v2::V2_UPDATE_KINDS
                .iter()
                .map(|(kind, description, payload)| (*kind, *description, payload(&mut generator))),
        )
        .collect();
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for (name, def) in generator.take_definitions(true) {
            defs.entry(name).or_insert(def);
        }
    }
    if let Some(Value::Array(variants)) = schema.pointer_mut("/$defs/SessionUpdate/oneOf") {
        for (kind, description, payload) in rows {
            let mut variant = serde_json::json!({
                "description": description,
                "type": "object",
                "properties": { "sessionUpdate": { "type": "string", "const": kind } },
                "required": ["sessionUpdate"]
            });
            if let Some(r) = payload.as_value().get("$ref") {
                variant["$ref"] = r.clone();
            }
            variants.push(variant);
        }
    }
    v2_tool_call_fields(&mut schema);
    schema
}

/// v2's `tool_call_update` is v1's type in every face (one type per tag): what v2 adds to it is
/// added to the schema here, so the faces' types know it. The Rust type (the pinned v1 one)
/// decodes these statuses to `None` (its status is default-on-error); `data` keeps them.
#[cfg(feature = "json-schema")]
fn v2_tool_call_fields(schema: &mut Value) {
    if let Some(Value::Array(statuses)) = schema.pointer_mut("/$defs/ToolCallStatus/oneOf") {
        for (status, description) in [
            (
                "paused",
                "ACP v2 (draft): started, not running now, until something resumes it.",
            ),
            (
                "cancelled",
                "ACP v2 (draft): cancelled before it completed (`tool_call/cancel`).",
            ),
        ] {
            statuses.push(serde_json::json!({
                "description": description,
                "type": "string",
                "const": status
            }));
        }
    }
    if let Some(Value::Object(props)) = schema.pointer_mut("/$defs/ToolCallUpdate/properties") {
        props.insert(
            "capabilities".into(),
            serde_json::json!({
                "description": "ACP v2 (draft): what the client may do with the call (`cancel`: `tool_call/cancel`), as the agent sent it; `null` clears it."
            }),
        );
    }
}
