//! The ACP v2 (draft) session update kinds that v1 has no type for: the message upserts, tool-call
//! content chunks, agent-owned terminals and the replay marker. (`state_update` is
//! [`SessionStateUpdate`](super::payload::SessionStateUpdate); the kinds v2 shares with v1 —
//! `tool_call_update`, `plan_update`, `plan_removed`, `usage_update`, `notice`, the compaction
//! kinds — decode as their v1 types, which already carry v2's fields.)
//!
//! Written here rather than taken from the schema crate's `v2` module: its JSON Schema names
//! every shared type again (`ContentBlock2`, `ToolKind2`, … differing from v1's in descriptions
//! only), which would double every face's generated types. The nested shapes are v1's, which v2
//! keeps. Patch semantics (absent = unchanged, `null` = cleared) are not told apart here: both
//! are `None`; the event's raw `data` has the difference.

use serde::Deserialize;
use serde_json::Value;

use agent_client_protocol_schema::v1 as acp;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// `user_message`, `agent_message`, `agent_thought`: a message created or patched (a later
/// update with the same `messageId` and kind patches it; chunks append to it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct V2Message {
    /// Unique per message kind within the session.
    pub message_id: String,
    /// The message's whole content (replaces what the chunks built up).
    #[serde(default)]
    pub content: Option<Vec<acp::ContentBlock>>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<acp::Meta>,
}

/// `tool_call_content_chunk`: one content item appended to a tool call's `content`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct V2ToolCallContentChunk {
    pub tool_call_id: String,
    pub content: acp::ToolCallContent,
    #[serde(default, rename = "_meta")]
    pub meta: Option<acp::Meta>,
}

/// An agent-owned terminal's output snapshot (replaces what the chunks built up).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct V2TerminalOutput {
    /// The output bytes, base64.
    pub data: String,
    #[serde(default, rename = "_meta")]
    pub meta: Option<acp::Meta>,
}

/// How an agent-owned terminal's process ended.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct V2TerminalExitStatus {
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// The signal that ended it, e.g. `SIGTERM`.
    #[serde(default)]
    pub signal: Option<String>,
}

/// An agent-owned terminal's size in character cells.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct V2TerminalSize {
    pub cols: u16,
    pub rows: u16,
}

/// `terminal_update`: an agent-owned terminal created or patched (the agent runs it; the host
/// serves no terminal under v2).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct V2TerminalUpdate {
    pub terminal_id: String,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub output: Option<V2TerminalOutput>,
    /// Set once the process ended.
    #[serde(default)]
    pub exit_status: Option<V2TerminalExitStatus>,
    #[serde(default)]
    pub size: Option<V2TerminalSize>,
    /// What the client may do with the terminal (e.g. `cancel`), as the agent sent it.
    #[serde(default)]
    pub capabilities: Option<Value>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<acp::Meta>,
}

/// `terminal_output_chunk`: bytes appended to an agent-owned terminal's output.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct V2TerminalOutputChunk {
    pub terminal_id: String,
    /// The bytes, base64 (each chunk encoded on its own).
    pub data: String,
    #[serde(default, rename = "_meta")]
    pub meta: Option<acp::Meta>,
}

/// `replay_complete`: the history replay a `session/resume` asked for is over; later updates
/// are live.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct V2ReplayComplete {
    #[serde(default, rename = "_meta")]
    pub meta: Option<acp::Meta>,
}

/// A v2-only session update, by its `sessionUpdate` tag ([`Payload::V2Update`]).
///
/// [`Payload::V2Update`]: super::Payload::V2Update
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum V2SessionUpdate {
    UserMessage(V2Message),
    AgentMessage(V2Message),
    AgentThought(V2Message),
    ToolCallContentChunk(V2ToolCallContentChunk),
    TerminalUpdate(V2TerminalUpdate),
    TerminalOutputChunk(V2TerminalOutputChunk),
    ReplayComplete(V2ReplayComplete),
}

/// How the event schema describes a kind: its payload type's schema (added to the generator's
/// `$defs`).
#[cfg(feature = "json-schema")]
pub(super) type SchemaFn = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

/// The v2-only kinds: each tag with the description of its `SessionUpdate` variant in the event
/// schema (one variant per row) and its payload type; [`decode`] knows exactly these tags.
#[cfg(feature = "json-schema")]
pub(super) const V2_UPDATE_KINDS: &[(&str, &str, SchemaFn)] = &[
    (
        "user_message",
        "ACP v2 (draft): a user message created or patched.",
        schemars::SchemaGenerator::subschema_for::<V2Message>,
    ),
    (
        "agent_message",
        "ACP v2 (draft): an agent message created or patched.",
        schemars::SchemaGenerator::subschema_for::<V2Message>,
    ),
    (
        "agent_thought",
        "ACP v2 (draft): an agent thought created or patched.",
        schemars::SchemaGenerator::subschema_for::<V2Message>,
    ),
    (
        "tool_call_content_chunk",
        "ACP v2 (draft): one content item appended to a tool call.",
        schemars::SchemaGenerator::subschema_for::<V2ToolCallContentChunk>,
    ),
    (
        "terminal_update",
        "ACP v2 (draft): an agent-owned terminal created or patched.",
        schemars::SchemaGenerator::subschema_for::<V2TerminalUpdate>,
    ),
    (
        "terminal_output_chunk",
        "ACP v2 (draft): bytes appended to an agent-owned terminal's output.",
        schemars::SchemaGenerator::subschema_for::<V2TerminalOutputChunk>,
    ),
    (
        "replay_complete",
        "ACP v2 (draft): the replay a resume asked for is over.",
        schemars::SchemaGenerator::subschema_for::<V2ReplayComplete>,
    ),
];

/// Decode a v2-only kind leniently (as [`lenient_value`](super::lenient_value) does for v1's),
/// or `None` when `kind` is not v2-only (the kinds of the event schema's v2 variants).
pub(super) fn decode(
    kind: &str,
    value: &Value,
) -> Option<(Option<V2SessionUpdate>, Vec<super::DecodeNote>)> {
    use super::lenient_value as l;
    macro_rules! v {
        ($variant:ident) => {{
            let (v, notes) = l(value);
            Some((v.map(V2SessionUpdate::$variant), notes))
        }};
    }
    match kind {
        "user_message" => v!(UserMessage),
        "agent_message" => v!(AgentMessage),
        "agent_thought" => v!(AgentThought),
        "tool_call_content_chunk" => v!(ToolCallContentChunk),
        "terminal_update" => v!(TerminalUpdate),
        "terminal_output_chunk" => v!(TerminalOutputChunk),
        "replay_complete" => v!(ReplayComplete),
        _ => None,
    }
}

#[cfg(all(test, feature = "json-schema"))]
mod tests {
    use super::*;

    /// The schema's v2 variants and the decoder know the same tags.
    #[test]
    fn every_kind_of_the_schema_table_is_decoded() {
        for (kind, _, _) in V2_UPDATE_KINDS {
            assert!(decode(kind, &serde_json::json!({})).is_some(), "{kind}");
        }
        assert!(decode("state_update", &serde_json::json!({})).is_none());
    }
}
