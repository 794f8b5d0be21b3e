//! The sandboxed `fs/*` service: what an agent can and cannot read or write.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::fs;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use crate::common::LeaseHolder;
use acp_host::services::fs::{FsError, FsLimits, locate, read_text_file, write_text_file};
use tempfile::TempDir;

/// One session root plus a sibling directory outside every root.
struct Sandbox {
    root: TempDir,
    outside: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        }
    }

    fn roots(&self) -> Vec<PathBuf> {
        vec![self.root.path().to_path_buf()]
    }

    /// Absolute path (as the agent sends it) inside the root.
    fn p(&self, rel: &str) -> String {
        self.root.path().join(rel).to_str().unwrap().to_owned()
    }

    fn out(&self, rel: &str) -> PathBuf {
        self.outside.path().join(rel)
    }

    async fn read(&self, path: &str) -> Result<String, FsError> {
        read_text_file(&self.roots(), path, None, None, &FsLimits::default()).await
    }

    async fn write(&self, path: &str, content: &str) -> Result<u64, FsError> {
        write_text_file(&self.roots(), path, content, &FsLimits::default()).await
    }
}

/// A symbolic link at `link` to `target` (a directory link when `dir`), or `false` with the
/// reason printed: creating links on Windows needs a privilege (or developer mode), and Wine may
/// not model them.
fn link(target: impl AsRef<Path>, link: impl AsRef<Path>, dir: bool) -> bool {
    #[cfg(unix)]
    let made = {
        let _ = dir;
        std::os::unix::fs::symlink(target.as_ref(), link.as_ref())
    };
    #[cfg(windows)]
    let made = if dir {
        std::os::windows::fs::symlink_dir(target.as_ref(), link.as_ref())
    } else {
        std::os::windows::fs::symlink_file(target.as_ref(), link.as_ref())
    };
    match made {
        // Wine 8's CreateSymbolicLinkW reports success and makes nothing: look.
        Ok(()) if fs::symlink_metadata(link.as_ref()).is_ok_and(|m| m.file_type().is_symlink()) => {
            true
        }
        Ok(()) => {
            eprintln!(
                "skipped: the symbolic link was reported made but is not there (Wine 8 does not \
                 make them)"
            );
            false
        }
        Err(e) => {
            eprintln!("skipped: cannot create a symbolic link here ({e})");
            false
        }
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

// ---------------------------------------------------------------- reading

#[tokio::test]
async fn reads_a_file_inside_the_root() {
    let sb = Sandbox::new();
    fs::write(sb.root.path().join("a.txt"), "hello\nworld\n").unwrap();
    assert_eq!(sb.read(&sb.p("a.txt")).await.unwrap(), "hello\nworld\n");
    // `.` components are harmless.
    assert_eq!(sb.read(&sb.p("./a.txt")).await.unwrap(), "hello\nworld\n");
}

#[tokio::test]
async fn line_and_limit_are_one_based_and_keep_newlines() {
    let sb = Sandbox::new();
    fs::write(sb.root.path().join("l.txt"), "one\ntwo\nthree\nfour").unwrap();
    let roots = sb.roots();
    let path = sb.p("l.txt");
    let lim = FsLimits::default();
    let read = |line, limit| {
        let roots = roots.clone();
        let path = path.clone();
        async move {
            read_text_file(&roots, &path, line, limit, &lim)
                .await
                .unwrap()
        }
    };
    assert_eq!(read(Some(1), Some(1)).await, "one\n");
    assert_eq!(read(Some(2), Some(2)).await, "two\nthree\n");
    assert_eq!(read(Some(3), None).await, "three\nfour");
    assert_eq!(read(None, Some(2)).await, "one\ntwo\n");
    // line 0 is treated as line 1.
    assert_eq!(read(Some(0), Some(1)).await, "one\n");
    // Past the end of the file: empty, not an error.
    assert_eq!(read(Some(5), None).await, "");
    assert_eq!(read(Some(100), Some(3)).await, "");
    // A limit larger than what is left returns the rest.
    assert_eq!(read(Some(4), Some(10)).await, "four");
}

#[tokio::test]
async fn missing_file_is_resource_not_found_with_uri() {
    let sb = Sandbox::new();
    let path = sb.p("nope.txt");
    let err = sb.read(&path).await.unwrap_err();
    assert!(
        matches!(&err, FsError::NotFound(p) if *p == path),
        "{err:?}"
    );
    assert_eq!(err.kind(), "not_found");
    let (code, message, data) = err.to_rpc();
    assert_eq!(code, -32002);
    assert_eq!(message, format!("Resource not found: {path}"));
    let uri = if cfg!(windows) {
        format!("file:///{}", path.replace('\\', "/"))
    } else {
        format!("file://{path}")
    };
    assert_eq!(data.unwrap()["uri"], uri);
}

#[tokio::test]
async fn relative_path_is_refused() {
    let sb = Sandbox::new();
    fs::write(sb.root.path().join("a.txt"), "x").unwrap();
    let err = sb.read("a.txt").await.unwrap_err();
    assert!(matches!(err, FsError::NotAbsolute(_)), "{err:?}");
    let (code, _, data) = err.to_rpc();
    assert_eq!(code, -32602);
    let data = data.unwrap();
    assert_eq!(data["reason"], "not_absolute");
    assert_eq!(data["path"], "a.txt");
    let err = sb.write("a.txt", "y").await.unwrap_err();
    assert!(matches!(err, FsError::NotAbsolute(_)), "{err:?}");
    assert_eq!(
        fs::read_to_string(sb.root.path().join("a.txt")).unwrap(),
        "x"
    );
}

#[tokio::test]
async fn dot_dot_escape_is_refused() {
    let sb = Sandbox::new();
    // `<root>/../outside.txt` names a real file next to the root.
    let parent = sb.root.path().parent().unwrap();
    let target = parent.join(format!(
        "{}-outside.txt",
        sb.root.path().file_name().unwrap().to_string_lossy()
    ));
    fs::write(&target, "secret").unwrap();
    let escaping = format!(
        "{}/../{}",
        sb.root.path().display(),
        target.file_name().unwrap().to_string_lossy()
    );
    let err = sb.read(&escaping).await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
    let err = sb.write(&escaping, "pwned").await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "secret");
    // Even a `..` that would land back inside the root is refused (lexical rule).
    fs::create_dir(sb.root.path().join("sub")).unwrap();
    fs::write(sb.root.path().join("in.txt"), "x").unwrap();
    let err = sb.read(&sb.p("sub/../in.txt")).await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
    fs::remove_file(&target).unwrap();
}

#[tokio::test]
async fn path_outside_every_root_is_refused() {
    let sb = Sandbox::new();
    let system = if cfg!(windows) {
        r"C:\Windows\win.ini"
    } else {
        "/etc/passwd"
    };
    let err = sb.read(system).await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
    let (code, _, data) = err.to_rpc();
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["reason"], "outside_roots");
    let planted = sb.out("acp-host-should-not-exist");
    let err = sb.write(planted.to_str().unwrap(), "x").await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
    assert!(!planted.exists());
    // A sibling whose name merely starts with the root's name is not inside it.
    let sibling = format!("{}-sibling/x.txt", sb.root.path().display());
    let err = sb.read(&sibling).await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
}

#[tokio::test]
async fn symlinked_file_pointing_outside_is_refused() {
    let sb = Sandbox::new();
    fs::write(sb.out("secret.txt"), "top secret").unwrap();
    if !link(sb.out("secret.txt"), sb.root.path().join("link.txt"), false) {
        return;
    }
    // A relative symlink climbing out is refused too.
    let rel_target = Path::new("..")
        .join(sb.outside.path().file_name().unwrap())
        .join("secret.txt");
    assert!(link(
        &rel_target,
        sb.root.path().join("rel-link.txt"),
        false
    ));

    for link in ["link.txt", "rel-link.txt"] {
        let err = sb.read(&sb.p(link)).await.unwrap_err();
        assert!(matches!(err, FsError::OutsideRoots(_)), "{link}: {err:?}");
        let err = sb.write(&sb.p(link), "overwritten").await.unwrap_err();
        assert!(matches!(err, FsError::OutsideRoots(_)), "{link}: {err:?}");
    }
    assert_eq!(
        fs::read_to_string(sb.out("secret.txt")).unwrap(),
        "top secret"
    );
    // The links are still links, and no temp file was left in the root.
    assert!(
        fs::symlink_metadata(sb.root.path().join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(names(sb.root.path()), vec!["link.txt", "rel-link.txt"]);
}

#[tokio::test]
async fn symlinked_parent_directory_pointing_outside_is_refused() {
    let sb = Sandbox::new();
    fs::write(sb.out("secret.txt"), "top secret").unwrap();
    if !link(sb.outside.path(), sb.root.path().join("link"), true) {
        return;
    }

    let err = sb.read(&sb.p("link/secret.txt")).await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");

    let err = sb
        .write(&sb.p("link/secret.txt"), "pwned")
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
    let err = sb.write(&sb.p("link/new.txt"), "pwned").await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
    // Creating missing directories through the link does not escape either.
    let err = sb
        .write(&sb.p("link/sub/deeper/new.txt"), "pwned")
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");

    assert_eq!(
        fs::read_to_string(sb.out("secret.txt")).unwrap(),
        "top secret"
    );
    assert_eq!(names(sb.outside.path()), vec!["secret.txt"]);
}

#[tokio::test]
async fn dangling_symlink_pointing_outside_does_not_create_the_target() {
    let sb = Sandbox::new();
    // link -> <outside>/planted.txt, which does not exist yet.
    if !link(
        sb.out("planted.txt"),
        sb.root.path().join("dangling.txt"),
        false,
    ) {
        return;
    }
    let err = sb.write(&sb.p("dangling.txt"), "pwned").await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots(_)), "{err:?}");
    assert!(!sb.out("planted.txt").exists());
    assert!(names(sb.outside.path()).is_empty());
    assert_eq!(names(sb.root.path()), vec!["dangling.txt"]);
}

#[tokio::test]
async fn root_given_through_a_symlink_is_served_under_both_spellings() {
    let base = tempfile::tempdir().unwrap();
    fs::create_dir(base.path().join("real")).unwrap();
    fs::write(base.path().join("real/f.txt"), "via link").unwrap();
    if !link(base.path().join("real"), base.path().join("alias"), true) {
        return;
    }
    let roots = vec![base.path().join("alias")];
    let lim = FsLimits::default();
    let via_alias = base.path().join("alias/f.txt").to_str().unwrap().to_owned();
    let canonical = fs::canonicalize(base.path().join("real/f.txt"))
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    for p in [&via_alias, &canonical] {
        assert_eq!(
            read_text_file(&roots, p, None, None, &lim).await.unwrap(),
            "via link",
            "{p}"
        );
    }
    write_text_file(&roots, &canonical, "rewritten", &lim)
        .await
        .unwrap();
    assert_eq!(
        fs::read_to_string(base.path().join("real/f.txt")).unwrap(),
        "rewritten"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn special_files_are_not_read() {
    let sb = Sandbox::new();
    let fifo = sb.root.path().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !matches!(made, Ok(s) if s.success()) {
        return; // no mkfifo on this system
    }
    // Would block forever if opened; refused instead.
    let err = sb.read(&sb.p("pipe")).await.unwrap_err();
    assert!(matches!(err, FsError::Io { .. }), "{err:?}");
    let err = sb.write(&sb.p("pipe"), "x").await.unwrap_err();
    assert!(matches!(err, FsError::Io { .. }), "{err:?}");
}

/// A holder that does not give its lease back: the read and the write are refused with `io`
/// within a second instead of holding a thread for the kernel's 45 s (and then succeeding); so
/// are a read through a link to it and a prompt content file.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_lease_that_is_not_given_back_fails_the_open() {
    let sb = Sandbox::new();
    let file = sb.root.path().join("leased.txt");
    fs::write(&file, "held").unwrap();
    let Some(holder) = LeaseHolder::take(&file, "write", false) else {
        return;
    };
    let err = sb.read(&sb.p("leased.txt")).await.unwrap_err();
    assert!(
        matches!(&err, FsError::Io { message, .. } if message.contains("temporarily unavailable")),
        "{err:?}"
    );
    let err = sb.write(&sb.p("leased.txt"), "x").await.unwrap_err();
    assert!(
        matches!(&err, FsError::Io { message, .. } if message.contains("temporarily unavailable")),
        "{err:?}"
    );
    // Through a link inside the root: the file opened is the leased one, refused the same way.
    std::os::unix::fs::symlink("leased.txt", sb.root.path().join("alias.txt")).unwrap();
    let err = sb.read(&sb.p("alias.txt")).await.unwrap_err();
    assert!(
        matches!(&err, FsError::Io { message, .. } if message.contains("temporarily unavailable")),
        "{err:?}"
    );
    // The embedder's own file reads (prompt content) do not wait for it either.
    let err = acp_host::content::from_file(&file).unwrap_err();
    assert!(
        err.kind() == "invalid_argument" && err.to_string().contains("temporarily unavailable"),
        "{err:?}"
    );
    holder.release();
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "held",
        "nothing written"
    );
    assert_eq!(sb.read(&sb.p("leased.txt")).await.unwrap(), "held");
}

/// Holders that give their lease back when told (an NFS server recalling a delegation, Samba
/// breaking an oplock): the read, the write and a prompt content file go through once they have.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_lease_given_back_lets_the_open_through() {
    let sb = Sandbox::new();
    let file = sb.root.path().join("leased.txt");
    fs::write(&file, "held").unwrap();
    if let Some(holder) = LeaseHolder::take(&file, "write", true) {
        assert_eq!(sb.read(&sb.p("leased.txt")).await.unwrap(), "held");
        holder.release();
    }
    if let Some(holder) = LeaseHolder::take(&file, "write", true) {
        let block = acp_host::content::from_file(&file).unwrap();
        assert_eq!(block["resource"]["text"], "held", "{block}");
        holder.release();
    }
    if let Some(holder) = LeaseHolder::take(&file, "read", true) {
        sb.write(&sb.p("leased.txt"), "updated").await.unwrap();
        holder.release();
        assert_eq!(fs::read_to_string(&file).unwrap(), "updated");
    }
}

#[tokio::test]
async fn symlink_inside_the_root_is_followed() {
    let sb = Sandbox::new();
    fs::create_dir(sb.root.path().join("real")).unwrap();
    fs::write(sb.root.path().join("real/f.txt"), "inside").unwrap();
    if !link(
        Path::new("real").join("f.txt"),
        sb.root.path().join("alias.txt"),
        false,
    ) {
        return;
    }
    assert_eq!(sb.read(&sb.p("alias.txt")).await.unwrap(), "inside");
    // Writing through the link updates the file it points to and keeps the link.
    sb.write(&sb.p("alias.txt"), "updated").await.unwrap();
    assert_eq!(
        fs::read_to_string(sb.root.path().join("real/f.txt")).unwrap(),
        "updated"
    );
    assert!(
        fs::symlink_metadata(sb.root.path().join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(names(&sb.root.path().join("real")), vec!["f.txt"]);
}

#[tokio::test]
async fn second_root_is_served() {
    let sb = Sandbox::new();
    let second = tempfile::tempdir().unwrap();
    fs::write(second.path().join("b.txt"), "from second").unwrap();
    let roots = vec![
        PathBuf::from("/definitely/not/a/real/root"), // missing roots are skipped
        sb.root.path().to_path_buf(),
        second.path().to_path_buf(),
    ];
    let path = second.path().join("b.txt").to_str().unwrap().to_owned();
    let lim = FsLimits::default();
    assert_eq!(
        read_text_file(&roots, &path, None, None, &lim)
            .await
            .unwrap(),
        "from second"
    );
    let new = second.path().join("c.txt").to_str().unwrap().to_owned();
    assert_eq!(write_text_file(&roots, &new, "c", &lim).await.unwrap(), 1);
    assert_eq!(
        fs::read_to_string(second.path().join("c.txt")).unwrap(),
        "c"
    );
    assert_eq!(locate(&roots, &path).unwrap(), (2, PathBuf::from("b.txt")));
}

#[tokio::test]
async fn oversized_read_is_too_large() {
    let sb = Sandbox::new();
    let big = "x".repeat(101);
    fs::write(sb.root.path().join("big.txt"), &big).unwrap();
    let lim = FsLimits {
        max_read_bytes: 100,
        max_write_bytes: 100,
    };
    let err = read_text_file(&sb.roots(), &sb.p("big.txt"), None, None, &lim)
        .await
        .unwrap_err();
    match &err {
        FsError::TooLarge { size, limit, .. } => {
            assert_eq!(*size, 101);
            assert_eq!(*limit, 100);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let (code, _, data) = err.to_rpc();
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["reason"], "too_large");
    // Exactly at the limit is fine.
    fs::write(sb.root.path().join("ok.txt"), "y".repeat(100)).unwrap();
    let ok = read_text_file(&sb.roots(), &sb.p("ok.txt"), None, None, &lim).await;
    assert_eq!(ok.unwrap().len(), 100);
    assert_eq!(
        fs::read_to_string(sb.root.path().join("big.txt")).unwrap(),
        big
    );
}

/// The read limit is on the content as it travels, as JSON text: a file within it whose text
/// takes more once escaped is refused, with both sizes; the lines asked for are what counts.
#[tokio::test]
async fn a_read_is_limited_by_its_size_as_json_text() {
    let sb = Sandbox::new();
    let lim = FsLimits {
        max_read_bytes: 100,
        max_write_bytes: 100,
    };
    fs::write(sb.root.path().join("zeros.bin"), [0u8; 50]).unwrap();
    let err = read_text_file(&sb.roots(), &sb.p("zeros.bin"), None, None, &lim)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        FsError::TooLarge {
            path: sb.p("zeros.bin"),
            size: 50,
            limit: 100,
            encoded_size: Some(300),
        }
    );
    let (code, message, data) = err.to_rpc();
    assert_eq!(code, -32602);
    assert!(message.contains("300 bytes as JSON text"), "{message}");
    let data = data.unwrap();
    assert_eq!(
        (
            &data["reason"],
            &data["size"],
            &data["encodedSize"],
            &data["limit"]
        ),
        (
            &serde_json::json!("too_large"),
            &serde_json::json!(50),
            &serde_json::json!(300),
            &serde_json::json!(100)
        )
    );
    // Fifty line breaks are a hundred bytes as JSON text: exactly at the limit.
    fs::write(sb.root.path().join("breaks.txt"), "\n".repeat(50)).unwrap();
    let ok = read_text_file(&sb.roots(), &sb.p("breaks.txt"), None, None, &lim).await;
    assert_eq!(ok.unwrap().len(), 50);
    // One more is over it; one line of them is not.
    fs::write(sb.root.path().join("breaks.txt"), "\n".repeat(51)).unwrap();
    let err = read_text_file(&sb.roots(), &sb.p("breaks.txt"), None, None, &lim).await;
    assert!(
        matches!(
            err,
            Err(FsError::TooLarge {
                encoded_size: Some(102),
                ..
            })
        ),
        "{err:?}"
    );
    let one = read_text_file(&sb.roots(), &sb.p("breaks.txt"), Some(3), Some(1), &lim).await;
    assert_eq!(one.unwrap(), "\n");
}

#[tokio::test]
async fn oversized_write_is_too_large_and_leaves_the_file_alone() {
    let sb = Sandbox::new();
    fs::write(sb.root.path().join("f.txt"), "original").unwrap();
    let lim = FsLimits {
        max_read_bytes: 100,
        max_write_bytes: 100,
    };
    let err = write_text_file(&sb.roots(), &sb.p("f.txt"), &"z".repeat(101), &lim)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            FsError::TooLarge {
                size: 101,
                limit: 100,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        fs::read_to_string(sb.root.path().join("f.txt")).unwrap(),
        "original"
    );
    // A new file is not created either.
    let err = write_text_file(&sb.roots(), &sb.p("g.txt"), &"z".repeat(101), &lim)
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::TooLarge { .. }), "{err:?}");
    assert_eq!(names(sb.root.path()), vec!["f.txt"]);
}

#[tokio::test]
async fn non_utf8_is_refused() {
    let sb = Sandbox::new();
    fs::write(
        sb.root.path().join("bin.dat"),
        [0x66, 0x6f, 0xff, 0xfe, 0x00],
    )
    .unwrap();
    let err = sb.read(&sb.p("bin.dat")).await.unwrap_err();
    assert!(matches!(err, FsError::NotUtf8(_)), "{err:?}");
    assert_eq!(err.kind(), "not_utf8");
    assert_eq!(err.to_rpc().0, -32602);
}

#[tokio::test]
async fn reading_a_directory_is_is_directory() {
    let sb = Sandbox::new();
    fs::create_dir(sb.root.path().join("d")).unwrap();
    let err = sb.read(&sb.p("d")).await.unwrap_err();
    assert!(matches!(err, FsError::IsDirectory(_)), "{err:?}");
    // The root itself.
    let err = sb.read(sb.root.path().to_str().unwrap()).await.unwrap_err();
    assert!(matches!(err, FsError::IsDirectory(_)), "{err:?}");
}

// ---------------------------------------------------------------- writing

#[tokio::test]
async fn write_creates_a_new_file() {
    let sb = Sandbox::new();
    let n = sb.write(&sb.p("new.txt"), "fresh\n").await.unwrap();
    assert_eq!(n, 6);
    assert_eq!(
        fs::read_to_string(sb.root.path().join("new.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(sb.read(&sb.p("new.txt")).await.unwrap(), "fresh\n");
    assert_eq!(names(sb.root.path()), vec!["new.txt"]);
}

#[tokio::test]
async fn write_creates_missing_parents_inside_the_root() {
    let sb = Sandbox::new();
    sb.write(&sb.p("a/b/c/deep.txt"), "deep").await.unwrap();
    assert_eq!(
        fs::read_to_string(sb.root.path().join("a/b/c/deep.txt")).unwrap(),
        "deep"
    );
    assert_eq!(names(&sb.root.path().join("a/b/c")), vec!["deep.txt"]);
}

#[tokio::test]
async fn write_overwrites_an_existing_file_and_leaves_no_temp_files() {
    let sb = Sandbox::new();
    fs::write(
        sb.root.path().join("f.txt"),
        "a much longer original content\n",
    )
    .unwrap();
    sb.write(&sb.p("f.txt"), "short").await.unwrap();
    assert_eq!(
        fs::read_to_string(sb.root.path().join("f.txt")).unwrap(),
        "short"
    );
    // Empty content truncates.
    assert_eq!(sb.write(&sb.p("f.txt"), "").await.unwrap(), 0);
    assert_eq!(
        fs::read_to_string(sb.root.path().join("f.txt")).unwrap(),
        ""
    );
    assert_eq!(names(sb.root.path()), vec!["f.txt"]);
}

#[cfg(unix)]
#[tokio::test]
async fn write_keeps_the_permissions_of_an_existing_file() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let f = sb.root.path().join("run.sh");
    fs::write(&f, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o750)).unwrap();
    sb.write(&sb.p("run.sh"), "#!/bin/sh\necho hi\n")
        .await
        .unwrap();
    assert_eq!(
        fs::metadata(&f).unwrap().permissions().mode() & 0o777,
        0o750
    );
    assert_eq!(fs::read_to_string(&f).unwrap(), "#!/bin/sh\necho hi\n");
}

#[tokio::test]
async fn writing_to_a_directory_is_is_directory() {
    let sb = Sandbox::new();
    fs::create_dir(sb.root.path().join("d")).unwrap();
    fs::write(sb.root.path().join("d/keep.txt"), "keep").unwrap();
    let err = sb.write(&sb.p("d"), "x").await.unwrap_err();
    assert!(matches!(err, FsError::IsDirectory(_)), "{err:?}");
    let err = sb
        .write(&format!("{}/", sb.p("new-dir")), "x")
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::IsDirectory(_)), "{err:?}");
    let err = sb
        .write(sb.root.path().to_str().unwrap(), "x")
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::IsDirectory(_)), "{err:?}");
    assert!(sb.root.path().join("d").is_dir());
    assert_eq!(names(&sb.root.path().join("d")), vec!["keep.txt"]);
    assert_eq!(names(sb.root.path()), vec!["d"]);
}

#[tokio::test]
async fn write_under_a_file_is_a_clear_error() {
    let sb = Sandbox::new();
    fs::write(sb.root.path().join("plain"), "file").unwrap();
    let err = sb.write(&sb.p("plain/child.txt"), "x").await.unwrap_err();
    assert!(matches!(err, FsError::Io { .. }), "{err:?}");
    assert_eq!(err.to_rpc().0, -32603);
    assert_eq!(
        fs::read_to_string(sb.root.path().join("plain")).unwrap(),
        "file"
    );
}

#[test]
fn error_kinds_are_stable() {
    let cases = [
        (FsError::NotAbsolute("p".into()), "not_absolute", -32602),
        (FsError::OutsideRoots("p".into()), "outside_roots", -32602),
        (FsError::NotFound("/p".into()), "not_found", -32002),
        (
            FsError::TooLarge {
                path: "p".into(),
                size: 2,
                limit: 1,
                encoded_size: None,
            },
            "too_large",
            -32602,
        ),
        (FsError::NotUtf8("p".into()), "not_utf8", -32602),
        (FsError::IsDirectory("p".into()), "is_directory", -32602),
        (
            FsError::Io {
                path: "p".into(),
                message: "boom".into(),
            },
            "io",
            -32603,
        ),
    ];
    for (err, kind, code) in cases {
        assert_eq!(err.kind(), kind);
        let (c, _, data) = err.to_rpc();
        assert_eq!(c, code, "{kind}");
        let data = data.unwrap();
        if kind == "not_found" {
            assert_eq!(data["uri"], "file:///p");
        } else {
            assert_eq!(data["reason"], kind);
            assert_eq!(data["path"], "p");
        }
    }
}
