//! Windows: agents and terminal commands installed as `.cmd`/`.bat` shims (as npm installs every
//! Node-based agent) are found through PATHEXT and started through `cmd.exe` without command
//! injection through their arguments: hostile arguments reach the program verbatim (the mock
//! agent records its argv) and run nothing, and what cannot be escaped for `cmd.exe` is refused
//! with a typed error before anything starts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(not(windows))]
#[test]
#[allow(clippy::print_stderr)]
fn batch_files_are_windows_only() {
    eprintln!("skipped: batch files and cmd.exe exist on Windows only (run under Wine here)");
}

#[cfg(windows)]
use crate::common;

#[cfg(windows)]
mod windows {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use acp_host::services::terminal::{
        CreateTerminal, TerminalError, TerminalLimits, TerminalManager,
    };
    use acp_host::{AgentSpec, Error, Host, HostConfig, SessionOptions};

    use super::common::mock_agent;

    const T: Duration = Duration::from_secs(30);

    /// `dir\agent.cmd`, an npm-style shim around a copy of the mock agent in `dir` that records
    /// its arguments in `dir\args.json` (everything after `--` is what we passed).
    fn shim(dir: &Path) -> PathBuf {
        std::fs::copy(mock_agent(), dir.join("acp-mock-agent.exe")).unwrap();
        let script = dir.join("agent.cmd");
        std::fs::write(
            &script,
            "@echo off\r\n\"%~dp0acp-mock-agent.exe\" --record-args \"%~dp0args.json\" -- %*\r\n",
        )
        .unwrap();
        script
    }

    fn recorded(dir: &Path) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(dir.join("args.json")).ok()?;
        let all: Vec<String> = serde_json::from_str(&text).unwrap();
        let at = all.iter().position(|a| a == "--").unwrap();
        Some(all[at + 1..].to_vec())
    }

    fn host() -> Host {
        let host = Host::new(HostConfig::default());
        let events = host.events().unwrap();
        tokio::spawn(async move { while events.next().await.is_some() {} });
        host
    }

    /// Found as `agent` through the spec's PATH and PATHEXT's `.CMD`, not in the current dir.
    fn spec(dir: &Path, args: &[&str]) -> AgentSpec {
        AgentSpec::new("agent")
            .args(args.iter().copied())
            .env("PATH", dir.display().to_string())
            .env("PATHEXT", ".COM;.EXE;.BAT;.CMD")
            .env_remove("ACP_MOCK_CREDENTIALS")
    }

    /// Arguments `cmd.exe` would act on if they were not quoted, each making a directory in
    /// `dir` if it ever ran as a command.
    fn hostile(dir: &Path) -> Vec<String> {
        let d = dir.display();
        vec![
            "plain".into(),
            "with space".into(),
            "&calc".into(),
            "\"&whoami".into(),
            format!("&mkdir {d}\\injected1"),
            format!("\"&mkdir {d}\\injected2"),
            format!("a\" & mkdir {d}\\injected3 & \"b"),
            format!("|mkdir {d}\\injected4"),
            format!("^&mkdir {d}\\injected5"),
            "<in >out (x) ^ !x!".into(),
            "trailing\\".into(),
            "\"quoted\\\"\"".into(),
            String::new(),
        ]
    }

    fn injected(dir: &Path) -> Vec<String> {
        (1..=5)
            .map(|i| format!("injected{i}"))
            .filter(|n| dir.join(n).exists())
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cmd_agent_found_through_pathext_gets_hostile_arguments_verbatim() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        shim(dir);
        let args = hostile(dir);
        let host = host();
        let spec = spec(dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
        let agent = tokio::time::timeout(T, host.spawn(spec))
            .await
            .unwrap()
            .unwrap();
        // The agent behind the shim speaks ACP through cmd.exe's pipes.
        tokio::time::timeout(
            T,
            agent.new_session(SessionOptions::new(dir.display().to_string())),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(recorded(dir).as_deref(), Some(&args[..]));
        assert_eq!(
            injected(dir),
            Vec::<String>::new(),
            "cmd.exe ran an argument"
        );
        agent.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn what_cmd_would_expand_or_cut_is_refused_naming_the_argument() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        shim(dir);
        let host = host();
        for bad in ["%PATH%", "100%", "a\nb", "a\rb", "a\0b"] {
            let err = host.spawn(spec(dir, &["ok", bad])).await.unwrap_err();
            match &err {
                Error::InvalidConfig { path, message } => {
                    assert_eq!(path, "args[1]", "{bad:?}: {message}");
                }
                other => panic!("{bad:?}: expected invalid_config, got {other:?}"),
            }
            assert_eq!(err.kind(), "invalid_config");
            assert!(recorded(dir).is_none(), "{bad:?}: the shim ran");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_percent_in_the_script_path_or_a_stream_name_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("100%PATH%");
        std::fs::create_dir(&dir).unwrap();
        let script = shim(&dir);
        let host = host();
        let err = host
            .spawn(AgentSpec::new(script.display().to_string()))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidConfig { path, .. } if path == "command"),
            "{err:?}"
        );
        for name in [
            format!("{}::$DATA", script.display()),
            format!("{}:stream", script.display()),
        ] {
            let err = host.spawn(AgentSpec::new(name.clone())).await.unwrap_err();
            assert!(
                matches!(&err, Error::InvalidConfig { path, .. } if path == "command"),
                "{name}: {err:?}"
            );
        }
        assert!(recorded(&dir).is_none(), "the shim ran");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_current_directory_is_not_searched() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        shim(dir);
        let host = host();
        // PATH names no directory holding `agent`; the agent's cwd does.
        let spec = AgentSpec::new("agent")
            .env("PATH", r"C:\nonexistent")
            .cwd(dir);
        let err = host.spawn(spec).await.unwrap_err();
        assert_eq!(err.kind(), "spawn_failed", "{err:?}");
        assert!(recorded(dir).is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_relative_path_is_taken_from_the_agents_working_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let sub = dir.join("bin");
        std::fs::create_dir(&sub).unwrap();
        shim(&sub);
        let host = host();
        // As on Unix, where `exec` runs after the `chdir`; `.cmd` comes from PATHEXT.
        let spec = AgentSpec::new(r"bin\agent")
            .arg("x y")
            .env("PATH", r"C:\nonexistent")
            .cwd(dir);
        let agent = tokio::time::timeout(T, host.spawn(spec))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(recorded(&sub), Some(vec!["x y".to_owned()]));
        agent.shutdown().await;
    }

    fn terminal(dir: &Path, args: &[String]) -> CreateTerminal {
        CreateTerminal {
            session_id: "s".into(),
            command: "agent".into(),
            args: args.to_vec(),
            env: vec![("PATH".into(), dir.display().to_string())],
            cwd: dir.to_path_buf(),
            output_byte_limit: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn terminals_run_cmd_shims_the_same_way() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        shim(dir);
        let m = TerminalManager::new(TerminalLimits::default());
        // The mock records its arguments, then serves ACP on a null stdin: it exits at EOF.
        let args = hostile(dir);
        let call = terminal(dir, &args);
        let id = m.create(call).unwrap();
        let exit = tokio::time::timeout(T, m.wait_for_exit("s", &id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(exit.exit_code, Some(0), "{exit:?}");
        assert_eq!(recorded(dir).as_deref(), Some(&args[..]));
        assert_eq!(
            injected(dir),
            Vec::<String>::new(),
            "cmd.exe ran an argument"
        );

        let refused = m.create(terminal(dir, &["%PATH%".to_owned()]));
        match refused {
            Err(TerminalError::SpawnFailed { message, .. }) => {
                assert!(message.contains("args[0]"), "{message}");
            }
            other => panic!("expected spawn_failed, got {other:?}"),
        }
    }
}
