//! ACP v2: which tool calls and terminals the agent currently lets the client cancel
//! (`tool_call/cancel`, `terminal/cancel`). Tracked per session from the agent's
//! `tool_call_update` / `terminal_update`s with the schema's patch rule for `capabilities`:
//! omitted leaves it as it was, `null` clears it, an object replaces it (a value that is
//! neither is ignored, as the schema crate's `DefaultOnError` does). Cancellation is advertised
//! while the latest `capabilities` has a `cancel` object.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Ids tracked per table. Past it the table is trimmed to three quarters in one go (ids that
/// cannot be cancelled first, then the oldest), so an agent cannot grow it without bound; a
/// dropped id is then unknown (`invalid_argument`).
pub const MAX_TRACKED: usize = 4096;

/// Whether an id can be cancelled, as far as the agent said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// Never named in an update of this session.
    Unknown,
    /// Named, but its latest `capabilities` do not advertise `cancel`.
    NotAdvertised,
    Advertised,
}

#[derive(Debug, Clone, Default)]
struct Table {
    /// id → (advertised, order of first appearance).
    ids: HashMap<String, (bool, u64)>,
    next: u64,
}

impl Table {
    fn observe(&mut self, id: &str, capabilities: Option<&Value>) {
        let advertised = match capabilities {
            None => None,
            Some(Value::Null) => Some(false),
            Some(Value::Object(c)) => Some(c.get("cancel").is_some_and(Value::is_object)),
            Some(_) => None,
        };
        if let Some(entry) = self.ids.get_mut(id) {
            if let Some(a) = advertised {
                entry.0 = a;
            }
            return;
        }
        if self.ids.len() >= MAX_TRACKED {
            self.trim();
        }
        self.next += 1;
        self.ids
            .insert(id.to_owned(), (advertised.unwrap_or(false), self.next));
    }

    fn trim(&mut self) {
        let mut order: Vec<(bool, u64, String)> = self
            .ids
            .iter()
            .map(|(id, &(a, n))| (a, n, id.clone()))
            .collect();
        // Not cancellable before cancellable, older before newer.
        order.sort();
        let excess = self.ids.len() - MAX_TRACKED * 3 / 4;
        for (_, _, id) in order.into_iter().take(excess) {
            self.ids.remove(&id);
        }
    }

    fn get(&self, id: &str) -> Cancel {
        match self.ids.get(id) {
            None => Cancel::Unknown,
            Some((true, _)) => Cancel::Advertised,
            Some((false, _)) => Cancel::NotAdvertised,
        }
    }
}

/// The session's cancellable tool calls and terminals.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cancellable {
    tool_calls: Table,
    terminals: Table,
}

impl Cancellable {
    /// One parsed session update (its `sessionUpdate` already removed).
    pub(crate) fn observe(&mut self, kind: &str, update: &Map<String, Value>) {
        let (table, key) = match kind {
            "tool_call" | "tool_call_update" => (&mut self.tool_calls, "toolCallId"),
            "terminal_update" => (&mut self.terminals, "terminalId"),
            _ => return,
        };
        if let Some(id) = update.get(key).and_then(Value::as_str) {
            table.observe(id, update.get("capabilities"));
        }
    }

    pub(crate) fn tool_call(&self, id: &str) -> Cancel {
        self.tool_calls.get(id)
    }

    pub(crate) fn terminal(&self, id: &str) -> Cancel {
        self.terminals.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn seen(c: &mut Cancellable, kind: &str, v: Value) {
        c.observe(kind, v.as_object().unwrap());
    }

    #[test]
    fn the_latest_capabilities_decide_with_the_patch_rule() {
        let mut c = Cancellable::default();
        assert_eq!(c.tool_call("a"), Cancel::Unknown);
        seen(
            &mut c,
            "tool_call_update",
            json!({"toolCallId": "a", "status": "pending"}),
        );
        assert_eq!(c.tool_call("a"), Cancel::NotAdvertised);
        seen(
            &mut c,
            "tool_call_update",
            json!({"toolCallId": "a", "capabilities": {"cancel": {}}}),
        );
        assert_eq!(c.tool_call("a"), Cancel::Advertised);
        // Omitted: unchanged; malformed: ignored.
        seen(
            &mut c,
            "tool_call_update",
            json!({"toolCallId": "a", "status": "in_progress"}),
        );
        seen(
            &mut c,
            "tool_call_update",
            json!({"toolCallId": "a", "capabilities": 7}),
        );
        assert_eq!(c.tool_call("a"), Cancel::Advertised);
        // An object without `cancel` replaces the whole value; `null` clears it.
        seen(
            &mut c,
            "tool_call_update",
            json!({"toolCallId": "a", "capabilities": {}}),
        );
        assert_eq!(c.tool_call("a"), Cancel::NotAdvertised);
        seen(
            &mut c,
            "tool_call_update",
            json!({"toolCallId": "a", "capabilities": {"cancel": {}}}),
        );
        seen(
            &mut c,
            "tool_call_update",
            json!({"toolCallId": "a", "capabilities": null}),
        );
        assert_eq!(c.tool_call("a"), Cancel::NotAdvertised);
        // `cancel: true` is not the marker object.
        seen(
            &mut c,
            "tool_call_update",
            json!({"toolCallId": "a", "capabilities": {"cancel": true}}),
        );
        assert_eq!(c.tool_call("a"), Cancel::NotAdvertised);
        // Terminals are their own table.
        assert_eq!(c.terminal("a"), Cancel::Unknown);
        seen(
            &mut c,
            "terminal_update",
            json!({"terminalId": "t", "capabilities": {"cancel": {}}}),
        );
        assert_eq!(c.terminal("t"), Cancel::Advertised);
        assert_eq!(c.tool_call("t"), Cancel::Unknown);
    }

    #[test]
    fn the_tables_are_bounded_keeping_cancellable_ids() {
        let mut c = Cancellable::default();
        seen(
            &mut c,
            "terminal_update",
            json!({"terminalId": "keep", "capabilities": {"cancel": {}}}),
        );
        for i in 0..MAX_TRACKED * 3 {
            seen(
                &mut c,
                "terminal_update",
                json!({"terminalId": format!("t{i}")}),
            );
            assert!(c.terminals.ids.len() <= MAX_TRACKED);
        }
        assert_eq!(c.terminal("keep"), Cancel::Advertised);
        assert_eq!(c.terminal("t0"), Cancel::Unknown);
        assert_eq!(
            c.terminal(&format!("t{}", MAX_TRACKED * 3 - 1)),
            Cancel::NotAdvertised
        );
    }
}
