//! `session/request_permission` params as the actor needs them, read in one pass over the text:
//! the session id and the options read leniently (`wire::lenient`: a member of another type
//! reads as absent, as the tree reading has it), the tool call kept as its text (the public
//! [`PermissionRequest`](super::PermissionRequest) carries it as a [`LazyJson`]). Whatever the
//! pass cannot take exactly as the tree reading would (repeated members, positional arrays) is
//! read from the tree, so both give the same answer.

use serde::Deserialize;
use serde::de::MapAccess;
use serde_json::Value;
use serde_json::value::RawValue;

use super::PermissionOption;
use crate::wire::LazyJson;
use crate::wire::lenient::{Seq, Shape, Str, Valid, next_key, shape_deserialize, slot};

/// What a permission request names.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct RequestParams {
    /// `None` when absent or not a string (the request is answered -32602).
    pub session_id: Option<String>,
    /// `None` when absent or `null`.
    pub tool_call: Option<LazyJson>,
    /// The options that have an `optionId` string, in order; `name`/`kind` default to "".
    pub options: Vec<PermissionOption>,
}

#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(rename = "sessionId", default, borrow)]
    session_id: Str<'a>,
    #[serde(rename = "toolCall", default, borrow)]
    tool_call: Option<&'a RawValue>,
    #[serde(default, borrow)]
    options: Seq<OptionItem<'a>>,
}

/// An option with an `optionId` string; anything else reads as `None` (skipped).
#[derive(Default)]
struct OptionItem<'a>(Option<(Str<'a>, Str<'a>, Str<'a>)>);

impl<'de: 'a, 'a> Shape<'de> for OptionItem<'a> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut id, mut name, mut kind) = (None, None, None);
        while let Some(key) = next_key(&mut map)? {
            match &*key {
                "optionId" => slot(&mut map, &mut id)?,
                "name" => slot(&mut map, &mut name)?,
                "kind" => slot(&mut map, &mut kind)?,
                _ => {
                    map.next_value::<Valid>()?;
                }
            }
        }
        Ok(OptionItem(id.filter(|i: &Str<'_>| i.0.is_some()).map(
            |id| (id, name.unwrap_or_default(), kind.unwrap_or_default()),
        )))
    }
}
shape_deserialize!(OptionItem);

pub(crate) fn parse(params: Option<&RawValue>) -> RequestParams {
    let Some(params) = params else {
        return RequestParams::default();
    };
    let text = params.get();
    // serde's derived structs also read a positional array; params must be an object.
    if text.starts_with('{')
        && let Ok(t) = serde_json::from_str::<Typed<'_>>(text)
    {
        let tool_call = t
            .tool_call
            .filter(|raw| raw.get() != "null")
            .map(|raw| LazyJson::from_raw(raw.to_owned()));
        let options = t.options.0.into_iter().filter_map(|o| o.0);
        return RequestParams {
            session_id: t.session_id.owned(),
            tool_call,
            options: options
                .map(|(id, name, kind)| PermissionOption {
                    option_id: id.owned().unwrap_or_default(),
                    name: name.owned().unwrap_or_default(),
                    kind: kind.owned().unwrap_or_default(),
                })
                .collect(),
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
        tool_call: params
            .get("toolCall")
            .filter(|v| !v.is_null())
            .map(|v| LazyJson::from(v.clone())),
        options: super::parse_options(params.get("options")),
    }
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
        let call = p.tool_call.as_ref().map(LazyJson::value);
        assert_eq!(call, Some(&serde_json::json!({"toolCallId": "c1"})));
        let ids: Vec<_> = p.options.iter().map(|o| o.option_id.as_str()).collect();
        assert_eq!(ids, ["a", "skip-no-id-below"]);
        assert_eq!(p.options[0].kind, "allow_once");
        assert_eq!(p.options[1].name, "");
    }
}
