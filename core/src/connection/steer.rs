//! Steering (`Session::steer`): text for a session while its turn runs.
//!
//! The actor decides, in order with the wire, what becomes of a steer:
//! - a turn runs, the agent advertises steering ([`super::state::steering_supported`]) and no
//!   steer waits before it: `_session/steering` with `idleBehavior: "promptRequired"`; the
//!   agent's `injected` is the outcome, its `promptRequired` (the turn ended under us) queues it;
//! - on a v2 connection the same steer is a `session/prompt` into the running work (v2's prompt
//!   is an insertion): `{messageId}` is `injected`, an error answer (not inserted) queues it;
//! - otherwise it waits in the session's queue and is sent as an ordinary `session/prompt`, its
//!   own turn, when the running turn ends (`prompted`); with no turn running it is sent at once.
//!
//! A cancel of the session's turn, the session closing and the agent ending reject every
//! queued steer (`rejected`). Every outcome is a `steer` event; at most [`MAX_PENDING_STEERS`]
//! steers wait or are in flight per session.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::{Actor, ReqCtx, SessionStatus};
use crate::error::{Error, Result};
use crate::events::payload::SteerOutcome;
use crate::events::{EventKind, raw_json};
use crate::session::SteerResult;
use crate::wire::message;

/// Steers that may wait (queued or in flight as `_session/steering`) per session; one more is
/// refused with `busy`.
pub const MAX_PENDING_STEERS: usize = 16;

/// The wire method of the steering extension.
pub const STEERING_METHOD: &str = "_session/steering";

type SteerReply = oneshot::Sender<Result<SteerResult>>;

/// A session's steers.
#[derive(Debug, Default)]
pub(super) struct Steers {
    /// Waiting to be the session's next prompt, in call order.
    queue: VecDeque<Queued>,
    /// `_session/steering` requests in flight.
    in_flight: usize,
    /// Bumped by every cancel: an in-flight steer answered `promptRequired` after a cancel is
    /// rejected, not queued.
    epoch: u64,
}

#[derive(Debug)]
struct Queued {
    steer: u64,
    prompt: Value,
}

/// What an in-flight `_session/steering` request needs when its answer comes.
#[derive(Debug)]
pub(crate) struct SteerCtx {
    session: Arc<str>,
    steer: u64,
    /// The turn it was sent into.
    turn: u64,
    epoch: u64,
    prompt: Value,
    reply: Option<SteerReply>,
    /// Sent as a v2 `session/prompt` insertion (not `_session/steering`).
    v2: bool,
}

/// What a steer call does now.
enum Decision {
    /// No turn runs and nothing waits: the steer is the next prompt at once.
    Prompt,
    /// `_session/steering` into this running turn.
    Request(u64),
    /// Wait for the running turn to end.
    Queue,
}

impl Actor {
    pub(super) async fn on_steer(
        &mut self,
        session: Arc<str>,
        steer: u64,
        prompt: Value,
        reply: SteerReply,
    ) {
        let decision = match self.steer_decision(&session, &prompt) {
            Ok(d) => d,
            Err(e) => return self.steer_reply(Some(reply), Err(e)),
        };
        match decision {
            Decision::Prompt => {
                let done = self
                    .prompt_steer(&session, steer, prompt)
                    .await
                    .map(|turn| SteerResult {
                        steer,
                        outcome: SteerOutcome::Prompted,
                        turn: Some(turn),
                    });
                self.steer_reply(Some(reply), done);
            }
            Decision::Request(turn) => {
                self.steer_request(session, steer, turn, prompt, reply)
                    .await;
            }
            Decision::Queue => {
                self.queue_steer(&session, steer, prompt).await;
                let done = SteerResult {
                    steer,
                    outcome: SteerOutcome::Queued,
                    turn: None,
                };
                self.steer_reply(Some(reply), Ok(done));
            }
        }
    }

    /// The checks (agent, session, bound, size) and what to do, in order with the wire.
    fn steer_decision(&self, session: &Arc<str>, prompt: &Value) -> Result<Decision> {
        if let Some(gone) = &self.gone {
            return Err(gone.error());
        }
        let steering = self.shared.info.get().is_some_and(|i| i.steering);
        let Some(entry) = self.sessions.get(session) else {
            return Err(Error::NotFound(format!("session {session} is not open")));
        };
        if !matches!(entry.status, SessionStatus::Open) {
            return Err(Error::Busy(format!("session {session} is still opening")));
        }
        let waiting = entry.steers.queue.len() + entry.steers.in_flight;
        if waiting >= MAX_PENDING_STEERS {
            return Err(Error::Busy(format!(
                "session {session} already has {waiting} steers waiting (at most \
                 {MAX_PENDING_STEERS})"
            )));
        }
        // What could never be sent is refused now, not when its turn comes.
        let line = message::request_line(
            u64::MAX,
            STEERING_METHOD,
            &raw_json(&steering_params(session, prompt)),
        );
        if line.len() + 1 > self.out.own_room() {
            return Err(Error::InvalidArgument(format!(
                "the steer is {} bytes as JSON, over the {}-byte limit for one message to the \
                 agent",
                line.len() + 1,
                self.out.own_room()
            )));
        }
        Ok(match (entry.active_turn, entry.steers.queue.is_empty()) {
            (None, true) => Decision::Prompt,
            (Some(turn), true) if (steering || self.is_v2()) && !entry.cancelling => {
                Decision::Request(turn)
            }
            _ => Decision::Queue,
        })
    }

    /// The `steer` event.
    async fn steer_event(
        &mut self,
        session: &Arc<str>,
        turn: Option<u64>,
        steer: u64,
        outcome: &str,
        extra: Value,
    ) {
        let mut data = serde_json::json!({ "steer": steer, "outcome": outcome });
        if let (Value::Object(d), Value::Object(x)) = (&mut data, extra) {
            d.extend(x);
        }
        let ev = self
            .event(EventKind::Steer, raw_json(&data))
            .session(Some(session.clone()))
            .turn(turn);
        self.emit(ev).await;
    }

    async fn queue_steer(&mut self, session: &Arc<str>, steer: u64, prompt: Value) {
        let extra = serde_json::json!({ "prompt": &prompt });
        if let Some(entry) = self.sessions.get_mut(session) {
            entry.steers.queue.push_back(Queued { steer, prompt });
        }
        self.steer_event(session, None, steer, "queued", extra)
            .await;
    }

    /// Send the steer as the session's next prompt (its own turn): `prompted`, then the turn's
    /// `turn_started`. The turn's outcome is its `turn_ended`.
    async fn prompt_steer(&mut self, session: &Arc<str>, steer: u64, prompt: Value) -> Result<u64> {
        let turn = self
            .host
            .next_turn
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let params = serde_json::json!({ "sessionId": &**session, "prompt": &prompt });
        self.steer_event(session, Some(turn), steer, "prompted", Value::Null)
            .await;
        let id = self
            .shared
            .next_request
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let ctx = ReqCtx::Prompt {
            session: session.clone(),
            turn,
            text: Arc::new(Mutex::new(crate::session::TurnText::default())),
        };
        let timeout = self.host.config.prompt_timeout;
        // Boxed: a turn's end starts the next steer, and a failed write can end a turn.
        let sent = Box::pin(self.start_request(
            id,
            "session/prompt".into(),
            raw_json(&params),
            ctx,
            timeout,
            None,
        ))
        .await;
        if let Err(e) = &sent {
            let extra = serde_json::json!({ "prompt": &prompt, "error": e.to_json() });
            self.steer_event(session, None, steer, "failed", extra)
                .await;
        }
        sent.map(|()| turn)
    }

    /// `_session/steering` into `turn` (on v2: a `session/prompt` insertion into the running
    /// work); `reply` waits in the request's context for the agent's answer
    /// ([`Actor::steer_answered`]).
    async fn steer_request(
        &mut self,
        session: Arc<str>,
        steer: u64,
        turn: u64,
        prompt: Value,
        reply: SteerReply,
    ) {
        let Some(entry) = self.sessions.get_mut(&session) else {
            let e = Error::NotFound(format!("session {session} is not open"));
            return self.steer_reply(Some(reply), Err(e));
        };
        entry.steers.in_flight += 1;
        let epoch = entry.steers.epoch;
        let v2 = self.is_v2();
        let (method, params) = if v2 {
            // v2's `session/prompt` is an insertion: accepted while work runs, it joins it.
            let params = serde_json::json!({ "sessionId": &*session, "prompt": &prompt });
            ("session/prompt", raw_json(&params))
        } else {
            (
                STEERING_METHOD,
                raw_json(&steering_params(&session, &prompt)),
            )
        };
        let id = self
            .shared
            .next_request
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let ctx = ReqCtx::Steer(SteerCtx {
            session: session.clone(),
            steer,
            turn,
            epoch,
            prompt,
            reply: Some(reply),
            v2,
        });
        let timeout = self.host.config.request_timeout;
        // Checked before (agent, size): a failure here drops the context, and with it the
        // reply (the caller gets `closed`).
        let sent = self
            .start_request(id, method.into(), params, ctx, timeout, None)
            .await;
        if sent.is_err()
            && let Some(entry) = self.sessions.get_mut(&session)
        {
            entry.steers.in_flight = entry.steers.in_flight.saturating_sub(1);
        }
    }

    /// The agent answered a `_session/steering` request (`Err`: its error, a timeout, its exit).
    pub(super) async fn steer_answered(
        &mut self,
        ctx: SteerCtx,
        result: std::result::Result<&RawValue, &Error>,
    ) {
        let SteerCtx {
            session,
            steer,
            turn,
            epoch,
            prompt,
            reply,
            v2,
        } = ctx;
        let current = self.sessions.get_mut(&session).map(|e| {
            e.steers.in_flight = e.steers.in_flight.saturating_sub(1);
            (e.steers.epoch, e.active_turn, e.steers.queue.is_empty())
        });
        let answer: Value = match result {
            Ok(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            // v2: an error answer means the message was not inserted (the spec); it waits as the
            // next prompt, as a v1 `promptRequired` does.
            Err(Error::Agent { .. }) if v2 && self.gone.is_none() => {
                serde_json::json!({ "outcome": "promptRequired" })
            }
            Err(e) => {
                let (outcome, extra) = match (&self.gone, e) {
                    (Some(_), _) => (
                        "rejected",
                        serde_json::json!({ "prompt": &prompt, "reason": self.gone_reason() }),
                    ),
                    _ => (
                        "failed",
                        serde_json::json!({ "prompt": &prompt, "error": e.to_json() }),
                    ),
                };
                self.steer_event(&session, Some(turn), steer, outcome, extra)
                    .await;
                self.steer_reply(reply, Err(e.clone()));
                return;
            }
        };
        let reason = answer.get("reason").and_then(Value::as_str);
        let outcome = match answer.get("outcome").and_then(Value::as_str) {
            Some(o) => o,
            // v2: `{messageId}` is the insertion; into the turn it was sent to while that runs,
            // else the agent runs new work for it (the host sees that as the agent's own turn).
            None if v2 && answer.get("messageId").is_some_and(Value::is_string) => match current {
                Some((_, Some(now), _)) if now == turn => "injected",
                _ => "startedNewTurn",
            },
            None => "",
        };
        let done = match outcome {
            "injected" => {
                let extra = serde_json::json!({ "prompt": &prompt });
                self.steer_event(&session, Some(turn), steer, "injected", extra)
                    .await;
                Ok(SteerResult {
                    steer,
                    outcome: SteerOutcome::Injected,
                    turn: Some(turn),
                })
            }
            "startedNewTurn" => {
                let extra = serde_json::json!({ "prompt": &prompt });
                self.steer_event(&session, None, steer, "started_new_turn", extra)
                    .await;
                Ok(SteerResult {
                    steer,
                    outcome: SteerOutcome::StartedNewTurn,
                    turn: None,
                })
            }
            "promptRequired" => match current {
                None => {
                    let extra = serde_json::json!({ "prompt": &prompt, "reason": "closed" });
                    self.steer_event(&session, None, steer, "rejected", extra)
                        .await;
                    Err(Error::Closed(format!("session {session} is closed")))
                }
                Some((now, ..)) if now != epoch => {
                    let extra = serde_json::json!({ "prompt": &prompt, "reason": "cancelled" });
                    self.steer_event(&session, None, steer, "rejected", extra)
                        .await;
                    Err(Error::Cancelled)
                }
                Some((_, None, true)) => {
                    self.prompt_steer(&session, steer, prompt)
                        .await
                        .map(|turn| SteerResult {
                            steer,
                            outcome: SteerOutcome::Prompted,
                            turn: Some(turn),
                        })
                }
                Some(_) => {
                    self.queue_steer(&session, steer, prompt).await;
                    Ok(SteerResult {
                        steer,
                        outcome: SteerOutcome::Queued,
                        turn: None,
                    })
                }
            },
            other => {
                let error = if other == "failed" {
                    Error::Agent {
                        code: -32603,
                        message: format!(
                            "the agent did not take the steer: {}",
                            reason.unwrap_or("no reason given")
                        ),
                        data: Some(answer.clone()),
                    }
                } else {
                    let what = if v2 {
                        "the v2 session/prompt answer to a steer has no messageId"
                    } else {
                        "the _session/steering answer has no known outcome"
                    };
                    Error::Protocol(format!("{what}: {}", short_json(&answer)))
                };
                let mut extra = serde_json::json!({ "prompt": &prompt, "error": error.to_json() });
                if let Some(r) = reason {
                    extra["reason"] = Value::from(r);
                }
                self.steer_event(&session, Some(turn), steer, "failed", extra)
                    .await;
                Err(error)
            }
        };
        self.steer_reply(reply, done);
    }

    fn steer_reply(&self, reply: Option<SteerReply>, result: Result<SteerResult>) {
        if let Some(reply) = reply {
            self.defer(move || {
                let _ = reply.send(result);
            });
        }
    }

    /// A turn of `session` ended: its first queued steer becomes the next prompt.
    pub(super) async fn next_steer(&mut self, session: &Arc<str>) {
        if self.gone.is_some() {
            return;
        }
        let Some(entry) = self.sessions.get_mut(session) else {
            return;
        };
        if entry.active_turn.is_some() {
            return;
        }
        let Some(next) = entry.steers.queue.pop_front() else {
            return;
        };
        let _ = self.prompt_steer(session, next.steer, next.prompt).await;
    }

    /// Reject every queued steer of `session` (`reason`: `cancelled`, `closed`, ...); a steer
    /// in flight answered `promptRequired` after this is rejected too.
    pub(super) async fn reject_steers(&mut self, session: &Arc<str>, reason: &str) {
        let Some(entry) = self.sessions.get_mut(session) else {
            return;
        };
        entry.steers.epoch += 1;
        let queue = std::mem::take(&mut entry.steers.queue);
        for q in queue {
            let extra = serde_json::json!({ "prompt": q.prompt, "reason": reason });
            self.steer_event(session, None, q.steer, "rejected", extra)
                .await;
        }
    }

    /// Why steers die with the agent: `shutdown` when the host ended it, else `agent_exited`.
    pub(super) fn gone_reason(&self) -> &'static str {
        match self.gone {
            Some(super::Gone::Shutdown(_)) => "shutdown",
            _ => "agent_exited",
        }
    }
}

fn steering_params(session: &str, prompt: &Value) -> Value {
    serde_json::json!({
        "sessionId": session,
        "prompt": prompt,
        "_meta": { "steering": { "idleBehavior": "promptRequired" } },
    })
}

/// An answer for an error message, cut at 200 bytes (on a char boundary).
fn short_json(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 200 {
        let mut end = 200;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}
