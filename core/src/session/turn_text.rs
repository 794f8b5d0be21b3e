//! A turn's assembled text (`TurnResult::text`, `thought`), from the agent's message and thought
//! chunks and ACP v2's message upserts.

use serde_json::Value;
use serde_json::value::RawValue;

/// Most text a turn assembles per stream (agent text, thought text); the rest is dropped and
/// `truncated` set (the events still carry every chunk).
pub const TURN_TEXT_LIMIT: usize = 4 * 1024 * 1024;

/// A turn's agent message text and thought text, assembled from its `agent_message_chunk` and
/// `agent_thought_chunk` text blocks (other content blocks are not text and are skipped), and
/// ACP v2's `agent_message` / `agent_thought` upserts: an upsert's content replaces its
/// message's text (same `messageId`), wherever that sits; a chunk with a `messageId` appends to
/// its message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnText {
    pub text: String,
    pub thought: String,
    /// Either stream reached [`TURN_TEXT_LIMIT`].
    pub truncated: bool,
    /// Where each v2 message's text sits in its stream, in stream order (bounded).
    spans: Vec<Span>,
}

/// One v2 message's bytes in `text` (or `thought`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Span {
    thought: bool,
    id: String,
    start: usize,
    len: usize,
}

/// Messages tracked per turn; past it, chunks and upserts of new ids are appended untracked.
const MAX_SPANS: usize = 4096;

/// The text of a chunk written exactly as `{"sessionUpdate":"…","content":{"type":"text",
/// "text":"…"}}` with no escapes in the text (the common layout), read without a parse; `None`
/// for any other layout, which the parser handles. The update is valid JSON (it was read as
/// such), so an unescaped string between those quotes is the text itself.
fn plain_text_chunk(update: &str) -> Option<&str> {
    let rest = update.strip_prefix("{\"sessionUpdate\":\"")?;
    let rest = &rest[rest.find('"')?..];
    let rest = rest.strip_prefix("\",\"content\":{\"type\":\"text\",\"text\":\"")?;
    let end = rest.bytes().position(|b| b == b'"' || b == b'\\')?;
    (&rest[end..] == "\"}}").then(|| &rest[..end])
}

impl TurnText {
    pub(crate) fn add_chunk(&mut self, kind: &str, update: &RawValue) {
        let thought = match kind {
            "agent_message_chunk" => false,
            "agent_thought_chunk" => true,
            "agent_message" => return self.upsert(false, update),
            "agent_thought" => return self.upsert(true, update),
            _ => return,
        };
        #[derive(serde::Deserialize)]
        struct Chunk<'a> {
            #[serde(borrow)]
            content: Option<Block<'a>>,
            #[serde(borrow, rename = "messageId")]
            message_id: Option<std::borrow::Cow<'a, str>>,
        }
        #[derive(serde::Deserialize)]
        struct Block<'a> {
            #[serde(rename = "type")]
            kind: Option<&'a str>,
            #[serde(borrow)]
            text: Option<std::borrow::Cow<'a, str>>,
        }
        let (piece, id) = match plain_text_chunk(update.get()) {
            Some(piece) => (std::borrow::Cow::Borrowed(piece), None),
            None => {
                let Ok(chunk) = serde_json::from_str::<Chunk<'_>>(update.get()) else {
                    return;
                };
                let Some(Block {
                    kind: Some("text"),
                    text: Some(piece),
                }) = chunk.content
                else {
                    return;
                };
                (piece, chunk.message_id)
            }
        };
        let known = id.as_deref().and_then(|id| self.span_of(thought, id));
        match known {
            // A chunk of a message already here: appended to it, in place.
            Some(i) => {
                let end = self.spans[i].start + self.spans[i].len;
                self.splice(i, end..end, &piece);
            }
            None => self.append(thought, id, &piece),
        }
    }

    /// A v2 upsert: `content` absent leaves the message alone, `null` clears it, a list of
    /// blocks replaces its text with theirs.
    fn upsert(&mut self, thought: bool, update: &RawValue) {
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(update.get()) else {
            return;
        };
        let (Some(id), Some(content)) = (
            obj.get("messageId").and_then(Value::as_str),
            obj.get("content"),
        ) else {
            return;
        };
        let blocks = content.as_array().map(Vec::as_slice).unwrap_or_default();
        let text: String = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        match self.span_of(thought, id) {
            Some(i) => {
                let span = &self.spans[i];
                let range = span.start..span.start + span.len;
                self.splice(i, range, &text);
            }
            None => self.append(thought, Some(std::borrow::Cow::Borrowed(id)), &text),
        }
    }

    /// Searched from the end: a chunk is almost always of the newest message.
    fn span_of(&self, thought: bool, id: &str) -> Option<usize> {
        self.spans
            .iter()
            .rposition(|s| s.thought == thought && s.id == id)
    }

    /// Append at the end of the stream (a new span for `id`, unless the stream's last span is
    /// already `id`'s).
    fn append(&mut self, thought: bool, id: Option<std::borrow::Cow<'_, str>>, piece: &str) {
        let target = if thought {
            &mut self.thought
        } else {
            &mut self.text
        };
        let start = target.len();
        let piece = bounded(
            piece,
            TURN_TEXT_LIMIT.saturating_sub(start),
            &mut self.truncated,
        );
        target.push_str(piece);
        if let Some(id) = id
            && self.spans.len() < MAX_SPANS
        {
            self.spans.push(Span {
                thought,
                id: id.into_owned(),
                start,
                len: piece.len(),
            });
        }
    }

    /// Replace `range` of span `i`'s stream (within that span) with `piece`, shifting the spans
    /// after it.
    fn splice(&mut self, i: usize, range: std::ops::Range<usize>, piece: &str) {
        let thought = self.spans[i].thought;
        let target = if thought {
            &mut self.thought
        } else {
            &mut self.text
        };
        let room = TURN_TEXT_LIMIT.saturating_sub(target.len() - range.len());
        let piece = bounded(piece, room, &mut self.truncated);
        let (old, new) = (range.len(), piece.len());
        let at = range.start;
        target.replace_range(range, piece);
        self.spans[i].len = self.spans[i].len - old + new;
        for s in self.spans.iter_mut().skip(i + 1) {
            if s.thought == thought && s.start >= at {
                s.start = s.start - old + new;
            }
        }
    }
}

/// `piece`, cut to `room` bytes on a character boundary (`truncated` set when cut).
fn bounded<'a>(piece: &'a str, room: usize, truncated: &mut bool) -> &'a str {
    if piece.len() <= room {
        return piece;
    }
    let mut cut = room;
    while !piece.is_char_boundary(cut) {
        cut -= 1;
    }
    *truncated = true;
    &piece[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: &str, text: &str) -> Box<RawValue> {
        let v =
            serde_json::json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
        RawValue::from_string(v.to_string()).unwrap_or_else(|_| unreachable!())
    }

    #[test]
    fn text_is_assembled_bounded_and_cut_on_a_char_boundary() {
        let mut t = TurnText::default();
        t.add_chunk("agent_message_chunk", &chunk("agent_message_chunk", "a\"b"));
        t.add_chunk("agent_thought_chunk", &chunk("agent_thought_chunk", "hm"));
        t.add_chunk(
            "user_message_chunk",
            &chunk("user_message_chunk", "ignored"),
        );
        let image = RawValue::from_string(
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"x"}}"#
                .into(),
        )
        .unwrap_or_else(|_| unreachable!());
        t.add_chunk("agent_message_chunk", &image);
        assert_eq!((t.text.as_str(), t.thought.as_str()), ("a\"b", "hm"));
        let big = "é".repeat(TURN_TEXT_LIMIT);
        t.add_chunk("agent_message_chunk", &chunk("agent_message_chunk", &big));
        assert!(t.truncated);
        assert!(t.text.len() <= TURN_TEXT_LIMIT && t.text.len() > TURN_TEXT_LIMIT - 2);
    }

    /// The no-parse path reads exactly the layouts it can be sure of; every other layout takes
    /// the parser, and both give the same text.
    #[test]
    fn the_plain_layout_shortcut_agrees_with_the_parser() {
        let cases = [
            (
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"plain"}}"#,
                Some("plain"),
                "plain",
            ),
            (
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}"#,
                Some(""),
                "",
            ),
            (
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\nb"}}"#,
                None,
                "a\nb",
            ),
            (
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":null}}"#,
                None,
                "x",
            ),
            (
                r#"{"content":{"type":"text","text":"y"},"sessionUpdate":"agent_message_chunk"}"#,
                None,
                "y",
            ),
            (
                r#"{"sessionUpdate":"agent_message_chunk","content":{"text":"z","type":"text"}}"#,
                None,
                "z",
            ),
            (
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"w"},"_meta":{}}"#,
                None,
                "w",
            ),
            (
                r#"{"sessionUpdate":"agent_message_chunk", "content":{"type":"text","text":"v"}}"#,
                None,
                "v",
            ),
        ];
        for (raw, shortcut, text) in cases {
            assert_eq!(plain_text_chunk(raw), shortcut, "{raw}");
            let mut t = TurnText::default();
            let update = RawValue::from_string(raw.to_owned()).unwrap_or_else(|_| unreachable!());
            t.add_chunk("agent_message_chunk", &update);
            assert_eq!(t.text, text, "{raw}");
        }
    }

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap_or_else(|_| unreachable!())
    }

    #[test]
    fn v2_upserts_replace_their_message_and_chunks_append_to_theirs() {
        let mut t = TurnText::default();
        let text = |s: &str| serde_json::json!([{"type": "text", "text": s}]);
        let chunk = |id: &str, s: &str| {
            raw(
                serde_json::json!({"sessionUpdate": "agent_message_chunk", "messageId": id,
                "content": {"type": "text", "text": s}}),
            )
        };
        let upsert = |kind: &str, id: &str, content: Value| {
            raw(serde_json::json!({"sessionUpdate": kind, "messageId": id, "content": content}))
        };
        t.add_chunk("agent_message_chunk", &chunk("m1", "Hel"));
        t.add_chunk("agent_message_chunk", &chunk("m1", "lo"));
        t.add_chunk(
            "agent_message",
            &upsert("agent_message", "m2", text(" world")),
        );
        // A later chunk of m1 goes into m1, before m2's text.
        t.add_chunk("agent_message_chunk", &chunk("m1", ","));
        assert_eq!(t.text, "Hello, world");
        // The upsert replaces m1 in place; m2 moves with it.
        t.add_chunk(
            "agent_message",
            &upsert("agent_message", "m1", text("Goodbye,")),
        );
        assert_eq!(t.text, "Goodbye, world");
        // Absent content: unchanged; null: cleared; non-text blocks are skipped.
        let no_content =
            raw(serde_json::json!({"sessionUpdate": "agent_message", "messageId": "m2"}));
        t.add_chunk("agent_message", &no_content);
        assert_eq!(t.text, "Goodbye, world");
        t.add_chunk("agent_message", &upsert("agent_message", "m1", Value::Null));
        assert_eq!(t.text, " world");
        let mixed = serde_json::json!([{"type": "image", "data": "x", "mimeType": "image/png"},
            {"type": "text", "text": "!"}]);
        t.add_chunk("agent_message", &upsert("agent_message", "m2", mixed));
        assert_eq!(t.text, "!");
        // Thoughts are their own stream (the same id is another message there).
        t.add_chunk("agent_thought", &upsert("agent_thought", "m1", text("hmm")));
        assert_eq!((t.text.as_str(), t.thought.as_str()), ("!", "hmm"));
        // A message without an id, or not an object: nothing.
        t.add_chunk(
            "agent_message",
            &raw(serde_json::json!({"content": text("x")})),
        );
        t.add_chunk("agent_message", &raw(serde_json::json!([1])));
        assert_eq!(t.text, "!");
        // Bounded: an upsert that would pass the limit is cut.
        let big = "é".repeat(TURN_TEXT_LIMIT);
        t.add_chunk("agent_message", &upsert("agent_message", "m3", text(&big)));
        assert!(t.truncated && t.text.len() <= TURN_TEXT_LIMIT);
        t.add_chunk("agent_message", &upsert("agent_message", "m2", text(&big)));
        assert!(t.text.len() <= TURN_TEXT_LIMIT);
    }
}
