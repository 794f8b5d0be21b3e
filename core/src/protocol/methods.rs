//! The one table of ACP v1 methods and notifications this host knows.
//!
//! Everything that depends on "which methods exist" derives from [`METHODS`]: local capability
//! gating of outbound calls ([`Method::allowed_by_agent`]), which inbound requests are served
//! ([`Method::allowed_by_client`]), docs/PROTOCOL.md (rendered by [`markdown_table`], checked for
//! drift in tests), each face's method list (`acph_methods_json`, `methods()` in Node and
//! Python), and a test that compares the table with the method names of the pinned
//! `agent-client-protocol-schema` crate, so a schema bump shows what is new.

use serde::Serialize;
use serde_json::Value;

/// Who sends the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The host (client) sends it; the agent handles it.
    ClientToAgent,
    /// The agent sends it; the host handles it.
    AgentToClient,
    /// Either side (`$/cancel_request`).
    Both,
}

/// Request (answered) or notification (not answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    Request,
    Notification,
}

/// Whether the method is part of stable ACP v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    Stable,
    /// Not part of stable v1. Those the embedder calls are behind an opt-in ([`OPT_IN_METHODS`],
    /// the same `unstable` list in every face's config).
    Unstable,
}

/// The capability that must be advertised before the method may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Always allowed.
    None,
    /// An `agentCapabilities` boolean at this dotted path (`loadSession`).
    AgentFlag(&'static str),
    /// An `agentCapabilities` marker object at this dotted path (`{}` = supported, omitted or
    /// `null` = not): `sessionCapabilities.list`, `auth.logout`, ...
    AgentMarker(&'static str),
    /// A `clientCapabilities` boolean at this dotted path (`fs.readTextFile`, `terminal`).
    ClientFlag(&'static str),
    /// One of these `clientCapabilities` marker objects (`elicitation.form`, `elicitation.url`).
    ClientMarkerAny(&'static [&'static str]),
}

impl Gate {
    /// As written in docs and method lists: `agentCapabilities.loadSession`, ...
    pub fn describe(&self) -> String {
        match self {
            Gate::None => String::new(),
            Gate::AgentFlag(p) | Gate::AgentMarker(p) => format!("agentCapabilities.{p}"),
            Gate::ClientFlag(p) => format!("clientCapabilities.{p}"),
            Gate::ClientMarkerAny(ps) => ps
                .iter()
                .map(|p| format!("clientCapabilities.{p}"))
                .collect::<Vec<_>>()
                .join(" or "),
        }
    }
}

/// How each face exposes a method (empty: not exposed yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Faces {
    pub rust: &'static str,
    pub c: &'static str,
    pub node: &'static str,
    pub python: &'static str,
    /// The uniffi face: Kotlin (JetBrains IDEs) and Swift (Xcode) share the generated names.
    pub kotlin: &'static str,
    pub swift: &'static str,
}

/// One ACP method or notification.
#[derive(Debug, Clone, Copy)]
pub struct Method {
    pub name: &'static str,
    pub direction: Direction,
    pub kind: MessageKind,
    pub stability: Stability,
    pub gate: Gate,
    /// The params type in the ACP schema.
    pub params: &'static str,
    /// The result type in the ACP schema (requests only).
    pub result: Option<&'static str>,
    /// Whether this host implements it (sends it, or serves/handles it).
    pub implemented: bool,
    /// What the host does with it (one line, for docs).
    pub host: &'static str,
    pub faces: Faces,
}

/// Faces of an agent-to-client request the embedder can take over (routed like permissions).
const fn served(how: &'static str) -> Faces {
    Faces {
        rust: how,
        c: how,
        node: how,
        python: how,
        kotlin: how,
        swift: how,
    }
}

use Direction::{AgentToClient, Both, ClientToAgent};
use MessageKind::{Notification, Request};
use Stability::{Stable, Unstable};

/// Every ACP v1 method and notification, in protocol order.
pub static METHODS: &[Method] = &[
    // ----- client → agent --------------------------------------------------------------------
    Method {
        name: "initialize",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::None,
        params: "InitializeRequest",
        result: Some("InitializeResponse"),
        implemented: true,
        host: "sent by spawn/connect; protocol version checked",
        faces: Faces {
            rust: "Host::spawn",
            c: "acph_host_spawn",
            node: "host.spawn",
            python: "host.spawn",
            kotlin: "host.spawn",
            swift: "host.spawn",
        },
    },
    Method {
        name: "authenticate",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::None,
        params: "AuthenticateRequest",
        result: Some("AuthenticateResponse"),
        implemented: true,
        host: "only advertised `authMethods` ids of `agent` methods are sent; terminal logins (`type: terminal`, legacy `_meta[\"terminal-auth\"]`) run through the embedder's terminal and relaunch the agent instead (`Agent::terminal_auth`)",
        faces: Faces {
            rust: "Agent::authenticate",
            c: "acph_agent_authenticate",
            node: "agent.authenticate",
            python: "agent.authenticate",
            kotlin: "agent.authenticate",
            swift: "agent.authenticate",
        },
    },
    Method {
        name: "logout",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::AgentMarker("auth.logout"),
        params: "LogoutRequest",
        result: Some("LogoutResponse"),
        implemented: true,
        host: "",
        faces: Faces {
            rust: "Agent::logout",
            c: "acph_agent_logout",
            node: "agent.logout",
            python: "agent.logout",
            kotlin: "agent.logout",
            swift: "agent.logout",
        },
    },
    Method {
        name: "session/new",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::None,
        params: "NewSessionRequest",
        result: Some("NewSessionResponse"),
        implemented: true,
        host: "updates before the response are delivered after `session_opened`",
        faces: Faces {
            rust: "Agent::new_session",
            c: "acph_agent_new_session",
            node: "agent.newSession",
            python: "agent.new_session",
            kotlin: "agent.newSession",
            swift: "agent.newSession",
        },
    },
    Method {
        name: "session/load",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::AgentFlag("loadSession"),
        params: "LoadSessionRequest",
        result: Some("LoadSessionResponse"),
        implemented: true,
        host: "replayed updates are tagged `replay`",
        faces: Faces {
            rust: "Agent::load_session",
            c: "acph_agent_load_session",
            node: "agent.loadSession",
            python: "agent.load_session",
            kotlin: "agent.loadSession",
            swift: "agent.loadSession",
        },
    },
    Method {
        name: "session/list",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::AgentMarker("sessionCapabilities.list"),
        params: "ListSessionsRequest",
        result: Some("ListSessionsResponse"),
        implemented: true,
        host: "one page per call (`cursor`)",
        faces: Faces {
            rust: "Agent::list_sessions",
            c: "acph_agent_list_sessions",
            node: "agent.listSessions",
            python: "agent.list_sessions",
            kotlin: "agent.listSessions",
            swift: "agent.listSessions",
        },
    },
    Method {
        name: "session/delete",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::AgentMarker("sessionCapabilities.delete"),
        params: "DeleteSessionRequest",
        result: Some("DeleteSessionResponse"),
        implemented: true,
        host: "",
        faces: Faces {
            rust: "Agent::delete_session",
            c: "acph_agent_delete_session",
            node: "agent.deleteSession",
            python: "agent.delete_session",
            kotlin: "agent.deleteSession",
            swift: "agent.deleteSession",
        },
    },
    Method {
        name: "session/resume",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::AgentMarker("sessionCapabilities.resume"),
        params: "ResumeSessionRequest",
        result: Some("ResumeSessionResponse"),
        implemented: true,
        host: "no replay",
        faces: Faces {
            rust: "Agent::resume_session",
            c: "acph_agent_resume_session",
            node: "agent.resumeSession",
            python: "agent.resume_session",
            kotlin: "agent.resumeSession",
            swift: "agent.resumeSession",
        },
    },
    Method {
        name: "session/close",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::AgentMarker("sessionCapabilities.close"),
        params: "CloseSessionRequest",
        result: Some("CloseSessionResponse"),
        implemented: true,
        host: "pending permissions cancelled, terminals killed, grants forgotten",
        faces: Faces {
            rust: "Session::close",
            c: "acph_session_close",
            node: "session.close",
            python: "session.close",
            kotlin: "session.closeSession",
            swift: "session.closeSession",
        },
    },
    Method {
        name: "session/fork",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        gate: Gate::AgentMarker("sessionCapabilities.fork"),
        params: "ForkSessionRequest",
        result: Some("ForkSessionResponse"),
        implemented: true,
        host: "opt-in: `unstable: [\"session/fork\"]` in the host's config (every face)",
        faces: Faces {
            rust: "Agent::fork_session",
            c: "acph_agent_fork_session",
            node: "agent.forkSession",
            python: "agent.fork_session",
            kotlin: "agent.forkSession",
            swift: "agent.forkSession",
        },
    },
    Method {
        name: "_session/steering",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        // Advertised in `_meta` (not a capability field): `steering_supported` decides.
        gate: Gate::None,
        params: "(vendor extension: `{sessionId, prompt, _meta.steering.idleBehavior}`)",
        result: None,
        implemented: true,
        host: "opt-in: `unstable: [\"_session/steering\"]`; a steer goes into the running turn when the agent advertises `_meta.steering.supported` (on v2: as a `session/prompt` insertion), else waits as the next prompt (docs/STEERING.md)",
        faces: Faces {
            rust: "Session::steer",
            c: "acph_session_steer",
            node: "session.steer",
            python: "session.steer",
            kotlin: "session.steer",
            swift: "session.steer",
        },
    },
    Method {
        name: "session/status",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        gate: Gate::AgentMarker("sessionCapabilities.status"),
        params: "SessionStatusRequest",
        result: Some("SessionStatusResponse"),
        implemented: true,
        host: "opt-in; `{status, reported}`: an unrecognised status is `saved` (the spec); no side effects",
        faces: Faces {
            rust: "Agent::session_status",
            c: "acph_agent_session_status",
            node: "agent.sessionStatus",
            python: "agent.session_status",
            kotlin: "agent.sessionStatus",
            swift: "agent.sessionStatus",
        },
    },
    Method {
        name: "session/set_title",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        gate: Gate::AgentMarker("sessionCapabilities.title"),
        params: "SetSessionTitleRequest",
        result: Some("SetSessionTitleResponse"),
        implemented: true,
        host: "opt-in; returns the title the agent stored, which becomes the open session's title",
        faces: Faces {
            rust: "Agent::set_session_title",
            c: "acph_agent_set_session_title",
            node: "agent.setSessionTitle",
            python: "agent.set_session_title",
            kotlin: "agent.setSessionTitle",
            swift: "agent.setSessionTitle",
        },
    },
    Method {
        name: "session/archive",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        gate: Gate::AgentMarker("sessionCapabilities.archive"),
        params: "ArchiveSessionRequest",
        result: Some("ArchiveSessionResponse"),
        implemented: true,
        host: "opt-in; a session open on this host is closed (`session_closed`, reason `archived`)",
        faces: Faces {
            rust: "Agent::archive_session",
            c: "acph_agent_archive_session",
            node: "agent.archiveSession",
            python: "agent.archive_session",
            kotlin: "agent.archiveSession",
            swift: "agent.archiveSession",
        },
    },
    Method {
        name: "session/unarchive",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        gate: Gate::AgentMarker("sessionCapabilities.archive"),
        params: "UnarchiveSessionRequest",
        result: Some("UnarchiveSessionResponse"),
        implemented: true,
        host: "opt-in; never loads or resumes",
        faces: Faces {
            rust: "Agent::unarchive_session",
            c: "acph_agent_unarchive_session",
            node: "agent.unarchiveSession",
            python: "agent.unarchive_session",
            kotlin: "agent.unarchiveSession",
            swift: "agent.unarchiveSession",
        },
    },
    Method {
        name: "session/options",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        gate: Gate::AgentMarker("sessionCapabilities.options"),
        params: "SessionOptionsRequest",
        result: Some("SessionOptionsResponse"),
        implemented: true,
        host: "opt-in; `{modes, configOptions}` before a session exists; with a session id needs `loadSession` or `sessionCapabilities.resume`",
        faces: Faces {
            rust: "Agent::session_options",
            c: "acph_agent_session_options",
            node: "agent.sessionOptions",
            python: "agent.session_options",
            kotlin: "agent.sessionOptions",
            swift: "agent.sessionOptions",
        },
    },
    Method {
        name: "session/set_mode",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::None,
        params: "SetSessionModeRequest",
        result: Some("SetSessionModeResponse"),
        implemented: true,
        host: "only a mode the agent returned",
        faces: Faces {
            rust: "Session::set_mode",
            c: "acph_session_set_mode",
            node: "session.setMode",
            python: "session.set_mode",
            kotlin: "session.setMode",
            swift: "session.setMode",
        },
    },
    Method {
        name: "session/set_config_option",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::None,
        params: "SetSessionConfigOptionRequest",
        result: Some("SetSessionConfigOptionResponse"),
        implemented: true,
        host: "only an option and value the agent returned",
        faces: Faces {
            rust: "Session::set_config_option",
            c: "acph_session_set_config_option",
            node: "session.setConfigOption",
            python: "session.set_config_option",
            kotlin: "session.setConfigOption",
            swift: "session.setConfigOption",
        },
    },
    Method {
        name: "session/set_model",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        gate: Gate::None,
        params: "SetSessionModelRequest",
        result: Some("SetSessionModelResponse"),
        implemented: true,
        host: "legacy: used by `set_model` only for agents that return `models` and no `model` config option",
        faces: Faces {
            rust: "Session::set_model",
            c: "acph_session_set_model",
            node: "session.setModel",
            python: "session.set_model",
            kotlin: "session.setModel",
            swift: "session.setModel",
        },
    },
    Method {
        name: "session/prompt",
        direction: ClientToAgent,
        kind: Request,
        stability: Stable,
        gate: Gate::None,
        params: "PromptRequest",
        result: Some("PromptResponse"),
        implemented: true,
        host: "content blocks gated on `promptCapabilities`; an aborted turn settles within `cancel_grace`",
        faces: Faces {
            rust: "Session::prompt",
            c: "acph_session_prompt",
            node: "session.prompt",
            python: "session.prompt",
            kotlin: "session.prompt",
            swift: "session.prompt",
        },
    },
    Method {
        name: "tool_call/cancel",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        // ACP v2 (the draft): per tool call, while its latest update advertises
        // `capabilities.cancel`; no agentCapabilities gate.
        gate: Gate::None,
        params: "CancelToolCallRequest (v2)",
        result: Some("CancelToolCallResponse (v2)"),
        implemented: true,
        host: "ACP v2 only (`unstable: [\"protocol/v2\"]`), while the tool call's latest update advertises `capabilities.cancel`; the answer is the acceptance, the final `tool_call_update` (a `session_update` event) comes after it",
        faces: Faces {
            rust: "Session::cancel_tool_call",
            c: "acph_session_cancel_tool_call",
            node: "session.cancelToolCall",
            python: "session.cancel_tool_call",
            kotlin: "session.cancelToolCall",
            swift: "session.cancelToolCall",
        },
    },
    Method {
        name: "terminal/cancel",
        direction: ClientToAgent,
        kind: Request,
        stability: Unstable,
        gate: Gate::None,
        params: "CancelTerminalRequest (v2)",
        result: Some("CancelTerminalResponse (v2)"),
        implemented: true,
        host: "ACP v2 only, while the agent's terminal's latest `terminal_update` advertises `capabilities.cancel`; the answer is the acceptance, the `terminal_update` with `exitStatus` comes after it",
        faces: Faces {
            rust: "Session::cancel_terminal",
            c: "acph_session_cancel_terminal",
            node: "session.cancelTerminal",
            python: "session.cancel_terminal",
            kotlin: "session.cancelTerminal",
            swift: "session.cancelTerminal",
        },
    },
    Method {
        name: "session/cancel",
        direction: ClientToAgent,
        kind: Notification,
        stability: Stable,
        gate: Gate::None,
        params: "CancelNotification",
        result: None,
        implemented: true,
        host: "pending permission requests of the session answered `cancelled` at once",
        faces: Faces {
            rust: "Session::cancel",
            c: "acph_session_cancel",
            node: "session.cancel",
            python: "session.cancel",
            kotlin: "session.cancel",
            swift: "session.cancel",
        },
    },
    // ----- agent → client --------------------------------------------------------------------
    Method {
        name: "session/update",
        direction: AgentToClient,
        kind: Notification,
        stability: Stable,
        gate: Gate::None,
        params: "SessionNotification",
        result: None,
        implemented: true,
        host: "`session_update` events in arrival order; merged into the session state",
        faces: served("session_update event"),
    },
    Method {
        name: "session/request_permission",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::None,
        params: "RequestPermissionRequest",
        result: Some("RequestPermissionResponse"),
        implemented: true,
        host: "policy, then session grants, then the embedder's decider; fail-closed",
        faces: Faces {
            rust: "PermissionHandler",
            c: "permission_requested event + acph_permission_respond",
            node: "onPermission",
            python: "on_permission",
            kotlin: "PermissionHandler",
            swift: "PermissionHandler",
        },
    },
    Method {
        name: "fs/read_text_file",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::ClientFlag("fs.readTextFile"),
        params: "ReadTextFileRequest",
        result: Some("ReadTextFileResponse"),
        implemented: true,
        host: "sandboxed to the session's roots (or the embedder's fs handler)",
        faces: Faces {
            rust: "FsService",
            c: "acph_host_set_service_handler",
            node: "fs hooks",
            python: "fs handler",
            kotlin: "",
            swift: "",
        },
    },
    Method {
        name: "fs/write_text_file",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::ClientFlag("fs.writeTextFile"),
        params: "WriteTextFileRequest",
        result: Some("WriteTextFileResponse"),
        implemented: true,
        host: "sandboxed, atomic (or the embedder's fs handler)",
        faces: Faces {
            rust: "FsService",
            c: "acph_host_set_service_handler",
            node: "fs hooks",
            python: "fs handler",
            kotlin: "",
            swift: "",
        },
    },
    Method {
        name: "terminal/create",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::ClientFlag("terminal"),
        params: "CreateTerminalRequest",
        result: Some("CreateTerminalResponse"),
        implemented: true,
        host: "own process group, policy on command, args and env",
        faces: Faces {
            rust: "TerminalService",
            c: "acph_host_set_service_handler",
            node: "terminal hooks",
            python: "terminal handler",
            kotlin: "",
            swift: "",
        },
    },
    Method {
        name: "terminal/output",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::ClientFlag("terminal"),
        params: "TerminalOutputRequest",
        result: Some("TerminalOutputResponse"),
        implemented: true,
        host: "bounded ring buffer, truncated on a UTF-8 boundary",
        faces: Faces {
            rust: "TerminalService",
            c: "acph_host_set_service_handler",
            node: "terminal hooks",
            python: "terminal handler",
            kotlin: "",
            swift: "",
        },
    },
    Method {
        name: "terminal/wait_for_exit",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::ClientFlag("terminal"),
        params: "WaitForTerminalExitRequest",
        result: Some("WaitForTerminalExitResponse"),
        implemented: true,
        host: "",
        faces: Faces {
            rust: "TerminalService",
            c: "acph_host_set_service_handler",
            node: "terminal hooks",
            python: "terminal handler",
            kotlin: "",
            swift: "",
        },
    },
    Method {
        name: "terminal/kill",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::ClientFlag("terminal"),
        params: "KillTerminalRequest",
        result: Some("KillTerminalResponse"),
        implemented: true,
        host: "kills the process group",
        faces: Faces {
            rust: "TerminalService",
            c: "acph_host_set_service_handler",
            node: "terminal hooks",
            python: "terminal handler",
            kotlin: "",
            swift: "",
        },
    },
    Method {
        name: "terminal/release",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::ClientFlag("terminal"),
        params: "ReleaseTerminalRequest",
        result: Some("ReleaseTerminalResponse"),
        implemented: true,
        host: "kills and forgets the terminal",
        faces: Faces {
            rust: "TerminalService",
            c: "acph_host_set_service_handler",
            node: "terminal hooks",
            python: "terminal handler",
            kotlin: "",
            swift: "",
        },
    },
    Method {
        name: "elicitation/create",
        direction: AgentToClient,
        kind: Request,
        stability: Stable,
        gate: Gate::ClientMarkerAny(&["elicitation.form", "elicitation.url"]),
        params: "CreateElicitationRequest",
        result: Some("CreateElicitationResponse"),
        implemented: true,
        host: "only advertised modes; the embedder's decider; content checked against the schema; fail-closed (`cancel`)",
        faces: Faces {
            rust: "ElicitationHandler",
            c: "elicitation_requested event + acph_elicitation_respond",
            node: "onElicitation",
            python: "on_elicitation",
            kotlin: "ElicitationHandler",
            swift: "ElicitationHandler",
        },
    },
    Method {
        name: "elicitation/complete",
        direction: AgentToClient,
        kind: Notification,
        stability: Stable,
        gate: Gate::ClientMarkerAny(&["elicitation.url"]),
        params: "CompleteElicitationNotification",
        result: None,
        implemented: true,
        host: "`elicitation_completed` event for a URL elicitation of this agent; unknown ids ignored",
        faces: served("elicitation_completed event"),
    },
    // ----- both ------------------------------------------------------------------------------
    Method {
        name: "$/cancel_request",
        direction: Both,
        kind: Notification,
        stability: Stable,
        gate: Gate::None,
        params: "CancelRequestNotification",
        result: None,
        implemented: true,
        host: "sent for abandoned calls; an agent's withdrawn fs/terminal request never takes effect",
        faces: served("dropping / aborting a call"),
    },
];

/// The unstable methods an embedder may opt into (`HostConfig::unstable`, `unstable` in every
/// face's config). Without the opt-in their call fails locally with `unsupported`.
/// [`PROTOCOL_V2`] is not a method but the same kind of switch: the draft ACP v2 beside v1.
pub const OPT_IN_METHODS: &[&str] = &[
    "session/fork",
    "session/status",
    "session/set_title",
    "session/archive",
    "session/unarchive",
    "session/options",
    PROTOCOL_V2,
    "_session/steering",
];

/// The `unstable` entry that makes `initialize` offer ACP v2 (the draft in the pinned schema
/// crate); an agent answering 1 gets v1, exactly as without it.
pub const PROTOCOL_V2: &str = "protocol/v2";

/// Check an embedder's `unstable` list: every name must be one of [`OPT_IN_METHODS`].
pub fn check_opt_in(names: &[String]) -> Result<(), String> {
    match names.iter().find(|n| !OPT_IN_METHODS.contains(&n.as_str())) {
        None => Ok(()),
        Some(bad) => Err(format!(
            "unknown unstable method \"{bad}\"; this host can opt into: {}",
            OPT_IN_METHODS.join(", ")
        )),
    }
}

/// The table entry for `name`.
pub fn method(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

/// A value at a dotted path of a JSON object (`sessionCapabilities.list`).
fn at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(root, |v, key| v.get(key))
}

/// A marker capability: `{}` (any non-null, non-false value) means supported.
fn marker(root: &Value, path: &str) -> bool {
    at(root, path).is_some_and(|v| !v.is_null() && v.as_bool() != Some(false))
}

impl Method {
    /// Whether the agent's `agentCapabilities` allow the host to send this method. Methods that
    /// are gated on the client's side (or not at all) are always allowed here.
    pub fn allowed_by_agent(&self, agent_capabilities: &Value) -> bool {
        match self.gate {
            Gate::AgentFlag(p) => at(agent_capabilities, p)
                .and_then(Value::as_bool)
                .unwrap_or(false),
            Gate::AgentMarker(p) => marker(agent_capabilities, p),
            _ => true,
        }
    }

    /// Whether the host's own advertised `clientCapabilities` allow the agent to call this.
    pub fn allowed_by_client(&self, client_capabilities: &Value) -> bool {
        match self.gate {
            Gate::ClientFlag(p) => at(client_capabilities, p)
                .and_then(Value::as_bool)
                .unwrap_or(false),
            Gate::ClientMarkerAny(ps) => ps.iter().any(|p| marker(client_capabilities, p)),
            _ => true,
        }
    }

    /// The entry as JSON (each face's method list).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "direction": self.direction,
            "kind": self.kind,
            "stability": self.stability,
            "gate": if matches!(self.gate, Gate::None) { Value::Null } else { Value::String(self.gate.describe()) },
            "params": self.params,
            "result": self.result,
            "implemented": self.implemented,
            "faces": self.faces,
        })
    }
}

/// The whole table as a JSON array.
pub fn methods_json() -> Value {
    Value::Array(METHODS.iter().map(Method::to_json).collect())
}

/// The table as docs/PROTOCOL.md shows it (between its `methods` markers).
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| method | direction | kind | stability | gate | host | Rust | C | Node | Python | Kotlin | Swift |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let code = |s: &str| {
        if s.is_empty() {
            "—".to_owned()
        } else {
            format!("`{s}`")
        }
    };
    for m in METHODS {
        let direction = match m.direction {
            ClientToAgent => "client → agent",
            AgentToClient => "agent → client",
            Both => "both",
        };
        let kind = match m.kind {
            Request => "request",
            Notification => "notification",
        };
        let stability = match m.stability {
            Stable => "stable",
            Unstable => "unstable",
        };
        let gate = match m.gate {
            Gate::None => "—".to_owned(),
            g => code(&g.describe()),
        };
        let host = if m.implemented {
            m.host.to_owned()
        } else {
            format!("**not implemented**: {}", m.host)
        };
        out.push_str(&format!(
            "| `{}` | {direction} | {kind} | {stability} | {gate} | {host} | {} | {} | {} | {} | {} | {} |\n",
            m.name,
            code(m.faces.rust),
            code(m.faces.c),
            code(m.faces.node),
            code(m.faces.python),
            code(m.faces.kotlin),
            code(m.faces.swift),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }

    #[test]
    fn gates_follow_the_marker_rule() {
        let m = method("session/list").unwrap_or_else(|| unreachable!());
        assert!(m.allowed_by_agent(&serde_json::json!({"sessionCapabilities": {"list": {}}})));
        assert!(!m.allowed_by_agent(&serde_json::json!({"sessionCapabilities": {"list": null}})));
        assert!(!m.allowed_by_agent(&serde_json::json!({})));
        let load = method("session/load").unwrap_or_else(|| unreachable!());
        assert!(load.allowed_by_agent(&serde_json::json!({"loadSession": true})));
        assert!(!load.allowed_by_agent(&serde_json::json!({"loadSession": {}})));
        let e = method("elicitation/create").unwrap_or_else(|| unreachable!());
        assert!(e.allowed_by_client(&serde_json::json!({"elicitation": {"url": {}}})));
        assert!(!e.allowed_by_client(&serde_json::json!({"elicitation": {}})));
        let r = method("fs/read_text_file").unwrap_or_else(|| unreachable!());
        assert!(r.allowed_by_client(&serde_json::json!({"fs": {"readTextFile": true}})));
        assert!(!r.allowed_by_client(&serde_json::json!({"fs": {"writeTextFile": true}})));
    }
}
