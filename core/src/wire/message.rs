//! JSON-RPC 2.0 message model: route on a borrowed envelope, keep payloads as raw JSON.
//!
//! Each inbound line is parsed once into [`Incoming`]; payloads stay `RawValue` so that
//! `session/update` contents are forwarded to events without being re-serialised.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

/// A JSON-RPC id as the peer wrote it (number or string), kept verbatim so we echo it exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawId(pub Box<str>);

impl RawId {
    /// Our own outbound ids are numbers.
    pub fn as_u64(&self) -> Option<u64> {
        self.0.parse::<u64>().ok()
    }
    pub fn json(&self) -> &str {
        &self.0
    }
    /// The id as a JSON value (for events and `$/cancel_request` matching).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
pub struct RpcError {
    pub code: i64,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// One decoded inbound message.
#[derive(Debug)]
pub enum Incoming {
    /// `session/update` notification, pre-split for fast routing.
    Update {
        session_id: Arc<str>,
        update_kind: Arc<str>,
        update: Box<RawValue>,
    },
    Request {
        id: RawId,
        method: Box<str>,
        params: Option<Box<RawValue>>,
    },
    Notification {
        method: Box<str>,
        params: Option<Box<RawValue>>,
    },
    Response {
        id: RawId,
        result: Result<Box<RawValue>, RpcError>,
    },
    /// A response that carries neither `result` nor `error`: it answers request `id`, but with
    /// nothing usable (the request fails; it is not a success with `null`).
    MalformedResponse { id: RawId, reason: String },
    /// Valid JSON that is not a usable JSON-RPC message.
    Invalid { reason: String },
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    /// `Some("null")` for `"result": null` (a valid result), `None` when the member is absent.
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

/// A member that is present, even as `null`, deserialises to `Some`.
fn present<'a, D: serde::Deserializer<'a>>(d: D) -> Result<Option<&'a RawValue>, D::Error> {
    <&'a RawValue as Deserialize<'a>>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct UpdateParams<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    update: &'a RawValue,
}

#[derive(Deserialize)]
struct UpdateHead<'a> {
    #[serde(rename = "sessionUpdate", borrow)]
    session_update: std::borrow::Cow<'a, str>,
}

/// Why a line could not be decoded as JSON at all.
#[derive(Debug)]
pub struct NotJson(pub String);

/// Reuses the `Arc<str>`s of recently seen session ids and update kinds: an update stream names
/// the same few strings over and over, so the hot path allocates only the payload.
#[derive(Debug, Default)]
pub struct Interner {
    recent: Vec<Arc<str>>,
}

impl Interner {
    const SIZE: usize = 32;

    pub fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(pos) = self.recent.iter().position(|r| &**r == s) {
            let found = self.recent[pos].clone();
            if pos > 0 {
                self.recent.swap(pos, pos - 1); // keep hot strings near the front
            }
            return found;
        }
        let new: Arc<str> = Arc::from(s);
        if self.recent.len() >= Self::SIZE {
            self.recent.pop();
        }
        self.recent.push(new.clone());
        new
    }
}

/// The `sessionUpdate` discriminator. Agents almost always write it first
/// (`{"sessionUpdate":"agent_message_chunk",...}`); read it straight from the bytes then, and parse
/// only when the layout is anything else.
fn update_kind<'a>(update: &'a RawValue) -> Result<std::borrow::Cow<'a, str>, String> {
    const PREFIX: &str = "{\"sessionUpdate\":\"";
    let text = update.get();
    if let Some(rest) = text.strip_prefix(PREFIX)
        && let Some(end) = rest.find('"')
        && !rest[..end].contains('\\')
    {
        return Ok(std::borrow::Cow::Borrowed(&rest[..end]));
    }
    from_object::<UpdateHead<'_>>(text)
        .map(|h| h.session_update)
        .map_err(|e| e.to_string())
}

/// Deserialize a struct from a JSON object only: serde's derived structs also accept the
/// positional array form (`[1,"m"]`), which is no JSON-RPC message, update or error object.
fn from_object<'a, T: Deserialize<'a>>(text: &'a str) -> serde_json::Result<T> {
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return Err(serde::de::Error::custom("expected a JSON object"));
    }
    serde_json::from_str(text)
}

/// Decode one line. `Err` means the line is not JSON (protocol noise).
pub fn decode(line: &str) -> Result<Incoming, NotJson> {
    decode_with(line, &mut Interner::default())
}

/// [`decode`] with a caller-kept [`Interner`].
pub fn decode_with(line: &str, interner: &mut Interner) -> Result<Incoming, NotJson> {
    let env: Envelope<'_> = match from_object(line) {
        Ok(env) => env,
        Err(e) => {
            // Distinguish "not JSON at all" from "JSON but not an object / wrong field types".
            return match serde_json::from_str::<serde::de::IgnoredAny>(line) {
                Ok(_) => Ok(Incoming::Invalid {
                    reason: format!("not a JSON-RPC message: {e}"),
                }),
                Err(_) => Err(NotJson(e.to_string())),
            };
        }
    };
    let id = match env.id {
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => {
            let text = raw.get();
            let first = text.as_bytes().first().copied().unwrap_or(b' ');
            if !(first == b'"' || first == b'-' || first.is_ascii_digit()) {
                return Ok(Incoming::Invalid {
                    reason: format!("invalid id {text}"),
                });
            }
            Some(RawId(text.into()))
        }
        None => None,
    };
    match (env.method, id) {
        (Some(method), None) => {
            if method == "session/update" {
                if let Some(params) = env.params
                    && let Ok(p) = from_object::<UpdateParams<'_>>(params.get())
                {
                    return Ok(match update_kind(p.update) {
                        Ok(kind) => Incoming::Update {
                            session_id: interner.intern(&p.session_id),
                            update_kind: interner.intern(&kind),
                            update: p.update.to_owned(),
                        },
                        Err(e) => Incoming::Invalid {
                            reason: format!("session/update without sessionUpdate: {e}"),
                        },
                    });
                }
                return Ok(Incoming::Invalid {
                    reason: "session/update params must be {sessionId, update}".into(),
                });
            }
            Ok(Incoming::Notification {
                method: method.into_owned().into_boxed_str(),
                params: env.params.map(RawValue::to_owned),
            })
        }
        (Some(method), Some(id)) => Ok(Incoming::Request {
            id,
            method: method.into_owned().into_boxed_str(),
            params: env.params.map(RawValue::to_owned),
        }),
        (None, Some(id)) => {
            if let Some(err) = env.error.filter(|e| e.get() != "null") {
                return Ok(match from_object::<RpcError>(err.get()) {
                    Ok(e) => Incoming::Response { id, result: Err(e) },
                    Err(e) => Incoming::Invalid {
                        reason: format!("malformed error object: {e}"),
                    },
                });
            }
            // `"result": null` is a result; a response with neither member answers nothing.
            match env.result {
                Some(r) => Ok(Incoming::Response {
                    id,
                    result: Ok(r.to_owned()),
                }),
                None => Ok(Incoming::MalformedResponse {
                    id,
                    reason: "response has neither `result` nor `error`".into(),
                }),
            }
        }
        (None, None) if env.result.is_some() || env.error.is_some() => {
            // A response with a null (or missing) id cannot answer anything we sent: report it
            // like any other response with an id we never used.
            let result = match env.error.filter(|e| e.get() != "null") {
                Some(err) => match from_object::<RpcError>(err.get()) {
                    Ok(e) => Err(e),
                    Err(e) => {
                        return Ok(Incoming::Invalid {
                            reason: format!("malformed error object: {e}"),
                        });
                    }
                },
                None => Ok(env.result.map(RawValue::to_owned).unwrap_or_else(null_raw)),
            };
            Ok(Incoming::Response {
                id: RawId("null".into()),
                result,
            })
        }
        (None, None) => Ok(Incoming::Invalid {
            reason: "neither a request, a notification nor a response".into(),
        }),
    }
}

fn null_raw() -> Box<RawValue> {
    crate::events::raw_json(&serde_json::Value::Null)
}

/// Compact single-line request.
pub fn request_line(id: u64, method: &str, params: &RawValue) -> String {
    let mut s = String::with_capacity(params.get().len() + method.len() + 48);
    s.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    s.push_str(&id.to_string());
    s.push_str(",\"method\":");
    push_str_json(&mut s, method);
    s.push_str(",\"params\":");
    s.push_str(params.get());
    s.push('}');
    s
}

/// Compact single-line notification.
pub fn notification_line(method: &str, params: &RawValue) -> String {
    let mut s = String::with_capacity(params.get().len() + method.len() + 40);
    s.push_str("{\"jsonrpc\":\"2.0\",\"method\":");
    push_str_json(&mut s, method);
    s.push_str(",\"params\":");
    s.push_str(params.get());
    s.push('}');
    s
}

/// Compact single-line success response, echoing the peer's id verbatim.
pub fn result_line(id: &RawId, result: &RawValue) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}}}",
        id.json(),
        result.get()
    )
}

/// Compact single-line error response.
pub fn error_line(id: &RawId, error: &RpcError) -> String {
    let err = serde_json::to_string(error)
        .unwrap_or_else(|_| "{\"code\":-32603,\"message\":\"internal error\"}".into());
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{}}}",
        id.json(),
        err
    )
}

fn push_str_json(out: &mut String, s: &str) {
    match serde_json::to_string(s) {
        Ok(q) => out.push_str(&q),
        Err(_) => out.push_str("\"\""),
    }
}

/// Standard codes used by the host.
pub mod codes {
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const REQUEST_CANCELLED: i64 = -32800;
    pub const AUTH_REQUIRED: i64 = -32000;
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_updates_without_reserialising() {
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#;
        match decode(line) {
            Ok(Incoming::Update {
                session_id,
                update_kind,
                update,
            }) => {
                assert_eq!(&*session_id, "s1");
                assert_eq!(&*update_kind, "agent_message_chunk");
                assert_eq!(
                    update.get(),
                    r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}"#
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn ids_may_be_strings_or_numbers() {
        let r = decode(
            r#"{"jsonrpc":"2.0","id":"perm-1","method":"session/request_permission","params":{}}"#,
        );
        assert!(matches!(r, Ok(Incoming::Request { ref id, .. }) if id.json() == "\"perm-1\""));
        let r = decode(r#"{"jsonrpc":"2.0","id":7,"result":null}"#);
        assert!(
            matches!(r, Ok(Incoming::Response { ref id, result: Ok(_) }) if id.as_u64() == Some(7))
        );
    }

    #[test]
    fn errors_and_noise_are_classified() {
        assert!(decode("hello world").is_err());
        assert!(matches!(decode("[1,2]"), Ok(Incoming::Invalid { .. })));
        assert!(matches!(
            decode(r#"{"id":{"x":1},"result":{}}"#),
            Ok(Incoming::Invalid { .. })
        ));
        let r = decode(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"auth"}}"#);
        assert!(matches!(
            r,
            Ok(Incoming::Response {
                result: Err(RpcError { code: -32000, .. }),
                ..
            })
        ));
    }

    #[test]
    fn written_lines_are_single_line_json() {
        let params = crate::events::raw_json(&serde_json::json!({"text": "a\nb"}));
        let line = request_line(1, "session/prompt", &params);
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(v["params"]["text"], "a\nb");
    }
}
