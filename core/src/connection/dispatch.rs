//! What the agent sent, line by line: updates (buffered for sessions still opening), notifications
//! and requests, routed to their handlers.

use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use super::{Actor, ReaderMsg, SessionStatus, io, params_value, tool_call_id};
use crate::error::Error;
use crate::events::{EventKind, raw_json};
use crate::permission::DecidedBy;
use crate::wire::message::{Incoming, RawId, codes};

impl Actor {
    /// A batch's raw lines to the recording, which records each as the batch's messages are
    /// handled (moved, or copied when wire events need them too).
    pub(super) fn attach_batch(&mut self, batch: &mut io::Batch) {
        if self.recorder.is_none() {
            return;
        }
        let wire_events = self.host.config.wire_events;
        let at = batch.read_at;
        self.record_mut(|r| {
            // The batch gets an emptied buffer in place of its lines' (the reader reads its
            // next batches into it): a buffer goes round rather than one allocated per batch.
            let mut spare = r.spare_buffer();
            let raw = if wire_events {
                spare.push_str(&batch.raw);
                spare
            } else {
                std::mem::replace(&mut batch.raw, spare)
            };
            r.attach(raw, at);
        });
    }

    /// One message from the reader; `arrival`: its batch's raw lines.
    pub(super) async fn on_reader(&mut self, msg: ReaderMsg, arrival: io::Arrival<'_>) {
        // The agent is gone (`agent_exited` was emitted): nothing of it follows, not even a late
        // answer to a request that already failed (it would be a `protocol_error`).
        if self.gone.is_some() && !matches!(msg, ReaderMsg::Eof(_)) {
            return;
        }
        match msg {
            ReaderMsg::Message { msg, lossy, raw } => {
                if let Some(span) = raw {
                    let mut line = None;
                    self.record_mut(|r| line = r.wire_in_at(span.range()));
                    self.recorded_line = line;
                    if self.host.config.wire_events {
                        let raw = arrival.line(span);
                        let data = format!("{{\"direction\":\"in\",\"message\":{raw}}}");
                        if let Ok(data) = RawValue::from_string(data) {
                            self.emit(self.event(EventKind::Wire, data)).await;
                        }
                    }
                }
                if lossy {
                    self.protocol_error(
                        "invalid_utf8",
                        "line was not valid UTF-8; decoded with U+FFFD replacements".into(),
                        Value::Null,
                    )
                    .await;
                }
                self.on_message(msg).await;
                self.recorded_line = None;
            }
            ReaderMsg::Noise { line, bytes } => {
                self.noise += 1;
                self.host.config.log.emit(
                    crate::log::Level::Debug,
                    "protocol",
                    Some(self.agent),
                    None,
                    || format!("a non-JSON line of {bytes} bytes on the agent's stdout, skipped"),
                );
                let data = serde_json::json!({ "line": line, "bytes": bytes, "count": self.noise });
                self.emit(self.event(EventKind::ProtocolNoise, raw_json(&data)))
                    .await;
            }
            ReaderMsg::TooLong { len } => {
                let limit = self.host.config.max_line_bytes;
                self.protocol_error(
                    "line_too_long",
                    format!("line of {len} bytes exceeds the {limit}-byte limit; skipped"),
                    serde_json::json!({ "bytes": len, "limit": limit }),
                )
                .await;
            }
            ReaderMsg::Eof(err) => {
                self.reader_open = false;
                if let Some(err) = err {
                    self.host.config.log.emit(
                        crate::log::Level::Warn,
                        "transport",
                        Some(self.agent),
                        None,
                        || format!("reading the agent's stdout failed: {err}"),
                    );
                }
                self.agent_gone().await;
            }
        }
    }

    pub(super) async fn on_message(&mut self, msg: Incoming) {
        match msg {
            Incoming::Update {
                session_id,
                update_kind,
                update,
            } => {
                self.on_update(session_id, update_kind, update).await;
            }
            Incoming::Response { id, result } => {
                let result = result.map_err(|e| Error::from_rpc(e.code, e.message, e.data));
                self.on_response(id, result).await;
            }
            Incoming::MalformedResponse { id, reason } => {
                self.protocol_error(
                    "invalid_response",
                    format!("{reason} (id {})", id.json()),
                    serde_json::json!({ "id": id.to_value() }),
                )
                .await;
                self.on_response(id, Err(Error::Protocol(reason))).await;
            }
            Incoming::Request { id, method, params } => self.on_request(id, method, params).await,
            Incoming::Notification { method, params } => self.on_notification(method, params).await,
            Incoming::Invalid { reason } => {
                self.protocol_error("invalid_message", reason, Value::Null)
                    .await;
            }
            Incoming::TooDeep { id, method } => self.on_too_deep(id, method).await,
        }
    }

    /// A message nested deeper than `MAX_JSON_DEPTH`: nothing of it goes on. A request is
    /// answered `-32600` (the agent is not left waiting), a response fails the call it answers;
    /// the connection carries on.
    async fn on_too_deep(&mut self, id: Option<RawId>, method: Option<Box<str>>) {
        let limit = crate::wire::MAX_JSON_DEPTH;
        let what = match (&method, &id) {
            (Some(m), Some(_)) => format!("request `{m}`"),
            (Some(m), None) => format!("notification `{m}`"),
            (None, Some(_)) => "response".to_owned(),
            (None, None) => "message".to_owned(),
        };
        let mut data = serde_json::json!({ "limit": limit });
        if let Some(m) = &method {
            data["method"] = Value::from(&**m);
        }
        if let Some(id) = &id {
            data["id"] = id.to_value();
        }
        let answered = match (&method, &id) {
            (Some(_), Some(id)) if !self.request_id_pending(id) => {
                self.respond_error(
                    id,
                    codes::INVALID_REQUEST,
                    &format!("the message nests deeper than {limit} levels"),
                )
                .await;
                "; answered -32600"
            }
            (Some(_), _) => "; ignored",
            (None, Some(_)) => "; the call fails",
            (None, None) => "; ignored",
        };
        self.protocol_error(
            "too_deep",
            format!("{what} nests arrays and objects deeper than {limit} levels{answered}"),
            data,
        )
        .await;
        if let (None, Some(id)) = (method, id) {
            let error = Error::Protocol(format!(
                "the agent's response nests deeper than {limit} levels"
            ));
            self.on_response(id, Err(error)).await;
        }
    }

    /// Whether the agent has a request with this id pending with the host.
    fn request_id_pending(&self, id: &RawId) -> bool {
        self.perms.values().any(|p| p.raw_id == *id)
            || self.elicits.values().any(|e| e.raw_id == *id)
            || self.served.contains_key(id)
    }

    pub(super) async fn on_update(&mut self, key: Arc<str>, kind: Arc<str>, update: Box<RawValue>) {
        // v2 turns begin and end with `state_update`s (checked on the kind first: the flood path
        // of chunks parses nothing more).
        let state = (&*kind == "state_update" && self.is_v2())
            .then(|| serde_json::from_str::<Value>(update.get()).ok())
            .flatten();
        if let Some(state) = &state {
            self.v2_before_state(&key, state).await;
        }
        self.on_update_v1(key.clone(), kind, update).await;
        if let Some(state) = state {
            self.v2_after_state(&key, state).await;
        }
    }

    async fn on_update_v1(&mut self, key: Arc<str>, kind: Arc<str>, update: Box<RawValue>) {
        if let Some(entry) = self.sessions.get_mut(&key) {
            match entry.status {
                SessionStatus::Opening { .. } => {
                    entry.buffer.push((kind, update));
                    if entry.buffer.len() > self.host.config.early_update_limit {
                        // A very long replay: open the session now rather than buffer without bound.
                        self.open_session_now(&key, None, true).await;
                    }
                }
                SessionStatus::Open => {
                    let turn = entry.active_turn.or(entry.orphan_turn);
                    let replay = entry.replaying;
                    if let Some(text) = &entry.turn_text
                        && let Ok(mut t) = text.lock()
                    {
                        t.add_chunk(&kind, &update);
                    }
                    if let Ok(mut v) = entry.view.lock() {
                        v.apply_update(&kind, &update);
                    }
                    let coalesce = (self.host.config.coalesce_tool_call_updates
                        && &*kind == "tool_call_update")
                        .then(|| tool_call_id(&update))
                        .flatten();
                    // The update of the line being handled: its recorded line holds the data.
                    let line = self.recorded_line.take();
                    self.emit_from_line(
                        self.event(EventKind::SessionUpdate, update)
                            .session(Some(key))
                            .turn(turn)
                            .replay(replay)
                            .coalesce(coalesce),
                        line,
                    );
                }
            }
            return;
        }
        if self.pending_new > 0 {
            if self.early.len() < self.host.config.early_update_limit {
                // Probably the session a session/new in flight is about to name.
                self.early.push((key, kind, update));
                return;
            }
            // Too many to hold: deliver the held ones first, so that nothing overtakes them.
            for (session, _, held) in std::mem::take(&mut self.early) {
                self.emit(
                    self.event(EventKind::SessionUpdate, held)
                        .session(Some(session)),
                )
                .await;
            }
        }
        // An update for a session we do not know: still delivered (forward compatible).
        self.emit(
            self.event(EventKind::SessionUpdate, update)
                .session(Some(key)),
        )
        .await;
    }

    pub(super) async fn on_notification(
        &mut self,
        method: Box<str>,
        params: Option<Box<RawValue>>,
    ) {
        match &*method {
            "$/cancel_request" => {
                let target = params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                    .and_then(|v| v.get("requestId").cloned());
                let Some(target) = target else { return };
                let found = self
                    .perms
                    .iter()
                    .find(|(_, p)| p.raw_id.to_value() == target)
                    .map(|(&id, _)| id);
                if found.is_none() && self.withdraw_served(&target).await {
                    return;
                }
                if found.is_none() && self.withdraw_elicitation(&target).await {
                    return;
                }
                if let Some(perm) = found {
                    // Exactly one response: -32800 for the withdrawn request.
                    if let Some(entry) = self.perms.get(&perm) {
                        let raw_id = entry.raw_id.clone();
                        self.respond_error(&raw_id, codes::REQUEST_CANCELLED, "request cancelled")
                            .await;
                    }
                    self.finish_permission(perm, None, DecidedBy::AgentCancelled)
                        .await;
                }
                // Requests we answer synchronously are already answered: nothing to do.
            }
            m if m.starts_with("$/") => {} // optional protocol notifications may be ignored
            "elicitation/complete" if self.host.config.elicitation.modes().url => {
                self.on_elicitation_complete(params.as_deref()).await;
            }
            _ => {
                let params = params_value(params.as_deref());
                let data = serde_json::json!({ "method": &*method, "params": params });
                let session = data["params"]
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(Arc::<str>::from);
                self.emit(
                    self.event(EventKind::ExtNotification, raw_json(&data))
                        .session(session),
                )
                .await;
            }
        }
    }

    pub(super) async fn on_request(
        &mut self,
        id: RawId,
        method: Box<str>,
        params: Option<Box<RawValue>>,
    ) {
        if self.request_id_pending(&id) {
            self.protocol_error(
                "duplicate_request_id",
                format!(
                    "agent reused request id {} while it is still pending",
                    id.json()
                ),
                serde_json::json!({ "id": id.to_value() }),
            )
            .await;
            return;
        }
        let limit = self.host.config.max_pending_agent_requests;
        if self.perms.len() + self.elicits.len() + self.served.len() >= limit {
            // Bounded against a flood: no entry, no task, no decider call for this one.
            self.respond_error(
                &id,
                codes::INTERNAL_ERROR,
                &format!("too many pending requests (limit {limit}); retry later"),
            )
            .await;
            if !self.inbound_overflow {
                self.inbound_overflow = true;
                self.protocol_error(
                    "too_many_requests",
                    format!("agent has {limit} requests pending; refusing more until some finish"),
                    serde_json::json!({ "limit": limit }),
                )
                .await;
            }
            return;
        }
        self.inbound_overflow = false;
        match &*method {
            "session/request_permission" => self.on_permission_request(id, params).await,
            "elicitation/create" if self.host.config.elicitation.modes().any() => {
                let params = params_value(params.as_deref());
                self.on_elicitation_request(id, params).await;
            }
            // v2 has no client fs/terminal methods: not served, whatever v1 would offer.
            m if self.caps.serves(m) && !self.is_v2() => {
                self.on_service_request(id, method, params).await
            }
            m if m.starts_with('_') && self.host.config.ext.handler().is_some() => {
                let params = params_value(params.as_deref());
                self.on_ext_request(id, method, params);
            }
            _ => {
                self.respond_error(
                    &id,
                    codes::METHOD_NOT_FOUND,
                    &format!("method not found: {method}"),
                )
                .await;
            }
        }
    }
}
