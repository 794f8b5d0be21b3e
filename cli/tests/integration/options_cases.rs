//! The cross-face option documents (tests/options/cases.json) through `acph`: host documents by
//! `--options`, agent specs by `--agent-options` (`acph probe`), session options by
//! `--session-options` (`acph run`). The same outcome and `data.path` as every face; the CLI
//! prints an `invalid_config` as `acph: invalid config: PATH: ...` and exits 1. Pools are not
//! part of the CLI: those cases are skipped, and said so.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const ACPH: &str = env!("CARGO_BIN_EXE_acph");

fn mock() -> PathBuf {
    let dir = Path::new(ACPH).parent().unwrap();
    let mock = dir.join(format!("acp-mock-agent{}", std::env::consts::EXE_SUFFIX));
    if !mock.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-q", "-p", "acp-mock-agent"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(
            cmd.status().unwrap().success(),
            "building the mock agent failed"
        );
    }
    mock
}

/// `acph ARGS` in `cwd`, killed after 30 s; (exit code, stderr).
fn acph(args: &[&str], cwd: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(ACPH)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("acph {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_shared_case_has_its_outcome_through_the_cli() {
    let dir = std::env::temp_dir().join(format!("acph-options-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let policy = dir.join("policy.json");
    std::fs::write(&policy, r#"{"preset": "read-only"}"#).unwrap();
    let esc = |p: &Path| {
        let s = serde_json::to_string(&p.to_string_lossy()).unwrap();
        s[1..s.len() - 1].to_owned()
    };
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/options/cases.json"
    ))
    .unwrap()
    .replace("$DIR", &esc(&dir))
    .replace("$MISSING", &esc(&dir.join("missing")))
    .replace("$FILE", &esc(&file))
    .replace("$POLICY", &esc(&policy))
    .replace("$MOCK", &esc(&mock()));
    let cases: Value = serde_json::from_str(&text).unwrap();
    let doc_file = dir.join("doc.json");
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in cases["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        std::fs::write(&doc_file, case["doc"].to_string()).unwrap();
        let d = doc_file.to_str().unwrap();
        let args: Vec<&str> = match case["document"].as_str().unwrap() {
            "host" => vec!["probe", "--options", d],
            "agent" => vec!["probe", "--agent-options", d],
            "session" => vec![
                "run",
                "--permission",
                "deny",
                "--elicitation",
                "off",
                "--session-options",
                d,
            ],
            "pool" => {
                // Said in the test output: a skip is never silent.
                eprintln!("skipped: {name}: the CLI has no pools");
                continue;
            }
            other => panic!("unknown document {other}"),
        };
        ran += 1;
        let (code, stderr) = acph(&args, &dir);
        let expect = &case["expect"];
        let except_cli = expect["except"]
            .as_array()
            .is_some_and(|a| a.iter().any(|f| f == "cli"));
        let ok = if expect == "ok" || except_cli {
            code == Some(0)
        } else {
            assert_eq!(expect["kind"], "invalid_config", "{name}");
            let want = format!(
                "acph: invalid config: {}: ",
                expect["path"].as_str().unwrap()
            );
            code == Some(1) && stderr.lines().count() == 1 && stderr.starts_with(&want)
        };
        if !ok {
            failures.push(format!(
                "{name}: exit {code:?}, stderr {stderr:?}, want {expect}"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ran >= 50, "only {ran} cases ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
