//! The draft ACP v2 prompt lifecycle, on a connection that negotiated v2 (`protocol/v2`).
//!
//! v1: the `session/prompt` answer ends the turn. v2: the answer is only an acceptance
//! (`{messageId}`); the turn ends with the session's `state_update` to `idle` (its
//! `stopReason`). Work the agent starts by itself (a `running` or `requires_action` while no turn
//! is active) is a turn of its own with its own turn id. Either way: exactly one `turn_started`
//! and one `turn_ended` per turn, in `seq` order, and the prompt's caller gets its result when
//! the turn ends, as with v1. What stays as in v1: the prompt timeout (over the whole turn),
//! cancel and its grace, agent death (every turn in flight ends with the error).

use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use super::{Actor, PendingOut, ReqCtx, SessionStatus};
use crate::error::Error;
use crate::events::{EventKind, raw_json};

/// The `state` of a v2 `state_update` (the update's JSON).
pub(super) fn state_of(update: &Value) -> Option<&str> {
    update.get("state").and_then(Value::as_str)
}

impl Actor {
    /// This connection negotiated ACP v2.
    pub(super) fn is_v2(&self) -> bool {
        self.shared.info.get().is_some_and(|i| i.is_v2())
    }

    /// A `state_update` that is about to be delivered: one that shows work while no turn is
    /// active starts an agent-initiated turn first (its `turn_started` precedes the update, which
    /// then carries the new turn id).
    pub(super) async fn v2_before_state(&mut self, session: &Arc<str>, update: &Value) {
        let busy = matches!(state_of(update), Some("running" | "requires_action"));
        let Some(entry) = self.sessions.get_mut(session) else {
            return;
        };
        if !busy
            || !matches!(entry.status, SessionStatus::Open)
            || entry.replaying
            || entry.active_turn.is_some()
            || entry.orphan_turn.is_some()
        {
            return;
        }
        let turn = self
            .host
            .next_turn
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        entry.active_turn = Some(turn);
        entry.agent_turn = true;
        entry.cancelling = false;
        entry.early_idle = None;
        if let Ok(mut v) = entry.view.lock() {
            v.active_turn = Some(turn);
        }
        let data = raw_json(&serde_json::json!({ "prompt": [], "origin": "agent" }));
        self.emit(
            self.event(EventKind::TurnStarted, data)
                .session(Some(session.clone()))
                .turn(Some(turn)),
        )
        .await;
    }

    /// A `state_update` was delivered: an `idle` ends the session's active turn (a prompt's,
    /// once accepted, or the agent's own).
    pub(super) async fn v2_after_state(&mut self, session: &Arc<str>, update: Value) {
        if state_of(&update) != Some("idle") {
            return;
        }
        let Some(entry) = self.sessions.get_mut(session) else {
            return;
        };
        let Some(turn) = entry.active_turn else {
            // A snapshot while nothing runs, or the late end of a turn the host gave up on.
            entry.orphan_turn = None;
            return;
        };
        if entry.agent_turn {
            entry.agent_turn = false;
            let result = idle_result(&update, None);
            let _ = self.end_turn_with(session, turn, result).await;
            return;
        }
        let accepted = self.pending.iter().find_map(|(&id, p)| match &p.ctx {
            ReqCtx::Prompt {
                session: s,
                turn: t,
                ..
            } if s == session && *t == turn && p.accepted.is_some() => Some(id),
            _ => None,
        });
        match accepted {
            Some(id) => {
                if let Some(pending) = self.pending.remove(&id) {
                    self.v2_finish_prompt(pending, &update).await;
                }
            }
            // The idle came before the prompt's acceptance: the turn ends once it is accepted.
            None => {
                if let Some(entry) = self.sessions.get_mut(session) {
                    entry.early_idle = Some(update);
                }
            }
        }
    }

    /// The answer to a v2 `session/prompt`. Returns it back when the v1 path should handle it
    /// (an error answer, or one that is not a valid acceptance: the turn ends with the error).
    pub(super) async fn v2_prompt_answer(
        &mut self,
        id: u64,
        mut pending: PendingOut,
        result: std::result::Result<Box<RawValue>, Error>,
    ) -> Option<(PendingOut, std::result::Result<Box<RawValue>, Error>)> {
        if pending.accepted.is_some() {
            // Already accepted: a second answer for the same request.
            self.pending.insert(id, pending);
            self.protocol_error(
                "duplicate_response",
                format!("a second response for request {id}; ignored"),
                serde_json::json!({ "id": id }),
            )
            .await;
            return None;
        }
        let raw = match result {
            Ok(raw) => raw,
            Err(e) => return Some((pending, Err(e))),
        };
        let message_id = serde_json::from_str::<Value>(raw.get()).ok().and_then(|v| {
            v.get("messageId")
                .and_then(Value::as_str)
                .map(Arc::<str>::from)
        });
        let Some(message_id) = message_id else {
            let e = Error::Protocol("the v2 session/prompt answer has no messageId".into());
            return Some((pending, Err(e)));
        };
        self.remember_answered(id);
        pending.accepted = Some(message_id);
        let early = match &pending.ctx {
            ReqCtx::Prompt { session, .. } => self
                .sessions
                .get_mut(session)
                .and_then(|e| e.early_idle.take()),
            _ => None,
        };
        match early {
            Some(idle) => self.v2_finish_prompt(pending, &idle).await,
            None => {
                self.pending.insert(id, pending);
            }
        }
        None
    }

    /// End an accepted v2 prompt's turn with the `idle` that ended it, and answer its caller.
    async fn v2_finish_prompt(&mut self, mut pending: PendingOut, idle: &Value) {
        if let Some(key) = pending.timer.take() {
            self.timers.try_remove(&key);
        }
        let ReqCtx::Prompt { session, turn, .. } =
            std::mem::replace(&mut pending.ctx, ReqCtx::Plain)
        else {
            return;
        };
        let result = idle_result(idle, pending.accepted.as_deref());
        let outcome = self.end_turn_with(&session, turn, result).await;
        if let Some(reply) = pending.reply.take() {
            self.defer(move || {
                let _ = reply.send(outcome);
            });
        }
    }

    /// `end_turn` with a result built here; returns what the prompt's caller gets.
    async fn end_turn_with(
        &mut self,
        session: &Arc<str>,
        turn: u64,
        result: std::result::Result<Box<RawValue>, Error>,
    ) -> std::result::Result<Box<RawValue>, Error> {
        match &result {
            Ok(raw) => self.end_turn(session, turn, Ok(raw)).await,
            Err(e) => self.end_turn(session, turn, Err(e)).await,
        }
        result
    }

    /// Every agent-initiated turn ends with `error` (the agent went away, or its session closed).
    pub(super) async fn v2_end_agent_turns(&mut self, only: Option<&Arc<str>>, error: &Error) {
        let mut turns: Vec<(Arc<str>, u64)> = self
            .sessions
            .iter_mut()
            .filter(|(id, _)| only.is_none_or(|o| o == *id))
            .filter_map(|(id, e)| {
                let turn = e.active_turn.filter(|_| e.agent_turn)?;
                e.agent_turn = false;
                Some((id.clone(), turn))
            })
            .collect();
        turns.sort();
        for (session, turn) in turns {
            self.end_turn(&session, turn, Err(error)).await;
        }
    }
}

/// What a v2 turn ends with: the `idle` update's `stopReason` (and `usage`, `_meta`), the
/// prompt's `messageId`, and the whole `idle` update as `state`.
fn idle_result(
    idle: &Value,
    message_id: Option<&str>,
) -> std::result::Result<Box<RawValue>, Error> {
    let Some(stop) = idle.get("stopReason").filter(|s| s.is_string()) else {
        return Err(Error::Protocol(
            "the idle state_update that ended the turn has no stopReason".into(),
        ));
    };
    let mut result = serde_json::json!({ "stopReason": stop, "state": idle });
    if let Some(m) = message_id {
        result["messageId"] = Value::from(m);
    }
    for key in ["usage", "_meta"] {
        if let Some(v) = idle.get(key).filter(|v| !v.is_null()) {
            result[key] = v.clone();
        }
    }
    Ok(raw_json(&result))
}
