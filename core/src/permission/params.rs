//! `session/request_permission` params as the actor needs them, read in one typed pass: the
//! tool call as a tree (the public [`PermissionRequest`](super::PermissionRequest) carries it),
//! the session id and the options typed. Whatever the typed pass does not take exactly as the
//! lenient tree reading would (wrong member types, repeated members, positional arrays), is read
//! the lenient way, so both give the same answer; the typed pass only saves the tree of
//! everything but the tool call.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::PermissionOption;

/// What a permission request names.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct RequestParams {
    /// `None` when absent or not a string (the request is answered -32602).
    pub session_id: Option<String>,
    /// `None` when absent or `null`.
    pub tool_call: Option<Value>,
    /// The options that have an `optionId` string, in order; `name`/`kind` default to "".
    pub options: Vec<PermissionOption>,
}

#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(rename = "sessionId", default, borrow)]
    session_id: Option<&'a RawValue>,
    #[serde(rename = "toolCall", default)]
    tool_call: Option<Value>,
    #[serde(default, borrow)]
    options: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct TypedOption<'a> {
    #[serde(rename = "optionId", borrow)]
    option_id: Cow<'a, str>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
}

pub(crate) fn parse(params: Option<&RawValue>) -> RequestParams {
    let Some(params) = params else {
        return RequestParams::default();
    };
    let text = params.get();
    // serde's derived structs also read a positional array; params must be an object.
    if text.starts_with('{')
        && let Ok(t) = serde_json::from_str::<Typed<'_>>(text)
    {
        return RequestParams {
            session_id: t.session_id.and_then(json_string),
            tool_call: t.tool_call.filter(|v| !v.is_null()),
            options: t.options.map(options).unwrap_or_default(),
        };
    }
    lenient(&serde_json::from_str(text).unwrap_or(Value::Null))
}

/// The reading of a params tree every other path agrees with.
fn lenient(params: &Value) -> RequestParams {
    RequestParams {
        session_id: params
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        tool_call: params.get("toolCall").filter(|v| !v.is_null()).cloned(),
        options: super::parse_options(params.get("options")),
    }
}

fn options(raw: &RawValue) -> Vec<PermissionOption> {
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(raw.get()) else {
        // Not an array (or not one of values): the lenient reading offers nothing either.
        return Vec::new();
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let text = item.get();
        if text.starts_with('{')
            && let Ok(o) = serde_json::from_str::<TypedOption<'_>>(text)
        {
            out.push(PermissionOption {
                option_id: o.option_id.into_owned(),
                name: o.name.map(Cow::into_owned).unwrap_or_default(),
                kind: o.kind.map(Cow::into_owned).unwrap_or_default(),
            });
            continue;
        }
        let one = serde_json::from_str::<Value>(text).map(|v| Value::Array(vec![v]));
        out.extend(super::parse_options(one.ok().as_ref()));
    }
    out
}

fn json_string(raw: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(raw.get()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap_or_else(|_| unreachable!())
    }

    /// The typed pass and the lenient tree reading agree on well-formed and hostile params.
    #[test]
    fn typed_and_lenient_readings_agree() {
        let cases = [
            r#"{"sessionId":"s1","toolCall":{"toolCallId":"c1","kind":"edit"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"},{"optionId":"r","name":"Reject","kind":"reject_once"}]}"#,
            r#"{"options":[{"kind":"allow_once","optionId":"a"}],"sessionId":"s\u0031","_meta":{"x":[1,2]}}"#,
            r#"{"sessionId":"s1","toolCall":null,"options":null}"#,
            r#"{"sessionId":5,"toolCall":[1],"options":{"optionId":"a"}}"#,
            r#"{"sessionId":null,"options":[1,"a",null,[],["a","b","c"],{"optionId":7},{"optionId":"ok","name":3,"kind":false},{"name":"no id"}]}"#,
            r#"{"sessionId":"s1","sessionId":"s2","options":[{"optionId":"a","optionId":"b"}]}"#,
            r#"{"sessionId":"s1","toolCall":{"a":1},"toolCall":{"b":2}}"#,
            r#"["s1",{"toolCallId":"c"},[{"optionId":"a"}]]"#,
            r#""s1""#,
            "null",
            "{}",
        ];
        for text in cases {
            let tree: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            assert_eq!(parse(Some(&raw(text))), lenient(&tree), "{text}");
        }
        assert_eq!(parse(None), RequestParams::default());
    }

    #[test]
    fn a_well_formed_request_reads_fully() {
        let p = parse(Some(&raw(
            r#"{"sessionId":"s1","toolCall":{"toolCallId":"c1"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"},{"optionId":"skip-no-id-below"},{"name":"x"}]}"#,
        )));
        assert_eq!(p.session_id.as_deref(), Some("s1"));
        assert_eq!(p.tool_call, Some(serde_json::json!({"toolCallId": "c1"})));
        let ids: Vec<_> = p.options.iter().map(|o| o.option_id.as_str()).collect();
        assert_eq!(ids, ["a", "skip-no-id-below"]);
        assert_eq!(p.options[0].kind, "allow_once");
        assert_eq!(p.options[1].name, "");
    }
}
