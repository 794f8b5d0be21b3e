//! Reading recordings into the report's rows: what a reader of the page would see.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;

use super::read_str;

const HEADER: &str = r#"{"acpRecording":1,"acpHost":"0.1.0","platform":{"os":"linux","arch":"x86_64","family":"unix"},"agent":{"command":"agent","args":["--x"],"env":["API_KEY"]},"protocolVersion":1,"initialize":{"agentInfo":{"name":"mock","version":"9"},"agentCapabilities":{},"authMethods":[]}}"#;

fn rows(data: &Value) -> &Vec<Value> {
    data["rows"].as_array().unwrap()
}

fn kinds(data: &Value) -> Vec<&str> {
    rows(data)
        .iter()
        .map(|r| r["k"].as_str().unwrap())
        .collect()
}

fn rec(lines: &[&str]) -> String {
    let mut s = String::from(HEADER);
    s.push('\n');
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

const END: &str = r#"{"t":1.0,"end":{"lines":9,"bytes":1,"droppedLines":0,"truncated":false}}"#;

#[test]
fn chunks_merge_per_turn_and_link_every_message() {
    let data = read_str(&rec(&[
        r#"{"t":0.1,"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hel"}}}}}"#,
        r#"{"t":0.11,"event":{"kind":"session_update","session":"s","turn":1,"data":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hel"}}}}"#,
        r#"{"t":0.2,"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lo"}}}}}"#,
        r#"{"t":0.21,"event":{"kind":"session_update","session":"s","turn":1,"data":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lo"}}}}"#,
        r#"{"t":0.3,"event":{"kind":"session_update","session":"s","turn":1,"data":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}}}"#,
        END,
    ]))
    .unwrap();
    assert_eq!(
        kinds(&data),
        ["agent_message_chunk", "agent_thought_chunk", "end"]
    );
    let msg = &rows(&data)[0];
    assert_eq!(msg["p"][0]["text"], "Hello");
    assert_eq!(msg["w"], serde_json::json!([0, 1]));
    assert_eq!(data["wire"][1][2], "session/update agent_message_chunk");
    assert_eq!(
        data["header"][0]["kv"][0],
        serde_json::json!(["agent", "mock 9"])
    );
}

/// Format 2: an update's event refers to its wire line instead of repeating the payload; the
/// page reads the same rows as from format 1 (and links the update to exactly that line).
#[test]
fn an_update_referring_to_its_wire_line_reads_as_the_update_written_out() {
    let update = |t: &str, text: &str| {
        format!(
            r#"{{"t":{t},"dir":"in","msg":{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}}}}}"#
        )
    };
    let inline = |t: &str, text: &str| {
        format!(
            r#"{{"t":{t},"event":{{"kind":"session_update","session":"s","turn":1,"data":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}}}"#
        )
    };
    let referring = |t: &str, wire: usize| {
        format!(
            r#"{{"t":{t},"event":{{"kind":"session_update","session":"s","turn":1,"wire":{wire}}}}}"#
        )
    };
    let prompt = r#"{"t":0.05,"dir":"out","msg":{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}}"#;
    let v1 = [
        prompt.to_owned(),
        update("0.1", "Hel"),
        inline("0.1", "Hel"),
        update("0.2", "lo"),
        inline("0.2", "lo"),
        END.to_owned(),
    ];
    let v2 = [
        prompt.to_owned(),
        update("0.1", "Hel"),
        referring("0.1", 1),
        update("0.2", "lo"),
        referring("0.2", 2),
        END.to_owned(),
    ];
    let read = |header: &str, lines: &[String]| {
        let mut text = format!("{header}\n");
        for l in lines {
            text.push_str(l);
            text.push('\n');
        }
        let mut data = read_str(&text).unwrap();
        data["header"] = Value::Null;
        data
    };
    let old = read(HEADER, &v1);
    let new = read(
        &HEADER.replace(r#""acpRecording":1"#, r#""acpRecording":2"#),
        &v2,
    );
    assert_eq!(new, old);
    assert_eq!(rows(&new)[0]["p"][0]["text"], "Hello");
    assert_eq!(rows(&new)[0]["w"], serde_json::json!([1, 2]));
    // A reference to a wire line before the latest (its text is parsed again).
    let back = [
        prompt.to_owned(),
        update("0.1", "Hel"),
        update("0.2", "lo"),
        referring("0.2", 1),
        referring("0.2", 2),
        END.to_owned(),
    ];
    let data = read(
        &HEADER.replace(r#""acpRecording":1"#, r#""acpRecording":2"#),
        &back,
    );
    assert_eq!(rows(&data)[0]["p"][0]["text"], "Hello", "{data}");
    assert_eq!(rows(&data)[0]["w"], serde_json::json!([1, 2]));
}

/// A reference that does not hold (hostile or corrupt): the line is skipped and says why; the
/// rest of the recording still reads.
#[test]
fn an_update_referring_to_a_line_that_is_not_its_own_is_skipped_with_the_reason() {
    let wire_update = r#"{"t":0.1,"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}}"#;
    let host = r#"{"t":0.2,"dir":"out","msg":{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}}"#;
    let event = |extra: &str| {
        format!(r#"{{"t":0.3,"event":{{"kind":"session_update","session":"s","turn":1,{extra}}}}}"#)
    };
    let data = read_str(&rec(&[
        wire_update,
        host,
        &event(r#""wire":7"#),
        &event(r#""wire":1"#),
        &event(r#""wire":18446744073709551615"#),
        &event(r#""wire":-1"#),
        &event(r#""wire":0,"data":{}"#),
        r#"{"t":0.3,"event":{"kind":"session_update","session":"other","wire":0}}"#,
        r#"{"t":0.3,"event":{"kind":"turn_ended","session":"s","wire":0}}"#,
        &event(r#""wire":0"#),
        END,
    ]))
    .unwrap();
    let titles: Vec<&str> = rows(&data)
        .iter()
        .map(|r| r["h"].as_str().unwrap())
        .collect();
    let skipped: Vec<&&str> = titles.iter().filter(|t| t.contains("skipped")).collect();
    assert_eq!(skipped.len(), 7, "{titles:?}");
    for (line, why) in [
        (4, "wire line 7, which is not in the file"),
        (5, "wire line 1, a message of the host's"),
        (6, "wire line 18446744073709551615"),
        (7, "not the index of a wire line"),
        (8, "both `data` and `wire`"),
        (9, "another session"),
        (10, "only `session_update`"),
    ] {
        assert!(
            skipped
                .iter()
                .any(|t| t.starts_with(&format!("Line {line} skipped")) && t.contains(why)),
            "line {line}: {why} in {skipped:?}"
        );
    }
    // The one reference that holds reads as the update it names.
    let update = rows(&data)
        .iter()
        .find(|r| r["k"] == "agent_message_chunk")
        .unwrap();
    assert_eq!(update["p"][0]["text"], "hi");
    assert_eq!(update["w"], serde_json::json!([0]));
}

#[test]
fn permission_shows_who_decided_how_long_and_links_request_and_answer() {
    let data = read_str(&rec(&[
        r#"{"t":1.0,"dir":"in","msg":{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c"},"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}}"#,
        r#"{"t":1.001,"event":{"kind":"permission_requested","session":"s","data":{"requestId":7,"sessionId":"s","toolCall":{"toolCallId":"c","title":"Edit"},"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}}"#,
        r#"{"t":1.25,"dir":"out","msg":{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}}"#,
        r#"{"t":1.251,"event":{"kind":"permission_resolved","session":"s","data":{"requestId":7,"decidedBy":"host","outcome":{"outcome":"selected","optionId":"ok"},"optionKind":"allow_once"}}}"#,
        END,
    ]))
    .unwrap();
    let r = rows(&data);
    assert_eq!(r[0]["h"], "Permission requested: Edit");
    assert_eq!(
        r[0]["p"][1]["kv"][0],
        serde_json::json!(["Allow", "ok (allow_once)"])
    );
    assert_eq!(r[0]["w"], serde_json::json!([0, 1]));
    assert_eq!(r[1]["h"], "Permission resolved: ok by host");
    let kv = r[1]["p"][0]["kv"].as_array().unwrap();
    assert!(
        kv.contains(&serde_json::json!(["took", "250.0 ms"])),
        "{kv:?}"
    );
    assert_eq!(r[1]["w"], serde_json::json!([0, 1]));
    assert_eq!(data["wire"][1][2], "result #0 (session/request_permission)");
}

#[test]
fn turns_have_their_prompt_stop_reason_and_duration() {
    let data = read_str(&rec(&[
        r#"{"t":0.5,"event":{"kind":"turn_started","session":"s","turn":3,"data":{"prompt":[{"type":"text","text":"Do it"}]}}}"#,
        r#"{"t":0.51,"dir":"out","msg":{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}}"#,
        r#"{"t":2.5,"dir":"in","msg":{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}}"#,
        r#"{"t":2.51,"event":{"kind":"turn_ended","session":"s","turn":3,"data":{"stopReason":"end_turn"}}}"#,
        END,
    ]))
    .unwrap();
    let r = rows(&data);
    assert_eq!(r[0]["p"][0]["text"], "Do it");
    assert_eq!(r[0]["w"][0], 0);
    assert_eq!(r[1]["h"], "Turn 3 ended: end_turn");
    assert!(
        r[1]["p"][0]["kv"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(["duration", "2010.0 ms"]))
    );
    assert_eq!(r[1]["w"], serde_json::json!([1]));
}

#[test]
fn diffs_and_terminal_output_are_rows() {
    let data = read_str(&rec(&[
        r#"{"t":0.1,"event":{"kind":"session_update","session":"s","data":{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"diff","path":"/a","oldText":"x\ny\n","newText":"x\nz\n"}]}}}"#,
        r#"{"t":0.2,"dir":"in","msg":{"jsonrpc":"2.0","id":5,"method":"terminal/output","params":{"sessionId":"s","terminalId":"term_1"}}}"#,
        r#"{"t":0.3,"dir":"out","msg":{"jsonrpc":"2.0","id":5,"result":{"output":"hello\n","truncated":false,"exitStatus":{"exitCode":0}}}}"#,
        END,
    ]))
    .unwrap();
    let r = rows(&data);
    let diff = r[0]["p"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p.get("diff").is_some())
        .unwrap();
    assert_eq!(
        diff["diff"]["lines"],
        serde_json::json!([[" ", "x"], ["-", "y"], ["+", "z"]])
    );
    assert_eq!(r[1]["k"], "terminal_output");
    assert_eq!(r[1]["p"][0]["pre"], "hello\n");
    assert_eq!(r[1]["w"], serde_json::json!([0, 1]));
}

#[test]
fn what_is_not_a_recording_is_an_error_with_its_reason() {
    let err = |s: &str| read_str(s).unwrap_err();
    assert!(err("").contains("empty"), "{}", err(""));
    assert!(
        err("hello\n").contains("line 1 is not JSON"),
        "{}",
        err("hello")
    );
    assert!(err("{\"a\":1}\n").contains("no `acpRecording`"));
    assert!(err("{\"acpRecording\":4}\n").contains("version 4"));
    assert!(err("{\"acpRecording\":0}\n").contains("versions 1 to 3"));
    assert!(err("[1]\n").contains("no `acpRecording`"));
    // Nesting past serde_json's limit: an error, not a crash.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(err(&deep).contains("not JSON"));
}

/// A bad line in the middle is skipped and shown with its number; a file without an end line,
/// cut off mid-line, says so.
#[test]
fn bad_and_cut_lines_are_shown_not_fatal() {
    let mut s = rec(&[
        "garbage",
        r#"{"t":0.1,"gap":{"droppedLines":12}}"#,
        r#"{"t":0.2,"dir":"sideways","msg":{}}"#,
        r#"{"t":0.3,"truncated":{"maxBytes":100}}"#,
        r#"{"dir":"in","msg":{}}"#,
    ]);
    s.push_str(r#"{"t":0.4,"dir":"in","msg":{"jsonrpc""#);
    let data = read_str(&s).unwrap();
    assert_eq!(
        kinds(&data),
        [
            "skipped",
            "gap",
            "skipped",
            "truncated",
            "skipped",
            "skipped",
            "cut_short"
        ]
    );
    let r = rows(&data);
    assert!(
        r[0]["h"]
            .as_str()
            .unwrap()
            .starts_with("Line 2 skipped: not JSON")
    );
    assert_eq!(r[4]["h"], "Line 6 skipped: no time `t`");
    assert_eq!(
        r[5]["h"],
        "Line 7 skipped: cut off in the middle (the file ends here)"
    );
    assert_eq!(data["summary"]["ended"], false);
    assert_eq!(data["summary"]["skipped"], 4);
}

#[test]
fn an_agent_exit_says_how_with_its_stderr_tail() {
    let data = read_str(&rec(&[
        r#"{"t":0.5,"event":{"kind":"agent_stderr","data":{"line":"panic: boom"}}}"#,
        r#"{"t":0.6,"event":{"kind":"agent_exited","data":{"reason":"exited","exitCode":3,"signal":null,"stderrTail":"panic: boom\n"}}}"#,
        END,
    ]))
    .unwrap();
    let r = rows(&data);
    assert_eq!(r[0]["p"][0]["pre"], "panic: boom");
    assert_eq!(r[1]["h"], "Agent exited (exited): exit code 3");
    assert_eq!(
        r[1]["p"][1],
        serde_json::json!({"label": "stderr tail", "pre": "panic: boom\n"})
    );
}

/// A recording cut at any byte, or with any byte flipped, gives a page or a typed error, never
/// a panic.
#[test]
fn any_cut_or_damage_is_an_error_or_a_page() {
    let full = rec(&[
        r#"{"t":0.5,"event":{"kind":"turn_started","session":"s","turn":3,"data":{"prompt":[{"type":"text","text":"Do it"}]}}}"#,
        r#"{"t":0.51,"dir":"out","msg":{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}}"#,
        r#"{"t":1.0,"dir":"in","msg":{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c"},"options":[]}}}"#,
        r#"{"t":1.001,"event":{"kind":"permission_requested","session":"s","data":{"requestId":7,"toolCall":{"toolCallId":"c","content":[{"type":"diff","path":"/a","oldText":"x\ny\n","newText":"x\nz\n"}]},"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}}"#,
        r#"{"t":1.25,"dir":"out","msg":{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}}"#,
        r#"{"t":1.251,"event":{"kind":"permission_resolved","session":"s","data":{"requestId":7,"decidedBy":"host"}}}"#,
        r#"{"t":2.5,"dir":"in","msg":{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}}"#,
        r#"{"t":2.51,"event":{"kind":"turn_ended","session":"s","turn":3,"data":{"stopReason":"end_turn"}}}"#,
        END,
    ]);
    let bytes = full.as_bytes();
    for cut in 0..bytes.len() {
        let _ = super::read(std::io::Cursor::new(bytes[..cut].to_vec()));
    }
    for at in (0..bytes.len()).step_by(7) {
        let mut damaged = bytes.to_vec();
        damaged[at] ^= 0x5a;
        if let Ok(report) = super::read(std::io::Cursor::new(damaged)) {
            let mut out = Vec::new();
            report.write_json(&mut out, "x").unwrap();
            let _: Value = serde_json::from_slice(&out).unwrap();
        }
    }
}

/// With two reads in flight, each read's event links to its own request and answer; a
/// terminal's exit to the pending request that learns of it.
#[test]
fn events_link_to_the_request_they_are_about() {
    let data = read_str(&rec(&[
        r#"{"t":0.1,"dir":"in","msg":{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}}"#,
        r#"{"t":0.1,"dir":"in","msg":{"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/b"}}}"#,
        r#"{"t":0.2,"event":{"kind":"fs_read","session":"s","data":{"path":"/a","outcome":"ok","bytes":1}}}"#,
        r#"{"t":0.2,"dir":"out","msg":{"jsonrpc":"2.0","id":1,"result":{"content":"a"}}}"#,
        r#"{"t":0.3,"event":{"kind":"fs_read","session":"s","data":{"path":"/b","outcome":"ok","bytes":1}}}"#,
        r#"{"t":0.3,"dir":"out","msg":{"jsonrpc":"2.0","id":2,"result":{"content":"b"}}}"#,
        r#"{"t":0.4,"dir":"in","msg":{"jsonrpc":"2.0","id":3,"method":"terminal/wait_for_exit","params":{"sessionId":"s","terminalId":"t1"}}}"#,
        r#"{"t":0.5,"dir":"in","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}}"#,
        r#"{"t":0.6,"event":{"kind":"terminal_exited","session":"s","data":{"terminalId":"t1","exitCode":0}}}"#,
        r#"{"t":0.6,"dir":"out","msg":{"jsonrpc":"2.0","id":3,"result":{"exitCode":0}}}"#,
        END,
    ]))
    .unwrap();
    let r = rows(&data);
    assert_eq!(r[0]["w"], serde_json::json!([0, 2]));
    assert_eq!(r[1]["w"], serde_json::json!([1, 3]));
    assert_eq!(r[2]["k"], "terminal_exited");
    assert_eq!(r[2]["w"], serde_json::json!([4, 6]));
}

#[test]
fn two_permission_requests_in_flight_link_to_their_own() {
    let data = read_str(&rec(&[
        r#"{"t":0.1,"dir":"in","msg":{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"a"},"options":[]}}}"#,
        r#"{"t":0.1,"dir":"in","msg":{"jsonrpc":"2.0","id":2,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"b"},"options":[]}}}"#,
        r#"{"t":0.2,"event":{"kind":"permission_requested","session":"s","data":{"requestId":1,"toolCall":{"toolCallId":"a"},"options":[]}}}"#,
        r#"{"t":0.2,"event":{"kind":"permission_requested","session":"s","data":{"requestId":2,"toolCall":{"toolCallId":"b"},"options":[]}}}"#,
        r#"{"t":0.3,"dir":"out","msg":{"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"cancelled"}}}}"#,
        r#"{"t":0.3,"event":{"kind":"permission_resolved","session":"s","data":{"requestId":2,"decidedBy":"timeout","outcome":{"outcome":"cancelled"}}}}"#,
        END,
    ]))
    .unwrap();
    let r = rows(&data);
    assert_eq!(r[0]["w"], serde_json::json!([0]));
    assert_eq!(r[1]["w"], serde_json::json!([1, 2]));
    assert_eq!(r[2]["h"], "Permission resolved: cancelled by timeout");
    assert_eq!(r[2]["w"], serde_json::json!([1, 2]));
}
