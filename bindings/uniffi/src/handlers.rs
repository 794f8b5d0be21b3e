//! The embedder's permission and elicitation handlers, implemented in Kotlin or Swift (uniffi
//! foreign traits, async: a Kotlin `suspend fun`). Adapted to the core's deciders, which are
//! fail-closed: a handler that throws, never answers before the timeout, or names an option that
//! was not offered denies (elicitation: answers `cancel`). When the request is settled by someone
//! else (timeout, `session/cancel`, the agent withdrawing it) the handler's call is dropped, which
//! cancels its coroutine.

use std::sync::Arc;

use acp_host::{ElicitationAnswer, ElicitationKind};

/// One option the agent offered.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always` (or an unknown future kind).
    pub kind: String,
}

/// A permission request as the handler sees it.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct PermissionRequest {
    /// Host-wide id (`Host.respondPermission`).
    pub request_id: u64,
    /// The host's id of the agent asking.
    pub agent: u64,
    pub session_id: String,
    /// The turn in flight when it arrived.
    pub turn: Option<u64>,
    /// The request's `toolCall` merged over the session's known tool call, as JSON.
    pub tool_call: String,
    /// `toolCall.title`, when given.
    pub title: Option<String>,
    /// `toolCall.kind` (`read`, `edit`, `execute`, …), when given.
    pub tool_kind: Option<String>,
    pub options: Vec<PermissionOption>,
}

impl PermissionRequest {
    fn from_core(r: &acp_host::PermissionRequest) -> PermissionRequest {
        let field = |k: &str| {
            r.tool_call
                .get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        PermissionRequest {
            request_id: r.request_id,
            agent: r.agent,
            session_id: r.session_id.clone(),
            turn: r.turn,
            tool_call: r.tool_call.to_string(),
            title: field("title"),
            tool_kind: field("kind"),
            options: r
                .options
                .iter()
                .map(|o| PermissionOption {
                    option_id: o.option_id.clone(),
                    name: o.name.clone(),
                    kind: o.kind.clone(),
                })
                .collect(),
        }
    }
}

/// A handler's failure. Whatever it says, the request is denied (or the elicitation cancelled); a
/// `RegistryFetcher`'s failure fails the install (`AcpException.Io`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum HandlerError {
    #[error("{reason}")]
    Failed { reason: String },
}

impl From<uniffi::UnexpectedUniFFICallbackError> for HandlerError {
    /// An exception the handler did not declare: it still only denies.
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> HandlerError {
        HandlerError::Failed { reason: e.reason }
    }
}

/// Answers permission requests no policy rule decided. Return the chosen option's id, or null
/// to deny. Throwing, timing out or naming an option that was not offered denies.
#[uniffi::export(with_foreign)]
#[async_trait::async_trait]
pub trait PermissionHandler: Send + Sync {
    async fn decide(&self, request: PermissionRequest) -> Result<Option<String>, HandlerError>;
}

pub(crate) fn permission_decider(
    handler: Arc<dyn PermissionHandler>,
) -> Arc<dyn acp_host::PermissionDecider> {
    Arc::new(move |req: acp_host::PermissionRequest| {
        let handler = handler.clone();
        async move {
            handler
                .decide(PermissionRequest::from_core(&req))
                .await
                .map_err(|e| e.to_string())
        }
    })
}

/// An elicitation request (`elicitation/create`): a form to fill or a URL to consent to.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct ElicitationRequest {
    /// Host-wide id (`Host.respondElicitation`).
    pub request_id: u64,
    pub agent: u64,
    pub session_id: Option<String>,
    pub tool_call_id: Option<String>,
    /// Request scope: the id (as JSON: `7` or `"req-1"`) of the request it belongs to.
    pub scope_request_id: Option<String>,
    /// False when that request is none of the host's in flight (the agent chose the id): still
    /// asked, under the same rules. True for session scope.
    pub scope_known: bool,
    pub turn: Option<u64>,
    pub message: String,
    /// `form` or `url`.
    pub mode: String,
    /// Form mode: the requested schema, as JSON.
    pub requested_schema: Option<String>,
    /// URL mode: the URL to show in full, and the elicitation's id.
    pub url: Option<String>,
    pub elicitation_id: Option<String>,
}

impl ElicitationRequest {
    fn from_core(r: &acp_host::ElicitationRequest) -> ElicitationRequest {
        let (mode, requested_schema, url, elicitation_id) = match &r.kind {
            ElicitationKind::Form { requested_schema } => {
                ("form", Some(requested_schema.to_string()), None, None)
            }
            ElicitationKind::Url {
                elicitation_id,
                url,
            } => ("url", None, Some(url.clone()), Some(elicitation_id.clone())),
        };
        ElicitationRequest {
            request_id: r.request_id,
            agent: r.agent,
            session_id: r.session_id.clone(),
            tool_call_id: r.tool_call_id.clone(),
            scope_request_id: r.scope_request_id.as_ref().map(|v| v.to_string()),
            scope_known: r.scope_known,
            turn: r.turn,
            message: r.message.clone(),
            mode: mode.to_owned(),
            requested_schema,
            url,
            elicitation_id,
        }
    }
}

/// Answers elicitation requests. Return the ACP answer as JSON: `{"action": "accept",
/// "content": {...}}`, `{"action": "decline"}` or `{"action": "cancel"}`. Throwing, timing out,
/// or content that does not match the requested schema answers `cancel`.
#[uniffi::export(with_foreign)]
#[async_trait::async_trait]
pub trait ElicitationHandler: Send + Sync {
    async fn elicit(&self, request: ElicitationRequest) -> Result<String, HandlerError>;
}

pub(crate) fn elicitation_decider(
    handler: Arc<dyn ElicitationHandler>,
) -> Arc<dyn acp_host::ElicitationDecider> {
    Arc::new(move |req: acp_host::ElicitationRequest| {
        let handler = handler.clone();
        async move {
            let text = handler
                .elicit(ElicitationRequest::from_core(&req))
                .await
                .map_err(|e| e.to_string())?;
            parse_elicitation_answer(&text)
        }
    })
}

pub(crate) fn parse_elicitation_answer(text: &str) -> Result<ElicitationAnswer, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the answer is not JSON: {e}"))?;
    ElicitationAnswer::from_json(&v)
}

/// What an extension handler answers: a result, or a JSON-RPC error for the agent.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum ExtReply {
    /// The result, as JSON text.
    Result { json: String },
    /// A JSON-RPC error (`data` as JSON text).
    Error {
        code: i64,
        message: String,
        data: Option<String>,
    },
}

/// Serves the agent's extension requests (`_`-prefixed methods; `params` as JSON text). Without
/// one they are answered -32601; a handler that throws answers -32603.
#[uniffi::export(with_foreign)]
#[async_trait::async_trait]
pub trait ExtHandler: Send + Sync {
    async fn handle(&self, method: String, params: String) -> Result<ExtReply, HandlerError>;
}

pub(crate) fn ext_handler(handler: Arc<dyn ExtHandler>) -> Arc<dyn acp_host::services::ExtHandler> {
    use acp_host::services::ServiceError;
    Arc::new(move |method: String, params: serde_json::Value| {
        let handler = handler.clone();
        async move {
            match handler.handle(method, params.to_string()).await {
                Ok(ExtReply::Result { json }) => serde_json::from_str(&json).map_err(|e| {
                    ServiceError::new(-32603, format!("the handler's result is not JSON: {e}"))
                }),
                Ok(ExtReply::Error {
                    code,
                    message,
                    data,
                }) => Err(ServiceError {
                    code,
                    message,
                    data: data.and_then(|d| serde_json::from_str(&d).ok()),
                }),
                Err(e) => Err(ServiceError::new(-32603, e.to_string())),
            }
        }
    })
}

/// A terminal login to run for the user (an auth method of `type: "terminal"`): show `label`,
/// run `command` with `args` in a real terminal, environment overlaid with `env` minus
/// `unsetEnv`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct TerminalAuthCommand {
    pub method_id: String,
    pub label: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: std::collections::HashMap<String, String>,
    pub unset_env: Vec<String>,
    pub cwd: Option<String>,
}

/// Runs terminal logins in a terminal the user sees; returns the login's exit code (0: logged
/// in, and the agent is relaunched). With one the host advertises `auth.terminal`.
#[uniffi::export(with_foreign)]
#[async_trait::async_trait]
pub trait TerminalAuthRunner: Send + Sync {
    async fn run(&self, command: TerminalAuthCommand) -> Result<i32, HandlerError>;
}

pub(crate) fn terminal_auth(
    runner: Arc<dyn TerminalAuthRunner>,
) -> Arc<dyn acp_host::auth::TerminalAuthRunner> {
    Arc::new(move |c: acp_host::auth::TerminalAuthCommand| {
        let runner = runner.clone();
        async move {
            let mut env = std::collections::HashMap::new();
            let mut unset_env = Vec::new();
            for (k, v) in c.env {
                match v {
                    Some(v) => {
                        env.insert(k, v);
                    }
                    None => unset_env.push(k),
                }
            }
            runner
                .run(TerminalAuthCommand {
                    method_id: c.method_id,
                    label: c.label,
                    command: c.command,
                    args: c.args,
                    env,
                    unset_env,
                    cwd: c.cwd.map(|p| p.display().to_string()),
                })
                .await
                .map_err(|e| e.to_string())
        }
    })
}
