//! Reads the kernel can serve from memory, done on the caller's thread (the connection's task):
//! no hop to a blocking thread and back, which is most of a small read's round trip.
//!
//! Taken only when nothing on the way can wait for a disk, a network or a daemon (Linux 6.8 or
//! later), and only for the plain case:
//!
//! - the root is one the blocking path has already seen on a local disk or memory file system
//!   ([`learn_root`]), so no lookup is made here in a file system that may wait;
//! - the root is opened `O_PATH` with `RESOLVE_CACHED` (the lookup is served from the dentry
//!   cache or fails with `EAGAIN`);
//! - the file is opened `O_PATH` under that handle with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_CACHED`: the kernel keeps the lookup inside
//!   the root, refuses a link anywhere on the way (so the path the policy sees, the root's spelling
//!   joined with the path as requested, is the one [`super::resolve::walk`] would have resolved)
//!   and refuses to cross into another mount;
//! - its mount is one the blocking path has already found to be local too ([`learn`]). The
//!   handle's type, size, owner and mount come from `statx` with `AT_STATX_DONT_SYNC` (cached
//!   attributes); `fstatfs`, which always asks the file system, only runs on the blocking path.
//!   Mount ids (`STATX_MNT_ID_UNIQUE`) are never reused, so what was learnt cannot describe a
//!   later mount (an agent mounting FUSE over its workspace gets a new, unknown mount; FUSE
//!   answers a `DONT_SYNC` statx from its cache). Overlayfs is not among the local file systems
//!   (its lower layers may be FUSE or NFS), nor 9p (its `statx` always asks the server);
//! - the handle names a regular file of at most [`MAX_BYTES`] (bounding what the actor copies and
//!   checks); the path is then opened for reading the same way, with `O_NONBLOCK` (a FIFO swapped
//!   in meanwhile does not block the open) and `O_NOATIME` when the host owns the file (no
//!   access-time update to journal), and must be that same file (device and inode);
//! - the policy allows the resolved path (decided before anything is read, as on the blocking
//!   path);
//! - the content (as long as `statx` said: a file growing meanwhile is read as it was) is read
//!   with `RWF_NOWAIT` (data not in the page cache is not waited for), or plainly on tmpfs and
//!   ramfs, which have no `RWF_NOWAIT` (a page swapped out is read back from swap here).
//!
//! Anything else (a link, a cache miss, an unknown or remote mount, a special file, a larger file,
//! any error) returns `None` and the request takes the blocking path, which decides everything
//! again from scratch: this path changes how long a read takes, never its answer. Still possible
//! here, as on any open: a fanotify permission check (an antivirus scanner) holds the open until
//! it answers. A root whose file system is replaced under its path after it was learnt
//! (unmounted, then something else mounted there) gets one cached lookup in the new one before
//! the mount check refuses it.

use std::collections::HashMap;
use std::io::IoSliceMut;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use rustix::fd::BorrowedFd;
use rustix::fs::{
    AtFlags, CWD, FileType, Mode, OFlags, ResolveFlags, StatxFlags, fstat, fstatfs, makedev,
    openat2, statx,
};
use rustix::io::{Errno, ReadWriteFlags, preadv2};

use super::{FsError, Opened, absolute, locate, plain};

/// Larger files take the blocking path (the copy and the UTF-8 check stay off the actor).
pub(super) const MAX_BYTES: u64 = super::CACHED_MAX_BYTES;

/// `STATX_MNT_ID_UNIQUE` (Linux 6.8): a mount id that is never reused.
const STATX_MNT_ID_UNIQUE: u32 = 0x4000;

/// `f_type` of the local disk file systems (linux/magic.h), read with `RWF_NOWAIT`.
const DISK_FILE_SYSTEMS: [i64; 7] = [
    0xEF53,      // ext2, ext3, ext4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0xF2F5_2010, // f2fs
    0x2FC1_2FC1, // zfs
    0xCA45_1A4E, // bcachefs
    0x0000_4D44, // vfat (msdos)
];
/// tmpfs and ramfs: the page cache is the file, read plainly.
const MEMORY_FILE_SYSTEMS: [i64; 2] = [0x0102_1994, 0x8584_58F6];

/// How a learnt mount's files are read here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mount {
    /// A local disk file system that takes `RWF_NOWAIT`.
    Disk,
    /// tmpfs or ramfs.
    Memory,
    /// Anything else: always the blocking path.
    Other,
}

/// What the blocking path learnt: mounts by unique mount id, and roots (by path) whose file
/// system is local. Bounded: when full, forgotten and learnt again (an agent mounting and
/// unmounting FUSE over and over cannot fill them for good).
const LEARNT_MAX: usize = 256;
static MOUNTS: OnceLock<Mutex<HashMap<u64, Mount>>> = OnceLock::new();
static ROOTS: OnceLock<Mutex<HashMap<PathBuf, bool>>> = OnceLock::new();

fn locked<T: Default>(cell: &'static OnceLock<Mutex<T>>) -> MutexGuard<'static, T> {
    cell.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn mounts() -> MutexGuard<'static, HashMap<u64, Mount>> {
    locked(&MOUNTS)
}

fn learnt_roots() -> MutexGuard<'static, HashMap<PathBuf, bool>> {
    locked(&ROOTS)
}

fn remember<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>, key: K, value: V) {
    if map.len() >= LEARNT_MAX {
        map.clear();
    }
    map.insert(key, value);
}

/// Set once `openat2`, `RESOLVE_CACHED` or `STATX_MNT_ID_UNIQUE` turned out missing (an older
/// kernel, a seccomp filter): every read takes the blocking path without trying.
static UNSUPPORTED: AtomicBool = AtomicBool::new(false);

/// Statx of `fd` from cached attributes only, with its unique mount id.
fn cached_statx(fd: impl AsFd, mask: StatxFlags) -> Option<rustix::fs::Statx> {
    let mask = mask | StatxFlags::from_bits_retain(STATX_MNT_ID_UNIQUE);
    let st = statx(fd, "", AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC, mask).ok()?;
    if st.stx_mask & STATX_MNT_ID_UNIQUE == 0 {
        UNSUPPORTED.store(true, Ordering::Relaxed);
        return None;
    }
    Some(st)
}

/// The `f_type` of `fd`'s file system if it is a local one. `fstatfs` may wait on the file
/// system: the blocking path only.
fn local_type(fd: BorrowedFd<'_>) -> Option<i64> {
    let fs = fstatfs(fd).ok()?;
    #[allow(clippy::useless_conversion, reason = "f_type is i32 on some targets")]
    let f_type = i64::from(fs.f_type);
    (DISK_FILE_SYSTEMS.contains(&f_type) || MEMORY_FILE_SYSTEMS.contains(&f_type)).then_some(f_type)
}

/// Called by the blocking path with a root it opened (spelt as it matched the request), on its
/// own thread: remember whether the root's file system is local.
pub(super) fn learn_root(root_path: &Path, root: impl AsFd) {
    if UNSUPPORTED.load(Ordering::Relaxed) || learnt_roots().contains_key(root_path) {
        return;
    }
    let local = local_type(root.as_fd()).is_some();
    remember(&mut learnt_roots(), root_path.to_path_buf(), local);
}

/// Called by the blocking path with a file it opened, on its own thread: remember what kind of
/// mount it is on.
pub(super) fn learn(file: impl AsFd) {
    if UNSUPPORTED.load(Ordering::Relaxed) {
        return;
    }
    let file = file.as_fd();
    let Some(st) = cached_statx(file, StatxFlags::empty()) else {
        return;
    };
    if mounts().contains_key(&st.stx_mnt_id) {
        return;
    }
    let kind = match local_type(file) {
        None => Mount::Other,
        Some(f_type) if MEMORY_FILE_SYSTEMS.contains(&f_type) => Mount::Memory,
        // Whether it takes RWF_NOWAIT is checked before the file's size matters.
        Some(_) => {
            let mut probe = [0u8; 1];
            let iov = &mut [IoSliceMut::new(&mut probe)];
            match preadv2(file, iov, 0, ReadWriteFlags::NOWAIT) {
                Ok(_) | Err(Errno::AGAIN) => Mount::Disk,
                Err(_) => Mount::Other,
            }
        }
    };
    remember(&mut mounts(), st.stx_mnt_id, kind);
}

/// The read, if it can be served without blocking; `None`: take the blocking path. (The host
/// reads [`read_bytes`] and makes the answer from the bytes; this is how the tests compare.)
#[cfg(test)]
pub(super) fn read<G>(
    roots: &[PathBuf],
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
    limits: &super::FsLimits,
    decide: G,
) -> Option<Result<String, FsError>>
where
    G: FnOnce(Opened<'_>) -> Result<(), String>,
{
    let max = limits.max_read_bytes;
    Some(
        read_bytes(roots, path, max, decide)?
            .and_then(|bytes| super::text_of(bytes, path, line, limit, max)),
    )
}

/// [`read`]'s file, whole, as bytes (not checked to be UTF-8 yet), if it is at most `max` bytes
/// and can be read without blocking; `None`: take the blocking path.
pub(super) fn read_bytes<G>(
    roots: &[PathBuf],
    path: &str,
    max: u64,
    decide: G,
) -> Option<Result<Vec<u8>, FsError>>
where
    G: FnOnce(Opened<'_>) -> Result<(), String>,
{
    if UNSUPPORTED.load(Ordering::Relaxed) {
        return None;
    }
    // Only roots as given, in normal form: the path the policy sees is then spelt exactly as the
    // blocking path spells it (a path through a root's canonical form, or a root written with
    // `.` or a trailing `/`, takes the blocking path).
    let (i, rel) = locate(roots, path).ok()?;
    let root_path = &roots[i];
    if rel.as_os_str().is_empty() || !root_path.to_str().is_some_and(plain) {
        return None;
    }
    if learnt_roots().get(root_path.as_path()) != Some(&true) {
        return None; // not seen yet, or not local: no lookup is made in it here
    }
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
    let mask = StatxFlags::TYPE | StatxFlags::SIZE | StatxFlags::INO | StatxFlags::UID;
    let st = cached_statx(&handle, mask)?;
    let mount = mounts().get(&st.stx_mnt_id).copied()?;
    if mount == Mount::Other
        || FileType::from_raw_mode(st.stx_mode.into()) != FileType::RegularFile
        || st.stx_size > max.min(MAX_BYTES)
    {
        return None;
    }
    // Opened for reading the same way, then held to the handle that was checked: anything
    // swapped in between (another file, a device node) is refused, and `O_NONBLOCK` keeps even
    // that open from waiting (a FIFO). The mount is known to be local by now.
    let mut oflags =
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if st.stx_uid == rustix::process::geteuid().as_raw() {
        oflags |= OFlags::NOATIME; // the owner's right: no access time to journal
    }
    let file = openat2(&root, &rel, oflags, Mode::empty(), beneath).ok()?;
    drop((root, handle));
    let opened = fstat(&file).ok()?;
    let checked = (makedev(st.stx_dev_major, st.stx_dev_minor), st.stx_ino);
    if (opened.st_dev, opened.st_ino) != checked {
        return None;
    }
    // Decided before anything is read, as on the blocking path.
    // `RESOLVE_NO_XDEV`: nothing here crossed a mount, so the file has no other name.
    let resolved = absolute(root_path, &rel);
    let opened = Opened {
        path: &resolved,
        other_names: &[],
    };
    if let Err(rule) = decide(opened) {
        return Some(Err(FsError::Denied {
            path: path.to_owned(),
            rule,
        }));
    }
    let flags = match mount {
        Mount::Disk => ReadWriteFlags::NOWAIT,
        _ => ReadWriteFlags::empty(),
    };
    let mut buf = vec![0u8; usize::try_from(st.stx_size).ok()?];
    let mut len = 0usize;
    while len < buf.len() {
        let iov = &mut [IoSliceMut::new(&mut buf[len..])];
        match preadv2(&file, iov, len as u64, flags) {
            Ok(0) => break, // shrank meanwhile
            Ok(n) => len += n,
            Err(Errno::INTR) => {}
            // EAGAIN (not in the page cache), anything else.
            Err(_) => return None,
        }
    }
    buf.truncate(len);
    Some(Ok(buf))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::path::Path;

    use super::*;
    use crate::services::fs::{FsLimits, read_blocking};

    /// The tests of this module one at a time: one of them forgets the learnt mounts.
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(|p| p.into_inner())
    }

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
        // The blocking path first: it is what learns the mount (and warms the dentry cache).
        // A `RESOLVE_CACHED` lookup misses when the kernel evicted a dentry meanwhile (memory
        // pressure: a loaded machine's reclaim): the blocking path then warms it again, a few
        // times, before the fast path's `None` counts.
        let mut attempt = 0;
        let (slow, slow_seen, fast, seen) = loop {
            let mut slow_seen = Vec::new();
            let slow = read_blocking(roots, path, line, limit, limits, |o: Opened<'_>| {
                let p = o.path;
                slow_seen.push(p.to_owned());
                Ok(())
            });
            let seen = RefCell::new(Vec::new());
            let fast = read(roots, path, line, limit, limits, |o: Opened<'_>| {
                let p = o.path;
                seen.borrow_mut().push(p.to_owned());
                Ok(())
            });
            attempt += 1;
            if fast.is_some() || attempt == 20 || !servable(&roots[0]) {
                break (slow, slow_seen, fast, seen);
            }
        };
        if fast.is_some() {
            assert_eq!(
                *seen.borrow(),
                slow_seen,
                "{path}: the policy saw another path"
            );
        }
        // A kernel without openat2, RESOLVE_CACHED or unique mount ids, or a temporary
        // directory on a file system that is not served here (overlayfs in a container), never
        // serves here: the answers below are then the blocking path's alone.
        if !servable(&roots[0]) {
            assert!(fast.is_none());
            return (Some(slow.clone()), slow);
        }
        (fast, slow)
    }

    /// Whether `root` and its mount were learnt as served here.
    fn servable(root: &Path) -> bool {
        if UNSUPPORTED.load(Ordering::Relaxed) || learnt_roots().get(root) != Some(&true) {
            return false;
        }
        let dir = std::fs::File::open(root).unwrap();
        let mnt = cached_statx(&dir, StatxFlags::empty()).map(|st| st.stx_mnt_id);
        mnt.is_some_and(|m| matches!(mounts().get(&m), Some(Mount::Disk | Mount::Memory)))
    }

    #[test]
    fn a_plain_file_is_served_here_with_the_blocking_paths_answer() {
        let _serial = serial();
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
        let _serial = serial();
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
        // The same mount serves a plain file here: what follows is refused for what it is.
        let (fast, slow) = both(&roots, &path(d, "real/f.txt"), None, None, &limits);
        assert_eq!(fast, Some(slow));
        let never = |o: Opened<'_>| -> Result<(), String> { panic!("decided on {}", o.path) };
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
        // A root written with `.` or a trailing `/`: the blocking path spells the policy's path.
        let plain_file = path(d, "real/f.txt");
        for odd in [d.join("."), PathBuf::from(format!("{}/", d.display()))] {
            assert!(read(&[odd], &plain_file, None, None, &limits, never).is_none());
        }
        // ... but a root configured through the link serves its files here.
        let (fast, slow) = both(std::slice::from_ref(&alias), &via, None, None, &limits);
        assert_eq!(fast, Some(slow));
    }

    #[test]
    fn the_policy_refusal_and_the_errors_are_the_blocking_paths() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("secret"), "s").unwrap();
        std::fs::write(d.join("binary"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(d.join("big"), "0123456789").unwrap();
        let roots = root(d);
        let limits = FsLimits::default();
        let p = path(d, "secret");
        let deny = |_: Opened<'_>| Err("no secrets".to_owned());
        learn_mount_of(d);
        let fast = read(&roots, &p, None, None, &limits, deny);
        let slow = read_blocking(&roots, &p, None, None, &limits, deny);
        if servable(d) {
            assert!(
                matches!(fast, Some(Err(FsError::Denied { .. }))),
                "{fast:?}"
            );
            assert_eq!(fast, Some(slow));
        }
        let (fast, slow) = both(&roots, &path(d, "binary"), None, None, &limits);
        assert!(matches!(slow, Err(FsError::NotUtf8(_))));
        assert_eq!(fast, Some(slow));
        // Over the limit: reported by the blocking path, never decided here.
        let small = FsLimits {
            max_read_bytes: 4,
            ..FsLimits::default()
        };
        let never = |o: Opened<'_>| -> Result<(), String> { panic!("decided on {}", o.path) };
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
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let content = "cold\n".repeat(64 * 1024);
        let evict = |p: &Path| {
            let file = std::fs::File::open(p).unwrap();
            file.sync_all().unwrap();
            rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
            file
        };
        // Whether this file system drops pages at all, asked of another file: a `NOWAIT` read
        // that misses starts the readahead, which may bring the pages back before the read
        // under test (seen: this test failing on a fast disk).
        let other = dir.path().join("probe");
        std::fs::write(&other, &content).unwrap();
        let mut probe = [0u8; 1];
        let evicted = matches!(
            preadv2(
                evict(&other),
                &mut [IoSliceMut::new(&mut probe)],
                0,
                ReadWriteFlags::NOWAIT
            ),
            Err(Errno::AGAIN)
        );
        if !evicted {
            return;
        }
        learn_mount_of(dir.path());
        let roots = root(dir.path());
        let cold = dir.path().join("cold");
        std::fs::write(&cold, &content).unwrap();
        drop(evict(&cold));
        let p = cold.to_string_lossy().into_owned();
        let limits = FsLimits::default();
        assert!(read(&roots, &p, None, None, &limits, |_| Ok(())).is_none());
        assert_eq!(
            read_blocking(&roots, &p, None, None, &limits, |_| Ok(())),
            Ok(content)
        );
    }

    /// tmpfs has no `RWF_NOWAIT`: its files are read plainly here, once the blocking path has
    /// seen the mount; before that, nothing is asked of the mount here.
    #[test]
    fn a_tmpfs_mount_is_served_once_learnt() {
        let _serial = serial();
        let shm = Path::new("/dev/shm");
        let is_tmpfs = rustix::fs::statfs(shm).is_ok_and(|s| {
            #[allow(clippy::useless_conversion, reason = "f_type is i32 on some targets")]
            let t = i64::from(s.f_type);
            MEMORY_FILE_SYSTEMS.contains(&t)
        });
        if !is_tmpfs || UNSUPPORTED.load(Ordering::Relaxed) {
            return; // nothing to test on this machine
        }
        let dir = tempfile::tempdir_in(shm).unwrap();
        std::fs::write(dir.path().join("f"), "in memory\n").unwrap();
        let roots = root(dir.path());
        let p = path(dir.path(), "f");
        let limits = FsLimits::default();
        let mnt = cached_statx(
            std::fs::File::open(dir.path()).unwrap(),
            StatxFlags::empty(),
        )
        .unwrap()
        .stx_mnt_id;
        if !mounts().contains_key(&mnt) {
            let never = |o: Opened<'_>| -> Result<(), String> { panic!("decided on {}", o.path) };
            assert!(read(&roots, &p, None, None, &limits, never).is_none());
        }
        let (fast, slow) = both(&roots, &p, None, None, &limits);
        assert_eq!(mounts().get(&mnt), Some(&Mount::Memory));
        assert_eq!(fast, Some(slow));
    }

    /// A sparse file far larger than anything read here (with no limit configured) is left to
    /// the blocking path before any allocation.
    #[test]
    fn a_huge_file_is_left_to_the_blocking_path() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("small"), "s").unwrap();
        let roots = root(dir.path());
        let unlimited = FsLimits {
            max_read_bytes: u64::MAX,
            ..FsLimits::default()
        };
        let (fast, slow) = both(&roots, &path(dir.path(), "small"), None, None, &unlimited);
        assert_eq!(fast, Some(slow)); // the mount is learnt (where it is served at all)
        let huge = std::fs::File::create(dir.path().join("huge")).unwrap();
        huge.set_len(1 << 40).unwrap(); // a terabyte
        let never = |o: Opened<'_>| -> Result<(), String> { panic!("decided on {}", o.path) };
        let p = path(dir.path(), "huge");
        assert!(read(&roots, &p, None, None, &unlimited, never).is_none());
        // Just over the bound too.
        huge.set_len(MAX_BYTES + 1).unwrap();
        assert!(read(&roots, &p, None, None, &unlimited, never).is_none());
    }

    /// A mount the blocking path has not seen is never asked anything here, even a local one.
    #[test]
    fn an_unknown_mount_takes_the_blocking_path() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "local").unwrap();
        let roots = root(dir.path());
        let p = path(dir.path(), "f");
        let limits = FsLimits::default();
        let never = |o: Opened<'_>| -> Result<(), String> { panic!("decided on {}", o.path) };
        // A root the blocking path has not seen (on a mount it has): no lookup is made in it.
        let sibling = tempfile::tempdir().unwrap();
        learn_mount_of(sibling.path());
        assert!(read(&roots, &p, None, None, &limits, never).is_none());
        let (fast, slow) = both(&roots, &p, None, None, &limits);
        assert_eq!(fast, Some(slow.clone()));
        if !servable(dir.path()) {
            return;
        }
        // A known root on a mount that is not known (any more).
        mounts().clear();
        assert!(read(&roots, &p, None, None, &limits, never).is_none());
        let (fast, again) = both(&roots, &p, None, None, &limits);
        assert_eq!(fast, Some(again));
    }

    /// Let the blocking path see the mount `dir` is on (a read of a file of its own).
    fn learn_mount_of(dir: &Path) {
        let f = dir.join(".learn");
        std::fs::write(&f, "x").unwrap();
        let f = f.to_string_lossy().into_owned();
        let read = read_blocking(&root(dir), &f, None, None, &FsLimits::default(), |_| Ok(()));
        assert_eq!(read, Ok("x".to_owned()));
        std::fs::remove_file(&f).unwrap();
    }

    fn nix_mkfifo(p: &Path) {
        rustix::fs::mknodat(CWD, p, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
    }
}
