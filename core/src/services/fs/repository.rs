//! Git repository metadata outside any `.git` directory.
//!
//! Git takes a directory for a repository when it holds a `HEAD` that names a ref or an object
//! (`ref: refs/...`, or an object id) next to `objects/` and `refs/` (or a `commondir` naming
//! them) — whatever the directory is called. An agent allowed to write `src/**` could otherwise
//! assemble `src/evil/{HEAD,config,objects/,refs/}`: no path has a `.git` component, and git run
//! in `src/evil` (an allowed `git status`, or the user's own later) executes `config`'s
//! `core.fsmonitor`. The same holds for a `.git` directory reached under another name (a bind
//! mount of `.git` at `g`).
//!
//! So a write is refused when it would create such a `HEAD`, or when any directory from the root
//! down to the file's directory already holds one: the verdict is decided on the handles the
//! file is written through, so every way of reaching the directory ends the same. The `HEAD`
//! alone decides (git needs it; the rest can be assembled in any order, so it is not waited for).

use std::io::Read;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};

/// The verdict's description for a write refused here.
pub const BUILTIN_REPOSITORY_RULE: &str = "deny write git repository metadata (built-in)";

/// What git reads of a `HEAD` (it reads at most 255 bytes).
const HEAD_READ: u64 = 255;

/// Whether `content`, as a file named `HEAD`, makes git take its directory for a repository:
/// `ref:`, optional whitespace, then `refs/`; or a hexadecimal object id (SHA-1's 40 digits
/// start SHA-256's 64) — git's `validate_headref`.
pub(crate) fn is_head_ref(content: &[u8]) -> bool {
    if let Some(rest) = content.strip_prefix(b"ref:") {
        let start = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(rest.len());
        return rest[start..].starts_with(b"refs/");
    }
    content.len() >= 40 && content[..40].iter().all(u8::is_ascii_hexdigit)
}

/// Whether `name` is spelt `HEAD` to a file system that may ignore case.
pub(crate) fn is_head_name(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| n.trim_end_matches(['.', ' ']).eq_ignore_ascii_case("HEAD"))
}

/// Whether `dir` holds a `HEAD` git would accept (a file with such content, or a link into
/// `refs/`). Opened without following links and without blocking; anything unreadable counts as
/// no repository (it is not one to git either).
pub(crate) fn holds_repository(dir: &Dir) -> bool {
    if let Ok(target) = dir.read_link_contents("HEAD") {
        return target.as_os_str().as_encoded_bytes().starts_with(b"refs/");
    }
    let mut opts = OpenOptions::new();
    opts.read(true).follow(FollowSymlinks::No);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        opts.custom_flags(nix::libc::O_NONBLOCK);
    }
    let Ok(file) = dir.open_with("HEAD", &opts) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::with_capacity(HEAD_READ as usize);
    if file.take(HEAD_READ).read_to_end(&mut head).is_err() {
        return false;
    }
    is_head_ref(&head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_content_as_git_reads_it() {
        for yes in [
            &b"ref: refs/heads/main\n"[..],
            b"ref:refs/heads/x",
            b"ref: \t\n refs/",
            b"0123456789abcdef0123456789ABCDEF01234567",
            b"0123456789abcdef0123456789abcdef01234567\n",
            b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert!(is_head_ref(yes), "{}", String::from_utf8_lossy(yes));
        }
        for no in [
            &b""[..],
            b"ref: heads/main",
            b"refs/heads/main",
            b" ref: refs/heads/main",
            b"0123456789abcdef0123456789abcdef0123456",
            b"0123456789abcdef0123456789abcdef0123456g",
            b"# my HEAD notes",
        ] {
            assert!(!is_head_ref(no), "{}", String::from_utf8_lossy(no));
        }
    }

    #[test]
    fn head_names() {
        for yes in ["HEAD", "head", "Head", "HEAD.", "HEAD "] {
            assert!(is_head_name(std::ffi::OsStr::new(yes)), "{yes}");
        }
        for no in ["HEADER", "HEAD.txt", "FETCH_HEAD", "ORIG_HEAD"] {
            assert!(!is_head_name(std::ffi::OsStr::new(no)), "{no}");
        }
    }

    #[test]
    fn directories_holding_a_head() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        assert!(!holds_repository(&dir));
        std::fs::write(tmp.path().join("HEAD"), "not a ref").unwrap();
        assert!(!holds_repository(&dir));
        std::fs::write(tmp.path().join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(holds_repository(&dir));
        std::fs::remove_file(tmp.path().join("HEAD")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("refs/heads/main", tmp.path().join("HEAD")).unwrap();
            assert!(holds_repository(&dir));
            std::fs::remove_file(tmp.path().join("HEAD")).unwrap();
            // A FIFO named HEAD neither blocks nor counts.
            nix::unistd::mkfifo(
                &tmp.path().join("HEAD"),
                nix::sys::stat::Mode::from_bits_truncate(0o600),
            )
            .unwrap();
            assert!(!holds_repository(&dir));
        }
    }
}
