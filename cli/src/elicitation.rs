//! `--elicitation ask|off`: the agent's `elicitation/create` requests rendered on the terminal.
//! A form is asked field by field (typed, with its allowed values and default), then confirmed;
//! a URL is shown whole as a browser reads it, its host on a line of its own, and only consent is
//! asked (acph never opens it; a URL that does not parse or is not http(s) is declined without
//! asking). Agent text is escaped (`render::full_line`). End of input, a
//! required field left empty or a value that does not parse answers `cancel`; the core checks
//! the content against the schema again (docs/PERMISSIONS.md, "Elicitation").

use std::sync::Arc;

use acp_host::{
    ElicitationAnswer, ElicitationHandler, ElicitationKind, ElicitationModes, ElicitationRequest,
    display,
};
use clap::ValueEnum;
use serde_json::{Map, Value};

use crate::permission::{PromptGate, ask_terminal};
use crate::render::{SharedOut, full_line, lock};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ElicitationMode {
    /// Ask on the terminal (default when stdin is a terminal)
    Ask,
    /// Not supported: the agent is told so in `initialize` (default without a terminal)
    Off,
}

impl ElicitationMode {
    pub fn default_for_stdin() -> ElicitationMode {
        use std::io::IsTerminal;
        if std::io::stdin().is_terminal() {
            ElicitationMode::Ask
        } else {
            ElicitationMode::Off
        }
    }
}

pub fn handler(mode: ElicitationMode, out: SharedOut, gate: PromptGate) -> ElicitationHandler {
    match mode {
        ElicitationMode::Off => ElicitationHandler::Unsupported,
        ElicitationMode::Ask => ElicitationHandler::Decider {
            modes: ElicitationModes::FORM_AND_URL,
            decider: Arc::new(move |req: ElicitationRequest| {
                let gate = gate.clone();
                let out = out.clone();
                async move {
                    let _turn = gate.lock().await;
                    {
                        let mut out = lock(&out);
                        out.newline();
                        out.flush();
                    }
                    tokio::task::spawn_blocking(move || ask(&req, &mut ask_terminal, &mut tell))
                        .await
                        .map_err(|e| format!("elicitation prompt failed: {e}"))
                }
            }),
        },
    }
}

/// Show text on stderr without asking anything.
fn tell(text: &str) {
    use std::io::Write;
    crate::status::clear();
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    let _ = e.flush();
}

/// Ask for one request; `prompt` shows a line on the terminal and reads the answer (`None`: end
/// of input); `tell` only shows (a URL acph refuses is declined without asking).
fn ask(
    req: &ElicitationRequest,
    prompt: &mut dyn FnMut(&str) -> Option<String>,
    tell: &mut dyn FnMut(&str),
) -> ElicitationAnswer {
    let head = format!(
        "\nacph: agent {} asks: {}\n",
        req.agent,
        full_line(&req.message)
    );
    match &req.kind {
        ElicitationKind::Url { url, .. } => match url_prompt(&head, url) {
            UrlPrompt::Refused(text) => {
                tell(&text);
                ElicitationAnswer::Decline
            }
            UrlPrompt::Ask(text) => match prompt(&text).as_deref().map(str::trim) {
                Some("y" | "Y" | "yes") => ElicitationAnswer::Accept(None),
                Some(_) => ElicitationAnswer::Decline,
                None => ElicitationAnswer::Cancel,
            },
        },
        ElicitationKind::Form { requested_schema } => {
            let mut first = Some(head);
            fill(requested_schema, &mut |text: &str| {
                let text = match first.take() {
                    Some(h) => format!("{h}{text}"),
                    None => text.to_owned(),
                };
                prompt(&text)
            })
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum UrlPrompt {
    /// Ask for consent with this text.
    Ask(String),
    /// Show this and decline without asking.
    Refused(String),
}

/// The URL consent prompt (docs/PERMISSIONS.md, "Elicitation"): the whole URL as a browser reads
/// it, then its host on a line of its own (ASCII/punycode, with the Unicode form of an
/// internationalized name), then warnings. A URL that does not parse, or is not http(s), is shown
/// escaped with the reason and declined without asking.
fn url_prompt(head: &str, raw: &str) -> UrlPrompt {
    let url = display::url(raw);
    let mut text = format!("{head}    url: {}\n", url.shown);
    if let Some(why) = &url.refusal {
        text.push_str(&format!(
            "    acph refuses it: {why}; declined without asking.\n"
        ));
        return UrlPrompt::Refused(text);
    }
    let host = url.host.as_deref().unwrap_or("(none)");
    match &url.host_unicode {
        Some(unicode) => text.push_str(&format!("    host: {host} (Unicode: {unicode})\n")),
        None => text.push_str(&format!("    host: {host}\n")),
    }
    for w in &url.warnings {
        text.push_str(&format!("    warning: {w}\n"));
    }
    text.push_str("    acph does not open it; open it yourself if you agree.\nconsent? [y/N]: ");
    UrlPrompt::Ask(text)
}

/// Fill a form from the requested schema, one field per prompt, then confirm.
fn fill(schema: &Value, prompt: &mut dyn FnMut(&str) -> Option<String>) -> ElicitationAnswer {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    for (name, prop) in props {
        let is_required = required.contains(&name.as_str());
        let Some(line) = prompt(&field_prompt(name, prop, is_required)) else {
            return ElicitationAnswer::Cancel;
        };
        let line = line.trim();
        if line.is_empty() {
            if let Some(default) = prop.get("default") {
                content.insert(name.clone(), default.clone());
            } else if is_required {
                return ElicitationAnswer::Cancel;
            }
            continue;
        }
        match parse_value(prop, line) {
            Some(v) => {
                content.insert(name.clone(), v);
            }
            None => return ElicitationAnswer::Cancel,
        }
    }
    let summary = serde_json::to_string(&content).unwrap_or_default();
    match prompt(&format!("send {}? [y/N]: ", full_line(&summary)))
        .as_deref()
        .map(str::trim)
    {
        Some("y" | "Y" | "yes") => ElicitationAnswer::Accept(Some(content)),
        Some(_) => ElicitationAnswer::Decline,
        None => ElicitationAnswer::Cancel,
    }
}

/// The allowed values of a string or array property (`enum`, `oneOf`/`anyOf` consts).
fn choices(prop: &Value) -> Vec<String> {
    let source = match prop.get("type").and_then(Value::as_str) {
        Some("array") => prop.get("items").unwrap_or(&Value::Null),
        _ => prop,
    };
    if let Some(values) = source.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| source.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|o| o.get("const").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

fn field_prompt(name: &str, prop: &Value, required: bool) -> String {
    let ty = prop.get("type").and_then(Value::as_str).unwrap_or("?");
    let title = prop.get("title").and_then(Value::as_str).unwrap_or(name);
    let mut text = format!("  {} ({ty}", full_line(title));
    let options = choices(prop);
    if !options.is_empty() {
        let numbered: Vec<String> = options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}={}", i + 1, full_line(o)))
            .collect();
        text.push_str(&format!(", {}", numbered.join(" ")));
        if ty == "array" {
            text.push_str(", comma-separated");
        }
    }
    if ty == "boolean" {
        text.push_str(", y/n");
    }
    if let Some(d) = prop.get("default") {
        text.push_str(&format!(", default {}", full_line(&d.to_string())));
    }
    if required {
        text.push_str(", required");
    }
    text.push(')');
    if let Some(desc) = prop.get("description").and_then(Value::as_str) {
        text.push_str(&format!(" {}", full_line(desc)));
    }
    text.push_str(": ");
    text
}

/// A typed value from what was typed; `None` when it does not parse.
fn parse_value(prop: &Value, line: &str) -> Option<Value> {
    let options = choices(prop);
    let pick = |s: &str| -> Option<String> {
        let s = s.trim();
        if let Ok(n) = s.parse::<usize>()
            && let Some(o) = n.checked_sub(1).and_then(|i| options.get(i))
        {
            return Some(o.clone());
        }
        options.iter().find(|o| *o == s).cloned()
    };
    match prop.get("type").and_then(Value::as_str)? {
        "string" if options.is_empty() => Some(Value::from(line)),
        "string" => pick(line).map(Value::from),
        "integer" => line.parse::<i64>().ok().map(Value::from),
        "number" => line
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Value::from),
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Some(Value::Bool(true)),
            "n" | "no" | "false" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        "array" => line
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| pick(s).map(Value::from))
            .collect::<Option<Vec<Value>>>()
            .map(Value::Array),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "target": {"type": "string", "enum": ["staging", "production"]},
            "replicas": {"type": "integer"},
            "dryRun": {"type": "boolean", "default": true},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "note": {"type": "string"}
        }, "required": ["target"]})
    }

    fn scripted(lines: &[&str]) -> impl FnMut(&str) -> Option<String> {
        let mut lines: Vec<String> = lines.iter().map(|s| (*s).to_owned()).collect();
        lines.reverse();
        move |_prompt: &str| lines.pop()
    }

    #[test]
    fn a_form_is_filled_typed_and_confirmed() {
        let answer = fill(&schema(), &mut scripted(&["2", "3", "", "a,2", "hi", "y"]));
        let want = json!({"target": "production", "replicas": 3, "dryRun": true, "tags": ["a", "b"], "note": "hi"});
        assert_eq!(answer, ElicitationAnswer::Accept(want.as_object().cloned()));
        // Optional fields may be skipped.
        let answer = fill(
            &schema(),
            &mut scripted(&["staging", "", "n", "", "", "yes"]),
        );
        let want = json!({"target": "staging", "dryRun": false});
        assert_eq!(answer, ElicitationAnswer::Accept(want.as_object().cloned()));
    }

    #[test]
    fn anything_unclear_does_not_accept() {
        // Not confirmed: decline.
        let a = fill(&schema(), &mut scripted(&["1", "", "", "", "", "n"]));
        assert_eq!(a, ElicitationAnswer::Decline);
        // A required field left empty, a bad value, end of input: cancel.
        assert_eq!(
            fill(&schema(), &mut scripted(&[""])),
            ElicitationAnswer::Cancel
        );
        assert_eq!(
            fill(&schema(), &mut scripted(&["moon"])),
            ElicitationAnswer::Cancel
        );
        assert_eq!(
            fill(&schema(), &mut scripted(&["1", "x"])),
            ElicitationAnswer::Cancel
        );
        assert_eq!(
            fill(&schema(), &mut scripted(&["1"])),
            ElicitationAnswer::Cancel
        );
    }

    /// Issue 24 item 6: the host after a long user name is shown, on a line of its own.
    #[test]
    fn a_url_prompt_shows_the_whole_url_and_its_host() {
        let raw = format!(
            "https://accounts.example.com{}@evil.example/login",
            "a".repeat(300)
        );
        let UrlPrompt::Ask(text) = url_prompt("head\n", &raw) else {
            panic!("refused")
        };
        assert!(text.contains(&format!("    url: {raw}\n")), "{text}");
        assert!(text.contains("\n    host: evil.example\n"), "{text}");
        assert!(text.contains("warning: it carries a user name before the host"));
        assert!(text.ends_with("consent? [y/N]: "));
        let UrlPrompt::Ask(text) = url_prompt("", "https://аpple.example/") else {
            panic!("refused")
        };
        assert!(
            text.contains("host: xn--pple-43d.example (Unicode: аpple.example)"),
            "{text}"
        );
    }

    #[test]
    fn a_url_that_is_no_web_address_is_declined_without_asking() {
        for raw in ["javascript:alert(1)", "https://exa mple.com/\u{202E}x"] {
            let UrlPrompt::Refused(text) = url_prompt("", raw) else {
                panic!("{raw} asked")
            };
            assert!(text.contains("acph refuses it: it is not"), "{text}");
            assert!(!text.contains('\u{202E}'), "{text}");
        }
    }

    #[test]
    fn prompts_show_type_choices_default_and_required() {
        let p = field_prompt("target", &schema()["properties"]["target"], true);
        assert_eq!(p, "  target (string, 1=staging 2=production, required): ");
        let p = field_prompt("dryRun", &schema()["properties"]["dryRun"], false);
        assert_eq!(p, "  dryRun (boolean, y/n, default true): ");
    }
}
