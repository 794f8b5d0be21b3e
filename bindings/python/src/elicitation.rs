//! The elicitation-handler bridge (`on_elicitation`): the core's `ElicitationDecider` asks a
//! Python callable through the permission bridge (`permission::ask_python` →
//! `acp_host._bridge.dispatch_elicitation`), so it runs where permission handlers run and is
//! cancelled the same way. The handler's answer comes back as JSON in the ACP shape
//! (`{"action": "accept"|"decline"|"cancel", "content"?: {...}}`); an exception, anything that is
//! not such an answer, or the elicitation timeout answers `cancel` (the decider's `Err`).

use std::sync::Arc;

use acp_host::elicitation::ElicitationFuture;
use acp_host::{ElicitationAnswer, ElicitationDecider, ElicitationRequest};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use serde_json::Value;

use crate::permission::{LoopSlot, ask_python};

static DISPATCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

#[derive(Debug)]
pub(crate) struct PyElicitor {
    pub handler: Arc<Py<PyAny>>,
    pub event_loop: LoopSlot,
}

impl ElicitationDecider for PyElicitor {
    fn decide(&self, request: ElicitationRequest) -> ElicitationFuture {
        let handler = self.handler.clone();
        let event_loop = self.event_loop.clone();
        Box::pin(async move {
            let raw = serde_json::to_string(&request).map_err(|e| e.to_string())?;
            let answer = ask_python(
                &DISPATCH,
                "dispatch_elicitation",
                "elicitation",
                handler,
                event_loop,
                raw,
                request.settled.clone(),
            )
            .await?;
            match answer {
                Some(text) => parse_answer(&text),
                None => Err("elicitation handler gave no answer".into()),
            }
        })
    }
}

/// An answer in the ACP shape, from JSON text.
pub(crate) fn parse_answer(text: &str) -> Result<ElicitationAnswer, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("the answer is not JSON: {e}"))?;
    if !v.is_object() {
        return Err("an answer must be an object like {\"action\": \"accept\"}".into());
    }
    ElicitationAnswer::from_json(&v)
}
