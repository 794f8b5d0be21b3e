//! `acph` in a terminal, as a person sees it: each test runs acph in a tmux pane (a real
//! pseudo-terminal) and asserts the screen — the order of the lines, the cursor's line, the exit
//! status the shell prints — not internals. tmux is listed in scripts/lib/debian-packages
//! (`scripts/setup --test-packages` installs it); without it these tests fail, naming it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cli::{Scratch, ensure_mock};

const ACPH: &str = env!("CARGO_BIN_EXE_acph");
const WAIT: Duration = Duration::from_secs(20);

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// One tmux server (its own socket) with one pane running `acph ARGS`, then
/// `echo "[exit $?]"`, in a scratch directory. The server is killed on drop (and with it acph
/// and its agent).
struct Pane {
    dir: Scratch,
}

impl Pane {
    fn start(args: &[&str], width: u16) -> Pane {
        Pane::start_redirected(args, None, width)
    }

    /// [`Pane::start`] with acph's stdout going to `stdout` (a file) instead of the terminal.
    fn start_redirected(args: &[&str], stdout: Option<&Path>, width: u16) -> Pane {
        ensure_mock();
        if Command::new("tmux").arg("-V").output().is_err() {
            panic!(
                "tmux is missing: `scripts/setup --test-packages` installs it (Debian package tmux)"
            );
        }
        let dir = Scratch::new("tty");
        let mut line = sh_quote(ACPH);
        for a in args {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        if let Some(file) = stdout {
            line.push_str(&format!(" >{}", sh_quote(file.to_str().unwrap())));
        }
        line.push_str("; echo \"[exit $?]\"; sleep 600");
        let pane = Pane { dir };
        let status = pane
            .tmux()
            .args([
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                &width.to_string(),
                "-y",
                "40",
            ])
            .args(["-c", pane.dir.str()])
            // bash, as an interactive shell would, goes on after a child that handled Ctrl-C
            // (dash would die of the SIGINT with it).
            .arg(format!("bash -c {}", sh_quote(&line)))
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        pane
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S")
            .arg(self.dir.join("tmux.sock"))
            .args(["-f", "/dev/null"]);
        cmd.env_remove("TMUX");
        cmd
    }

    /// The screen's rows as shown (trailing blanks trimmed, trailing empty rows dropped).
    fn screen(&self) -> Vec<String> {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        let mut rows: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end().to_owned())
            .collect();
        while rows.last().is_some_and(|r| r.is_empty()) {
            rows.pop();
        }
        rows
    }

    /// (column, row) of the cursor.
    fn cursor(&self) -> (usize, usize) {
        let out = self
            .tmux()
            .args([
                "display-message",
                "-p",
                "-t",
                "t",
                "#{cursor_x} #{cursor_y}",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut it = text.split_whitespace().map(|n| n.parse::<usize>().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    }

    /// Until a row satisfies `pred`; the screen then.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> Vec<String> {
        let start = Instant::now();
        loop {
            let rows = self.screen();
            if rows.iter().any(|r| pred(r)) {
                return rows;
            }
            if start.elapsed() > WAIT {
                panic!("no {what} on the screen:\n{}", rows.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The exit status acph ended with (the shell's `[exit N]` row), and the screen.
    fn exit(&self) -> (i32, Vec<String>) {
        let rows = self.wait_for("[exit N]", |r| r.starts_with("[exit "));
        let row = rows.iter().find(|r| r.starts_with("[exit ")).unwrap();
        let code = row["[exit ".len()..row.len() - 1].parse().unwrap();
        (code, rows)
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

/// The row index of the first row starting with `prefix`.
fn row(rows: &[String], prefix: &str) -> usize {
    rows.iter()
        .position(|r| r.starts_with(prefix))
        .unwrap_or_else(|| panic!("no row {prefix:?}:\n{}", rows.join("\n")))
}

/// A busy transcript, then a permission request: the question comes after all of it, on its
/// own lines, the cursor waits on it and nothing is printed below it until it is answered.
#[test]
fn the_permission_question_follows_the_transcript_and_holds_the_cursor() {
    let scenario = r#"{
  "description": "text, a plan, 300 thought chunks and a tool call, then permission",
  "prompts": [[
    { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Let me look at the project.\nI will run the tests first." } } },
    { "update": { "sessionUpdate": "plan", "entries": [
      { "content": "Run the tests", "priority": "high", "status": "in_progress" } ] } },
    { "flood": { "count": 300, "kind": "agent_thought_chunk", "text": "." } },
    { "update": { "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Run cargo test", "kind": "execute", "status": "pending", "rawInput": { "command": "cargo test" } } },
    { "request": { "method": "session/request_permission", "as": "perm", "params": {
      "sessionId": "$SESSION", "toolCall": { "toolCallId": "c1" },
      "options": [ { "optionId": "allow", "name": "Allow", "kind": "allow_once" },
                   { "optionId": "deny", "name": "Deny", "kind": "reject_once" } ] } } },
    { "if": { "var": "perm", "allowed": true },
      "then": [ { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Allowed: tests pass." } } } ],
      "else": [ { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Not allowed." } } } ] }
  ]]
}"#;
    let dir = Scratch::new("tty-scenario");
    let file = dir.join("busy.json");
    std::fs::write(&file, scenario).unwrap();
    let pane = Pane::start(
        &["run", "--scenario", file.to_str().unwrap(), "run the tests"],
        100,
    );
    let question = "choose 1-2 (anything else denies):";
    pane.wait_for("the question", |r| r.starts_with(question));
    // Give anything that would still come a moment to show up below the question.
    std::thread::sleep(Duration::from_millis(400));
    let rows = pane.screen();
    let at = |p: &str| row(&rows, p);
    let order = [
        at("Let me look at the project."),
        at("I will run the tests first."),
        at("[plan]"),
        at("..........."),
        at("[tool] Run cargo test (execute) pending"),
        at("[permission] Run cargo test (execute) requested; options: allow, deny"),
        at("acph: the agent asks permission for: Run cargo test (execute)"),
        at("    command: cargo test"),
        at("  1) Allow [allow_once]"),
        at("  2) Deny [reject_once]"),
        at(question),
    ];
    let screen = rows.join("\n");
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{screen}");
    // The question is the last row, and the cursor waits at its end.
    assert_eq!(at(question), rows.len() - 1, "{screen}");
    assert_eq!(
        pane.cursor(),
        (question.len() + 1, rows.len() - 1),
        "{screen}"
    );

    pane.keys(&["1", "Enter"]);
    let (code, rows) = pane.exit();
    let screen = rows.join("\n");
    assert_eq!(code, 0, "{screen}");
    let at = |p: &str| row(&rows, p);
    let after = [
        at(question),
        at("[permission] Run cargo test -> allowed (allow) by host"),
        at("Allowed: tests pass."),
        at("[turn ended: end_turn]"),
        at("[exit 0]"),
    ];
    assert!(after.windows(2).all(|w| w[0] < w[1]), "{after:?}\n{screen}");
    assert_eq!(rows[after[0]], format!("{question} 1"), "{screen}");
}

/// The exit status says how the turn ended; every stop reason and a failure, with the line a
/// script reads on stderr.
#[test]
fn the_exit_status_says_how_the_turn_ended() {
    let dir = Scratch::new("tty-stop");
    let only = |reason: &str| {
        let file = dir.join(&format!("{reason}.json"));
        let text = format!(
            r#"{{"description": "one turn: {reason}", "prompts": [[
                {{ "update": {{ "sessionUpdate": "agent_message_chunk", "content": {{ "type": "text", "text": "About to stop." }} }} }},
                {{ "stopReason": "{reason}" }} ]]}}"#
        );
        std::fs::write(&file, text).unwrap();
        file.to_str().unwrap().to_owned()
    };
    let cases: [(String, &str, i32, Option<&str>); 6] = [
        ("minimal".into(), "[turn ended: end_turn]", 0, None),
        (
            "stop-reasons".into(),
            "[turn ended: max_tokens]",
            3,
            Some("acph: the turn ended with max_tokens"),
        ),
        (
            only("max_turn_requests"),
            "[turn ended: max_turn_requests]",
            4,
            Some("acph: the turn ended with max_turn_requests"),
        ),
        (
            only("refusal"),
            "[turn ended: refusal]",
            5,
            Some("acph: the turn ended with refusal"),
        ),
        (
            only("some_future_reason"),
            "[turn ended: some_future_reason]",
            6,
            None,
        ),
        ("crash-mid-turn".into(), "acph: agent exited", 1, None),
    ];
    // The same table is in `acph --help`.
    let help = Command::new(ACPH).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for row in [
        "0    the turn ended with end_turn",
        "5    the turn ended with refusal",
        "130  Ctrl-C",
    ] {
        assert!(help.contains(row), "{row:?} not in\n{help}");
    }
    for (scenario, shown, want, line) in &cases {
        let pane = Pane::start(
            &["run", "--permission", "deny", "--scenario", scenario],
            100,
        );
        let (code, rows) = pane.exit();
        let screen = rows.join("\n");
        assert_eq!(code, *want, "{scenario}:\n{screen}");
        let at = row(&rows, shown);
        if let Some(line) = line {
            assert!(row(&rows, line) > at, "{scenario}:\n{screen}");
        }
    }
}

/// Ctrl-C cancels the turn: the agent ends it `cancelled`, acph exits 130.
#[test]
fn a_turn_cancelled_by_ctrl_c_exits_130() {
    let pane = Pane::start(&["run", "--scenario", "wait-for-cancel"], 100);
    pane.wait_for("the turn", |r| {
        r.starts_with("[tool] Long task (execute) in_progress")
    });
    pane.keys(&["C-c"]);
    let (code, rows) = pane.exit();
    let screen = rows.join("\n");
    assert_eq!(code, 130, "{screen}");
    let order = [
        row(&rows, "Working until you cancel..."),
        // After the terminal's own echo of the key (`^C`).
        rows.iter()
            .position(|r| r.contains("acph: cancelling the turn (Ctrl-C again to stop the agent)"))
            .unwrap_or_else(|| panic!("no cancelling line:\n{screen}")),
        row(&rows, "[turn ended: cancelled]"),
        row(&rows, "acph: the turn ended with cancelled"),
        row(&rows, "[exit 130]"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{screen}");
}

/// An agent that sends no `agentInfo` is named by its command, in `run` and in `probe`.
#[test]
fn an_agent_without_a_name_shows_its_command() {
    let mock = ensure_mock();
    let mock = mock.to_str().unwrap();
    let pane = Pane::start(&["run", "--", mock, "--scenario", "minimal"], 250);
    let (code, rows) = pane.exit();
    let screen = rows.join("\n");
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        rows[0],
        format!("[agent] {mock} --scenario minimal (protocol 1; no name sent)"),
        "{screen}"
    );
    assert!(!screen.contains("[agent] agent"), "{screen}");
    let pane = Pane::start(&["probe", "--", mock, "--scenario", "minimal"], 250);
    let (code, rows) = pane.exit();
    let screen = rows.join("\n");
    assert_eq!(code, 0, "{screen}");
    assert_eq!(rows[0], "protocol version: 1", "{screen}");
    assert_eq!(
        rows[1],
        format!("agent: {mock} --scenario minimal (no name sent)"),
        "{screen}"
    );
    // A named agent keeps its name, without a double space where no version is.
    let pane = Pane::start(&["run", "--permission", "deny"], 100);
    let (_, rows) = pane.exit();
    assert!(rows[0].starts_with("[agent] ACP Mock Agent "), "{rows:?}");
}

/// While the agent starts, one line says what acph waits for; it is gone once the agent
/// answered, and the output starts on its row.
#[test]
fn the_start_says_what_it_waits_for() {
    let mock = ensure_mock();
    let mock = mock.to_str().unwrap();
    for cmd in ["probe", "run"] {
        let mut args = vec![cmd];
        if cmd == "run" {
            args.extend(["--permission", "deny"]);
        }
        args.extend(["--", mock, "--sleep", "2500"]);
        let pane = Pane::start(&args, 100);
        let waiting = "acph: waiting for acp-mock-agent to answer initialize…";
        let rows = pane.wait_for("the waiting line", |r| r == waiting);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(pane.cursor(), (waiting.chars().count(), 0));
        let (code, rows) = pane.exit();
        let screen = rows.join("\n");
        assert_eq!(code, 0, "{cmd}:\n{screen}");
        assert!(!screen.contains("acph: waiting"), "{cmd}:\n{screen}");
        let first = if cmd == "probe" {
            "protocol version: 1"
        } else {
            "[agent] ACP Mock Agent"
        };
        assert!(rows[0].starts_with(first), "{cmd}:\n{screen}");
    }
}

/// With `--json` the waiting line is still on the terminal (stderr), and stdout holds the
/// events only: none of the `progress` events acph asked for to draw it.
#[test]
fn json_output_has_no_status_events() {
    let mock = ensure_mock();
    let dir = Scratch::new("tty-json");
    let file = dir.join("events.ndjson");
    let args = [
        "run",
        "--json",
        "--permission",
        "deny",
        "--",
        mock.to_str().unwrap(),
        "--sleep",
        "2500",
    ];
    let pane = Pane::start_redirected(&args, Some(&file), 100);
    let waiting = "acph: waiting for acp-mock-agent to answer initialize…";
    pane.wait_for("the waiting line", |r| r == waiting);
    let (code, rows) = pane.exit();
    assert_eq!(code, 0, "{rows:?}");
    assert_eq!(rows, ["[exit 0]"], "the waiting line is erased");
    let text = std::fs::read_to_string(&file).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"));
            v["kind"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(kinds.iter().any(|k| k == "turn_ended"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "progress"), "{kinds:?}");
}

/// `--timeout` bounds the start: one typed line, exit 124, and the agent is stopped.
#[test]
fn timeout_bounds_the_start_and_stops_the_agent() {
    let mock = ensure_mock();
    let mock = mock.to_str().unwrap();
    for cmd in ["probe", "run"] {
        let dir = Scratch::new("tty-timeout");
        let pid_file = dir.join("mock.pid");
        let pid_file = pid_file.to_str().unwrap();
        let started = Instant::now();
        let pane = Pane::start(
            &[
                cmd,
                "--timeout",
                "1",
                "--",
                mock,
                "--sleep",
                "30000",
                "--pid-file",
                pid_file,
            ],
            100,
        );
        let (code, rows) = pane.exit();
        let screen = rows.join("\n");
        assert_eq!(code, 124, "{cmd}:\n{screen}");
        assert!(started.elapsed() < Duration::from_secs(10), "{cmd}");
        assert!(
            rows[0].starts_with("acph: timeout: initialize timed out after 1000 ms"),
            "{cmd}:\n{screen}"
        );
        assert_eq!(rows[1], "[exit 124]", "{cmd}:\n{screen}");
        assert_gone(Path::new(pid_file));
    }
}

/// The mock appends to its pid file every 50 ms while it lives: a file that stops growing is a
/// process that is gone.
fn assert_gone(pid_file: &Path) {
    let len = || std::fs::metadata(pid_file).map(|m| m.len()).unwrap_or(0);
    // It did run (a pid and some ticks), so a file that stays put means something.
    assert!(len() > 8, "the agent never ran ({})", pid_file.display());
    let start = Instant::now();
    loop {
        let before = len();
        std::thread::sleep(Duration::from_millis(300));
        if len() == before {
            return;
        }
        assert!(
            start.elapsed() < WAIT,
            "the agent still runs ({})",
            pid_file.display()
        );
    }
}
