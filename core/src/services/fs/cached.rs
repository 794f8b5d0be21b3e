//! Reads the kernel can serve from memory, done on the caller's thread (the connection's task):
//! no hop to a blocking thread and back, which is most of a small read's round trip.
//!
//! Taken only when the kernel promises that no step waits on a disk, a network or a daemon
//! (Linux 5.12 or later), and only for the plain case:
//!
//! - the root is opened `O_PATH` with `RESOLVE_CACHED` (the lookup is served from the dentry
//!   cache or fails with `EAGAIN`);
//! - the file is opened `O_PATH` under that handle with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_CACHED`: the kernel keeps the lookup inside
//!   the root, refuses a link anywhere on the way (so the path the policy sees, the root's spelling
//!   joined with the path as requested, is the one [`super::resolve::walk`] would have resolved)
//!   and refuses to cross into another mount;
//! - the file system is a local disk or memory one (`fstatfs`; never FUSE or a network file
//!   system, whose `open` may wait on a daemon or the network);
//! - the handle names a regular file (checked before anything is opened for reading); the path is
//!   then opened for reading the same way, with `O_NONBLOCK` (a FIFO swapped in meanwhile does not
//!   block the open), and must be that same file (device and inode), else nothing is read;
//! - the policy allows the resolved path (as on the blocking path: after the open, before the
//!   read);
//! - the content (as long as `fstat` said: a file growing meanwhile is read as it was) is read
//!   with `RWF_NOWAIT`: data not in the page cache is not waited for.
//!
//! Anything else (a link, a cache miss, another file system, a special file, a file over the
//! limit, any error) returns `None` and the request takes the blocking path, which decides
//! everything again from scratch: this path changes how long a read takes, never its answer.

use std::io::IoSliceMut;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{CWD, FileType, Mode, OFlags, ResolveFlags, fstat, fstatfs, openat2};
use rustix::io::{Errno, ReadWriteFlags, preadv2};

use super::{FsError, FsLimits, absolute, locate, slice_lines};

/// `f_type` of the file systems whose reads are served from memory when cached and whose opens
/// never wait on anything but memory (linux/magic.h).
const LOCAL_FILE_SYSTEMS: [u64; 10] = [
    0xEF53,      // ext2, ext3, ext4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0xF2F5_2010, // f2fs
    0x0102_1994, // tmpfs
    0x8584_58F6, // ramfs
    0x794C_7630, // overlayfs
    0x2FC1_2FC1, // zfs
    0xCA45_1A4E, // bcachefs
    0x0000_4D44, // vfat (msdos)
];

/// Set once `openat2` or `RESOLVE_CACHED` turned out missing (Linux before 5.12, a seccomp
/// filter): every read takes the blocking path without trying.
static UNSUPPORTED: AtomicBool = AtomicBool::new(false);

/// The read, if the kernel can serve all of it without blocking; `None`: take the blocking path.
pub(super) fn read<G>(
    roots: &[PathBuf],
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
    limits: &FsLimits,
    decide: G,
) -> Option<Result<String, FsError>>
where
    G: FnOnce(&str) -> Result<(), String>,
{
    // Only the roots as given: a path spelt through a root's canonical form takes the blocking
    // path, which knows those spellings.
    let (i, rel) = locate(roots, path).ok()?;
    if rel.as_os_str().is_empty() {
        return None;
    }
    if UNSUPPORTED.load(Ordering::Relaxed) {
        return None;
    }
    let root_path = &roots[i];
    let root = match openat2(
        CWD,
        root_path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::CACHED,
    ) {
        Ok(root) => root,
        Err(Errno::NOSYS | Errno::INVAL | Errno::PERM) => {
            UNSUPPORTED.store(true, Ordering::Relaxed);
            return None;
        }
        Err(_) => return None,
    };
    let beneath = ResolveFlags::BENEATH
        | ResolveFlags::NO_SYMLINKS
        | ResolveFlags::NO_XDEV
        | ResolveFlags::NO_MAGICLINKS
        | ResolveFlags::CACHED;
    let handle = openat2(
        &root,
        &rel,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        beneath,
    )
    .ok()?;
    let stat = fstat(&handle).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let fs_type = u64::try_from(fstatfs(&handle).ok()?.f_type).ok()?;
    if !LOCAL_FILE_SYSTEMS.contains(&fs_type) {
        return None;
    }
    let size = u64::try_from(stat.st_size).ok()?;
    let max = limits.max_read_bytes;
    if size > max {
        return None;
    }
    // Opened for reading the same way, then held to the handle that was checked: anything
    // swapped in between (another file, a device node) is refused, and `O_NONBLOCK` keeps even
    // that open from waiting (a FIFO).
    let file = openat2(
        &root,
        &rel,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        beneath,
    )
    .ok()?;
    drop(root);
    let opened = fstat(&file).ok()?;
    if (opened.st_dev, opened.st_ino) != (stat.st_dev, stat.st_ino) {
        return None;
    }
    drop(handle);
    let resolved = absolute(root_path, &rel);
    if let Err(rule) = decide(&resolved) {
        return Some(Err(FsError::Denied {
            path: path.to_owned(),
            rule,
        }));
    }
    // The size `fstat` gave: a file that grows meanwhile is read as it was then (no read just
    // to see the end), one that shrinks ends early.
    let mut buf = vec![0u8; usize::try_from(size).ok()?];
    let mut len = 0usize;
    while len < buf.len() {
        match preadv2(
            &file,
            &mut [IoSliceMut::new(&mut buf[len..])],
            len as u64,
            ReadWriteFlags::NOWAIT,
        ) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(Errno::INTR) => {}
            // EAGAIN (not in the page cache), EOPNOTSUPP (no RWF_NOWAIT here), anything else.
            Err(_) => return None,
        }
    }
    buf.truncate(len);
    let text = match String::from_utf8(buf) {
        Ok(text) => text,
        Err(_) => return Some(Err(FsError::NotUtf8(path.to_owned()))),
    };
    Some(Ok(slice_lines(text, line, limit)))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::path::Path;

    use super::*;
    use crate::services::fs::read_blocking;

    fn root(dir: &Path) -> Vec<PathBuf> {
        vec![dir.to_path_buf()]
    }

    fn path(dir: &Path, rel: &str) -> String {
        dir.join(rel).to_string_lossy().into_owned()
    }

    /// What `read` and the blocking path answer, and the paths each one's policy saw.
    fn both(
        roots: &[PathBuf],
        path: &str,
        line: Option<u32>,
        limit: Option<u32>,
        limits: &FsLimits,
    ) -> (Option<Result<String, FsError>>, Result<String, FsError>) {
        let seen = RefCell::new(Vec::new());
        let fast = read(roots, path, line, limit, limits, |p| {
            seen.borrow_mut().push(p.to_owned());
            Ok(())
        });
        let mut slow_seen = Vec::new();
        let slow = read_blocking(roots, path, line, limit, limits, |p| {
            slow_seen.push(p.to_owned());
            Ok(())
        });
        if fast.is_some() {
            assert_eq!(
                *seen.borrow(),
                slow_seen,
                "{path}: the policy saw another path"
            );
        }
        (fast, slow)
    }

    #[test]
    fn a_plain_file_is_served_here_with_the_blocking_paths_answer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("src/deep/a.rs"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(dir.path().join("empty"), "").unwrap();
        let roots = root(dir.path());
        let limits = FsLimits::default();
        for (rel, line, limit) in [
            ("src/deep/a.rs", None, None),
            ("src/deep/a.rs", Some(2), None),
            ("src/deep/a.rs", Some(2), Some(1)),
            ("src/deep/a.rs", Some(9), None),
            ("src/./deep/a.rs", None, None),
            ("empty", None, None),
        ] {
            let p = path(dir.path(), rel);
            let (fast, slow) = both(&roots, &p, line, limit, &limits);
            assert_eq!(fast, Some(slow), "{rel} {line:?} {limit:?}");
        }
    }

    #[test]
    fn links_special_files_and_other_spellings_take_the_blocking_path() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("real")).unwrap();
        std::fs::write(d.join("real/f.txt"), "x").unwrap();
        std::os::unix::fs::symlink("real/f.txt", d.join("leaf-link")).unwrap();
        std::os::unix::fs::symlink("real", d.join("dir-link")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.join("out-link")).unwrap();
        nix_mkfifo(&d.join("fifo"));
        let roots = root(d);
        let limits = FsLimits::default();
        let never = |p: &str| -> Result<(), String> { panic!("decided on {p}") };
        for rel in [
            "leaf-link",
            "dir-link/f.txt",
            "out-link",
            "fifo",
            "real",
            "missing",
        ] {
            let p = path(d, rel);
            // A FIFO with no writer would block an open for reading: this returns at once.
            assert!(
                read(&roots, &p, None, None, &limits, never).is_none(),
                "{rel}"
            );
        }
        // The root itself, a path outside every root, a relative path.
        assert!(read(&roots, &path(d, ""), None, None, &limits, never).is_none());
        assert!(read(&roots, "/etc/hostname", None, None, &limits, never).is_none());
        assert!(read(&roots, "real/f.txt", None, None, &limits, never).is_none());
        // The root reached through a link: the path is spelt with the link, the root without.
        let spelt = tempfile::tempdir().unwrap();
        let alias = spelt.path().join("alias");
        std::os::unix::fs::symlink(d, &alias).unwrap();
        let via = alias.join("real/f.txt").to_string_lossy().into_owned();
        assert!(read(&roots, &via, None, None, &limits, never).is_none());
        // ... but a root configured through the link serves its files here.
        let (fast, slow) = both(std::slice::from_ref(&alias), &via, None, None, &limits);
        assert_eq!(fast, Some(slow));
    }

    #[test]
    fn the_policy_refusal_and_the_errors_are_the_blocking_paths() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("secret"), "s").unwrap();
        std::fs::write(d.join("binary"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(d.join("big"), "0123456789").unwrap();
        let roots = root(d);
        let limits = FsLimits::default();
        let p = path(d, "secret");
        let deny = |_: &str| Err("no secrets".to_owned());
        let fast = read(&roots, &p, None, None, &limits, deny);
        let slow = read_blocking(&roots, &p, None, None, &limits, deny);
        assert!(
            matches!(fast, Some(Err(FsError::Denied { .. }))),
            "{fast:?}"
        );
        assert_eq!(fast, Some(slow));
        let (fast, slow) = both(&roots, &path(d, "binary"), None, None, &limits);
        assert!(matches!(slow, Err(FsError::NotUtf8(_))));
        assert_eq!(fast, Some(slow));
        // Over the limit: reported by the blocking path, never decided here.
        let small = FsLimits {
            max_read_bytes: 4,
            ..FsLimits::default()
        };
        let never = |p: &str| -> Result<(), String> { panic!("decided on {p}") };
        assert!(read(&roots, &path(d, "big"), None, None, &small, never).is_none());
        let exact = FsLimits {
            max_read_bytes: 10,
            ..FsLimits::default()
        };
        let (fast, slow) = both(&roots, &path(d, "big"), None, None, &exact);
        assert_eq!(fast, Some(slow));
    }

    /// A file whose pages are not in the page cache is not waited for here. Where the file
    /// system keeps no separate cache to drop (tmpfs), there is nothing to test.
    #[test]
    fn a_file_not_in_the_page_cache_is_left_to_the_blocking_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cold");
        let content = "cold\n".repeat(64 * 1024);
        std::fs::write(&p, &content).unwrap();
        let file = std::fs::File::open(&p).unwrap();
        file.sync_all().unwrap();
        rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        let mut probe = [0u8; 1];
        let evicted = matches!(
            preadv2(
                &file,
                &mut [IoSliceMut::new(&mut probe)],
                0,
                ReadWriteFlags::NOWAIT
            ),
            Err(Errno::AGAIN)
        );
        if !evicted {
            return;
        }
        let roots = root(dir.path());
        let p = p.to_string_lossy().into_owned();
        let limits = FsLimits::default();
        assert!(read(&roots, &p, None, None, &limits, |_| Ok(())).is_none());
        assert_eq!(
            read_blocking(&roots, &p, None, None, &limits, |_| Ok(())),
            Ok(content)
        );
    }

    fn nix_mkfifo(p: &Path) {
        rustix::fs::mknodat(CWD, p, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
    }
}
