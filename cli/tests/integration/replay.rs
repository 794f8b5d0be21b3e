//! `acph replay FILE` as the agent of a host (here `acph run`, spawning it as it would any stdio
//! agent): a recorded run replays with no divergence and the same transcript; a run that differs
//! is reported on the replay's stderr and in its report; a file that is not a recording exits 2.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;

use crate::cli::{Scratch, acph};

const ACPH: &str = env!("CARGO_BIN_EXE_acph");

/// `acph run --json` of the default mock scenario in `dir`, recorded into `file`.
fn record(dir: &Scratch, file: &str) -> Vec<Value> {
    let out = acph(&[
        "run",
        "--json",
        "--permission",
        "allow",
        "--cwd",
        dir.str(),
        "--record",
        file,
        "hello",
    ]);
    assert!(out.status.success(), "{out:?}");
    out.events()
}

/// The strings at `field` of the events of `kind`.
fn of(events: &[Value], kind: &str, field: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == kind)
        .filter_map(|e| {
            e["data"]
                .pointer(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

fn texts(events: &[Value]) -> Vec<String> {
    of(events, "session_update", "/content/text")
}

/// The agent's stderr lines (the replay's own lines among them).
fn stderr(events: &[Value]) -> Vec<String> {
    of(events, "agent_stderr", "/line")
}

#[test]
fn a_recorded_run_replays_through_acph_replay_with_no_divergence() {
    let dir = Scratch::project();
    let file = dir.join("run.acprec.jsonl");
    let file = file.to_str().unwrap();
    let recorded = record(&dir, file);
    // Replayed in another project directory: the agent's paths follow the session's cwd.
    let other = Scratch::project();
    let report = other.join("report.json");
    let out = acph(&[
        "run",
        "--json",
        "--permission",
        "allow",
        "--cwd",
        other.str(),
        "hello",
        "--",
        ACPH,
        "replay",
        "--fast",
        "--report",
        report.to_str().unwrap(),
        file,
    ]);
    assert!(out.status.success(), "{out:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["divergenceCount"], 0, "{r:#}");
    assert_eq!(r["complete"], true, "{r:#}");
    assert_eq!(texts(&out.events()), texts(&recorded));
    assert!(
        other.join("notes.txt").is_file(),
        "the write landed in the live project"
    );
    // The replay's last stderr line says how it went (the host shows the agent's stderr).
    let lines = stderr(&out.events());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("replay: ended: 0 divergences")),
        "{lines:?}"
    );
}

#[test]
fn a_host_that_prompts_and_decides_otherwise_is_reported_and_the_replay_exits_1() {
    let dir = Scratch::project();
    let file = dir.join("run.acprec.jsonl");
    let file = file.to_str().unwrap();
    record(&dir, file);
    let report = dir.join("report.json");
    let out = acph(&[
        "run",
        "--json",
        "--permission",
        "deny",
        "--cwd",
        dir.str(),
        "goodbye",
        "--",
        ACPH,
        "replay",
        "--fast",
        "--report",
        report.to_str().unwrap(),
        file,
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let kinds: Vec<&str> = r["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"params_differ"), "{r:#}");
    let prompt = r["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["method"] == "session/prompt")
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(prompt["differences"][0]["recorded"], "hello");
    assert_eq!(prompt["differences"][0]["live"], "goodbye");
    let exited = out
        .events()
        .into_iter()
        .find(|e| e["kind"] == "agent_exited")
        .unwrap();
    assert_eq!(exited["data"]["exitCode"], 1, "{exited}");
    let lines = stderr(&out.events());
    assert!(
        lines
            .iter()
            .any(|l| l.contains("(params_differ)") && l.contains("session/prompt")),
        "{lines:?}"
    );
}

#[test]
fn a_file_that_is_not_a_recording_exits_2_naming_the_line() {
    let dir = Scratch::new("replay-bad");
    let file = dir.join("bad.jsonl");
    std::fs::write(&file, "{\"acpRecording\":1}\nnot json\n").unwrap();
    let out = acph(&["replay", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stderr.contains("line 2: not JSON"), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
}
