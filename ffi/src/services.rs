//! fs/terminal requests routed to the embedder (`"fs": "embedder"`, `"terminal": "embedder"` in
//! the host config): the core calls [`Bridge`], which hands each request to the C service callback
//! with a request id, or (`"services": "events"`) puts it into the event stream as a
//! `service_requested` event for the embedder to pull; either way the embedder answers with
//! `acph_service_respond` / `acph_service_fail`. The roots and the policy's hard-deny rules were
//! already applied by the core. A request still unanswered when its agent ends is abandoned (the
//! agent is told nothing more; a late answer is `already_resolved`).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use acp_host::Host;
use acp_host::services::{
    FsHandler, FsRead, FsWrite, ServiceError, ServiceFuture, TerminalHandler,
};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::ptr::{Callback, acph_service_fn};
use crate::status::{Failure, acph_status};

/// JSON-RPC "internal error", sent to the agent when the embedder cannot serve.
const INTERNAL_ERROR: i64 = -32603;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    FsRead,
    FsWrite,
    Terminal,
    /// An agent's `_` extension request: any JSON result (absent: `null`).
    Ext,
    /// A terminal login to run (`acph/terminal_auth`): `{"exitCode": n}`.
    TerminalAuth,
}

#[derive(Debug)]
struct Pending {
    kind: Kind,
    /// The agent asking (0: unknown): an answer after it ended is refused.
    agent: u64,
    tx: oneshot::Sender<Result<Value, ServiceError>>,
}

/// How requests reach the embedder (`"services"` in the host config).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The service callback, on a library thread.
    #[default]
    Callback,
    /// `service_requested` events, pulled like every other event.
    Events,
}

/// Shared between the core's handlers and the C face (cheap to clone).
#[derive(Debug, Default, Clone)]
pub(crate) struct Bridge {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    pending: Mutex<HashMap<u64, Pending>>,
    handler: Mutex<Option<Arc<Callback<acph_service_fn>>>>,
    delivery: Mutex<Delivery>,
    /// The core host (events delivery, agent lookups); set once the host exists, dropped at
    /// teardown (the host's config holds this bridge: the cycle is broken there).
    host: Mutex<Option<Host>>,
}

/// Removes a request from the table when its future is dropped (agent gone, host freed).
struct Forget<'a>(&'a Inner, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.lock().remove(&self.1);
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Bridge {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Pending>> {
        self.inner.lock()
    }

    /// Replace the callback; the old one is dropped (its finalizer runs) once no invocation of it
    /// is in flight.
    pub(crate) fn set_handler(&self, handler: Option<Callback<acph_service_fn>>) {
        let old = {
            let mut h = self.inner.handler.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *h, handler.map(Arc::new))
        };
        drop(old);
    }

    /// Drop the callback (host teardown).
    pub(crate) fn clear(&self) {
        self.set_handler(None);
        self.lock().clear();
        let host = self
            .inner
            .host
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        drop(host);
    }

    pub(crate) fn set_delivery(&self, delivery: Delivery) {
        *self
            .inner
            .delivery
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = delivery;
    }

    pub(crate) fn delivery(&self) -> Delivery {
        *self
            .inner
            .delivery
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn attach(&self, host: Host) {
        *self.inner.host.lock().unwrap_or_else(|p| p.into_inner()) = Some(host);
    }

    fn host(&self) -> Option<Host> {
        self.inner
            .host
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// True when `agent` has ended (or is unknown to the host any more): its requests can no
    /// longer be answered.
    fn agent_gone(&self, agent: u64) -> bool {
        agent != 0
            && self
                .host()
                .is_none_or(|h| h.agent(agent).is_none_or(|a| a.exit_info().is_some()))
    }

    async fn ask(self, kind: Kind, method: &str, params: Value) -> Result<Value, ServiceError> {
        let id = crate::host::next_id();
        let agent = acp_host::services::serving_agent().unwrap_or(0);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, Pending { kind, agent, tx });
        let _forget = Forget(&self.inner, id);
        match self.delivery() {
            Delivery::Events => {
                let Some(host) = self.host() else {
                    return Err(ServiceError::new(
                        INTERNAL_ERROR,
                        format!("{method}: the host is gone"),
                    ));
                };
                host.report_service_request(agent, id, method, &params)
                    .await;
            }
            Delivery::Callback => {
                let handler = self
                    .inner
                    .handler
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                let Some(handler) = handler else {
                    return Err(ServiceError::new(
                        INTERNAL_ERROR,
                        format!("{method}: the embedder set no service handler"),
                    ));
                };
                let mut m = method.as_bytes().to_vec();
                m.push(0);
                let mut p = params.to_string().into_bytes();
                p.push(0);
                handler.serve(id, &m, &p);
                drop(handler);
            }
        }
        // Nobody can use the answer once the agent has ended: stop waiting then (the request
        // leaves the table, so a late answer is `already_resolved`).
        let exited = async {
            match self.host().and_then(|h| h.agent(agent)) {
                Some(a) if agent != 0 => a.exited().await,
                _ => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            r = rx => match r {
                Ok(result) => result,
                Err(_) => Err(ServiceError::new(
                    INTERNAL_ERROR,
                    format!("{method}: the embedder dropped the request"),
                )),
            },
            () = exited => Err(ServiceError::new(
                INTERNAL_ERROR,
                format!("{method}: the agent ended before the embedder answered"),
            )),
        }
    }

    /// `acph_service_respond`: validate `result` for the request's method, then answer it.
    pub(crate) fn respond(&self, id: u64, result: Option<Value>) -> Result<(), Failure> {
        let mut pending = self.lock();
        let Some(entry) = pending.get(&id) else {
            return Err(gone(id));
        };
        if self.agent_gone(entry.agent) {
            pending.remove(&id);
            return Err(gone(id));
        }
        let value = match entry.kind {
            Kind::FsRead => match result {
                Some(Value::Object(o)) if o.get("content").is_some_and(Value::is_string) => {
                    Value::Object(o)
                }
                _ => {
                    return Err(Failure::invalid(
                        "fs/read_text_file needs a result {\"content\": \"...\"}",
                    ));
                }
            },
            Kind::FsWrite => result.unwrap_or_else(|| Value::Object(Default::default())),
            Kind::Ext => result.unwrap_or(Value::Null),
            Kind::Terminal => match result {
                Some(v @ Value::Object(_)) => v,
                _ => {
                    return Err(Failure::invalid(
                        "a terminal/* result must be a JSON object (the ACP result)",
                    ));
                }
            },
            Kind::TerminalAuth => match result {
                Some(v) if v.get("exitCode").and_then(Value::as_i64).is_some() => v,
                _ => {
                    return Err(Failure::invalid(
                        "acph/terminal_auth needs a result {\"exitCode\": <integer>}",
                    ));
                }
            },
        };
        if let Some(entry) = pending.remove(&id) {
            let _ = entry.tx.send(Ok(value));
        }
        Ok(())
    }

    /// `acph_service_fail`: answer with a JSON-RPC error.
    pub(crate) fn fail(
        &self,
        id: u64,
        code: i64,
        message: &str,
        data: Option<Value>,
    ) -> Result<(), Failure> {
        let entry = self.lock().remove(&id).ok_or_else(|| gone(id))?;
        if self.agent_gone(entry.agent) {
            return Err(gone(id));
        }
        let _ = entry.tx.send(Err(ServiceError {
            code,
            message: message.to_owned(),
            data,
        }));
        Ok(())
    }
}

fn gone(id: u64) -> Failure {
    let issued = id != 0 && id < crate::host::NEXT_ID.load(Ordering::Relaxed);
    if issued {
        Failure::new(
            acph_status::ACPH_STATUS_ALREADY_RESOLVED,
            format!("service request {id} was already answered or abandoned (agent gone)"),
        )
    } else {
        Failure::unknown_request("service request", id)
    }
}

impl FsHandler for Bridge {
    fn read_text_file(&self, request: FsRead) -> ServiceFuture<String> {
        let this = self.clone();
        Box::pin(async move {
            let params = serde_json::json!({
                "sessionId": request.session_id,
                "path": request.path,
                "line": request.line,
                "limit": request.limit,
            });
            let v = this.ask(Kind::FsRead, "fs/read_text_file", params).await?;
            match v.get("content").and_then(Value::as_str) {
                Some(s) => Ok(s.to_owned()),
                None => Err(ServiceError::new(INTERNAL_ERROR, "no content")),
            }
        })
    }

    fn write_text_file(&self, request: FsWrite) -> ServiceFuture<()> {
        let this = self.clone();
        Box::pin(async move {
            let params = serde_json::json!({
                "sessionId": request.session_id,
                "path": request.path,
                "content": request.content,
            });
            this.ask(Kind::FsWrite, "fs/write_text_file", params)
                .await
                .map(|_| ())
        })
    }
}

impl acp_host::services::ExtHandler for Bridge {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        let this = self.clone();
        let method = method.to_owned();
        Box::pin(async move { this.ask(Kind::Ext, &method, params).await })
    }
}

/// Terminal logins go to the service handler as method `acph/terminal_auth` (not an ACP method),
/// params the command (`{methodId, label, command, args, env, cwd}`); the embedder runs it in a
/// terminal the user sees and answers `{"exitCode": n}` (or fails the request: the login could
/// not run).
impl acp_host::auth::TerminalAuthRunner for Bridge {
    fn run(
        &self,
        command: acp_host::auth::TerminalAuthCommand,
    ) -> acp_host::auth::TerminalAuthFuture {
        let this = self.clone();
        Box::pin(async move {
            let params = serde_json::to_value(&command).map_err(|e| e.to_string())?;
            let v = this
                .ask(Kind::TerminalAuth, "acph/terminal_auth", params)
                .await
                .map_err(|e| e.message)?;
            v.get("exitCode")
                .and_then(Value::as_i64)
                .map(|c| c as i32)
                .ok_or_else(|| "no exitCode".to_owned())
        })
    }
}

impl TerminalHandler for Bridge {
    fn handle(&self, method: &str, params: Value) -> ServiceFuture<Value> {
        let this = self.clone();
        let method = method.to_owned();
        Box::pin(async move { this.ask(Kind::Terminal, &method, params).await })
    }
}
