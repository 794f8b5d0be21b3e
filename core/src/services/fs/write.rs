//! `fs/write_text_file`: resolve, decide on the path that will be written, then replace the file
//! atomically through the handle of its resolved parent directory.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::PathBuf;

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions, Permissions};

use super::resolve::{Leaf, walk};
use super::{
    BUILTIN_REPOSITORY_RULE, FsError, FsLimits, Opened, absolute, check_regular, decided, io_msg,
    map_io, open_without_waiting, repository, resolve,
};

/// Writes (creates or replaces) a text file through cap-std, relative to the root that contains
/// `path`, and returns the number of bytes written, with no policy decision (see
/// [`write_text_file_checked`]).
///
/// Content larger than `limits.max_write_bytes` is `TooLarge` and nothing is touched. Missing
/// parent directories inside the root are created. The write is atomic (temporary file in the
/// same directory, then `rename`). If the target is a symlink, it is resolved inside the root and
/// the file it points to is replaced; a symlink (on the target or on any parent) that leads
/// outside the root is `OutsideRoots`, a dangling one is `Io`. An existing file that the host
/// could not open for writing (for example read-only) is not replaced; an existing file keeps its
/// permissions.
pub async fn write_text_file(
    roots: &[PathBuf],
    path: &str,
    content: &str,
    limits: &FsLimits,
) -> Result<u64, FsError> {
    write_text_file_checked(roots, path, content, limits, |_| Ok(())).await
}

/// [`write_text_file`], with `decide` called once on the absolute path the file will be written
/// to (`<resolved parent>/<name>`, or the resolution of a symlink at the target), before anything
/// is created; the file is then written through the handle of that resolved parent directory.
/// `Err(rule)` refuses the write with [`FsError::Denied`] and nothing is touched. `decide` runs
/// on a blocking-pool thread.
pub async fn write_text_file_checked<G>(
    roots: &[PathBuf],
    path: &str,
    content: &str,
    limits: &FsLimits,
    decide: G,
) -> Result<u64, FsError>
where
    G: FnOnce(Opened<'_>) -> Result<(), String> + Send + 'static,
{
    // Check the size before copying the content to the blocking pool.
    check_write_size(path, content, limits)?;
    let roots = roots.to_vec();
    let owned = path.to_owned();
    let content = content.to_owned();
    let limits = *limits;
    tokio::task::spawn_blocking(move || write_blocking(&roots, &owned, &content, &limits, decide))
        .await
        .map_err(|e| io_msg(path, &format!("fs worker failed: {e}")))?
}

/// A write that would create a `HEAD` git accepts, or land in a directory git takes for a
/// repository (whatever it is called, however it is reached), is refused (`repository.rs`).
/// Decided before the caller's decision (which commits the write), except for a path with a
/// `.git` component: the policy's built-in `.git` deny refuses that one under its own name.
fn refuse_repository(
    walked: &resolve::Walked,
    opened: Opened<'_>,
    name: &OsStr,
    content: &[u8],
    path: &str,
) -> Result<(), FsError> {
    let names = std::iter::once(opened.path).chain(opened.other_names.iter().map(String::as_str));
    if names
        .into_iter()
        .any(crate::permission::paths::has_git_component)
    {
        return Ok(());
    }
    let denied = || FsError::Denied {
        path: path.to_owned(),
        rule: BUILTIN_REPOSITORY_RULE.to_owned(),
    };
    if repository::is_head_name(name) && repository::is_head_ref(content) {
        return Err(denied());
    }
    if walked.repository().is_some() {
        return Err(denied());
    }
    Ok(())
}

fn check_write_size(path: &str, content: &str, limits: &FsLimits) -> Result<(), FsError> {
    let size = content.len() as u64;
    if size > limits.max_write_bytes {
        return Err(FsError::TooLarge {
            path: path.to_owned(),
            size,
            limit: limits.max_write_bytes,
            encoded_size: None,
        });
    }
    Ok(())
}

fn write_blocking<G>(
    roots: &[PathBuf],
    path: &str,
    content: &str,
    limits: &FsLimits,
    decide: G,
) -> Result<u64, FsError>
where
    G: FnOnce(Opened<'_>) -> Result<(), String>,
{
    check_write_size(path, content, limits)?;
    let r = resolve(roots, path)?;
    // `/root/dir/` names a directory, not a file called `dir`.
    if r.rel.as_os_str().is_empty() || path.ends_with(std::path::is_separator) {
        return Err(FsError::IsDirectory(path.to_owned()));
    }
    let walked = walk(r.root, &r.rel, path)?;
    let resolved = absolute(&r.root_path, &walked.rel());
    match &walked.leaf {
        Leaf::Directory => Err(FsError::IsDirectory(path.to_owned())),
        Leaf::Entry { name, meta } => {
            check_regular(path, meta.is_dir(), meta.is_file())?;
            let names = walked.other_names(None).map_err(|e| map_io(path, &e))?;
            let opened = Opened {
                path: &resolved,
                other_names: &names,
            };
            refuse_repository(&walked, opened, name, content.as_bytes(), path)?;
            decided(decide, path, opened)?;
            let dir = walked.dir();
            // Only replace a file the host could write in place (respects read-only files).
            let mut opts = OpenOptions::new();
            opts.write(true).follow(FollowSymlinks::No);
            let f = open_without_waiting(dir, name, &mut opts).map_err(|e| map_io(path, &e))?;
            let meta = f.metadata().map_err(|e| map_io(path, &e))?;
            check_regular(path, meta.is_dir(), meta.is_file())?;
            // Closed before the rename: Windows refuses to rename over a file that is open.
            drop(f);
            atomic_write(dir, name, content.as_bytes(), Some(meta.permissions()))
                .map_err(|e| map_io(path, &e))?;
            Ok(content.len() as u64)
        }
        Leaf::Missing { rest, via_link } => {
            if *via_link {
                // A dangling link: do not create its target (the old behaviour, and the link's
                // author chose that name, not the agent's request).
                return Err(io_msg(path, "symlink target does not exist"));
            }
            let Some((name, parents)) = rest.split_last() else {
                return Err(FsError::IsDirectory(path.to_owned()));
            };
            let names = walked.other_names(None).map_err(|e| map_io(path, &e))?;
            let opened = Opened {
                path: &resolved,
                other_names: &names,
            };
            refuse_repository(&walked, opened, name, content.as_bytes(), path)?;
            decided(decide, path, opened)?;
            let dir = create_dirs(walked.dir(), parents, path)?;
            let dir = dir.as_ref().unwrap_or(walked.dir());
            atomic_write(dir, name, content.as_bytes(), None).map_err(|e| map_io(path, &e))?;
            Ok(content.len() as u64)
        }
    }
}

/// Creates `names` one below the other under `base` and opens the last one (`None` when `names`
/// is empty). Each is opened without following links, so one swapped in meanwhile is refused
/// rather than followed: the file lands where the decision was made, or nowhere.
fn create_dirs(base: &Dir, names: &[OsString], path: &str) -> Result<Option<Dir>, FsError> {
    let mut current: Option<Dir> = None;
    for name in names {
        let parent = current.as_ref().unwrap_or(base);
        match parent.create_dir(name) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(map_io(path, &e)),
        }
        let dir = parent
            .open_dir_nofollow(name)
            .map_err(|e| map_io(path, &e))?;
        current = Some(dir);
    }
    Ok(current)
}

fn random_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    h.finish()
}

fn temp_name(name: &OsStr) -> OsString {
    // Keep the temp name well under NAME_MAX even for long file names.
    let stem: String = name.to_string_lossy().chars().take(64).collect();
    OsString::from(format!(".{stem}.acp-host-{:016x}.tmp", random_suffix()))
}

fn atomic_write(
    dir: &Dir,
    name: &OsStr,
    content: &[u8],
    perms: Option<Permissions>,
) -> io::Result<()> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    let mut attempt = 0;
    let (tmp, file) = loop {
        let tmp = temp_name(name);
        match dir.open_with(&tmp, &opts) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let result = fill_and_rename(dir, &tmp, file, name, content, perms);
    if result.is_err() {
        let _ = dir.remove_file(&tmp);
    }
    result
}

fn fill_and_rename(
    dir: &Dir,
    tmp: &OsStr,
    mut file: cap_std::fs::File,
    name: &OsStr,
    content: &[u8],
    perms: Option<Permissions>,
) -> io::Result<()> {
    if let Some(p) = perms {
        file.set_permissions(p)?;
    }
    file.write_all(content)?;
    file.sync_all()?;
    drop(file);
    dir.rename(tmp, dir, name)
}
