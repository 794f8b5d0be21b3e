//! The unstable session methods besides fork on `Agent`: each needs its name in
//! `HostOptions.unstable` and the agent's `sessionCapabilities.*`; otherwise `Unsupported` and
//! nothing is sent. The core decides everything; this only translates the results.

use crate::agent::Agent;
use crate::error::AcpError;
use crate::options::SessionOptions;
use crate::runtime::on_rt;

/// `session/status`: whether the agent has the session in memory.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SessionStatus {
    /// `open` or `saved` (a value the host does not know is `saved`, as the spec requires).
    pub status: String,
    /// The agent's value verbatim.
    pub reported: String,
}

/// `session/options`: what a session would start with, without one being created.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct SessionDefaults {
    /// The mode state as JSON (`{currentModeId, availableModes}`), if any.
    pub modes: Option<String>,
    /// The config options as a JSON array, if any.
    pub config_options: Option<String>,
}

#[uniffi::export]
impl Agent {
    /// `session/status` (unstable: `HostOptions.unstable = listOf("session/status")`).
    pub async fn session_status(&self, session_id: String) -> Result<SessionStatus, AcpError> {
        let agent = self.agent.clone();
        on_rt(async move {
            let s = agent.session_status(&session_id).await?;
            Ok(SessionStatus {
                status: s.status,
                reported: s.reported,
            })
        })
        .await
    }

    /// `session/set_title` (unstable): the title the agent stored (show this one); a session
    /// open here gets it as its title.
    pub async fn set_session_title(
        &self,
        session_id: String,
        title: String,
    ) -> Result<String, AcpError> {
        let agent = self.agent.clone();
        on_rt(async move { Ok(agent.set_session_title(&session_id, &title).await?) }).await
    }

    /// `session/archive` (unstable): a session open here is closed (reason `archived`).
    pub async fn archive_session(&self, session_id: String) -> Result<(), AcpError> {
        let agent = self.agent.clone();
        on_rt(async move { Ok(agent.archive_session(&session_id).await?) }).await
    }

    /// `session/unarchive` (unstable): listed again, never reopened.
    pub async fn unarchive_session(&self, session_id: String) -> Result<(), AcpError> {
        let agent = self.agent.clone();
        on_rt(async move { Ok(agent.unarchive_session(&session_id).await?) }).await
    }

    /// `session/options` (unstable): the modes and config options a session would start with
    /// in `options.cwd`; with `sessionId`, what a load or resume of it would give.
    pub async fn session_options(
        &self,
        options: SessionOptions,
        session_id: Option<String>,
    ) -> Result<SessionDefaults, AcpError> {
        let options = options.to_core()?;
        let agent = self.agent.clone();
        on_rt(async move {
            let d = agent
                .session_options(&options, session_id.as_deref())
                .await?;
            Ok(SessionDefaults {
                modes: d.modes.map(|m| m.to_string()),
                config_options: d
                    .config_options
                    .map(|c| serde_json::Value::from(c).to_string()),
            })
        })
        .await
    }
}
