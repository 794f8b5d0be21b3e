//! Delivery receipts for the embedder's answers (docs/EVENTS.md, "Delivery receipts").
//!
//! Every answer the embedder gives (a permission option, an elicitation answer) gets one: it
//! says whether the answer's line reached the agent's stdin. The connection's actor decides it
//! once, from the writer's progress; the respond call and the resolution event carry the same one.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most an answer's receipt waits for its line to be written. An agent that stops reading
/// its stdin must not hang the embedder: past this the receipt is `uncertain` (`timeout`), and
/// the line may still be delivered later (or the agent is found stalled and taken down).
pub const RECEIPT_WAIT: Duration = Duration::from_secs(5);

/// What became of a request when an answer was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RequestState {
    /// Still waiting for an answer: another answer may be given.
    Pending,
    /// Already resolved, withdrawn by the agent, unknown, or its agent is gone.
    Unavailable,
}

/// What became of one answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Receipt {
    /// The answer's line was fully written to the agent's stdin, in order after every line
    /// before it.
    Delivered,
    /// The answer was not sent: `code` is the error kind (`already_resolved`, `not_found`,
    /// `invalid_argument`, `agent_exited`, ...), `state` what became of the request.
    Rejected {
        state: RequestState,
        code: String,
        message: String,
    },
    /// The line was being written when the pipe failed (`code` `io`: some of it may have reached
    /// the agent), or it was still waiting to be written after [`RECEIPT_WAIT`] (`timeout`).
    Uncertain { code: String, message: String },
}

impl Receipt {
    pub(crate) fn rejected(state: RequestState, code: &str, message: impl Into<String>) -> Receipt {
        Receipt::Rejected {
            state,
            code: code.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn uncertain(code: &str, message: impl Into<String>) -> Receipt {
        Receipt::Uncertain {
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// `delivered`, `rejected` or `uncertain`.
    pub fn status(&self) -> &'static str {
        match self {
            Receipt::Delivered => "delivered",
            Receipt::Rejected { .. } => "rejected",
            Receipt::Uncertain { .. } => "uncertain",
        }
    }

    /// The receipt as JSON: `{"status": "delivered"}`, `{"status": "rejected", "state",
    /// "code", "message"}` or `{"status": "uncertain", "code", "message"}`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
