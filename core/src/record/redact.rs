//! What a recording leaves out by default: secrets that travel in ACP messages.
//!
//! - environment values: every `env` (a `[{name, value}]` list, as in `terminal/create` and MCP
//!   server configs, or a `{NAME: value}` map) keeps its names, not its values; likewise `headers`
//!   (`[{name, value}]`, MCP over HTTP);
//! - auth payloads: an `authenticate` request keeps only its `methodId`;
//! - `_meta` keys named like credentials (token, secret, password, key, auth, credential,
//!   cookie, session…) at any depth below a `_meta`;
//! - elicitation form values: the host's answer to `elicitation/create` keeps its action and the
//!   field names of `content`, not their values.
//!
//! A redacted value becomes the string [`REDACTED`]. What is not covered: secrets an agent puts in
//! free text (a message chunk, a tool call's content, stderr) — those are recorded as sent.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::{Map, Value};

/// What a redacted value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Substrings that make a raw line worth parsing for redaction (a line without any of them has
/// nothing to redact, and is recorded without being parsed again).
const TRIGGERS: &[&[u8]] = &[
    b"\"_meta\"",
    b"\"env\"",
    b"\"headers\"",
    b"\"authenticate\"",
];
const ELICITATION: &[u8] = b"\"elicitation/create\"";

/// The triggers and `ELICITATION` (the last pattern), found in one pass.
enum Scanner {
    /// SIMD (Teddy) over all patterns at once: what every line of the connection costs, so one
    /// pass rather than one per pattern (measured: less than half the time of five `memmem`
    /// searches on a 180-byte update; a loop over the line's quotes cost more than either).
    Packed(aho_corasick::packed::Searcher),
    /// Where the CPU has no SIMD for it: one `memmem` search per pattern.
    Each(Vec<Finder<'static>>),
}

static SCANNER: LazyLock<Scanner> = LazyLock::new(|| {
    let patterns = TRIGGERS.iter().chain([&ELICITATION]);
    aho_corasick::packed::Config::new()
        .builder()
        .extend(patterns.clone())
        .build()
        .map_or_else(
            || Scanner::Each(patterns.map(Finder::new).collect()),
            Scanner::Packed,
        )
});

/// What [`scan`] found in a raw line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Found {
    /// One of the triggers: the line may hold a secret.
    pub(crate) secret: bool,
    /// `"elicitation/create"`: it may be a form whose answer is to be redacted.
    pub(crate) elicitation: bool,
}

/// Every line of the connection is scanned: one pass finding any pattern (the common case, no
/// match, ends there).
pub(crate) fn scan(raw: &[u8]) -> Found {
    scan_with(&SCANNER, raw)
}

fn scan_with(scanner: &Scanner, b: &[u8]) -> Found {
    let mut found = Found::default();
    let mut note = |pattern: usize| {
        if pattern < TRIGGERS.len() {
            found.secret = true;
        } else {
            found.elicitation = true;
        }
    };
    match scanner {
        Scanner::Packed(s) => s.find_iter(b).for_each(|m| note(m.pattern().as_usize())),
        Scanner::Each(finders) => finders
            .iter()
            .enumerate()
            .filter(|(_, f)| f.find(b).is_some())
            .for_each(|(i, _)| note(i)),
    }
    found
}

/// [`scan`]'s `secret` alone (the host's lines and the events: no form is asked there).
pub(crate) fn secret(raw: &[u8]) -> bool {
    scan(raw).secret
}

/// Whether a `_meta` key names a credential.
fn secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "token",
        "secret",
        "password",
        "passwd",
        "apikey",
        "api_key",
        "api-key",
        "auth",
        "credential",
        "cookie",
        "private",
        "session_key",
        "sessionkey",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// Redact one JSON-RPC message in place (see the module docs); `elicitation_answer`: it is the
/// host's answer to an `elicitation/create`.
pub fn message(msg: &mut Value, elicitation_answer: bool) {
    if msg.get("method").and_then(Value::as_str) == Some("authenticate")
        && let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut)
    {
        for (k, v) in params.iter_mut() {
            if k != "methodId" {
                *v = Value::from(REDACTED);
            }
        }
    }
    if elicitation_answer
        && let Some(content) = msg
            .get_mut("result")
            .and_then(|r| r.get_mut("content"))
            .and_then(Value::as_object_mut)
    {
        for v in content.values_mut() {
            *v = Value::from(REDACTED);
        }
    }
    walk(msg, false);
}

fn walk(v: &mut Value, in_meta: bool) {
    match v {
        Value::Object(map) => object(map, in_meta),
        Value::Array(items) => {
            for item in items {
                walk(item, in_meta);
            }
        }
        _ => {}
    }
}

fn object(map: &mut Map<String, Value>, in_meta: bool) {
    for (k, v) in map.iter_mut() {
        if in_meta && secret_key(k) {
            *v = Value::from(REDACTED);
            continue;
        }
        match k.as_str() {
            "env" | "headers" => values_of(v),
            "_meta" => walk(v, true),
            _ => walk(v, in_meta),
        }
    }
}

/// `[{name, value}]` keeps the names; `{NAME: value}` keeps the keys.
fn values_of(v: &mut Value) {
    match v {
        Value::Array(items) => {
            for item in items {
                match item.as_object_mut() {
                    Some(pair) => {
                        for (k, v) in pair.iter_mut() {
                            if k != "name" {
                                *v = Value::from(REDACTED);
                            }
                        }
                    }
                    None => *item = Value::from(REDACTED),
                }
            }
        }
        Value::Object(map) => {
            for v in map.values_mut() {
                *v = Value::from(REDACTED);
            }
        }
        Value::Null => {}
        other => *other = Value::from(REDACTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_scan_finds_each_trigger_anywhere_and_nothing_else() {
        for raw in [
            r#"{"params":{"_meta":{}}}"#,
            r#"{"env":[]}"#,
            r#"{"a":1,"headers":[]}"#,
            r#"{"method":"authenticate"}"#,
        ] {
            assert_eq!(
                scan(raw.as_bytes()),
                Found {
                    secret: true,
                    elicitation: false
                },
                "{raw}"
            );
        }
        let ask = r#"{"id":1,"method":"elicitation/create","params":{"_meta":{}}}"#;
        assert_eq!(
            scan(ask.as_bytes()),
            Found {
                secret: true,
                elicitation: true
            }
        );
        for raw in [
            r#"{"method":"session/update","params":{"update":{"text":"env _meta headers"}}}"#,
            r#"{"environment":1,"meta":2,"auth":"x","elicitation":3}"#,
            "",
            "\"",
        ] {
            assert_eq!(scan(raw.as_bytes()), Found::default(), "{raw}");
        }
    }

    /// The one-pass search and the fallback find the same, whatever the CPU.
    #[test]
    fn both_scanners_agree() {
        let each = Scanner::Each(
            TRIGGERS
                .iter()
                .chain([&ELICITATION])
                .map(Finder::new)
                .collect(),
        );
        for raw in [
            r#"{"params":{"_meta":{}}}"#,
            r#"{"id":1,"method":"elicitation/create","params":{"_meta":{}}}"#,
            r#"{"id":1,"method":"elicitation/create","params":{}}"#,
            r#"{"env":[],"headers":[],"method":"authenticate"}"#,
            r#"{"method":"session/update","params":{"update":{"text":"env _meta headers"}}}"#,
            "",
        ] {
            assert_eq!(
                scan_with(&each, raw.as_bytes()),
                scan(raw.as_bytes()),
                "{raw}"
            );
        }
        assert!(
            matches!(&*SCANNER, Scanner::Packed(_)) || !cfg!(target_arch = "x86_64"),
            "x86_64 has the SIMD for the one-pass search"
        );
    }

    fn red(mut v: Value, answer: bool) -> Value {
        message(&mut v, answer);
        v
    }

    #[test]
    fn environment_values_and_headers_keep_their_names_only() {
        let got = red(
            json!({"method":"terminal/create","params":{"command":"make","env":[{"name":"TOKEN","value":"s3cret"}]}}),
            false,
        );
        assert_eq!(
            got["params"]["env"],
            json!([{"name":"TOKEN","value":REDACTED}])
        );
        assert_eq!(got["params"]["command"], "make");
        let got = red(
            json!({"method":"session/new","params":{"mcpServers":[{"name":"gh","command":"x","env":[{"name":"GH","value":"ghp_1"}],"headers":[{"name":"Authorization","value":"Bearer 1"}]}]}}),
            false,
        );
        let server = &got["params"]["mcpServers"][0];
        assert_eq!(server["env"][0]["value"], REDACTED);
        assert_eq!(server["headers"][0]["value"], REDACTED);
        assert_eq!(server["headers"][0]["name"], "Authorization");
        let got = red(json!({"env":{"A":"1","B":null}}), false);
        assert_eq!(got["env"], json!({"A":REDACTED,"B":REDACTED}));
    }

    #[test]
    fn authenticate_keeps_only_the_method() {
        let got = red(
            json!({"method":"authenticate","params":{"methodId":"key","apiKey":"sk-1","_meta":{"x":1}}}),
            false,
        );
        assert_eq!(
            got["params"],
            json!({"methodId":"key","apiKey":REDACTED,"_meta":REDACTED})
        );
    }

    #[test]
    fn meta_keys_named_like_credentials_at_any_depth() {
        let got = red(
            json!({"params":{"update":{"_meta":{"vendor":{"accessToken":"t","nested":{"Password":"p"},"model":"m"}},"token":"not under _meta"}}}),
            false,
        );
        let meta = &got["params"]["update"]["_meta"]["vendor"];
        assert_eq!(meta["accessToken"], REDACTED);
        assert_eq!(meta["nested"]["Password"], REDACTED);
        assert_eq!(meta["model"], "m");
        assert_eq!(got["params"]["update"]["token"], "not under _meta");
    }

    #[test]
    fn elicitation_answers_keep_the_field_names() {
        let answer =
            json!({"id":3,"result":{"action":"accept","content":{"password":"hunter2","age":3}}});
        let got = red(answer.clone(), true);
        assert_eq!(
            got["result"]["content"],
            json!({"password":REDACTED,"age":REDACTED})
        );
        assert_eq!(got["result"]["action"], "accept");
        // Another response with the same shape is not an elicitation answer.
        assert_eq!(red(answer.clone(), false), answer);
    }
}
