//! `acph inspect`: a recording made by `acph run --record` becomes one self-contained page that
//! holds the recording's data; what is not a recording, a file cut short, an existing output and
//! hostile agent text are handled as a user would expect. (scripts/test-inspect renders the pages
//! in headless Chromium.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli::{Scratch, ensure_mock};

const ACPH: &str = env!("CARGO_BIN_EXE_acph");

/// Run `acph` in `dir` without stdin, killed after 60 s.
fn acph(dir: &Path, args: &[&str]) -> Output {
    ensure_mock();
    let mut child = Command::new(ACPH)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("ACP_MOCK_SCENARIO")
        .env_remove("ACP_MOCK_CREDENTIALS")
        .env("NO_COLOR", "1")
        .spawn()
        .expect("spawn acph");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("acph {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A recording of the mock agent's `every-request` scenario, in `dir`.
fn record(dir: &Scratch) -> std::path::PathBuf {
    std::fs::write(dir.join("README.md"), "# demo project\n").unwrap();
    let file = dir.join("every.acprec.jsonl");
    let out = acph(
        Path::new(dir.str()),
        &[
            "run",
            "--scenario",
            "every-request",
            "--permission",
            "allow",
            "--cwd",
            dir.str(),
            "--record",
            file.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    file
}

/// The page's embedded data, and the page.
fn data(page: &str) -> Value {
    let start = page
        .find(r#"<script type="application/json" id="data">"#)
        .expect("data script");
    let body = &page[start..];
    let body = &body[body.find('>').unwrap() + 1..];
    let end = body.find("</script>").expect("end of the data script");
    serde_json::from_str(&body[..end]).expect("the data is JSON")
}

fn kinds(data: &Value) -> Vec<&str> {
    data["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["k"].as_str().unwrap())
        .collect()
}

/// What a reader of the page finds, and nothing the page would fetch.
#[test]
fn inspect_writes_one_self_contained_page_of_the_recording() {
    let dir = Scratch::new("inspect");
    let rec = record(&dir);
    let out = acph(
        Path::new(dir.str()),
        &["inspect", rec.to_str().unwrap(), "-o", "out.html"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(stderr(&out).contains("acph: wrote out.html"), "{out:?}");
    let page = std::fs::read_to_string(dir.join("out.html")).unwrap();
    let lower = page.to_ascii_lowercase();
    for external in [
        "src=http",
        "href=http",
        "src=\"http",
        "href=\"http",
        "<link",
        "<script src",
        "@import",
        "url(http",
        "url(\"http",
    ] {
        assert!(
            !lower.contains(external),
            "the page refers to something outside: {external}"
        );
    }
    assert_eq!(
        lower.matches("<script").count(),
        2,
        "the data and the page's script only"
    );
    let data = data(&page);
    let recorded = std::fs::read_to_string(&rec).unwrap();
    let wire_lines = recorded.lines().filter(|l| l.contains(r#""dir":"#)).count();
    assert_eq!(data["wire"].as_array().unwrap().len(), wire_lines);
    let k = kinds(&data);
    for want in [
        "agent_ready",
        "turn_started",
        "tool_call",
        "permission_requested",
        "permission_resolved",
        "agent_message_chunk",
        "fs_read",
        "fs_write",
        "terminal_created",
        "terminal_exited",
        "terminal_output",
        "turn_ended",
        "end",
    ] {
        assert!(k.contains(&want), "no {want} row in {k:?}");
    }
    assert!(
        !k.contains(&"cut_short") && !k.contains(&"skipped"),
        "{k:?}"
    );
    let rows = data["rows"].as_array().unwrap();
    let row = |kind: &str| rows.iter().find(|r| r["k"] == kind).unwrap();
    let resolved = row("permission_resolved").to_string();
    assert!(resolved.contains(r#"["decided by","host"]"#), "{resolved}");
    assert!(resolved.contains(r#"["took","#), "{resolved}");
    assert_eq!(row("terminal_output")["p"][0]["pre"], "hello\n");
    // The agent's text of the turn, merged into one row per stretch of chunks.
    let text = row("agent_message_chunk")["p"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("permission selected allow\n"), "{text}");
    assert!(
        row("turn_ended")["h"]
            .as_str()
            .unwrap()
            .ends_with("end_turn")
    );
    // Each event row names the wire messages it came from.
    let perm = row("permission_requested");
    let first = perm["w"][0].as_u64().unwrap() as usize;
    assert_eq!(
        data["wire"][first][3]["method"],
        "session/request_permission"
    );
    assert_eq!(data["header"][0]["kv"][0][1], "acp-mock-agent 0.1.0");
}

/// The same recording in an older format, from one in format 3 (what acph records: an update's
/// event folded into its wire line): each folded event as a line of its own after its wire line,
/// with its payload written out (`version` 1) or referring to the line (`version` 2).
fn in_format(v3: &str, version: u64) -> String {
    let mut wires = 0u64;
    let mut out = String::new();
    for (i, line) in v3.lines().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        let mut event = None;
        if i == 0 {
            assert_eq!(v["acpRecording"], 3, "acph records format 3");
            v["acpRecording"] = version.into();
        } else if v.get("msg").is_some() {
            if let Some(Value::Object(folded)) = v.as_object_mut().unwrap().remove("event") {
                let mut ev = serde_json::Map::new();
                ev.insert("kind".into(), "session_update".into());
                ev.insert("session".into(), v["msg"]["params"]["sessionId"].clone());
                ev.extend(folded);
                match version {
                    1 => ev.insert("data".into(), v["msg"]["params"]["update"].clone()),
                    _ => ev.insert("wire".into(), wires.into()),
                };
                event = Some(json!({"t": v["t"], "event": ev}));
            }
            wires += 1;
        }
        for l in std::iter::once(v).chain(event) {
            out.push_str(&l.to_string());
            out.push('\n');
        }
    }
    out
}

/// Format 3 (what acph records: an update's event folded into its wire line) gives the same
/// page as the same recording in format 2 (the event a line of its own referring to its wire
/// line) and format 1 (every payload written out); a folded event or a reference that does not
/// hold is a skipped line that says why, not a failure.
#[test]
fn inspect_reads_an_update_in_its_wire_line_or_referring_to_it_as_one_written_out() {
    let dir = Scratch::new("inspect-v3");
    let rec = record(&dir);
    let v3 = std::fs::read_to_string(&rec).unwrap();
    let folded = v3.lines().filter(|l| l.contains(r#"},"event":{"#)).count();
    assert!(folded > 3, "the updates are in their lines: {v3}");
    let v2 = in_format(&v3, 2);
    std::fs::write(dir.join("v2.jsonl"), &v2).unwrap();
    std::fs::write(dir.join("v1.jsonl"), in_format(&v3, 1)).unwrap();
    let here = Path::new(dir.str());
    let page = |name: &str| {
        let out = acph(here, &["inspect", name, "-o", "-"]);
        assert!(out.status.success(), "{out:?}");
        let mut d = data(&String::from_utf8(out.stdout).unwrap());
        d["file"] = Value::Null;
        d["header"] = Value::Null;
        // The file's lines (a folded event is not a line of its own).
        d["summary"]["lines"] = Value::Null;
        d
    };
    let new = page(rec.to_str().unwrap());
    assert_eq!(new, page("v2.jsonl"));
    assert_eq!(new, page("v1.jsonl"));
    assert!(kinds(&new).contains(&"agent_message_chunk"), "{new}");

    let titles = |d: &Value| -> Vec<String> {
        d["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["h"].as_str().unwrap().to_owned())
            .collect()
    };
    // Each file with one line changed: the line's number and what it was changed to.
    let changed = |text: &str, name: &str, change: &dyn Fn(&mut Value, &[&str]) -> bool| {
        let lines: Vec<&str> = text.lines().collect();
        let mut at = None;
        let out: String = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                if at.is_none() && i > 0 && change(&mut v, &lines[..i]) {
                    at = Some(i + 1);
                }
                v.to_string() + "\n"
            })
            .collect();
        std::fs::write(dir.join(name), out).unwrap();
        at.unwrap()
    };
    // Format 2, a reference to the host's line before it.
    let host_wire_line = |before: &[&str]| {
        let mut wires = before.iter().filter(|l| l.contains(r#""dir":"#));
        wires.position(|l| l.contains(r#""dir":"out""#)).unwrap()
    };
    let at = changed(&v2, "bad-v2.jsonl", &|v, before| {
        let Some(ev) = v["event"]
            .as_object_mut()
            .filter(|e| e.contains_key("wire"))
        else {
            return false;
        };
        ev.insert("wire".into(), host_wire_line(before).into());
        true
    });
    let before: Vec<&str> = v2.lines().take(at - 1).collect();
    let host_line = host_wire_line(&before);
    let why = format!(
        "Line {at} skipped: its event refers to wire line {host_line}, a message of the host's"
    );
    let t = titles(&page("bad-v2.jsonl"));
    assert!(t.iter().any(|t| t.starts_with(&why)), "{why} in {t:?}");
    // Format 3, an event folded into a line of the host's, and one with a member of its own.
    let at = changed(&v3, "bad-v3.jsonl", &|v, _| {
        if v["dir"] != "out" {
            return false;
        }
        v["event"] = json!({"turn": 1});
        true
    });
    let why =
        format!("Line {at} skipped: its wire line has an `event` but is a message of the host's");
    let d = page("bad-v3.jsonl");
    let t = titles(&d);
    assert!(t.iter().any(|t| t.starts_with(&why)), "{why} in {t:?}");
    assert_eq!(
        d["wire"].as_array().unwrap().len(),
        new["wire"].as_array().unwrap().len(),
        "the line's message is still shown"
    );
    let at = changed(&v3, "bad-v3b.jsonl", &|v, _| {
        let inbound = v["dir"] == "in";
        match v["event"].as_object_mut() {
            Some(ev) if inbound => {
                ev.insert("data".into(), json!({}));
                true
            }
            _ => false,
        }
    });
    let why = format!("Line {at} skipped: its wire line's event has `data`");
    let t = titles(&page("bad-v3b.jsonl"));
    assert!(t.iter().any(|t| t.starts_with(&why)), "{why} in {t:?}");
}

#[test]
fn inspect_output_defaults_to_file_html_and_dash_is_stdout() {
    let dir = Scratch::new("inspect-out");
    let rec = record(&dir);
    let here = Path::new(dir.str());
    let out = acph(here, &["inspect", rec.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let default = dir.join("every.acprec.jsonl.html");
    let page = std::fs::read_to_string(&default).unwrap();
    let out = acph(here, &["inspect", rec.to_str().unwrap(), "-o", "-"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap().len(), page.len());
    // An existing page is refused, and left as it was; --force writes over it.
    std::fs::write(&default, "mine").unwrap();
    let out = acph(here, &["inspect", rec.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("the file exists (--force writes over it)"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&default).unwrap(), "mine");
    let out = acph(here, &["inspect", "--force", rec.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&default).unwrap().len(), page.len());
    // Never over the recording itself.
    let recorded = std::fs::read_to_string(&rec).unwrap();
    let r = rec.to_str().unwrap();
    let out = acph(here, &["inspect", "--force", r, "-o", r]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("that is the recording itself"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&rec).unwrap(), recorded);
}

/// What is not a recording: one line `acph: inspect: ...`, exit 1, no page written.
#[test]
fn inspect_refuses_what_is_not_a_recording() {
    let dir = Scratch::new("inspect-bad");
    let here = Path::new(dir.str());
    let cases: [(&str, &[u8], &str); 5] = [
        ("empty.jsonl", b"", "the file is empty: not a recording"),
        ("text.jsonl", b"hello world\n", "line 1 is not JSON"),
        (
            "other.jsonl",
            b"{\"seq\":1,\"kind\":\"agent_ready\"}\n",
            "no `acpRecording`",
        ),
        (
            "v4.jsonl",
            b"{\"acpRecording\":4}\n",
            "recording format version 4",
        ),
        ("binary.jsonl", b"\xff\xfe\x00garbage", "line 1 is not JSON"),
    ];
    for (name, content, want) in cases {
        std::fs::write(dir.join(name), content).unwrap();
        let out = acph(here, &["inspect", name, "-o", "page.html"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {out:?}");
        assert!(
            err.starts_with(&format!("acph: inspect: {name}: ")),
            "{name}: {err}"
        );
        assert!(err.contains(want), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!dir.join("page.html").exists(), "{name}");
    }
    let out = acph(here, &["inspect", "missing.jsonl"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).starts_with("acph: inspect: missing.jsonl: "),
        "{out:?}"
    );
    let out = acph(here, &["inspect"]);
    assert_eq!(out.status.code(), Some(2), "a usage error: {out:?}");
}

/// A recording cut off mid-line (the recording process died): the page still shows what there
/// is, and says the recording was cut short and which line was incomplete.
#[test]
fn inspect_shows_a_truncated_recording_plainly() {
    let dir = Scratch::new("inspect-cut");
    let rec = record(&dir);
    let text = std::fs::read_to_string(&rec).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines.len() / 2;
    let mut short = lines[..cut].join("\n");
    short.push('\n');
    short.push_str(&lines[cut][..lines[cut].len() / 2]);
    std::fs::write(dir.join("cut.jsonl"), short).unwrap();
    let out = acph(
        Path::new(dir.str()),
        &["inspect", "cut.jsonl", "-o", "cut.html"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        stderr(&out).contains("1 lines skipped; the recording has no end line (cut short)"),
        "{out:?}"
    );
    let data = data(&std::fs::read_to_string(dir.join("cut.html")).unwrap());
    let k = kinds(&data);
    assert_eq!(k[k.len() - 2..], ["skipped", "cut_short"], "{k:?}");
    let skipped = &data["rows"][k.len() - 2]["h"];
    assert_eq!(
        *skipped,
        format!(
            "Line {} skipped: cut off in the middle (the file ends here)",
            cut + 1
        )
    );
    assert_eq!(data["summary"]["ended"], false);
}

/// Agent text that would be markup stays data: the page holds no element made of it.
#[test]
fn inspect_keeps_hostile_agent_text_out_of_the_markup() {
    let dir = Scratch::new("inspect-hostile");
    let evil = "</script><script>alert(1)</script> <img src=x onerror=alert(2)> <!--";
    let header = serde_json::json!({"acpRecording": 1, "agent": {"command": evil},
        "initialize": {"agentInfo": {"name": evil}}});
    let update = serde_json::json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": evil}});
    let lines = [
        header,
        serde_json::json!({"t": 0.1, "dir": "in", "msg": {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": evil, "update": update}}}),
        serde_json::json!({"t": 0.1, "event": {"kind": "session_update", "session": evil, "data": update}}),
        serde_json::json!({"t": 0.2, "event": {"kind": "agent_stderr", "data": {"line": evil}}}),
        serde_json::json!({"t": 0.3, "end": {"lines": 4}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("evil.jsonl"), text).unwrap();
    let out = acph(
        Path::new(dir.str()),
        &["inspect", "evil.jsonl", "-o", "evil.html"],
    );
    assert!(out.status.success(), "{out:?}");
    let page = std::fs::read_to_string(dir.join("evil.html")).unwrap();
    let lower = page.to_ascii_lowercase();
    assert_eq!(
        lower.matches("<script").count(),
        2,
        "only the page's own scripts"
    );
    assert!(!lower.contains("<img"), "no img element");
    assert!(!lower.contains("alert(1)</script>"));
    // The text is all there, as data.
    let data = data(&page);
    assert_eq!(data["rows"][0]["p"][0]["text"], evil);
    assert_eq!(data["rows"][1]["p"][0]["pre"], evil);
}
