//! The parts a row shows (`text`, `pre`, `kv`, `diff`, `json`), made from the recording's
//! payloads: tool calls with their content and diffs, content blocks, the header's facts.

use serde_json::{Value, json};

use super::diff;

pub(super) fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

pub(super) fn text(t: impl Into<String>) -> Value {
    json!({ "text": t.into() })
}

pub(super) fn kv(pairs: Vec<(&str, String)>) -> Value {
    let pairs: Vec<Value> = pairs
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| json!([k, v]))
        .collect();
    json!({ "kv": pairs })
}

pub(super) fn ms(secs: f64) -> String {
    format!("{:.1} ms", secs * 1000.0)
}
/// A tool call's (or update's) fields, content, diffs and raw input/output.
pub(super) fn tool_call_parts(tc: &Value, budget: &mut diff::Budget) -> Vec<Value> {
    let mut parts = Vec::new();
    let locations: Vec<String> = tc
        .get("locations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|l| match l.get("line").filter(|n| !n.is_null()) {
            Some(n) => format!("{}:{}", l.get("path").map(s).unwrap_or_default(), s(n)),
            None => l.get("path").map(s).unwrap_or_default(),
        })
        .collect();
    parts.push(kv(vec![
        ("kind", tc.get("kind").map(s).unwrap_or_default()),
        ("status", tc.get("status").map(s).unwrap_or_default()),
        ("locations", locations.join(", ")),
    ]));
    for c in tc
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match c.get("type").and_then(Value::as_str) {
            Some("diff") => {
                let old = c.get("oldText").and_then(Value::as_str).unwrap_or("");
                let new = c.get("newText").and_then(Value::as_str).unwrap_or("");
                let lines: Vec<Value> = diff::lines(old, new, budget)
                    .into_iter()
                    .map(|(op, l)| json!([op.mark(), l]))
                    .collect();
                parts.push(json!({ "diff": { "path": c.get("path").map(s).unwrap_or_default(), "lines": lines } }));
            }
            Some("content") => parts.extend(content_parts(Some(&Value::Array(vec![
                c.get("content").cloned().unwrap_or(Value::Null),
            ])))),
            Some("terminal") => parts.push(kv(vec![(
                "terminal",
                c.get("terminalId").map(s).unwrap_or_default(),
            )])),
            _ => parts.push(json!({ "json": c })),
        }
    }
    for k in ["rawInput", "rawOutput"] {
        if let Some(v) = tc.get(k).filter(|v| !v.is_null()) {
            parts.push(json!({ "json": v, "label": k }));
        }
    }
    parts
}

/// Content blocks: text as text, the rest (images, resources) as their JSON, base64 left out.
pub(super) fn content_parts(blocks: Option<&Value>) -> Vec<Value> {
    blocks
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => text(b.get("text").map(s).unwrap_or_default()),
            _ => {
                let mut b = b.clone();
                if let Some(d) = b.get_mut("data").filter(|d| d.is_string()) {
                    *d = Value::from(format!(
                        "({} bytes of base64)",
                        d.as_str().map_or(0, str::len)
                    ));
                }
                json!({ "json": b })
            }
        })
        .collect()
}

/// The header's facts, in the order a reader looks for them.
pub(super) fn header_parts(h: &Value) -> Vec<Value> {
    let get = |p: &str| h.pointer(p).map(s).unwrap_or_default();
    let args: Vec<String> = h
        .pointer("/agent/args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(s)
        .collect();
    let env: Vec<String> = h
        .pointer("/agent/env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(s)
        .collect();
    let mut parts = vec![kv(vec![
        (
            "agent",
            format!(
                "{} {}",
                get("/initialize/agentInfo/name"),
                get("/initialize/agentInfo/version")
            )
            .trim()
            .to_owned(),
        ),
        (
            "command",
            format!("{} {}", get("/agent/command"), args.join(" "))
                .trim()
                .to_owned(),
        ),
        ("agent env", env.join(", ")),
        ("protocol version", get("/protocolVersion")),
        ("acp-host", get("/acpHost")),
        (
            "client",
            format!("{} {}", get("/clientInfo/name"), get("/clientInfo/version"))
                .trim()
                .to_owned(),
        ),
        (
            "platform",
            format!(
                "{} {} ({})",
                get("/platform/os"),
                get("/platform/arch"),
                get("/platform/family")
            )
            .trim()
            .to_owned(),
        ),
        ("started at", get("/startedAt")),
        ("agent id", get("/agentId")),
        ("connection", get("/connection")),
        ("redacted", get("/redacted")),
        ("max bytes", get("/maxBytes")),
        ("recording version", get("/acpRecording")),
    ])];
    if h.get("initialize").is_some_and(Value::is_null) {
        parts.push(text("The handshake never completed (initialize: null)."));
    }
    for (label, p) in [
        ("agent capabilities", "/initialize/agentCapabilities"),
        ("auth methods", "/initialize/authMethods"),
        ("client capabilities", "/clientCapabilities"),
    ] {
        if let Some(v) = h.pointer(p).filter(|v| !v.is_null()) {
            parts.push(json!({ "json": v, "label": label }));
        }
    }
    parts
}
