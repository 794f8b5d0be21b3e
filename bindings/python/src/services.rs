//! `fs/*` and `terminal/*` served by Python objects instead of the built-in services
//! (`Host(fs=handler, terminal=handler)`), and the agent's `_`-prefixed extension requests served
//! by `Host(on_ext_request=fn)`. The core has already confined the path / cwd to the session's
//! roots and applied the policy's hard-deny rules before an fs/terminal handler is asked.
//!
//! Same bridge as permissions: `acp_host._bridge.call_service` runs the handler (on the handler
//! thread, or a blocking-pool thread while it is busy, for `Host`, a coroutine on the private
//! loop; on the host's loop for `AsyncHost`) and the
//! answer comes back through `ServiceReply` as JSON. `acp_host.ServiceError(code, message, data)`
//! raised by a handler becomes that JSON-RPC error; any other exception `-32603`.

use std::sync::{Arc, Mutex};

use acp_host::services::{
    ExtHandler, FsHandler, FsRead, FsWrite, ServiceError, ServiceFuture, TerminalHandler,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::permission::{CancelOnDrop, LoopSlot, Pending};

type Answer = Result<Value, ServiceError>;

static CALL_SERVICE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn internal(message: impl Into<String>) -> ServiceError {
    ServiceError::new(-32603, message)
}

async fn call_python(
    target: Arc<Py<PyAny>>,
    name: Option<&'static str>,
    args: Value,
    event_loop: LoopSlot,
) -> Answer {
    let (tx, rx) = oneshot::channel::<Answer>();
    let args = args.to_string();
    let pending = Arc::new(Pending::default());
    // From here on, dropping this future (the request was withdrawn) stops the handler, or keeps
    // it from being called at all.
    let guard = CancelOnDrop::new(pending.clone());
    let started = crate::handler_thread::run(move || {
        crate::attach(|py| -> PyResult<()> {
            if !pending.wanted() {
                return Ok(());
            }
            let call = CALL_SERVICE.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                Ok(py
                    .import("acp_host._bridge")?
                    .getattr("call_service")?
                    .unbind())
            })?;
            let lp = event_loop
                .lock()
                .ok()
                .and_then(|l| l.as_ref().map(|l| l.clone_ref(py)));
            let reply = ServiceReply {
                tx: Mutex::new(Some(tx)),
            };
            let cancel = call
                .bind(py)
                .call1((target.as_ref(), name, args, lp, reply))?;
            pending.started(&cancel);
            Ok(())
        })
    })
    .await;
    match started {
        Ok(Some(Ok(()))) => {}
        Ok(None) => return Err(internal("the interpreter is exiting")),
        Ok(Some(Err(e))) => return Err(internal(format!("service handler bridge failed: {e}"))),
        Err(e) => return Err(internal(format!("service handler bridge failed: {e}"))),
    }
    let answer = rx
        .await
        .unwrap_or_else(|_| Err(internal("service handler gave no answer")));
    guard.answered();
    answer
}

/// Carries a handler's answer back: `reply(result_json, None)` or `reply(None, error_json)`
/// with `{"code", "message", "data"}`.
#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct ServiceReply {
    tx: Mutex<Option<oneshot::Sender<Answer>>>,
}

#[pymethods]
impl ServiceReply {
    #[pyo3(signature = (result_json, error_json=None))]
    fn __call__(&self, result_json: Option<String>, error_json: Option<String>) -> bool {
        let Some(tx) = self.tx.lock().ok().and_then(|mut t| t.take()) else {
            return false;
        };
        let answer = match (result_json, error_json) {
            (_, Some(err)) => Err(match serde_json::from_str::<Value>(&err) {
                Ok(v) => ServiceError {
                    code: v.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                    message: v
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("service handler failed")
                        .to_owned(),
                    data: v.get("data").filter(|d| !d.is_null()).cloned(),
                },
                Err(_) => internal(err),
            }),
            (Some(res), None) => serde_json::from_str(&res)
                .map_err(|e| internal(format!("service handler result is not JSON: {e}"))),
            (None, None) => Ok(Value::Null),
        };
        tx.send(answer).is_ok()
    }
}

/// `Host(fs=obj)`: `obj.read_text_file(session_id, path, line, limit) -> str`,
/// `obj.write_text_file(session_id, path, content) -> None` (or coroutine functions).
#[derive(Debug)]
pub(crate) struct PyFs {
    pub target: Arc<Py<PyAny>>,
    pub event_loop: LoopSlot,
}

impl FsHandler for PyFs {
    fn read_text_file(&self, r: FsRead) -> ServiceFuture<String> {
        let (target, lp) = (self.target.clone(), self.event_loop.clone());
        Box::pin(async move {
            let args = serde_json::json!([r.session_id, r.path, r.line, r.limit]);
            match call_python(target, Some("read_text_file"), args, lp).await? {
                Value::String(s) => Ok(s),
                other => Err(internal(format!(
                    "read_text_file returned {}, expected str",
                    kind_of(&other)
                ))),
            }
        })
    }

    fn write_text_file(&self, w: FsWrite) -> ServiceFuture<()> {
        let (target, lp) = (self.target.clone(), self.event_loop.clone());
        Box::pin(async move {
            let args = serde_json::json!([w.session_id, w.path, w.content]);
            call_python(target, Some("write_text_file"), args, lp)
                .await
                .map(|_| ())
        })
    }
}

/// `Host(terminal=fn)`: `fn(method, params) -> dict` for every `terminal/*` request.
#[derive(Debug)]
pub(crate) struct PyTerminal {
    pub target: Arc<Py<PyAny>>,
    pub event_loop: LoopSlot,
}

impl TerminalHandler for PyTerminal {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        let (target, lp) = (self.target.clone(), self.event_loop.clone());
        let args = serde_json::json!([method, params]);
        Box::pin(async move {
            match call_python(target, None, args, lp).await? {
                Value::Null => Ok(Value::Object(Default::default())),
                v @ Value::Object(_) => Ok(v),
                other => Err(internal(format!(
                    "terminal handler returned {}, expected a dict",
                    kind_of(&other)
                ))),
            }
        })
    }
}

/// `Host(on_ext_request=fn)`: `fn(method, params) -> result` for every `_`-prefixed request of
/// the agent (`params`: the request's params, `None` when absent). The result, any JSON value, is
/// sent back verbatim (`None` as `null`).
#[derive(Debug)]
pub(crate) struct PyExt {
    pub target: Arc<Py<PyAny>>,
    pub event_loop: LoopSlot,
}

impl ExtHandler for PyExt {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        let (target, lp) = (self.target.clone(), self.event_loop.clone());
        let args = serde_json::json!([method, params]);
        Box::pin(call_python(target, None, args, lp))
    }
}

/// Terminal logins run by the Python `on_terminal_auth(command) -> exit code` (plain or
/// coroutine function).
pub(crate) struct PyTerminalAuth {
    pub target: Arc<Py<PyAny>>,
    pub event_loop: LoopSlot,
}

impl acp_host::auth::TerminalAuthRunner for PyTerminalAuth {
    fn run(
        &self,
        command: acp_host::auth::TerminalAuthCommand,
    ) -> acp_host::auth::TerminalAuthFuture {
        let (target, lp) = (self.target.clone(), self.event_loop.clone());
        let args = serde_json::json!([command]);
        Box::pin(async move {
            let v = call_python(target, None, args, lp)
                .await
                .map_err(|e| e.message)?;
            v.as_i64().map(|c| c as i32).ok_or_else(|| {
                format!(
                    "on_terminal_auth must return an exit code (an int), not {}",
                    kind_of(&v)
                )
            })
        })
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "None",
        Value::Bool(_) => "bool",
        Value::Number(_) => "a number",
        Value::String(_) => "str",
        Value::Array(_) => "a list",
        Value::Object(_) => "a dict",
    }
}
