//! `NativeSession`: a thin handle over the core's `Session` (prompts, modes, models, config
//! options, close) and its event stream; a prompt answers once its turn's events are in the
//! session's open streams.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use acp_host::TurnResult;
use pyo3::prelude::*;
use serde_json::Value;

use crate::errors;
use crate::events::{Streams, Subscription};
use crate::host::{opt_timeout, parse_json};
use crate::{Waited, call, seconds, within};

#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct NativeSession {
    session: acp_host::Session,
    streams: Arc<Streams>,
}

impl NativeSession {
    pub(crate) fn new(session: acp_host::Session, streams: Arc<Streams>) -> NativeSession {
        NativeSession { session, streams }
    }
}

/// A turn's result as the core's one JSON shape (`TurnResult::to_json`), as text.
pub(crate) type TurnTuple = String;

pub(crate) fn turn_tuple(t: TurnResult) -> TurnTuple {
    t.to_json().to_string()
}

#[pymethods]
impl NativeSession {
    #[getter]
    fn id(&self) -> &str {
        self.session.id()
    }

    #[getter]
    fn agent_id(&self) -> u64 {
        self.session.agent().id()
    }

    /// A snapshot of the materialised session state, as JSON (camelCase).
    fn state_json(&self) -> String {
        serde_json::to_string(&self.session.state()).unwrap_or_default()
    }

    /// Send a prompt (`content_json`: an array of ACP content blocks) and wait for the turn: the
    /// core's `TurnResult::to_json()` as text. Blocking: on
    /// Ctrl-C the turn is cancelled (`session/cancel`); the core settles it within the host's
    /// cancel grace (the agent's answer or `cancelled`), waited for here at most `cancel_grace`
    /// seconds when given, then the KeyboardInterrupt is raised. Async: cancelling the task
    /// abandons the turn the same way. After `timeout` seconds the turn is cancelled as on
    /// Ctrl-C and, once it settled, the call fails with `timeout` (unless the agent's answer was
    /// another stop reason than `cancelled`: then it is returned).
    #[pyo3(signature = (content_json, *, aio=false, cancel_grace=None, timeout=None))]
    fn prompt(
        &self,
        py: Python<'_>,
        content_json: &str,
        aio: bool,
        cancel_grace: Option<f64>,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let content = match parse_json(py, "prompt", content_json)? {
            Value::Array(a) => a,
            _ => {
                return Err(errors::local(
                    py,
                    "invalid_argument",
                    "prompt content must be a list of content blocks",
                ));
            }
        };
        let grace = cancel_grace
            .map(|g| seconds("cancel_grace", g))
            .transpose()?;
        let session = self.session.clone();
        let streams = self.streams.clone();
        if aio {
            return call(py, true, async move {
                let t = prompt_until(&session, content, None, timeout).await?;
                delivered(&streams, &session, &t).await?;
                Ok(turn_tuple(t))
            });
        }
        let (abort_tx, abort_rx) = tokio::sync::oneshot::channel::<()>();
        let fut = async move {
            let t = prompt_until(&session, content, Some(abort_rx), timeout).await?;
            delivered(&streams, &session, &t).await?;
            Ok::<_, acp_host::Error>(turn_tuple(t))
        };
        match crate::wait(py, fut)? {
            Waited::Done(Ok(t)) => Ok(t.into_pyobject(py)?.into_any().unbind()),
            Waited::Done(Err(e)) => Err(errors::to_py(py, &e)),
            Waited::Interrupted(err, handle, rx) => {
                let _ = abort_tx.send(());
                // A second Ctrl-C is not waited for here: the core's grace is short and bounded.
                let _ = crate::detach(py, move || match grace {
                    Some(g) => drop(rx.recv_timeout(g)),
                    None => drop(rx.recv()),
                });
                handle.abort();
                Err(err)
            }
        }
    }

    /// Steer (unstable: `unstable=["_session/steering"]`): into the running turn, or queued
    /// as the next prompt. The core's `SteerResult::to_json()` as text.
    #[pyo3(signature = (content_json, *, aio=false))]
    fn steer(&self, py: Python<'_>, content_json: &str, aio: bool) -> PyResult<Py<PyAny>> {
        let content = match parse_json(py, "steer", content_json)? {
            Value::Array(a) => a,
            _ => {
                return Err(errors::local(
                    py,
                    "invalid_argument",
                    "steer content must be a list of content blocks",
                ));
            }
        };
        let session = self.session.clone();
        call(py, aio, async move {
            session
                .steer(content)
                .await
                .map(|r| r.to_json().to_string())
        })
    }

    /// `session/cancel`: the turn should end `cancelled`; pending permission requests of the
    /// session are answered `cancelled` at once, pending elicitations `cancel`.
    #[pyo3(signature = (*, aio=false))]
    fn cancel(&self, py: Python<'_>, aio: bool) -> PyResult<Py<PyAny>> {
        let session = self.session.clone();
        call(py, aio, async move { session.cancel().await })
    }

    #[pyo3(signature = (mode_id, *, aio=false, timeout=None))]
    fn set_mode(
        &self,
        py: Python<'_>,
        mode_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let session = self.session.clone();
        call(py, aio, async move {
            within(
                "session/set_mode".into(),
                timeout,
                session.set_mode(&mode_id),
            )
            .await
        })
    }

    /// The session's models as JSON `{current, available: [{id, name, description}], via}` (the
    /// core's `Models`), or `None` when the agent offers no model choice.
    fn models_json(&self) -> Option<String> {
        self.session
            .models()
            .and_then(|m| serde_json::to_string(&m).ok())
    }

    /// Switch the model: the `model` config option, else the legacy `session/set_model`.
    #[pyo3(signature = (model_id, *, aio=false, timeout=None))]
    fn set_model(
        &self,
        py: Python<'_>,
        model_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let session = self.session.clone();
        call(py, aio, async move {
            within(
                "session/set_model".into(),
                timeout,
                session.set_model(&model_id),
            )
            .await
        })
    }

    /// `session/set_config_option`; resolves to the complete option list as JSON.
    #[pyo3(signature = (config_id, value_json, *, aio=false, timeout=None))]
    fn set_config_option(
        &self,
        py: Python<'_>,
        config_id: String,
        value_json: &str,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let value = parse_json(py, "value", value_json)?;
        let session = self.session.clone();
        call(py, aio, async move {
            let set = session.set_config_option(&config_id, value);
            let v = within("session/set_config_option".into(), timeout, set).await?;
            Ok(v.to_string())
        })
    }

    /// ACP v2 `tool_call/cancel`: the agent's acceptance as JSON (`{}`); the completion is a
    /// later `tool_call_update` event. The core decides `unsupported` / `invalid_argument`.
    #[pyo3(signature = (tool_call_id, *, aio=false, timeout=None))]
    fn cancel_tool_call(
        &self,
        py: Python<'_>,
        tool_call_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let session = self.session.clone();
        call(py, aio, async move {
            let cancel = session.cancel_tool_call(&tool_call_id);
            let v = within("tool_call/cancel".into(), timeout, cancel).await?;
            Ok(v.to_string())
        })
    }

    /// ACP v2 `terminal/cancel`: as `cancel_tool_call`; the completion is a later
    /// `terminal_update` with `exitStatus`.
    #[pyo3(signature = (terminal_id, *, aio=false, timeout=None))]
    fn cancel_terminal(
        &self,
        py: Python<'_>,
        terminal_id: String,
        aio: bool,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let session = self.session.clone();
        call(py, aio, async move {
            let cancel = session.cancel_terminal(&terminal_id);
            let v = within("terminal/cancel".into(), timeout, cancel).await?;
            Ok(v.to_string())
        })
    }

    #[pyo3(signature = (*, aio=false, timeout=None))]
    fn close(&self, py: Python<'_>, aio: bool, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        let timeout = opt_timeout("timeout", timeout)?;
        let session = self.session.clone();
        call(py, aio, async move {
            within("session/close".into(), timeout, session.close()).await
        })
    }

    /// This session's events: from the oldest its history holds, until its last one
    /// (docs/EVENTS.md, "The one session-stream rule").
    fn subscribe(&self) -> Subscription {
        self.streams
            .session(self.session.agent().id(), self.session.id())
    }
}

/// The turn's events are in every open stream of its session (a prompt answers after this).
pub(crate) async fn delivered(
    streams: &Streams,
    session: &acp_host::Session,
    turn: &TurnResult,
) -> acp_host::Result<()> {
    streams
        .turn_delivered(session.agent().id(), session.id(), turn.turn)
        .await
}

/// A prompt that is cancelled (`session/cancel`, then the core's cancel grace) when `abort`
/// fires (Ctrl-C) or `timeout` elapses; a cancelled turn that timed out fails with `timeout`.
async fn prompt_until(
    session: &acp_host::Session,
    content: Vec<Value>,
    abort: Option<tokio::sync::oneshot::Receiver<()>>,
    timeout: Option<Duration>,
) -> acp_host::Result<TurnResult> {
    let timed_out = Arc::new(AtomicBool::new(false));
    let flag = timed_out.clone();
    let stop = async move {
        let asked = async move {
            let asked = match abort {
                Some(rx) => rx.await.is_ok(),
                None => false,
            };
            if !asked {
                std::future::pending::<()>().await;
            }
        };
        let expired = async move {
            match timeout {
                Some(t) => {
                    tokio::time::sleep(t).await;
                    flag.store(true, Ordering::SeqCst);
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = asked => {}
            () = expired => {}
        }
    };
    let out = session.prompt_abortable(content, stop).await;
    match (timeout, out) {
        (Some(t), Ok(r)) if timed_out.load(Ordering::SeqCst) && r.stop_reason == "cancelled" => {
            Err(crate::timed_out("session/prompt".into(), t))
        }
        (Some(t), Err(acp_host::Error::Cancelled)) if timed_out.load(Ordering::SeqCst) => {
            Err(crate::timed_out("session/prompt".into(), t))
        }
        (_, out) => out,
    }
}
