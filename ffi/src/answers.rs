//! The requests the embedder answers by id, `acph_permission_respond` and
//! `acph_elicitation_respond`: which ones are pending (learnt from their events as they are
//! pulled), which were answered, and the answers handed to the core.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use crate::calls::Primary;
use crate::host::State;
use crate::status::{Failure, acph_status};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The permission and elicitation requests this host announced.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    perms: Mutex<Perms>,
    elicits: Mutex<Elicits>,
}

#[derive(Debug, Default)]
struct Perms {
    /// Requests announced by `permission_requested` and not yet resolved.
    pending: HashMap<u64, PendingPermission>,
    /// The highest request id announced so far (ids increase per host).
    max_seen: u64,
}

#[derive(Debug)]
struct PendingPermission {
    options: Vec<String>,
    answered: bool,
}

/// Elicitation requests announced by `elicitation_requested` (id → answered?).
#[derive(Debug, Default)]
struct Elicits {
    pending: HashMap<u64, bool>,
    max_seen: u64,
}

impl Answers {
    /// A `permission_requested` event was pulled: its request can be answered. Returns its id.
    pub(crate) fn permission_requested(&self, data: &Value) -> u64 {
        let request = data["requestId"].as_u64().unwrap_or(0);
        let options = data["options"]
            .as_array()
            .map(|o| {
                o.iter()
                    .filter_map(|x| x["optionId"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut p = lock(&self.perms);
        p.max_seen = p.max_seen.max(request);
        p.pending.insert(
            request,
            PendingPermission {
                options,
                answered: false,
            },
        );
        request
    }

    pub(crate) fn permission_resolved(&self, request: u64) {
        let mut p = lock(&self.perms);
        p.max_seen = p.max_seen.max(request);
        p.pending.remove(&request);
    }

    pub(crate) fn elicitation_requested(&self, request: u64) {
        let mut e = lock(&self.elicits);
        e.max_seen = e.max_seen.max(request);
        e.pending.insert(request, false);
    }

    pub(crate) fn elicitation_resolved(&self, request: u64) {
        let mut e = lock(&self.elicits);
        e.max_seen = e.max_seen.max(request);
        e.pending.remove(&request);
    }

    pub(crate) fn clear(&self) {
        *lock(&self.perms) = Perms::default();
        *lock(&self.elicits) = Elicits::default();
    }

    /// Mark an elicitation request answered (unknown, resolved and answered ones are refused).
    fn claim_elicitation(&self, id: u64) -> Result<(), Failure> {
        let mut e = lock(&self.elicits);
        let max_seen = e.max_seen;
        match e.pending.get_mut(&id) {
            None if id != 0 && id <= max_seen => Err(already(format!(
                "elicitation request {id} was already resolved"
            ))),
            None => Err(Failure::unknown_request("elicitation request", id)),
            Some(true) => Err(already(format!(
                "elicitation request {id} was already answered"
            ))),
            Some(answered) => {
                *answered = true;
                Ok(())
            }
        }
    }

    /// Mark a permission request answered; `Ok(false)` when `option` was not offered (the
    /// request is then denied).
    fn claim_permission(&self, id: u64, option: Option<&str>) -> Result<bool, Failure> {
        let mut p = lock(&self.perms);
        let max_seen = p.max_seen;
        match p.pending.get_mut(&id) {
            None if id != 0 && id <= max_seen => Err(already(format!(
                "permission request {id} was already resolved"
            ))),
            None => Err(Failure::unknown_request("permission request", id)),
            Some(e) if e.answered => Err(already(format!(
                "permission request {id} was already answered"
            ))),
            Some(e) => {
                e.answered = true;
                Ok(option.is_none_or(|o| e.options.iter().any(|x| x == o)))
            }
        }
    }
}

fn already(message: String) -> Failure {
    Failure::new(acph_status::ACPH_STATUS_ALREADY_RESOLVED, message)
}

/// `failure` refused an answer, leaving the request `state` (`pending` or `unavailable`): its
/// `data.receipt` is the answer's `rejected` receipt, as the core's errors carry it.
fn rejected(failure: Failure, state: acp_host::RequestState) -> Failure {
    let receipt = serde_json::json!({
        "status": "rejected",
        "state": state,
        "code": failure.kind,
        "message": failure.message,
    });
    let mut data = match *failure.data.clone() {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    data.insert("receipt".into(), receipt);
    failure.with_data(Value::Object(data))
}

impl State {
    /// `acph_elicitation_respond`: checked here as far as the tables allow (unknown, resolved,
    /// answered, malformed answer), then handed to the core; content that does not match the
    /// requested schema is answered `cancel` and reported by `elicitation_resolved`.
    pub(crate) fn respond_elicitation(
        self: &Arc<Self>,
        id: u64,
        answer: &str,
    ) -> Result<(), Failure> {
        self.check_open()?;
        let value: Value = serde_json::from_str(answer).map_err(|e| {
            Failure::new(
                acph_status::ACPH_STATUS_INVALID_JSON,
                format!("answer_json: not valid JSON: {e}"),
            )
        })?;
        let answer = acp_host::ElicitationAnswer::from_json(&value)
            .map_err(|e| Failure::invalid(format!("answer_json: {e}")))?;
        self.answers.claim_elicitation(id)?;
        let host = self.host.clone();
        self.rt.spawn(async move {
            // The outcome (and who won a race with a timeout or a cancel) is reported by the
            // `elicitation_resolved` event.
            let _ = host.respond_elicitation(id, answer).await;
        });
        Ok(())
    }

    /// `acph_elicitation_answer`: as `acph_elicitation_respond`, with a call whose result is
    /// the answer's receipt. An answer that cannot be read leaves the request as it was
    /// (`pending` while it waits); every failure carries `data.receipt`.
    pub(crate) fn answer_elicitation(
        self: &Arc<Self>,
        id: u64,
        answer: &str,
    ) -> Result<u64, Failure> {
        let state = || self.host.elicitation_request_state(id);
        self.check_open()?;
        let value: Value = serde_json::from_str(answer).map_err(|e| {
            let f = Failure::new(
                acph_status::ACPH_STATUS_INVALID_JSON,
                format!("answer_json: not valid JSON: {e}"),
            );
            rejected(f, state())
        })?;
        let answer = acp_host::ElicitationAnswer::from_json(&value)
            .map_err(|e| rejected(Failure::invalid(format!("answer_json: {e}")), state()))?;
        self.answers
            .claim_elicitation(id)
            .map_err(|f| rejected(f, acp_host::RequestState::Unavailable))?;
        let host = self.host.clone();
        self.start_call(0, Primary::Nothing, async move {
            host.respond_elicitation(id, answer)
                .await
                .map(|r| r.to_json())
        })
    }

    /// `acph_permission_answer`: as `acph_permission_respond`, with a call whose result is the
    /// answer's receipt; an option that was not offered fails the call (`invalid_argument`, the
    /// request denied) as the core decides.
    pub(crate) fn answer_permission(
        self: &Arc<Self>,
        id: u64,
        option: Option<&str>,
    ) -> Result<u64, Failure> {
        self.check_open()?;
        self.answers
            .claim_permission(id, option)
            .map_err(|f| rejected(f, acp_host::RequestState::Unavailable))?;
        let host = self.host.clone();
        let answer = option.map(str::to_owned);
        self.start_call(0, Primary::Nothing, async move {
            host.respond_permission(id, answer)
                .await
                .map(|r| r.to_json())
        })
    }

    /// `acph_permission_respond`.
    pub(crate) fn respond_permission(
        self: &Arc<Self>,
        id: u64,
        option: Option<&str>,
    ) -> Result<(), Failure> {
        self.check_open()?;
        let valid = self.answers.claim_permission(id, option)?;
        let host = self.host.clone();
        let answer = option.map(str::to_owned);
        self.rt.spawn(async move {
            // The outcome (and who won a race with a timeout or a cancel) is reported by the
            // `permission_resolved` event.
            let _ = host.respond_permission(id, answer).await;
        });
        if valid {
            Ok(())
        } else {
            Err(Failure::invalid(format!(
                "`{}` is not one of the offered options; the request was denied",
                option.unwrap_or_default()
            )))
        }
    }
}
