//! The actor's side of `elicitation/create` and `elicitation/complete` (see crate::elicitation
//! for the rules). Mirrors the permission flow: register, report, ask the embedder from a task
//! of its own (never awaited here), answer exactly once.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol_schema::v1::{
    CreateElicitationRequest, ElicitationMode, ElicitationSchema, ElicitationScope,
};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::time::delay_queue;

use super::io::Ticket;
use super::permission::slot_or_gone;
use super::receipts::{ParkedEvent, Slot};
use super::{Actor, Completion, Timer, params_value, raw_json};
use crate::elicitation::{
    ElicitationAnswer, ElicitationHandler, ElicitationKind, ElicitationRequest, field_names,
    validate_content,
};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::permission::{DecidedBy, Settled};
use crate::wire::message::{RawId, codes};

/// URL elicitation ids remembered for `elicitation/complete` (per agent).
const URL_IDS: usize = 1024;

#[derive(Debug)]
pub(super) struct ElicitEntry {
    pub raw_id: RawId,
    session: Option<Arc<str>>,
    turn: Option<u64>,
    /// Form mode: what accepted content is checked against.
    schema: Option<ElicitationSchema>,
    /// URL mode: its `elicitationId` (its `elicitation/complete` is reported only if accepted).
    url_id: Option<String>,
    settled: watch::Sender<bool>,
    decider: Option<tokio::task::AbortHandle>,
    pub timer: Option<delay_queue::Key>,
}

impl ElicitEntry {
    pub(super) fn session(&self) -> Option<&Arc<str>> {
        self.session.as_ref()
    }
}

impl Actor {
    pub(super) async fn on_elicitation_request(&mut self, id: RawId, params: Value) {
        let modes = self.host.config.elicitation.modes();
        let refuse = |why: String| (codes::INVALID_PARAMS, why);
        // The agent's schema JSON is reported verbatim; the parsed one checks the answers.
        let raw_schema = params
            .get("requestedSchema")
            .cloned()
            .unwrap_or(Value::Null);
        let parsed = serde_json::from_value::<CreateElicitationRequest>(params)
            .map_err(|e| refuse(format!("invalid elicitation/create params: {e}")))
            .and_then(|req| {
                let (kind, schema, scope) = match &req.mode {
                    ElicitationMode::Form(f) if modes.form => {
                        let kind = ElicitationKind::Form {
                            requested_schema: raw_schema,
                        };
                        (kind, Some(f.requested_schema.clone()), f.scope.clone())
                    }
                    ElicitationMode::Url(u) if modes.url => {
                        let kind = ElicitationKind::Url {
                            elicitation_id: u.elicitation_id.0.to_string(),
                            url: u.url.clone(),
                        };
                        (kind, None, u.scope.clone())
                    }
                    ElicitationMode::Form(_) => {
                        return Err(refuse("client does not support form elicitation".into()));
                    }
                    ElicitationMode::Url(_) => {
                        return Err(refuse("client does not support url elicitation".into()));
                    }
                    _ => return Err(refuse("unknown elicitation mode".into())),
                };
                Ok((req.message, kind, schema, scope))
            });
        let (message, kind, schema, scope) = match parsed {
            Ok(p) => p,
            Err((code, why)) => {
                self.respond_error(&id, code, &why).await;
                self.protocol_error(
                    "invalid_params",
                    format!("{why}; answered -32602"),
                    serde_json::json!({ "id": id.to_value(), "method": "elicitation/create" }),
                )
                .await;
                return;
            }
        };
        // A session scope must name one of this host's sessions. A request scope is put to the
        // embedder either way (an agent may scope to a request the host did not start, as the
        // spec's reference test agent does during a prompt), marked `scopeKnown: false` when it
        // names none of the host's requests in flight; the same fail-closed rules apply.
        let (session, tool_call_id, scope_request_id) = match &scope {
            ElicitationScope::Session(s) => {
                let session: Arc<str> = Arc::from(&*s.session_id.0);
                (
                    Some(session),
                    s.tool_call_id.as_ref().map(|t| t.0.to_string()),
                    None,
                )
            }
            ElicitationScope::Request(r) => {
                let v = serde_json::to_value(&r.request_id).unwrap_or(Value::Null);
                (None, None, Some(v))
            }
            _ => (None, None, None),
        };
        let scope_known = match (&session, &scope_request_id) {
            (Some(s), _) => {
                if !self.sessions.contains_key(s) {
                    let why = "elicitation/create for an unknown session";
                    self.respond_error(&id, codes::INVALID_PARAMS, why).await;
                    self.protocol_error(
                        "unknown_session",
                        format!("{why}; answered -32602"),
                        serde_json::json!({ "id": id.to_value(), "method": "elicitation/create" }),
                    )
                    .await;
                    return;
                }
                true
            }
            (None, Some(r)) => r.as_u64().is_some_and(|n| self.pending.contains_key(&n)),
            (None, None) => {
                let why = "elicitation/create with neither a session nor a request scope";
                self.respond_error(&id, codes::INVALID_PARAMS, why).await;
                self.protocol_error(
                    "invalid_params",
                    format!("{why}; answered -32602"),
                    serde_json::json!({ "id": id.to_value(), "method": "elicitation/create" }),
                )
                .await;
                return;
            }
        };
        let (turn, cancelling) = match session.as_ref().and_then(|s| self.sessions.get(s)) {
            Some(entry) => match (entry.active_turn, entry.orphan_turn) {
                (None, Some(orphan)) => (Some(orphan), true),
                (active, _) => (active, entry.cancelling),
            },
            None => (None, false),
        };
        let url_id = match &kind {
            ElicitationKind::Url { elicitation_id, .. } => Some(elicitation_id.clone()),
            ElicitationKind::Form { .. } => None,
        };
        let eid = self.host.next_elicitation.fetch_add(1, Ordering::Relaxed) + 1;
        let (settled_tx, settled) = Settled::new();
        let request = ElicitationRequest {
            request_id: eid,
            agent: self.agent,
            session_id: session.as_deref().map(str::to_owned),
            tool_call_id,
            scope_request_id,
            scope_known,
            turn,
            message,
            kind,
            settled,
        };
        self.elicits.insert(
            eid,
            ElicitEntry {
                raw_id: id,
                session: session.clone(),
                turn,
                schema,
                url_id,
                settled: settled_tx,
                decider: None,
                timer: None,
            },
        );
        self.host.note_elicitation(eid, self.agent, false);
        let data = serde_json::to_value(&request).unwrap_or(Value::Null);
        self.emit(
            self.event(EventKind::ElicitationRequested, raw_json(&data))
                .session(session)
                .turn(turn),
        )
        .await;
        if cancelling {
            self.resolve_elicitation(eid, ElicitationAnswer::Cancel, DecidedBy::Cancelled, None)
                .await;
            return;
        }
        if let ElicitationHandler::Decider { decider, .. } = &self.host.config.elicitation {
            let decider = decider.clone();
            let tx = self.done_tx.clone();
            // The embedder's code: a panic in `decide` or in its future answers `cancel`.
            let task = tokio::spawn(async move {
                let answer =
                    super::permission::guarded(move || decider.decide(request), "elicitation")
                        .await;
                let _ = tx.send(Completion::ElicitationAnswer { eid, answer });
            });
            if let Some(entry) = self.elicits.get_mut(&eid) {
                entry.decider = Some(task.abort_handle());
            }
        }
        let key = self.timers.insert(
            Timer::Elicitation(eid),
            self.host.config.elicitation_timeout,
        );
        if let Some(entry) = self.elicits.get_mut(&eid) {
            entry.timer = Some(key);
        } else {
            self.timers.try_remove(&key);
        }
    }

    /// An answer from the embedder (decider or `respond_elicitation`). First answer wins; an
    /// invalid one answers `cancel` (and the caller of `respond_elicitation` gets the reason).
    pub(super) async fn elicitation_answer(
        &mut self,
        eid: u64,
        answer: std::result::Result<ElicitationAnswer, String>,
    ) -> Result<Slot> {
        let Some(entry) = self.elicits.get(&eid) else {
            let known = self.host.elicitation_state(eid);
            return Err(match known {
                Some((agent, true)) if agent == self.agent => Error::AlreadyResolved(format!(
                    "elicitation request {eid} was already resolved"
                )),
                _ => Error::NotFound(format!("no pending elicitation request {eid}")),
            });
        };
        match answer {
            Ok(ElicitationAnswer::Accept(content)) => {
                let checked = match &entry.schema {
                    Some(schema) => validate_content(schema, content.as_ref()).map(|()| content),
                    // URL mode: `accept` is consent only; content has no meaning there.
                    None => Ok(None),
                };
                match checked {
                    Ok(content) => {
                        let answer = ElicitationAnswer::Accept(content);
                        let slot = self
                            .resolve_elicitation(eid, answer, DecidedBy::Host, None)
                            .await;
                        Ok(slot_or_gone(slot, eid))
                    }
                    Err(why) => {
                        self.host.config.log.emit(
                            crate::log::Level::Warn,
                            "elicitation",
                            Some(self.agent),
                            None,
                            || format!("elicitation {eid} cancelled: {why}"),
                        );
                        let note = Some(why.clone());
                        self.resolve_elicitation(
                            eid,
                            ElicitationAnswer::Cancel,
                            DecidedBy::InvalidAnswer,
                            note,
                        )
                        .await;
                        Err(Error::InvalidArgument(format!(
                            "{why}; the elicitation was cancelled"
                        )))
                    }
                }
            }
            Ok(answer) => {
                let slot = self
                    .resolve_elicitation(eid, answer, DecidedBy::Host, None)
                    .await;
                Ok(slot_or_gone(slot, eid))
            }
            Err(reason) => {
                self.host.config.log.emit(
                    crate::log::Level::Warn,
                    "elicitation",
                    Some(self.agent),
                    None,
                    || format!("elicitation {eid} cancelled: the handler failed: {reason}"),
                );
                let slot = self
                    .resolve_elicitation(
                        eid,
                        ElicitationAnswer::Cancel,
                        DecidedBy::InvalidAnswer,
                        Some(reason),
                    )
                    .await;
                Ok(slot_or_gone(slot, eid))
            }
        }
    }

    /// Answer the agent and report it (exactly once per request).
    pub(super) async fn resolve_elicitation(
        &mut self,
        eid: u64,
        answer: ElicitationAnswer,
        by: DecidedBy,
        note: Option<String>,
    ) -> Option<Slot> {
        let entry = self.elicits.get(&eid)?;
        let raw_id = entry.raw_id.clone();
        let ticket = self.respond_result(&raw_id, &answer.to_response()).await;
        self.finish_elicitation_sent(eid, Some(&answer), by, note, Some(ticket))
            .await
    }

    /// Forget the request and emit `elicitation_resolved`. `answer` is `None` when the agent
    /// withdrew it (no answer is sent then, or -32800 already was).
    pub(super) async fn finish_elicitation(
        &mut self,
        eid: u64,
        answer: Option<&ElicitationAnswer>,
        by: DecidedBy,
        note: Option<String>,
    ) {
        self.finish_elicitation_sent(eid, answer, by, note, None)
            .await;
    }

    /// As [`Actor::finish_elicitation`], with the receipt of the answer sent (`ticket`).
    async fn finish_elicitation_sent(
        &mut self,
        eid: u64,
        answer: Option<&ElicitationAnswer>,
        by: DecidedBy,
        note: Option<String>,
        ticket: Option<Ticket>,
    ) -> Option<Slot> {
        let entry = self.elicits.remove(&eid)?;
        if let Some(key) = &entry.timer {
            self.timers.try_remove(key);
        }
        let _ = entry.settled.send(true);
        if let Some(decider) = &entry.decider {
            decider.abort();
        }
        self.host.note_elicitation(eid, self.agent, true);
        // Only a URL the user consented to can complete (the agent may send
        // `elicitation/complete` later; anything else is an unknown id then).
        if let (Some(id), Some(ElicitationAnswer::Accept(_))) = (&entry.url_id, answer) {
            self.url_elicitations.push_back(id.clone());
            while self.url_elicitations.len() > URL_IDS {
                self.url_elicitations.pop_front();
            }
        }
        let mut data = serde_json::json!({
            "requestId": eid,
            "sessionId": entry.session.as_deref(),
            "action": answer.map(ElicitationAnswer::action),
            "decidedBy": by,
        });
        if let Some(fields) = answer.and_then(field_names) {
            data["fields"] = Value::from(fields);
        }
        if let Some(note) = note {
            data["reason"] = Value::from(note);
        }
        let known = ticket.as_ref().and_then(|t| self.receipt_now(t));
        if let (Some(ticket), None) = (ticket, known.as_ref()) {
            // Its line waits in the queue: the event waits for the receipt.
            let event = match data {
                Value::Object(data) if self.host.bus.enabled() => Some(ParkedEvent {
                    kind: EventKind::ElicitationResolved,
                    data,
                    session: entry.session.clone(),
                    turn: entry.turn,
                }),
                _ => None,
            };
            return Some(self.park_receipt(ticket, event));
        }
        if let Some(r) = &known {
            data["receipt"] = r.to_json();
        }
        self.emit(
            self.event(EventKind::ElicitationResolved, raw_json(&data))
                .session(entry.session.clone())
                .turn(entry.turn),
        )
        .await;
        known.map(Slot::Known)
    }

    /// Every pending elicitation of `session` (all of them for `None`) answered `cancel`.
    pub(super) async fn cancel_elicitations(&mut self, session: Option<&Arc<str>>, by: DecidedBy) {
        let mut ids: Vec<u64> = self
            .elicits
            .iter()
            .filter(|(_, e)| session.is_none() || e.session() == session)
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        for eid in ids {
            self.resolve_elicitation(eid, ElicitationAnswer::Cancel, by, None)
                .await;
        }
    }

    /// `$/cancel_request` naming one of our pending elicitations: -32800, reported; true if so.
    pub(super) async fn withdraw_elicitation(&mut self, target: &Value) -> bool {
        let found = self
            .elicits
            .iter()
            .find(|(_, e)| e.raw_id.to_value() == *target)
            .map(|(&id, e)| (id, e.raw_id.clone()));
        let Some((eid, raw_id)) = found else {
            return false;
        };
        self.respond_error(&raw_id, codes::REQUEST_CANCELLED, "request cancelled")
            .await;
        self.finish_elicitation(eid, None, DecidedBy::AgentCancelled, None)
            .await;
        true
    }

    /// `elicitation/complete {elicitationId}`: reported for a URL elicitation of this agent;
    /// unknown ids are ignored (the spec).
    pub(super) async fn on_elicitation_complete(
        &mut self,
        params: Option<&serde_json::value::RawValue>,
    ) {
        let params = params_value(params);
        let Some(id) = params.get("elicitationId").and_then(Value::as_str) else {
            return;
        };
        let Some(pos) = self.url_elicitations.iter().position(|x| x == id) else {
            tracing::debug!(
                agent = self.agent,
                id,
                "elicitation/complete for an unknown id"
            );
            return;
        };
        self.url_elicitations.remove(pos);
        let data = serde_json::json!({ "elicitationId": id });
        self.emit(self.event(EventKind::ElicitationCompleted, raw_json(&data)))
            .await;
    }
}
