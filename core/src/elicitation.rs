//! Elicitation (`elicitation/create`, `elicitation/complete`): the agent asks the user for
//! structured input (a form) or for consent to open a URL. Routed to the embedder like a
//! permission request and just as fail-closed: only modes the embedder says it can render are
//! advertised; anything but a valid answer — a timeout, `session/cancel`, the agent withdrawing
//! the request, the agent or the host going away, a decider that fails, content that does not
//! match the requested schema — answers `cancel`. Exactly one `elicitation_resolved` event per
//! request. docs/PERMISSIONS.md ("Elicitation").

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ElicitationPropertySchema, ElicitationSchema, MultiSelectItems,
};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::permission::Settled;

/// The elicitation modes the embedder can render. Only these are advertised in `initialize`
/// (`clientCapabilities.elicitation.form` / `.url`); a request for another mode is refused
/// with `-32602` and nobody is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ElicitationModes {
    pub form: bool,
    pub url: bool,
}

impl ElicitationModes {
    pub const FORM_AND_URL: ElicitationModes = ElicitationModes {
        form: true,
        url: true,
    };

    pub fn any(self) -> bool {
        self.form || self.url
    }

    /// `clientCapabilities.elicitation`, or `None` when nothing is supported (then the field is
    /// omitted: an empty `{}` would advertise no mode either).
    pub(crate) fn capability(self) -> Option<Value> {
        if !self.any() {
            return None;
        }
        let mut caps = Map::new();
        if self.form {
            caps.insert("form".into(), Value::Object(Map::new()));
        }
        if self.url {
            caps.insert("url".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(caps))
    }
}

/// What the agent asks for.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationKind {
    /// Render a form from `requestedSchema` (a flat object of primitive and enum properties).
    /// Never collects secrets (the spec forbids it); the host does not check that.
    Form {
        #[serde(rename = "requestedSchema")]
        requested_schema: Value,
    },
    /// Show the full URL and ask for consent to open it, outside anything the model can inspect.
    /// `accept` only means the user consented; the agent may later send `elicitation/complete`.
    Url {
        #[serde(rename = "elicitationId")]
        elicitation_id: String,
        url: String,
    },
}

/// An elicitation request as the embedder sees it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRequest {
    /// Host-wide id; answer with `Host::respond_elicitation(id, ...)`.
    pub request_id: u64,
    /// The host's id of the agent asking (show which agent asks: a spec requirement).
    pub agent: u64,
    /// Session scope: the session (and tool call) it belongs to.
    pub session_id: Option<String>,
    pub tool_call_id: Option<String>,
    /// Request scope: the id of the host's request in flight it belongs to (e.g. `authenticate`).
    pub scope_request_id: Option<Value>,
    /// False when the request scope names none of the host's requests in flight (the agent
    /// scoped it to a request of its own choosing): still asked, under the same fail-closed
    /// rules, but the UI cannot tie it to a call of the host's. True for session scope.
    pub scope_known: bool,
    /// The turn in flight when it arrived, if any.
    pub turn: Option<u64>,
    pub message: String,
    #[serde(flatten)]
    pub kind: ElicitationKind,
    /// Becomes settled when the request is resolved by anyone (timeout, cancel, agent exit,
    /// another answer): a UI can close its form. The decider's future is also dropped then.
    #[serde(skip)]
    pub settled: Settled,
}

/// The embedder's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// Form mode: the values, checked against the requested schema (no unknown field, every
    /// required one, types, enums, bounds). URL mode: consent to open the URL (content ignored).
    Accept(Option<Map<String, Value>>),
    Decline,
    Cancel,
}

impl ElicitationAnswer {
    /// Parse `{"action": "accept"|"decline"|"cancel", "content"?: {...}}` (the ACP response
    /// shape; what the faces pass in).
    pub fn from_json(v: &Value) -> Result<ElicitationAnswer, String> {
        let content = match v.get("content") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(_) => return Err("`content` must be an object".into()),
        };
        match v.get("action").and_then(Value::as_str) {
            Some("accept") => Ok(ElicitationAnswer::Accept(content)),
            Some("decline") => Ok(ElicitationAnswer::Decline),
            Some("cancel") => Ok(ElicitationAnswer::Cancel),
            Some(other) => Err(format!(
                "unknown action `{other}` (accept, decline, cancel)"
            )),
            None => Err("an answer needs `action`".into()),
        }
    }

    pub(crate) fn action(&self) -> &'static str {
        match self {
            ElicitationAnswer::Accept(_) => "accept",
            ElicitationAnswer::Decline => "decline",
            ElicitationAnswer::Cancel => "cancel",
        }
    }

    /// The response sent to the agent.
    pub(crate) fn to_response(&self) -> Value {
        match self {
            ElicitationAnswer::Accept(Some(content)) => {
                serde_json::json!({ "action": "accept", "content": content })
            }
            other => serde_json::json!({ "action": other.action() }),
        }
    }
}

/// Boxed future returned by an elicitation decider.
pub type ElicitationFuture =
    Pin<Box<dyn Future<Output = Result<ElicitationAnswer, String>> + Send>>;

/// Asks the embedder (usually a human at a form). An `Err`, a panic, an invalid answer or the
/// elicitation timeout all answer `cancel`.
pub trait ElicitationDecider: Send + Sync + 'static {
    fn decide(&self, request: ElicitationRequest) -> ElicitationFuture;
}

impl<F, Fut> ElicitationDecider for F
where
    F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ElicitationAnswer, String>> + Send + 'static,
{
    fn decide(&self, request: ElicitationRequest) -> ElicitationFuture {
        Box::pin((self)(request))
    }
}

/// Who answers elicitation requests.
#[derive(Clone, Default)]
pub enum ElicitationHandler {
    /// Not supported: nothing is advertised, and a request is answered `-32601`.
    #[default]
    Unsupported,
    /// Ask this decider; `Host::respond_elicitation` may still answer first.
    Decider {
        modes: ElicitationModes,
        decider: Arc<dyn ElicitationDecider>,
    },
    /// Wait for `Host::respond_elicitation` (driven by `elicitation_requested` events).
    Manual { modes: ElicitationModes },
}

impl ElicitationHandler {
    /// The modes advertised and served.
    pub fn modes(&self) -> ElicitationModes {
        match self {
            ElicitationHandler::Unsupported => ElicitationModes::default(),
            ElicitationHandler::Decider { modes, .. } | ElicitationHandler::Manual { modes } => {
                *modes
            }
        }
    }
}

impl std::fmt::Debug for ElicitationHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElicitationHandler::Unsupported => f.write_str("Unsupported"),
            ElicitationHandler::Decider { modes, .. } => write!(f, "Decider({modes:?})"),
            ElicitationHandler::Manual { modes } => write!(f, "Manual({modes:?})"),
        }
    }
}

/// Check accepted form content against the requested schema; `Err` says what is wrong (the
/// request is then answered `cancel`, fail-closed). Unknown property types cannot be checked, so
/// a value for one is refused.
pub(crate) fn validate_content(
    schema: &ElicitationSchema,
    content: Option<&Map<String, Value>>,
) -> Result<(), String> {
    let empty = Map::new();
    let content = content.unwrap_or(&empty);
    for name in schema.required.iter().flatten() {
        if !content.contains_key(name) {
            return Err(format!("required field `{name}` is missing"));
        }
    }
    for (name, value) in content {
        let Some(prop) = schema.properties.get(name) else {
            return Err(format!("`{name}` is not a field of the requested form"));
        };
        check_property(name, prop, value)?;
    }
    Ok(())
}

fn check_property(name: &str, prop: &ElicitationPropertySchema, v: &Value) -> Result<(), String> {
    let bad = |what: &str| Err(format!("`{name}`: {what}"));
    match prop {
        ElicitationPropertySchema::String(s) => {
            let Some(text) = v.as_str() else {
                return bad("expected a string");
            };
            let chars = text.chars().count() as u64;
            if s.min_length.is_some_and(|m| chars < u64::from(m)) {
                return bad("shorter than minLength");
            }
            if s.max_length.is_some_and(|m| chars > u64::from(m)) {
                return bad("longer than maxLength");
            }
            let mut allowed: Vec<&str> = Vec::new();
            if let Some(values) = &s.enum_values {
                allowed.extend(values.iter().map(String::as_str));
            }
            if let Some(options) = &s.one_of {
                allowed.extend(options.iter().map(|o| o.value.as_str()));
            }
            if (s.enum_values.is_some() || s.one_of.is_some()) && !allowed.contains(&text) {
                return bad("not one of the allowed values");
            }
            Ok(())
        }
        ElicitationPropertySchema::Number(n) => {
            let Some(x) = v.as_f64().filter(|x| x.is_finite()) else {
                return bad("expected a number");
            };
            if n.minimum.is_some_and(|m| x < m) || n.maximum.is_some_and(|m| x > m) {
                return bad("out of range");
            }
            Ok(())
        }
        ElicitationPropertySchema::Integer(n) => {
            let Some(x) = v.as_i64() else {
                return bad("expected an integer");
            };
            if n.minimum.is_some_and(|m| x < m) || n.maximum.is_some_and(|m| x > m) {
                return bad("out of range");
            }
            Ok(())
        }
        ElicitationPropertySchema::Boolean(_) => match v {
            Value::Bool(_) => Ok(()),
            _ => bad("expected a boolean"),
        },
        ElicitationPropertySchema::Array(a) => {
            let Some(items) = v.as_array() else {
                return bad("expected an array of strings");
            };
            let allowed: Option<Vec<&str>> = match &a.items {
                MultiSelectItems::String(s) => Some(s.values.iter().map(String::as_str).collect()),
                MultiSelectItems::Titled(t) => {
                    Some(t.options.iter().map(|o| o.value.as_str()).collect())
                }
                _ => None,
            };
            let Some(allowed) = allowed else {
                return bad("items of an unknown kind cannot be checked");
            };
            for item in items {
                match item.as_str() {
                    Some(s) if allowed.contains(&s) => {}
                    _ => return bad("an item is not one of the allowed values"),
                }
            }
            let n = items.len() as u64;
            if a.min_items.is_some_and(|m| n < m) || a.max_items.is_some_and(|m| n > m) {
                return bad("wrong number of items");
            }
            Ok(())
        }
        _ => bad("a property of an unknown type cannot be checked"),
    }
}

/// Parse a `requestedSchema` (the actor gets it parsed with the whole request; the tests here
/// build schemas with it).
#[cfg(test)]
fn parse_schema(v: &Value) -> Result<ElicitationSchema, String> {
    serde_json::from_value::<ElicitationSchema>(v.clone())
        .map_err(|e| format!("invalid requestedSchema: {e}"))
}

/// Names of an accepted answer's fields (reported in `elicitation_resolved`; the values are the
/// embedder's own and are not copied into the event stream).
pub(crate) fn field_names(answer: &ElicitationAnswer) -> Option<Vec<String>> {
    match answer {
        ElicitationAnswer::Accept(Some(m)) => {
            let mut names: Vec<String> = m.keys().cloned().collect();
            names.sort_unstable();
            Some(names)
        }
        _ => None,
    }
}

/// For tests and faces: a map from a JSON object.
pub fn content(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> ElicitationSchema {
        parse_schema(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 5},
                "color": {"type": "string", "enum": ["red", "green"]},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ok": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2}
            },
            "required": ["name"]
        }))
        .unwrap_or_else(|e| unreachable!("{e}"))
    }

    fn check(v: Value) -> Result<(), String> {
        validate_content(&schema(), content(v).as_ref())
    }

    #[test]
    fn valid_content_passes() {
        assert_eq!(
            check(json!({"name": "ann", "color": "red", "age": 3, "ok": true, "tags": ["a"]})),
            Ok(())
        );
    }

    #[test]
    fn invalid_content_is_refused() {
        assert!(check(json!({})).unwrap_err().contains("required"));
        assert!(check(json!({"name": "ann", "extra": 1})).is_err());
        assert!(check(json!({"name": ""})).is_err());
        assert!(check(json!({"name": "toolong"})).is_err());
        assert!(check(json!({"name": "a", "color": "blue"})).is_err());
        assert!(check(json!({"name": "a", "age": 1.5})).is_err());
        assert!(check(json!({"name": "a", "age": 200})).is_err());
        assert!(check(json!({"name": "a", "ok": "yes"})).is_err());
        assert!(check(json!({"name": "a", "tags": ["c"]})).is_err());
        assert!(check(json!({"name": "a", "tags": ["a", "b", "a"]})).is_err());
    }

    #[test]
    fn answers_parse_and_serialise_in_the_acp_shape() {
        let a = ElicitationAnswer::from_json(&json!({"action": "accept", "content": {"x": 1}}));
        assert_eq!(a, Ok(ElicitationAnswer::Accept(content(json!({"x": 1})))));
        assert_eq!(
            ElicitationAnswer::Decline.to_response(),
            json!({"action": "decline"})
        );
        assert!(ElicitationAnswer::from_json(&json!({"action": "maybe"})).is_err());
        assert!(ElicitationAnswer::from_json(&json!({"content": {}})).is_err());
        assert!(
            ElicitationAnswer::from_json(&json!({"action": "accept", "content": [1]})).is_err()
        );
    }
}
