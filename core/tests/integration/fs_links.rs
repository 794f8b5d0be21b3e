//! Links inside the root must not defeat the path rules: every rule is decided on the path that
//! will actually be opened (links resolved inside the root) as well as on the requested one, and
//! restrictive rules match case and Unicode variants. Most cases run through the whole host with
//! the mock agent (scenarios written on the fly, as in `services.rs`); the races run against the
//! fs service with a decision hook that changes the tree between the check and the use.
//! Portable: where symbolic links cannot be made (Windows without the privilege, Wine 8, which
//! reports them made and makes none) the tests that need them are skipped, saying so.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::fs;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use acp_host::EventKind;
use acp_host::permission::policy::{Policy, Subject, Verdict};
use acp_host::services::fs::{
    FsError, FsLimits, Opened, read_text_file_checked, resolve_in_roots, write_text_file_checked,
};
use common::scenario::*;
use serde_json::json;

const GIT_RULE: &str = "deny write **/.git/** (built-in)";
const SECRETS: &str = r#"{"preset":"ask","hardDeny":{"paths":["**/.env","**/private/**"]}}"#;

/// A symbolic link at `at` to `target` (on Windows a directory link when the target, read from
/// the link's directory, is a directory).
fn symlink(target: impl AsRef<Path>, at: impl AsRef<Path>) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::symlink(target, at);
    #[cfg(windows)]
    {
        let (target, at) = (target.as_ref(), at.as_ref());
        let seen = at.parent().map_or(target.to_path_buf(), |d| d.join(target));
        if seen.is_dir() {
            std::os::windows::fs::symlink_dir(target, at)
        } else {
            std::os::windows::fs::symlink_file(target, at)
        }
    }
}

/// Whether symbolic links can be made here (checked once; the reason printed when not).
fn links_work() -> bool {
    static WORK: OnceLock<Result<(), String>> = OnceLock::new();
    let work = WORK.get_or_init(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        fs::write(dir.path().join("t"), "").map_err(|e| e.to_string())?;
        symlink("t", dir.path().join("l")).map_err(|e| e.to_string())?;
        match fs::symlink_metadata(dir.path().join("l")) {
            Ok(m) if m.file_type().is_symlink() => Ok(()),
            _ => Err("reported made but not there (Wine 8 does not make them)".to_owned()),
        }
    });
    if let Err(why) = work {
        eprintln!("skipped: cannot make symbolic links here: {why}");
    }
    work.is_ok()
}

/// `Ws::link`, on every OS.
trait Link {
    fn ln(&self, target: &str, rel: &str);
}

impl Link for Ws {
    fn ln(&self, target: &str, rel: &str) {
        symlink(target, self.at(rel)).unwrap();
    }
}

// ------------------------------------------------------------------ through the host

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_to_dot_git_does_not_open_the_repository_for_writing() {
    if !links_work() {
        return;
    }
    let ws = Ws::new();
    ws.git_repo();
    ws.ln(".git", "g");
    let steps = json!([
        write(
            "config",
            "$CWD/g/config",
            "[core]\n\tfsmonitor = /tmp/evil\n"
        ),
        report("config"),
        write("hook", "$CWD/g/hooks/pre-commit", "#!/bin/sh\nevil\n"),
        write("newdir", "$CWD/g/newdir/x", "x"),
        write("ok", "$CWD/ok.txt", "fine\n"),
    ]);
    let evs = run(&ws, config(r#"{"preset":"ask"}"#), steps).await;
    let got = outcomes(&evs, EventKind::FsWrite);
    let denied = ("denied".to_owned(), GIT_RULE.to_owned());
    assert_eq!(
        got,
        vec![
            denied.clone(),
            denied.clone(),
            denied,
            ("ok".into(), String::new())
        ],
        "{got:?}"
    );
    assert_eq!(
        fs::read_to_string(ws.at(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert!(!ws.at(".git/hooks/pre-commit").exists());
    // Decided before anything was created: no directory appeared inside .git either.
    assert!(!ws.at(".git/newdir").exists());
    assert!(
        said(&evs).contains("config={\"error\":{\"code\":-32602"),
        "{}",
        said(&evs)
    );
    assert_eq!(fs::read_to_string(ws.at("ok.txt")).unwrap(), "fine\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_chain_ends_in_the_same_verdict() {
    if !links_work() {
        return;
    }
    let ws = Ws::new();
    ws.git_repo();
    // a -> b -> .git/hooks (directory chain); c -> d -> .git/config (file chain, relative
    // links through a subdirectory).
    ws.ln(".git/hooks", "b");
    ws.ln("b", "a");
    fs::create_dir(ws.at("sub")).unwrap();
    ws.ln("../.git/config", "sub/d");
    ws.ln("sub/d", "c");
    let steps = json!([
        write("hook", "$CWD/a/post-checkout", "#!/bin/sh\nevil\n"),
        write("cfg", "$CWD/c", "[core]\n\thooksPath = /tmp/evil\n"),
    ]);
    let evs = run(&ws, config(r#"{"preset":"ask"}"#), steps).await;
    let got = outcomes(&evs, EventKind::FsWrite);
    let denied = ("denied".to_owned(), GIT_RULE.to_owned());
    assert_eq!(got, vec![denied.clone(), denied], "{got:?}");
    assert!(!ws.at(".git/hooks/post-checkout").exists());
    assert_eq!(
        fs::read_to_string(ws.at(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert!(fs::symlink_metadata(ws.at("c")).unwrap().is_symlink());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_to_a_hard_denied_file_is_neither_read_nor_written() {
    if !links_work() {
        return;
    }
    let ws = Ws::new();
    ws.write(".env", "API_KEY=hunter2\n");
    ws.ln(".env", "envlink");
    ws.write("notes.txt", "public\n");
    let steps = json!([
        read("secret", "$CWD/envlink"),
        report("secret"),
        write("w", "$CWD/envlink", "API_KEY=mine\n"),
        read("notes", "$CWD/notes.txt"),
        report("notes"),
    ]);
    let evs = run(&ws, config(SECRETS), steps).await;
    let reads = outcomes(&evs, EventKind::FsRead);
    assert_eq!(
        reads,
        vec![
            ("denied".into(), "hardDeny.paths (**/.env)".into()),
            ("ok".into(), String::new())
        ]
    );
    let writes = outcomes(&evs, EventKind::FsWrite);
    assert_eq!(
        writes,
        vec![("denied".into(), "hardDeny.paths (**/.env)".into())]
    );
    let text = said(&evs);
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("notes={\"content\":\"public\\n\"}"), "{text}");
    assert_eq!(
        fs::read_to_string(ws.at(".env")).unwrap(),
        "API_KEY=hunter2\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_to_a_directory_holding_denied_files_is_refused_for_deny_and_ask_rules() {
    if !links_work() {
        return;
    }
    let ws = Ws::new();
    ws.write("private/key.pem", "KEY\n");
    ws.write("vault/token", "TOKEN\n");
    ws.write("drafts/plan.md", "PLAN\n");
    ws.ln("private", "pub");
    ws.ln("vault", "v");
    ws.ln("drafts", "d");
    let policy = r#"{"preset":"ask",
        "hardDeny":{"paths":["**/private/**"]},
        "rules":[{"action":"deny","paths":["**/vault/**"],"description":"vault"},
                 {"action":"ask","operations":["read"],"paths":["**/drafts/**"]}]}"#;
    let steps = json!([
        read("key", "$CWD/pub/key.pem"),
        report("key"),
        read("token", "$CWD/v/token"),
        report("token"),
        read("plan", "$CWD/d/plan.md"),
        report("plan"),
    ]);
    let evs = run(&ws, config(policy), steps).await;
    let got = outcomes(&evs, EventKind::FsRead);
    assert_eq!(
        got,
        vec![
            ("denied".into(), "hardDeny.paths (**/private/**)".into()),
            ("denied".into(), "rules[0] (deny: vault)".into()),
            (
                "denied".into(),
                "operation needs approval (policy says ask)".into()
            ),
        ],
        "{got:?}"
    );
    let text = said(&evs);
    for secret in ["KEY", "TOKEN", "PLAN"] {
        assert!(!text.contains(&format!("\"{secret}\\n\"")), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_rules_need_both_the_requested_and_the_resolved_path() {
    if !links_work() {
        return;
    }
    let ws = Ws::new();
    let policy = json!({"preset": "read-only", "rules": [
        {"action": "allow", "operations": ["write"], "paths": [format!("{}/public/**", ws.cwd)]}
    ]})
    .to_string();
    ws.write("public/a.txt", "a\n");
    ws.write("config/settings.json", "{}\n");
    // A link inside the allowed tree pointing out of it.
    ws.ln("../config/settings.json", "public/settings.json");
    let steps = json!([
        write("inside", "$CWD/public/a.txt", "edited\n"),
        write(
            "via_link",
            "$CWD/public/settings.json",
            "{\"pwned\":true}\n"
        ),
    ]);
    let evs = run(&ws, config(&policy), steps).await;
    let got = outcomes(&evs, EventKind::FsWrite);
    assert_eq!(got[0].0, "ok", "{got:?}");
    assert_eq!(
        got[1],
        ("denied".into(), "preset read-only".into()),
        "{got:?}"
    );
    assert_eq!(
        fs::read_to_string(ws.at("config/settings.json")).unwrap(),
        "{}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_and_unicode_variants_of_denied_names_are_denied() {
    if !links_work() {
        return;
    }
    let ws = Ws::new();
    // On a case-sensitive file system these are distinct files; on macOS or Windows they are
    // the same file as `.env` / `.git`. Either way they are refused.
    ws.write(".Env", "SECRET=1\n");
    ws.write("\u{ff0e}env", "SECRET=2\n"); // fullwidth full stop
    ws.write("cafe\u{301}/menu.txt", "SECRET=3\n"); // NFD, the rule is NFC
    ws.ln(".Env", "upper-link");
    let policy = r#"{"preset":"ask","hardDeny":{"paths":["**/.env","**/caf\u00e9/**"]}}"#;
    let steps = json!([
        read("r1", "$CWD/.Env"),
        report("r1"),
        read("r2", "$CWD/\u{ff0e}env"),
        report("r2"),
        read("r3", "$CWD/cafe\u{301}/menu.txt"),
        report("r3"),
        read("r4", "$CWD/upper-link"),
        report("r4"),
        write("w1", "$CWD/.GIT/config", "x"),
        write(
            "w2",
            "$CWD/\u{ff0e}\u{ff47}\u{ff49}\u{ff54}/hooks/pre-commit",
            "x"
        ),
    ]);
    let evs = run(&ws, config(policy), steps).await;
    let reads: Vec<String> = outcomes(&evs, EventKind::FsRead)
        .into_iter()
        .map(|(o, _)| o)
        .collect();
    assert_eq!(reads, vec!["denied"; 4]);
    let writes = outcomes(&evs, EventKind::FsWrite);
    let denied = ("denied".to_owned(), GIT_RULE.to_owned());
    assert_eq!(writes, vec![denied.clone(), denied]);
    let text = said(&evs);
    assert!(!text.contains("SECRET"), "{text}");
    assert!(!ws.at(".GIT").exists());
}

// The terminal runs `touch`: a Unix command.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_cwd_is_confined_once_links_are_resolved() {
    if !links_work() {
        return;
    }
    let ws = Ws::new();
    let outside = ws.outside.path().canonicalize().unwrap();
    // An absolute link out of the root, and a relative one climbing out.
    symlink(&outside, ws.at("abs-out")).unwrap();
    let up = pathdiff(&outside, Path::new(&ws.cwd));
    ws.ln(&up, "rel-out");
    fs::create_dir(ws.at("real")).unwrap();
    ws.ln("real", "inside");
    let steps = json!([
        req(
            "terminal/create",
            "t1",
            json!({"sessionId": "$SESSION", "command": "touch", "args": ["ran-1"], "cwd": "$CWD/abs-out"})
        ),
        report("t1"),
        req(
            "terminal/create",
            "t2",
            json!({"sessionId": "$SESSION", "command": "touch", "args": ["ran-2"], "cwd": "$CWD/rel-out"})
        ),
        report("t2"),
        req(
            "terminal/create",
            "t3",
            json!({"sessionId": "$SESSION", "command": "touch", "args": ["ran-3"], "cwd": "$CWD/inside"})
        ),
        req(
            "terminal/wait_for_exit",
            "e3",
            json!({"sessionId": "$SESSION", "terminalId": "$t3.terminalId"})
        ),
        report("e3"),
    ]);
    let evs = run(&ws, config(r#"{"preset":"ask"}"#), steps).await;
    let got: Vec<String> = outcomes(&evs, EventKind::TerminalCreated)
        .into_iter()
        .map(|(o, _)| o)
        .collect();
    assert_eq!(
        got,
        vec!["outside_roots", "outside_roots", "ok"],
        "{}",
        said(&evs)
    );
    assert!(!outside.join("ran-1").exists());
    assert!(!outside.join("ran-2").exists());
    assert!(ws.at("real/ran-3").exists(), "{}", said(&evs));
}

/// `target` relative to `base` (both absolute, canonical), with `..` components.
#[cfg(unix)]
fn pathdiff(target: &Path, base: &Path) -> String {
    let t: Vec<_> = target.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = std::path::PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out.to_string_lossy().into_owned()
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
        Box::pin(async { Ok("buffer\n".to_owned()) })
    }
    fn write_text_file(
        &self,
        w: acp_host::services::FsWrite,
    ) -> acp_host::services::ServiceFuture<()> {
        self.calls.lock().unwrap().push(format!("write {}", w.path));
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routed_to_the_embedder_the_rules_see_the_resolved_path() {
    if !links_work() {
        return;
    }
    let ws = Ws::new();
    ws.git_repo();
    ws.ln(".git", "g");
    ws.write(".env", "API_KEY=hunter2\n");
    ws.ln(".env", "envlink");
    symlink(ws.outside.path(), ws.at("out")).unwrap();
    let editor = Arc::new(Editor {
        calls: std::sync::Mutex::new(Vec::new()),
    });
    let mut config = config(SECRETS);
    config.fs = acp_host::services::FsService::Embedder(editor.clone());
    let steps = json!([
        write("cfg", "$CWD/g/config", "x"),
        read("env", "$CWD/envlink"),
        read("out", "$CWD/out/anything"),
        // Unsaved buffers: a file that does not exist on disk still reaches the editor.
        write("new", "$CWD/new/file.txt", "x"),
        read("buf", "$CWD/new/file.txt"),
    ]);
    let evs = run(&ws, config, steps).await;
    assert_eq!(
        outcomes(&evs, EventKind::FsWrite),
        vec![
            ("denied".into(), GIT_RULE.into()),
            ("ok".into(), String::new())
        ]
    );
    assert_eq!(
        outcomes(&evs, EventKind::FsRead),
        vec![
            ("denied".into(), "hardDeny.paths (**/.env)".into()),
            ("outside_roots".into(), String::new()),
            ("ok".into(), String::new())
        ]
    );
    assert_eq!(
        editor.calls.lock().unwrap().clone(),
        vec![
            format!("write {}/new/file.txt", ws.cwd),
            format!("read {}/new/file.txt", ws.cwd),
        ]
    );
}

// ------------------------------------------------------------------ the policy alone

#[test]
fn restrictive_rules_match_case_and_unicode_variants_allow_rules_do_not() {
    if !links_work() {
        return;
    }
    let policy = Policy::from_json(
        r#"{"preset":"deny-all",
            "hardDeny":{"paths":["**/.env"]},
            "rules":[{"action":"allow","operations":["write"],"paths":["/p/docs/**"]},
                     {"action":"deny","paths":["**/Secrets/**"]}]}"#,
    )
    .unwrap();
    for variant in [
        "/p/.ENV",
        "/p/.Env",
        "/p/\u{ff0e}\u{ff25}\u{ff2e}\u{ff36}",
        "/p/.env.",
    ] {
        assert_eq!(
            policy.hard_deny(&Subject::read(variant)),
            Some("hardDeny.paths (**/.env)".to_owned()),
            "{variant}"
        );
    }
    assert!(matches!(
        policy.evaluate(&Subject::read("/p/secrets/x")),
        Verdict::Deny { rule } if rule.contains("Secrets")
    ));
    // Allow stays strict: a case variant of the allowed tree is not allowed.
    assert!(matches!(
        policy.evaluate(&Subject::write("/p/docs/a.md")),
        Verdict::Allow { .. }
    ));
    assert!(matches!(
        policy.evaluate(&Subject::write("/p/DOCS/a.md")),
        Verdict::Deny { rule } if rule == "preset deny-all"
    ));
    assert!(matches!(
        policy.evaluate(&Subject::write("/p/\u{ff44}ocs/a.md")),
        Verdict::Deny { rule } if rule == "preset deny-all"
    ));
}

// ------------------------------------------------------------------ check and use cannot race

/// A root with a real directory `a/` (holding `notes.txt`) and a `.git` directory.
fn race_root() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::create_dir_all(root.join(".git/hooks")).unwrap();
    fs::write(root.join(".git/config"), "original\n").unwrap();
    fs::create_dir(root.join("a")).unwrap();
    fs::write(root.join("a/notes.txt"), "notes\n").unwrap();
    fs::write(root.join(".git/notes.txt"), "from .git\n").unwrap();
    (dir, root.to_string_lossy().into_owned())
}

/// Replace the directory `a` by a link to `.git` (what an agent's terminal could do).
fn swap_a_for_a_link_to_git(root: &str) {
    let root = Path::new(root);
    fs::rename(root.join("a"), root.join("a.orig")).unwrap();
    symlink(".git", root.join("a")).unwrap();
}

/// The built-in policy's decision on a write, as the host makes it.
fn host_decision(requested: &str, resolved: &str) -> Result<(), String> {
    let mut subject = Subject::write(requested);
    subject.paths.push(resolved.to_owned());
    match Policy::preset("ask").unwrap().evaluate(&subject) {
        Verdict::Allow { .. } => Ok(()),
        Verdict::Deny { rule } => Err(rule),
        Verdict::Ask => Err("ask".to_owned()),
    }
}

#[tokio::test]
async fn a_link_swapped_in_after_the_decision_does_not_redirect_a_write() {
    if !links_work() {
        return;
    }
    let (_dir, root) = race_root();
    let roots = vec![Path::new(&root).to_path_buf()];
    let requested = format!("{root}/a/config");
    let (r2, req2) = (root.clone(), requested.clone());
    let written = write_text_file_checked(
        &roots,
        &requested,
        "fsmonitor = evil\n",
        &FsLimits::default(),
        move |o: Opened<'_>| {
            let resolved = o.path;
            assert_eq!(resolved, req2, "decided on the path that will be opened");
            let verdict = host_decision(&req2, resolved);
            // Between the check and the use: `a` becomes a link to `.git`.
            swap_a_for_a_link_to_git(&r2);
            verdict
        },
    )
    .await
    .unwrap();
    assert_eq!(written, 17);
    // The write went through the handle that was checked (now `a.orig`), not into `.git`.
    assert_eq!(
        fs::read_to_string(format!("{root}/.git/config")).unwrap(),
        "original\n"
    );
    assert_eq!(
        fs::read_to_string(format!("{root}/a.orig/config")).unwrap(),
        "fsmonitor = evil\n"
    );
    // Once the link is in place, the next request sees it and is denied.
    let err = write_text_file_checked(&roots, &requested, "x", &FsLimits::default(), {
        let req = requested.clone();
        move |o: Opened<'_>| host_decision(&req, o.path)
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&err, FsError::Denied { rule, .. } if rule.contains(".git")),
        "{err:?}"
    );
    assert_eq!(
        fs::read_to_string(format!("{root}/.git/config")).unwrap(),
        "original\n"
    );
}

#[tokio::test]
async fn a_link_swapped_in_after_the_decision_does_not_redirect_a_read() {
    if !links_work() {
        return;
    }
    let (_dir, root) = race_root();
    let roots = vec![Path::new(&root).to_path_buf()];
    let requested = format!("{root}/a/notes.txt");
    let r2 = root.clone();
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let seen2 = seen.clone();
    let text = read_text_file_checked(
        &roots,
        &requested,
        None,
        None,
        &FsLimits::default(),
        move |o: Opened<'_>| {
            let resolved = o.path;
            *seen2.lock().unwrap() = resolved.to_owned();
            swap_a_for_a_link_to_git(&r2);
            Ok(())
        },
    )
    .await
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), requested);
    assert_eq!(
        text, "notes\n",
        "the content comes from the file that was checked"
    );
}

#[tokio::test]
async fn a_denied_decision_touches_nothing() {
    let (_dir, root) = race_root();
    let roots = vec![Path::new(&root).to_path_buf()];
    let err = write_text_file_checked(
        &roots,
        &format!("{root}/a/new/deeper/file.txt"),
        "x",
        &FsLimits::default(),
        |o: Opened<'_>| Err(format!("no: {}", o.path)),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "denied");
    let (code, message, data) = err.to_rpc();
    assert_eq!(code, -32602);
    assert!(
        message.starts_with("denied by the host's policy: no: "),
        "{message}"
    );
    assert_eq!(data.unwrap()["reason"], "denied");
    assert!(!Path::new(&root).join("a/new").exists());
}

#[tokio::test]
async fn resolution_follows_links_inside_the_root_and_refuses_the_way_out() {
    if !links_work() {
        return;
    }
    let (_dir, root) = race_root();
    let roots = vec![Path::new(&root).to_path_buf()];
    symlink(".git", Path::new(&root).join("g")).unwrap();
    symlink("g/hooks", Path::new(&root).join("h")).unwrap();
    symlink("/etc", Path::new(&root).join("etc")).unwrap();
    symlink("a/../..", Path::new(&root).join("up")).unwrap();
    assert_eq!(
        resolve_in_roots(&roots, &format!("{root}/h/pre-commit"))
            .await
            .unwrap(),
        format!("{root}/.git/hooks/pre-commit")
    );
    assert_eq!(
        resolve_in_roots(&roots, &format!("{root}/g"))
            .await
            .unwrap(),
        format!("{root}/.git")
    );
    for escape in ["etc/passwd", "up/x"] {
        let err = resolve_in_roots(&roots, &format!("{root}/{escape}"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "outside_roots", "{escape}: {err:?}");
    }
    // A loop is an error, not a hang.
    symlink("loop2", Path::new(&root).join("loop1")).unwrap();
    symlink("loop1", Path::new(&root).join("loop2")).unwrap();
    let err = resolve_in_roots(&roots, &format!("{root}/loop1/x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "io", "{err:?}");
}

#[tokio::test]
async fn a_write_to_a_hard_link_replaces_the_link_not_the_file_it_shares() {
    let (_dir, root) = race_root();
    let roots = vec![Path::new(&root).to_path_buf()];
    let base = Path::new(&root);
    fs::hard_link(
        base.join(".git").join("config"),
        base.join("a").join("innocent.txt"),
    )
    .unwrap();
    let path = format!("{root}/a/innocent.txt");
    write_text_file_checked(
        &roots,
        &path,
        "replaced\n",
        &FsLimits::default(),
        |_| Ok(()),
    )
    .await
    .unwrap();
    assert_eq!(
        fs::read_to_string(base.join(".git").join("config")).unwrap(),
        "original\n"
    );
    assert_eq!(
        fs::read_to_string(base.join("a").join("innocent.txt")).unwrap(),
        "replaced\n"
    );
}
