//! What a reader of a recording needs to know about the format (docs/RECORDING.md, "The file"):
//! the versions, and how an update's event that is not written out whole gets its envelope and
//! `data` back.
//!
//! Version 2 differs from version 1 in one thing: a `session_update` event whose payload is the
//! `params.update` of the agent's `session/update` line just recorded does not repeat it; the
//! event line has `"wire": N` (the index of that wire line among the file's wire lines, from 0)
//! instead of `data`. Its data is that line's `msg.params.update`, redacted as the wire line was
//! (the event's payload is the same bytes, and redaction treats `params.update` as it treats the
//! payload alone). Both readers (`acph replay`, `acph inspect`) resolve it with
//! [`referenced_data`], so a hostile reference is refused alike.
//!
//! Version 3 folds such an event into its wire line when it directly follows it at the line's
//! time (what a stream of updates is): the agent's line has `"event": {"turn": N}` (and
//! `"replay": true` for a `session/load`'s replay), and that is a `session_update` event of the
//! line's `params.sessionId` with its `params.update` as data, at the line's `t`
//! ([`folded_event`]). An update's event that does not directly follow its line is written as
//! in version 2.

use serde_json::{Map, Value};

/// The version the recorder writes (the header's `acpRecording`).
pub const FORMAT_VERSION: u32 = 3;
/// The oldest version the readers read (version 1: every event line carries its `data`).
pub const OLDEST_READ: u32 = 1;

/// Whether `acpRecording: v` is a version the readers read.
pub fn readable(v: u64) -> bool {
    (u64::from(OLDEST_READ)..=u64::from(FORMAT_VERSION)).contains(&v)
}

/// The only event kind whose line may refer to a wire line.
pub const REFERRING_KIND: &str = "session_update";

/// Where an event line's `data` is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EventData<'a> {
    /// In the line (every version 1 line; version 2 lines other than a referring update).
    Inline(&'a Value),
    /// In the wire line with this index (0-based, counting the file's wire lines).
    Wire(usize),
}

/// Where the data of the event object `event` (the line's `event`) is; `Err` says why the line
/// is not a valid event line (a `wire` that is no index, a `wire` beside `data`, a `wire` on
/// another kind of event).
pub fn event_data(event: &Map<String, Value>) -> Result<EventData<'_>, String> {
    static NULL: Value = Value::Null;
    let Some(wire) = event.get("wire") else {
        return Ok(EventData::Inline(event.get("data").unwrap_or(&NULL)));
    };
    let kind = event.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != REFERRING_KIND {
        return Err(format!(
            "its event `{kind}` refers to a wire line (only `{REFERRING_KIND}` does)"
        ));
    }
    if event.contains_key("data") {
        return Err("its event has both `data` and `wire`".into());
    }
    match wire.as_u64().and_then(|n| usize::try_from(n).ok()) {
        Some(n) => Ok(EventData::Wire(n)),
        None => Err(format!(
            "its event's `wire` ({wire}) is not the index of a wire line"
        )),
    }
}

/// The data of an event that refers to wire line `index` of the file, given that line's `dir`
/// and `msg` (`None`: the file has no such wire line before the event): the message's
/// `params.update`. `Err` says why the reference does not hold: no such line (yet), a line the
/// host sent, or not the agent's `session/update` for the event's session.
pub fn referenced_data<'a>(
    event: &Map<String, Value>,
    index: usize,
    line: Option<(&str, &'a Value)>,
) -> Result<&'a Value, String> {
    let Some((dir, msg)) = line else {
        return Err(format!(
            "its event refers to wire line {index}, which is not in the file before it"
        ));
    };
    let not = |what: &str| format!("its event refers to wire line {index}, {what}");
    if dir != "in" {
        return Err(not("a message of the host's, not the agent's"));
    }
    if msg.get("method").and_then(Value::as_str) != Some("session/update") {
        return Err(not("which is not a `session/update`"));
    }
    let params = msg.get("params");
    let session = params.and_then(|p| p.get("sessionId"));
    if session.is_none() || session != event.get("session") {
        return Err(not("a `session/update` of another session"));
    }
    params
        .and_then(|p| p.get("update"))
        .ok_or_else(|| not("a `session/update` without an `update`"))
}

/// The event folded into a wire line (`line_event`, the line's `event`; version 3): its envelope
/// (`kind`, `session`, and `turn`/`replay` as the line has them) and its data, the message's
/// `params.update`. `Err` says why the line cannot carry it: `event` is no object or has other
/// members than `turn` (a count) and `replay` (`true`), the line is not the agent's, or its
/// message is no `session/update` with a `sessionId` and an `update`.
pub fn folded_event<'a>(
    dir: &str,
    msg: &'a Value,
    line_event: &Value,
) -> Result<(Map<String, Value>, &'a Value), String> {
    let Value::Object(folded) = line_event else {
        return Err("its wire line's `event` is not an object".into());
    };
    let mut envelope = Map::new();
    envelope.insert("kind".into(), REFERRING_KIND.into());
    for (key, value) in folded {
        match (key.as_str(), value) {
            ("turn", Value::Number(n)) if n.is_u64() => {}
            ("replay", Value::Bool(true)) => {}
            ("turn" | "replay", _) => {
                return Err(format!(
                    "its wire line's event has `{key}`: {value}, which is not a {}",
                    if key == "turn" {
                        "turn number"
                    } else {
                        "`true`"
                    }
                ));
            }
            _ => {
                return Err(format!(
                    "its wire line's event has `{key}` (a folded update's event has only `turn` and `replay`)"
                ));
            }
        }
    }
    let not = |what: &str| format!("its wire line has an `event` but {what}");
    if dir != "in" {
        return Err(not("is a message of the host's, not the agent's"));
    }
    if msg.get("method").and_then(Value::as_str) != Some("session/update") {
        return Err(not("is not a `session/update`"));
    }
    let params = msg.get("params");
    let Some(session) = params
        .and_then(|p| p.get("sessionId"))
        .filter(|s| s.is_string())
    else {
        return Err(not("has no `sessionId`"));
    };
    let Some(update) = params.and_then(|p| p.get("update")) else {
        return Err(not("has no `update`"));
    };
    envelope.insert("session".into(), session.clone());
    for key in ["turn", "replay"] {
        if let Some(v) = folded.get(key) {
            envelope.insert(key.into(), v.clone());
        }
    }
    Ok((envelope, update))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn an_inline_event_is_read_as_it_is() {
        let ev = obj(json!({"kind": "turn_ended", "data": {"stopReason": "end_turn"}}));
        assert_eq!(
            event_data(&ev),
            Ok(EventData::Inline(&json!({"stopReason": "end_turn"})))
        );
        let ev = obj(json!({"kind": "x"}));
        assert_eq!(event_data(&ev), Ok(EventData::Inline(&Value::Null)));
    }

    #[test]
    fn a_reference_reads_back_the_update_of_the_line_it_names() {
        let ev = obj(json!({"kind": "session_update", "session": "s1", "turn": 1, "wire": 4}));
        assert_eq!(event_data(&ev), Ok(EventData::Wire(4)));
        let update = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
        let msg = json!({"jsonrpc": "2.0", "method": "session/update",
                         "params": {"sessionId": "s1", "update": update}});
        assert_eq!(referenced_data(&ev, 4, Some(("in", &msg))), Ok(&update));
    }

    #[test]
    fn a_folded_event_is_the_update_of_its_line() {
        let update = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
        let msg = json!({"jsonrpc": "2.0", "method": "session/update",
                         "params": {"sessionId": "s1", "update": update}});
        let (env, data) = folded_event("in", &msg, &json!({"turn": 3, "replay": true})).unwrap();
        assert_eq!(
            Value::Object(env),
            json!({"kind": "session_update", "session": "s1", "turn": 3, "replay": true})
        );
        assert_eq!(data, &update);
        let (env, _) = folded_event("in", &msg, &json!({})).unwrap();
        assert_eq!(
            Value::Object(env),
            json!({"kind": "session_update", "session": "s1"})
        );
        let other = json!({"method": "fs/read_text_file", "params": {"sessionId": "s1"}});
        let no_update = json!({"method": "session/update", "params": {"sessionId": "s1"}});
        let no_session =
            json!({"method": "session/update", "params": {"sessionId": 1, "update": {}}});
        for (dir, msg, ev, why) in [
            ("in", &msg, json!([]), "not an object"),
            ("in", &msg, json!({"turn": -1}), "not a turn number"),
            ("in", &msg, json!({"turn": "1"}), "not a turn number"),
            ("in", &msg, json!({"replay": false}), "not a `true`"),
            ("in", &msg, json!({"data": {}}), "only `turn` and `replay`"),
            (
                "in",
                &msg,
                json!({"kind": "turn_ended"}),
                "only `turn` and `replay`",
            ),
            ("out", &msg, json!({}), "the host's"),
            ("in", &other, json!({}), "not a `session/update`"),
            ("in", &no_update, json!({}), "no `update`"),
            ("in", &no_session, json!({}), "no `sessionId`"),
        ] {
            let err = folded_event(dir, msg, &ev).unwrap_err();
            assert!(err.contains(why), "{err} (expected {why})");
        }
    }

    #[test]
    fn a_reference_that_does_not_hold_says_why() {
        let ev = obj(json!({"kind": "session_update", "session": "s1", "wire": 2}));
        let update = |session: &str| json!({"method": "session/update", "params": {"sessionId": session, "update": {}}});
        let cases = [
            (None, "not in the file"),
            (Some(("out", update("s1"))), "host's"),
            (
                Some(("in", json!({"method": "fs/read_text_file", "params": {}}))),
                "not a `session/update`",
            ),
            (Some(("in", update("s2"))), "another session"),
            (
                Some((
                    "in",
                    json!({"method": "session/update", "params": {"sessionId": "s1"}}),
                )),
                "without an `update`",
            ),
            (Some(("in", json!("a string"))), "not a `session/update`"),
        ];
        for (line, why) in cases {
            let err = referenced_data(&ev, 2, line.as_ref().map(|(d, m)| (*d, m))).unwrap_err();
            assert!(err.contains(why) && err.contains("wire line 2"), "{err}");
        }
        for (ev, why) in [
            (
                json!({"kind": "turn_ended", "wire": 1}),
                "only `session_update`",
            ),
            (
                json!({"kind": "session_update", "wire": 1, "data": {}}),
                "both",
            ),
            (
                json!({"kind": "session_update", "wire": -1}),
                "not the index",
            ),
            (
                json!({"kind": "session_update", "wire": "3"}),
                "not the index",
            ),
            (
                json!({"kind": "session_update", "wire": 1.5}),
                "not the index",
            ),
        ] {
            let err = event_data(&obj(ev)).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }
}
