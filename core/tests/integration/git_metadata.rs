//! Git repository metadata the agent could plant or reach outside a `.git` path: a bare
//! repository assembled under an allowed directory, one that is already there, git's own
//! environment knobs, and `.git` reached through a bind mount. Each runs through the whole host
//! with the mock agent and, where git is involved, the real `git` (skipped, saying so, without it).
#![cfg(unix)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::fs;
use std::path::Path;
use std::process::Command;

use acp_host::EventKind;
use acp_host::services::fs::BUILTIN_REPOSITORY_RULE;
use common::scenario::*;
use serde_json::{Value, json};

const GIT_RULE: &str = "deny write **/.git/** (built-in)";

/// The hostile review's policy: nothing but writes under `src/` and `git status`.
fn policy(ws: &Ws) -> String {
    json!({
        "preset": "deny-all",
        "rules": [
            {"action": "allow", "operations": ["write"], "paths": [format!("{}/src/**", ws.cwd)]},
            {"action": "allow", "operations": ["execute"], "commands": ["git status"]},
        ]
    })
    .to_string()
}

fn have_git() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no `git` on PATH");
    }
    ok
}

/// A `config` whose `core.fsmonitor` touches `marker` when git reads the index.
fn hostile_config(marker: &Path) -> String {
    format!(
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch {}; false\"\n\tworktree = .\n\tbare = false\n",
        marker.display()
    )
}

/// `git status` in `cwd` (`$CWD`-relative), waited for, its output reported.
fn git_status(name: &str, cwd: &str, env: Value) -> Vec<Value> {
    vec![
        req(
            "terminal/create",
            name,
            json!({"sessionId": "$SESSION", "command": "git", "args": ["status"], "cwd": cwd, "env": env}),
        ),
        req(
            "terminal/wait_for_exit",
            &format!("{name}_exit"),
            json!({"sessionId": "$SESSION", "terminalId": format!("${name}.terminalId")}),
        ),
        req(
            "terminal/output",
            &format!("{name}_out"),
            json!({"sessionId": "$SESSION", "terminalId": format!("${name}.terminalId")}),
        ),
        report(&format!("{name}_out")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cannot_assemble_a_repository_under_an_allowed_directory() {
    if !have_git() {
        return;
    }
    let ws = Ws::new();
    let marker = ws.outside.path().join("fsmonitor-ran");
    let mut steps = vec![
        write("c", "$CWD/src/evil/config", &hostile_config(&marker)),
        write("o", "$CWD/src/evil/objects/info/x", "x"),
        write("r", "$CWD/src/evil/refs/heads/x", "x"),
        write("h", "$CWD/src/evil/HEAD", "ref: refs/heads/main\n"),
        // The same with the other spellings git (or the file system) accepts.
        write(
            "h2",
            "$CWD/src/evil/head",
            "0123456789abcdef0123456789abcdef01234567",
        ),
        // A file called HEAD that is not a ref is just a file.
        write("h3", "$CWD/src/notes/HEAD", "# the head of the list\n"),
    ];
    steps.extend(git_status("t", "$CWD/src/evil", json!([])));
    let evs = run(&ws, config(&policy(&ws)), Value::Array(steps)).await;
    let writes = outcomes(&evs, EventKind::FsWrite);
    let repo = BUILTIN_REPOSITORY_RULE.to_owned();
    assert_eq!(
        writes,
        vec![
            ("ok".to_owned(), String::new()),
            ("ok".to_owned(), String::new()),
            ("ok".to_owned(), String::new()),
            ("denied".to_owned(), repo.clone()),
            ("denied".to_owned(), repo),
            ("ok".to_owned(), String::new()),
        ],
        "{}",
        said(&evs)
    );
    assert!(!ws.at("src/evil/HEAD").exists());
    assert!(ws.at("src/notes/HEAD").exists());
    assert!(
        !marker.exists(),
        "git ran the agent's fsmonitor: {}",
        said(&evs)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_git_takes_for_a_repository_is_not_written_whatever_its_name() {
    let ws = Ws::new();
    // A bare repository the project already has, and a real `.git`.
    ws.write("src/fixture.git/HEAD", "ref: refs/heads/main\n");
    ws.write("src/fixture.git/config", "[core]\n\tbare = true\n");
    fs::create_dir_all(ws.at("src/fixture.git/objects")).unwrap();
    ws.write(".git/HEAD", "ref: refs/heads/main\n");
    let steps = json!([
        write(
            "a",
            "$CWD/src/fixture.git/config",
            "[core]\n\tfsmonitor = x\n"
        ),
        write("b", "$CWD/src/fixture.git/hooks/pre-commit", "#!/bin/sh\n"),
        write("c", "$CWD/src/fixture.git/objects/deep/new", "x"),
        write("d", "$CWD/.git/config", "x"),
        write("e", "$CWD/src/plain.txt", "fine"),
    ]);
    let evs = run(&ws, config(&policy(&ws)), steps).await;
    let repo = BUILTIN_REPOSITORY_RULE.to_owned();
    assert_eq!(
        outcomes(&evs, EventKind::FsWrite),
        vec![
            ("denied".to_owned(), repo.clone()),
            ("denied".to_owned(), repo.clone()),
            ("denied".to_owned(), repo),
            // `.git` itself keeps its own rule's name.
            ("denied".to_owned(), GIT_RULE.to_owned()),
            ("ok".to_owned(), String::new()),
        ],
        "{}",
        said(&evs)
    );
    assert_eq!(
        fs::read_to_string(ws.at("src/fixture.git/config")).unwrap(),
        "[core]\n\tbare = true\n"
    );
    assert!(!ws.at("src/fixture.git/hooks").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_to_a_repository_is_refused_like_the_repository() {
    let ws = Ws::new();
    ws.write("vendor/dep.git/HEAD", "ref: refs/heads/main\n");
    ws.write("vendor/dep.git/config", "[core]\n");
    fs::create_dir_all(ws.at("src")).unwrap();
    ws.link("../vendor/dep.git", "src/dep");
    ws.link("dep.git/config", "vendor/cfg");
    let steps = json!([
        write("a", "$CWD/src/dep/config", "[core]\n\tfsmonitor = x\n"),
        write("b", "$CWD/src/dep/hooks/post-checkout", "#!/bin/sh\n"),
        write("c", "$CWD/vendor/cfg", "[core]\n\tfsmonitor = x\n"),
    ]);
    // Writes anywhere in the workspace are allowed: only the repository rule can refuse these.
    let anywhere = json!({"preset": "deny-all", "rules": [
        {"action": "allow", "operations": ["write"], "paths": [format!("{}/**", ws.cwd)]},
    ]});
    let evs = run(&ws, config(&anywhere.to_string()), steps).await;
    let repo = ("denied".to_owned(), BUILTIN_REPOSITORY_RULE.to_owned());
    assert_eq!(
        outcomes(&evs, EventKind::FsWrite),
        vec![repo.clone(), repo.clone(), repo],
        "{}",
        said(&evs)
    );
    assert_eq!(
        fs::read_to_string(ws.at("vendor/dep.git/config")).unwrap(),
        "[core]\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_in_a_terminal_does_not_use_a_repository_it_was_not_pointed_at() {
    if !have_git() {
        return;
    }
    let ws = Ws::new();
    // However it got there (an earlier tool, a clone, a build step): a bare repository whose
    // config runs a command.
    let marker = ws.outside.path().join("fsmonitor-ran");
    ws.write("src/evil/HEAD", "ref: refs/heads/main\n");
    ws.write("src/evil/config", &hostile_config(&marker));
    fs::create_dir_all(ws.at("src/evil/objects")).unwrap();
    fs::create_dir_all(ws.at("src/evil/refs")).unwrap();
    // The set-up is a real attack: git run plainly there runs the command.
    let plain = Command::new("git")
        .arg("status")
        .current_dir(ws.at("src/evil"))
        .env_remove("GIT_CONFIG_COUNT")
        .output()
        .unwrap();
    assert!(marker.exists(), "{plain:?}");
    fs::remove_file(&marker).unwrap();

    let evs = run(
        &ws,
        config(&policy(&ws)),
        Value::Array(git_status("t", "$CWD/src/evil", json!([]))),
    )
    .await;
    let out = said(&evs);
    assert_eq!(
        outcomes(&evs, EventKind::TerminalCreated)[0].0,
        "ok",
        "{out}"
    );
    assert!(
        !marker.exists(),
        "git ran the repository's fsmonitor: {out}"
    );
    assert!(out.contains("safe.bareRepository"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_test_fsmonitor_is_refused_on_an_allowed_git_status() {
    if !have_git() {
        return;
    }
    let ws = Ws::new();
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws.cwd)
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    let marker = ws.outside.path().join("fsmonitor-ran");
    let env =
        json!([{"name": "GIT_TEST_FSMONITOR", "value": format!("touch {}", marker.display())}]);
    let evs = run(
        &ws,
        config(&policy(&ws)),
        Value::Array(git_status("t", "$CWD", env)),
    )
    .await;
    assert_eq!(
        outcomes(&evs, EventKind::TerminalCreated),
        vec![(
            "denied".to_owned(),
            "deny env GIT_TEST_FSMONITOR (built-in)".to_owned()
        )],
        "{}",
        said(&evs)
    );
    assert!(!marker.exists());
}

/// Run `inner` in a mount namespace of its own (a re-run of this test binary under
/// `unshare -m`), where it may bind-mount freely; skipped, saying why, where that is not possible.
fn in_mount_namespace(inner: &str) {
    if std::env::var_os("ACPH_TEST_MOUNT_NS").is_some() {
        return;
    }
    let unshare = Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !unshare {
        eprintln!("skipped: `unshare -m` (root, CAP_SYS_ADMIN) is needed to make bind mounts");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let inner = common::test_name(module_path!(), inner);
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private"])
        .arg(exe)
        .args([
            "--exact",
            &inner,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ACPH_TEST_MOUNT_NS", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

fn bind(source: &Path, target: &Path) {
    let out = Command::new("mount")
        .arg("--bind")
        .arg(source)
        .arg(target)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn dot_git_and_dot_env_reached_through_a_bind_mount_are_refused() {
    in_mount_namespace("bind_mounts_inside_the_root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by dot_git_and_dot_env_reached_through_a_bind_mount_are_refused in its own mount namespace"]
async fn bind_mounts_inside_the_root() {
    if std::env::var_os("ACPH_TEST_MOUNT_NS").is_none() {
        return;
    }
    let ws = Ws::new();
    // A `.git` without a HEAD: only its name (seen through the mount) can refuse the write.
    ws.write(".git/config", "[core]\n");
    fs::create_dir_all(ws.at(".git/hooks")).unwrap();
    fs::create_dir(ws.at("g")).unwrap();
    bind(&ws.at(".git"), &ws.at("g"));
    ws.write(".env", "SECRET=1\n");
    ws.write("notenv", "");
    bind(&ws.at(".env"), &ws.at("notenv"));
    ws.write("shared/inner/.env", "SECRET=2\n");
    fs::create_dir(ws.at("vol")).unwrap();
    bind(&ws.at("shared"), &ws.at("vol"));
    let policy = json!({
        "preset": "ask",
        "hardDeny": {"paths": ["**/.env"]},
        "rules": [{"action": "allow", "operations": ["write"], "paths": ["**"]}]
    })
    .to_string();
    let steps = json!([
        write("w1", "$CWD/g/config", "[core]\n\tfsmonitor = x\n"),
        write("w2", "$CWD/g/hooks/pre-commit", "#!/bin/sh\n"),
        read("r1", "$CWD/notenv"),
        report("r1"),
        read("r2", "$CWD/vol/inner/.env"),
        write("w3", "$CWD/vol/ok.txt", "fine"),
    ]);
    let evs = run(&ws, config(&policy), steps).await;
    let text = said(&evs);
    let writes = outcomes(&evs, EventKind::FsWrite);
    assert_eq!(
        writes[0],
        ("denied".to_owned(), GIT_RULE.to_owned()),
        "{text}"
    );
    assert_eq!(
        writes[1],
        ("denied".to_owned(), GIT_RULE.to_owned()),
        "{text}"
    );
    assert_eq!(writes[2].0, "ok", "{text}");
    let reads = outcomes(&evs, EventKind::FsRead);
    assert_eq!(reads[0].0, "denied", "{text}");
    assert!(reads[0].1.contains("hardDeny.paths"), "{text}");
    assert_eq!(reads[1].0, "denied", "{text}");
    assert!(!text.contains("SECRET"), "{text}");
    assert_eq!(
        fs::read_to_string(ws.at(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.at(".git/hooks/pre-commit").exists());
    assert!(ws.at("shared/ok.txt").exists());
}
