//! Terminal manager against real processes (Unix: `sh`, `sleep`, `printf`, `pwd`).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_host::services::terminal::{
    CreateTerminal, TerminalError, TerminalExit, TerminalLimits, TerminalManager,
};

const BOUND: Duration = Duration::from_secs(20);

/// Every test is bounded in time.
async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("test took too long")
}

fn manager() -> TerminalManager {
    TerminalManager::new(TerminalLimits::default())
}

fn req(session: &str, command: &str, args: &[&str]) -> CreateTerminal {
    CreateTerminal {
        session_id: session.to_owned(),
        command: command.to_owned(),
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        env: Vec::new(),
        cwd: std::env::temp_dir(), // not the inherited cwd: it may be gone or unreadable
        output_byte_limit: None,
    }
}

fn sh(session: &str, script: &str) -> CreateTerminal {
    req(session, "sh", &["-c", script])
}

fn exited(code: u32) -> TerminalExit {
    TerminalExit {
        exit_code: Some(code),
        signal: None,
    }
}

fn killed() -> TerminalExit {
    TerminalExit {
        exit_code: None,
        signal: Some("SIGKILL".to_owned()),
    }
}

/// Run to completion; return (output, truncated, exit).
async fn run(m: &TerminalManager, r: CreateTerminal) -> (String, bool, TerminalExit) {
    let session = r.session_id.clone();
    let id = m.create(r).expect("create");
    let exit = m.wait_for_exit(&session, &id).await.expect("wait");
    let out = m.output(&session, &id).expect("output");
    assert_eq!(out.exit_status.as_ref(), Some(&exit));
    m.release(&session, &id).await.expect("release");
    (out.output, out.truncated, exit)
}

/// Poll the output until `pred` holds.
async fn output_until(
    m: &TerminalManager,
    session: &str,
    id: &str,
    pred: impl Fn(&str) -> bool,
) -> String {
    loop {
        let out = m.output(session, id).expect("output").output;
        if pred(&out) {
            return out;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Pids printed one per line by the command.
async fn pids(m: &TerminalManager, session: &str, id: &str, n: usize) -> Vec<u32> {
    let out = output_until(m, session, id, |o| {
        o.lines().count() >= n && o.ends_with('\n')
    })
    .await;
    out.lines()
        .map(|l| l.trim().parse().expect("pid"))
        .collect()
}

/// A process is gone once /proc/<pid> is missing or it is a zombie (dead, not yet reaped by init).
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // Field 3 follows the parenthesised command name.
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().next());
    !matches!(state, Some("Z") | Some("X") | None)
}

async fn all_dead(pids: &[u32]) -> bool {
    for _ in 0..300 {
        if pids.iter().all(|p| !alive(*p)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

fn is_not_found<T: std::fmt::Debug>(r: Result<T, TerminalError>) -> bool {
    matches!(r, Err(TerminalError::NotFound(_)))
}

#[tokio::test]
async fn echo_hello() {
    bounded(async {
        let m = manager();
        let (out, truncated, exit) = run(&m, req("s", "echo", &["hello"])).await;
        assert_eq!(out, "hello\n");
        assert!(!truncated);
        assert_eq!(exit, exited(0));
        assert_eq!(
            serde_json::to_value(&exit).expect("json"),
            serde_json::json!({"exitCode": 0, "signal": null})
        );
    })
    .await;
}

#[tokio::test]
async fn ids_are_sequential() {
    bounded(async {
        let m = manager();
        let a = m.create(req("s", "true", &[])).expect("create");
        let b = m.create(req("s", "true", &[])).expect("create");
        assert_eq!((a.as_str(), b.as_str()), ("term_1", "term_2"));
        m.release_all().await;
    })
    .await;
}

#[tokio::test]
async fn exit_code_is_reported() {
    bounded(async {
        let m = manager();
        let (_, _, exit) = run(&m, sh("s", "exit 3")).await;
        assert_eq!(exit, exited(3));
    })
    .await;
}

#[tokio::test]
async fn args_are_not_shell_parsed() {
    bounded(async {
        let m = manager();
        let (out, _, _) = run(&m, req("s", "echo", &["a  b", "$HOME", "*"])).await;
        assert_eq!(out, "a  b $HOME *\n");
    })
    .await;
}

#[tokio::test]
async fn stderr_is_captured_in_order() {
    bounded(async {
        let m = manager();
        let (out, _, exit) = run(&m, sh("s", "echo out; echo err >&2; echo out2")).await;
        assert_eq!(out, "out\nerr\nout2\n");
        assert_eq!(exit, exited(0));
    })
    .await;
}

#[tokio::test]
async fn env_overlays_inherited_environment() {
    bounded(async {
        let m = manager();
        let mut r = sh("s", r#"echo "$FOO"; test -n "$PATH" && echo has-path"#);
        r.env = vec![("FOO".into(), "bar baz".into())];
        let (out, _, _) = run(&m, r).await;
        assert_eq!(out, "bar baz\nhas-path\n");
    })
    .await;
}

#[tokio::test]
async fn cwd_is_honoured() {
    bounded(async {
        let m = manager();
        let dir = tempfile::tempdir().expect("tempdir");
        let mut r = req("s", "pwd", &[]);
        r.cwd = dir.path().to_path_buf();
        let (out, _, _) = run(&m, r).await;
        let got = PathBuf::from(out.trim_end_matches('\n'));
        assert_eq!(
            got.canonicalize().expect("canon"),
            dir.path().canonicalize().expect("canon")
        );
    })
    .await;
}

#[tokio::test]
async fn truncation_keeps_the_end_on_char_boundaries() {
    bounded(async {
        let m = manager();
        // 100 KB of 2- and 3-byte characters: read in many chunks, cut mid-character.
        let text = "é€".repeat(20_000);
        for (limit, expected) in [(10, "é€é€"), (9, "€é€"), (4, "€"), (2, "")] {
            let mut r = req("s", "printf", &["%s", &text]);
            r.output_byte_limit = Some(limit);
            let (out, truncated, exit) = run(&m, r).await;
            assert_eq!(exit, exited(0));
            assert!(truncated, "limit {limit}");
            assert!(out.len() as u64 <= limit);
            assert!(!out.contains('\u{FFFD}'));
            assert!(text.ends_with(&out));
            assert_eq!(out, expected, "limit {limit}");
        }
    })
    .await;
}

#[tokio::test]
async fn output_that_fits_is_not_truncated() {
    bounded(async {
        let m = manager();
        let mut r = req("s", "echo", &["hello"]);
        r.output_byte_limit = Some(6);
        let (out, truncated, _) = run(&m, r).await;
        assert_eq!((out.as_str(), truncated), ("hello\n", false));
    })
    .await;
}

#[tokio::test]
async fn host_ceiling_applies() {
    bounded(async {
        let m = TerminalManager::new(TerminalLimits {
            max_output_bytes: 16,
            ..TerminalLimits::default()
        });
        let text = "0123456789".repeat(100);
        for asked in [Some(1000), None] {
            let mut r = req("s", "printf", &["%s", &text]);
            r.output_byte_limit = asked;
            let (out, truncated, _) = run(&m, r).await;
            assert!(truncated);
            assert_eq!(out, "4567890123456789");
        }
        // A smaller agent limit still wins.
        let mut r = req("s", "printf", &["%s", &text]);
        r.output_byte_limit = Some(3);
        let (out, _, _) = run(&m, r).await;
        assert_eq!(out, "789");
    })
    .await;
}

#[tokio::test]
async fn large_output_is_bounded_by_the_default_ceiling() {
    bounded(async {
        let m = manager();
        let started = std::time::Instant::now();
        let (out, truncated, exit) = run(&m, sh("s", "head -c 20000000 /dev/zero; echo end")).await;
        assert_eq!(exit, exited(0));
        assert!(truncated);
        assert_eq!(out.len(), 1024 * 1024);
        assert!(out.ends_with("\0\0end\n"));
        assert!(started.elapsed() < Duration::from_secs(10));
    })
    .await;
}

#[tokio::test]
async fn kill_keeps_the_terminal_release_frees_it() {
    bounded(async {
        let m = manager();
        let id = m
            .create(sh("s", "echo started; exec sleep 30"))
            .expect("create");
        output_until(&m, "s", &id, |o| o == "started\n").await;
        assert_eq!(m.output("s", &id).expect("output").exit_status, None);

        m.kill("s", &id).await.expect("kill");
        assert_eq!(m.wait_for_exit("s", &id).await.expect("wait"), killed());
        let out = m.output("s", &id).expect("output after kill");
        assert_eq!(out.output, "started\n");
        assert_eq!(out.exit_status, Some(killed()));
        // Killing again is harmless.
        m.kill("s", &id).await.expect("kill again");

        m.release("s", &id).await.expect("release");
        assert!(is_not_found(m.output("s", &id)));
        assert!(is_not_found(m.wait_for_exit("s", &id).await));
        assert!(is_not_found(m.kill("s", &id).await));
        assert!(is_not_found(m.release("s", &id).await));
        assert!(m.exit_notifier(&id).is_none());
    })
    .await;
}

#[tokio::test]
async fn release_kills_a_running_command() {
    bounded(async {
        let m = manager();
        let id = m.create(sh("s", "echo $$; exec sleep 30")).expect("create");
        let pids = pids(&m, "s", &id, 1).await;
        let mut notifier = m.exit_notifier(&id).expect("notifier");
        m.release("s", &id).await.expect("release");
        let exit = notifier
            .wait_for(Option::is_some)
            .await
            .expect("exit")
            .clone();
        assert_eq!(exit, Some(killed()));
        assert!(all_dead(&pids).await);
        assert!(is_not_found(m.output("s", &id)));
    })
    .await;
}

#[tokio::test]
async fn kill_takes_the_whole_process_group() {
    bounded(async {
        let m = manager();
        let id = m
            .create(sh(
                "s",
                "echo $$; sleep 30 & echo $!; sleep 30 & echo $!; wait",
            ))
            .expect("create");
        let pids = pids(&m, "s", &id, 3).await;
        assert_eq!(pids.len(), 3);
        assert!(pids.iter().all(|p| alive(*p)), "{pids:?} should run");
        m.kill("s", &id).await.expect("kill");
        assert_eq!(m.wait_for_exit("s", &id).await.expect("wait"), killed());
        assert!(all_dead(&pids).await, "{pids:?} survived kill");
        m.release("s", &id).await.expect("release");
    })
    .await;
}

#[tokio::test]
async fn leader_exit_kills_what_it_left_in_its_group() {
    bounded(async {
        let m = manager();
        // The background sleep keeps the output pipe open; it must not delay the exit.
        let started = std::time::Instant::now();
        let id = m
            .create(sh("s", "sleep 30 & echo $!; exit 0"))
            .expect("create");
        assert_eq!(m.wait_for_exit("s", &id).await.expect("wait"), exited(0));
        assert!(started.elapsed() < Duration::from_secs(5));
        let out = m.output("s", &id).expect("output").output;
        let pid: u32 = out.trim().parse().expect("pid");
        assert!(all_dead(&[pid]).await, "orphan {pid} survived");
        m.release("s", &id).await.expect("release");
    })
    .await;
}

#[tokio::test]
async fn escaped_grandchild_does_not_block_exit() {
    if !Path::new("/usr/bin/setsid").exists() && !Path::new("/bin/setsid").exists() {
        return;
    }
    bounded(async {
        let m = manager();
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("pid");
        let pidfile_arg = pidfile.to_str().expect("utf-8 path");
        // `setsid` leaves the group but inherits the output pipe; the leader exits once the
        // escapee is in its own session (it writes its pid after setsid).
        let mut r = req(
            "s",
            "sh",
            &[
                "-c",
                r#"setsid sh -c 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 10' _ "$1" &
                   while [ ! -e "$1" ]; do sleep 0.01; done; echo bye"#,
                "_",
                pidfile_arg,
            ],
        );
        r.cwd = dir.path().to_path_buf();
        let id = m.create(r).expect("create");
        let exit = tokio::time::timeout(Duration::from_secs(3), m.wait_for_exit("s", &id))
            .await
            .expect("the escapee must not block the exit")
            .expect("wait");
        assert_eq!(exit, exited(0));
        assert_eq!(m.output("s", &id).expect("output").output, "bye\n");
        m.release("s", &id).await.expect("release");

        let escapee: u32 = std::fs::read_to_string(&pidfile)
            .expect("pidfile")
            .trim()
            .parse()
            .expect("pid");
        assert!(alive(escapee), "the escapee left the group");
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &escapee.to_string()])
            .status();
    })
    .await;
}

#[tokio::test]
async fn release_session_only_touches_that_session() {
    bounded(async {
        let m = manager();
        let a1 = m.create(sh("a", "echo $$; exec sleep 30")).expect("a1");
        let a2 = m.create(sh("a", "echo $$; exec sleep 30")).expect("a2");
        let b = m.create(sh("b", "echo $$; exec sleep 30")).expect("b");
        let mut a_pids = pids(&m, "a", &a1, 1).await;
        a_pids.extend(pids(&m, "a", &a2, 1).await);
        let b_pids = pids(&m, "b", &b, 1).await;

        m.release_session("a").await;
        assert!(all_dead(&a_pids).await);
        assert!(is_not_found(m.output("a", &a1)));
        assert!(is_not_found(m.output("a", &a2)));
        assert!(b_pids.iter().all(|p| alive(*p)));
        assert_eq!(m.output("b", &b).expect("b output").exit_status, None);

        m.release_all().await;
        assert!(all_dead(&b_pids).await);
        assert!(is_not_found(m.output("b", &b)));
    })
    .await;
}

#[tokio::test]
async fn dropping_the_manager_kills_running_groups() {
    bounded(async {
        let m = manager();
        let id = m
            .create(sh("s", "echo $$; sleep 30 & echo $!; wait"))
            .expect("create");
        let pids = pids(&m, "s", &id, 2).await;
        let clone = m.clone();
        drop(m);
        assert!(pids.iter().all(|p| alive(*p)), "a clone keeps them running");
        drop(clone);
        assert!(all_dead(&pids).await, "{pids:?} survived the manager");
    })
    .await;
}

#[tokio::test]
async fn another_sessions_terminal_is_not_found() {
    bounded(async {
        let m = manager();
        let id = m.create(sh("owner", "exec sleep 30")).expect("create");
        assert!(is_not_found(m.output("intruder", &id)));
        assert!(is_not_found(m.wait_for_exit("intruder", &id).await));
        assert!(is_not_found(m.kill("intruder", &id).await));
        assert!(is_not_found(m.release("intruder", &id).await));
        m.release_session("intruder").await;
        // Untouched for its owner.
        let out = m.output("owner", &id).expect("owner output");
        assert_eq!(out.exit_status, None);
        assert!(is_not_found(m.output("owner", "term_999")));
        assert!(m.exit_notifier("term_999").is_none());
        m.release("owner", &id).await.expect("release");
    })
    .await;
}

#[tokio::test]
async fn spawn_failures() {
    bounded(async {
        let m = manager();
        let err = m
            .create(req("s", "definitely-not-a-binary-acp-host", &[]))
            .expect_err("missing binary");
        assert_eq!(err.kind(), "spawn_failed");
        assert!(matches!(
            &err,
            TerminalError::SpawnFailed { command, .. } if command == "definitely-not-a-binary-acp-host"
        ));
        let mut r = req("s", "true", &[]);
        r.cwd = PathBuf::from("/definitely/not/a/dir");
        assert_eq!(m.create(r).expect_err("bad cwd").kind(), "spawn_failed");
        assert_eq!(
            m.create(req("s", "", &[])).expect_err("empty").kind(),
            "spawn_failed"
        );
        // Failures do not use up slots or ids.
        assert_eq!(m.create(req("s", "true", &[])).expect("create"), "term_1");
        m.release_all().await;
    })
    .await;
}

#[test]
fn create_outside_a_runtime_fails_cleanly() {
    let m = manager();
    let err = m.create(req("s", "true", &[])).expect_err("no runtime");
    assert_eq!(err.kind(), "spawn_failed");
}

#[tokio::test]
async fn too_many_terminals() {
    bounded(async {
        let m = TerminalManager::new(TerminalLimits {
            max_terminals: 2,
            ..TerminalLimits::default()
        });
        let a = m.create(sh("s", "exec sleep 30")).expect("a");
        let _b = m.create(sh("t", "exec sleep 30")).expect("b");
        let err = m.create(sh("s", "exec sleep 30")).expect_err("third");
        assert!(matches!(err, TerminalError::TooMany(2)));
        assert_eq!(err.kind(), "too_many");
        // An exited but unreleased terminal still counts; a released one does not.
        m.kill("s", &a).await.expect("kill");
        assert!(matches!(
            m.create(sh("s", "true")),
            Err(TerminalError::TooMany(2))
        ));
        m.release("s", &a).await.expect("release");
        let c = m.create(sh("s", "true")).expect("after release");
        assert_eq!(m.wait_for_exit("s", &c).await.expect("wait"), exited(0));
        m.release_all().await;
    })
    .await;
}

#[tokio::test]
async fn exit_notifier_fires_on_exit() {
    bounded(async {
        let m = manager();
        let id = m.create(sh("s", "exit 7")).expect("create");
        let mut rx = m.exit_notifier(&id).expect("notifier");
        let exit = rx.wait_for(Option::is_some).await.expect("exit").clone();
        assert_eq!(exit, Some(exited(7)));
        m.release("s", &id).await.expect("release");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_terminals_on_a_multi_thread_runtime() {
    bounded(async {
        let m = manager();
        let mut tasks = Vec::new();
        for i in 0..16 {
            let m = m.clone();
            tasks.push(tokio::spawn(async move {
                let (out, _, exit) = run(&m, sh("s", &format!("echo {i}; echo e{i} >&2"))).await;
                assert_eq!(out, format!("{i}\ne{i}\n"));
                assert_eq!(exit, exited(0));
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
    })
    .await;
}
