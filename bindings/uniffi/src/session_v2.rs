//! ACP v2 session calls on `Session`: cancelling one tool call or one agent terminal. The core
//! decides (`Unsupported` on a v1 connection or without `capabilities.cancel`,
//! `InvalidArgument` for an unknown id); this only translates.

use crate::agent::Session;
use crate::error::AcpError;
use crate::runtime::on_rt;

#[uniffi::export]
impl Session {
    /// ACP v2 `tool_call/cancel`: returns the agent's acceptance as JSON (`{}`) once it accepted;
    /// the completion is a later `tool_call_update` event with a final `status`.
    pub async fn cancel_tool_call(&self, tool_call_id: String) -> Result<String, AcpError> {
        let session = self.session.clone();
        on_rt(async move { Ok(session.cancel_tool_call(&tool_call_id).await?.to_string()) }).await
    }

    /// ACP v2 `terminal/cancel`: as `cancelToolCall`; the completion is a later
    /// `terminal_update` with `exitStatus`.
    pub async fn cancel_terminal(&self, terminal_id: String) -> Result<String, AcpError> {
        let session = self.session.clone();
        on_rt(async move { Ok(session.cancel_terminal(&terminal_id).await?.to_string()) }).await
    }
}
