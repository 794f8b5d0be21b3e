//! Client-side services the agent calls (`fs/*`, `terminal/*`).
//!
//! Built in: [`fs`] (confined to the session's roots with cap-std) and [`terminal`] (commands in
//! their own process group). Either can be routed to the embedder instead ([`FsService::Embedder`],
//! [`TerminalService::Embedder`]) — an IDE serves unsaved buffers — and the sandbox roots and the
//! policy's hard-deny rules apply either way, before the embedder is asked. [`ClientCapabilities`]
//! is computed from what is configured, so the handshake never over-promises.

pub mod fs;
pub mod terminal;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

tokio::task_local! {
    static SERVING_AGENT: u64;
}

/// The host's id of the agent whose request an embedder's handler is serving, when called from
/// inside a handler (an [`FsHandler`], [`TerminalHandler`], [`ExtHandler`] or terminal-login
/// runner) or the future it returned; `None` elsewhere. For handlers whose arguments do not carry
/// the agent (terminal and extension requests, terminal logins).
pub fn serving_agent() -> Option<u64> {
    SERVING_AGENT.try_with(|a| *a).ok()
}

/// Run `fut` with [`serving_agent`] answering `agent`.
pub(crate) async fn serving<F: Future>(agent: u64, fut: F) -> F::Output {
    SERVING_AGENT.scope(agent, fut).await
}

/// What the host serves, advertised in `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    pub read_text_file: bool,
    pub write_text_file: bool,
    pub terminal: bool,
    /// The elicitation modes the embedder can render (none: `elicitation` is not advertised).
    pub elicitation: crate::elicitation::ElicitationModes,
    /// The embedder runs terminal logins (`auth.terminal`, and the legacy
    /// `_meta["terminal-auth"]` flag some agents look for instead).
    pub terminal_auth: bool,
}

impl ClientCapabilities {
    /// `clientCapabilities` of `initialize`.
    pub fn to_json(self) -> Value {
        let mut caps = serde_json::json!({
            "fs": { "readTextFile": self.read_text_file, "writeTextFile": self.write_text_file },
            "terminal": self.terminal,
        });
        if let Some(e) = self.elicitation.capability() {
            caps["elicitation"] = e;
        }
        if self.terminal_auth {
            caps["auth"] = serde_json::json!({ "terminal": true });
            caps["_meta"] = serde_json::json!({ "terminal-auth": true });
        }
        caps
    }

    /// `capabilities` of a v2 `initialize`: v2 has no client `fs/*` or `terminal/*` methods, so
    /// only what v2 defines is offered (elicitation, terminal logins).
    pub fn to_json_v2(self) -> Value {
        let mut caps = serde_json::json!({});
        if let Some(e) = self.elicitation.capability() {
            caps["elicitation"] = e;
        }
        if self.terminal_auth {
            caps["auth"] = serde_json::json!({ "terminal": {} });
        }
        caps
    }

    /// Whether an agent-to-client request is served: an implemented method of the method table
    /// whose gate these capabilities open (anything else is answered -32601).
    pub(crate) fn serves(self, method: &str) -> bool {
        use crate::protocol::{Direction, Gate, MessageKind};
        let Some(m) = crate::protocol::method(method) else {
            return false;
        };
        if !m.implemented
            || m.direction != Direction::AgentToClient
            || m.kind != MessageKind::Request
        {
            return false;
        }
        match m.gate {
            Gate::ClientFlag("fs.readTextFile") => self.read_text_file,
            Gate::ClientFlag("fs.writeTextFile") => self.write_text_file,
            Gate::ClientFlag("terminal") => self.terminal,
            // Any other gate is not one of these services.
            _ => false,
        }
    }
}

/// A JSON-RPC error for the agent, from an embedder's service handler.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl ServiceError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ServiceError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// An answer for the agent within the message depth limit (`wire::MAX_JSON_DEPTH`): a result
/// that would make a deeper line becomes a `-32603` error (the agent is still answered, and the
/// event reporting the call says why); error `data` that would is left out.
pub(crate) fn within_depth(result: Result<Value, ServiceError>) -> Result<Value, ServiceError> {
    use crate::wire::depth::check_fits;
    match result {
        // `{"result": R}`: R is at level 2; `{"error": {"data": D}}`: D at level 3.
        Ok(v) => match check_fits(&v, 2, "the handler's result") {
            Ok(()) => Ok(v),
            Err(e) => Err(ServiceError::new(
                crate::wire::codes::INTERNAL_ERROR,
                e.to_string(),
            )),
        },
        Err(mut e)
            if e.data
                .as_ref()
                .is_some_and(|d| check_fits(d, 3, "").is_err()) =>
        {
            e.data = None;
            Err(e)
        }
        other => other,
    }
}

/// Boxed future returned by embedder service handlers.
pub type ServiceFuture<T> = Pin<Box<dyn Future<Output = Result<T, ServiceError>> + Send>>;

/// `fs/read_text_file` as handed to an embedder (path already checked against roots and rules).
#[derive(Debug, Clone)]
pub struct FsRead {
    /// The host's id of the agent asking.
    pub agent: u64,
    pub session_id: String,
    pub path: String,
    pub line: Option<u32>,
    pub limit: Option<u32>,
}

/// `fs/write_text_file` as handed to an embedder (path already checked against roots and rules).
#[derive(Debug, Clone)]
pub struct FsWrite {
    /// The host's id of the agent asking.
    pub agent: u64,
    pub session_id: String,
    pub path: String,
    pub content: String,
}

/// An embedder serving `fs/*` (e.g. an editor with unsaved buffers).
pub trait FsHandler: Send + Sync + 'static {
    fn read_text_file(&self, request: FsRead) -> ServiceFuture<String>;
    fn write_text_file(&self, request: FsWrite) -> ServiceFuture<()>;
}

/// An embedder serving `terminal/*` (e.g. an IDE's own terminal panel). `terminal/create` reaches it
/// only after its command and cwd passed the roots and the policy; the other methods are passed on
/// as they come (`params` is the request's params object; the result is sent back verbatim).
pub trait TerminalHandler: Send + Sync + 'static {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value>;
}

/// An embedder serving the agent's `_`-prefixed extension requests (ACP extensibility: e.g.
/// `_zed.dev/workspace/buffers`). `params` is the request's params (`null` when absent); the
/// result is sent back verbatim, a [`ServiceError`] as the JSON-RPC error. Without one, such
/// requests are answered -32601.
pub trait ExtHandler: Send + Sync + 'static {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value>;
}

impl<F, Fut> ExtHandler for F
where
    F: Fn(String, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ServiceError>> + Send + 'static,
{
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        Box::pin((self)(method.to_owned(), params))
    }
}

/// Who serves the agent's `_` extension requests.
#[derive(Clone, Default)]
pub enum ExtService {
    /// Nobody: answered -32601 (default).
    #[default]
    Unsupported,
    Embedder(Arc<dyn ExtHandler>),
}

impl ExtService {
    pub(crate) fn handler(&self) -> Option<Arc<dyn ExtHandler>> {
        match self {
            ExtService::Unsupported => None,
            ExtService::Embedder(h) => Some(h.clone()),
        }
    }
}

impl std::fmt::Debug for ExtService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtService::Unsupported => f.write_str("Unsupported"),
            ExtService::Embedder(_) => f.write_str("Embedder(..)"),
        }
    }
}

/// Who serves `fs/*`.
#[derive(Clone, Default)]
pub enum FsService {
    /// The sandboxed built-in service (default).
    #[default]
    Builtin,
    Embedder(Arc<dyn FsHandler>),
    /// Not served: not advertised, answered `-32601`.
    Disabled,
}

/// Who serves `terminal/*`.
#[derive(Clone, Default)]
pub enum TerminalService {
    /// The built-in terminal manager (default).
    #[default]
    Builtin,
    Embedder(Arc<dyn TerminalHandler>),
    /// Not served: not advertised, answered `-32601`.
    Disabled,
}

impl std::fmt::Debug for FsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FsService::Builtin => "Builtin",
            FsService::Embedder(_) => "Embedder(..)",
            FsService::Disabled => "Disabled",
        })
    }
}

impl std::fmt::Debug for TerminalService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TerminalService::Builtin => "Builtin",
            TerminalService::Embedder(_) => "Embedder(..)",
            TerminalService::Disabled => "Disabled",
        })
    }
}
