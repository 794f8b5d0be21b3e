//! The page: the template with its CSS and script inlined and the data embedded once, as JSON in
//! a `<script type="application/json">` the page's script parses.
//!
//! The data is the recording's (an agent's text is attacker-controlled): every `<` in it is
//! written as `\u003c`, which JSON reads back as the same character, so no string can close the
//! script element or open a comment there; and the page's script only ever sets it as text.

use serde_json::Value;

const TEMPLATE: &str = include_str!("assets/report.html");
const CSS: &str = include_str!("assets/report.css");
const JS: &str = include_str!("assets/report.js");

/// The whole page for `data` (`model::Model::finish`).
pub(crate) fn page(data: &Value) -> String {
    let json = embed(data);
    let mut out = String::with_capacity(TEMPLATE.len() + CSS.len() + JS.len() + json.len());
    // The template's three slots, in order; ours, so each is present exactly once.
    let mut rest = TEMPLATE;
    for (slot, fill) in [
        ("/*CSS*/", CSS),
        ("{{DATA}}", json.as_str()),
        ("/*JS*/", JS),
    ] {
        // The template is ours (the tests render it): each slot is there once.
        if let Some((before, after)) = rest.split_once(slot) {
            out.push_str(before);
            out.push_str(fill);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `data` as JSON that cannot end the script element it sits in.
fn embed(data: &Value) -> String {
    let json = data.to_string();
    // `<` only occurs inside JSON strings, where `\u003c` means the same.
    json.replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_cannot_close_the_data_script() {
        let data = serde_json::json!({"rows": [{"h": "</script><script>alert(1)</script><!--"}]});
        let page = page(&data);
        let start = page.find("application/json").unwrap();
        let end = start + page[start..].find("</script>").unwrap();
        let inside = &page[start..end];
        assert!(
            inside.contains("\\u003c/script>\\u003cscript>alert(1)"),
            "{inside}"
        );
        // The embedded JSON reads back as the agent's text.
        let json = &inside[inside.find('>').unwrap() + 1..];
        let back: Value = serde_json::from_str(json).unwrap();
        assert_eq!(back, data);
        assert_eq!(
            page.matches("<script").count(),
            2,
            "only the page's own two scripts"
        );
    }

    /// The page's own code never parses text as markup, and its assets cannot end their elements.
    #[test]
    fn the_script_builds_text_only() {
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!JS.contains(sink), "report.js uses {sink}");
        }
        assert!(!JS.to_ascii_lowercase().contains("</script"));
        assert!(!CSS.to_ascii_lowercase().contains("</style"));
        let page = page(&serde_json::json!({}));
        assert!(page.contains("'use strict'") && page.contains(".wire-spacer"));
        assert!(
            !page.contains("/*CSS*/") && !page.contains("{{DATA}}") && !page.contains("/*JS*/")
        );
    }
}
