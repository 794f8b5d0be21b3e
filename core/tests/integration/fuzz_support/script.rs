//! proptest strategies for adversarial agent output: JSON-RPC lines with hostile ids, methods,
//! params shapes and payloads, mixed with garbage. `@CWD@` in a rendered script stands for the
//! session's directory (the dispatch harness substitutes it).

use proptest::prelude::*;
use serde_json::{Value, json};

/// Arbitrary JSON, a few levels deep.
pub fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z]{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The kind of a request id; rendered unique per message (the index is part of it), so that
/// "answered exactly once" is checkable.
#[derive(Debug, Clone)]
pub enum IdKind {
    Num,
    Huge,
    Negative,
    Float,
    Exponent,
    Str(String),
    /// `"id": null` (a notification by JSON-RPC's rules).
    Null,
    Object,
    Array,
    Bool,
}

fn arb_id() -> impl Strategy<Value = IdKind> {
    prop_oneof![
        3 => Just(IdKind::Num),
        1 => Just(IdKind::Huge),
        1 => Just(IdKind::Negative),
        1 => Just(IdKind::Float),
        1 => Just(IdKind::Exponent),
        2 => "\\PC{0,10}".prop_map(IdKind::Str),
        1 => Just(IdKind::Null),
        1 => Just(IdKind::Object),
        1 => Just(IdKind::Array),
        1 => Just(IdKind::Bool),
    ]
}

fn id_text(kind: &IdKind, i: usize) -> String {
    match kind {
        IdKind::Num => format!("{}", 1000 + i),
        IdKind::Huge => format!("9{i:030}"),
        IdKind::Negative => format!("-{}", i + 1),
        IdKind::Float => format!("{i}.25"),
        IdKind::Exponent => format!("{}e3", i + 1),
        IdKind::Str(s) => Value::from(format!("{s}#{i}")).to_string(),
        IdKind::Null => "null".into(),
        IdKind::Object => format!("{{\"n\":{i}}}"),
        IdKind::Array => format!("[{i}]"),
        IdKind::Bool => "true".into(),
    }
}

const METHODS: &[&str] = &[
    "session/request_permission",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
    "terminal/bogus",
    "elicitation/create",
    "elicitation/complete",
    "session/prompt",
    "initialize",
    "session/update",
    "$/cancel_request",
    "$/progress",
    "_ext/thing",
    "",
];

fn arb_method() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(METHODS).prop_map(str::to_owned),
        1 => "\\PC{0,16}",
    ]
}

fn arb_session() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(json!("s")),
        1 => Just(json!("other")),
        1 => Just(json!(5)),
        1 => Just(Value::Null),
    ]
}

const PATHS: &[&str] = &[
    "@CWD@/hello.txt",
    "@CWD@/nope.txt",
    "@CWD@/../../../etc/passwd",
    "@CWD@/hello.txt/child",
    "@CWD@",
    "@CWD@/\u{0}x",
    "/etc/passwd",
    "/proc/self/mem",
    "",
    "relative.txt",
    "..",
    "\\\\?\\C:\\x",
];

fn arb_path() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::sample::select(PATHS).prop_map(Value::from),
        1 => (0usize..600).prop_map(|n| Value::from(format!("@CWD@/{}", "a".repeat(n)))),
        1 => arb_json(),
    ]
}

const OPTION_KINDS: &[&str] = &[
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
    "",
    "launch_missiles",
];

fn arb_options() -> impl Strategy<Value = Value> {
    let option = (
        prop_oneof!["[a-z]{0,4}".prop_map(Value::from), arb_json()],
        arb_json(),
        prop::sample::select(OPTION_KINDS),
    )
        .prop_map(|(id, name, kind)| json!({"optionId": id, "name": name, "kind": kind}));
    prop_oneof![
        3 => prop::collection::vec(option, 0..5).prop_map(Value::Array),
        1 => arb_json(),
        1 => (0usize..300).prop_map(|n| {
            Value::Array((0..n).map(|i| json!({"optionId": format!("o{}", i % 7), "name": "n", "kind": "allow_once"})).collect())
        }),
    ]
}

const TOOL_KINDS: &[&str] = &["read", "edit", "execute", "delete", "fetch", "other", "??"];

fn arb_tool_call() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (
            prop::sample::select(&["t1", "t2", "t3", ""][..]),
            arb_json(),
            prop::sample::select(TOOL_KINDS),
            prop::option::of(arb_path()),
        )
            .prop_map(|(id, title, kind, path)| {
                let mut tc = json!({"toolCallId": id, "title": title, "kind": kind});
                if let Some(p) = path {
                    tc["locations"] = json!([{"path": p}]);
                    tc["rawInput"] = json!({"command": "ls", "path": p});
                }
                tc
            }),
        1 => arb_json(),
    ]
}

/// Params for a method: absent, any JSON, or the method's shape with hostile values.
fn arb_params(method: String) -> BoxedStrategy<Option<Value>> {
    let specific: BoxedStrategy<Value> = match method.as_str() {
        "session/request_permission" => (arb_session(), arb_tool_call(), arb_options())
            .prop_map(|(s, tc, o)| json!({"sessionId": s, "toolCall": tc, "options": o}))
            .boxed(),
        "fs/read_text_file" | "fs/write_text_file" => (
            arb_session(),
            arb_path(),
            prop_oneof![Just(json!(1)), Just(json!(0)), Just(json!(-1)), Just(json!(u64::MAX)), arb_json()],
            prop_oneof![Just(json!(2)), Just(json!(1e20)), arb_json()],
            prop_oneof![Just(json!("new content")), arb_json()],
        )
            .prop_map(|(s, p, line, limit, content)| {
                json!({"sessionId": s, "path": p, "line": line, "limit": limit, "content": content})
            })
            .boxed(),
        m if m.starts_with("terminal/") => (
            arb_session(),
            prop_oneof![Just(json!("term-1")), arb_json()],
            prop_oneof![Just(json!("true")), Just(json!("sh")), arb_json()],
            arb_json(),
        )
            .prop_map(|(s, t, c, a)| {
                json!({"sessionId": s, "terminalId": t, "command": c, "args": a, "cwd": "@CWD@", "outputByteLimit": 10})
            })
            .boxed(),
        "elicitation/create" => (
            arb_session(),
            prop_oneof![Just(json!("form")), Just(json!("url")), arb_json()],
            prop_oneof![
                Just(json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})),
                Just(json!({"type": "object", "properties": {"x": {"type": "string", "enum": ["a"]}}})),
                arb_json(),
            ],
            prop_oneof![Just(json!("https://example.invalid/\u{202e}x")), arb_json()],
            prop_oneof![Just(json!("el-1")), arb_json()],
        )
            .prop_map(|(s, mode, schema, url, eid)| {
                json!({"sessionId": s, "mode": mode, "message": "m", "requestedSchema": schema,
                       "url": url, "elicitationId": eid})
            })
            .boxed(),
        "elicitation/complete" => prop_oneof![Just(json!({"elicitationId": "el-1"})), arb_json()]
            .boxed(),
        _ => arb_json().boxed(),
    };
    prop_oneof![
        1 => Just(None),
        1 => arb_json().prop_map(Some),
        4 => specific.prop_map(Some),
    ]
    .boxed()
}

const UPDATE_KINDS: &[&str] = &[
    "agent_message_chunk",
    "user_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "from_the_future",
];

fn arb_update() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => (
            prop::sample::select(UPDATE_KINDS),
            prop::sample::select(&["t1", "t2", "t3", "t4", ""][..]),
            arb_json(),
            arb_json(),
        )
            .prop_map(|(kind, tc, a, b)| {
                json!({"sessionUpdate": kind, "toolCallId": tc, "status": a, "title": a, "entries": b,
                       "content": b, "configOptions": a, "currentModeId": a, "availableCommands": b,
                       "used": a, "size": b})
            }),
        1 => arb_json(),
    ]
}

/// Which response id a stray response carries.
fn arb_response_id() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        2 => (0u64..8).prop_map(|n| Some(n.to_string())),
        1 => Just(Some("18446744073709551616".into())),
        1 => Just(Some("-1".into())),
        1 => Just(Some("2.0".into())),
        1 => Just(Some("\"2\"".into())),
        1 => Just(Some("null".into())),
        1 => Just(Some("{}".into())),
        1 => Just(None),
    ]
}

fn arb_response_body() -> impl Strategy<Value = String> {
    prop_oneof![
        arb_json().prop_map(|r| format!("\"result\":{r}")),
        (any::<i64>(), "\\PC{0,8}")
            .prop_map(|(c, m)| format!("\"error\":{}", json!({"code": c, "message": m}))),
        arb_json().prop_map(|e| format!("\"error\":{e}")),
        Just("\"error\":null".into()),
        Just("\"error\":null,\"result\":{}".into()),
        Just("\"result\":{},\"error\":{\"code\":1}".into()),
        Just("\"x\":1".into()),
    ]
}

/// One adversarial message, before rendering.
#[derive(Debug, Clone)]
pub enum Msg {
    Request {
        id: IdKind,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// `$/cancel_request` naming the id of an earlier message (by index) or any value.
    Cancel(Result<usize, Value>),
    Update {
        session: Value,
        update: Value,
    },
    Response {
        id: Option<String>,
        body: String,
    },
    /// Literal lines: garbage, escapes the fast paths must not trip on, nesting.
    Literal(String),
    Bytes(Vec<u8>),
    Deep(usize, char),
    /// A well-formed message (0: request, 1: notification, 2: session update, 3: response)
    /// whose payload nests `levels` arrays: around the depth limit, or far past it.
    DeepMessage {
        kind: u8,
        id: IdKind,
        method: String,
        levels: usize,
    },
    TooLong(usize),
    /// The rendered message cut at a byte offset (possibly inside a UTF-8 sequence).
    Truncated(Box<Msg>, usize),
}

const LITERALS: &[&str] = &[
    "",
    "   ",
    "\r",
    "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"tool\\u005fcall\",\"toolCallId\":\"esc\"}}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"plan\",\"sessionUpdate\":\"tool_call\"}}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"\"}}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":\"x\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":[1,2]}",
    "{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"x\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"\\ud800\",\"method\":\"x\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"id\":8,\"method\":\"x\"}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"method\":\"y\"}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":{\"deep\":[[[]]]}}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\"}",
    "{\"jsonrpc\":\"1.0\",\"id\":99,\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"s\"}}",
    "[{\"jsonrpc\":\"2.0\",\"id\":98,\"method\":\"x\"}]",
    "null",
    "42",
    "\"string\"",
    "{}",
    "{\"id\":null}",
    "{\"method\":null,\"id\":1}",
    "{\"method\":5,\"id\":97}",
    "not json at all",
];

fn arb_leaf_msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        6 => (arb_id(), arb_method())
            .prop_flat_map(|(id, method)| {
                arb_params(method.clone()).prop_map(move |params| Msg::Request {
                    id: id.clone(),
                    method: method.clone(),
                    params,
                })
            }),
        2 => arb_method().prop_flat_map(|method| {
            arb_params(method.clone()).prop_map(move |params| Msg::Notification {
                method: method.clone(),
                params,
            })
        }),
        2 => prop_oneof![
            (0usize..64).prop_map(Ok),
            arb_json().prop_map(Err)
        ]
        .prop_map(Msg::Cancel),
        4 => (arb_session(), arb_update()).prop_map(|(session, update)| Msg::Update { session, update }),
        2 => (arb_response_id(), arb_response_body()).prop_map(|(id, body)| Msg::Response { id, body }),
        2 => prop::sample::select(LITERALS).prop_map(|s| Msg::Literal(s.to_owned())),
        1 => prop::collection::vec(any::<u8>(), 0..48).prop_map(Msg::Bytes),
        1 => (1usize..5000, prop::sample::select(&['[', '{'][..])).prop_map(|(n, c)| Msg::Deep(n, c)),
        1 => (0u8..4, arb_id(), arb_method(), prop_oneof![3 => 94usize..104, 1 => 104usize..3000])
            .prop_map(|(kind, id, method, levels)| Msg::DeepMessage { kind, id, method, levels }),
        1 => (4097usize..9000).prop_map(Msg::TooLong),
    ]
}

pub fn arb_msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        12 => arb_leaf_msg(),
        1 => (arb_leaf_msg(), any::<usize>()).prop_map(|(m, at)| Msg::Truncated(Box::new(m), at)),
    ]
}

fn render(msg: &Msg, i: usize, ids: &[Option<String>]) -> Vec<u8> {
    let params = |p: &Option<Value>| match p {
        Some(v) => format!(",\"params\":{v}"),
        None => String::new(),
    };
    let text = match msg {
        Msg::Request {
            id,
            method,
            params: p,
        } => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":{}{}}}",
            id_text(id, i),
            Value::from(method.as_str()),
            params(p)
        ),
        Msg::Notification { method, params: p } => format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":{}{}}}",
            Value::from(method.as_str()),
            params(p)
        ),
        Msg::Cancel(target) => {
            let target = match target {
                Ok(j) => ids
                    .get(*j % ids.len().max(1))
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| "0".into()),
                Err(v) => v.to_string(),
            };
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{{\"requestId\":{target}}}}}"
            )
        }
        Msg::Update { session, update } => json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session, "update": update}
        })
        .to_string(),
        Msg::Response { id, body } => match id {
            Some(id) => format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},{body}}}"),
            None => format!("{{\"jsonrpc\":\"2.0\",{body}}}"),
        },
        Msg::Literal(s) => s.clone(),
        Msg::Bytes(b) => return b.clone(),
        Msg::Deep(n, c) => {
            let mut s = String::with_capacity(n * 6);
            for _ in 0..*n {
                s.push_str(if *c == '[' { "[" } else { "{\"a\":" });
            }
            s
        }
        Msg::DeepMessage {
            kind,
            id,
            method,
            levels,
        } => {
            let nest = format!("{}0{}", "[".repeat(*levels), "]".repeat(*levels));
            let method = Value::from(method.as_str());
            match kind {
                0 => format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":{method},\"params\":{{\"sessionId\":\"s\",\"x\":{nest}}}}}",
                    id_text(id, i)
                ),
                1 => format!("{{\"jsonrpc\":\"2.0\",\"method\":{method},\"params\":{nest}}}"),
                2 => format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"s\",\"update\":{{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"deep\",\"rawInput\":{nest}}}}}}}"
                ),
                _ => format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{nest}}}", i + 1),
            }
        }
        Msg::TooLong(n) => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"too-long\",\"method\":\"x\",\"params\":\"{}\"}}",
            "x".repeat(*n)
        ),
        Msg::Truncated(inner, at) => {
            let mut b = render(inner, i, ids);
            b.truncate(at % (b.len() + 1));
            return b;
        }
    };
    text.into_bytes()
}

/// Render a message sequence into agent output: one message per line (`\n` or `\r\n`).
pub fn render_script(msgs: &[(Msg, bool)]) -> Vec<u8> {
    let ids: Vec<Option<String>> = msgs
        .iter()
        .enumerate()
        .map(|(i, (m, _))| match m {
            Msg::Request { id, .. } | Msg::DeepMessage { kind: 0, id, .. } => Some(id_text(id, i)),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (i, (m, crlf)) in msgs.iter().enumerate() {
        out.extend_from_slice(&render(m, i, &ids));
        out.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
    }
    out
}

/// A whole script of `0..max` adversarial messages.
pub fn arb_script(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec((arb_msg(), prop::bool::weighted(0.1)), 0..max)
        .prop_map(|msgs| render_script(&msgs))
}
