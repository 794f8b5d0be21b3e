//! The fs, terminal, extension and terminal-login requests the agent sends, served by the
//! facade's one service dispatcher (a JS function resolving a Promise with the reply).

use std::sync::Arc;

use acp_host::services::{
    ExtHandler, FsHandler, FsRead, FsWrite, ServiceError, ServiceFuture, TerminalHandler,
};
use napi::Status;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use serde_json::Value;

/// `(callJson) => Promise<string>`: the facade's fs/terminal/extension dispatcher (a call is
/// `{"method", "params"}`; extension methods start with `_`); resolves with `{"result": …}` or
/// `{"error": {code, message, data?}}` as JSON.
pub(crate) type ServiceFn =
    ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

pub(crate) struct JsServices {
    pub(crate) call: Arc<ServiceFn>,
}

impl JsServices {
    fn invoke(&self, call: Value) -> ServiceFuture<Value> {
        let f = self.call.clone();
        Box::pin(async move {
            let failed = |e: napi::Error| ServiceError::new(-32603, e.reason);
            let promise = f.call_async_catch(call.to_string()).await.map_err(failed)?;
            let text = promise.await.map_err(failed)?;
            let mut reply: Value = serde_json::from_str(&text)
                .map_err(|e| ServiceError::new(-32603, format!("malformed handler reply: {e}")))?;
            if let Some(err) = reply.get_mut("error").filter(|e| !e.is_null()) {
                let code = err.get("code").and_then(Value::as_i64).unwrap_or(-32603);
                let message = err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("handler error")
                    .to_owned();
                let data = err
                    .get_mut("data")
                    .map(Value::take)
                    .filter(|d| !d.is_null());
                return Err(ServiceError {
                    code,
                    message,
                    data,
                });
            }
            Ok(reply
                .get_mut("result")
                .map(Value::take)
                .unwrap_or(Value::Null))
        })
    }
}

/// Terminal logins through the service callback (`{"method": "acph/terminal_auth", "params":
/// command}` → `{"exitCode": n}`).
impl acp_host::auth::TerminalAuthRunner for JsServices {
    fn run(
        &self,
        command: acp_host::auth::TerminalAuthCommand,
    ) -> acp_host::auth::TerminalAuthFuture {
        let params = serde_json::to_value(&command).unwrap_or(Value::Null);
        let fut =
            self.invoke(serde_json::json!({ "method": "acph/terminal_auth", "params": params }));
        Box::pin(async move {
            let v = fut.await.map_err(|e| e.message)?;
            v.get("exitCode")
                .and_then(Value::as_i64)
                .map(|c| c as i32)
                .ok_or_else(|| "onTerminalAuth must return an exit code (an integer)".to_owned())
        })
    }
}

impl FsHandler for JsServices {
    fn read_text_file(&self, r: FsRead) -> ServiceFuture<String> {
        let fut = self.invoke(serde_json::json!({
            "method": "fs/read_text_file",
            "params": { "sessionId": r.session_id, "path": r.path, "line": r.line, "limit": r.limit },
        }));
        Box::pin(async move {
            match fut.await? {
                Value::String(s) => Ok(s),
                Value::Object(mut o) => match o.remove("content") {
                    Some(Value::String(s)) => Ok(s),
                    _ => Err(ServiceError::new(
                        -32603,
                        "readTextFile must return a string",
                    )),
                },
                _ => Err(ServiceError::new(
                    -32603,
                    "readTextFile must return a string",
                )),
            }
        })
    }

    fn write_text_file(&self, w: FsWrite) -> ServiceFuture<()> {
        let fut = self.invoke(serde_json::json!({
            "method": "fs/write_text_file",
            "params": { "sessionId": w.session_id, "path": w.path, "content": w.content },
        }));
        Box::pin(async move { fut.await.map(|_| ()) })
    }
}

impl TerminalHandler for JsServices {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        self.invoke(serde_json::json!({ "method": method, "params": params }))
    }
}

/// The agent's `_` extension requests: the result is sent back verbatim (absent: `null`).
impl ExtHandler for JsServices {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        self.invoke(serde_json::json!({ "method": method, "params": params }))
    }
}
