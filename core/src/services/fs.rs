//! Sandboxed `fs/*` service.
//!
//! Serves `fs/read_text_file` and `fs/write_text_file` confined to the session's roots (`cwd`,
//! `additionalDirectories` and any host-configured roots).
//!
//! Confinement is done in three steps:
//!
//! 1. [`locate`] works on the path text only: the path must be absolute, contain no NUL and no `..`
//!    component (`.` components are dropped), and fall under one of the roots (longest prefix
//!    wins). The connection actor runs this before anything is touched. On Windows the path is
//!    first read as Win32 reads it (`spelling.rs`: prefixes, case, streams, device names).
//! 2. The path is then resolved inside a [`cap_std::fs::Dir`] opened on that root, one component
//!    at a time (`resolve`): symlinks inside the root are followed, one leading outside it is
//!    refused, and every directory on the way is opened without following links, so the chain of
//!    handles spells the resolved path whatever happens to the tree meanwhile. On Windows each
//!    name is the one read back from its handle (an 8.3 alias is decided as the name it stands
//!    for).
//! 3. The caller's `decide` callback (the policy, in the host) sees that resolved path, and only
//!    then is the file read from, or written through, those same handles (the leaf is opened with
//!    `O_NOFOLLOW`; a write renames its temporary file inside the resolved parent directory).
//!    What is decided is what is opened; see "Links and the path that is opened" in
//!    docs/PERMISSIONS.md for the limits.
//!
//! Roots are used as given. A root reached through a symlink (for example `/tmp` on macOS) is
//! also matched in its canonical form, so an agent that sends either spelling is served; the
//! requested path itself is never canonicalised on the ambient filesystem. Roots that do not exist
//! (or are not directories) are skipped.
//!
//! Writes are atomic: the content goes to a temporary file in the target's directory
//! (`.<name>.acp-host-<random>.tmp`), which is then renamed over the target. A reader never sees
//! a half-written file, and no temporary file is left behind on failure.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, OpenOptions};

#[cfg(target_os = "linux")]
mod cached;
mod error;
mod locate;
#[cfg(target_os = "linux")]
mod mounts;
mod read;
mod repository;
mod resolve;
mod spelling;
mod write;

pub use error::FsError;
pub use locate::locate;
#[cfg(target_os = "linux")]
use locate::plain;
#[cfg(all(test, target_os = "linux"))]
use read::read_blocking;
#[cfg(all(test, target_os = "linux"))]
use read::text_of;
pub(crate) use read::{
    CACHED_MAX_BYTES, OpenedRead, check_encoded, content_range, open_read, read_cached_bytes,
};
pub use read::{read_text_file, read_text_file_checked};
pub use repository::BUILTIN_REPOSITORY_RULE;
pub use write::{write_text_file, write_text_file_checked};

/// Default per-request size limit for reads and writes: 16 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Size limits for one `fs/*` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsLimits {
    /// What one read may answer with: the `content` of its answer as it travels, as JSON text
    /// (escapes included, quotes not), is at most this many bytes, and so is the file. A larger
    /// file is refused before it is read; a file whose content takes more as JSON text (line
    /// breaks, quotes and backslashes take two bytes, other control characters six) is refused
    /// once read, before its answer is made (`TooLarge`, with `encoded_size`). The host may
    /// lower it for its agents: see `HostConfig::max_outbound_bytes`.
    pub max_read_bytes: u64,
    /// Content larger than this is not written (`TooLarge`).
    pub max_write_bytes: u64,
}

impl Default for FsLimits {
    fn default() -> Self {
        Self {
            max_read_bytes: DEFAULT_MAX_BYTES,
            max_write_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// A request path resolved to an open root directory and a path relative to it.
struct Resolved {
    root: Dir,
    /// The root as spelt in the candidate that matched (as configured, or canonical).
    root_path: PathBuf,
    rel: PathBuf,
}

/// Opens the roots that exist, then locates `path` among them (as given, and in canonical form
/// for roots reached through a symlink).
fn resolve(roots: &[PathBuf], path: &str) -> Result<Resolved, FsError> {
    let mut live: Vec<PathBuf> = Vec::with_capacity(roots.len());
    let mut dirs: Vec<Dir> = Vec::with_capacity(roots.len());
    for root in roots {
        if !root.is_absolute() {
            continue;
        }
        if let Ok(dir) = Dir::open_ambient_dir(root, cap_std::ambient_authority()) {
            live.push(root.clone());
            dirs.push(dir);
        }
    }
    let n = live.len();
    let mut candidates = live.clone();
    candidates.extend(
        live.iter()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone())),
    );
    let (i, rel) = locate(&candidates, path)?;
    let root_path = candidates.swap_remove(i);
    let root = dirs.swap_remove(i % n);
    Ok(Resolved {
        root,
        root_path,
        rel,
    })
}

/// The absolute path `rel` names under `root_path`, as the policy sees it.
fn absolute(root_path: &Path, rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        return root_path.to_string_lossy().into_owned();
    }
    root_path.join(rel).to_string_lossy().into_owned()
}

/// What a request will open, for the caller's decision.
#[derive(Debug, Clone, Copy)]
pub struct Opened<'a> {
    /// The absolute path the request resolved to inside its root (links resolved): the path
    /// that is opened. Allow rules need it (and the requested path) to match.
    pub path: &'a str,
    /// Other names of the same file: reached through a mount point inside the root (Linux), its
    /// path from the mount's source. Restrictive rules are decided on these too.
    pub other_names: &'a [String],
}

/// Run the caller's decision on what will be opened.
fn decided<G>(decide: G, path: &str, opened: Opened<'_>) -> Result<(), FsError>
where
    G: FnOnce(Opened<'_>) -> Result<(), String>,
{
    decide(opened).map_err(|rule| FsError::Denied {
        path: path.to_owned(),
        rule,
    })
}

fn is_escape(e: &io::Error) -> bool {
    // cap-std reports a path that leads outside its `Dir` (a `..` past the root, an absolute
    // symlink, a symlink pointing outside) as PermissionDenied with this message.
    e.kind() == io::ErrorKind::PermissionDenied
        && e.to_string().contains("outside of the filesystem")
}

fn map_io(path: &str, e: &io::Error) -> FsError {
    if is_escape(e) {
        return FsError::OutsideRoots(path.to_owned());
    }
    match e.kind() {
        io::ErrorKind::NotFound => FsError::NotFound(path.to_owned()),
        io::ErrorKind::IsADirectory => FsError::IsDirectory(path.to_owned()),
        _ => FsError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        },
    }
}

fn io_msg(path: &str, message: &str) -> FsError {
    FsError::Io {
        path: path.to_owned(),
        message: message.to_owned(),
    }
}

/// Resolves `path` inside its root as far as it exists (symlinks followed, none may lead out of
/// the root; what does not exist yet is appended as given) and returns the absolute path, in the
/// spelling of the root that matched. For requests served by someone who opens by path (the
/// embedder, a terminal's working directory): decide on this path too. If no root containing
/// `path` exists on disk, there is nothing to resolve and `path` is returned (lexically checked).
pub async fn resolve_in_roots(roots: &[PathBuf], path: &str) -> Result<String, FsError> {
    Ok(resolve_target(roots, path).await?.path)
}

/// What [`resolve_target`] found: the path that will be opened and what else is known of it.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// As [`resolve_in_roots`] returns it.
    pub path: String,
    /// [`Opened::other_names`].
    pub other_names: Vec<String>,
    /// A directory on the way that git takes for a repository (see
    /// [`BUILTIN_REPOSITORY_RULE`]): writes there are refused.
    pub in_repository: bool,
}

impl Target {
    /// The refusal of a write of `content` here for holding repository metadata, if any
    /// (for writes served by someone who opens by path).
    pub fn refuse_write(&self, requested: &str, content: &str) -> Result<(), FsError> {
        let names =
            std::iter::once(self.path.as_str()).chain(self.other_names.iter().map(String::as_str));
        if names
            .into_iter()
            .any(crate::permission::paths::has_git_component)
        {
            return Ok(()); // the policy's `.git` deny decides under its own name
        }
        let name = Path::new(&self.path).file_name().unwrap_or_default();
        if self.in_repository
            || (repository::is_head_name(name) && repository::is_head_ref(content.as_bytes()))
        {
            return Err(FsError::Denied {
                path: requested.to_owned(),
                rule: BUILTIN_REPOSITORY_RULE.to_owned(),
            });
        }
        Ok(())
    }
}

/// [`resolve_in_roots`], with the other names of the file and whether it is inside a directory
/// git takes for a repository.
pub async fn resolve_target(roots: &[PathBuf], path: &str) -> Result<Target, FsError> {
    locate(roots, path)?;
    let roots = roots.to_vec();
    let owned = path.to_owned();
    tokio::task::spawn_blocking(move || match resolve(&roots, &owned) {
        Ok(r) => {
            let walked = resolve::walk(r.root, &r.rel, &owned)?;
            Ok(Target {
                path: absolute(&r.root_path, &walked.rel()),
                other_names: walked.other_names(None).map_err(|e| map_io(&owned, &e))?,
                in_repository: walked.repository().is_some(),
            })
        }
        Err(FsError::OutsideRoots(_)) => Ok(Target {
            path: owned,
            ..Target::default()
        }),
        Err(e) => Err(e),
    })
    .await
    .map_err(|e| io_msg(path, &format!("fs worker failed: {e}")))?
}

/// How long, in all, an open waits for another process to give back its lease on the file.
/// Holders that cooperate (an NFS server recalling a delegation, Samba breaking an oplock) answer
/// the break within milliseconds; one that does not would otherwise hold the open for the
/// kernel's `lease-break-time` (45 s by default).
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Open the leaf without blocking (`O_NONBLOCK`): a FIFO swapped in after the type check opens at
/// once and is refused by the check on the opened file (a write-only open of it fails with
/// `ENXIO`), instead of holding a blocking thread until someone opens its other end. Local file
/// systems and the NFS and CIFS clients ignore the flag on regular files; a FUSE daemon sees it
/// and may answer `EAGAIN` to a read (refused with `io`). Leases: see [`retry_while_leased`].
fn open_without_waiting(
    dir: &Dir,
    name: &OsStr,
    opts: &mut OpenOptions,
) -> io::Result<cap_std::fs::File> {
    use cap_fs_ext::OpenOptionsSyncExt;
    opts.nonblock(true);
    retry_while_leased(|| dir.open_with(name, opts))
}

/// Run a non-blocking `open` again while it fails with `WouldBlock`, for at most [`LEASE_WAIT`]:
/// that is a file under another process's lease, and the failed open has started the lease
/// break. Blocks the calling thread (call it off the runtime's workers).
pub(crate) fn retry_while_leased<T>(mut open: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let deadline = std::time::Instant::now() + LEASE_WAIT;
    loop {
        match open() {
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

fn check_regular(path: &str, is_dir: bool, is_file: bool) -> Result<(), FsError> {
    if is_dir {
        Err(FsError::IsDirectory(path.to_owned()))
    } else if !is_file {
        Err(io_msg(path, "not a regular file"))
    } else {
        Ok(())
    }
}
