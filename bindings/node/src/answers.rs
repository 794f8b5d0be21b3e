//! Requests the embedder answers through the facade's dispatchers: permission requests and
//! elicitations. Both go through `ask`, the one place that hands a request to JS, takes its answer
//! by token and tells JS when a request it was handed no longer needs one. (The fs, terminal,
//! extension and terminal-login requests are answered by a Promise instead: services.rs.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use acp_host::elicitation::ElicitationFuture;
use acp_host::permission::Settled;
use acp_host::{
    ElicitationAnswer, ElicitationDecider, ElicitationRequest, PermissionDecider, PermissionRequest,
};
use napi::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::oneshot;

/// `(message) => void`: a dispatcher of the facade (`onPermission`'s or `onElicitation`'s). A
/// message is either a request with a `token` (the facade answers with `permissionDecision` or
/// `elicitationDecision(token, …)`, a direct call: no Promise crosses the boundary, which saves a
/// round of callbacks per request) or `{"settled": requestId}` (no newline) once a request it was
/// handed was settled by anyone else. One function for both keeps them in order: a request is
/// always delivered before its `settled` notice (two functions are two queues, which the event
/// loop may drain in either order).
pub(crate) type Dispatch = ThreadsafeFunction<String, (), String, Status, false, true>;

/// The facade's answer: its text (`None`: no answer, e.g. a denial), or the handler's failure.
type Answer = std::result::Result<Option<String>, String>;

/// Pending answers, by token (host-independent: tokens are process-wide).
fn pending() -> &'static Mutex<HashMap<u32, oneshot::Sender<Answer>>> {
    static MAP: OnceLock<Mutex<HashMap<u32, oneshot::Sender<Answer>>>> = OnceLock::new();
    MAP.get_or_init(|| Mutex::new(HashMap::new()))
}

fn open() -> (u32, oneshot::Receiver<Answer>) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let token = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    let (tx, rx) = oneshot::channel();
    if let Ok(mut m) = pending().lock() {
        m.insert(token, tx);
    }
    (token, rx)
}

fn take(token: u32) -> Option<oneshot::Sender<Answer>> {
    pending().lock().ok()?.remove(&token)
}

/// A facade's answer to the request of `token`; an unknown or stale token is ignored (the
/// request was already settled).
fn answer(token: u32, answer: Answer) {
    if let Some(tx) = take(token) {
        let _ = tx.send(answer);
    }
}

/// A request handed to JS: dropping it forgets its token (a late answer is ignored) and, unless
/// JS answered, tells JS the request was settled.
struct Handed {
    token: u32,
    request_id: u64,
    /// The dispatcher that was handed the request; `None` until it was, and once JS answered.
    notify: Option<Arc<Dispatch>>,
}

impl Drop for Handed {
    fn drop(&mut self) {
        take(self.token);
        if let Some(notify) = self.notify.take() {
            notify.call(
                format!("{{\"settled\":{}}}", self.request_id),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }
    }
}

/// Hand the request `message(token)` to `dispatch` and wait for the facade's answer. Unless JS
/// answered, it is told `{"settled": id}` once the request needs no answer any more: the core
/// settled it (timeout, cancel, an answer from elsewhere, agent exit, the host going) or dropped
/// this future (it aborts the decider's task when it settles the request).
async fn ask(
    dispatch: Arc<Dispatch>,
    what: &str,
    request_id: u64,
    mut settled: Settled,
    message: impl FnOnce(u32) -> serde_json::Result<String>,
) -> Answer {
    let (token, rx) = open();
    let mut handed = Handed {
        token,
        request_id,
        notify: None,
    };
    let message = message(token).map_err(|e| e.to_string())?;
    let status = dispatch.call(message, ThreadsafeFunctionCallMode::NonBlocking);
    if status != Status::Ok {
        return Err(format!("{what} handler unavailable: {status}"));
    }
    handed.notify = Some(dispatch);
    tokio::select! {
        // An answer that came with the settling wins: JS already forgot the request.
        biased;
        answer = rx => {
            handed.notify = None;
            answer.map_err(|_| format!("{what} handler went away")).and_then(|a| a)
        }
        () = settled.wait() => Err(format!("{what} request was settled")),
    }
}

pub(crate) struct JsDecider {
    pub(crate) decide: Arc<Dispatch>,
}

impl PermissionDecider for JsDecider {
    fn decide(&self, request: PermissionRequest) -> acp_host::permission::DecisionFuture {
        let decide = self.decide.clone();
        Box::pin(async move {
            let (id, settled) = (request.request_id, request.settled.clone());
            ask(decide, "permission", id, settled, |token| {
                handed_request(token, &request)
            })
            .await
        })
    }
}

/// What the facade's dispatcher is handed: the request's fields but the tool call plus its
/// `token` as one JSON object, a newline, and the tool call's JSON text as the agent sent it
/// (JSON text holds no raw newline). The facade parses the tool call only if the handler reads
/// it.
fn handed_request(token: u32, request: &PermissionRequest) -> serde_json::Result<String> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Handed<'a> {
        token: u32,
        request_id: u64,
        agent: u64,
        session_id: &'a str,
        turn: Option<u64>,
        options: &'a [acp_host::PermissionOption],
    }
    let tool_call = request.tool_call.json();
    let mut out = Vec::with_capacity(256 + tool_call.len());
    serde_json::to_writer(
        &mut out,
        &Handed {
            token,
            request_id: request.request_id,
            agent: request.agent,
            session_id: &request.session_id,
            turn: request.turn,
            options: &request.options,
        },
    )?;
    out.push(b'\n');
    out.extend_from_slice(tool_call.as_bytes());
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// The facade's answer to a permission request it was handed: the chosen option id (`null`
/// denies), or `error` when the handler failed (denies, `decidedBy: invalid_answer`). An unknown or
/// stale token is ignored (the request was already settled).
#[napi]
pub fn permission_decision(token: u32, option_id: Option<String>, error: Option<String>) {
    // The core adds "the permission handler failed: " to an error.
    answer(token, error.map_or(Ok(option_id), Err));
}

pub(crate) struct JsElicitor {
    pub(crate) call: Arc<Dispatch>,
}

impl ElicitationDecider for JsElicitor {
    fn decide(&self, request: ElicitationRequest) -> ElicitationFuture {
        let call = self.call.clone();
        Box::pin(async move {
            let (id, settled) = (request.request_id, request.settled.clone());
            let answer = ask(call, "elicitation", id, settled, |token| {
                // `{"token":N,` + the request's fields.
                let json = serde_json::to_string(&request)?;
                Ok(format!(
                    "{{\"token\":{token},{}",
                    json.get(1..).unwrap_or("}")
                ))
            })
            .await;
            let text = answer?.ok_or_else(|| "onElicitation gave no answer".to_owned())?;
            parse_answer(&text)
                .map_err(|e| format!("onElicitation returned an invalid answer: {e}"))
        })
    }
}

/// An answer in the ACP response shape, `{"action": "accept"|"decline"|"cancel", "content"?}`.
pub(crate) fn parse_answer(json: &str) -> std::result::Result<ElicitationAnswer, String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    if !v.is_object() {
        return Err("an answer is an object `{action, content?}`".into());
    }
    ElicitationAnswer::from_json(&v)
}

/// The facade's answer to an elicitation request it was handed: the answer as JSON, or `error`
/// when the handler failed (answers `cancel`, `decidedBy: invalid_answer`). An unknown or stale
/// token is ignored (the request was already settled).
#[napi]
pub fn elicitation_decision(token: u32, answer_json: Option<String>, error: Option<String>) {
    // The facade's text names the handler (`onElicitation threw: …`).
    answer(token, error.map_or(Ok(answer_json), Err));
}
