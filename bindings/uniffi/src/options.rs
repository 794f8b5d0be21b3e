//! The option records (`HostOptions`, `AgentSpec`, `SessionOptions`, `PoolOptions`) and their
//! translation into the core's option documents (docs/OPTIONS.md). Every field is the option of
//! the same name, null meaning "not given"; `document` holds a whole document as JSON text
//! (Kotlin's `fromJson`), with the fields given beside it set over it. This face only translates:
//! validation, defaults and error paths are the core's (`acp_host::options`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::AcpError;

/// `clientInfo`: who the host says it is in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ClientInfo {
    #[uniffi(default = None)]
    pub name: Option<String>,
    #[uniffi(default = None)]
    pub version: Option<String>,
}

/// `fsLimits`: size limits of the built-in `fs/read_text_file` and `fs/write_text_file`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct FsLimits {
    #[uniffi(default = None)]
    pub max_read_bytes: Option<u64>,
    #[uniffi(default = None)]
    pub max_write_bytes: Option<u64>,
}

/// `record`: record every agent connection to a file (docs/RECORDING.md); one of `dir`, `file`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RecordOptions {
    #[uniffi(default = None)]
    pub dir: Option<String>,
    #[uniffi(default = None)]
    pub file: Option<String>,
    #[uniffi(default = None)]
    pub max_bytes: Option<u64>,
    #[uniffi(default = None)]
    pub redact: Option<bool>,
}

/// `terminalLimits`: limits of the built-in terminal manager.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct TerminalLimits {
    #[uniffi(default = None)]
    pub max_output_bytes: Option<u64>,
    #[uniffi(default = None)]
    pub max_terminals: Option<u64>,
}

/// Host-wide settings: the host options of docs/OPTIONS.md under the same names (durations in
/// milliseconds). Null: not given (the core's default). Options whose `null` means "none"
/// (`requestTimeoutMs`, `promptTimeoutMs`, `eventStallTimeoutMs`) take it through `document`
/// (`HostOptions.fromJson("""{"requestTimeoutMs": null}""")`).
#[derive(Debug, Clone, PartialEq, Eq, Default, uniffi::Record)]
pub struct HostOptions {
    #[uniffi(default = None)]
    pub client_info: Option<ClientInfo>,
    /// A preset name (`deny-all`, `read-only`, `ask`) or a policy file's absolute path.
    #[uniffi(default = None)]
    pub policy: Option<String>,
    /// A policy document as JSON text (docs/PERMISSIONS.md), sent as `policy`.
    #[uniffi(default = None)]
    pub policy_json: Option<String>,
    /// `deny`, `manual` (answer with `Host.respondPermission`) or `handler`.
    #[uniffi(default = None)]
    pub permission: Option<String>,
    #[uniffi(default = None)]
    pub permission_timeout_ms: Option<u64>,
    /// Extra sandbox roots (absolute) for every session, besides its cwd.
    #[uniffi(default = None)]
    pub roots: Option<Vec<String>>,
    /// `none`, `manual` (answer with `Host.respondElicitation`) or `handler`.
    #[uniffi(default = None)]
    pub elicitation: Option<String>,
    /// `form`, `url`.
    #[uniffi(default = None)]
    pub elicitation_modes: Option<Vec<String>>,
    #[uniffi(default = None)]
    pub elicitation_timeout_ms: Option<u64>,
    #[uniffi(default = None)]
    pub request_timeout_ms: Option<u64>,
    #[uniffi(default = None)]
    pub prompt_timeout_ms: Option<u64>,
    #[uniffi(default = None)]
    pub cancel_grace_ms: Option<u64>,
    #[uniffi(default = None)]
    pub shutdown_grace_ms: Option<u64>,
    /// False: no event is queued (for embedders that only use return values).
    #[uniffi(default = None)]
    pub events: Option<bool>,
    #[uniffi(default = None)]
    pub event_capacity: Option<u64>,
    #[uniffi(default = None)]
    pub event_queue_bytes: Option<u64>,
    #[uniffi(default = None)]
    pub event_stall_timeout_ms: Option<u64>,
    #[uniffi(default = None)]
    pub wire_events: Option<bool>,
    #[uniffi(default = None)]
    pub record: Option<RecordOptions>,
    #[uniffi(default = None)]
    pub coalesce_tool_call_updates: Option<bool>,
    #[uniffi(default = None)]
    pub max_line_bytes: Option<u64>,
    #[uniffi(default = None)]
    pub stderr_tail_bytes: Option<u64>,
    #[uniffi(default = None)]
    pub max_outbound_bytes: Option<u64>,
    #[uniffi(default = None)]
    pub max_pending_agent_requests: Option<u64>,
    #[uniffi(default = None)]
    pub early_update_limit: Option<u64>,
    /// `builtin` or `disabled` (`embedder` needs fs hooks, which this face does not take).
    #[uniffi(default = None)]
    pub fs: Option<String>,
    #[uniffi(default = None)]
    pub fs_limits: Option<FsLimits>,
    /// `builtin` or `disabled` (`embedder` needs terminal hooks, which this face does not take).
    #[uniffi(default = None)]
    pub terminal: Option<String>,
    #[uniffi(default = None)]
    pub terminal_limits: Option<TerminalLimits>,
    /// `none` or `embedder` (the host's `extHandler`).
    #[uniffi(default = None)]
    pub ext: Option<String>,
    /// `none` or `embedder` (the host's `terminalAuth` runner).
    #[uniffi(default = None)]
    pub terminal_auth: Option<String>,
    /// Unstable ACP methods opted into (`session/fork`).
    #[uniffi(default = None)]
    pub unstable: Option<Vec<String>>,
    /// The least severe log record the host's `logHandler` gets (`error` … `trace`; default
    /// `info`). Without a handler nothing is logged.
    #[uniffi(default = None)]
    pub log_level: Option<String>,
    /// True: `progress` events for an agent's spawn, handshake and login (`started`, `waiting`
    /// every 5 s, `done` or `failed`).
    #[uniffi(default = None)]
    pub progress_events: Option<bool>,
    /// A whole host options document as JSON text (`HostOptions.fromJson`); the fields given
    /// beside it replace its values.
    #[uniffi(default = None)]
    pub document: Option<String>,
}

/// How to start an agent process: the agent spec of docs/OPTIONS.md.
#[derive(Debug, Clone, PartialEq, Eq, Default, uniffi::Record)]
pub struct AgentSpec {
    /// The program: an absolute path, or a name looked up on `PATH` (not with `replay`).
    #[uniffi(default = None)]
    pub command: Option<String>,
    #[uniffi(default = None)]
    pub args: Option<Vec<String>>,
    /// Environment changes over the host's: a string sets, null removes.
    #[uniffi(default = None)]
    pub env: Option<HashMap<String, Option<String>>>,
    /// Working directory (absolute, existing) of the agent process (default: the host's).
    #[uniffi(default = None)]
    pub cwd: Option<String>,
    /// Supervise the agent: when its process dies unasked it is started again (same agent id,
    /// open sessions reopened, the `Agent` and `Session` objects keep working).
    #[uniffi(default = None)]
    pub restart: Option<RestartPolicy>,
    /// A whole agent spec document as JSON text (`AgentSpec.fromJson`); the fields given beside
    /// it replace its values.
    #[uniffi(default = None)]
    pub document: Option<String>,
    // Last: the fields before it keep their positions (positional Kotlin calls still compile).
    /// Instead of a process, play this recording's agent side inside the host
    /// (docs/RECORDING.md, "Replaying"); no `command`, `args`, `env`, `cwd` or `restart` then.
    #[uniffi(default = None)]
    pub replay: Option<ReplayOptions>,
}

/// `restart`: how a supervised agent is restarted (events `agent_restarting`,
/// `agent_restarted`, `session_lost`, `agent_failed`; docs/EVENTS.md). Null fields: the
/// defaults of docs/OPTIONS.md.
#[derive(Debug, Clone, PartialEq, Eq, Default, uniffi::Record)]
pub struct RestartPolicy {
    /// Restarts allowed since the last healthy period (`resetAfterMs`) before giving up
    /// (`agent_failed`).
    #[uniffi(default = None)]
    pub max_restarts: Option<u64>,
    /// Delay before the first restart; doubles per attempt.
    #[uniffi(default = None)]
    pub backoff_ms: Option<u64>,
    #[uniffi(default = None)]
    pub max_backoff_ms: Option<u64>,
    /// An agent up this long is healthy: the attempt count starts again at 0.
    #[uniffi(default = None)]
    pub reset_after_ms: Option<u64>,
}

/// `replay.pace`: when the recorded agent's messages are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum ReplayPace {
    /// `recorded`: after the recorded delay (the default).
    Recorded,
    /// `fast`: at once.
    Fast,
}

/// `replay`: the recording played instead of an agent process (the `replay.*` options of
/// docs/OPTIONS.md). Null fields: the core's defaults.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ReplayOptions {
    /// The recording (absolute path).
    pub file: String,
    #[uniffi(default = None)]
    pub pace: Option<ReplayPace>,
    /// How long a recorded host message is waited for before it is reported missing (default
    /// 10000; "until the connection closes" is `null` in the document: `AgentSpec.fromJson`).
    #[uniffi(default = None)]
    pub wait_ms: Option<u64>,
    /// Where the report (JSON: the divergences) is written when the replay ends (absolute path).
    #[uniffi(default = None)]
    pub report: Option<String>,
    /// Fields never compared, as a divergence names them (`params.prompt`, `result.outcome`).
    #[uniffi(default = None)]
    pub ignore: Option<Vec<String>>,
}

/// Options of `session/new` (and load/resume/fork): the session options of docs/OPTIONS.md.
#[derive(Debug, Clone, PartialEq, Eq, Default, uniffi::Record)]
pub struct SessionOptions {
    /// Absolute, existing working directory (also a sandbox root).
    #[uniffi(default = None)]
    pub cwd: Option<String>,
    /// More absolute, existing roots, sent when the agent supports `additionalDirectories`.
    #[uniffi(default = None)]
    pub additional_directories: Option<Vec<String>>,
    /// MCP server configurations in ACP shape, each as JSON text.
    #[uniffi(default = None)]
    pub mcp_servers: Option<Vec<String>>,
    /// A whole session options document as JSON text (`SessionOptions.fromJson`).
    #[uniffi(default = None)]
    pub document: Option<String>,
}

/// `pool.mode`: how sessions map onto a pool's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum PoolMode {
    /// `process-per-session`: one process per session, shut down when the session is released.
    ProcessPerSession,
    /// `shared`: up to `maxSessionsPerAgent` sessions per process, least-loaded first.
    Shared,
}

/// A pool's settings: the pool options of docs/OPTIONS.md (the `pool.*` paths of its errors).
#[derive(Debug, Clone, PartialEq, Eq, Default, uniffi::Record)]
pub struct PoolOptions {
    #[uniffi(default = None)]
    pub mode: Option<PoolMode>,
    #[uniffi(default = None)]
    pub max_sessions_per_agent: Option<u64>,
    /// Processes kept started and initialized, ready for a session.
    #[uniffi(default = None)]
    pub warm_spares: Option<u64>,
    /// Live processes at most (spares and starting ones count).
    #[uniffi(default = None)]
    pub max_agents: Option<u64>,
    /// A shared process without sessions this long is shut down (`null` via `document`: never).
    #[uniffi(default = None)]
    pub idle_timeout_ms: Option<u64>,
    /// A whole pool options document as JSON text (`PoolOptions.fromJson`).
    #[uniffi(default = None)]
    pub document: Option<String>,
}

/// The document being built: `document`'s object (or an empty one), each given field set over
/// it. A `document` that is not a JSON object is handed on as it is (the core refuses it).
struct Doc {
    base: Value,
}

impl Doc {
    fn new(document: Option<&str>) -> Result<Doc, AcpError> {
        let base = match document {
            Some(text) => acp_host::options::document(text)?,
            None => Value::Object(Map::new()),
        };
        Ok(Doc { base })
    }

    fn set(&mut self, name: &str, v: Option<Value>) {
        if let (Some(v), Some(m)) = (v, self.base.as_object_mut()) {
            m.insert(name.to_owned(), v);
        }
    }

    /// A nested object's fields set over the document's (`fsLimits`, `clientInfo`, `restart`).
    fn nest(&mut self, name: &str, fields: Option<Vec<(&str, Option<Value>)>>) {
        let (Some(fields), Some(m)) = (fields, self.base.as_object_mut()) else {
            return;
        };
        let slot = m
            .entry(name.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        if let Some(obj) = slot.as_object_mut() {
            for (k, v) in fields {
                if let Some(v) = v {
                    obj.insert(k.to_owned(), v);
                }
            }
        }
    }
}

fn num(v: Option<u64>) -> Option<Value> {
    v.map(Value::from)
}
fn text(v: &Option<String>) -> Option<Value> {
    v.clone().map(Value::from)
}
fn flag(v: Option<bool>) -> Option<Value> {
    v.map(Value::from)
}
fn list(v: &Option<Vec<String>>) -> Option<Value> {
    v.clone().map(Value::from)
}

/// Each entry of a list of JSON texts, parsed (`mcpServers[2]` when one is not JSON).
fn json_list(name: &str, v: &Option<Vec<String>>) -> Result<Option<Value>, AcpError> {
    let Some(items) = v else { return Ok(None) };
    let mut out = Vec::with_capacity(items.len());
    for (i, t) in items.iter().enumerate() {
        out.push(serde_json::from_str(t).map_err(|e| {
            AcpError::invalid_config(&format!("{name}[{i}]"), format!("not valid JSON: {e}"))
        })?);
    }
    Ok(Some(Value::Array(out)))
}

impl HostOptions {
    /// The host options document (docs/OPTIONS.md, "Host options").
    pub(crate) fn to_document(&self) -> Result<Value, AcpError> {
        let mut d = Doc::new(self.document.as_deref())?;
        d.nest(
            "clientInfo",
            self.client_info
                .as_ref()
                .map(|c| vec![("name", text(&c.name)), ("version", text(&c.version))]),
        );
        match (&self.policy, &self.policy_json) {
            (Some(_), Some(_)) => {
                return Err(AcpError::invalid_config(
                    "policy",
                    "give `policy` (a preset or a file) or `policyJson` (a document), not both",
                ));
            }
            (p, None) => d.set("policy", text(p)),
            (None, Some(j)) => d.set(
                "policy",
                Some(serde_json::from_str(j).map_err(|e| {
                    AcpError::invalid_config("policy", format!("not valid JSON: {e}"))
                })?),
            ),
        }
        d.set("permission", text(&self.permission));
        d.set("permissionTimeoutMs", num(self.permission_timeout_ms));
        d.set("roots", list(&self.roots));
        d.set("elicitation", text(&self.elicitation));
        d.set("elicitationModes", list(&self.elicitation_modes));
        d.set("elicitationTimeoutMs", num(self.elicitation_timeout_ms));
        d.set("requestTimeoutMs", num(self.request_timeout_ms));
        d.set("promptTimeoutMs", num(self.prompt_timeout_ms));
        d.set("cancelGraceMs", num(self.cancel_grace_ms));
        d.set("shutdownGraceMs", num(self.shutdown_grace_ms));
        d.set("events", flag(self.events));
        d.set("eventCapacity", num(self.event_capacity));
        d.set("eventQueueBytes", num(self.event_queue_bytes));
        d.set("eventStallTimeoutMs", num(self.event_stall_timeout_ms));
        d.set("progressEvents", flag(self.progress_events));
        d.set("wireEvents", flag(self.wire_events));
        d.nest(
            "record",
            self.record.as_ref().map(|r| {
                vec![
                    ("dir", text(&r.dir)),
                    ("file", text(&r.file)),
                    ("maxBytes", num(r.max_bytes)),
                    ("redact", flag(r.redact)),
                ]
            }),
        );
        d.set(
            "coalesceToolCallUpdates",
            flag(self.coalesce_tool_call_updates),
        );
        d.set("maxLineBytes", num(self.max_line_bytes));
        d.set("stderrTailBytes", num(self.stderr_tail_bytes));
        d.set("maxOutboundBytes", num(self.max_outbound_bytes));
        d.set(
            "maxPendingAgentRequests",
            num(self.max_pending_agent_requests),
        );
        d.set("earlyUpdateLimit", num(self.early_update_limit));
        d.set("fs", text(&self.fs));
        d.nest(
            "fsLimits",
            self.fs_limits.as_ref().map(|l| {
                vec![
                    ("maxReadBytes", num(l.max_read_bytes)),
                    ("maxWriteBytes", num(l.max_write_bytes)),
                ]
            }),
        );
        d.set("terminal", text(&self.terminal));
        d.nest(
            "terminalLimits",
            self.terminal_limits.as_ref().map(|l| {
                vec![
                    ("maxOutputBytes", num(l.max_output_bytes)),
                    ("maxTerminals", num(l.max_terminals)),
                ]
            }),
        );
        d.set("ext", text(&self.ext));
        d.set("terminalAuth", text(&self.terminal_auth));
        d.set("unstable", list(&self.unstable));
        d.set("logLevel", text(&self.log_level));
        Ok(d.base)
    }
}

impl AgentSpec {
    /// The agent spec document (docs/OPTIONS.md, "Agent spec").
    pub(crate) fn to_document(&self) -> Result<Value, AcpError> {
        let mut d = Doc::new(self.document.as_deref())?;
        d.set("command", text(&self.command));
        d.set("args", list(&self.args));
        d.set(
            "env",
            self.env.as_ref().map(|env| {
                Value::Object(
                    env.iter()
                        .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::from)))
                        .collect(),
                )
            }),
        );
        d.set("cwd", text(&self.cwd));
        d.nest(
            "restart",
            self.restart.as_ref().map(|r| {
                vec![
                    ("maxRestarts", num(r.max_restarts)),
                    ("backoffMs", num(r.backoff_ms)),
                    ("maxBackoffMs", num(r.max_backoff_ms)),
                    ("resetAfterMs", num(r.reset_after_ms)),
                ]
            }),
        );
        d.nest(
            "replay",
            self.replay.as_ref().map(|r| {
                vec![
                    ("file", Some(Value::from(r.file.clone()))),
                    (
                        "pace",
                        r.pace.map(|p| {
                            Value::from(match p {
                                ReplayPace::Recorded => "recorded",
                                ReplayPace::Fast => "fast",
                            })
                        }),
                    ),
                    ("waitMs", num(r.wait_ms)),
                    ("report", text(&r.report)),
                    ("ignore", list(&r.ignore)),
                ]
            }),
        );
        Ok(d.base)
    }

    /// The core's spec, checked by the core.
    pub(crate) fn to_core(&self) -> Result<acp_host::AgentSpec, AcpError> {
        let doc = self.to_document()?;
        Ok(acp_host::options::agent_spec(
            &doc,
            acp_host::options::Face::Kotlin,
        )?)
    }

    /// The record of a core spec (the registry's resolved agents: programs, never replays).
    pub(crate) fn from_core(spec: acp_host::AgentSpec) -> AgentSpec {
        AgentSpec {
            replay: None,
            document: None,
            command: Some(spec.command),
            args: Some(spec.args),
            env: Some(spec.env.into_iter().collect()),
            cwd: spec.cwd.map(|p| p.to_string_lossy().into_owned()),
            restart: None,
        }
    }
}

impl SessionOptions {
    /// The session options document (docs/OPTIONS.md, "Session options").
    pub(crate) fn to_document(&self) -> Result<Value, AcpError> {
        let mut d = Doc::new(self.document.as_deref())?;
        d.set("cwd", text(&self.cwd));
        d.set("additionalDirectories", list(&self.additional_directories));
        d.set("mcpServers", json_list("mcpServers", &self.mcp_servers)?);
        Ok(d.base)
    }

    /// The core's session options, checked by the core.
    pub(crate) fn to_core(&self) -> Result<acp_host::SessionOptions, AcpError> {
        let doc = self.to_document()?;
        Ok(acp_host::options::session(
            &doc,
            acp_host::options::Face::Kotlin,
        )?)
    }
}

impl PoolOptions {
    /// The pool options document (docs/OPTIONS.md, "Pool options"; paths `pool.*`).
    pub(crate) fn to_document(&self) -> Result<Value, AcpError> {
        let mut d = Doc::new(self.document.as_deref())?;
        d.set(
            "mode",
            self.mode.map(|m| {
                Value::from(match m {
                    PoolMode::ProcessPerSession => "process-per-session",
                    PoolMode::Shared => "shared",
                })
            }),
        );
        d.set("maxSessionsPerAgent", num(self.max_sessions_per_agent));
        d.set("warmSpares", num(self.warm_spares));
        d.set("maxAgents", num(self.max_agents));
        d.set("idleTimeoutMs", num(self.idle_timeout_ms));
        Ok(d.base)
    }
}

/// The effective host options of the core's table as JSON text (`effective`), for tests and
/// settings views.
pub(crate) fn effective(config: &acp_host::HostConfig) -> String {
    acp_host::options::effective(config).to_string()
}
