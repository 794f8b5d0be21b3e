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
        Ok(AgentInfo {
            protocol_version: negotiated,
            agent_info,
            capabilities,
            auth_methods,
            steering: steering_supported(result),
        })
    }

    /// The connection speaks the draft ACP v2.
    pub fn is_v2(&self) -> bool {
        self.protocol_version == PROTOCOL_VERSION_2
    }

    /// `agentCapabilities.loadSession`.
    pub fn supports_load(&self) -> bool {
        self.capabilities
            .get("loadSession")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// A `sessionCapabilities` marker (`list`, `resume`, `close`, `delete`, `fork`,
    /// `additionalDirectories`): `{}` means supported, omitted or null means not.
    pub fn session_capability(&self, name: &str) -> bool {
        self.capabilities
            .get("sessionCapabilities")
            .and_then(|s| s.get(name))
            .is_some_and(|v| !v.is_null() && v.as_bool() != Some(false))
    }

    /// A `promptCapabilities` flag (`image`, `audio`, `embeddedContext`).
    pub fn prompt_capability(&self, name: &str) -> bool {
        self.capabilities
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
