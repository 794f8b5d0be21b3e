//! The one error type of the core. Every face maps [`Error::kind`] once, so the strings are stable.

mod table;

pub use table::{ERROR_KINDS, ErrorKindInfo, Reach, markdown_table};

use std::sync::Arc;

use serde_json::Value;

/// How an agent process ended, as far as we could observe it.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct ExitInfo {
    /// Exit code, when the process exited normally.
    #[serde(rename = "exitCode")]
    pub code: Option<i32>,
    /// Signal name (e.g. `SIGKILL`) when the process was killed by a signal.
    pub signal: Option<String>,
    /// The last bytes the agent wrote to stderr (bounded), lossily decoded.
    #[serde(rename = "stderrTail")]
    pub stderr_tail: String,
}

impl ExitInfo {
    /// Last non-empty stderr line, for one-line error messages.
    pub fn last_stderr_line(&self) -> Option<&str> {
        self.stderr_tail
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
    }

    fn describe(&self) -> String {
        let status = match (&self.code, &self.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by {s}"),
            (None, None) => "unknown status".to_owned(),
        };
        match self.last_stderr_line() {
            Some(line) => format!("{status}; last stderr line: {line}"),
            None => status,
        }
    }
}

/// Errors returned by every public operation of the core.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The agent process exited (or closed its stdout) while the operation was pending.
    #[error("agent exited ({})", .0.describe())]
    AgentExited(ExitInfo),
    /// The operation did not complete in time.
    #[error("{what} timed out after {after_ms} ms")]
    Timeout { what: String, after_ms: u64 },
    /// The agent did not advertise the capability this call needs; nothing was sent.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The agent broke the protocol in a way that prevents this operation.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The agent answered with a JSON-RPC error.
    #[error("agent error {code}: {message}")]
    Agent {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// The agent requires `authenticate` first (JSON-RPC error -32000).
    #[error("authentication required: {message}")]
    AuthRequired {
        message: String,
        data: Option<Value>,
    },
    /// The agent answered `initialize` with a protocol version this host does not speak.
    #[error("agent speaks protocol version {agent}, this host speaks {host}")]
    VersionUnsupported { agent: Value, host: u16 },
    /// The caller passed something invalid (bad content block, unknown option, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A field of an argument was not acceptable; `path` names it (`cwd`, `params`). Kind
    /// `invalid_argument`, `data` `{path}`.
    #[error("invalid argument: {path}: {message}")]
    InvalidField { path: String, message: String },

    /// The host's configuration cannot be used; `path` names the spot (`policy.rules[0].action`).
    #[error("invalid config: {path}: {message}")]
    InvalidConfig { path: String, message: String },
    /// The agent command could not be started.
    #[error("could not start agent `{command}`: {message}")]
    SpawnFailed { command: String, message: String },
    /// An I/O error: the agent's pipes, or a registry install (its cache directory, the archive,
    /// the embedder's fetch hook).
    #[error("i/o error: {0}")]
    Io(Arc<std::io::Error>),
    /// The host or the agent connection was shut down.
    #[error("closed: {0}")]
    Closed(String),
    /// The request was cancelled (JSON-RPC -32800, or by the caller).
    #[error("cancelled")]
    Cancelled,
    /// The session already has a prompt turn in flight.
    #[error("busy: {0}")]
    Busy(String),
    /// Unknown id (agent, session, permission request, ...).
    #[error("not found: {0}")]
    NotFound(String),
    /// The id refers to something that is already finished (e.g. a permission request answered twice).
    #[error("already resolved: {0}")]
    AlreadyResolved(String),
    /// The call could not complete because the host's event queue is full and nobody has pulled
    /// an event for `waited_ms` (`HostConfig::event_stall_timeout`): pull events while calls are
    /// pending, or disable events. The call was abandoned (a prompt is cancelled).
    #[error(
        "the event queue is full and nobody has pulled an event for {waited_ms} ms; pull events while calls are pending (the call was abandoned)"
    )]
    EventsStalled { waited_ms: u64 },
    /// An embedder's answer that was not used: `error` says why (its kind and message are this
    /// error's), `state` what became of the request; `data.receipt` is the answer's `rejected`
    /// receipt (`crate::Receipt`).
    #[error("{error}")]
    Rejected {
        error: Box<Error>,
        state: crate::receipt::RequestState,
    },
}

impl Error {
    /// Stable machine-readable kind, shared by every face.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::AgentExited(_) => "agent_exited",
            Error::Timeout { .. } => "timeout",
            Error::Unsupported(_) => "unsupported",
            Error::Protocol(_) => "protocol",
            Error::Agent { .. } => "agent_error",
            Error::AuthRequired { .. } => "auth_required",
            Error::VersionUnsupported { .. } => "version_unsupported",
            Error::InvalidArgument(_) | Error::InvalidField { .. } => "invalid_argument",
            Error::InvalidConfig { .. } => "invalid_config",
            Error::SpawnFailed { .. } => "spawn_failed",
            Error::Io(_) => "io",
            Error::Closed(_) => "closed",
            Error::Cancelled => "cancelled",
            Error::Busy(_) => "busy",
            Error::NotFound(_) => "not_found",
            Error::AlreadyResolved(_) => "already_resolved",
            Error::EventsStalled { .. } => "events_stalled",
            Error::Rejected { error, .. } => error.kind(),
        }
    }

    /// Structured details for faces (`AcpError.data`): JSON-RPC data, exit status, ...
    pub fn data(&self) -> Value {
        match self {
            Error::AgentExited(info) => serde_json::to_value(info).unwrap_or(Value::Null),
            Error::Agent { code, data, .. } => {
                serde_json::json!({ "code": code, "data": data })
            }
            Error::AuthRequired { data, .. } => serde_json::json!({ "code": -32000, "data": data }),
            Error::VersionUnsupported { agent, host } => {
                serde_json::json!({ "agentVersion": agent, "hostVersion": host })
            }
            Error::Timeout { what, after_ms } => {
                serde_json::json!({ "what": what, "afterMs": after_ms })
            }
            Error::EventsStalled { waited_ms } => serde_json::json!({ "waitedMs": waited_ms }),
            Error::InvalidConfig { path, .. } | Error::InvalidField { path, .. } => {
                serde_json::json!({ "path": path })
            }
            Error::Rejected { error, state } => {
                let mut data = match error.data() {
                    Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                data.insert("receipt".into(), Error::receipt_of(error, *state).to_json());
                Value::Object(data)
            }
            _ => Value::Null,
        }
    }

    /// The `rejected` receipt `error` stands for (its kind, its message, `state`).
    fn receipt_of(error: &Error, state: crate::receipt::RequestState) -> crate::Receipt {
        crate::Receipt::rejected(state, error.kind(), error.to_string())
    }

    /// An answer was not used because of `self`; the request is now in `state`.
    pub fn rejecting(self, state: crate::receipt::RequestState) -> Error {
        match self {
            Error::Rejected { error, .. } => Error::Rejected { error, state },
            error => Error::Rejected {
                error: Box::new(error),
                state,
            },
        }
    }

    /// The `rejected` receipt of an error returned by a respond call (`None`: not a rejection).
    pub fn receipt(&self) -> Option<crate::Receipt> {
        match self {
            Error::Rejected { error, state } => Some(Error::receipt_of(error, *state)),
            _ => None,
        }
    }

    /// The error as one JSON object `{kind, message, data}` (used in events and by the faces).
    pub fn to_json(&self) -> Value {
        serde_json::json!({ "kind": self.kind(), "message": self.to_string(), "data": self.data() })
    }

    /// Build from a JSON-RPC error object sent by the agent.
    pub(crate) fn from_rpc(code: i64, message: String, data: Option<Value>) -> Error {
        match code {
            -32000 => Error::AuthRequired { message, data },
            -32800 => Error::Cancelled,
            _ => Error::Agent {
                code,
                message,
                data,
            },
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}

/// Result alias for the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;
