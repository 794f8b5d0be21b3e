//! Containment on every OS: an agent and the process it starts (a grandchild of the host) die on
//! shutdown, when the handles are dropped, when the runtime goes away, and when the host process
//! itself is killed (the host is this test binary re-executed). Unix: process group, reaper and
//! PR_SET_PDEATHSIG; Windows: the job object with kill-on-close, terminated by the ladder.
//!
//! Liveness is seen from outside the same way everywhere: the mock's `--pid-file` and
//! `--spawn-child` files grow by a byte every 50 ms while their process lives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use acp_host::{AgentSpec, Host, HostConfig, SessionOptions};
use common::{mock, mock_agent};

/// Set for the re-executed host: the directory for the scenario and the pid files.
const HOST_DIR: &str = "ACPH_TEST_CONTAINMENT_DIR";

/// Wine runs everything slower; the windows are generous.
const SETTLE: Duration = Duration::from_millis(600);

/// The agent (ignoring stdin EOF when `stubborn`, so only the ladder's last rung ends it) with a
/// grandchild; both write heartbeats into `dir`.
fn agent(dir: &Path, stubborn: bool) -> AgentSpec {
    agent_writing(dir, stubborn, "")
}

/// `agent` writing `{prefix}agent.pid` and `{prefix}child.pid`.
fn agent_writing(dir: &Path, stubborn: bool, prefix: &str) -> AgentSpec {
    let mut spec = mock(None);
    if stubborn {
        let scenario = dir.join("stubborn.json");
        std::fs::write(
            &scenario,
            r#"{"description":"containment: ignores stdin EOF","ignoreStdinEof":true}"#,
        )
        .unwrap();
        spec = spec.args(["--scenario".to_owned(), scenario.display().to_string()]);
    }
    spec.args([
        "--pid-file".to_owned(),
        dir.join(format!("{prefix}agent.pid")).display().to_string(),
        "--spawn-child".to_owned(),
        dir.join(format!("{prefix}child.pid")).display().to_string(),
    ])
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Whether the process writing `path` is alive: its file grows within `SETTLE`.
fn beating(path: &Path) -> bool {
    let before = size(path);
    std::thread::sleep(SETTLE);
    size(path) > before
}

/// Whether the heartbeat in `path` stops within `timeout`.
fn stops(path: &Path, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if !beating(path) {
            return true;
        }
    }
    false
}

fn pid(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_default()
}

/// Both processes alive before, both gone after `what`.
fn assert_both(dir: &Path, alive: bool, what: &str) {
    assert_all(dir, &["agent.pid", "child.pid"], alive, what);
}

fn assert_all(dir: &Path, names: &[&str], alive: bool, what: &str) {
    for name in names {
        let path = dir.join(name);
        let ok = if alive {
            beating(&path)
        } else {
            stops(&path, Duration::from_secs(10))
        };
        assert!(
            ok,
            "{what}: {name} (pid {}) should be {}",
            pid(&path),
            if alive { "running" } else { "gone" }
        );
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn host() -> Host {
    let host = Host::new(HostConfig {
        shutdown_grace: Duration::from_millis(300),
        ..HostConfig::default()
    });
    let events = host.events().unwrap();
    tokio::spawn(async move { while events.next().await.is_some() {} });
    host
}

fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    // Not on Windows: that would be a `\\?\` path, which is not what a user passes.
    let dir = if cfg!(windows) {
        tmp.path().to_path_buf()
    } else {
        tmp.path().canonicalize().unwrap()
    };
    (tmp, dir)
}

#[test]
fn shutdown_takes_the_agent_and_its_grandchild_down() {
    for stubborn in [false, true] {
        let (_tmp, dir) = tempdir();
        let rt = runtime();
        rt.block_on(async {
            let host = host();
            let agent = host.spawn(agent(&dir, stubborn)).await.unwrap();
            agent
                .new_session(SessionOptions::new(dir.display().to_string()))
                .await
                .unwrap();
            assert_both(&dir, true, "spawned");
            let started = Instant::now();
            agent.shutdown().await;
            // The ladder ends in a kill: it never waits for the agent's good will.
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "ladder too slow"
            );
        });
        assert_both(&dir, false, &format!("shutdown (ignores EOF: {stubborn})"));
    }
}

#[test]
fn dropping_the_handles_takes_the_agent_and_its_grandchild_down() {
    let (_tmp, dir) = tempdir();
    let rt = runtime();
    rt.block_on(async {
        let host = host();
        let agent = host.spawn(agent(&dir, true)).await.unwrap();
        assert_both(&dir, true, "spawned");
        drop(agent);
        drop(host);
        tokio::task::spawn_blocking(move || assert_both(&dir, false, "handles dropped"))
            .await
            .unwrap();
    });
}

#[test]
fn a_runtime_shut_down_takes_the_agent_and_its_grandchild_down() {
    let (_tmp, dir) = tempdir();
    let rt = runtime();
    let (host, agent) = rt.block_on(async {
        let host = host();
        let agent = host.spawn(agent(&dir, true)).await.unwrap();
        (host, agent)
    });
    assert_both(&dir, true, "spawned");
    // The tasks that own the children go away with the runtime; the handles outlive it.
    drop(rt);
    assert_both(&dir, false, "runtime dropped");
    drop((agent, host));
}

/// What the host process runs: an agent and a terminal, each with a child.
const HOST_FILES: [&str; 4] = ["agent.pid", "child.pid", "term-agent.pid", "term-child.pid"];

/// Not a test: the host that `a_killed_host_takes_the_agent_and_its_grandchild_down` starts and
/// kills. It spawns the agent and a terminal, writes `ready`, and waits.
#[test]
#[ignore = "helper process, started by a_killed_host_takes_the_agent_and_its_grandchild_down"]
fn host_process() {
    let Some(dir) = std::env::var_os(HOST_DIR).map(PathBuf::from) else {
        return;
    };
    runtime().block_on(async {
        let host = host();
        let agent = host.spawn(agent(&dir, true)).await.unwrap();
        agent
            .new_session(SessionOptions::new(dir.display().to_string()))
            .await
            .unwrap();
        let terminals = acp_host::services::terminal::TerminalManager::new(Default::default());
        terminals.create(terminal_writing(&dir, "term-")).unwrap();
        std::fs::write(dir.join("ready"), "ready").unwrap();
        // Kept (not dropped) until the process is killed.
        let _keep = (agent, terminals);
        std::future::pending::<()>().await;
    });
}

/// And its terminal, and the terminal's child.
#[test]
fn a_killed_host_takes_the_agent_and_its_grandchild_down() {
    let (_tmp, dir) = tempdir();
    let log = std::fs::File::create(dir.join("host.log")).unwrap();
    let mut host = common::self_command()
        .arg(common::test_name(module_path!(), "host_process"))
        .args(["--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(HOST_DIR, &dir)
        .env("ACP_MOCK_AGENT", mock_agent())
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join("ready").exists() {
        if let Some(status) = host.try_wait().unwrap() {
            let log = std::fs::read_to_string(dir.join("host.log")).unwrap_or_default();
            panic!("the host exited early ({status}):\n{log}");
        }
        assert!(Instant::now() < deadline, "the host never got ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_all(&dir, &HOST_FILES, true, "spawned by the host process");
    // SIGKILL on Unix, TerminateProcess on Windows: nothing of ours runs in the host.
    host.kill().unwrap();
    host.wait().unwrap();
    assert_all(&dir, &HOST_FILES, false, "host killed");
}

/// A terminal running the stubborn mock (its stdin is null: it ignores that EOF) with a child.
fn terminal(dir: &Path) -> acp_host::services::terminal::CreateTerminal {
    terminal_writing(dir, "")
}

fn terminal_writing(dir: &Path, prefix: &str) -> acp_host::services::terminal::CreateTerminal {
    let spec = agent_writing(dir, true, prefix);
    acp_host::services::terminal::CreateTerminal {
        session_id: "s".into(),
        command: spec.command,
        args: spec.args,
        env: Vec::new(),
        cwd: dir.to_path_buf(),
        output_byte_limit: None,
    }
}

#[test]
fn a_killed_terminal_takes_its_grandchild_down_and_so_does_dropping_the_manager() {
    use acp_host::services::terminal::{TerminalLimits, TerminalManager};
    let rt = runtime();
    for drop_manager in [false, true] {
        let (_tmp, dir) = tempdir();
        rt.block_on(async {
            let m = TerminalManager::new(TerminalLimits::default());
            let id = m.create(terminal(&dir)).unwrap();
            let dir2 = dir.clone();
            tokio::task::spawn_blocking(move || assert_both(&dir2, true, "terminal started"))
                .await
                .unwrap();
            if drop_manager {
                drop(m);
            } else {
                m.kill("s", &id).await.unwrap();
            }
        });
        let what = if drop_manager {
            "manager dropped"
        } else {
            "terminal killed"
        };
        assert_both(&dir, false, what);
    }
}
