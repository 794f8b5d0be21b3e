//! The page: the template with its CSS and script inlined and the data embedded once, as JSON in
//! a `<script type="application/json">` the page's script parses.
//!
//! The data is the recording's (an agent's text is attacker-controlled): every `<` in it is
//! written as `\u003c`, which JSON reads back as the same character, so no string can close the
//! script element or open a comment there; and the page's script only ever sets it as text.

use std::io::{self, Write};

const TEMPLATE: &str = include_str!("assets/report.html");
const CSS: &str = include_str!("assets/report.css");
const JS: &str = include_str!("assets/report.js");

/// Write the page; `data` writes the page's data as JSON (`model::Model::write_json`), which is
/// escaped on its way out.
pub(crate) fn write_page(
    out: &mut dyn Write,
    data: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    // The template is ours (the tests render it): each slot is there once, in this order.
    let (head, rest) = TEMPLATE.split_once("/*CSS*/").unwrap_or((TEMPLATE, ""));
    let (middle, rest) = rest.split_once("{{DATA}}").unwrap_or((rest, ""));
    let (before_js, tail) = rest.split_once("/*JS*/").unwrap_or((rest, ""));
    out.write_all(head.as_bytes())?;
    out.write_all(CSS.as_bytes())?;
    out.write_all(middle.as_bytes())?;
    data(&mut Escaped(out))?;
    out.write_all(before_js.as_bytes())?;
    out.write_all(JS.as_bytes())?;
    out.write_all(tail.as_bytes())
}

/// Passes JSON on with every `<` written as `\u003c`. In JSON `<` only occurs inside strings,
/// where the escape means the same character, and it is ASCII, so no UTF-8 sequence is split.
struct Escaped<'a>(&'a mut dyn Write);

impl Write for Escaped<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        for (i, _) in buf.iter().enumerate().filter(|(_, b)| **b == b'<') {
            self.0.write_all(&buf[start..i])?;
            self.0.write_all(b"\\u003c")?;
            start = i + 1;
        }
        self.0.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn page(data: &Value) -> String {
        let mut out = Vec::new();
        write_page(&mut out, |w| {
            serde_json::to_writer(w, data).map_err(io::Error::from)
        })
        .unwrap();
        String::from_utf8(out).unwrap()
    }

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
