//! [`LazyJson`]: a JSON value the agent sent, kept as its text until someone looks inside.

use std::fmt;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON value kept as the text it arrived in; the tree is built on first use and kept.
///
/// It dereferences to that tree (`request.tool_call["kind"]`, `.get("title")`,
/// `.as_object()`), serializes as the text verbatim, and [`json`](LazyJson::json) gives the
/// text. The faces hand the text on as it is, so a value nobody reads is never parsed.
///
/// A text nested deeper than the tree parser allows (128 levels) reads as `null` through the
/// tree; [`json`](LazyJson::json) still has it whole. Text from an agent never is: the wire
/// refuses messages nested past [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH).
#[derive(Clone)]
pub struct LazyJson {
    text: OnceLock<Box<RawValue>>,
    tree: OnceLock<Value>,
}

impl LazyJson {
    /// A value from its JSON text (not parsed now).
    pub fn from_raw(text: Box<RawValue>) -> LazyJson {
        LazyJson {
            text: OnceLock::from(text),
            tree: OnceLock::new(),
        }
    }

    /// The tree (parsed on first use).
    pub fn value(&self) -> &Value {
        self.tree.get_or_init(|| match self.text.get() {
            Some(text) => serde_json::from_str(text.get()).unwrap_or(Value::Null),
            None => Value::Null,
        })
    }

    /// The tree, taken.
    pub fn into_value(mut self) -> Value {
        self.value();
        self.tree.take().unwrap_or(Value::Null)
    }

    /// The JSON text (written from the tree on first use when the value was made from one).
    pub fn json(&self) -> &str {
        self.text
            .get_or_init(|| {
                let tree = self.tree.get().unwrap_or(&Value::Null);
                serde_json::value::to_raw_value(tree)
                    .unwrap_or_else(|_| crate::events::empty_object())
            })
            .get()
    }

    /// The text, if the value has it now (never serializes).
    pub(crate) fn text(&self) -> Option<&str> {
        self.text.get().map(|t| t.get())
    }
}

impl From<Value> for LazyJson {
    fn from(tree: Value) -> LazyJson {
        LazyJson {
            text: OnceLock::new(),
            tree: OnceLock::from(tree),
        }
    }
}

impl std::ops::Deref for LazyJson {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.value()
    }
}

impl Serialize for LazyJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.text.get(), self.tree.get()) {
            (Some(text), _) => text.serialize(s),
            (None, Some(tree)) => tree.serialize(s),
            (None, None) => Value::Null.serialize(s),
        }
    }
}

impl fmt::Debug for LazyJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LazyJson").field(&self.json()).finish()
    }
}

/// The JSON text, as `Value`'s `Display` writes it.
impl fmt::Display for LazyJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.json())
    }
}

impl PartialEq for LazyJson {
    fn eq(&self, other: &LazyJson) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for LazyJson {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn text_reads_as_its_tree_and_serializes_verbatim() {
        let text = r#"{"b":1, "a":[true,null],"s":"\u00e9"}"#;
        let lazy = LazyJson::from_raw(raw(text));
        assert_eq!(lazy.text(), Some(text));
        assert_eq!(lazy["a"][0], true);
        assert_eq!(
            lazy,
            serde_json::json!({"b": 1, "a": [true, null], "s": "é"})
        );
        // Serialized as it came (spacing and escapes kept), even after the tree was built.
        let out = serde_json::to_string(&vec![&lazy]).unwrap_or_default();
        assert_eq!(out, format!("[{text}]"));
        assert_eq!(lazy.to_string(), text);
        assert_eq!(lazy.clone().into_value()["s"], "é");
    }

    #[test]
    fn a_tree_gets_its_text_on_demand() {
        let lazy = LazyJson::from(serde_json::json!({"k": "v"}));
        assert_eq!(lazy.text(), None);
        assert_eq!(
            serde_json::to_string(&lazy).unwrap_or_default(),
            r#"{"k":"v"}"#
        );
        assert_eq!(lazy.json(), r#"{"k":"v"}"#);
        assert_eq!(lazy.text(), Some(r#"{"k":"v"}"#));
    }

    #[test]
    fn text_too_deep_for_a_tree_reads_null_but_keeps_its_text() {
        let text = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let lazy = LazyJson::from_raw(raw(&text));
        assert_eq!(*lazy, Value::Null);
        assert_eq!(lazy.json(), text);
    }
}
