//! Every spelling that reaches `.git`, a hard-denied file or something outside the root, sent as
//! real `fs/*` requests by the mock agent through the whole host (docs/PERMISSIONS.md, "Per-OS
//! spellings"). The names NTFS and HFS+ fold onto `.git` are refused on every OS (a repository
//! may be shared with one that folds them); the Windows-only spellings (drive case, `\\?\` and
//! `\\.\` prefixes, streams, device names, 8.3 short names) run on Windows (here: under Wine).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::common;

use std::fs;

use acp_host::EventKind;
use common::scenario::*;
use serde_json::{Value, json};

const GIT_RULE: &str = "deny write **/.git/** (built-in)";
const SECRETS: &str = r#"{"preset":"ask","hardDeny":{"paths":["**/.env"]}}"#;

/// The path separator the agent uses in these requests.
const SEP: &str = if cfg!(windows) { "\\" } else { "/" };

fn at(name: &str) -> String {
    format!("$CWD{SEP}{name}")
}

/// Names that open `.git` on NTFS or on HFS+/APFS (git's `is_ntfs_dotgit`, `is_hfs_dotgit`),
/// and on any case-insensitive volume: each is the `.git` write deny, on every OS. On Windows
/// those with a `:` are refused earlier, as outside the root (a stream).
const GIT_SPELLINGS: [&str; 14] = [
    ".GIT",
    ".Git",
    ".git.",
    ".git ",
    ".git. .",
    "GIT~1",
    "git~1",
    ".git:x",
    ".git::$INDEX_ALLOCATION",
    ".g\u{200c}it",
    "\u{feff}.git",
    ".gi\u{200e}t",
    "\u{ff0e}\u{ff47}\u{ff49}\u{ff54}",
    ".GIT\u{202a}.",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_of_dot_git_is_the_git_deny_on_every_os() {
    let ws = Ws::new();
    ws.git_repo();
    let mut steps = Vec::new();
    for (i, name) in GIT_SPELLINGS.iter().enumerate() {
        let config = format!("{}{SEP}config", at(name));
        let hook = format!("{}{SEP}hooks{SEP}pre-commit", at(name));
        steps.push(write(
            &format!("c{i}"),
            &config,
            "[core]\n\tfsmonitor = evil\n",
        ));
        steps.push(write(&format!("h{i}"), &hook, "#!/bin/sh\nevil\n"));
    }
    steps.push(write("ok", &at("ok.txt"), "fine\n"));
    let evs = run(&ws, config(r#"{"preset":"ask"}"#), json!(steps)).await;
    let got = outcomes(&evs, EventKind::FsWrite);
    assert_eq!(got.len(), GIT_SPELLINGS.len() * 2 + 1, "{got:?}");
    for (i, name) in GIT_SPELLINGS.iter().enumerate() {
        for outcome in &got[2 * i..2 * i + 2] {
            let stream = cfg!(windows) && name.contains(':');
            let expected = if stream {
                ("outside_roots".to_owned(), String::new())
            } else {
                ("denied".to_owned(), GIT_RULE.to_owned())
            };
            assert_eq!(outcome, &expected, "{name:?}");
        }
    }
    assert_eq!(got.last().unwrap().0, "ok");
    assert_eq!(
        fs::read_to_string(ws.at(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    // Nothing was created under any of the names: the workspace holds what it held.
    let mut entries: Vec<String> = fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(entries, vec![".git", "ok.txt"]);
    assert!(!ws.at(".git/hooks/pre-commit").exists());
}

/// Restrictive rules match the spellings of `.env` a case-folding or stream-aware file system
/// opens as `.env`; allow rules stay exact (see docs/PERMISSIONS.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_of_a_hard_denied_name_is_denied() {
    let ws = Ws::new();
    let names = [".env", ".ENV", ".Env", ".env.", ".env ", ".env::$DATA"];
    let mut steps = Vec::new();
    for (i, name) in names.iter().enumerate() {
        // On a case-sensitive file system each is a file of its own (a read of a missing file
        // is `not_found` before any rule); elsewhere they are all `.env`.
        if !(cfg!(windows) && name.contains(':')) {
            ws.write(name, &format!("SECRET={i}\n"));
        }
        steps.push(read(&format!("r{i}"), &at(name)));
        steps.push(report(&format!("r{i}")));
    }
    let evs = run(&ws, config(SECRETS), json!(steps)).await;
    let got = outcomes(&evs, EventKind::FsRead);
    assert_eq!(got.len(), names.len(), "{got:?}");
    for (name, (outcome, _)) in names.iter().zip(&got) {
        let expected = if cfg!(windows) && name.contains(':') {
            "outside_roots"
        } else {
            "denied"
        };
        assert_eq!(outcome, expected, "{name:?}");
    }
    assert!(!said(&evs).contains("SECRET"), "{}", said(&evs));
}

/// A `HEAD` that makes a directory a repository, in the spellings a case-folding file system or
/// Win32 opens as `HEAD`, and a repository directory reached in another case (where the file
/// system folds case): the repository rule, whatever the spelling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spellings_of_head_and_of_a_repository_are_the_repository_rule() {
    let ws = Ws::new();
    ws.write("src/fixture.git/HEAD", "ref: refs/heads/main\n");
    ws.write("src/fixture.git/config", "[core]\n\tbare = true\n");
    let heads = ["HEAD", "head", "Head", "HEAD.", "HEAD "];
    let mut steps = Vec::new();
    for (i, name) in heads.iter().enumerate() {
        let p = format!("$CWD{SEP}src{SEP}evil{i}{SEP}{name}");
        steps.push(write(&format!("h{i}"), &p, "ref: refs/heads/main\n"));
    }
    let mut fixture = vec![format!("$CWD{SEP}src{SEP}fixture.git{SEP}config")];
    if cfg!(windows) {
        fixture.push(format!("$CWD{SEP}SRC{SEP}Fixture.GIT{SEP}config"));
        fixture.push(format!(
            "$CWD{SEP}src{SEP}fixture.git.{SEP}hooks{SEP}pre-commit"
        ));
    }
    for (i, p) in fixture.iter().enumerate() {
        steps.push(write(&format!("f{i}"), p, "[core]\n\tfsmonitor = evil\n"));
    }
    let evs = run(&ws, config(r#"{"preset":"ask"}"#), json!(steps)).await;
    let repo = (
        "denied".to_owned(),
        acp_host::services::fs::BUILTIN_REPOSITORY_RULE.to_owned(),
    );
    assert_eq!(
        outcomes(&evs, EventKind::FsWrite),
        vec![repo; heads.len() + fixture.len()]
    );
    for i in 0..heads.len() {
        assert!(!ws.at(&format!("src/evil{i}")).exists());
    }
    assert_eq!(
        fs::read_to_string(ws.at("src/fixture.git/config")).unwrap(),
        "[core]\n\tbare = true\n"
    );
    assert!(!ws.at("src/fixture.git/hooks").exists());
}

// ------------------------------------------------------------------ Windows only

#[cfg(windows)]
mod windows {
    use super::*;

    /// `outcome` of each read, in order.
    fn read_outcomes(evs: &[acp_host::Event]) -> Vec<String> {
        outcomes(evs, EventKind::FsRead)
            .into_iter()
            .map(|(o, _)| o)
            .collect()
    }

    /// The workspace's path without its `\\?\` prefix, and its drive letter in the other case.
    fn plain_and_other_case(cwd: &str) -> (String, String) {
        let plain = cwd.strip_prefix(r"\\?\").unwrap_or(cwd).to_owned();
        let mut chars = plain.chars();
        let letter = chars.next().unwrap();
        let flipped = if letter.is_ascii_uppercase() {
            letter.to_ascii_lowercase()
        } else {
            letter.to_ascii_uppercase()
        };
        (plain.clone(), format!("{flipped}{}", chars.as_str()))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn prefixes_drive_case_and_slashes_reach_the_same_file() {
        let ws = Ws::new();
        ws.write("f.txt", "hello\n");
        let (plain, flipped) = plain_and_other_case(&ws.cwd);
        let spellings = [
            format!(r"{plain}\f.txt"),
            format!(r"{flipped}\f.txt"),
            format!(r"\\?\{plain}\f.txt"),
            format!(r"\\.\{plain}\f.txt"),
            format!("{}/f.txt", plain.replace('\\', "/")),
            format!(r"{plain}\F.TXT"),
            format!(r"{plain}\f.txt."),
            format!(r"{plain}\f.txt "),
        ];
        let mut steps = Vec::new();
        for (i, p) in spellings.iter().enumerate() {
            steps.push(read(&format!("r{i}"), p));
        }
        let evs = run(&ws, config(r#"{"preset":"ask"}"#), json!(steps)).await;
        assert_eq!(read_outcomes(&evs), vec!["ok"; spellings.len()]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streams_devices_and_device_paths_are_outside_the_root() {
        let ws = Ws::new();
        ws.write("f.txt", "hello\n");
        let (plain, _) = plain_and_other_case(&ws.cwd);
        let reads = [
            at("f.txt::$DATA"),
            at("f.txt:hidden"),
            at("CON"),
            at("nul"),
            at("aux.txt"),
            at("COM1"),
            at("LPT\u{b9}"),
            at("CONOUT$"),
            format!(r"{}{SEP}sub{SEP}prn.log", "$CWD"),
            r"\\.\pipe\acp-host-test".to_owned(),
            r"\\.\CON".to_owned(),
            format!(r"\\?\GLOBALROOT\??\{plain}\f.txt"),
            at("..."),
        ];
        let mut steps = Vec::new();
        for (i, p) in reads.iter().enumerate() {
            steps.push(read(&format!("r{i}"), p));
        }
        steps.push(write("w0", &at("f.txt:evil"), "x"));
        steps.push(write("w1", &at("NUL"), "x"));
        steps.push(write("w2", &at("com2.txt"), "x"));
        let evs = run(&ws, config(r#"{"preset":"ask"}"#), json!(steps)).await;
        assert_eq!(read_outcomes(&evs), vec!["outside_roots"; reads.len()]);
        let writes: Vec<String> = outcomes(&evs, EventKind::FsWrite)
            .into_iter()
            .map(|(o, _)| o)
            .collect();
        assert_eq!(writes, vec!["outside_roots"; 3]);
        assert_eq!(fs::read_to_string(ws.at("f.txt")).unwrap(), "hello\n");
    }

    /// A way out of the root that the walk does not see as a link is refused on the path read
    /// back from the handle. Wine shows a Unix symbolic link as a plain directory (so does
    /// Windows a mount point); made here with the Unix `ln` that Wine can start.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_way_out_the_walk_cannot_see_is_refused_on_the_path_read_back() {
        let ws = Ws::new();
        fs::write(ws.outside.path().join("secret.txt"), "SECRET=1\n").unwrap();
        let ln = std::path::Path::new(r"Z:\bin\ln");
        if !ln.exists() {
            eprintln!("skipped: no Unix `ln` at Z:\\bin\\ln (this is not Wine)");
            return;
        }
        let target = format!(
            "../{}",
            ws.outside.path().file_name().unwrap().to_string_lossy()
        );
        // Wine starts the Unix program but cannot hand back a process handle to wait on: look
        // for the link instead, for up to 10 s.
        let _ = std::process::Command::new(ln)
            .args(["-s", &target, "way-out"])
            .current_dir(ws.path())
            .status();
        let through = ws.at("way-out").join("secret.txt");
        for _ in 0..100 {
            if through.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        if !through.exists() {
            eprintln!("skipped: the Unix `ln` did not make the link");
            return;
        }
        let steps = json!([
            read("r", &format!("{}{SEP}secret.txt", at("way-out"))),
            report("r"),
            write("w", &format!("{}{SEP}planted.txt", at("way-out")), "x"),
        ]);
        let evs = run(&ws, config(r#"{"preset":"ask"}"#), steps).await;
        assert_eq!(read_outcomes(&evs), vec!["outside_roots"]);
        let writes: Vec<String> = outcomes(&evs, EventKind::FsWrite)
            .into_iter()
            .map(|(o, _)| o)
            .collect();
        assert_eq!(writes, vec!["outside_roots"]);
        assert!(!said(&evs).contains("SECRET"), "{}", said(&evs));
        assert!(!ws.outside.path().join("planted.txt").exists());
    }

    /// The 8.3 short name the file system gave `long` (GetShortPathNameW), if it has one that
    /// differs.
    #[allow(unsafe_code)]
    fn short_name(long: &std::path::Path) -> Option<String> {
        use std::os::windows::ffi::{OsStrExt, OsStringExt};
        use windows_sys::Win32::Storage::FileSystem::GetShortPathNameW;
        let wide: Vec<u16> = long.as_os_str().encode_wide().chain([0]).collect();
        let mut buf = vec![0u16; 1024];
        // SAFETY: `wide` is NUL-terminated; `buf` holds `buf.len()` u16s.
        let n = unsafe { GetShortPathNameW(wide.as_ptr(), buf.as_mut_ptr(), buf.len() as u32) };
        if n == 0 || n as usize >= buf.len() {
            return None;
        }
        let short = std::ffi::OsString::from_wide(&buf[..n as usize]);
        let name = std::path::Path::new(&short)
            .file_name()?
            .to_string_lossy()
            .into_owned();
        let given = long.file_name()?.to_string_lossy().into_owned();
        (!name.eq_ignore_ascii_case(&given)).then_some(name)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn short_names_are_decided_on_the_stored_name() {
        let ws = Ws::new();
        ws.git_repo();
        ws.write(".env", "SECRET=1\n");
        ws.write("secret-notes.markdown", "SECRET=2\n");
        let (Some(git), Some(env), Some(notes)) = (
            short_name(&ws.at(".git")),
            short_name(&ws.at(".env")),
            short_name(&ws.at("secret-notes.markdown")),
        ) else {
            eprintln!(
                "skipped: this file system gave no 8.3 short names (Wine makes none on a Unix \
                 file system; NTFS may have them turned off)"
            );
            return;
        };
        eprintln!("short names: {git} {env} {notes}");
        let policy =
            r#"{"preset":"ask","hardDeny":{"paths":["**/.env","**/secret-notes.markdown"]}}"#;
        let steps = json!([
            write(
                "c",
                &format!("{}{SEP}config", at(&git)),
                "[core]\n\tfsmonitor = evil\n"
            ),
            read("e", &at(&env)),
            report("e"),
            read("n", &at(&notes)),
            report("n"),
        ]);
        let evs = run(&ws, config(policy), steps).await;
        let writes = outcomes(&evs, EventKind::FsWrite);
        assert_eq!(
            writes,
            vec![("denied".to_owned(), GIT_RULE.to_owned())],
            "{git}"
        );
        assert_eq!(
            read_outcomes(&evs),
            vec!["denied", "denied"],
            "{env} {notes}"
        );
        assert!(!said(&evs).contains("SECRET"));
        assert_eq!(
            fs::read_to_string(ws.at(".git/config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
    }
}

/// The event data of every fs event, for failure messages.
#[allow(dead_code)]
fn fs_events(evs: &[acp_host::Event]) -> Vec<Value> {
    evs.iter()
        .filter(|e| matches!(e.kind, EventKind::FsRead | EventKind::FsWrite))
        .map(acp_host::Event::data_value)
        .collect()
}
