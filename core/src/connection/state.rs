//! What handles can read without asking the actor: negotiated agent info, session views, exit.

use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;
use serde_json::Value;

use super::SessionMap;
use crate::error::{Error, ExitInfo, Result};
use crate::session::SessionView;

/// The protocol version this host speaks by default.
pub const PROTOCOL_VERSION: u16 = 1;

/// The draft protocol version offered with the `protocol/v2` opt-in
/// ([`crate::protocol::PROTOCOL_V2`]).
pub const PROTOCOL_VERSION_2: u16 = 2;

/// What the agent told us in `initialize`, parsed tolerantly (every field may be missing).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// The version this connection speaks: 1, or 2 when v2 was offered and the agent chose it.
    pub protocol_version: u16,
    /// `agentInfo` (`{name, version, title?}`; v2: `info`) or null.
    pub agent_info: Value,
    /// `agentCapabilities` (v2: `capabilities`; an object, `{}` when omitted).
    pub capabilities: Value,
    /// `authMethods` (an array; `[]` when omitted).
    pub auth_methods: Vec<Value>,
    /// What the method table's gates read, in v1's shape: v1's `agentCapabilities` as sent; v2's
    /// `capabilities` mapped onto v1's names ([`v2_gates`]).
    #[serde(skip)]
    pub(crate) gates: Value,
    /// The agent takes steering into a running turn ([`steering_supported`]).
    #[serde(skip)]
    pub steering: bool,
}

/// Whether an `initialize` result advertises steering (text added to a running turn).
///
/// The one place that decides it. ACP v1 has no steering, and the pinned schema's v2 draft
/// (agent-client-protocol-schema 1.20.0, `src/v2`) has no steering type either; upstream is
/// standardising `session/inject` for v2. What agents ship today is the vendor extension
/// `_session/steering` (claude-agent-acp, codex-acp, pi-acp), advertised as
/// `_meta.steering.supported: true` on the initialize response; we also accept it under
/// `agentCapabilities._meta`. A v2 `session.steering` capability is added here.
pub fn steering_supported(result: &Value) -> bool {
    let flag = |root: Option<&Value>| {
        root.and_then(|r| r.pointer("/_meta/steering/supported")) == Some(&Value::Bool(true))
    };
    flag(Some(result)) || flag(result.get("agentCapabilities"))
}

/// v2's `capabilities` in v1's shape, for the method table's gates. `session: {}` is v2's
/// baseline (`session/new`, `list`, `resume`, `close`, `prompt`, `cancel`): `list`, `resume` and
/// `close` are supported with it; `session.{delete, fork, additionalDirectories, archive, status,
/// options, title}` are v1's `sessionCapabilities` markers of the same names; `session.prompt`'s
/// markers (`image`, `audio`, `embeddedContext`) are v1's `promptCapabilities` flags; `auth` is
/// kept; there is no `loadSession`. Without `session` nothing session-related is supported.
pub(crate) fn v2_gates(capabilities: &Value) -> Value {
    let marked = |v: Option<&Value>| v.is_some_and(|v| !v.is_null() && v.as_bool() != Some(false));
    let mut gates = serde_json::json!({});
    if let Some(auth) = capabilities.get("auth") {
        gates["auth"] = auth.clone();
    }
    let Some(session) = capabilities.get("session").filter(|s| marked(Some(s))) else {
        return gates;
    };
    let mut sessions = serde_json::json!({ "list": {}, "resume": {}, "close": {} });
    for name in [
        "delete",
        "fork",
        "additionalDirectories",
        "archive",
        "status",
        "options",
        "title",
    ] {
        if marked(session.get(name)) {
            sessions[name] = serde_json::json!({});
        }
    }
    let mut prompt = serde_json::json!({});
    for name in ["image", "audio", "embeddedContext"] {
        if marked(session.get("prompt").and_then(|p| p.get(name))) {
            prompt[name] = Value::Bool(true);
        }
    }
    gates["sessionCapabilities"] = sessions;
    gates["promptCapabilities"] = prompt;
    gates
}

impl AgentInfo {
    /// `offered`: the version our `initialize` offered. The agent may answer it or anything
    /// lower that this host speaks (1, or 2 when 2 was offered); anything else is
    /// [`Error::VersionUnsupported`].
    pub(crate) fn from_initialize(result: &Value, offered: u16) -> Result<AgentInfo> {
        let version = result
            .get("protocolVersion")
            .cloned()
            .unwrap_or(Value::Null);
        let negotiated = match version.as_u64() {
            Some(1) => PROTOCOL_VERSION,
            Some(2) if offered >= PROTOCOL_VERSION_2 => PROTOCOL_VERSION_2,
            _ => {
                return Err(Error::VersionUnsupported {
                    agent: version,
                    host: offered,
                });
            }
        };
        // v2 renamed the fields (`info`, `capabilities`); v1's names are read as ever.
        let (caps_key, info_key) = if negotiated == PROTOCOL_VERSION_2 {
            ("capabilities", "info")
        } else {
            ("agentCapabilities", "agentInfo")
        };
        let capabilities = match result.get(caps_key) {
            Some(c @ Value::Object(_)) => c.clone(),
            _ => Value::Object(Default::default()),
        };
        let auth_methods = match result.get("authMethods") {
            Some(Value::Array(a)) => a.iter().filter(|m| m.is_object()).cloned().collect(),
            _ => Vec::new(),
        };
        let agent_info = match result.get(info_key) {
            Some(i @ Value::Object(_)) => i.clone(),
            _ => Value::Null,
        };
        let gates = if negotiated == PROTOCOL_VERSION_2 {
            v2_gates(&capabilities)
        } else {
            capabilities.clone()
        };
        Ok(AgentInfo {
            protocol_version: negotiated,
            agent_info,
            gates,
            capabilities,
            auth_methods,
            steering: steering_supported(result),
        })
    }

    /// The connection speaks the draft ACP v2.
    pub fn is_v2(&self) -> bool {
        self.protocol_version == PROTOCOL_VERSION_2
    }

    /// The agent takes `session/*` methods: always under v1; under v2 when it advertises
    /// `capabilities.session` (omitted or null: no sessions at all).
    pub fn supports_sessions(&self) -> bool {
        !self.is_v2()
            || self
                .capabilities
                .get("session")
                .is_some_and(|s| !s.is_null() && s.as_bool() != Some(false))
    }

    /// `agentCapabilities.loadSession` (v2 has no `session/load`).
    pub fn supports_load(&self) -> bool {
        self.gates
            .get("loadSession")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// A `sessionCapabilities` marker (`list`, `resume`, `close`, `delete`, `fork`,
    /// `additionalDirectories`): `{}` means supported, omitted or null means not.
    pub fn session_capability(&self, name: &str) -> bool {
        self.gates
            .get("sessionCapabilities")
            .and_then(|s| s.get(name))
            .is_some_and(|v| !v.is_null() && v.as_bool() != Some(false))
    }

    /// A `promptCapabilities` flag (`image`, `audio`, `embeddedContext`).
    pub fn prompt_capability(&self, name: &str) -> bool {
        self.gates
            .get("promptCapabilities")
            .and_then(|p| p.get(name))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The auth method with this id, if advertised.
    pub fn auth_method(&self, id: &str) -> Option<&Value> {
        self.auth_methods
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
    }

    /// Agent name from `agentInfo`, if any.
    pub fn name(&self) -> Option<&str> {
        self.agent_info.get("name").and_then(Value::as_str)
    }
}

/// State shared between an agent's actor and its handles.
#[derive(Debug, Default)]
pub(crate) struct AgentShared {
    /// Our outbound JSON-RPC ids (numbers, from 1).
    pub next_request: std::sync::atomic::AtomicU64,
    pub info: OnceLock<Arc<AgentInfo>>,
    pub sessions: Mutex<SessionMap>,
    pub exit: OnceLock<ExitInfo>,
    /// Woken once `exit` is set (`Agent::exited`).
    pub exited: tokio::sync::Notify,
    /// The agent process id (spawned agents only).
    pub pid: OnceLock<u32>,
    /// A supervisor acts on this process's end (set and cleared by the supervisor).
    pub supervised: std::sync::atomic::AtomicBool,
    /// The end was reported with `"restart": true` (the supervisor owes what follows).
    pub restart_announced: std::sync::atomic::AtomicBool,
}

impl AgentShared {
    pub fn session_view(&self, id: &str) -> Option<Arc<Mutex<SessionView>>> {
        self.sessions.lock().ok().and_then(|m| m.get(id).cloned())
    }
}
