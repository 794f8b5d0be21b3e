//! `session/request_permission`: the policy decides what it can inside the actor; anything else
//! goes to the embedder's handler in a task of its own. Answered exactly once, fail-closed.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::value::RawValue;

use super::io::Ticket;
use super::receipts::{ParkedEvent, Slot};
use super::{Actor, Completion, PermEntry, Timer};
use crate::error::{Error, Result};
use crate::events::{EventKind, raw_json};
use crate::permission::policy::{Grants, Verdict};
use crate::permission::{
    DecidedBy, Outcome, PermissionHandler, PermissionOption, PermissionRequest, Settled,
    allow_outcome, deny_outcome, tool_call,
};
use crate::receipt::{Receipt, RequestState};
use crate::wire::message::{self, RawId, codes};

/// Run an embedder's decider: `make` builds its future. A panic while building or polling it
/// becomes an `Err` (the question is then answered the fail-closed way), never reaching the
/// actor.
pub(super) async fn guarded<T, F>(
    make: impl FnOnce() -> F,
    what: &str,
) -> std::result::Result<T, String>
where
    F: std::future::Future<Output = std::result::Result<T, String>>,
{
    let mut make = Some(make);
    let mut fut: Option<std::pin::Pin<Box<F>>> = None;
    std::future::poll_fn(|cx| {
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Some(make) = make.take() {
                fut = Some(Box::pin(make()));
            }
            match fut.as_mut() {
                Some(f) => f.as_mut().poll(cx),
                None => std::task::Poll::Ready(Err(format!("{what} decider is gone"))),
            }
        }));
        match step {
            Ok(poll) => poll,
            Err(payload) => {
                fut = None;
                let why = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                std::task::Poll::Ready(Err(format!("{what} decider panicked: {why}")))
            }
        }
    })
    .await
}

/// `permission_requested`'s payload, serialized straight from borrowed fields (no copy of the
/// tool call).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PermissionRequestedData<'a> {
    request_id: u64,
    session_id: &'a str,
    tool_call: &'a crate::wire::LazyJson,
    options: &'a [PermissionOption],
}

/// `permission_resolved`'s payload.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PermissionResolvedData<'a> {
    request_id: u64,
    session_id: &'a str,
    decided_by: DecidedBy,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    outcome: Option<&'a Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    option_kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    /// The receipt of the answer sent (none when no answer was sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    receipt: Option<&'a Receipt>,
}

/// The result of `session/request_permission`.
#[derive(serde::Serialize)]
struct PermissionResult<'a> {
    outcome: &'a Outcome,
}

/// Poll a future once, with a waker that does nothing: its answer if it has one now. Whoever
/// polls it next registers the waker that counts.
pub(super) fn poll_once<F: std::future::Future + ?Sized>(
    fut: std::pin::Pin<&mut F>,
) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.poll(&mut cx) {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => None,
    }
}

impl Actor {
    pub(super) async fn on_permission_request(&mut self, id: RawId, params: Option<Box<RawValue>>) {
        let params = crate::permission::params::parse(params.as_deref());
        let session = params.session_id.as_deref().map(Arc::<str>::from);
        let options = params.options;
        let Some(session) = session else {
            self.respond_error(
                &id,
                codes::INVALID_PARAMS,
                "session/request_permission needs sessionId",
            )
            .await;
            self.protocol_error(
                "invalid_params",
                "session/request_permission without sessionId; answered -32602".into(),
                serde_json::json!({ "id": id.to_value() }),
            )
            .await;
            return;
        };
        if !self.sessions.contains_key(&session) {
            // Nobody is asked about a session this host never opened (or already closed).
            self.respond_error(
                &id,
                codes::INVALID_PARAMS,
                &format!("unknown session {session}"),
            )
            .await;
            self.protocol_error(
                "unknown_session",
                format!(
                    "session/request_permission for unknown session {session}; answered -32602"
                ),
                serde_json::json!({ "id": id.to_value(), "sessionId": &*session }),
            )
            .await;
            return;
        }
        let perm = self.host.next_permission.fetch_add(1, Ordering::Relaxed) + 1;
        let (turn, cancelling, view) = match self.sessions.get(&session) {
            Some(entry) => match (entry.active_turn, entry.orphan_turn) {
                // A turn the host gave up on: whatever it still asks is cancelled.
                (None, Some(orphan)) => (Some(orphan), true, Some(&entry.view)),
                (active, _) => (active, entry.cancelling, Some(&entry.view)),
            },
            None => (None, false, None),
        };
        // The request's own toolCall wins; fields it omits come from the announced tool call
        // (the request may also arrive before, or without, any tool_call). Kept as its text
        // unless a merge needs the tree: a tree is most of a round trip's allocations.
        let prepared = tool_call::prepare(params.tool_call, |id| {
            let view = view?.lock().ok()?;
            view.tool_call(id).cloned()
        });
        let Ok((tool_call, subject)) = prepared else {
            self.respond_error(
                &id,
                codes::INVALID_PARAMS,
                "session/request_permission: toolCall is not valid JSON",
            )
            .await;
            self.protocol_error(
                "invalid_params",
                "session/request_permission with a toolCall that no JSON tree holds (a lone surrogate, a number out of range); answered -32602".into(),
                serde_json::json!({ "id": id.to_value() }),
            )
            .await;
            return;
        };
        // Decided on what the policy reads; a request is only built for a decider to see.
        let verdict = match cancelling {
            true => None,
            false => Some(self.host.policy.evaluate(&subject)),
        };
        let granted =
            matches!(verdict, Some(Verdict::Ask)) && self.grants.is_granted(&session, &subject);
        let grant_key = if granted { Grants::key(&subject) } else { None };
        self.perms.insert(
            perm,
            PermEntry {
                raw_id: id,
                session: session.clone(),
                turn,
                options,
                settled: None,
                decider: None,
                subject,
                rule: None,
                reason: None,
                timer: None,
            },
        );
        self.host.note_permission(perm, self.agent, false);
        let options = self
            .perms
            .get(&perm)
            .map(|p| &p.options[..])
            .unwrap_or_default();
        // With events off nothing would read it: not even serialized.
        if self.host.bus.enabled() {
            let data = PermissionRequestedData {
                request_id: perm,
                session_id: &session,
                tool_call: &tool_call,
                options,
            };
            let event = self
                .event(EventKind::PermissionRequested, raw_json(&data))
                .session(Some(session.clone()))
                .turn(turn);
            self.emit(event).await;
        }
        // 1. hard-deny rules, 2. allow rules and session grants, 3. the host — fail closed.
        let decided = match verdict {
            None => Some((Outcome::Cancelled, DecidedBy::Cancelled, None)),
            Some(Verdict::Deny { rule }) => {
                Some((deny_outcome(options, false), DecidedBy::Rule, Some(rule)))
            }
            Some(Verdict::Allow { rule }) => {
                let outcome =
                    allow_outcome(options).unwrap_or_else(|| deny_outcome(options, false));
                Some((outcome, DecidedBy::Rule, Some(rule)))
            }
            Some(Verdict::Ask) => match allow_outcome(options) {
                Some(outcome) if granted => Some((outcome, DecidedBy::Grant, grant_key)),
                _ => None,
            },
        };
        if let Some((outcome, by, rule)) = decided {
            self.resolve_permission_with(perm, outcome, by, rule).await;
            return;
        }
        match &self.host.config.permission {
            PermissionHandler::DenyAll => {
                let outcome = deny_outcome(options, false);
                let rule = Some("no permission decider (deny-all)".to_owned());
                self.resolve_permission_with(perm, outcome, DecidedBy::Rule, rule)
                    .await;
                return;
            }
            PermissionHandler::Decider(decider) => {
                let decider = decider.clone();
                let (settled_tx, settled) = Settled::new();
                let request = PermissionRequest {
                    request_id: perm,
                    agent: self.agent,
                    session_id: session.to_string(),
                    turn,
                    tool_call,
                    options: options.to_vec(),
                    settled,
                };
                if let Some(entry) = self.perms.get_mut(&perm) {
                    entry.settled = Some(settled_tx);
                }
                // The decider is the embedder's code: a panic, in `decide` itself or while its
                // future runs, must deny and never reach the actor (`guarded`).
                let mut answer = Box::pin(guarded(move || decider.decide(request), "permission"));
                // A decider that knows at once (a policy in code, a cache, a headless script)
                // is answered in this step: no task and no hop back, which is most of a round
                // trip's cost. Polled once with a no-op waker; a pending future moves to a task
                // of its own (whose polls register the real waker), aborted when the request is
                // resolved otherwise.
                if let Some(answer) = poll_once(answer.as_mut()) {
                    let _ = self.host_answer(perm, answer).await;
                    return;
                }
                let tx = self.done_tx.clone();
                let task = tokio::spawn(async move {
                    let answer = answer.await;
                    let _ = tx.send(Completion::PermissionAnswer { perm, answer });
                });
                if let Some(entry) = self.perms.get_mut(&perm) {
                    entry.decider = Some(task.abort_handle());
                }
            }
            PermissionHandler::Manual => {}
        }
        let timeout = self.host.config.permission_timeout;
        let key = self.timers.insert(Timer::Permission(perm), timeout);
        if let Some(entry) = self.perms.get_mut(&perm) {
            entry.timer = Some(key);
        } else {
            self.timers.try_remove(&key);
        }
    }

    /// An answer from the host (decider or `respond_permission`). First answer wins.
    pub(super) async fn host_answer(
        &mut self,
        perm: u64,
        answer: std::result::Result<Option<String>, String>,
    ) -> Result<Slot> {
        let Some(entry) = self.perms.get(&perm) else {
            let known = self
                .host
                .permissions
                .lock()
                .map(|m| m.get(&perm).copied())
                .unwrap_or(None);
            return Err(match known {
                Some((agent, true)) if agent == self.agent => Error::AlreadyResolved(format!(
                    "permission request {perm} was already resolved"
                )),
                _ => Error::NotFound(format!("no pending permission request {perm}")),
            });
        };
        match answer {
            Ok(Some(option)) if entry.options.iter().any(|o| o.option_id == option) => {
                let always = entry
                    .options
                    .iter()
                    .any(|o| o.option_id == option && o.kind == "allow_always");
                if always {
                    // Remembered for this session only, in memory (docs/PERMISSIONS.md).
                    let (session, subject) = (entry.session.clone(), entry.subject.clone());
                    self.grants.grant(&session, &subject);
                }
                let slot = self
                    .resolve_permission(perm, Outcome::Selected(option), DecidedBy::Host)
                    .await;
                Ok(slot_or_gone(slot, perm))
            }
            Ok(Some(option)) => {
                let offered: Vec<&str> =
                    entry.options.iter().map(|o| o.option_id.as_str()).collect();
                let reason = format!(
                    "the answer `{option}` is not one of the offered option ids ({}); an option's \
                     id is expected, not its name",
                    offered.join(", ")
                );
                self.permission_unusable(perm, reason.clone()).await;
                Err(Error::InvalidArgument(format!(
                    "{reason}; the request was denied"
                )))
            }
            Ok(None) => {
                let outcome = deny_outcome(&entry.options, false);
                let slot = self
                    .resolve_permission(perm, outcome, DecidedBy::Host)
                    .await;
                Ok(slot_or_gone(slot, perm))
            }
            Err(reason) => {
                let slot = self
                    .permission_unusable(perm, format!("the permission handler failed: {reason}"))
                    .await;
                Ok(slot_or_gone(slot, perm))
            }
        }
    }

    /// Deny a request whose host answer cannot be used, saying why in the event and the log.
    async fn permission_unusable(&mut self, perm: u64, reason: String) -> Option<Slot> {
        let entry = self.perms.get_mut(&perm)?;
        let session = entry.session.clone();
        self.host.config.log.emit(
            crate::log::Level::Warn,
            "permission",
            Some(self.agent),
            Some(&session),
            || format!("permission request {perm} denied: {reason}"),
        );
        entry.reason = Some(reason);
        let outcome = deny_outcome(&entry.options, false);
        self.resolve_permission(perm, outcome, DecidedBy::InvalidAnswer)
            .await
    }

    /// Answer the agent and report the resolution (exactly once per request); where the
    /// answer's receipt is.
    pub(super) async fn resolve_permission(
        &mut self,
        perm: u64,
        outcome: Outcome,
        by: DecidedBy,
    ) -> Option<Slot> {
        self.resolve_permission_with(perm, outcome, by, None).await
    }

    pub(super) async fn resolve_permission_with(
        &mut self,
        perm: u64,
        outcome: Outcome,
        by: DecidedBy,
        rule: Option<String>,
    ) -> Option<Slot> {
        let entry = self.perms.get_mut(&perm)?;
        entry.rule = rule;
        let raw_id = entry.raw_id.clone();
        let line = message::result_line_of(&raw_id, &PermissionResult { outcome: &outcome });
        let ticket = self.write_reply(&raw_id, line).await;
        self.finish_permission_sent(perm, Some(outcome), by, Some(ticket))
            .await
    }

    /// Forget a permission request and emit `permission_resolved` (no answer was sent).
    pub(super) async fn finish_permission(
        &mut self,
        perm: u64,
        outcome: Option<Outcome>,
        by: DecidedBy,
    ) {
        self.finish_permission_sent(perm, outcome, by, None).await;
    }

    /// Forget a permission request and emit `permission_resolved`, with the receipt of the
    /// answer sent (`ticket`): at once when it is known, else once it is (`receipts.rs`).
    async fn finish_permission_sent(
        &mut self,
        perm: u64,
        outcome: Option<Outcome>,
        by: DecidedBy,
        ticket: Option<Ticket>,
    ) -> Option<Slot> {
        let entry = self.perms.remove(&perm)?;
        if let Some(key) = &entry.timer {
            self.timers.try_remove(key);
        }
        if let Some(settled) = &entry.settled {
            let _ = settled.send(true);
        }
        if let Some(decider) = &entry.decider {
            decider.abort();
        }
        self.host.note_permission(perm, self.agent, true);
        let option_kind = match &outcome {
            Some(Outcome::Selected(id)) => entry
                .options
                .iter()
                .find(|x| &x.option_id == id)
                .map(|o| o.kind.as_str()),
            _ => None,
        };
        let known = ticket.as_ref().and_then(|t| self.receipt_now(t));
        let mut data = PermissionResolvedData {
            request_id: perm,
            session_id: &entry.session,
            decided_by: by,
            rule: entry.rule.as_deref(),
            reason: entry.reason.as_deref(),
            outcome: outcome.as_ref(),
            option_kind,
            receipt: known.as_ref(),
        };
        if let (Some(ticket), None) = (ticket.as_ref(), known.as_ref()) {
            // Its line waits in the queue: the event waits for the receipt.
            let event = match self.host.bus.enabled() {
                true => match serde_json::to_value(&data) {
                    Ok(serde_json::Value::Object(data)) => Some(ParkedEvent {
                        kind: EventKind::PermissionResolved,
                        data,
                        session: Some(entry.session.clone()),
                        turn: entry.turn,
                    }),
                    _ => None,
                },
                false => None,
            };
            return Some(self.park_receipt(ticket.clone(), event));
        }
        if self.host.bus.enabled() {
            data.receipt = known.as_ref();
            self.emit(
                self.event(EventKind::PermissionResolved, raw_json(&data))
                    .session(Some(entry.session.clone()))
                    .turn(entry.turn),
            )
            .await;
        }
        known.map(Slot::Known)
    }
}

/// The slot of an answer that resolved its request (`None`: it was already gone).
pub(super) fn slot_or_gone(slot: Option<Slot>, id: u64) -> Slot {
    slot.unwrap_or_else(|| {
        Slot::Known(Receipt::rejected(
            RequestState::Unavailable,
            "already_resolved",
            format!("request {id} was already resolved"),
        ))
    })
}
