//! Permission decisions. The flow is fixed and fail-closed (see `docs/PERMISSIONS.md`):
//! anything but a valid answer naming one of the offered options denies.
//!
//! The rule engine (hard-deny / allow rules, session grants, presets) plugs in ahead of the host's
//! decider; until a rule or the host allows, the answer is "deny".

mod commands;
mod env;
pub(crate) mod params;
pub(crate) mod paths;
pub mod policy;
pub(crate) mod tool_call;
mod wrappers;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::wire::LazyJson;

/// One option the agent offered.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always` (or an unknown future kind).
    pub kind: String,
}

/// A permission request as the host's decider sees it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    /// Host-wide id; answer with `Host::respond_permission(id, ...)`.
    pub request_id: u64,
    /// The host's id of the agent asking.
    pub agent: u64,
    pub session_id: String,
    /// The turn in flight when the request arrived, if any.
    pub turn: Option<u64>,
    /// The request's `toolCall` (a ToolCallUpdate), merged over the session's known tool call.
    /// Kept as the agent's text until read: it dereferences to its `Value` tree.
    pub tool_call: LazyJson,
    pub options: Vec<PermissionOption>,
    /// Becomes settled when the request is resolved by anyone (timeout, cancel, agent exit, another
    /// answer): a UI can dismiss its prompt. The decider's future is also dropped then.
    #[serde(skip)]
    pub settled: Settled,
}

/// Tells a decider that its request no longer needs an answer.
#[derive(Debug, Clone)]
pub struct Settled(pub(crate) tokio::sync::watch::Receiver<bool>);

impl Settled {
    pub(crate) fn new() -> (tokio::sync::watch::Sender<bool>, Settled) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (tx, Settled(rx))
    }

    /// Whether the request was already resolved.
    pub fn is_settled(&self) -> bool {
        *self.0.borrow()
    }

    /// Wait until the request is resolved (returns at once if it already is).
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|s| *s).await;
    }
}

impl PermissionRequest {
    /// The first option of the given kind.
    pub fn option_of_kind(&self, kind: &str) -> Option<&PermissionOption> {
        self.options.iter().find(|o| o.kind == kind)
    }
}

/// The host's answer: the chosen option id, or `None` to deny.
pub type PermissionAnswer = Option<String>;

/// Boxed future returned by a decider.
pub type DecisionFuture = Pin<Box<dyn Future<Output = Result<PermissionAnswer, String>> + Send>>;

/// Asks the embedder. May take minutes (a human); nothing else waits on it. An `Err`, a panic, an
/// answer that is not one of the offered option ids, or the permission timeout all deny.
///
/// `decide` and the first poll of its future run on the agent's connection task, so that an
/// answer known at once goes back without a hop: do not block there (await the human, a
/// channel, `spawn_blocking`); a decider that blocks stalls that agent's connection meanwhile.
pub trait PermissionDecider: Send + Sync + 'static {
    fn decide(&self, request: PermissionRequest) -> DecisionFuture;
}

impl<F, Fut> PermissionDecider for F
where
    F: Fn(PermissionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<PermissionAnswer, String>> + Send + 'static,
{
    fn decide(&self, request: PermissionRequest) -> DecisionFuture {
        Box::pin((self)(request))
    }
}

/// How the host answers permission requests that no rule decided.
#[derive(Clone, Default)]
pub enum PermissionHandler {
    /// Deny everything (fail-closed default for headless use).
    #[default]
    DenyAll,
    /// Ask this decider. `Host::respond_permission` may still answer first.
    Decider(Arc<dyn PermissionDecider>),
    /// Wait for `Host::respond_permission` (driven by `permission_requested` events).
    Manual,
}

impl std::fmt::Debug for PermissionHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PermissionHandler::DenyAll => f.write_str("DenyAll"),
            PermissionHandler::Decider(_) => f.write_str("Decider(..)"),
            PermissionHandler::Manual => f.write_str("Manual"),
        }
    }
}

/// Who resolved a permission request (the `decidedBy` field of `permission_resolved`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// A local rule or preset (including the default deny-all).
    Rule,
    /// An in-memory session grant.
    Grant,
    /// The host's decider or `respond_permission`.
    Host,
    /// The permission timeout elapsed.
    Timeout,
    /// `session/cancel` (or the session closing) answered it with `cancelled`.
    Cancelled,
    /// The host shut down, or the agent went away.
    Disconnected,
    /// The host answered with something that is not an offered option, or its decider failed.
    InvalidAnswer,
    /// The agent withdrew the request with `$/cancel_request`.
    AgentCancelled,
}

/// The final outcome sent to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Selected(String),
    Cancelled,
}

/// `{"outcome":"selected","optionId":…}` or `{"outcome":"cancelled"}` (the spec's
/// `RequestPermissionOutcome`), written straight out: no tree on the answer's path.
impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        match self {
            Outcome::Selected(id) => {
                map.serialize_entry("outcome", "selected")?;
                map.serialize_entry("optionId", id)?;
            }
            Outcome::Cancelled => map.serialize_entry("outcome", "cancelled")?,
        }
        map.end()
    }
}

/// The deny answer for a request: its `reject_once` option if offered, else `cancelled`.
/// After `session/cancel` the spec requires `cancelled`.
pub(crate) fn deny_outcome(options: &[PermissionOption], after_cancel: bool) -> Outcome {
    if after_cancel {
        return Outcome::Cancelled;
    }
    options
        .iter()
        .find(|o| o.kind == "reject_once")
        .map(|o| Outcome::Selected(o.option_id.clone()))
        .unwrap_or(Outcome::Cancelled)
}

/// The answer that allows: the `allow_once` option, else `allow_always`; `None` if the agent offered
/// no way to allow (then the request is denied).
pub(crate) fn allow_outcome(options: &[PermissionOption]) -> Option<Outcome> {
    ["allow_once", "allow_always"].iter().find_map(|kind| {
        options
            .iter()
            .find(|o| o.kind == *kind)
            .map(|o| Outcome::Selected(o.option_id.clone()))
    })
}

/// Parse the `options` array tolerantly: entries without an `optionId` are skipped.
pub(crate) fn parse_options(v: Option<&Value>) -> Vec<PermissionOption> {
    let Some(Value::Array(items)) = v else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|o| {
            let option_id = o.get("optionId")?.as_str()?.to_owned();
            Some(PermissionOption {
                option_id,
                name: o
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                kind: o
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Vec<PermissionOption> {
        parse_options(Some(&serde_json::json!([
            {"optionId":"a","name":"Allow","kind":"allow_once"},
            {"optionId":"r","name":"Reject","kind":"reject_once"},
            {"name":"broken"}
        ])))
    }

    #[test]
    fn deny_prefers_reject_once_and_cancel_forces_cancelled() {
        assert_eq!(opts().len(), 2);
        assert_eq!(deny_outcome(&opts(), false), Outcome::Selected("r".into()));
        assert_eq!(deny_outcome(&opts(), true), Outcome::Cancelled);
        assert_eq!(deny_outcome(&opts()[..1], false), Outcome::Cancelled);
    }
}
