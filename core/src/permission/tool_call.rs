//! What the policy reads from a permission request's `toolCall`, read straight from its text.
//!
//! [`Fields`] is the one reading of a tool call the policy uses: [`Subject::from_tool_call`]
//! reads a tree with it, and a request's tool call is read from its text with the same code
//! (see `wire::lenient`), so the round trip of an agent asking builds no tree at all. Where the
//! two could differ (a member the policy reads written twice; a tree keeps the last), the text
//! reading fails and the request is read from its tree: the subject is always the tree's.
//!
//! [`Subject::from_tool_call`]: super::policy::Subject::from_tool_call

use std::borrow::Cow;

use serde::de::{MapAccess, SeqAccess};
use serde_json::Value;

use super::policy::{RAW_PATH_KEYS, Subject};
use crate::wire::LazyJson;
use crate::wire::lenient::{Seq, Shape, Str, Valid, next_key, shape_deserialize, slot};

/// The members of a tool call (a `ToolCallUpdate`) the policy looks at.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Fields<'a> {
    pub tool_call_id: Str<'a>,
    pub kind: Str<'a>,
    pub title: Str<'a>,
    pub name: Str<'a>,
    /// `locations[].path`.
    pub locations: Seq<PathOf<'a>>,
    pub content: Seq<ContentItem<'a>>,
    pub raw_input: RawInput<'a>,
}

impl<'de: 'a, 'a> Shape<'de> for Fields<'a> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut id, mut kind, mut title, mut name) = (None, None, None, None);
        let (mut locations, mut content, mut raw_input) = (None, None, None);
        while let Some(key) = next_key(&mut map)? {
            match &*key {
                "toolCallId" => slot(&mut map, &mut id)?,
                "kind" => slot(&mut map, &mut kind)?,
                "title" => slot(&mut map, &mut title)?,
                "name" => slot(&mut map, &mut name)?,
                "locations" => slot(&mut map, &mut locations)?,
                "content" => slot(&mut map, &mut content)?,
                "rawInput" => slot(&mut map, &mut raw_input)?,
                _ => {
                    map.next_value::<Valid>()?;
                }
            }
        }
        Ok(Fields {
            tool_call_id: id.unwrap_or_default(),
            kind: kind.unwrap_or_default(),
            title: title.unwrap_or_default(),
            name: name.unwrap_or_default(),
            locations: locations.unwrap_or_default(),
            content: content.unwrap_or_default(),
            raw_input: raw_input.unwrap_or_default(),
        })
    }
}
shape_deserialize!(Fields);

/// An object's `path` string (`locations[]` items).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct PathOf<'a>(pub Str<'a>);

impl<'de: 'a, 'a> Shape<'de> for PathOf<'a> {
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        Ok(PathOf(member(map, "path")?))
    }
}
shape_deserialize!(PathOf);

/// An object's `name` string (`rawInput.env[]` items).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct NameOf<'a>(pub Str<'a>);

impl<'de: 'a, 'a> Shape<'de> for NameOf<'a> {
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        Ok(NameOf(member(map, "name")?))
    }
}
shape_deserialize!(NameOf);

/// One string member of an object; the rest is skipped.
fn member<'de, A: MapAccess<'de>>(mut map: A, name: &str) -> Result<Str<'de>, A::Error> {
    let mut value = None;
    while let Some(key) = next_key(&mut map)? {
        if key == name {
            slot(&mut map, &mut value)?;
        } else {
            map.next_value::<Valid>()?;
        }
    }
    Ok(value.unwrap_or_default())
}

/// A `content[]` item: its `type` and `path` (a diff's path counts).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ContentItem<'a> {
    pub kind: Str<'a>,
    pub path: Str<'a>,
}

impl<'de: 'a, 'a> Shape<'de> for ContentItem<'a> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut kind, mut path) = (None, None);
        while let Some(key) = next_key(&mut map)? {
            match &*key {
                "type" => slot(&mut map, &mut kind)?,
                "path" => slot(&mut map, &mut path)?,
                _ => {
                    map.next_value::<Valid>()?;
                }
            }
        }
        Ok(ContentItem {
            kind: kind.unwrap_or_default(),
            path: path.unwrap_or_default(),
        })
    }
}
shape_deserialize!(ContentItem);

/// `rawInput`, when it is an object: its path-like members (by their place in
/// [`RAW_PATH_KEYS`]), `args`, `command` and `env`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct RawInput<'a> {
    pub object: bool,
    pub paths: Vec<(usize, Strings<'a>)>,
    pub args: Seq<Str<'a>>,
    pub command: Command<'a>,
    pub env: Env<'a>,
}

impl<'de: 'a, 'a> Shape<'de> for RawInput<'a> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut paths: Vec<(usize, Strings<'de>)> = Vec::new();
        let (mut args, mut command, mut env) = (None, None, None);
        while let Some(key) = next_key(&mut map)? {
            if let Some(at) = RAW_PATH_KEYS.iter().position(|k| *k == key) {
                if paths.iter().any(|(i, _)| *i == at) {
                    return Err(serde::de::Error::custom("repeated member"));
                }
                paths.push((at, map.next_value()?));
                continue;
            }
            match &*key {
                "args" => slot(&mut map, &mut args)?,
                "command" => slot(&mut map, &mut command)?,
                "env" => slot(&mut map, &mut env)?,
                _ => {
                    map.next_value::<Valid>()?;
                }
            }
        }
        // The tree is read in RAW_PATH_KEYS order, whatever the member order.
        paths.sort_by_key(|(at, _)| *at);
        Ok(RawInput {
            object: true,
            paths,
            args: args.unwrap_or_default(),
            command: command.unwrap_or_default(),
            env: env.unwrap_or_default(),
        })
    }
}
shape_deserialize!(RawInput);

/// A string, or an array's string items (a path member of `rawInput`).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Strings<'a>(pub Vec<Cow<'a, str>>);

impl<'de: 'a, 'a> Shape<'de> for Strings<'a> {
    fn string(s: Cow<'de, str>) -> Self {
        Strings(vec![s])
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        Ok(Strings(strings(seq)?))
    }
}
shape_deserialize!(Strings);

fn strings<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<Cow<'de, str>>, A::Error> {
    let mut out = Vec::new();
    while let Some(item) = seq.next_element::<Str<'de>>()? {
        out.extend(item.0);
    }
    Ok(out)
}

/// `rawInput.command`: a command line, or an array of its parts (the string ones).
#[derive(Debug, Default, PartialEq)]
pub(crate) enum Command<'a> {
    #[default]
    None,
    Line(Cow<'a, str>),
    Parts(Vec<Cow<'a, str>>),
}

impl<'de: 'a, 'a> Shape<'de> for Command<'a> {
    fn string(s: Cow<'de, str>) -> Self {
        Command::Line(s)
    }
    fn seq<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        Ok(Command::Parts(strings(seq)?))
    }
}
shape_deserialize!(Command);

/// `rawInput.env`: an object's member names, or an array's items' `name`s.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Env<'a>(pub Vec<Cow<'a, str>>);

impl<'de: 'a, 'a> Shape<'de> for Env<'a> {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<NameOf<'de>>()? {
            out.extend(item.0.0);
        }
        Ok(Env(out))
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut names: Vec<Cow<'de, str>> = Vec::new();
        while let Some(key) = next_key(&mut map)? {
            map.next_value::<Valid>()?;
            if names.contains(&key) {
                return Err(serde::de::Error::custom("repeated member"));
            }
            names.push(key);
        }
        Ok(Env(names))
    }
}
shape_deserialize!(Env);

impl Fields<'_> {
    /// Read a tree (cannot fail: a tree has no repeated members).
    pub(crate) fn of_tree(tool_call: &Value) -> Fields<'_> {
        serde::Deserialize::deserialize(tool_call).unwrap_or_default()
    }
}

/// A permission request's tool call as the decider gets it, and its subject: the request's own
/// `toolCall` merged over the session's announced tool call of the same id (`known`), when there
/// is one. Read from the text unless a merge (or a repeated member) needs the tree. `Err` when
/// the text does not make a tree (a lone surrogate escape, a number out of range, nesting too
/// deep): such a request is refused, never decided on part of what it says.
pub(crate) fn prepare(
    request: Option<LazyJson>,
    known: impl FnOnce(&str) -> Option<Value>,
) -> Result<(LazyJson, Subject), serde_json::Error> {
    let Some(request) = request else {
        return Ok(merged(None, Value::Null));
    };
    let Some(text) = request.text() else {
        // Made from a tree (the params' tree reading): nothing to check.
        let id = request.get("toolCallId").and_then(Value::as_str);
        let base = id.and_then(known);
        return Ok(merged(base, request.into_value()));
    };
    // The shapes read every member strictly (`lenient::Valid`): when they accept the text, a
    // tree accepts it too.
    if text.trim_start().starts_with('{')
        && let Ok(fields) = serde_json::from_str::<Fields<'_>>(text)
    {
        let Some(base) = fields.tool_call_id.as_deref().and_then(known) else {
            let subject = Subject::from_fields(&fields);
            return Ok((request, subject));
        };
        let tree = serde_json::from_str(text)?;
        return Ok(merged(Some(base), tree));
    }
    let tree: Value = serde_json::from_str(text)?;
    let id = tree.get("toolCallId").and_then(Value::as_str);
    let base = id.and_then(known);
    Ok(merged(base, tree))
}

/// The tree reading: the request's members win; fields it omits come from the announced call.
fn merged(known: Option<Value>, request: Value) -> (LazyJson, Subject) {
    let tool_call = match (known, request) {
        (Some(Value::Object(mut base)), Value::Object(req)) => {
            base.extend(req);
            Value::Object(base)
        }
        (Some(base), _) => base,
        (None, req @ Value::Object(_)) => req,
        (None, _) => Value::Object(Default::default()),
    };
    let subject = Subject::from_tool_call(&tool_call);
    (LazyJson::from(tool_call), subject)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// JSON text as an agent might write it: members may repeat, string characters may be
    /// written as `\u` escapes, and the member names are the ones the reading cares about.
    #[derive(Debug, Clone)]
    enum Json {
        Null,
        Num(i64),
        Bool(bool),
        Str(String, bool),
        Arr(Vec<Json>),
        Obj(Vec<(String, bool, Json)>),
        /// Text a lax scanner skips but no tree holds.
        Raw(&'static str),
    }

    const NOT_A_TREE: &[&str] = &["1e400", r#""\ud800""#, r#""a\udc00""#, "-1e999"];

    const NAMES: &[&str] = &[
        "toolCallId",
        "kind",
        "title",
        "name",
        "locations",
        "content",
        "rawInput",
        "path",
        "type",
        "diff",
        "args",
        "command",
        "env",
        "file_path",
        "paths",
        "filePaths",
        "newPath",
        "x",
        "",
        "é",
    ];

    fn write_str(out: &mut String, s: &str, escaped: bool) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if escaped || c.is_control() => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }

    fn write(out: &mut String, v: &Json) {
        match v {
            Json::Null => out.push_str("null"),
            Json::Num(n) => out.push_str(&n.to_string()),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Str(s, e) => write_str(out, s, *e),
            Json::Raw(text) => out.push_str(text),
            Json::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(out, item);
                }
                out.push(']');
            }
            Json::Obj(members) => {
                out.push('{');
                for (i, (k, e, item)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_str(out, k, *e);
                    out.push(':');
                    write(out, item);
                }
                out.push('}');
            }
        }
    }

    fn json() -> BoxedStrategy<Json> {
        let text = prop_oneof![
            prop::sample::select(NAMES).prop_map(str::to_owned),
            prop::sample::select(&["/w/a.rs", "ls -la", " ", "allow_once", "/w/.git/config"][..])
                .prop_map(str::to_owned),
        ];
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<i64>().prop_map(Json::Num),
            any::<bool>().prop_map(Json::Bool),
            (text, any::<bool>()).prop_map(|(s, e)| Json::Str(s, e)),
            prop::sample::select(NOT_A_TREE).prop_map(Json::Raw),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Json::Arr),
                prop::collection::vec(
                    (
                        prop::sample::select(NAMES).prop_map(str::to_owned),
                        any::<bool>(),
                        inner
                    ),
                    0..6
                )
                .prop_map(Json::Obj),
            ]
        })
        .boxed()
    }

    const WORDS: &[&str] = &["/w/a.rs", "/w/.git/config", "ls", " ", "diff", "A", "B", ""];

    fn text() -> BoxedStrategy<Json> {
        (prop::sample::select(WORDS), any::<bool>())
            .prop_map(|(s, e)| Json::Str(s.to_owned(), e))
            .boxed()
    }

    /// An object with members named from `names` (so repeats are common).
    fn object(names: &'static [&'static str], value: BoxedStrategy<Json>) -> BoxedStrategy<Json> {
        prop::collection::vec(
            (
                prop::sample::select(names).prop_map(str::to_owned),
                any::<bool>(),
                value,
            ),
            0..5,
        )
        .prop_map(Json::Obj)
        .boxed()
    }

    /// A value of the shape the policy expects, or any value.
    fn shaped(strategy: BoxedStrategy<Json>) -> BoxedStrategy<Json> {
        prop_oneof![3 => strategy, 1 => json()].boxed()
    }

    /// A tool call: an object whose members are mostly the ones the policy reads, shaped as it
    /// reads them (and written with repeats, escapes and wrong types).
    fn tool_call() -> impl Strategy<Value = String> {
        let strings = prop::collection::vec(shaped(text()), 0..4)
            .prop_map(Json::Arr)
            .boxed();
        let path_items = prop::collection::vec(
            shaped(object(&["path", "line", "type"], shaped(text()))),
            0..4,
        )
        .prop_map(Json::Arr)
        .boxed();
        let env = prop_oneof![
            object(&["A", "B", "C"], json()),
            prop::collection::vec(shaped(object(&["name", "value"], shaped(text()))), 0..4)
                .prop_map(Json::Arr),
        ]
        .boxed();
        let raw_input = object(
            &[
                "path",
                "file_path",
                "paths",
                "newPath",
                "args",
                "command",
                "env",
                "x",
            ],
            prop_oneof![shaped(text()), shaped(strings), shaped(env)].boxed(),
        );
        let member = prop_oneof![
            (Just("locations"), shaped(path_items.clone())),
            (Just("content"), shaped(path_items)),
            (Just("rawInput"), shaped(raw_input)),
            (prop::sample::select(NAMES), shaped(text())),
        ];
        prop::collection::vec((member, any::<bool>()), 0..8).prop_map(|members| {
            let members = members
                .into_iter()
                .map(|((k, v), e)| (k.to_owned(), e, v))
                .collect();
            let mut out = String::new();
            write(&mut out, &Json::Obj(members));
            out
        })
    }

    fn subject_fields(s: &Subject) -> impl PartialEq + std::fmt::Debug + '_ {
        (
            s.operation,
            &s.tool_kind,
            &s.title,
            &s.tool_name,
            &s.paths,
            &s.commands,
            &s.env,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Read from its text, a tool call gives what its tree gives, or fails (and the tree
        /// is read instead); a text no tree holds is refused.
        #[test]
        fn the_text_reading_is_the_tree_reading(text in tool_call()) {
            let tree = serde_json::from_str::<Value>(&text);
            if let Ok(fields) = serde_json::from_str::<Fields<'_>>(&text) {
                let tree = tree.as_ref().unwrap_or_else(|e| panic!("shapes took what a tree refuses ({e}): {text}"));
                prop_assert_eq!(&fields, &Fields::of_tree(tree));
            }
            let lazy = LazyJson::from_raw(RawValue::from_string(text.clone()).unwrap_or_else(|e| panic!("{e}")));
            let prepared = prepare(Some(lazy), |_| None);
            match (prepared, tree) {
                (Ok((call, subject)), Ok(tree)) => {
                    let expected = Subject::from_tool_call(&tree);
                    prop_assert_eq!(subject_fields(&subject), subject_fields(&expected));
                    prop_assert_eq!(call.value(), &tree);
                }
                (Err(_), Err(_)) => {}
                (got, tree) => panic!("prepare {:?} but tree {:?}: {text}", got.map(|_| ()), tree.map(|_| ())),
            }
        }
    }

    use serde_json::value::RawValue;

    fn prep(
        request: Option<LazyJson>,
        known: impl FnOnce(&str) -> Option<Value>,
    ) -> (LazyJson, Subject) {
        prepare(request, known).unwrap_or_else(|e| panic!("refused: {e}"))
    }

    fn lazy(text: &str) -> LazyJson {
        LazyJson::from_raw(RawValue::from_string(text.to_owned()).unwrap_or_else(|e| panic!("{e}")))
    }

    #[test]
    fn a_member_the_policy_reads_written_twice_is_read_from_the_tree() {
        // A tree keeps the last `path`: the subject must name it, whatever the text reading saw.
        for text in [
            r#"{"rawInput":{"path":"/w/a.rs","path":"/w/.git/config"}}"#,
            r#"{"locations":[{"path":"/w/a","path":"/w/.git/hooks/x"}]}"#,
            r#"{"kind":"read","kind":"edit","rawInput":{"file_path":"/w/.git/x"}}"#,
            r#"{"rawInput":{"command":"ls","command":"rm -rf /"}}"#,
            r#"{"rawInput":{"env":{"A":1,"A":2}}}"#,
            r#"{"content":[{"type":"diff","path":"/w/a","type":"diff","path":"/w/.git/b"}]}"#,
        ] {
            assert!(serde_json::from_str::<Fields<'_>>(text).is_err(), "{text}");
            let tree: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
            let (_, subject) = prep(Some(lazy(text)), |_| None);
            let expected = Subject::from_tool_call(&tree);
            assert_eq!(
                subject_fields(&subject),
                subject_fields(&expected),
                "{text}"
            );
        }
        let (_, s) = prep(
            Some(lazy(
                r#"{"rawInput":{"path":"/w/a.rs","path":"/w/.git/config"}}"#,
            )),
            |_| None,
        );
        assert_eq!(s.paths, ["/w/.git/config"]);
        let (_, s) = prep(Some(lazy(r#"{"kind":"read","kind":"edit"}"#)), |_| None);
        assert_eq!(s.tool_kind.as_deref(), Some("edit"));
    }

    #[test]
    fn escaped_member_names_are_the_names_they_spell() {
        let text =
            r#"{"\u006bind":"execute","rawInput":{"comm\u0061nd":"rm","\u0061rgs":["-rf","/"]}}"#;
        let (call, s) = prep(Some(lazy(text)), |_| None);
        assert_eq!(s.tool_kind.as_deref(), Some("execute"));
        assert_eq!(s.commands, ["rm -rf /"]);
        assert_eq!(call.json(), text, "the text is handed on as it came");
    }

    #[test]
    fn an_announced_tool_call_is_merged_under_the_request() {
        let known = serde_json::json!({"toolCallId": "c1", "kind": "edit", "title": "old",
            "locations": [{"path": "/w/a.rs"}]});
        let (call, s) = prep(Some(lazy(r#"{"toolCallId":"c1","title":"new"}"#)), |id| {
            (id == "c1").then(|| known.clone())
        });
        assert_eq!(call["title"], "new");
        assert_eq!(call["kind"], "edit");
        assert_eq!(s.paths, ["/w/a.rs"]);
        assert_eq!(s.tool_kind.as_deref(), Some("edit"));
        // No request tool call, or one that is not an object: `{}` (nothing announced applies).
        let (call, s) = prep(None, |_| Some(known.clone()));
        assert_eq!(*call, serde_json::json!({}));
        assert!(s.paths.is_empty());
        let (call, _) = prep(Some(lazy("[1]")), |_| None);
        assert_eq!(*call, serde_json::json!({}));
    }

    /// What no tree holds is refused, wherever it hides: a member the policy does not read
    /// (skipped, but strictly), an announced call to merge with, the request's own members.
    /// A lax skip there once let the announced call's read-only subject stand for an edit of
    /// `.git` (the request's tree read as `null`).
    #[test]
    fn a_tool_call_no_tree_holds_is_refused() {
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        let known = serde_json::json!({"toolCallId": "r1", "kind": "read",
            "locations": [{"path": "/w/README.md"}]});
        let bad = ["1e400", r#""\ud800""#, r#""x\udc00""#, deep.as_str()];
        for bad in bad {
            for text in [
                format!(
                    r#"{{"toolCallId":"r1","kind":"edit","locations":[{{"path":"/w/.git/hooks/x"}}],"_meta":{{"n":{bad}}}}}"#
                ),
                format!(
                    r#"{{"kind":"edit","title":{bad},"locations":[{{"path":"/w/.git/hooks/x"}}]}}"#
                ),
                format!(r#"{{"kind":"edit","rawInput":{{"path":"/w/.git/x","extra":{bad}}}}}"#),
            ] {
                let got = prepare(Some(lazy(&text)), |id| (id == "r1").then(|| known.clone()));
                assert!(got.is_err(), "accepted: {text}");
            }
        }
    }
}
