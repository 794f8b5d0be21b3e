//! JSON-RPC 2.0 message model: route on a borrowed envelope, keep payloads as raw JSON.
//!
//! Each inbound line is parsed once into [`Incoming`]; payloads stay `RawValue` so that
//! `session/update` contents are forwarded to events without being re-serialised.

use std::sync::Arc;

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
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
    /// A message that nests deeper than [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH): nothing of it
    /// is kept but what answers it. `id` and `method` as the envelope has them (`None` when
    /// absent, `null` or unusable); with an `id` and no `method` it answers request `id`.
    TooDeep {
        id: Option<RawId>,
        method: Option<Box<str>>,
    },
}

/// The members of a line the host looks at, read in one pass; everything else stays unparsed.
#[derive(Default)]
struct Envelope<'a> {
    /// `None` for an absent or `null` id.
    id: Option<&'a RawValue>,
    method: Option<Cow<'a, str>>,
    /// `None` for absent or `null` params.
    params: Option<&'a RawValue>,
    /// The params of a `session/update` notification whose `method` came before them (the
    /// layout every agent writes): read as their two parts in the same pass instead of kept raw
    /// and parsed again. `params` is then `None`.
    update: Option<UpdateParts<'a>>,
    /// `Some` even for `"result": null` (a valid result); `None` when the member is absent.
    result: Option<&'a RawValue>,
    /// `None` for an absent or `null` error.
    error: Option<&'a RawValue>,
}

/// `session/update` params read in the envelope's pass.
enum UpdateParts<'a> {
    Parts {
        session_id: &'a RawValue,
        update: &'a RawValue,
    },
    /// Not an object with both members: the message is invalid.
    BadShape,
}

/// Reads an [`Envelope`]; `split_updates: false` keeps every `params` raw (the second try for a
/// line whose `id` came after update params that were already split).
struct EnvelopeSeed {
    split_updates: bool,
}

/// A string member, borrowed from the line unless it holds escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A member name, matched without allocating.
enum Key {
    Id,
    Method,
    Params,
    Result,
    Error,
    SessionId,
    Update,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "id" => Key::Id,
                    "method" => Key::Method,
                    "params" => Key::Params,
                    "result" => Key::Result,
                    "error" => Key::Error,
                    "sessionId" => Key::SessionId,
                    "update" => Key::Update,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

fn non_null(raw: &RawValue) -> Option<&RawValue> {
    (raw.get() != "null").then_some(raw)
}

/// Set a member once: a repeated one makes the message invalid (as serde's derived structs do).
fn once<T, E: de::Error>(
    slot: &mut Option<T>,
    seen: &mut bool,
    name: &'static str,
    value: Option<T>,
) -> Result<(), E> {
    if std::mem::replace(seen, true) {
        return Err(E::duplicate_field(name));
    }
    *slot = value;
    Ok(())
}

impl<'de> DeserializeSeed<'de> for EnvelopeSeed {
    type Value = Envelope<'de>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Envelope<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EnvelopeSeed {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
        let mut env = Envelope::default();
        let mut seen = [false; 5];
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id => {
                    let v = map.next_value::<&RawValue>()?;
                    once(&mut env.id, &mut seen[0], "id", non_null(v))?;
                }
                Key::Method => {
                    let v = map.next_value::<Option<Str<'de>>>()?;
                    once(&mut env.method, &mut seen[1], "method", v.map(|s| s.0))?;
                }
                Key::Params => {
                    if std::mem::replace(&mut seen[2], true) {
                        return Err(de::Error::duplicate_field("params"));
                    }
                    if self.split_updates
                        && env.id.is_none()
                        && env.method.as_deref() == Some("session/update")
                    {
                        env.update = Some(map.next_value_seed(UpdateSeed)?);
                    } else {
                        env.params = non_null(map.next_value::<&RawValue>()?);
                    }
                }
                Key::Result => {
                    let v = map.next_value::<&RawValue>()?;
                    once(&mut env.result, &mut seen[3], "result", Some(v))?;
                }
                Key::Error => {
                    let v = map.next_value::<&RawValue>()?;
                    once(&mut env.error, &mut seen[4], "error", non_null(v))?;
                }
                Key::SessionId | Key::Update | Key::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(env)
    }
}

/// `session/update` params as their two parts; anything but an object with both is
/// [`UpdateParts::BadShape`] (consumed, so the envelope's pass goes on).
struct UpdateSeed;

impl<'de> DeserializeSeed<'de> for UpdateSeed {
    type Value = UpdateParts<'de>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<UpdateParts<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UpdateSeed {
    type Value = UpdateParts<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("session/update params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UpdateParts<'de>, A::Error> {
        let (mut session_id, mut update) = (None, None);
        let mut seen = [false; 2];
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::SessionId => {
                    let v = map.next_value::<&RawValue>()?;
                    once(&mut session_id, &mut seen[0], "sessionId", Some(v))?;
                }
                Key::Update => {
                    let v = map.next_value::<&RawValue>()?;
                    once(&mut update, &mut seen[1], "update", Some(v))?;
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(match (session_id, update) {
            (Some(session_id), Some(update)) => UpdateParts::Parts { session_id, update },
            _ => UpdateParts::BadShape,
        })
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<UpdateParts<'de>, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(UpdateParts::BadShape)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<UpdateParts<'de>, E> {
        Ok(UpdateParts::BadShape)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<UpdateParts<'de>, E> {
        Ok(UpdateParts::BadShape)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<UpdateParts<'de>, E> {
        Ok(UpdateParts::BadShape)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<UpdateParts<'de>, E> {
        Ok(UpdateParts::BadShape)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<UpdateParts<'de>, E> {
        Ok(UpdateParts::BadShape)
    }
    fn visit_unit<E: de::Error>(self) -> Result<UpdateParts<'de>, E> {
        Ok(UpdateParts::BadShape)
    }
}

/// A `sessionId` member as text: borrowed when it is a plain string, `None` when not a string.
fn session_id_text(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && !inner.contains(['\\', '"'])
    {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
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

fn envelope(line: &str, split_updates: bool) -> serde_json::Result<Envelope<'_>> {
    if !line
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return Err(serde::de::Error::custom("expected a JSON object"));
    }
    let mut de = serde_json::Deserializer::from_str(line);
    let env = EnvelopeSeed { split_updates }.deserialize(&mut de)?;
    de.end()?;
    Ok(env)
}

/// Decode one line. `Err` means the line is not JSON (protocol noise).
pub fn decode(line: &str) -> Result<Incoming, NotJson> {
    decode_with(line, &mut Interner::default())
}

/// [`decode`] with a caller-kept [`Interner`].
pub fn decode_with(line: &str, interner: &mut Interner) -> Result<Incoming, NotJson> {
    if super::depth::deeper_than(line.as_bytes(), super::MAX_JSON_DEPTH) {
        return too_deep(line);
    }
    let env = match envelope(line, true) {
        // Update params were split, then an id came after them: a request after all, whose
        // params are wanted raw. Rare (every agent writes the id first): read the line again.
        Ok(env) if env.update.is_some() && env.id.is_some() => envelope(line, false),
        other => other,
    };
    let env: Envelope<'_> = match env {
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
                let parts = match env.update {
                    Some(UpdateParts::Parts { session_id, update }) => {
                        session_id_text(session_id).map(|sid| (sid, update))
                    }
                    Some(UpdateParts::BadShape) => None,
                    // `params` before `method`: kept raw, parsed now.
                    None => env
                        .params
                        .and_then(|params| from_object::<UpdateParams<'_>>(params.get()).ok())
                        .map(|p| (p.session_id, p.update)),
                };
                let Some((session_id, update)) = parts else {
                    return Ok(Incoming::Invalid {
                        reason: "session/update params must be {sessionId, update}".into(),
                    });
                };
                return Ok(match update_kind(update) {
                    Ok(kind) => Incoming::Update {
                        session_id: interner.intern(&session_id),
                        update_kind: interner.intern(&kind),
                        update: update.to_owned(),
                    },
                    Err(e) => Incoming::Invalid {
                        reason: format!("session/update without sessionUpdate: {e}"),
                    },
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

/// A line nested deeper than the limit, whose size says nothing of whether it is JSON: its
/// envelope is read (payloads are skipped without recursing) for what answers it.
fn too_deep(line: &str) -> Result<Incoming, NotJson> {
    if serde_json::from_str::<serde::de::IgnoredAny>(line).is_err() {
        return Err(NotJson("not JSON".into()));
    }
    let Ok(env) = envelope(line, false) else {
        return Ok(Incoming::TooDeep {
            id: None,
            method: None,
        });
    };
    let id = env.id.map(RawValue::get).filter(|text| {
        let first = text.as_bytes().first().copied().unwrap_or(b' ');
        first == b'"' || first == b'-' || first.is_ascii_digit()
    });
    Ok(Incoming::TooDeep {
        id: id.map(|text| RawId(text.into())),
        method: env.method.map(|m| m.into_owned().into_boxed_str()),
    })
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

/// [`result_line`] for a result that is serialized into the line itself (no tree, no copy).
pub fn result_line_of<T: serde::Serialize + ?Sized>(id: &RawId, result: &T) -> String {
    const HEAD: &str = "{\"jsonrpc\":\"2.0\",\"id\":";
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(HEAD.as_bytes());
    out.extend_from_slice(id.json().as_bytes());
    out.extend_from_slice(b",\"result\":");
    let at = out.len();
    if serde_json::to_writer(&mut out, result).is_err() {
        // Not for the host's own result types; `{}` as `raw_json` does, never half a value.
        out.truncate(at);
        out.extend_from_slice(b"{}");
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
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

    /// The update's parts, whatever the member order: split in the envelope's pass when
    /// `method` comes first, parsed from raw params otherwise; the same message either way.
    #[test]
    fn updates_decode_the_same_in_any_member_order() {
        let update =
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\nb"}}"#;
        let lines = [
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#
            ),
            format!(
                r#"{{"params":{{"update":{update},"sessionId":"s1","x":[1,{{"y":2}}]}},"method":"session/update","jsonrpc":"2.0"}}"#
            ),
            format!(
                r#"{{"method":"session/update","id":null,"params":{{"sessionId":"\u0073\u0031","update":{update}}}}}"#
            ),
            format!(
                r#" {{ "method" : "session/update" , "params" : {{ "sessionId" : "s1" , "update" : {update} }} , "extra" : {{}} }} "#
            ),
        ];
        for line in &lines {
            match decode(line) {
                Ok(Incoming::Update {
                    session_id,
                    update_kind,
                    update: got,
                }) => {
                    assert_eq!(&*session_id, "s1", "{line}");
                    assert_eq!(&*update_kind, "agent_message_chunk", "{line}");
                    assert_eq!(got.get(), update, "{line}");
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_id_after_split_update_params_makes_it_a_request_with_its_params() {
        let line = r#"{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan"}},"id":4}"#;
        match decode(line) {
            Ok(Incoming::Request { id, method, params }) => {
                assert_eq!(id.json(), "4");
                assert_eq!(&*method, "session/update");
                assert_eq!(
                    params.map(|p| p.get().to_owned()).as_deref(),
                    Some(r#"{"sessionId":"s1","update":{"sessionUpdate":"plan"}}"#)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_update_params_are_invalid_messages() {
        for params in [
            "null",
            "[]",
            r#"["s1",{"sessionUpdate":"plan"}]"#,
            "\"s1\"",
            "7",
            "true",
            "{}",
            r#"{"sessionId":"s1"}"#,
            r#"{"update":{"sessionUpdate":"plan"}}"#,
            r#"{"sessionId":5,"update":{"sessionUpdate":"plan"}}"#,
            r#"{"sessionId":null,"update":{"sessionUpdate":"plan"}}"#,
            r#"{"sessionId":"s1","update":{"content":{}}}"#,
            r#"{"sessionId":"s1","update":null}"#,
            r#"{"sessionId":"s1","sessionId":"s2","update":{"sessionUpdate":"plan"}}"#,
        ] {
            for line in [
                format!(r#"{{"method":"session/update","params":{params}}}"#),
                format!(r#"{{"params":{params},"method":"session/update"}}"#),
            ] {
                assert!(
                    matches!(decode(&line), Ok(Incoming::Invalid { .. })),
                    "{line}: {:?}",
                    decode(&line)
                );
            }
        }
        // Repeated envelope members are invalid too; broken JSON is not JSON.
        for line in [
            r#"{"method":"session/update","method":"x","params":{}}"#,
            r#"{"id":1,"id":2,"result":{}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan"}},"params":{}}"#,
        ] {
            assert!(
                matches!(decode(line), Ok(Incoming::Invalid { .. })),
                "{line}"
            );
        }
        assert!(
            decode(r#"{"method":"session/update","params":{"sessionId":"s1","update":{"#).is_err()
        );
        assert!(decode(r#"{"method":"session/update","params":{}} x"#).is_err());
    }

    #[test]
    fn null_members_read_as_absent() {
        assert!(matches!(
            decode(r#"{"error":null}"#),
            Ok(Incoming::Invalid { .. })
        ));
        assert!(matches!(
            decode(r#"{"id":null,"result":null}"#),
            Ok(Incoming::Response { ref id, result: Ok(ref r) }) if id.json() == "null" && r.get() == "null"
        ));
        assert!(matches!(
            decode(r#"{"id":1,"method":"m","params":null}"#),
            Ok(Incoming::Request { params: None, .. })
        ));
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
