//! Commands from handles: requests to the agent (with the state checks that must happen in
//! order with the wire), abandon, cancel, and the embedder's answers.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{Actor, Command, PendingOut, ReqCtx, SessionEntry, SessionStatus, Timer, sorted};
use crate::error::{Error, Result};
use crate::events::{EventKind, raw_json};
use crate::permission::{DecidedBy, Outcome};
use crate::receipt::RequestState;
use crate::session::SessionView;
use crate::wire::message;

impl Actor {
    pub(super) async fn on_command(&mut self, cmd: Command) {
        match cmd {
            Command::Emit { events, reply } => {
                for ev in events {
                    self.emit(ev).await;
                }
                self.defer(move || {
                    let _ = reply.send(());
                });
            }
            Command::Request {
                id,
                method,
                params,
                ctx,
                timeout,
                reply,
            } => {
                let _ = self
                    .start_request(id, method, params, ctx, timeout, Some(reply))
                    .await;
            }
            Command::Steer {
                session,
                steer,
                prompt,
                reply,
            } => self.on_steer(session, steer, prompt, reply).await,
            Command::Abandon { id } => {
                let Some(pending) = self.pending.get(&id) else {
                    return;
                };
                if let ReqCtx::Prompt { session, .. } = &pending.ctx {
                    if pending.aborted {
                        return;
                    }
                    let session = session.clone();
                    let _ = self.cancel_session(&session).await;
                } else {
                    let params = raw_json(&serde_json::json!({ "requestId": id }));
                    let _ = self
                        .write(message::notification_line("$/cancel_request", &params))
                        .await;
                }
            }
            Command::Cancel { session, reply } => {
                let res = self.cancel_session(&session).await;
                self.defer(move || {
                    let _ = reply.send(res);
                });
            }
            Command::RespondPermission {
                request_id,
                option_id,
                reply,
            } => match self.host_answer(request_id, Ok(option_id)).await {
                Ok(slot) => self.reply_receipt(slot, reply),
                Err(e) => self.defer(move || {
                    let _ = reply.send(Err(e.rejecting(RequestState::Unavailable)));
                }),
            },
            Command::RespondElicitation {
                request_id,
                answer,
                reply,
            } => match self.elicitation_answer(request_id, answer).await {
                Ok(slot) => self.reply_receipt(slot, reply),
                Err(e) => self.defer(move || {
                    let _ = reply.send(Err(e.rejecting(RequestState::Unavailable)));
                }),
            },
            Command::Shutdown { reply, .. } => {
                // Handled by the run loop, which owns the reader channel to drain.
                let info = self
                    .gone
                    .as_ref()
                    .map(|g| g.info().clone())
                    .unwrap_or_default();
                self.defer(move || {
                    let _ = reply.send(info);
                });
            }
        }
    }

    /// Send request `id` (the state checks, `turn_started` for a prompt, the timer), or fail it:
    /// the error goes to `reply` (when there is one) and is returned.
    pub(super) async fn start_request(
        &mut self,
        id: u64,
        method: std::borrow::Cow<'static, str>,
        params: Box<serde_json::value::RawValue>,
        ctx: ReqCtx,
        timeout: Option<std::time::Duration>,
        reply: Option<super::ReplyTx>,
    ) -> Result<()> {
        let failed = |this: &Self, error: Error, reply: Option<super::ReplyTx>| {
            if let Some(reply) = reply {
                let e = error.clone();
                this.defer(move || {
                    let _ = reply.send(Err(e));
                });
            }
            Err(error)
        };
        if let Some(gone) = &self.gone {
            return failed(self, gone.error(), reply);
        }
        let line = message::request_line(id, &method, &params);
        if line.len() + 1 > self.out.own_room() {
            // It could never be queued: the call fails, nothing is sent, the agent carries on.
            let error = Error::InvalidArgument(format!(
                "the `{method}` request is {} bytes as JSON, over the {}-byte limit for one \
                 message to the agent (max_outbound_bytes less the room kept for answers to its \
                 requests)",
                line.len() + 1,
                self.out.own_room()
            ));
            return failed(self, error, reply);
        }
        if let Err(e) = self.before_request(&ctx).await {
            return failed(self, e, reply);
        }
        if let ReqCtx::Prompt { session, turn, .. } = &ctx {
            // turn_started precedes everything the agent sends for the turn.
            let prompt = serde_json::from_str::<Value>(params.get())
                .ok()
                .and_then(|mut p| p.get_mut("prompt").map(Value::take))
                .unwrap_or(Value::Null);
            let data = raw_json(&serde_json::json!({ "prompt": prompt }));
            let ev = self
                .event(EventKind::TurnStarted, data)
                .session(Some(session.clone()))
                .turn(Some(*turn));
            self.emit(ev).await;
        }
        let timer = timeout.map(|t| self.timers.insert(Timer::Request(id), t));
        self.pending.insert(
            id,
            PendingOut {
                method,
                ctx,
                reply,
                timer,
                aborted: false,
                accepted: None,
            },
        );
        // A refusal here is the agent not reading (the size was checked above): it is being
        // taken down, and its exit fails this call.
        let _ = self.write(line).await;
        Ok(())
    }

    /// State checks and bookkeeping that must happen in order with the wire, before sending.
    pub(super) async fn before_request(&mut self, ctx: &ReqCtx) -> Result<()> {
        match ctx {
            ReqCtx::NewSession { .. } | ReqCtx::ForkSession { .. } => self.pending_new += 1,
            ReqCtx::OpenSession {
                id,
                cwd,
                extra,
                replay,
                ..
            } => {
                if let Some(existing) = self.sessions.get(id) {
                    if matches!(existing.status, SessionStatus::Opening { .. }) {
                        return Err(Error::Busy(format!("session {id} is already being opened")));
                    }
                    if existing.active_turn.is_some() {
                        return Err(Error::Busy(format!("session {id} has a turn in flight")));
                    }
                }
                let view = Arc::new(Mutex::new(SessionView::new(id, Some(cwd.clone()))));
                if let Ok(mut v) = view.lock() {
                    v.additional_directories = extra.clone();
                }
                self.sessions.insert(
                    id.clone(),
                    SessionEntry {
                        view,
                        status: SessionStatus::Opening { replay: *replay },
                        active_turn: None,
                        cancelling: false,
                        orphan_turn: None,
                        turn_text: None,
                        buffer: Vec::new(),
                        replaying: false,
                        agent_turn: false,
                        early_idle: None,
                        steers: Default::default(),
                    },
                );
            }
            ReqCtx::Prompt {
                session,
                turn,
                text,
            } => {
                let Some(entry) = self.sessions.get_mut(session) else {
                    return Err(Error::NotFound(format!("session {session} is not open")));
                };
                if !matches!(entry.status, SessionStatus::Open) {
                    return Err(Error::Busy(format!("session {session} is still opening")));
                }
                if let Some(t) = entry.active_turn {
                    return Err(Error::Busy(format!(
                        "session {session} already has turn {t} in flight"
                    )));
                }
                entry.active_turn = Some(*turn);
                entry.agent_turn = false;
                entry.early_idle = None;
                entry.cancelling = false;
                entry.orphan_turn = None;
                entry.turn_text = Some(text.clone());
                if let Ok(mut v) = entry.view.lock() {
                    v.active_turn = Some(*turn);
                }
            }
            ReqCtx::CloseSession { id }
            | ReqCtx::DeleteSession { id }
            | ReqCtx::ArchiveSession { id } => {
                // Its steers are never sent: a turn ending before the answer must not prompt.
                self.reject_steers(id, "closed").await;
            }
            ReqCtx::SetMode { session, .. } | ReqCtx::SetConfig { session }
                if !self.sessions.contains_key(session) =>
            {
                return Err(Error::NotFound(format!("session {session} is not open")));
            }
            _ => {}
        }
        Ok(())
    }

    /// Events that must precede the request on the wire (turn_started).
    pub(super) async fn cancel_session(&mut self, session: &Arc<str>) -> Result<()> {
        if let Some(gone) = &self.gone {
            return Err(gone.error());
        }
        let params = raw_json(&serde_json::json!({ "sessionId": &**session }));
        let _ = self
            .write(message::notification_line("session/cancel", &params))
            .await;
        // The turn in flight gets `cancel_grace` to end; then the host gives up on it (an agent
        // that ignores the cancel holds neither the caller nor the session). The grace replaces
        // any prompt timeout.
        let grace = self.host.config.cancel_grace;
        let prompt = self.pending.iter_mut().find(|(_, p)| {
            !p.aborted && matches!(&p.ctx, ReqCtx::Prompt { session: s, .. } if s == session)
        });
        if let Some((&id, pending)) = prompt {
            pending.aborted = true;
            if let Some(key) = pending.timer.take() {
                self.timers.try_remove(&key);
            }
            pending.timer = Some(self.timers.insert(Timer::CancelGrace(id), grace));
        }
        if let Some(entry) = self.sessions.get_mut(session)
            && entry.active_turn.is_some()
        {
            entry.cancelling = true;
        }
        // A cancel of the session's turn drops the steers waiting to follow it.
        self.reject_steers(session, "cancelled").await;
        // The spec: after session/cancel, every pending permission request of the session is
        // answered `cancelled`.
        let ids: Vec<u64> = self
            .perms
            .iter()
            .filter(|(_, p)| p.session == *session)
            .map(|(&id, _)| id)
            .collect();
        for id in sorted(ids) {
            self.resolve_permission(id, Outcome::Cancelled, DecidedBy::Cancelled)
                .await;
        }
        // ... and so is every pending elicitation of the session.
        self.cancel_elicitations(Some(session), DecidedBy::Cancelled)
            .await;
        Ok(())
    }
}
