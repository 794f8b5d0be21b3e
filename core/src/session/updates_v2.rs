//! The ACP v2 update kinds the session view takes in beyond v1's: plans by id (`plan_update`,
//! `plan_removed`, also v1's unstable twins) and tool-call content streamed in chunks
//! (`tool_call_content_chunk`). v2's `tool_call_update` upsert needs nothing new: v1's handling
//! already creates a call it has not seen.

use serde_json::{Map, Value};

use super::{SessionView, bound_tool_call};

impl SessionView {
    /// `plan` shows the entries of the `items` plan updated last. A markdown plan has no
    /// entries: it leaves `plan` alone, unless it replaces the plan shown (same `planId`).
    pub(super) fn apply_plan_update(&mut self, mut obj: Map<String, Value>) {
        let Some(Value::Object(mut plan)) = obj.remove("plan") else {
            return;
        };
        let id = plan
            .get("planId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let entries = match plan.get("type").and_then(Value::as_str) {
            Some("items") => plan.remove("entries").filter(Value::is_array),
            _ => None,
        };
        if entries.is_some() {
            self.plan = entries;
            self.plan_id = id;
        } else if id.is_some() && id == self.plan_id {
            self.plan = None;
            self.plan_id = None;
        }
    }

    /// Removing the plan shown clears it; another plan's removal changes nothing.
    pub(super) fn apply_plan_removed(&mut self, obj: &Map<String, Value>) {
        let id = obj.get("planId").and_then(Value::as_str);
        if id.is_some() && id == self.plan_id.as_deref() {
            self.plan = None;
            self.plan_id = None;
        }
    }

    /// One content item appended to a tool call (an unknown call is created, as a v1
    /// `tool_call_update` for an unannounced call is), within the view's bounds.
    pub(super) fn append_tool_call_content(&mut self, mut obj: Map<String, Value>) {
        let (Some(id), Some(item)) = (
            obj.get("toolCallId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            obj.remove("content").filter(|c| !c.is_null()),
        ) else {
            return;
        };
        let i = match self.tool_index.get(&id).copied() {
            Some(i) => i,
            None => {
                self.push_tool_call(id.clone(), serde_json::json!({ "toolCallId": id }));
                self.tool_calls.len() - 1
            }
        };
        if let Some(Value::Object(call)) = self.tool_calls.get_mut(i) {
            match call.get_mut("content") {
                Some(Value::Array(items)) => items.push(item),
                _ => {
                    call.insert("content".into(), Value::Array(vec![item]));
                }
            }
        }
        if let Some(call) = self.tool_calls.get_mut(i) {
            bound_tool_call(call);
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
    fn v2_upserts_and_content_chunks_build_the_tool_call() {
        let mut view = SessionView::new("s", None);
        // v2 has no `tool_call`: the first `tool_call_update` creates the call.
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"tool_call_update","toolCallId":"c","title":"Run","kind":"execute","status":"in_progress","capabilities":{"cancel":{}}}),
        );
        let text =
            |t: &str| serde_json::json!({"type":"content","content":{"type":"text","text":t}});
        for t in ["one", "two"] {
            apply(
                &mut view,
                serde_json::json!({"sessionUpdate":"tool_call_content_chunk","toolCallId":"c","content":text(t)}),
            );
        }
        // A chunk for a call never announced creates it too.
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"tool_call_content_chunk","toolCallId":"d","content":text("x")}),
        );
        // A chunk without content changes nothing.
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"tool_call_content_chunk","toolCallId":"c"}),
        );
        let c = view.tool_call("c").cloned().unwrap_or_default();
        assert_eq!(c["title"], "Run");
        assert_eq!(c["content"], serde_json::json!([text("one"), text("two")]));
        assert_eq!(
            view.tool_call("d").unwrap()["content"],
            serde_json::json!([text("x")])
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}),
        );
        let typed = view.typed_tool_calls();
        assert_eq!(typed.len(), 2);
        assert_eq!(typed[0].fields.content.as_ref().map(Vec::len), Some(2));
        assert_eq!(
            typed[0].fields.status,
            Some(crate::schema::v1::ToolCallStatus::Completed)
        );
    }

    #[test]
    fn v2_plan_updates_set_the_plan_and_its_removal_clears_it() {
        let mut view = SessionView::new("s", None);
        let entries = serde_json::json!([{"content":"Read","priority":"high","status":"pending"}]);
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p1","entries":entries}}),
        );
        assert_eq!(view.plan.as_ref(), Some(&entries));
        assert_eq!(view.typed_plan().map(|p| p.len()), Some(1));
        // Removing another plan leaves it; removing this one clears it.
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan_removed","planId":"p0"}),
        );
        assert_eq!(view.plan.as_ref(), Some(&entries));
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan_removed","planId":"p1"}),
        );
        assert_eq!(view.plan, None);
        // A markdown plan has no entries: another one leaves the plan shown, one under its id
        // replaces it.
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p2","entries":entries}}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan_update","plan":{"type":"markdown","planId":"p3","content":"# Plan"}}),
        );
        assert_eq!(view.plan.as_ref(), Some(&entries));
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan_update","plan":{"type":"markdown","planId":"p2","content":"# Plan"}}),
        );
        assert_eq!(view.plan, None);
        // v1's `plan` replaces whatever was shown.
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p4","entries":entries}}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan","entries":[]}),
        );
        apply(
            &mut view,
            serde_json::json!({"sessionUpdate":"plan_removed","planId":"p4"}),
        );
        assert_eq!(view.plan, Some(serde_json::json!([])));
    }
}
