//! The unstable v1 session methods besides fork: `session/status`, `session/set_title`,
//! `session/archive` / `session/unarchive` and `session/options`. Each is opt-in (its name in
//! [`crate::HostConfig::unstable`], the same list in every face) and gated on the agent's
//! `sessionCapabilities.*` marker (the method table's row); without either the call fails with
//! `unsupported` and nothing is sent. The wire shapes follow the pinned schema crate's
//! `src/v1/agent.rs` (features `unstable_session_*`), built here as JSON rather than through
//! those features: `unstable_session_options` would also change the stable `session/new`
//! request type every face sends.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::{Agent, SessionOptions, result_tree};
use crate::connection::ReqCtx;
use crate::error::{Error, Result};

/// The answer to `session/status`: whether the agent has the session in memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatusInfo {
    /// `"open"` (in memory, for any connection: a session this host did not open still needs
    /// load or resume before a prompt) or `"saved"` (known, resumable). A value the host does
    /// not recognise is `"saved"`, as the spec requires of clients.
    pub status: String,
    /// The agent's value verbatim (differs from `status` only for an unrecognised one, e.g.
    /// `"_hibernating"`).
    pub reported: String,
}

impl SessionStatusInfo {
    pub fn is_open(&self) -> bool {
        self.status == "open"
    }
}

/// The answer to `session/options`: what a session would start with, without one being created.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDefaults {
    /// The mode state (`{currentModeId, availableModes}`), if the agent has modes.
    pub modes: Option<Value>,
    /// The config options, in the shape of `session/new`'s `configOptions`.
    pub config_options: Option<Vec<Value>>,
}

impl Agent {
    /// `Unsupported` unless `method` is in the host's `unstable` list.
    pub(crate) fn require_opt_in(&self, method: &str) -> Result<()> {
        if self.inner.host.config.unstable.iter().any(|m| m == method) {
            return Ok(());
        }
        Err(Error::Unsupported(format!(
            "{method} is an unstable ACP method: opt in with `unstable: [\"{method}\"]` in the \
             host's config"
        )))
    }

    /// `session/status` (unstable: opt in, and the agent's `sessionCapabilities.status`):
    /// whether the agent has `session_id` in memory. No side effects on the agent or here.
    pub async fn session_status(&self, session_id: &str) -> Result<SessionStatusInfo> {
        self.require_opt_in("session/status")?;
        self.require_gate("session/status")?;
        let params = serde_json::json!({ "sessionId": session_id });
        let raw = self
            .request(
                "session/status",
                &params,
                ReqCtx::Plain,
                self.control_timeout(),
            )
            .await?;
        let v = result_tree("session/status", &raw)?;
        let Some(reported) = v.get("status").and_then(Value::as_str) else {
            return Err(Error::Protocol(
                "the agent's session/status result has no `status` string".into(),
            ));
        };
        let status = if reported == "open" { "open" } else { "saved" };
        Ok(SessionStatusInfo {
            status: status.into(),
            reported: reported.into(),
        })
    }

    /// `session/set_title` (unstable: opt in, and `sessionCapabilities.title`): returns the title
    /// the agent stored (it may normalise it: show this one). A session open on this host gets
    /// it as its view's title.
    pub async fn set_session_title(&self, session_id: &str, title: &str) -> Result<String> {
        self.require_opt_in("session/set_title")?;
        self.require_gate("session/set_title")?;
        let params = serde_json::json!({ "sessionId": session_id, "title": title });
        let ctx = ReqCtx::SetTitle {
            session: Arc::from(session_id),
        };
        let raw = self
            .request("session/set_title", &params, ctx, self.control_timeout())
            .await?;
        let v = result_tree("session/set_title", &raw)?;
        match v.get("title").and_then(Value::as_str) {
            Some(t) => Ok(t.to_owned()),
            None => Err(Error::Protocol(
                "the agent's session/set_title result has no `title` string".into(),
            )),
        }
    }

    /// `session/archive` (unstable: opt in, and `sessionCapabilities.archive`): hides the
    /// session from default `session/list` results. The agent closes an active session first
    /// (the spec), so one open on this host is closed here too (`session_closed` with reason
    /// `archived`: pending permissions cancelled, terminals killed), as for `session/close`.
    pub async fn archive_session(&self, session_id: &str) -> Result<()> {
        self.require_opt_in("session/archive")?;
        self.require_gate("session/archive")?;
        let params = serde_json::json!({ "sessionId": session_id });
        let ctx = ReqCtx::ArchiveSession {
            id: Arc::from(session_id),
        };
        self.request("session/archive", &params, ctx, self.control_timeout())
            .await?;
        self.forget_session(session_id);
        Ok(())
    }

    /// `session/unarchive` (unstable: opt in, and `sessionCapabilities.archive`): back in the
    /// default `session/list` results. It never loads or resumes the session.
    pub async fn unarchive_session(&self, session_id: &str) -> Result<()> {
        self.require_opt_in("session/unarchive")?;
        self.require_gate("session/unarchive")?;
        let params = serde_json::json!({ "sessionId": session_id });
        self.request(
            "session/unarchive",
            &params,
            ReqCtx::Plain,
            self.control_timeout(),
        )
        .await?;
        Ok(())
    }

    /// `session/options` (unstable: opt in, and `sessionCapabilities.options`): the modes and
    /// config options a session would start with in `options.cwd` (and its additional
    /// directories; MCP servers are not sent), without creating one. With `session_id`: what a
    /// load or resume of it would return; the agent must then support one of those.
    pub async fn session_options(
        &self,
        options: &SessionOptions,
        session_id: Option<&str>,
    ) -> Result<SessionDefaults> {
        self.require_opt_in("session/options")?;
        let info = self.require_gate("session/options")?;
        if session_id.is_some() {
            let can = |m: &str| {
                crate::protocol::method(m).is_some_and(|m| m.allowed_by_agent(&info.gates))
            };
            if !can("session/load") && !can("session/resume") {
                return Err(Error::Unsupported(
                    "session/options for an existing session needs the agent's loadSession or \
                     sessionCapabilities.resume"
                        .into(),
                ));
            }
        }
        let mut params = options.params(&info, session_id, false)?;
        if let Some(p) = params.as_object_mut() {
            p.remove("mcpServers");
        }
        let raw = self
            .request(
                "session/options",
                &params,
                ReqCtx::Plain,
                self.control_timeout(),
            )
            .await?;
        let v = result_tree("session/options", &raw)?;
        let Some(obj) = v.as_object() else {
            return Err(Error::Protocol(
                "the agent's session/options result is not an object".into(),
            ));
        };
        let modes = match obj.get("modes") {
            None | Some(Value::Null) => None,
            Some(m @ Value::Object(_)) => Some(m.clone()),
            Some(_) => {
                return Err(Error::Protocol(
                    "the agent's session/options `modes` is not an object".into(),
                ));
            }
        };
        let config_options = match obj.get("configOptions") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(_) => {
                return Err(Error::Protocol(
                    "the agent's session/options `configOptions` is not an array".into(),
                ));
            }
        };
        Ok(SessionDefaults {
            modes,
            config_options,
        })
    }
}
