//! The agent's answers to our requests: applied to the connection's state (sessions opened,
//! turns ended), late answers reported, never applied.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;

use super::{Actor, AgentInfo, GaveUp, RECENT_IDS, ReqCtx, SessionEntry, SessionStatus, sorted};
use crate::error::{Error, Result};
use crate::events::{EventKind, raw_json};
use crate::permission::{DecidedBy, Outcome};
use crate::session::SessionView;
use crate::wire::message::RawId;

impl Actor {
    pub(super) async fn on_response(
        &mut self,
        id: RawId,
        result: std::result::Result<Box<RawValue>, Error>,
    ) {
        let Some(num) = id.as_u64() else {
            self.protocol_error(
                "unknown_response_id",
                format!("response with id {} that this host never used", id.json()),
                serde_json::json!({ "id": id.to_value() }),
            )
            .await;
            return;
        };
        let Some(mut pending) = self.pending.remove(&num) else {
            if let Some(gave_up) = self.abandoned.remove(&num) {
                self.late_answer(num, gave_up, &result).await;
                return;
            }
            let (reason, what) = if self.recent_set.contains(&num) {
                ("duplicate_response", "a second response for request")
            } else {
                ("unknown_response_id", "a response for unknown request id")
            };
            self.protocol_error(
                reason,
                format!("{what} {num}; ignored"),
                serde_json::json!({ "id": num }),
            )
            .await;
            return;
        };
        let mut result = result;
        if matches!(pending.ctx, ReqCtx::Prompt { .. }) && self.is_v2() {
            // v2: the answer accepts the prompt; the turn goes on until the session's `idle`.
            match self.v2_prompt_answer(num, pending, result).await {
                Some((p, r)) => (pending, result) = (p, r),
                None => return,
            }
        }
        self.remember_answered(num);
        if let Some(key) = pending.timer.take() {
            self.timers.try_remove(&key);
        }
        let reply = pending.reply.take();
        let outcome = match result {
            Ok(raw) => self.on_success(pending.method, pending.ctx, raw).await,
            Err(error) => {
                self.on_failure(pending.ctx, &error).await;
                Err(error)
            }
        };
        if let Some(reply) = reply {
            self.defer(move || {
                let _ = reply.send(outcome);
            });
        }
    }

    pub(super) fn remember_answered(&mut self, id: u64) {
        self.recent.push_back(id);
        self.recent_set.insert(id);
        while self.recent.len() > RECENT_IDS {
            if let Some(old) = self.recent.pop_front() {
                self.recent_set.remove(&old);
            }
        }
    }

    pub(super) async fn on_success(
        &mut self,
        method: Cow<'static, str>,
        ctx: ReqCtx,
        raw: Box<RawValue>,
    ) -> Result<Box<RawValue>> {
        match ctx {
            ReqCtx::Plain => Ok(raw),
            ReqCtx::Initialize { offered } => {
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                let info = AgentInfo::from_initialize(&value, offered)?;
                let data = serde_json::json!({
                    "protocolVersion": info.protocol_version,
                    "agentInfo": info.agent_info,
                    "agentCapabilities": info.capabilities,
                    "authMethods": info.auth_methods,
                    "pid": self.process.as_ref().map(|p| p.pid),
                });
                let _ = self.shared.info.set(Arc::new(info));
                self.emit(self.event(EventKind::AgentReady, raw_json(&data)))
                    .await;
                Ok(raw)
            }
            ReqCtx::NewSession { cwd, extra } | ReqCtx::ForkSession { cwd, extra } => {
                self.pending_new = self.pending_new.saturating_sub(1);
                let origin = if method == "session/fork" {
                    "fork"
                } else {
                    "new"
                };
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                let Some(id) = value
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(Arc::<str>::from)
                else {
                    self.flush_early_if_idle().await;
                    return Err(Error::Protocol(format!(
                        "{method} response has no sessionId"
                    )));
                };
                let view = Arc::new(Mutex::new(SessionView::new(&id, Some(cwd))));
                if let Ok(mut v) = view.lock() {
                    v.additional_directories = extra;
                }
                if let Ok(mut v) = view.lock() {
                    v.apply_open_result(&value);
                }
                let buffered: Vec<_> = {
                    let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.early)
                        .into_iter()
                        .partition(|(s, _, _)| *s == id);
                    self.early = rest;
                    mine.into_iter().map(|(_, k, u)| (k, u)).collect()
                };
                self.sessions.insert(
                    id.clone(),
                    SessionEntry {
                        view,
                        status: SessionStatus::Opening { replay: false },
                        active_turn: None,
                        cancelling: false,
                        orphan_turn: None,
                        turn_text: None,
                        buffer: buffered,
                        replaying: false,
                        agent_turn: false,
                        early_idle: None,
                        steers: Default::default(),
                    },
                );
                self.open_session_now(&id, Some((&value, origin)), false)
                    .await;
                self.flush_early_if_idle().await;
                Ok(raw)
            }
            ReqCtx::OpenSession { id, origin, .. } => {
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                self.open_session_now(&id, Some((&value, origin)), false)
                    .await;
                Ok(raw)
            }
            ReqCtx::Prompt { session, turn, .. } => {
                self.end_turn(&session, turn, Ok(&raw)).await;
                Ok(raw)
            }
            ReqCtx::SetModel { session, model } => {
                if let Some(entry) = self.sessions.get(&session)
                    && let Ok(mut v) = entry.view.lock()
                {
                    v.set_legacy_model(&model);
                }
                Ok(raw)
            }
            ReqCtx::SetMode { session, mode } => {
                if let Some(entry) = self.sessions.get(&session)
                    && let Ok(mut v) = entry.view.lock()
                {
                    v.set_mode(&mode);
                }
                Ok(raw)
            }
            ReqCtx::SetConfig { session } => {
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                if let Some(opts) = value.get("configOptions").filter(|o| o.is_array())
                    && let Some(entry) = self.sessions.get(&session)
                    && let Ok(mut v) = entry.view.lock()
                {
                    v.config_options = Some(opts.clone());
                }
                Ok(raw)
            }
            ReqCtx::CloseSession { id } => {
                self.close_session_locally(&id, "closed").await;
                Ok(raw)
            }
            ReqCtx::DeleteSession { id } => {
                if self.sessions.contains_key(&id) {
                    self.close_session_locally(&id, "deleted").await;
                }
                Ok(raw)
            }
            ReqCtx::Steer(ctx) => {
                self.steer_answered(ctx, Ok(&raw)).await;
                Ok(raw)
            }
            ReqCtx::ArchiveSession { id } => {
                if self.sessions.contains_key(&id) {
                    self.close_session_locally(&id, "archived").await;
                }
                Ok(raw)
            }
            ReqCtx::SetTitle { session } => {
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                if let Some(title) = value.get("title").and_then(Value::as_str)
                    && let Some(entry) = self.sessions.get(&session)
                    && let Ok(mut v) = entry.view.lock()
                {
                    v.title = Some(title.to_owned());
                }
                Ok(raw)
            }
        }
    }

    pub(super) async fn on_failure(&mut self, ctx: ReqCtx, error: &Error) {
        match ctx {
            ReqCtx::NewSession { .. } | ReqCtx::ForkSession { .. } => {
                self.pending_new = self.pending_new.saturating_sub(1);
                self.flush_early_if_idle().await;
            }
            ReqCtx::OpenSession { id, .. } => {
                if let Some(entry) = self.sessions.get_mut(&id)
                    && matches!(entry.status, SessionStatus::Open)
                {
                    // Opened early during a replay that then failed: it stays open, live.
                    entry.replaying = false;
                    return;
                }
                // Never lose what the agent sent: deliver the buffered updates, then forget it.
                self.remove_session_delivering(&id).await;
            }
            ReqCtx::Prompt { session, turn, .. } => self.end_turn(&session, turn, Err(error)).await,
            ReqCtx::Steer(ctx) => self.steer_answered(ctx, Err(error)).await,
            _ => {}
        }
    }

    /// Forget a session, delivering first what was buffered for it (a load replay stays tagged
    /// `replay`): nothing the agent sent is lost.
    pub(super) async fn remove_session_delivering(
        &mut self,
        id: &Arc<str>,
    ) -> Option<SessionEntry> {
        let mut entry = self.sessions.remove(id)?;
        let replay = matches!(entry.status, SessionStatus::Opening { replay: true });
        for (_, update) in std::mem::take(&mut entry.buffer) {
            self.emit(
                self.event(EventKind::SessionUpdate, update)
                    .session(Some(id.clone()))
                    .replay(replay),
            )
            .await;
        }
        Some(entry)
    }

    /// Mark a session open: emit `session_opened`, then everything buffered for it in wire order.
    pub(super) async fn open_session_now(
        &mut self,
        id: &Arc<str>,
        result: Option<(&Value, &str)>,
        partial: bool,
    ) {
        let Some(entry) = self.sessions.get_mut(id) else {
            return;
        };
        let replay = match entry.status {
            SessionStatus::Opening { replay } => replay,
            SessionStatus::Open => {
                // Already opened early (very long replay): the replay is over once the response
                // is here; apply the final result.
                if let Some((value, _)) = result {
                    entry.replaying = false;
                    if let Ok(mut v) = entry.view.lock() {
                        v.apply_open_result(value);
                    }
                }
                return;
            }
        };
        // Updates arriving after a load response are live again; a partial open keeps tagging
        // replays until the response.
        entry.status = if partial {
            SessionStatus::Opening { replay }
        } else {
            SessionStatus::Open
        };
        let buffer = std::mem::take(&mut entry.buffer);
        let view = entry.view.clone();
        let mut data = serde_json::json!({ "sessionId": &**id });
        {
            let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((value, origin)) = result {
                v.apply_open_result(value);
                data["origin"] = Value::from(origin);
            }
            data["cwd"] = v.cwd.clone().map(Value::from).unwrap_or(Value::Null);
            data["modes"] = v.modes.clone().unwrap_or(Value::Null);
            data["configOptions"] = v.config_options.clone().unwrap_or(Value::Null);
        }
        if partial {
            data["partial"] = Value::Bool(true);
        }
        if let Ok(mut map) = self.shared.sessions.lock() {
            map.insert(id.clone(), view.clone());
        }
        self.emit(
            self.event(EventKind::SessionOpened, raw_json(&data))
                .session(Some(id.clone())),
        )
        .await;
        for (kind, update) in buffer {
            if let Ok(mut v) = view.lock() {
                v.apply_update(&kind, &update);
            }
            self.emit(
                self.event(EventKind::SessionUpdate, update)
                    .session(Some(id.clone()))
                    .replay(replay),
            )
            .await;
        }
        if partial {
            // Keep streaming the rest of the replay as it comes, still tagged as replay.
            if let Some(entry) = self.sessions.get_mut(id) {
                entry.status = SessionStatus::Open;
                entry.replaying = replay;
            }
        }
    }

    /// When no session/new is in flight any more, early updates nobody claimed are delivered.
    pub(super) async fn flush_early_if_idle(&mut self) {
        if self.pending_new > 0 {
            return;
        }
        for (session, _, update) in std::mem::take(&mut self.early) {
            self.emit(
                self.event(EventKind::SessionUpdate, update)
                    .session(Some(session)),
            )
            .await;
        }
    }

    /// Stop waiting for request `id`: its caller gets `error`, a prompt's turn ends with it
    /// (`turn_ended`) and becomes the session's orphan turn, and a late answer is reported by
    /// [`Actor::late_answer`]. Returns `None` when the request is no longer pending, else the
    /// prompt's session (if it was one).
    pub(super) async fn give_up(&mut self, id: u64, error: Error) -> Option<Option<Arc<str>>> {
        let mut pending = self.pending.remove(&id)?;
        // The wheel already dropped this deadline; its key may be reused.
        pending.timer = None;
        let ctx = std::mem::replace(&mut pending.ctx, ReqCtx::Plain);
        let turn = match &ctx {
            ReqCtx::Prompt { session, turn, .. } => Some((session.clone(), *turn)),
            _ => None,
        };
        if let Some((session, turn)) = &turn
            && let Some(entry) = self.sessions.get_mut(session)
            && entry.active_turn == Some(*turn)
        {
            entry.orphan_turn = Some(*turn);
        }
        if self.abandoned.len() >= RECENT_IDS
            && let Some(&old) = self.abandoned.keys().next()
        {
            self.abandoned.remove(&old);
        }
        self.abandoned.insert(
            id,
            GaveUp {
                method: pending.method.clone(),
                turn: turn.clone(),
            },
        );
        self.on_failure(ctx, &error).await;
        if let Some(reply) = pending.reply.take() {
            self.defer(move || {
                let _ = reply.send(Err(error));
            });
        }
        Some(turn.map(|(s, _)| s))
    }

    /// The answer to a request the host gave up on: reported (`protocol_error`, reason
    /// `late_response`, with the session and turn of a prompt), never applied; the turn stops
    /// being the session's orphan.
    pub(super) async fn late_answer(
        &mut self,
        id: u64,
        gave_up: GaveUp,
        result: &std::result::Result<Box<RawValue>, Error>,
    ) {
        let answer = match result {
            Ok(raw) => {
                serde_json::json!({ "result": serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null) })
            }
            Err(e) => serde_json::json!({ "error": e.to_json() }),
        };
        let mut data = serde_json::json!({
            "reason": "late_response",
            "message": format!("the agent answered {} request {id} after the host gave up on it; ignored", gave_up.method),
            "id": id,
            "method": &*gave_up.method,
        });
        if let (Value::Object(d), Value::Object(a)) = (&mut data, answer) {
            d.extend(a);
        }
        let (session, turn) = match gave_up.turn {
            Some((session, turn)) => {
                if let Some(entry) = self.sessions.get_mut(&session)
                    && entry.orphan_turn == Some(turn)
                {
                    entry.orphan_turn = None;
                }
                (Some(session), Some(turn))
            }
            None => (None, None),
        };
        self.emit(
            self.event(EventKind::ProtocolError, raw_json(&data))
                .session(session)
                .turn(turn),
        )
        .await;
    }

    pub(super) async fn end_turn(
        &mut self,
        session: &Arc<str>,
        turn: u64,
        result: std::result::Result<&RawValue, &Error>,
    ) {
        let mut stop_reason = None;
        if let Some(entry) = self.sessions.get_mut(session) {
            if entry.active_turn == Some(turn) {
                entry.active_turn = None;
                entry.cancelling = false;
                entry.turn_text = None;
            }
            if let Ok(mut v) = entry.view.lock() {
                if v.active_turn == Some(turn) {
                    v.active_turn = None;
                }
                if let Ok(raw) = result {
                    #[derive(serde::Deserialize)]
                    struct Stop {
                        #[serde(rename = "stopReason")]
                        stop_reason: Option<String>,
                    }
                    stop_reason = serde_json::from_str::<Stop>(raw.get())
                        .ok()
                        .and_then(|s| s.stop_reason);
                    v.last_stop_reason = stop_reason.clone();
                }
            }
        }
        let data = match result {
            Ok(raw) if stop_reason.is_some() => raw.to_owned(),
            Ok(raw) => raw_json(&serde_json::json!({
                "stopReason": Value::Null,
                "error": { "kind": "protocol", "message": "prompt response has no stopReason" },
                "result": serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null),
            })),
            Err(e) => {
                raw_json(&serde_json::json!({ "stopReason": Value::Null, "error": e.to_json() }))
            }
        };
        self.emit(
            self.event(EventKind::TurnEnded, data)
                .session(Some(session.clone()))
                .turn(Some(turn)),
        )
        .await;
        // A steer waiting for this turn to end is the session's next prompt.
        self.next_steer(session).await;
    }

    pub(super) async fn close_session_locally(&mut self, id: &Arc<str>, reason: &str) {
        let perms: Vec<u64> = self
            .perms
            .iter()
            .filter(|(_, p)| p.session == *id)
            .map(|(&k, _)| k)
            .collect();
        for perm in sorted(perms) {
            self.resolve_permission(perm, Outcome::Cancelled, DecidedBy::Cancelled)
                .await;
        }
        self.cancel_elicitations(Some(id), DecidedBy::Cancelled)
            .await;
        self.v2_end_agent_turns(
            Some(id),
            &Error::Closed(format!("session {id} was {reason}")),
        )
        .await;
        self.reject_steers(id, "closed").await;
        // The session's terminals die with it; its grants are forgotten.
        self.grants.forget_session(id);
        let terminals = self.terminals.clone();
        let sid = id.to_string();
        tokio::spawn(async move { terminals.release_session(&sid).await });
        if let Some(entry) = self.sessions.remove(id)
            && let Ok(mut v) = entry.view.lock()
        {
            v.open = false;
        }
        if let Ok(mut map) = self.shared.sessions.lock() {
            map.remove(id);
        }
        let data = serde_json::json!({ "sessionId": &**id, "reason": reason });
        self.emit(
            self.event(EventKind::SessionClosed, raw_json(&data))
                .session(Some(id.clone())),
        )
        .await;
    }
}
