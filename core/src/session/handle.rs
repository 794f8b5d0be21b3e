//! [`Session`]: the embedder's handle to one open session, and [`TurnResult`].

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::oneshot;

use crate::agent::{Agent, closed};
use crate::connection::{AgentInfo, Command, ReqCtx};
use crate::error::{Error, Result};
use crate::session::{Cancel, ModelSwitch, Models, SessionView};

/// The result of a prompt turn. Every face returns it in this one shape
/// ([`TurnResult::to_json`]: `turn`, `stopReason`, `usage`, `raw`, `text`, `thought`,
/// `textTruncated`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnResult {
    /// The host's turn id (the `turn` field of events).
    pub turn: u64,
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`, `cancelled` (or a future value).
    pub stop_reason: String,
    /// `usage` of the prompt response, when the agent sent it.
    pub usage: Option<Value>,
    /// The whole prompt response.
    pub raw: Value,
    /// The agent's message text of this turn, assembled from its `agent_message_chunk` text
    /// blocks (so a script can print the answer without reading events).
    pub text: String,
    /// The thought text (`agent_thought_chunk`), kept apart from `text`.
    pub thought: String,
    /// `text` or `thought` reached `session::TURN_TEXT_LIMIT` (4 MiB) and was cut there.
    pub text_truncated: bool,
}

impl TurnResult {
    /// The one JSON shape every face returns (`usage` is `null` when the agent sent none).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What [`Session::steer`] did with the text (its later fate is in `steer` events).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SteerResult {
    /// The host's id for the steer (the `steer` field of its events).
    pub steer: u64,
    /// `injected` (into the running turn), `started_new_turn` (the agent began a turn of its
    /// own), `queued` (waits for the running turn to end) or `prompted` (sent as the next
    /// prompt: `turn` is its turn).
    pub outcome: crate::events::payload::SteerOutcome,
    /// `injected`: the turn it joined; `prompted`: its own turn.
    pub turn: Option<u64>,
}

impl SteerResult {
    /// The one JSON shape every face returns: `{steer, outcome, turn}`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// An open session. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Session {
    agent: Agent,
    id: Arc<str>,
    /// The state as of opening; the current connection's view is preferred (a restarted agent
    /// has a new one), this is what a closed session still shows.
    view: Arc<Mutex<SessionView>>,
}

impl Session {
    pub(crate) fn new(agent: Agent, id: Arc<str>, view: Arc<Mutex<SessionView>>) -> Session {
        Session { agent, id, view }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// A snapshot of the materialised session state.
    pub fn state(&self) -> SessionView {
        let view = self
            .agent
            .link()
            .shared
            .session_view(&self.id)
            .unwrap_or_else(|| self.view.clone());
        view.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Send a prompt and wait for the turn to end. `content` is an array of ACP content blocks;
    /// blocks the agent did not advertise (image, audio, embedded resources) are refused locally.
    pub async fn prompt(&self, content: Vec<Value>) -> Result<TurnResult> {
        self.prompt_abortable(content, std::future::pending()).await
    }

    /// [`Session::prompt`] with a Stop button: once `abort` resolves, `session/cancel` is sent
    /// (pending permission requests of the session are answered `cancelled` at once) and the
    /// agent has `HostConfig::cancel_grace` to end the turn. Its answer (normally stop reason
    /// `cancelled`) is returned when it comes in time; otherwise the call fails with
    /// [`Error::Cancelled`]. Either way it settles: an agent that ignores the cancel cannot hold
    /// the caller. Late events of the turn still arrive with its turn id, and a late answer ends
    /// the turn (`turn_ended`) once. Dropping the future instead abandons the turn at once (the
    /// agent also gets `session/cancel`).
    pub async fn prompt_abortable(
        &self,
        content: Vec<Value>,
        abort: impl Future<Output = ()>,
    ) -> Result<TurnResult> {
        let info = self.agent.require_info()?;
        check_prompt(&info, &content)?;
        let turn = self
            .agent
            .host_shared()
            .next_turn
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        let params = serde_json::json!({ "sessionId": &*self.id, "prompt": content });
        let text = Arc::new(Mutex::new(crate::session::TurnText::default()));
        let ctx = ReqCtx::Prompt {
            session: self.id.clone(),
            turn,
            text: text.clone(),
        };
        let timeout = self.agent.host_shared().config.prompt_timeout;
        let raw = self
            .agent
            .request_abortable("session/prompt", &params, ctx, timeout, abort)
            .await?;
        let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        let stop_reason = value
            .get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::Protocol("prompt response has no stopReason".into()))?;
        // Taken, not copied: the text can be megabytes (the actor let go of it when the turn
        // ended, in the step that answered the prompt).
        let text = text
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        Ok(TurnResult {
            turn,
            stop_reason,
            usage: value.get("usage").cloned(),
            raw: value,
            text: text.text,
            thought: text.thought,
            text_truncated: text.truncated,
        })
    }

    /// Convenience: prompt with one text block.
    pub async fn prompt_text(&self, text: &str) -> Result<TurnResult> {
        self.prompt(vec![serde_json::json!({ "type": "text", "text": text })])
            .await
    }

    /// Steer (unstable: needs `"_session/steering"` in [`crate::HostConfig::unstable`]): add
    /// `content` (ACP content blocks, checked as for a prompt) to the session's conversation
    /// while a turn runs. When the agent advertises steering (`_meta.steering.supported` on
    /// `initialize`; [`crate::steering_supported`]) it is sent into the running turn
    /// (`_session/steering`, outcome `injected`); otherwise, or when the agent asks for a prompt
    /// instead, it waits as the session's next prompt (`queued`) and is sent as an ordinary
    /// `session/prompt` of its own turn when the running turn ends (`prompted`; with no turn
    /// running, at once). A cancel of the session's turn, the session closing or the agent
    /// ending reject the queued steers. Every step is a `steer` event (docs/STEERING.md).
    ///
    /// Errors: `unsupported` (not opted in), `invalid_argument` (content), `busy` (16 steers
    /// already wait), `not_found` (session not open), the agent's error or `protocol` when it
    /// did not take the steer (outcome `failed`), `cancelled`/`closed` when it was rejected
    /// before it was queued.
    pub async fn steer(&self, content: Vec<Value>) -> Result<SteerResult> {
        let host = self.agent.host_shared();
        if !host
            .config
            .unstable
            .iter()
            .any(|m| m == "_session/steering")
        {
            return Err(Error::Unsupported(
                "steering is unstable (the `_session/steering` extension): opt in with \
                 `unstable: [\"_session/steering\"]` in the host's config"
                    .into(),
            ));
        }
        let info = self.agent.require_info()?;
        check_prompt(&info, &content)?;
        let prompt = Value::Array(content);
        crate::wire::depth::check_fits(&prompt, 3, "the steer's content (the JSON given)")?;
        let steer = host.next_steer.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        self.agent
            .send(Command::Steer {
                session: self.id.clone(),
                steer,
                prompt,
                reply: tx,
            })
            .await?;
        rx.await.map_err(|_| closed())?
    }

    /// Convenience: steer with one text block.
    pub async fn steer_text(&self, text: &str) -> Result<SteerResult> {
        self.steer(vec![serde_json::json!({ "type": "text", "text": text })])
            .await
    }

    /// `session/cancel`: the agent should end the turn with `cancelled`; every pending permission
    /// request of this session is answered `cancelled` at once. The turn in flight then has
    /// `HostConfig::cancel_grace` to end; if the agent ignores the cancel, the host gives up on
    /// it: its `prompt` call fails with [`Error::Cancelled`] and the turn ends (`turn_ended`
    /// with that error). Late updates keep the turn id; a late answer is reported as a
    /// `protocol_error` (`late_response`), never applied.
    pub async fn cancel(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.agent
            .send(Command::Cancel {
                session: self.id.clone(),
                reply: tx,
            })
            .await?;
        rx.await.map_err(|_| closed())?
    }

    /// `session/set_mode` (the agent must have returned `modes` with that mode id).
    pub async fn set_mode(&self, mode_id: &str) -> Result<()> {
        let modes = self.state().modes;
        let Some(modes) = modes else {
            return Err(Error::Unsupported(
                "agent did not return session modes".into(),
            ));
        };
        let known = modes
            .get("availableModes")
            .and_then(Value::as_array)
            .is_some_and(|m| {
                m.iter()
                    .any(|x| x.get("id").and_then(Value::as_str) == Some(mode_id))
            });
        if !known {
            return Err(Error::InvalidArgument(format!("unknown mode `{mode_id}`")));
        }
        let params = serde_json::json!({ "sessionId": &*self.id, "modeId": mode_id });
        let ctx = ReqCtx::SetMode {
            session: self.id.clone(),
            mode: mode_id.to_owned(),
        };
        self.agent
            .request(
                "session/set_mode",
                &params,
                ctx,
                self.agent.control_timeout(),
            )
            .await?;
        Ok(())
    }

    /// `session/set_config_option`; returns the complete updated option list.
    pub async fn set_config_option(&self, config_id: &str, value: Value) -> Result<Value> {
        let options = self.state().config_options;
        let Some(options) = options else {
            return Err(Error::Unsupported(
                "agent did not return config options".into(),
            ));
        };
        let option = options
            .as_array()
            .and_then(|o| {
                o.iter()
                    .find(|x| x.get("id").and_then(Value::as_str) == Some(config_id))
            })
            .cloned();
        let Some(option) = option else {
            return Err(Error::InvalidArgument(format!(
                "unknown config option `{config_id}`"
            )));
        };
        let mut params =
            serde_json::json!({ "sessionId": &*self.id, "configId": config_id, "value": value });
        if option.get("type").and_then(Value::as_str) == Some("boolean") {
            params["type"] = Value::from("boolean");
        }
        let ctx = ReqCtx::SetConfig {
            session: self.id.clone(),
        };
        let raw = self
            .agent
            .request(
                "session/set_config_option",
                &params,
                ctx,
                self.agent.control_timeout(),
            )
            .await?;
        let v: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        Ok(v.get("configOptions").cloned().unwrap_or(Value::Null))
    }

    /// The models the agent offers for this session, and the current one: from its config
    /// option of category `model` (ACP v1), else from the legacy `models` of the session/new
    /// (load, resume) response that older agents send. `None` when the agent offers no choice.
    pub fn models(&self) -> Option<Models> {
        Models::of(&self.state())
    }

    /// Switch the session's model: through the `model` config option when the agent has one
    /// (`session/set_config_option`), else through the legacy `session/set_model` for agents
    /// that only answer that. `model_id` must be one the agent offered.
    pub async fn set_model(&self, model_id: &str) -> Result<()> {
        let Some(models) = self.models() else {
            return Err(Error::Unsupported(
                "agent offers no model choice (no `model` config option, no `models`)".into(),
            ));
        };
        if !models.available.iter().any(|m| m.id == model_id) {
            return Err(Error::InvalidArgument(format!(
                "unknown model `{model_id}`"
            )));
        }
        match &models.via {
            ModelSwitch::ConfigOption(config_id) => {
                self.set_config_option(config_id, Value::from(model_id))
                    .await?;
            }
            ModelSwitch::Legacy => {
                let params = serde_json::json!({ "sessionId": &*self.id, "modelId": model_id });
                let ctx = ReqCtx::SetModel {
                    session: self.id.clone(),
                    model: model_id.to_owned(),
                };
                self.agent
                    .request(
                        "session/set_model",
                        &params,
                        ctx,
                        self.agent.control_timeout(),
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// ACP v2 `tool_call/cancel`: ask the agent to stop one tool call of this session. Returns
    /// when the agent *accepted* the cancellation, with its answer (`{}`, maybe `_meta`); the
    /// work has not necessarily stopped then. The completion is a later `tool_call_update` with
    /// a final `status` (normally `cancelled`; `completed` or `failed` if the work finished
    /// first), delivered as an ordinary `session_update` event after this call's answer.
    ///
    /// Decided here from what the agent last said, nothing sent otherwise: `unsupported` on a
    /// v1 connection, or when the tool call's latest `capabilities` (the schema's patch rule:
    /// omitted keeps, `null` clears) do not advertise `cancel`; `invalid_argument` for an id no
    /// update of this session named. The agent's refusal (`-32602`: already final, ...) is
    /// `agent_error`; the host's `request_timeout` applies.
    pub async fn cancel_tool_call(&self, tool_call_id: &str) -> Result<Value> {
        self.cancel_work(Work::ToolCall, tool_call_id).await
    }

    /// ACP v2 `terminal/cancel`: ask the agent to stop one of its terminals. As
    /// [`Session::cancel_tool_call`]: the answer is the acceptance; the completion is a later
    /// `terminal_update` with `exitStatus` (a `session_update` event). Cancelling does not
    /// release the terminal or change a tool call that shows it.
    pub async fn cancel_terminal(&self, terminal_id: &str) -> Result<Value> {
        self.cancel_work(Work::Terminal, terminal_id).await
    }

    async fn cancel_work(&self, work: Work, id: &str) -> Result<Value> {
        let (method, field, what) = match work {
            Work::ToolCall => ("tool_call/cancel", "toolCallId", "tool call"),
            Work::Terminal => ("terminal/cancel", "terminalId", "terminal"),
        };
        let info = self.agent.require_info()?;
        if !info.is_v2() {
            return Err(Error::Unsupported(format!(
                "{method} is ACP v2: this connection speaks v1 (opt in with `unstable: \
                 [\"protocol/v2\"]`, and the agent must answer 2)"
            )));
        }
        let view = self
            .agent
            .link()
            .shared
            .session_view(&self.id)
            .unwrap_or_else(|| self.view.clone());
        let known = view
            .lock()
            .map(|v| match work {
                Work::ToolCall => v.cancellable.tool_call(id),
                Work::Terminal => v.cancellable.terminal(id),
            })
            .unwrap_or(Cancel::Unknown);
        match known {
            Cancel::Unknown => {
                return Err(Error::InvalidArgument(format!(
                    "no {what} `{id}` in session `{}`",
                    self.id
                )));
            }
            Cancel::NotAdvertised => {
                return Err(Error::Unsupported(format!(
                    "the agent's latest update of {what} `{id}` does not advertise \
                     `capabilities.cancel`"
                )));
            }
            Cancel::Advertised => {}
        }
        let params = serde_json::json!({ "sessionId": &*self.id, field: id });
        let raw = self
            .agent
            .request(method, &params, ReqCtx::Plain, self.agent.control_timeout())
            .await?;
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(v @ Value::Object(_)) => Ok(v),
            // `null` is the empty answer (the schema's `default_on_null`).
            Ok(Value::Null) => Ok(Value::Object(serde_json::Map::new())),
            _ => Err(Error::Protocol(format!(
                "the agent's {method} result is not an object"
            ))),
        }
    }

    /// `session/close` for this session.
    pub async fn close(&self) -> Result<()> {
        self.agent.close_session(&self.id).await
    }
}

/// What `cancel_work` cancels.
#[derive(Clone, Copy)]
enum Work {
    ToolCall,
    Terminal,
}

/// Refuse prompt content the agent did not advertise (nothing is sent).
fn check_prompt(info: &AgentInfo, content: &[Value]) -> Result<()> {
    for (i, block) in content.iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let needs = match kind {
            "text" | "resource_link" => None,
            "image" => Some("image"),
            "audio" => Some("audio"),
            "resource" => Some("embeddedContext"),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "prompt block {i} has unknown type `{other}`"
                )));
            }
        };
        if let Some(cap) = needs
            && !info.prompt_capability(cap)
        {
            return Err(Error::Unsupported(format!(
                "prompt block {i} is `{kind}` but the agent does not advertise promptCapabilities.{cap}"
            )));
        }
    }
    Ok(())
}
