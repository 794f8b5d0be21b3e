//! Lenient typed decoding of an event's `data` ([`Event::decode`](super::Event::decode)).
//!
//! The strict decode (one `serde_json::from_str` into the typed shape) is tried first; it is what
//! almost every payload takes. Only when it fails is the payload parsed into a `Value` and
//! repaired: the value at the path serde complains about (an unknown enum value, a `null` where a
//! value was expected, a wrong type) is removed, so an optional field falls back to its default,
//! and the decode is retried; each repair is recorded as a [`DecodeNote`]. When nothing can be
//! repaired (an unknown `sessionUpdate` kind, a required field missing) the payload is
//! [`Payload::Unknown`] with a note. The event's raw `data` is never changed either way: nothing is
//! lost, and decoding never fails a connection (it runs in the embedder's code, on demand).

use serde::de::DeserializeOwned;
use serde_json::Value;

use agent_client_protocol_schema::v1 as acp;

use super::EventKind;
use super::payload::*;

/// The typed `data` of one event.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Payload {
    /// Boxed: the capabilities make it large.
    AgentReady(Box<AgentReady>),
    AgentExited(AgentExited),
    SessionOpened(SessionOpened),
    SessionClosed(SessionClosed),
    SessionUpdate(acp::SessionUpdate),
    /// ACP v2 (draft): a `session_update` of kind `state_update`.
    StateUpdate(SessionStateUpdate),
    /// ACP v2 (draft): a `session_update` of a kind only v2 has (message upserts, tool-call
    /// content chunks, agent-owned terminals, `replay_complete`).
    V2Update(super::payload_v2::V2SessionUpdate),
    TurnStarted(TurnStarted),
    TurnEnded(TurnEnded),
    PermissionRequested(PermissionRequested),
    PermissionResolved(PermissionResolved),
    ElicitationRequested(ElicitationRequested),
    ElicitationResolved(ElicitationResolved),
    ElicitationCompleted(ElicitationCompleted),
    FsRead(FsRead),
    FsWrite(FsWrite),
    TerminalCreated(TerminalCreated),
    TerminalExited(TerminalExited),
    AgentStderr(AgentStderr),
    Progress(Progress),
    ProtocolNoise(ProtocolNoise),
    ProtocolError(ProtocolError),
    ExtNotification(ExtNotification),
    ExtRequest(ExtRequest),
    Wire(Wire),
    CallCompleted(CallCompleted),
    ServiceRequested(ServiceRequested),
    AgentRestarting(AgentRestarting),
    AgentRestarted(AgentRestarted),
    AgentFailed(AgentFailed),
    SessionLost(SessionLost),
    Steer(Steer),
    /// The data could not be typed (see [`Decoded::notes`]); it is in the event's raw `data`.
    Unknown,
}

/// Why a payload was not decoded as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeNote {
    /// `repaired` (the value at `path` was dropped and its field defaulted),
    /// `unknown_update_kind` (a `sessionUpdate` this host's schema does not know) or
    /// `invalid_payload` (nothing left to repair: a required field missing, not JSON, …).
    pub reason: &'static str,
    /// Where, as a JSON path (`.` is the payload itself), e.g. `content[0].type`.
    pub path: String,
    /// serde's message.
    pub message: String,
}

/// [`Event::decode`](super::Event::decode)'s result: the typed payload and what had to be
/// repaired to get it (empty for a payload that decoded as sent).
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub payload: Payload,
    pub notes: Vec<DecodeNote>,
}

impl Decoded {
    /// True when the payload decoded as sent, without repairs.
    pub fn is_exact(&self) -> bool {
        self.notes.is_empty() && !matches!(self.payload, Payload::Unknown)
    }
}

/// Repairs tried per payload before giving up (each removes one value, so it always ends).
const MAX_REPAIRS: usize = 32;

pub(super) fn decode(kind: EventKind, raw: &str) -> Decoded {
    macro_rules! typed {
        ($variant:ident) => {{
            let (value, notes) = lenient(raw);
            Decoded {
                payload: value.map_or(Payload::Unknown, Payload::$variant),
                notes,
            }
        }};
    }
    match kind {
        EventKind::AgentReady => {
            let (value, notes) = lenient(raw);
            Decoded {
                payload: value.map_or(Payload::Unknown, |v| Payload::AgentReady(Box::new(v))),
                notes,
            }
        }
        EventKind::AgentExited => typed!(AgentExited),
        EventKind::SessionOpened => typed!(SessionOpened),
        EventKind::SessionClosed => typed!(SessionClosed),
        EventKind::SessionUpdate => {
            let (value, notes) = session_update(raw);
            if value.is_none()
                && notes
                    .first()
                    .is_some_and(|n| n.reason == "unknown_update_kind")
                && let Some(decoded) = v2_update(raw)
            {
                return decoded;
            }
            Decoded {
                payload: value.map_or(Payload::Unknown, Payload::SessionUpdate),
                notes,
            }
        }
        EventKind::TurnStarted => typed!(TurnStarted),
        EventKind::TurnEnded => typed!(TurnEnded),
        EventKind::PermissionRequested => typed!(PermissionRequested),
        EventKind::PermissionResolved => typed!(PermissionResolved),
        EventKind::ElicitationRequested => typed!(ElicitationRequested),
        EventKind::ElicitationResolved => typed!(ElicitationResolved),
        EventKind::ElicitationCompleted => typed!(ElicitationCompleted),
        EventKind::FsRead => typed!(FsRead),
        EventKind::FsWrite => typed!(FsWrite),
        EventKind::TerminalCreated => typed!(TerminalCreated),
        EventKind::TerminalExited => typed!(TerminalExited),
        EventKind::AgentStderr => typed!(AgentStderr),
        EventKind::ProtocolNoise => typed!(ProtocolNoise),
        EventKind::ProtocolError => typed!(ProtocolError),
        EventKind::ExtNotification => typed!(ExtNotification),
        EventKind::ExtRequest => typed!(ExtRequest),
        EventKind::Wire => typed!(Wire),
        EventKind::CallCompleted => typed!(CallCompleted),
        EventKind::ServiceRequested => typed!(ServiceRequested),
        EventKind::AgentRestarting => typed!(AgentRestarting),
        EventKind::AgentRestarted => typed!(AgentRestarted),
        EventKind::AgentFailed => typed!(AgentFailed),
        EventKind::SessionLost => typed!(SessionLost),
        EventKind::Progress => typed!(Progress),
        EventKind::Steer => typed!(Steer),
    }
}

/// A kind v1 does not know: one of ACP v2's (`state_update`, [`payload_v2::decode`]'s), else
/// `None` (the caller's `unknown_update_kind` stands).
fn v2_update(raw: &str) -> Option<Decoded> {
    let value = serde_json::from_str::<Value>(raw).ok()?;
    let kind = value.get("sessionUpdate").and_then(Value::as_str)?;
    if kind == "state_update" {
        let (v, notes) = lenient_value(&value);
        return Some(Decoded {
            payload: v.map_or(Payload::Unknown, Payload::StateUpdate),
            notes,
        });
    }
    let (v, notes) = super::payload_v2::decode(kind, &value)?;
    Some(Decoded {
        payload: v.map_or(Payload::Unknown, Payload::V2Update),
        notes,
    })
}

/// Decode leniently: strict first, then repair (see the module docs).
pub fn lenient<T: DeserializeOwned>(raw: &str) -> (Option<T>, Vec<DecodeNote>) {
    if let Ok(v) = serde_json::from_str::<T>(raw) {
        return (Some(v), Vec::new());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value) => repair(value),
        Err(e) => (None, vec![note("invalid_payload", ".", e.to_string())]),
    }
}

/// Decode a `Value` leniently (the repair loop; also for payloads already parsed).
pub fn lenient_value<T: DeserializeOwned>(value: &Value) -> (Option<T>, Vec<DecodeNote>) {
    if let Ok(v) = T::deserialize(value) {
        return (Some(v), Vec::new());
    }
    repair(value.clone())
}

fn repair<T: DeserializeOwned>(mut value: Value) -> (Option<T>, Vec<DecodeNote>) {
    let mut notes = Vec::new();
    for _ in 0..MAX_REPAIRS {
        match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(v) => return (Some(v), notes),
            Err(e) => {
                let path = e.path().to_string();
                let message = e.inner().to_string();
                if !remove_at(&mut value, e.path()) {
                    notes.push(note("invalid_payload", &path, message));
                    return (None, notes);
                }
                notes.push(note("repaired", &path, message));
            }
        }
    }
    notes.push(note("invalid_payload", ".", "too many repairs".to_owned()));
    (None, notes)
}

fn note(reason: &'static str, path: &str, message: String) -> DecodeNote {
    DecodeNote {
        reason,
        path: path.to_owned(),
        message,
    }
}

/// Remove the value at `path`; false when the path is the payload itself or cannot be followed.
fn remove_at(value: &mut Value, path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    let mut at = value;
    for seg in parents {
        at = match (seg, at) {
            (Segment::Map { key }, Value::Object(m)) => match m.get_mut(key) {
                Some(v) => v,
                None => return false,
            },
            (Segment::Seq { index }, Value::Array(a)) => match a.get_mut(*index) {
                Some(v) => v,
                None => return false,
            },
            _ => return false,
        };
    }
    match (last, at) {
        (Segment::Map { key }, Value::Object(m)) => m.remove(key).is_some(),
        (Segment::Seq { index }, Value::Array(a)) if *index < a.len() => {
            a.remove(*index);
            true
        }
        _ => false,
    }
}

/// `SessionUpdate` is tagged inside the object, which hides the path of a bad field from serde;
/// the repair loop therefore runs on the variant's own type, picked by the tag.
fn session_update(raw: &str) -> (Option<acp::SessionUpdate>, Vec<DecodeNote>) {
    if let Ok(v) = serde_json::from_str::<acp::SessionUpdate>(raw) {
        return (Some(v), Vec::new());
    }
    let value = match serde_json::from_str::<Value>(raw) {
        Ok(v) => v,
        Err(e) => return (None, vec![note("invalid_payload", ".", e.to_string())]),
    };
    let Some(kind) = value.get("sessionUpdate").and_then(Value::as_str) else {
        let msg = "missing `sessionUpdate`".to_owned();
        return (None, vec![note("invalid_payload", ".sessionUpdate", msg)]);
    };
    macro_rules! variant {
        ($variant:ident) => {{
            let (v, notes) = lenient_value(&value);
            (v.map(acp::SessionUpdate::$variant), notes)
        }};
    }
    match kind {
        "user_message_chunk" => variant!(UserMessageChunk),
        "agent_message_chunk" => variant!(AgentMessageChunk),
        "agent_thought_chunk" => variant!(AgentThoughtChunk),
        "tool_call" => variant!(ToolCall),
        "tool_call_update" => variant!(ToolCallUpdate),
        "plan" => variant!(Plan),
        "plan_update" => variant!(PlanUpdate),
        "plan_removed" => variant!(PlanRemoved),
        "available_commands_update" => variant!(AvailableCommandsUpdate),
        "current_mode_update" => variant!(CurrentModeUpdate),
        "config_option_update" => variant!(ConfigOptionUpdate),
        "session_info_update" => variant!(SessionInfoUpdate),
        "usage_update" => variant!(UsageUpdate),
        "notice" => variant!(Notice),
        "compaction_update" => variant!(CompactionUpdate),
        "compaction_summary_chunk" => variant!(CompactionSummaryChunk),
        "subagent_update" => variant!(SubagentUpdate),
        "session_message" => variant!(SessionMessage),
        "session_message_chunk" => variant!(SessionMessageChunk),
        other => (
            None,
            vec![note(
                "unknown_update_kind",
                ".sessionUpdate",
                format!("`{other}` is not a session update this host's schema knows"),
            )],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(json: &str) -> Decoded {
        decode(EventKind::SessionUpdate, json)
    }

    #[test]
    fn a_v2_state_update_is_typed_and_a_bad_field_is_repaired() {
        let d = update(
            r#"{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","background":[]}"#,
        );
        assert!(d.is_exact(), "{:?}", d.notes);
        let Payload::StateUpdate(s) = d.payload else {
            panic!("{:?}", d.payload)
        };
        assert_eq!(
            (s.state.as_str(), s.stop_reason.as_deref()),
            ("idle", Some("end_turn"))
        );
        let d = update(r#"{"sessionUpdate":"state_update","state":"running","stopReason":7}"#);
        assert!(matches!(d.payload, Payload::StateUpdate(_)));
        assert_eq!(d.notes[0].reason, "repaired");
    }

    #[test]
    fn the_v2_only_kinds_are_typed_and_bad_fields_are_repaired() {
        use crate::events::payload_v2::V2SessionUpdate as V2;
        let d = update(
            r#"{"sessionUpdate":"agent_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}"#,
        );
        assert!(d.is_exact(), "{:?}", d.notes);
        let Payload::V2Update(V2::AgentMessage(m)) = d.payload else {
            panic!("{:?}", d.payload)
        };
        assert_eq!(
            (m.message_id.as_str(), m.content.map(|c| c.len())),
            ("m1", Some(1))
        );
        for (raw, want) in [
            (
                r#"{"sessionUpdate":"user_message","messageId":"u"}"#,
                "user_message",
            ),
            (
                r#"{"sessionUpdate":"agent_thought","messageId":"t"}"#,
                "agent_thought",
            ),
            (
                r#"{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c","content":{"type":"content","content":{"type":"text","text":"x"}}}"#,
                "tool_call_content_chunk",
            ),
            (
                r#"{"sessionUpdate":"terminal_update","terminalId":"t","command":"ls","exitStatus":{"exitCode":0},"size":{"cols":80,"rows":24}}"#,
                "terminal_update",
            ),
            (
                r#"{"sessionUpdate":"terminal_output_chunk","terminalId":"t","data":"aGk="}"#,
                "terminal_output_chunk",
            ),
            (r#"{"sessionUpdate":"replay_complete"}"#, "replay_complete"),
        ] {
            let d = update(raw);
            assert!(d.is_exact(), "{raw}: {:?}", d.notes);
            let got = match d.payload {
                Payload::V2Update(V2::UserMessage(_)) => "user_message",
                Payload::V2Update(V2::AgentThought(_)) => "agent_thought",
                Payload::V2Update(V2::ToolCallContentChunk(_)) => "tool_call_content_chunk",
                Payload::V2Update(V2::TerminalUpdate(_)) => "terminal_update",
                Payload::V2Update(V2::TerminalOutputChunk(_)) => "terminal_output_chunk",
                Payload::V2Update(V2::ReplayComplete(_)) => "replay_complete",
                other => panic!("{raw}: {other:?}"),
            };
            assert_eq!(got, want);
        }
        // An unknown content type inside a message: dropped, the rest typed, with a note.
        let d = update(
            r#"{"sessionUpdate":"agent_message","messageId":"m","content":[{"type":"hologram"},{"type":"text","text":"ok"}],"_meta":{"k":1}}"#,
        );
        let Payload::V2Update(V2::AgentMessage(m)) = d.payload else {
            panic!("{:?}", d.payload)
        };
        assert_eq!(
            (m.content.map(|c| c.len()), d.notes[0].reason),
            (Some(1), "repaired")
        );
        assert!(m.meta.is_some());
        // A required field missing: Unknown, with the note.
        let d = update(r#"{"sessionUpdate":"terminal_output_chunk","terminalId":"t"}"#);
        assert_eq!(d.payload, Payload::Unknown);
        assert_eq!(d.notes[0].reason, "invalid_payload");
        // v2's `tool_call_update` (an upsert, with `capabilities`) is v1's type.
        let d = update(
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","name":"run","title":"Run","capabilities":{"cancel":{}}}"#,
        );
        assert!(d.is_exact(), "{:?}", d.notes);
        assert!(matches!(
            d.payload,
            Payload::SessionUpdate(acp::SessionUpdate::ToolCallUpdate(_))
        ));
    }

    #[test]
    fn a_payload_that_fits_decodes_exactly_and_extra_fields_are_ignored() {
        let d = update(
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"fromTheFuture":1}"#,
        );
        assert!(d.is_exact(), "{d:?}");
        let Payload::SessionUpdate(acp::SessionUpdate::AgentMessageChunk(chunk)) = d.payload else {
            unreachable!("{:?}", d.payload)
        };
        assert!(matches!(chunk.content, acp::ContentBlock::Text(t) if t.text == "hi"));
    }

    #[test]
    fn an_unknown_update_kind_is_unknown_with_a_note() {
        let d = update(r#"{"sessionUpdate":"hologram","x":1}"#);
        assert_eq!(d.payload, Payload::Unknown);
        assert_eq!(d.notes.len(), 1);
        assert_eq!(d.notes[0].reason, "unknown_update_kind");
        assert!(d.notes[0].message.contains("hologram"));
    }

    #[test]
    fn an_unknown_enum_value_in_a_tool_call_keeps_the_call() {
        // The schema crate itself defaults an unknown status/kind; the call stays typed.
        let d = update(
            r#"{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Run","status":"exploding","kind":"teleport"}"#,
        );
        let Payload::SessionUpdate(acp::SessionUpdate::ToolCall(call)) = d.payload else {
            unreachable!("{:?}", d.payload)
        };
        assert_eq!(call.tool_call_id.to_string(), "t1");
        assert_eq!(call.title, "Run");
    }

    #[test]
    fn a_bad_optional_field_is_dropped_and_noted() {
        let d = decode(
            EventKind::AgentExited,
            r#"{"reason":"exited","exitCode":"three","signal":null,"stderrTail":""}"#,
        );
        let Payload::AgentExited(exit) = &d.payload else {
            unreachable!("{:?}", d.payload)
        };
        assert_eq!(exit.exit_code, None);
        assert_eq!(exit.reason, ExitReason::Exited);
        assert_eq!(d.notes.len(), 1, "{d:?}");
        assert_eq!(
            (d.notes[0].reason, d.notes[0].path.as_str()),
            ("repaired", "exitCode")
        );
        assert!(!d.is_exact());
    }

    #[test]
    fn a_plan_entry_with_an_unknown_priority_is_dropped_not_the_plan() {
        let d = update(
            r#"{"sessionUpdate":"plan","entries":[
                {"content":"odd","priority":"urgent-ish","status":"pending"},
                {"content":"fine","priority":"high","status":"pending"}]}"#,
        );
        let Payload::SessionUpdate(acp::SessionUpdate::Plan(plan)) = &d.payload else {
            unreachable!("{:?}", d.payload)
        };
        assert_eq!(plan.entries.len(), 1);
        assert_eq!(plan.entries[0].content, "fine");
        // Whether the schema crate skipped it (VecSkipError) or the repair loop dropped it, any
        // note says `repaired`, never a lost plan.
        assert!(d.notes.iter().all(|n| n.reason == "repaired"), "{d:?}");
    }

    #[test]
    fn null_where_a_required_value_was_expected_is_unknown_with_notes() {
        let d = update(r#"{"sessionUpdate":"tool_call","toolCallId":"t1","title":null}"#);
        assert_eq!(d.payload, Payload::Unknown);
        assert_eq!(d.notes.first().map(|n| n.path.as_str()), Some("title"));
        assert_eq!(d.notes.last().map(|n| n.reason), Some("invalid_payload"));
    }

    #[test]
    fn data_that_is_not_an_object_is_unknown() {
        for raw in [r#""text""#, "[1,2]", "null", "{"] {
            let d = update(raw);
            assert_eq!(d.payload, Payload::Unknown, "{raw}");
            assert_eq!(
                d.notes.last().map(|n| n.reason),
                Some("invalid_payload"),
                "{raw}"
            );
        }
        let d = decode(EventKind::PermissionResolved, r#"{"requestId":1}"#);
        assert_eq!(d.payload, Payload::Unknown);
    }
}
