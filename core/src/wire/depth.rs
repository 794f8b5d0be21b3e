//! How deeply JSON nests: the one limit on arrays and objects inside arrays and objects, checked
//! on every line the host reads from an agent and on the JSON the embedder gives it to send.
//!
//! Why: serde_json's recursion limit is 128 and every face handles what the host forwards with
//! its own JSON code (Python's `json` raises `RecursionError` past the interpreter's recursion
//! limit; V8's `JSON.stringify` throws `RangeError` once its stack is used up). A message nested
//! 100,000 levels deep would reach them whole. Under [`MAX_JSON_DEPTH`], an event's `data`, its
//! whole envelope (`data` plus one level) and the wire event's `message` (plus two) stay under
//! 128 levels, so every face's parser reads them.

use serde_json::Value;

/// The most levels of arrays and objects one JSON-RPC message may nest, counting the message's
/// own object as level 1 (`{"params":{"update":{}}}` nests 3 levels). A message from the agent
/// that nests deeper is refused (`protocol_error` `too_deep`; a request is answered `-32600`);
/// JSON from the embedder that would make a deeper message is `invalid_argument`. docs/EVENTS.md,
/// docs/ARCHITECTURE.md.
pub const MAX_JSON_DEPTH: usize = 100;

/// Whether the JSON text `text` nests arrays and objects deeper than `limit` levels (brackets in
/// strings do not count).
///
/// Cheap on the read path (a second pass over the line, no allocation; the flood benchmark's
/// 180-byte lines are settled by their length): a JSON text of `n` bytes nests at most `n / 2` levels (each level opens and closes) and at most
/// as many levels as it has `[` and `{` bytes, so most lines are settled by their length or by
/// one vectorised count; only a line with more brackets than `limit` is walked, long strings
/// skipped with a vectorised search. For text that is not JSON the answer is meaningless (never
/// a panic).
pub fn deeper_than(text: &[u8], limit: usize) -> bool {
    if text.len() / 2 <= limit {
        return false;
    }
    if !more_openers_than(text, limit) {
        return false;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        i += 1;
        match CLASS[usize::from(b)] {
            QUOTE => match string_end(text, i) {
                Some(end) => i = end,
                None => return false,
            },
            OPEN => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            CLOSE => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Whether `text` has more than `limit` `[` and `{` bytes (in strings or not), counted in
/// chunks that compile to vector code (`[` is 0x5B, `{` 0x7B: one compare once bit 5 is set).
fn more_openers_than(text: &[u8], limit: usize) -> bool {
    let mut openers = 0usize;
    for chunk in text.chunks(256) {
        let n = chunk
            .iter()
            .fold(0u32, |n, &b| n + u32::from((b | 0x20) == b'{'));
        openers += n as usize;
        if openers > limit {
            return true;
        }
    }
    false
}

/// Where the string whose contents start at `i` ends (just past its closing quote): short
/// strings (keys, ids, kinds) byte by byte, the rest of a long one with a vectorised search.
fn string_end(text: &[u8], mut i: usize) -> Option<usize> {
    let mut plain = 0;
    loop {
        if plain == 16 {
            i += memchr::memchr2(b'"', b'\\', text.get(i..)?)?;
            plain = 0;
        }
        let b = *text.get(i)?;
        i += 1;
        plain += 1;
        match b {
            b'"' => return Some(i),
            b'\\' => i += 1,
            _ => {}
        }
    }
}

const OTHER: u8 = 0;
const QUOTE: u8 = 1;
const OPEN: u8 = 2;
const CLOSE: u8 = 3;

/// The bytes that matter to nesting outside strings; everything else is [`OTHER`].
static CLASS: [u8; 256] = {
    let mut class = [OTHER; 256];
    class[b'"' as usize] = QUOTE;
    class[b'[' as usize] = OPEN;
    class[b'{' as usize] = OPEN;
    class[b']' as usize] = CLOSE;
    class[b'}' as usize] = CLOSE;
    class
};

/// `Err` (`invalid_argument`) when `value`, placed at `level` of a message (a request's
/// `params` and a response's `result` are at level 2), would make the message nest deeper than
/// [`MAX_JSON_DEPTH`]; `what` names the value in the error. Counted without recursing.
pub fn check_fits(value: &Value, level: usize, what: &str) -> Result<(), crate::Error> {
    let room = (MAX_JSON_DEPTH + 1).saturating_sub(level);
    if value_depth(value, room) > room {
        return Err(crate::Error::InvalidArgument(format!(
            "{what} nests too deep: the message would nest arrays and objects deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    Ok(())
}

/// How many levels of arrays and objects `value` nests (a scalar: 0), counted without recursion
/// (a tree built in code may be deeper than any stack) and without looking past `limit + 1`.
pub fn value_depth(value: &Value, limit: usize) -> usize {
    let mut deepest = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((v, level)) = stack.pop() {
        let (Value::Array(_) | Value::Object(_)) = v else {
            continue;
        };
        deepest = deepest.max(level);
        if level > limit {
            break;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, level + 1))),
            Value::Object(o) => stack.extend(o.values().map(|c| (c, level + 1))),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize, inner: &str) -> String {
        format!("{}{inner}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn counts_levels_not_brackets() {
        // Many brackets side by side, each one level: not deep.
        let wide = format!("[{}0]", "[],{},".repeat(500));
        assert!(!deeper_than(wide.as_bytes(), 2));
        assert!(deeper_than(wide.as_bytes(), 1));
        for levels in [1, 50, 99, 100] {
            let text = nested(levels, "");
            assert!(!deeper_than(text.as_bytes(), 100), "{levels}");
        }
        for levels in [101, 500, 100_000] {
            let text = nested(levels, "");
            assert!(deeper_than(text.as_bytes(), 100), "{levels}");
        }
        let mixed = format!("{{\"a\":{}}}", "{\"b\":[".repeat(50) + &"]}".repeat(50));
        assert!(!deeper_than(mixed.as_bytes(), 101));
        assert!(deeper_than(mixed.as_bytes(), 100));
    }

    #[test]
    fn brackets_in_strings_do_not_count() {
        let text = format!(r#"{{"s":"{}","t":"\"[{{\\"}}"#, "[{".repeat(1000));
        assert!(!deeper_than(text.as_bytes(), 1));
        // An escaped quote does not end the string; an escaped backslash before a quote does.
        let text = format!(r#"["\"{}"]"#, "[".repeat(300));
        assert!(!deeper_than(text.as_bytes(), 1));
        let text = format!(r#"["\\",{}]"#, nested(300, ""));
        assert!(deeper_than(text.as_bytes(), 100));
    }

    #[test]
    fn text_that_is_not_json_never_panics() {
        for text in [
            "\"\\".to_owned(),
            "\"".repeat(1000),
            format!("\"{}", "\\".repeat(1001)),
            "]".repeat(1000) + &"[".repeat(50),
            "[".repeat(1000),
        ] {
            let _ = deeper_than(text.as_bytes(), 100);
        }
        assert!(deeper_than("[".repeat(1000).as_bytes(), 100));
    }

    #[test]
    fn value_depth_counts_levels() {
        assert_eq!(value_depth(&serde_json::json!(1), 100), 0);
        assert_eq!(value_depth(&serde_json::json!([]), 100), 1);
        assert_eq!(
            value_depth(&serde_json::json!({"a": [1, {"b": {}}]}), 100),
            4
        );
        // Deeper than serde_json can parse or the stack could hold if walked recursively.
        let mut deep = Value::Null;
        for _ in 0..200_000 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(value_depth(&deep, 100), 101);
        // Dropping it recursively would overflow the test's stack: take it apart by hand.
        let mut v = deep;
        while let Value::Array(mut a) = v {
            v = a.pop().unwrap_or(Value::Null);
        }
    }
}
