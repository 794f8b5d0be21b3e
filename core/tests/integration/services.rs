//! The agent's fs/terminal requests through the whole host: sandbox roots, policy, events, and
//! terminals dying with their session. Scenarios are written on the fly for each attack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use acp_host::permission::policy::Policy;
use acp_host::{EventKind, Host, HostConfig, SessionOptions};
use common::scenario::{self, Ws, report, req, said, scenario_file};
use common::*;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

/// One turn of `steps` in a fresh workspace: the events, the workspace and its path.
async fn run(config: HostConfig, steps: Value) -> (Vec<acp_host::Event>, Ws, String) {
    let ws = Ws::new();
    // The scenario is also in the workspace: some tests have the agent read it back.
    scenario_file(ws.path(), steps.clone());
    let evs = scenario::run(&ws, config, steps).await;
    let cwd = ws.cwd.clone();
    (evs, ws, cwd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_roots_relative_paths_and_git_hooks_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let outside_file = outside.path().join("pwned.txt");
    let steps = json!([
        req(
            "fs/write_text_file",
            "abs_out",
            json!({"sessionId":"$SESSION","path": outside_file,"content":"x"})
        ),
        report("abs_out"),
        req(
            "fs/write_text_file",
            "dotdot",
            json!({"sessionId":"$SESSION","path":"$CWD/../escape.txt","content":"x"})
        ),
        report("dotdot"),
        req(
            "fs/write_text_file",
            "relative",
            json!({"sessionId":"$SESSION","path":"notes.txt","content":"x"})
        ),
        report("relative"),
        req(
            "fs/write_text_file",
            "hook",
            json!({"sessionId":"$SESSION","path":"$CWD/.git/hooks/pre-commit","content":"#!/bin/sh\nrm -rf ~\n"})
        ),
        report("hook"),
        req(
            "fs/write_text_file",
            "ok",
            json!({"sessionId":"$SESSION","path":"$CWD/sub/ok.txt","content":"fine\n"})
        ),
        report("ok"),
        req(
            "fs/read_text_file",
            "missing",
            json!({"sessionId":"$SESSION","path":"$CWD/nope.txt"})
        ),
        report("missing"),
    ]);
    let (evs, dir, cwd) = run(
        HostConfig {
            permission: allow_once(),
            ..HostConfig::default()
        },
        steps,
    )
    .await;
    let writes: Vec<Value> = of_kind(&evs, EventKind::FsWrite)
        .iter()
        .map(|e| e.data_value())
        .collect();
    let outcomes: Vec<&str> = writes
        .iter()
        .map(|w| w["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        vec![
            "outside_roots",
            "outside_roots",
            "not_absolute",
            "denied",
            "ok"
        ],
        "{writes:?}"
    );
    assert!(writes[3]["rule"].as_str().unwrap().contains(".git"));
    assert!(!outside_file.exists());
    assert!(!dir.path().join("../escape.txt").exists());
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub/ok.txt")).unwrap(),
        "fine\n"
    );
    let said = said(&evs);
    assert!(
        said.contains("missing={\"error\":{\"code\":-32002"),
        "{said}"
    );
    // The not-found error names the file as an RFC 8089 URI (`file:///C:/...` on Windows).
    let uri = url::Url::from_file_path(std::path::Path::new(&cwd).join("nope.txt")).unwrap();
    assert!(said.contains(uri.as_str()), "{said}");
    let reads = of_kind(&evs, EventKind::FsRead);
    assert_eq!(reads[0].data_value()["outcome"], "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_policy_refuses_writes_and_commands_but_serves_reads() {
    std::fs::create_dir_all("/tmp").ok();
    let steps = json!([
        req(
            "fs/write_text_file",
            "w",
            json!({"sessionId":"$SESSION","path":"$CWD/a.txt","content":"x"})
        ),
        report("w"),
        req(
            "terminal/create",
            "t",
            json!({"sessionId":"$SESSION","command":"echo","args":["hi"]})
        ),
        report("t"),
        req(
            "fs/read_text_file",
            "r",
            json!({"sessionId":"$SESSION","path":"$CWD/scenario.json","limit":1})
        ),
        report("r"),
    ]);
    let config = HostConfig {
        policy: Some(Policy::preset("read-only").unwrap()),
        ..HostConfig::default()
    };
    let (evs, dir, _) = run(config, steps).await;
    assert!(!dir.path().join("a.txt").exists());
    assert_eq!(
        of_kind(&evs, EventKind::FsWrite)[0].data_value()["outcome"],
        "denied"
    );
    let created = of_kind(&evs, EventKind::TerminalCreated)[0].data_value();
    assert_eq!(created["outcome"], "denied");
    assert!(created.get("terminalId").is_none());
    assert_eq!(
        of_kind(&evs, EventKind::FsRead)[0].data_value()["outcome"],
        "ok"
    );
    assert!(said(&evs).contains("r={\"content\":\"{"), "{}", said(&evs));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_denied_commands_never_run() {
    let steps = json!([
        req(
            "terminal/create",
            "t",
            json!({"sessionId":"$SESSION","command":"/bin/rm","args":["-rf","$CWD/victim"]})
        ),
        report("t"),
    ]);
    let policy =
        Policy::from_json(r#"{"preset":"ask","hardDeny":{"commands":["rm -rf *"]}}"#).unwrap();
    let dir_probe = tempfile::tempdir().unwrap();
    let _ = dir_probe;
    let config = HostConfig {
        permission: allow_once(),
        policy: Some(policy),
        ..HostConfig::default()
    };
    let (evs, _dir, _) = run(config, steps).await;
    let created = of_kind(&evs, EventKind::TerminalCreated)[0].data_value();
    assert_eq!(created["outcome"], "denied", "{created}");
    assert!(said(&evs).contains("denied by the host's policy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_lifecycle_is_served_and_reported() {
    let (evs, _dir, _) = run(HostConfig { permission: allow_once(), ..HostConfig::default() }, json!([
        req("terminal/create", "t", json!({"sessionId":"$SESSION","command":"printf","args":["héllo wörld"],"outputByteLimit":6})),
        req("terminal/wait_for_exit", "exit", json!({"sessionId":"$SESSION","terminalId":"$t.terminalId"})),
        req("terminal/output", "out", json!({"sessionId":"$SESSION","terminalId":"$t.terminalId"})),
        report("out"),
        report("exit"),
        req("terminal/release", "rel", json!({"sessionId":"$SESSION","terminalId":"$t.terminalId"})),
        req("terminal/output", "gone", json!({"sessionId":"$SESSION","terminalId":"$t.terminalId"})),
        report("gone"),
    ]))
    .await;
    let said = said(&evs);
    // 6-byte limit, cut from the front on a character boundary: "wörld" is 6 bytes.
    // (The mock echoes the answer's keys in the order the host sent them.)
    for part in [
        "\"output\":\"wörld\"",
        "\"truncated\":true",
        "\"exitStatus\":{\"exitCode\":0,\"signal\":null}",
    ] {
        assert!(said.contains(part), "{part} in {said}");
    }
    assert!(
        said.contains("exit={\"exitCode\":0,\"signal\":null}"),
        "{said}"
    );
    assert!(
        said.contains("gone={\"error\":{\"code\":-32002"),
        "released terminals are unknown: {said}"
    );
    let created = of_kind(&evs, EventKind::TerminalCreated)[0].data_value();
    assert_eq!(created["terminalId"], "term_1");
    assert_eq!(created["outcome"], "ok");
    let exited = of_kind(&evs, EventKind::TerminalExited);
    assert_eq!(exited.len(), 1);
    assert_eq!(exited[0].data_value()["exitCode"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_session_kills_its_terminals() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = common::canonical(dir.path());
    let steps = json!([
        req("terminal/create", "t", json!({"sessionId":"$SESSION","command":"sh","args":["-c","echo $$; sleep 60 & echo $!; wait"]})),
        {"sleepMs": 300},
        req("terminal/output", "out", json!({"sessionId":"$SESSION","terminalId":"$t.terminalId"})),
        report("out"),
    ]);
    let spec_path = scenario_file(dir.path(), steps);
    let host = Host::new(HostConfig {
        permission: allow_once(),
        ..HostConfig::default()
    });
    let mut stream = host.events().unwrap();
    let agent = host.spawn(mock(Some(&spec_path))).await.unwrap();
    let session = agent.new_session(SessionOptions::new(&cwd)).await.unwrap();
    session.prompt_text("go").await.unwrap();
    let evs = collect_until(&mut stream, T, |e| e.kind == EventKind::TurnEnded).await;
    let said = said(&evs);
    let answer = said
        .lines()
        .find_map(|l| l.strip_prefix("out="))
        .expect("output reported");
    let answer: Value = serde_json::from_str(answer).unwrap();
    let pids: Vec<u32> = answer["output"]
        .as_str()
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert!(
        pids.len() >= 2 && pids.iter().all(|p| alive(*p)),
        "shell and sleep running: {said} {pids:?}"
    );
    session.close().await.unwrap();
    for pid in &pids {
        assert!(
            wait_gone(*pid, Duration::from_secs(5)).await,
            "terminal process {pid} survived session close"
        );
    }
    agent.shutdown().await;
}

/// An editor serving fs from its buffers, recording what reached it.
struct Editor {
    calls: std::sync::Mutex<Vec<String>>,
}

impl acp_host::services::FsHandler for Editor {
    fn read_text_file(
        &self,
        r: acp_host::services::FsRead,
    ) -> acp_host::services::ServiceFuture<String> {
        self.calls.lock().unwrap().push(format!("read {}", r.path));
        Box::pin(async { Ok("unsaved buffer\n".to_owned()) })
    }
    fn write_text_file(
        &self,
        w: acp_host::services::FsWrite,
    ) -> acp_host::services::ServiceFuture<()> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("write {} {}", w.path, w.content));
        Box::pin(async { Ok(()) })
    }
}

impl acp_host::services::TerminalHandler for Editor {
    fn handle(&self, method: &str, params: Value) -> acp_host::services::ServiceFuture<Value> {
        self.calls.lock().unwrap().push(format!(
            "{method} {}",
            params["command"].as_str().unwrap_or("")
        ));
        let result = match method {
            "terminal/create" => json!({"terminalId": "ide-1"}),
            "terminal/output" => json!({"output": "from the IDE terminal", "truncated": false}),
            _ => json!({}),
        };
        Box::pin(async move { Ok(result) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routed_to_the_embedder_the_sandbox_and_hard_deny_still_apply() {
    let editor = Arc::new(Editor {
        calls: std::sync::Mutex::new(Vec::new()),
    });
    let policy =
        Policy::from_json(r#"{"preset":"ask","hardDeny":{"commands":["curl *"]}}"#).unwrap();
    let config = HostConfig {
        permission: allow_once(),
        policy: Some(policy),
        fs: acp_host::services::FsService::Embedder(editor.clone()),
        terminal: acp_host::services::TerminalService::Embedder(editor.clone()),
        ..HostConfig::default()
    };
    let steps = json!([
        req(
            "fs/read_text_file",
            "buf",
            json!({"sessionId":"$SESSION","path":"$CWD/a.txt"})
        ),
        report("buf"),
        req(
            "fs/read_text_file",
            "etc",
            json!({"sessionId":"$SESSION","path":"/etc/passwd"})
        ),
        req(
            "fs/write_text_file",
            "git",
            json!({"sessionId":"$SESSION","path":"$CWD/.git/config","content":"x"})
        ),
        req(
            "fs/write_text_file",
            "b",
            json!({"sessionId":"$SESSION","path":"$CWD/b.txt","content":"hello"})
        ),
        req(
            "terminal/create",
            "curl",
            json!({"sessionId":"$SESSION","command":"curl","args":["http://x"]})
        ),
        req(
            "terminal/create",
            "t",
            json!({"sessionId":"$SESSION","command":"make","args":["test"]})
        ),
        req(
            "terminal/output",
            "out",
            json!({"sessionId":"$SESSION","terminalId":"$t.terminalId"})
        ),
        report("out"),
    ]);
    let (evs, dir, cwd) = run(config, steps).await;
    let calls = editor.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        vec![
            format!("read {cwd}/a.txt"),
            format!("write {cwd}/b.txt hello"),
            "terminal/create make".to_owned(),
            "terminal/output ".to_owned(),
        ],
        "only requests inside the roots and past the policy reach the embedder"
    );
    let said = said(&evs);
    assert!(
        said.contains("buf={\"content\":\"unsaved buffer\\n\"}"),
        "{said}"
    );
    assert!(said.contains("from the IDE terminal"), "{said}");
    assert!(
        !dir.path().join("b.txt").exists(),
        "the embedder, not the disk, got the write"
    );
    let outcomes: Vec<String> = of_kind(&evs, EventKind::FsWrite)
        .iter()
        .map(|e| e.data_value()["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outcomes, vec!["denied", "ok"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_services_are_not_advertised_and_answer_method_not_found() {
    let config = HostConfig {
        permission: allow_once(),
        fs: acp_host::services::FsService::Disabled,
        terminal: acp_host::services::TerminalService::Disabled,
        ..HostConfig::default()
    };
    let host = Host::new(config.clone());
    assert_eq!(
        host.client_capabilities(),
        acp_host::ClientCapabilities::default()
    );
    let steps = json!([
        req(
            "fs/read_text_file",
            "r",
            json!({"sessionId":"$SESSION","path":"$CWD/scenario.json"})
        ),
        report("r"),
    ]);
    let (evs, _dir, _) = run(config, steps).await;
    assert!(
        said(&evs).contains("r={\"error\":{\"code\":-32601"),
        "{}",
        said(&evs)
    );
    assert!(of_kind(&evs, EventKind::FsRead).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_fs_calls_are_answered_and_reported() {
    let steps = json!([
        req(
            "fs/write_text_file",
            "nopath",
            json!({"sessionId":"$SESSION","content":"x"})
        ),
        report("nopath"),
        req(
            "fs/read_text_file",
            "nosession",
            json!({"sessionId":"sess_nope","path":"$CWD/a"})
        ),
        report("nosession"),
    ]);
    let (evs, _dir, _) = run(
        HostConfig {
            permission: allow_once(),
            ..HostConfig::default()
        },
        steps,
    )
    .await;
    let said = said(&evs);
    assert!(
        said.contains("nopath={\"error\":{\"code\":-32602"),
        "{said}"
    );
    assert!(
        said.contains("nosession={\"error\":{\"code\":-32602"),
        "{said}"
    );
    assert_eq!(
        of_kind(&evs, EventKind::FsWrite)[0].data_value()["outcome"],
        "invalid_params"
    );
    assert_eq!(
        of_kind(&evs, EventKind::FsRead)[0].data_value()["outcome"],
        "invalid_params"
    );
}

/// A policy that allows exactly `bash -c true` (and, with `env`, the variables named).
fn allow_bash_true(env: Option<Value>) -> Policy {
    let mut rule =
        json!({"action": "allow", "operations": ["execute"], "commands": ["bash -c true"]});
    if let Some(env) = env {
        rule["env"] = env;
    }
    Policy::from_json(&json!({"preset": "deny-all", "rules": [rule]}).to_string()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_env_cannot_run_code_past_an_exact_allow() {
    // BASH_ENV names a script bash runs before `true`: here it leaves a marker.
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("ran");
    let script = outside.path().join("startup.sh");
    std::fs::write(&script, format!("touch '{}'\n", marker.display())).unwrap();
    let steps = |script: &std::path::Path| {
        json!([
            req(
                "terminal/create",
                "t",
                json!({"sessionId":"$SESSION","command":"bash","args":["-c","true"],
                "env":[{"name":"TERM","value":"dumb"},{"name":"BASH_ENV","value":script}]})
            ),
            report("t"),
            req(
                "terminal/wait_for_exit",
                "exit",
                json!({"sessionId":"$SESSION","terminalId":"$t.terminalId"})
            ),
        ])
    };
    let config = |policy| HostConfig {
        policy: Some(policy),
        ..HostConfig::default()
    };

    let (evs, _dir, _) = run(config(allow_bash_true(None)), steps(&script)).await;
    let created = of_kind(&evs, EventKind::TerminalCreated)[0].data_value();
    assert_eq!(created["outcome"], "denied", "{created}");
    assert_eq!(created["rule"], "deny env BASH_ENV (built-in)", "{created}");
    assert!(!marker.exists(), "BASH_ENV ran");

    // An allow rule that names the variables lets the request through, as written.
    let policy = allow_bash_true(Some(json!(["BASH_ENV", "TERM"])));
    let (evs, _dir, _) = run(config(policy), steps(&script)).await;
    let created = of_kind(&evs, EventKind::TerminalCreated)[0].data_value();
    assert_eq!(created["outcome"], "ok", "{created}");
    assert!(marker.exists(), "the allowed terminal ran with its env");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_config_env_cannot_ride_on_an_allowed_git_status() {
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("fsmonitor-ran");
    let hook = format!("touch '{}'; false", marker.display());
    let steps = json!([
        req(
            "terminal/create",
            "t",
            json!({"sessionId":"$SESSION","command":"git","args":["status"],
            "env":[{"name":"GIT_CONFIG_COUNT","value":"1"},{"name":"GIT_CONFIG_KEY_0","value":"core.fsmonitor"},
                   {"name":"GIT_CONFIG_VALUE_0","value":hook}]})
        ),
        report("t"),
        req(
            "terminal/wait_for_exit",
            "exit",
            json!({"sessionId":"$SESSION","terminalId":"$t.terminalId"})
        ),
    ]);
    let policy = Policy::from_json(
        r#"{"preset":"deny-all","rules":[{"action":"allow","operations":["execute"],"commands":["git status"]}]}"#,
    )
    .unwrap();
    let config = HostConfig {
        policy: Some(policy),
        ..HostConfig::default()
    };
    let (evs, _dir, _) = run(config, steps).await;
    let created = of_kind(&evs, EventKind::TerminalCreated)[0].data_value();
    assert_eq!(created["outcome"], "denied", "{created}");
    assert!(!marker.exists(), "core.fsmonitor ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrapped_commands_do_not_pass_a_hard_deny() {
    let victim = tempfile::tempdir().unwrap();
    let v = victim.path().join("victim");
    std::fs::create_dir(&v).unwrap();
    let v = v.to_string_lossy().into_owned();
    let steps = json!([
        req(
            "terminal/create",
            "a",
            json!({"sessionId":"$SESSION","command":"/usr/bin/timeout","args":["5","/bin/rm","-rf",v]})
        ),
        req(
            "terminal/create",
            "b",
            json!({"sessionId":"$SESSION","command":"nice","args":["-n","5","rm","-rf",v]})
        ),
        req(
            "terminal/create",
            "c",
            json!({"sessionId":"$SESSION","command":"setsid","args":["rm","-rf",v]})
        ),
        req(
            "terminal/create",
            "d",
            json!({"sessionId":"$SESSION","command":"bash","args":["-c",format!("timeout 5 rm -rf {v}")]})
        ),
        req(
            "terminal/create",
            "e",
            json!({"sessionId":"$SESSION","command":"/bin/sh","args":["-c",format!("cd / && nice -n 5 /bin/rm -rf {v}")]})
        ),
    ]);
    let policy = Policy::from_json(r#"{"preset":"ask","hardDeny":{"commands":["rm *"]}}"#).unwrap();
    let config = HostConfig {
        permission: allow_once(),
        policy: Some(policy),
        ..HostConfig::default()
    };
    let (evs, _dir, _) = run(config, steps).await;
    let created: Vec<Value> = of_kind(&evs, EventKind::TerminalCreated)
        .iter()
        .map(|e| e.data_value())
        .collect();
    assert_eq!(created.len(), 5, "{created:?}");
    for c in &created {
        assert_eq!(c["outcome"], "denied", "{c}");
        assert_eq!(c["rule"], "hardDeny.commands (rm *)", "{c}");
    }
    // Give a wrongly started terminal time to act before looking.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(std::path::Path::new(&v).exists(), "the victim was removed");
}

/// What the mock agent saw in `initialize`: it reports each capability in a chunk.
async fn advertised(config: HostConfig) -> String {
    let probe = |cap: &str| {
        json!({ "if": { "clientCapability": cap },
                "then": [{ "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": format!("{cap}=yes") } } }],
                "else": [{ "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": format!("{cap}=no") } } }] })
    };
    let steps = json!([
        probe("fs.readTextFile"),
        probe("fs.writeTextFile"),
        probe("terminal")
    ]);
    let (evs, _dir, _) = run(config, steps).await;
    said(&evs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_what_the_policy_can_allow_is_advertised() {
    let with = |policy: Option<Policy>, permission| HostConfig {
        policy,
        permission,
        ..HostConfig::default()
    };
    let none = acp_host::PermissionHandler::default();
    // deny-all (the default without a decider) and read-only: reads only.
    for config in [
        with(None, none.clone()),
        with(Some(Policy::preset("deny-all").unwrap()), allow_once()),
        with(Some(Policy::preset("read-only").unwrap()), allow_once()),
    ] {
        let host = Host::new(config.clone());
        let caps = host.client_capabilities();
        assert!(
            caps.read_text_file && !caps.write_text_file && !caps.terminal,
            "{caps:?}"
        );
        let said = advertised(config).await;
        assert_eq!(
            said,
            "fs.readTextFile=yes\nfs.writeTextFile=no\nterminal=no\n",
            "{}",
            host.policy().name()
        );
    }
    // ask (the default with a decider): everything.
    for config in [
        with(None, allow_once()),
        with(Some(Policy::preset("ask").unwrap()), none.clone()),
    ] {
        let said = advertised(config).await;
        assert_eq!(
            said,
            "fs.readTextFile=yes\nfs.writeTextFile=yes\nterminal=yes\n"
        );
    }
    // deny-all plus an allow rule for commands: terminals, but no writes.
    let policy = Policy::from_json(
        r#"{"preset":"deny-all","rules":[{"action":"allow","operations":["execute"],"commands":["cargo test*"]}]}"#,
    )
    .unwrap();
    let said = advertised(with(Some(policy), none)).await;
    assert_eq!(
        said,
        "fs.readTextFile=yes\nfs.writeTextFile=no\nterminal=yes\n"
    );
}

/// An agent can make a command's `exec` wait: a script in its workspace under a write lease that
/// its holder does not give back holds the `exec` for the kernel's `lease-break-time` (45 s).
/// That `terminal/create` waits, but nothing else does: on a one-thread runtime another agent
/// is spawned and opens a session meanwhile (the spawn waits off the runtime's thread, and agents
/// are forked by a thread of their own). Once the holder goes away the terminal starts.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_terminal_held_in_its_exec_stalls_neither_the_runtime_nor_agent_spawns() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cwd = common::canonical(dir.path());
    let script = dir.path().join("leased.sh");
    std::fs::write(&script, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let command = format!("{cwd}/leased.sh");
    let steps = json!([
        req(
            "terminal/create",
            "t",
            json!({"sessionId": "$SESSION", "command": &command})
        ),
        report("t"),
    ]);
    let spec_path = scenario_file(dir.path(), steps);
    let Some(mut holder) = LeaseHolder::take(&script, "write", false) else {
        return;
    };
    let rule = json!({"action": "allow", "operations": ["execute"], "commands": [&command]});
    let policy = json!({"preset": "deny-all", "rules": [rule]});
    let host = Host::new(HostConfig {
        policy: Some(Policy::from_json(&policy.to_string()).unwrap()),
        ..HostConfig::default()
    });
    let mut stream = host.events().unwrap();
    let agent = host.spawn(mock(Some(&spec_path))).await.unwrap();
    let session = agent.new_session(SessionOptions::new(&cwd)).await.unwrap();
    let turn = tokio::spawn(async move { session.prompt_text("go").await });
    // The terminal's exec has opened the script: its holder is told to give the lease back.
    let holder = tokio::task::spawn_blocking(move || {
        holder.wait_for_break();
        holder
    })
    .await
    .unwrap();
    let other = tokio::time::timeout(T, async {
        let other = host.spawn(mock(None)).await.unwrap();
        other
            .new_session(SessionOptions::new(tmp_cwd()))
            .await
            .unwrap();
        other
    })
    .await
    .expect("another agent is spawned while a terminal's exec waits");
    assert!(!turn.is_finished(), "the leased terminal is still starting");
    holder.release();
    let result = tokio::time::timeout(T, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(result.stop_reason, "end_turn");
    let evs = collect_until(&mut stream, T, |e| e.kind == EventKind::TurnEnded).await;
    let created = of_kind(&evs, EventKind::TerminalCreated);
    assert_eq!(created[0].data_value()["outcome"], "ok", "{:?}", created[0]);
    other.shutdown().await;
    agent.shutdown().await;
}
