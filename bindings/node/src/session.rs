//! A session: prompts, modes, config options and models.

use acp_host::{Session, TurnResult};
use napi::bindgen_prelude::Result;
use napi_derive::napi;
use serde_json::Value;

use crate::abort::{abortable, aborts};
use crate::core_err;

pub(crate) fn wrap_session(session: Session) -> NativeSession {
    NativeSession { session }
}

/// A turn's result: the core's one shape (`TurnResult::to_json`), as in every face.
pub(crate) fn turn_json(turn: TurnResult) -> Value {
    turn.to_json()
}

#[napi]
#[derive(Debug)]
pub struct NativeSession {
    session: Session,
}

#[napi]
impl NativeSession {
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.session.id().to_owned()
    }

    #[napi(getter)]
    pub fn agent_id(&self) -> u32 {
        self.session.agent().id() as u32
    }

    /// The materialised session state (docs: `SessionView`).
    #[napi]
    pub fn state(&self) -> Value {
        serde_json::to_value(self.session.state()).unwrap_or(Value::Null)
    }

    /// Send a prompt (an array of ACP content blocks); resolves with
    /// `{turn, stopReason, usage, raw, text, thought, textTruncated}` when the turn ends.
    #[napi]
    /// Aborting sends `session/cancel`; the call settles with the agent's answer if it comes
    /// within the host's cancel grace, else with `cancelled`.
    pub async fn prompt(&self, content: Vec<Value>, abort: Option<u32>) -> Result<Value> {
        let session = self.session.clone();
        let rx = abort.and_then(|id| aborts().lock().ok()?.get(&id).map(|tx| tx.subscribe()));
        let fired = async move {
            match rx {
                Some(mut rx) => {
                    if rx.wait_for(|a| *a).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        };
        let turn = session
            .prompt_abortable(content, fired)
            .await
            .map_err(core_err)?;
        Ok(turn_json(turn))
    }

    /// Steer (unstable: `unstable: ['_session/steering']`): into the running turn when the
    /// agent advertises steering, else queued as the next prompt. Resolves with
    /// `{steer, outcome, turn}` (the core's `SteerResult::to_json`).
    #[napi]
    pub async fn steer(&self, content: Vec<Value>) -> Result<Value> {
        let session = self.session.clone();
        let r = session.steer(content).await.map_err(core_err)?;
        Ok(r.to_json())
    }

    /// `session/cancel`.
    #[napi]
    pub async fn cancel(&self) -> Result<()> {
        self.session.cancel().await.map_err(core_err)
    }

    #[napi]
    pub async fn set_mode(&self, mode_id: String, abort: Option<u32>) -> Result<()> {
        let session = self.session.clone();
        abortable(abort, async move { session.set_mode(&mode_id).await }).await
    }

    /// Resolves with the complete updated option list.
    #[napi]
    pub async fn set_config_option(
        &self,
        config_id: String,
        value: Value,
        abort: Option<u32>,
    ) -> Result<Value> {
        let session = self.session.clone();
        abortable(abort, async move {
            session.set_config_option(&config_id, value).await
        })
        .await
    }

    /// `{current, available: [{id, name, description}], via}` (the core's `Models`), or `null`
    /// when the agent offers no model choice.
    #[napi]
    pub fn models(&self) -> Value {
        self.session
            .models()
            .and_then(|m| serde_json::to_value(m).ok())
            .unwrap_or(Value::Null)
    }

    /// Switch the model: the `model` config option, else the legacy `session/set_model`.
    #[napi]
    pub async fn set_model(&self, model_id: String, abort: Option<u32>) -> Result<()> {
        let session = self.session.clone();
        abortable(abort, async move { session.set_model(&model_id).await }).await
    }

    /// ACP v2 `tool_call/cancel`: resolves with the agent's acceptance (`{}`); the completion is
    /// a later `tool_call_update` event. The core decides `unsupported` / `invalid_argument`.
    #[napi]
    pub async fn cancel_tool_call(
        &self,
        tool_call_id: String,
        abort: Option<u32>,
    ) -> Result<Value> {
        let session = self.session.clone();
        abortable(abort, async move {
            session.cancel_tool_call(&tool_call_id).await
        })
        .await
    }

    /// ACP v2 `terminal/cancel`: resolves with the acceptance; the completion is a later
    /// `terminal_update` with `exitStatus`.
    #[napi]
    pub async fn cancel_terminal(&self, terminal_id: String, abort: Option<u32>) -> Result<Value> {
        let session = self.session.clone();
        abortable(
            abort,
            async move { session.cancel_terminal(&terminal_id).await },
        )
        .await
    }

    /// `session/close`.
    #[napi]
    pub async fn close(&self, abort: Option<u32>) -> Result<()> {
        let session = self.session.clone();
        abortable(abort, async move { session.close().await }).await
    }
}
