//! An agent: its handshake info, authentication, and the session calls.

use std::sync::{Mutex, OnceLock};

use acp_host::Agent;
use napi::bindgen_prelude::Result;
use napi_derive::napi;
use serde_json::Value;

use crate::abort::abortable;
use crate::session::{NativeSession, wrap_session};
use crate::{invalid, session_options};

#[napi]
#[derive(Debug)]
pub struct NativeAgent {
    pub(crate) agent: Agent,
    /// Spawned with a restart policy (its relaunch after a terminal login is too).
    pub(crate) supervised: bool,
}

#[napi]
impl NativeAgent {
    /// The host's id for this agent (the `agent` field of events).
    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.agent.id() as u32
    }

    /// `{protocolVersion, agentInfo, agentCapabilities, authMethods}` from `initialize`.
    #[napi]
    pub fn info(&self) -> Value {
        match self.agent.info() {
            Some(i) => serde_json::json!({
                "protocolVersion": i.protocol_version,
                "agentInfo": i.agent_info,
                "agentCapabilities": i.capabilities,
                "authMethods": i.auth_methods,
            }),
            None => Value::Null,
        }
    }

    /// `{exitCode, signal, stderrTail}` once the agent's current process ended, else `null` (a
    /// supervised agent's is `null` again once it was restarted).
    #[napi]
    pub fn exit_info(&self) -> Value {
        self.agent
            .exit_info()
            .and_then(|e| serde_json::to_value(e).ok())
            .unwrap_or(Value::Null)
    }

    /// The process id of the agent's current process (a restarted agent has a new one).
    #[napi]
    pub fn pid(&self) -> Option<u32> {
        self.agent.pid()
    }

    /// Whether it was spawned with a restart policy.
    #[napi(getter)]
    pub fn supervised(&self) -> bool {
        self.supervised
    }

    /// Ended for good: its process is gone and no restart is coming (`Agent::is_gone`).
    #[napi]
    pub fn is_gone(&self) -> bool {
        self.agent.is_gone()
    }

    /// The supervisor gave up (`agent_failed`): the agent stays down.
    #[napi]
    pub fn restarts_exhausted(&self) -> bool {
        self.agent.restarts_exhausted()
    }

    #[napi]
    pub async fn authenticate(&self, method_id: String, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(abort, async move { agent.authenticate(&method_id).await }).await
    }

    /// The agent's `authMethods`, parsed (JSON: `[{id, name, description, kind}]`).
    #[napi]
    pub fn auth_methods(&self) -> Value {
        serde_json::to_value(self.agent.auth_methods()).unwrap_or(Value::Null)
    }

    /// Terminal login, then the relaunched agent (`Agent::terminal_auth`).
    #[napi]
    pub async fn terminal_auth(
        &self,
        method_id: String,
        abort: Option<u32>,
    ) -> Result<NativeAgent> {
        let agent = self.agent.clone();
        let fresh = abortable(abort, async move { agent.terminal_auth(&method_id).await }).await?;
        // Relaunched from the same spec, restart policy included.
        Ok(NativeAgent {
            agent: fresh,
            supervised: self.supervised,
        })
    }

    /// `logout` (needs `agentCapabilities.auth.logout`; otherwise fails with `unsupported` and
    /// nothing is sent).
    #[napi]
    pub async fn logout(&self, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(abort, async move { agent.logout().await }).await
    }

    #[napi]
    pub async fn new_session(
        &self,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativeSession> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move { agent.new_session(options).await })
            .await
            .map(wrap_session)
    }

    #[napi]
    pub async fn load_session(
        &self,
        session_id: String,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativeSession> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.load_session(&session_id, options).await
        })
        .await
        .map(wrap_session)
    }

    #[napi]
    pub async fn resume_session(
        &self,
        session_id: String,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativeSession> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.resume_session(&session_id, options).await
        })
        .await
        .map(wrap_session)
    }

    /// `session/fork` (unstable: needs `unstable: ['session/fork']`).
    #[napi]
    pub async fn fork_session(
        &self,
        session_id: String,
        options_json: String,
        abort: Option<u32>,
    ) -> Result<NativeSession> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.fork_session(&session_id, options).await
        })
        .await
        .map(wrap_session)
    }

    /// `session/list`: `{sessions, nextCursor?}`.
    #[napi]
    pub async fn list_sessions(
        &self,
        cwd: Option<String>,
        cursor: Option<String>,
        abort: Option<u32>,
    ) -> Result<Value> {
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.list_sessions(cwd.as_deref(), cursor.as_deref()).await
        })
        .await
    }

    #[napi]
    pub async fn close_session(&self, session_id: String, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(abort, async move { agent.close_session(&session_id).await }).await
    }

    #[napi]
    pub async fn delete_session(&self, session_id: String, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(
            abort,
            async move { agent.delete_session(&session_id).await },
        )
        .await
    }

    /// `session/status` (unstable): `{status, reported}`.
    #[napi]
    pub async fn session_status(&self, session_id: String, abort: Option<u32>) -> Result<Value> {
        let agent = self.agent.clone();
        abortable(abort, async move {
            let s = agent.session_status(&session_id).await?;
            Ok(serde_json::to_value(s).unwrap_or_default())
        })
        .await
    }

    /// `session/set_title` (unstable): the title the agent stored.
    #[napi]
    pub async fn set_session_title(
        &self,
        session_id: String,
        title: String,
        abort: Option<u32>,
    ) -> Result<String> {
        let agent = self.agent.clone();
        abortable(abort, async move {
            agent.set_session_title(&session_id, &title).await
        })
        .await
    }

    /// `session/archive` (unstable).
    #[napi]
    pub async fn archive_session(&self, session_id: String, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(
            abort,
            async move { agent.archive_session(&session_id).await },
        )
        .await
    }

    /// `session/unarchive` (unstable).
    #[napi]
    pub async fn unarchive_session(&self, session_id: String, abort: Option<u32>) -> Result<()> {
        let agent = self.agent.clone();
        abortable(
            abort,
            async move { agent.unarchive_session(&session_id).await },
        )
        .await
    }

    /// `session/options` (unstable): `{modes, configOptions}`.
    #[napi]
    pub async fn session_options(
        &self,
        options_json: String,
        session_id: Option<String>,
        abort: Option<u32>,
    ) -> Result<Value> {
        let options = session_options(&options_json)?;
        let agent = self.agent.clone();
        abortable(abort, async move {
            let d = agent
                .session_options(&options, session_id.as_deref())
                .await?;
            Ok(serde_json::to_value(d).unwrap_or_default())
        })
        .await
    }

    /// Send an extension request (`_vendor/...`) and get its raw result.
    #[napi]
    pub async fn ext_request(
        &self,
        method: String,
        params: Value,
        abort: Option<u32>,
    ) -> Result<Value> {
        if !method.starts_with('_') {
            return Err(invalid("extension methods start with `_`"));
        }
        let agent = self.agent.clone();
        let method = intern(method);
        abortable(
            abort,
            async move { agent.ext_request(method, &params).await },
        )
        .await
    }

    /// A handle to an open session of this agent, or `null`.
    #[napi]
    pub fn session(&self, session_id: String) -> Option<NativeSession> {
        self.agent.session(&session_id).map(wrap_session)
    }

    /// Shut the agent down; resolves with `{exitCode, signal, stderrTail}`.
    #[napi]
    pub async fn shutdown(&self) -> Result<Value> {
        let info = self.agent.shutdown().await;
        Ok(serde_json::to_value(info).unwrap_or(Value::Null))
    }
}

/// The core takes request method names as `&'static str`. Extension method names are few, so
/// each distinct name is leaked once and reused (bounded by the number of distinct names).
fn intern(name: String) -> &'static str {
    static NAMES: OnceLock<Mutex<std::collections::HashSet<&'static str>>> = OnceLock::new();
    let names = NAMES.get_or_init(|| Mutex::new(std::collections::HashSet::new()));
    let Ok(mut names) = names.lock() else {
        return Box::leak(name.into_boxed_str());
    };
    if let Some(known) = names.get(name.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.insert(leaked);
    leaked
}
