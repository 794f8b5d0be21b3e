//! Materialised session state: what a UI needs without re-deriving it from the update stream.

mod cancellable;
mod handle;
mod models;
mod turn_text;
mod updates_v2;

use std::collections::HashMap;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub(crate) use cancellable::Cancel;
pub use handle::{Session, SteerResult, TurnResult};
pub use models::{ModelInfo, ModelSwitch, Models};
pub use turn_text::{TURN_TEXT_LIMIT, TurnText};

/// A snapshot of one session, kept current by the connection as updates arrive.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub session_id: String,
    pub cwd: Option<String>,
    /// `additionalDirectories` the session was opened with (also sandbox roots).
    pub additional_directories: Vec<String>,
    /// False once the session was closed, deleted, or its agent exited.
    pub open: bool,
    /// The legacy `modes` state (`{currentModeId, availableModes}`), kept current by
    /// `current_mode_update` and `set_mode`.
    pub modes: Option<Value>,
    pub current_mode_id: Option<String>,
    /// The complete list of config options, in the agent's order.
    pub config_options: Option<Value>,
    /// The legacy `models` (`{availableModels, currentModelId}`) of the open response, for agents
    /// that predate the `model` config option.
    pub models: Option<Value>,
    /// Tool calls merged from `tool_call` + `tool_call_update` (+ ACP v2's
    /// `tool_call_content_chunk`), in order of first appearance.
    /// Bounded: at [`MAX_TOOL_CALLS`] it is trimmed to three quarters, dropping finished calls
    /// (`completed`/`failed`/`cancelled`) first, then the oldest (the events still carry every
    /// call).
    pub tool_calls: Vec<Value>,
    /// How many tool calls were dropped from `tool_calls` by the bound.
    pub tool_calls_dropped: u64,
    /// The current plan entries (`plan` replaces the whole plan; under ACP v2, the `items` plan
    /// of the latest `plan_update`, cleared by its `plan_removed`).
    pub plan: Option<Value>,
    pub available_commands: Option<Value>,
    /// Latest `usage_update` (`{used, size, cost?}`).
    pub usage: Option<Value>,
    pub title: Option<String>,
    pub updated_at: Option<String>,
    /// The turn in flight, if any.
    pub active_turn: Option<u64>,
    pub last_stop_reason: Option<String>,
    #[serde(skip)]
    tool_index: HashMap<String, usize>,
    /// The `planId` of the ACP v2 `plan_update` that set `plan`: its `plan_removed` clears it.
    #[serde(skip)]
    plan_id: Option<String>,
    /// v2: the tool calls and terminals the agent lets the client cancel.
    #[serde(skip)]
    pub(crate) cancellable: cancellable::Cancellable,
}

/// Tool calls kept per session view.
pub const MAX_TOOL_CALLS: usize = 1024;

/// The most a tool call's `content`, `rawInput` or `rawOutput` may take in the session view (as
/// JSON). Agents that resend the whole accumulated output in every `tool_call_update` would
/// otherwise grow it without end; the events still carry every update as sent. Past the bound
/// `content` keeps its newest blocks (a text block cut from the front on a character boundary),
/// `rawInput`/`rawOutput` are dropped, and `_meta.acpHost.truncated` names what was cut.
pub const MAX_TOOL_CALL_FIELD_BYTES: usize = 64 * 1024;

impl SessionView {
    /// Append a tool call, keeping the table bounded. Past the bound it is trimmed to three
    /// quarters in one go (finished calls first, then the oldest), so the cost is amortised.
    fn push_tool_call(&mut self, id: String, call: Value) {
        if self.tool_calls.len() >= MAX_TOOL_CALLS {
            let keep = MAX_TOOL_CALLS * 3 / 4;
            let finished = |c: &Value| {
                matches!(
                    c.get("status").and_then(Value::as_str),
                    Some("completed" | "failed" | "cancelled")
                )
            };
            let before = self.tool_calls.len();
            let mut excess = before - keep;
            self.tool_calls.retain(|c| {
                if excess > 0 && finished(c) {
                    excess -= 1;
                    false
                } else {
                    true
                }
            });
            if excess > 0 {
                self.tool_calls.drain(..excess);
            }
            self.tool_calls_dropped += (before - self.tool_calls.len()) as u64;
            self.tool_index.clear();
            for (i, c) in self.tool_calls.iter().enumerate() {
                if let Some(id) = c.get("toolCallId").and_then(Value::as_str) {
                    self.tool_index.insert(id.to_owned(), i);
                }
            }
        }
        self.tool_index.insert(id, self.tool_calls.len());
        self.tool_calls.push(call);
    }

    pub(crate) fn new(session_id: &str, cwd: Option<String>) -> Self {
        SessionView {
            session_id: session_id.to_owned(),
            cwd,
            open: true,
            ..Default::default()
        }
    }

    /// The tool calls typed by the pinned ACP schema (`ToolCallUpdate`: a call the agent only
    /// updated may have no title), decoded leniently like events (a call that cannot be typed is
    /// left out; the JSON in `tool_calls` has every call).
    pub fn typed_tool_calls(&self) -> Vec<crate::schema::v1::ToolCallUpdate> {
        self.tool_calls
            .iter()
            .filter_map(|c| crate::events::lenient_value(c).0)
            .collect()
    }

    /// The current plan's entries, typed (see [`SessionView::typed_tool_calls`]).
    pub fn typed_plan(&self) -> Option<Vec<crate::schema::v1::PlanEntry>> {
        self.plan
            .as_ref()
            .and_then(|p| crate::events::lenient_value(p).0)
    }

    /// The config options, typed (see [`SessionView::typed_tool_calls`]).
    pub fn typed_config_options(&self) -> Option<Vec<crate::schema::v1::SessionConfigOption>> {
        self.config_options
            .as_ref()
            .and_then(|o| crate::events::lenient_value(o).0)
    }

    /// Look a tool call up by id.
    pub fn tool_call(&self, id: &str) -> Option<&Value> {
        self.tool_index
            .get(id)
            .and_then(|&i| self.tool_calls.get(i))
    }

    /// Apply the `modes`/`configOptions` of a session/new|load|resume|fork response.
    pub(crate) fn apply_open_result(&mut self, result: &Value) {
        if let Some(modes) = result.get("modes").filter(|m| !m.is_null()) {
            self.current_mode_id = modes
                .get("currentModeId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.modes = Some(modes.clone());
        }
        if let Some(opts) = result.get("configOptions").filter(|o| o.is_array()) {
            self.config_options = Some(opts.clone());
        }
        if let Some(models) = result.get("models").filter(|m| m.is_object()) {
            self.models = Some(models.clone());
        }
    }

    pub(crate) fn set_legacy_model(&mut self, model_id: &str) {
        if let Some(Value::Object(m)) = &mut self.models {
            m.insert("currentModelId".into(), Value::String(model_id.to_owned()));
        }
    }

    pub(crate) fn set_mode(&mut self, mode_id: &str) {
        self.current_mode_id = Some(mode_id.to_owned());
        if let Some(Value::Object(m)) = &mut self.modes {
            m.insert("currentModeId".into(), Value::String(mode_id.to_owned()));
        }
    }

    /// Apply one `session/update`. Chunks are not parsed at all (hot path); other kinds are parsed
    /// once into a `Value`. Malformed payloads leave the view unchanged (the event still flows).
    pub(crate) fn apply_update(&mut self, kind: &str, update: &RawValue) {
        match kind {
            "agent_message_chunk" | "user_message_chunk" | "agent_thought_chunk" => {}
            _ => {
                let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(update.get()) else {
                    return;
                };
                self.apply_parsed(kind, obj);
            }
        }
    }

    fn apply_parsed(&mut self, kind: &str, mut obj: Map<String, Value>) {
        obj.remove("sessionUpdate");
        self.cancellable.observe(kind, &obj);
        match kind {
            "tool_call" => {
                let Some(id) = obj
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                else {
                    return;
                };
                let mut call = Value::Object(obj);
                bound_tool_call(&mut call);
                match self.tool_index.get(&id) {
                    Some(&i) => self.tool_calls[i] = call,
                    None => self.push_tool_call(id, call),
                }
            }
            "tool_call_update" => {
                let Some(id) = obj
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                else {
                    return;
                };
                match self.tool_index.get(&id).copied() {
                    Some(i) => {
                        if let Some(Value::Object(existing)) = self.tool_calls.get_mut(i) {
                            for (k, v) in obj {
                                // Only changed fields are sent; `null` clears a field.
                                if v.is_null() {
                                    existing.remove(&k);
                                } else {
                                    existing.insert(k, v);
                                }
                            }
                        }
                        if let Some(call) = self.tool_calls.get_mut(i) {
                            bound_tool_call(call);
                        }
                    }
                    None => {
                        // An update for a call we never saw announced: keep what we know.
                        obj.retain(|_, v| !v.is_null());
                        let mut call = Value::Object(obj);
                        bound_tool_call(&mut call);
                        self.push_tool_call(id, call);
                    }
                }
            }
            "plan" => {
                self.plan = obj.remove("entries");
                self.plan_id = None;
            }
            "plan_update" => self.apply_plan_update(obj),
            "plan_removed" => self.apply_plan_removed(&obj),
            "tool_call_content_chunk" => self.append_tool_call_content(obj),
            "available_commands_update" => {
                self.available_commands = obj.remove("availableCommands")
            }
            "current_mode_update" => {
                // The docs example uses `modeId`; the schema says `currentModeId`. Accept both.
                let mode = obj.get("currentModeId").or_else(|| obj.get("modeId"));
                if let Some(mode) = mode.and_then(Value::as_str).map(str::to_owned) {
                    self.set_mode(&mode);
                }
            }
            "config_option_update" => {
                if let Some(opts) = obj.remove("configOptions") {
                    self.config_options = Some(opts);
                }
            }
            "session_info_update" => {
                // Patch semantics: absent = unchanged, null = cleared.
                if let Some(t) = obj.get("title") {
                    self.title = t.as_str().map(str::to_owned);
                }
                if let Some(u) = obj.get("updatedAt") {
                    self.updated_at = u.as_str().map(str::to_owned);
                }
            }
            "usage_update" => self.usage = Some(Value::Object(obj)),
            _ => {} // unknown future kinds: delivered as events, not materialised
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::raw_json;

    fn apply(view: &mut SessionView, v: Value) {
        let kind = v["sessionUpdate"].as_str().unwrap_or_default().to_owned();
        view.apply_update(&kind, &raw_json(&v));
    }

    #[test]
    fn tool_calls_are_bounded_dropping_finished_ones_first() {
        let mut view = SessionView::new("s", None);
        let call = |id: usize, status: &str| {
            serde_json::value::to_raw_value(&serde_json::json!({
                "sessionUpdate": "tool_call", "toolCallId": format!("t{id}"), "status": status
            }))
            .unwrap()
        };
        view.apply_update("tool_call", &call(0, "pending"));
        view.apply_update("tool_call", &call(1, "completed"));
        let total = MAX_TOOL_CALLS * 3;
        for i in 2..total {
            view.apply_update("tool_call", &call(i, "pending"));
            assert!(view.tool_calls.len() <= MAX_TOOL_CALLS);
        }
        assert_eq!(
            view.tool_calls_dropped as usize + view.tool_calls.len(),
            total
        );
        // The finished one went first, then the oldest; the newest are all there.
        assert!(view.tool_call("t1").is_none());
        assert!(view.tool_call("t0").is_none());
        for i in total - 100..total {
            assert!(view.tool_call(&format!("t{i}")).is_some(), "t{i}");
        }
        // An update still finds its call after re-indexing.
        let last = format!("t{}", total - 1);
        let upd = serde_json::value::to_raw_value(&serde_json::json!({
            "sessionUpdate": "tool_call_update", "toolCallId": last, "status": "completed"
        }))
        .unwrap();
        view.apply_update("tool_call_update", &upd);
        assert_eq!(view.tool_call(&last).unwrap()["status"], "completed");
    }

    #[test]
    fn tool_calls_merge_in_order_and_null_clears() {
        let mut view = SessionView::new("s", None);
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"Read","kind":"read","status":"pending","locations":[{"path":"/x"}]}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"tool_call","toolCallId":"b","title":"Edit"}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","locations":null}),
        );
        assert_eq!(view.tool_calls.len(), 2);
        let a = view.tool_call("a").cloned().unwrap_or_default();
        assert_eq!(a["status"], "completed");
        assert_eq!(a["title"], "Read");
        assert!(a.get("locations").is_none());
        assert_eq!(view.tool_calls[1]["toolCallId"], "b");
        // The same calls, typed.
        let typed = view.typed_tool_calls();
        assert_eq!(typed.len(), 2);
        assert_eq!(typed[0].tool_call_id.to_string(), "a");
        assert_eq!(
            typed[0].fields.status,
            Some(crate::schema::v1::ToolCallStatus::Completed)
        );
        assert_eq!(typed[0].fields.title.as_deref(), Some("Read"));
    }

    #[test]
    fn plan_mode_info_and_usage_are_materialised() {
        let mut view = SessionView::new("s", None);
        view.apply_open_result(
            &serde_json::json!({"modes":{"currentModeId":"ask","availableModes":[]}}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan","entries":[{"content":"x","priority":"high","status":"pending"}]}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"current_mode_update","currentModeId":"code"}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"session_info_update","title":"T"}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"usage_update","used":5,"size":10}),
        );
        assert_eq!(
            view.plan.as_ref().map(|p| p[0]["content"].clone()),
            Some(Value::from("x"))
        );
        let plan = view.typed_plan().expect("a typed plan");
        assert_eq!(plan[0].content, "x");
        assert_eq!(view.current_mode_id.as_deref(), Some("code"));
        assert_eq!(
            view.modes.as_ref().map(|m| m["currentModeId"].clone()),
            Some(Value::from("code"))
        );
        assert_eq!(view.title.as_deref(), Some("T"));
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"session_info_update","title":null}),
        );
        assert_eq!(view.title, None);
        assert_eq!(
            view.usage.as_ref().map(|u| u["used"].clone()),
            Some(Value::from(5))
        );
    }
}

fn json_len(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)
}

/// Keep a tool call's large fields within [`MAX_TOOL_CALL_FIELD_BYTES`] (see there).
fn bound_tool_call(call: &mut Value) {
    let Value::Object(obj) = call else { return };
    let mut cut: Vec<&str> = Vec::new();
    let mut omitted = 0usize;
    for field in ["rawInput", "rawOutput"] {
        if let Some(v) = obj.get(field) {
            let n = json_len(v);
            if n > MAX_TOOL_CALL_FIELD_BYTES {
                obj.remove(field);
                cut.push(field);
                omitted += n;
            }
        }
    }
    if let Some(Value::Array(blocks)) = obj.get_mut("content") {
        let total: usize = blocks.iter().map(json_len).sum();
        if total > MAX_TOOL_CALL_FIELD_BYTES {
            // Newest blocks first, while they fit; a text block that does not fit keeps its end.
            let mut kept = Vec::new();
            let mut room = MAX_TOOL_CALL_FIELD_BYTES;
            for mut block in blocks.drain(..).rev() {
                let n = json_len(&block);
                if n <= room {
                    room -= n;
                    kept.push(block);
                    continue;
                }
                if let Some(Value::String(text)) = block.pointer_mut("/content/text")
                    && room > 64
                {
                    let keep = room - 64;
                    let mut start = text.len().saturating_sub(keep);
                    while !text.is_char_boundary(start) {
                        start += 1;
                    }
                    *text = text[start..].to_owned();
                    kept.push(block);
                }
                break;
            }
            kept.reverse();
            omitted += total.saturating_sub(kept.iter().map(json_len).sum());
            *blocks = kept;
            cut.push("content");
        }
    }
    if cut.is_empty() {
        return;
    }
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        let prev = meta
            .get("acpHost")
            .and_then(|h| h.get("omittedBytes"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        meta.insert(
            "acpHost".into(),
            serde_json::json!({ "truncated": cut, "omittedBytes": prev + omitted as u64 }),
        );
    }
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    fn text_block(t: &str) -> Value {
        serde_json::json!({"type": "content", "content": {"type": "text", "text": t}})
    }

    #[test]
    fn a_resent_cumulative_output_stays_bounded_and_keeps_its_end() {
        let mut view = SessionView::new("s", None);
        let start = serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "build", "status": "in_progress"});
        view.apply_update(
            "tool_call",
            &RawValue::from_string(start.to_string()).unwrap_or_else(|_| unreachable!()),
        );
        let mut output = String::new();
        for i in 0..120 {
            output.push_str(&format!("line {i}: {}\n", "x".repeat(900)));
            let up = serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                "content": [text_block(&output)], "rawOutput": {"log": output}});
            view.apply_update(
                "tool_call_update",
                &RawValue::from_string(up.to_string()).unwrap_or_else(|_| unreachable!()),
            );
        }
        let call = view.tool_call("t1").cloned().unwrap_or_default();
        assert!(
            json_len(&call) < 2 * MAX_TOOL_CALL_FIELD_BYTES,
            "{}",
            json_len(&call)
        );
        let text = call
            .pointer("/content/0/content/text")
            .and_then(Value::as_str)
            .unwrap_or("");
        assert!(text.ends_with(&format!("line 119: {}\n", "x".repeat(900))));
        assert!(call.get("rawOutput").is_none());
        assert_eq!(
            call["_meta"]["acpHost"]["truncated"],
            serde_json::json!(["rawOutput", "content"])
        );
        assert!(
            call["_meta"]["acpHost"]["omittedBytes"]
                .as_u64()
                .unwrap_or(0)
                > 1_000_000
        );
        assert_eq!(call["title"], "build");
    }

    #[test]
    fn small_tool_calls_are_untouched() {
        let mut call = serde_json::json!({"toolCallId": "t", "content": [text_block("hi")], "rawInput": {"a": 1}});
        let before = call.clone();
        bound_tool_call(&mut call);
        assert_eq!(call, before);
    }
}
