//! Sandboxed `fs/*` service.
//!
//! Serves `fs/read_text_file` and `fs/write_text_file` confined to the session's roots (`cwd`,
//! `additionalDirectories` and any host-configured roots).
//!
//! Confinement is done in three steps:
//!
//! 1. [`locate`] works on the path text only: the path must be absolute, contain no NUL and no `..`
//!    component (`.` components are dropped), and fall under one of the roots (longest prefix
//!    wins). The connection actor runs this before anything is touched.
//! 2. The path is then resolved inside a [`cap_std::fs::Dir`] opened on that root, one component
//!    at a time (`resolve`): symlinks inside the root are followed, one leading outside it is
//!    refused, and every directory on the way is opened without following links, so the chain of
//!    handles spells the resolved path whatever happens to the tree meanwhile.
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

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions, Permissions};
use serde_json::{Value, json};

#[cfg(target_os = "linux")]
mod cached;
#[cfg(target_os = "linux")]
mod mounts;
mod repository;
mod resolve;

pub use repository::BUILTIN_REPOSITORY_RULE;
use resolve::Leaf;

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

/// Why an `fs/*` request was refused or failed. Every variant carries the path as the agent sent
/// it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// The path is not absolute (ACP requires absolute paths).
    #[error("path is not absolute: {0}")]
    NotAbsolute(String),
    /// The path is outside every root of the session, contains a `..` component or a NUL, or a
    /// symlink on it leads outside its root.
    #[error("path is outside the session's roots: {0}")]
    OutsideRoots(String),
    /// The file (or a directory on its path) does not exist.
    #[error("Resource not found: {0}")]
    NotFound(String),
    /// The file (read) or the content (write) is larger than the configured limit; or, with
    /// `encoded_size`, the file is not but what a read would answer with is, as JSON text.
    #[error("{path} is {size} bytes{}, over the {limit}-byte limit", encoded_note(*.encoded_size))]
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
        /// The size of the read's content as JSON text, when that is what is over the limit.
        encoded_size: Option<u64>,
    },
    /// The file is not valid UTF-8.
    #[error("file is not valid UTF-8: {0}")]
    NotUtf8(String),
    /// The path names a directory.
    #[error("path is a directory: {0}")]
    IsDirectory(String),
    /// Any other I/O failure (permission denied, not a regular file, dangling symlink, ...).
    #[error("I/O error on {path}: {message}")]
    Io { path: String, message: String },
    /// The caller's decision (the host's policy) refused the path once resolved; `rule` names
    /// the rule.
    #[error("denied by the host's policy: {rule}")]
    Denied { path: String, rule: String },
}

impl FsError {
    /// JSON-RPC error for the agent, as `(code, message, data)`.
    ///
    /// - `NotFound` → `-32002` `"Resource not found: <path>"`, data `{"uri": "file://<path>"}`.
    /// - `NotAbsolute`, `OutsideRoots`, `TooLarge`, `NotUtf8`, `IsDirectory` → `-32602` (invalid
    ///   params), data `{"reason": <kind>, "path": <path>}` (plus `size` and `limit` for
    ///   `TooLarge`, and `encodedSize` when the content as JSON text is what is over the limit).
    /// - `Io` → `-32603` (internal error), data `{"reason": "io", "path": <path>}`.
    /// - `Denied` → `-32602`, data `{"reason": "denied", "rule": <rule>}`.
    pub fn to_rpc(&self) -> (i64, String, Option<Value>) {
        let message = self.to_string();
        match self {
            FsError::NotFound(path) => (-32002, message, Some(json!({ "uri": file_uri(path) }))),
            FsError::TooLarge {
                path,
                size,
                limit,
                encoded_size,
            } => {
                let mut data = json!({
                    "reason": self.kind(),
                    "path": path,
                    "size": size,
                    "limit": limit,
                });
                if let Some(encoded) = encoded_size {
                    data["encodedSize"] = json!(encoded);
                }
                (-32602, message, Some(data))
            }
            FsError::NotAbsolute(path)
            | FsError::OutsideRoots(path)
            | FsError::NotUtf8(path)
            | FsError::IsDirectory(path) => (
                -32602,
                message,
                Some(json!({ "reason": self.kind(), "path": path })),
            ),
            FsError::Io { path, .. } => (
                -32603,
                message,
                Some(json!({ "reason": self.kind(), "path": path })),
            ),
            FsError::Denied { rule, .. } => (
                -32602,
                message,
                Some(json!({ "reason": self.kind(), "rule": rule })),
            ),
        }
    }

    /// Stable snake_case kind: `not_absolute`, `outside_roots`, `not_found`, `too_large`,
    /// `not_utf8`, `is_directory`, `io`, `denied`.
    pub fn kind(&self) -> &'static str {
        match self {
            FsError::NotAbsolute(_) => "not_absolute",
            FsError::OutsideRoots(_) => "outside_roots",
            FsError::NotFound(_) => "not_found",
            FsError::TooLarge { .. } => "too_large",
            FsError::NotUtf8(_) => "not_utf8",
            FsError::IsDirectory(_) => "is_directory",
            FsError::Io { .. } => "io",
            FsError::Denied { .. } => "denied",
        }
    }

    /// The path the error is about, as the agent sent it.
    pub fn path(&self) -> &str {
        match self {
            FsError::NotAbsolute(p)
            | FsError::OutsideRoots(p)
            | FsError::NotFound(p)
            | FsError::NotUtf8(p)
            | FsError::IsDirectory(p) => p,
            FsError::TooLarge { path, .. }
            | FsError::Io { path, .. }
            | FsError::Denied { path, .. } => path,
        }
    }
}

fn encoded_note(encoded: Option<u64>) -> String {
    encoded.map_or_else(String::new, |e| format!(" ({e} bytes as JSON text)"))
}

fn file_uri(path: &str) -> String {
    if path.starts_with('/') {
        format!("file://{path}")
    } else {
        // Windows drive paths: file:///C:/...
        format!("file:///{}", path.replace('\\', "/"))
    }
}

/// Lexical normalisation: drops `.` components; `None` if there is a `..` component.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => return None,
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

/// Which root (longest matching prefix, compared on normalised paths) contains `path`, and the
/// path relative to it (empty when `path` is the root itself).
///
/// Pure and lexical: nothing is read from the filesystem. A path that is not absolute is
/// `NotAbsolute`; a path containing `..` components or a NUL, or under no root, is
/// `OutsideRoots`. Roots that are not absolute or contain `..` never match.
pub fn locate(roots: &[PathBuf], path: &str) -> Result<(usize, PathBuf), FsError> {
    if let Some(found) = locate_plain(roots, path) {
        return found.ok_or_else(|| FsError::OutsideRoots(path.to_owned()));
    }
    locate_general(roots, path)
}

/// Already in normal form (Unix): absolute, no empty, `.` or `..` component, no trailing `/`
/// (but `/` itself), no NUL. The components of such a path are its `/`-separated pieces, so a
/// prefix test on the text agrees with one on [`normalise`]d paths.
fn plain(p: &str) -> bool {
    cfg!(unix)
        && p.starts_with('/')
        && !p.contains('\0')
        && (p == "/"
            || (!p.ends_with('/')
                && p[1..]
                    .split('/')
                    .all(|c| !c.is_empty() && c != "." && c != "..")))
}

/// [`locate`] on the text when the path and every root are [`plain`] (the usual case: no
/// allocation but the result); `None` otherwise.
fn locate_plain(roots: &[PathBuf], path: &str) -> Option<Option<(usize, PathBuf)>> {
    if !plain(path) {
        return None;
    }
    let mut best: Option<(usize, usize, &str)> = None;
    for (i, root) in roots.iter().enumerate() {
        let root = root.to_str().filter(|r| plain(r))?;
        let rel = if path == root {
            Some("")
        } else if root == "/" {
            Some(&path[1..])
        } else {
            path.strip_prefix(root)
                .and_then(|rest| rest.strip_prefix('/'))
        };
        let Some(rel) = rel else { continue };
        let depth = if root == "/" {
            1
        } else {
            root.matches('/').count() + 1
        };
        if best.is_none_or(|(_, d, _)| depth > d) {
            best = Some((i, depth, rel));
        }
    }
    Some(best.map(|(i, _, rel)| (i, PathBuf::from(rel))))
}

fn locate_general(roots: &[PathBuf], path: &str) -> Result<(usize, PathBuf), FsError> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(FsError::NotAbsolute(path.to_owned()));
    }
    if path.contains('\0') {
        return Err(FsError::OutsideRoots(path.to_owned()));
    }
    let norm = normalise(p).ok_or_else(|| FsError::OutsideRoots(path.to_owned()))?;
    let mut best: Option<(usize, usize, PathBuf)> = None;
    for (i, root) in roots.iter().enumerate() {
        if !root.is_absolute() {
            continue;
        }
        let Some(root_norm) = normalise(root) else {
            continue;
        };
        let Ok(rel) = norm.strip_prefix(&root_norm) else {
            continue;
        };
        let depth = root_norm.components().count();
        if best.as_ref().is_none_or(|(_, d, _)| depth > *d) {
            best = Some((i, depth, rel.to_path_buf()));
        }
    }
    best.map(|(i, _, rel)| (i, rel))
        .ok_or_else(|| FsError::OutsideRoots(path.to_owned()))
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

/// Reads a text file through cap-std, relative to the root that contains `path`, with no policy
/// decision (see [`read_text_file_checked`]).
///
/// Files larger than `limits.max_read_bytes` are `TooLarge` (checked on the metadata and again
/// while reading, in case the file grows), and so is text that takes more than that as JSON
/// text (the size of the `content` an agent's read would get; `encoded_size` says how much);
/// invalid UTF-8 is `NotUtf8`. `line` is the 1-based first
/// line (0 is treated as 1) and `limit` the maximum number of lines; lines keep their `\n`. A
/// `line` past the end of the file gives an empty string.
pub async fn read_text_file(
    roots: &[PathBuf],
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
    limits: &FsLimits,
) -> Result<String, FsError> {
    read_text_file_checked(roots, path, line, limit, limits, |_| Ok(())).await
}

/// [`read_text_file`], with `decide` called once on the absolute path the request resolved to
/// inside its root (symlinks followed), after the file is opened and before it is read; the
/// content comes from that open file. `Err(rule)` refuses the read with [`FsError::Denied`].
/// `decide` runs on a blocking-pool thread.
pub async fn read_text_file_checked<G>(
    roots: &[PathBuf],
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
    limits: &FsLimits,
    decide: G,
) -> Result<String, FsError>
where
    G: FnOnce(Opened<'_>) -> Result<(), String> + Send + 'static,
{
    let roots = roots.to_vec();
    let owned = path.to_owned();
    let limits = *limits;
    tokio::task::spawn_blocking(move || read_blocking(&roots, &owned, line, limit, &limits, decide))
        .await
        .map_err(|e| io_msg(path, &format!("fs worker failed: {e}")))?
}

/// The file a read names, whole and as bytes (not checked to be UTF-8 yet: see
/// [`content_range`]), read on the calling thread when the kernel can serve every step from
/// memory (see `fs/cached.rs`) and the file is at most `max` bytes and [`CACHED_MAX_BYTES`];
/// `None` when it cannot (or off Linux): take the blocking path, which answers the same.
/// `decide` may have been called when `None` comes back (a page-cache miss is only seen while
/// reading); the blocking path decides again.
pub(crate) fn read_cached_bytes<G>(
    roots: &[PathBuf],
    path: &str,
    max: u64,
    decide: G,
) -> Option<Result<Vec<u8>, FsError>>
where
    G: FnOnce(Opened<'_>) -> Result<(), String>,
{
    #[cfg(target_os = "linux")]
    return cached::read_bytes(roots, path, max, decide);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (roots, path, max, decide);
        None
    }
}

/// The largest file [`read_cached_bytes`] reads.
pub(crate) const CACHED_MAX_BYTES: u64 = 1 << 20;

/// [`read_text_file_checked`] on the calling thread, which may block on the file system: for
/// callers already on a blocking thread.
pub(crate) fn read_blocking<G>(
    roots: &[PathBuf],
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
    limits: &FsLimits,
    decide: G,
) -> Result<String, FsError>
where
    G: FnOnce(Opened<'_>) -> Result<(), String>,
{
    let max = limits.max_read_bytes;
    let opened = open_read(roots, path, max, decide)?;
    let bytes = opened.read_all(max)?.ok_or_else(|| FsError::TooLarge {
        // The file grew past the limit while we were reading it.
        path: path.to_owned(),
        size: max.saturating_add(1),
        limit: max,
        encoded_size: None,
    })?;
    text_of(bytes, path, line, limit, max)
}

/// A file opened for reading on the agent's behalf: resolved inside its root, allowed by the
/// caller's decision on the resolved path, a regular file no larger than the limit it was
/// opened with. Read through this handle only: what was decided is what is read.
#[derive(Debug)]
pub(crate) struct OpenedRead {
    file: cap_std::fs::File,
    size: u64,
    path: String,
}

/// Resolve, open and decide as every read does (see the module's documentation); a file larger
/// than `max` bytes is `TooLarge` before anything is read.
pub(crate) fn open_read<G>(
    roots: &[PathBuf],
    path: &str,
    max: u64,
    decide: G,
) -> Result<OpenedRead, FsError>
where
    G: FnOnce(Opened<'_>) -> Result<(), String>,
{
    let r = resolve(roots, path)?;
    #[cfg(target_os = "linux")]
    cached::learn_root(&r.root_path, &r.root);
    if r.rel.as_os_str().is_empty() {
        return Err(FsError::IsDirectory(path.to_owned()));
    }
    let walked = resolve::walk(r.root, &r.rel, path)?;
    let resolved = absolute(&r.root_path, &walked.rel());
    let name = match &walked.leaf {
        Leaf::Directory => return Err(FsError::IsDirectory(path.to_owned())),
        Leaf::Missing { .. } => return Err(FsError::NotFound(path.to_owned())),
        // Refuse directories and special files before opening: opening a FIFO for reading
        // would block until a writer shows up. (The opened file is checked again.)
        Leaf::Entry { name, meta } => {
            check_regular(path, meta.is_dir(), meta.is_file())?;
            name
        }
    };
    let mut opts = OpenOptions::new();
    opts.read(true).follow(FollowSymlinks::No);
    let file = open_without_waiting(walked.dir(), name, &mut opts).map_err(|e| map_io(path, &e))?;
    let meta = file.metadata().map_err(|e| map_io(path, &e))?;
    check_regular(path, meta.is_dir(), meta.is_file())?;
    let names = walked
        .other_names(Some(&file))
        .map_err(|e| map_io(path, &e))?;
    let opened = Opened {
        path: &resolved,
        other_names: &names,
    };
    decided(decide, path, opened)?;
    if meta.len() > max {
        return Err(FsError::TooLarge {
            path: path.to_owned(),
            size: meta.len(),
            limit: max,
            encoded_size: None,
        });
    }
    #[cfg(target_os = "linux")]
    cached::learn(&file);
    Ok(OpenedRead {
        file,
        size: meta.len(),
        path: path.to_owned(),
    })
}

impl OpenedRead {
    /// The file's size when it was opened.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The path as the agent sent it.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The whole file, from its start, if it holds at most `cap` bytes (`None`: it holds more,
    /// it grew since it was opened). The buffer is allocated once for the size the file had when
    /// opened (at most `cap`), and grows once, to `cap`, only if the file grew meanwhile; an
    /// allocation that cannot be made is an `io` error, never an abort.
    pub(crate) fn read_all(&self, cap: u64) -> Result<Option<Vec<u8>>, FsError> {
        use std::io::{Seek, SeekFrom};
        let io = |e: io::Error| map_io(&self.path, &e);
        let mut f = &self.file;
        f.seek(SeekFrom::Start(0)).map_err(io)?;
        let first = self.size.min(cap);
        // A large buffer comes from the buffer thread (see `buffers`), exactly as large as
        // the file says it is.
        let mut buf = usize::try_from(first)
            .ok()
            .and_then(crate::buffers::with_capacity)
            .ok_or_else(|| io_msg(&self.path, "out of memory for the file's content"))?;
        f.take(first).read_to_end(&mut buf).map_err(io)?;
        let mut probe = [0u8; 1];
        if read_some(f, &mut probe).map_err(io)? == 0 {
            return Ok(Some(buf));
        }
        // More than the file held when it was opened (or a file whose size says nothing, as in
        // /proc): read on, up to `cap`.
        if buf.len() as u64 >= cap {
            return Ok(None);
        }
        let more = cap - buf.len() as u64;
        reserve(&mut buf, more, &self.path)?;
        buf.push(probe[0]);
        f.take(cap - buf.len() as u64)
            .read_to_end(&mut buf)
            .map_err(io)?;
        if read_some(f, &mut probe).map_err(io)? == 0 {
            Ok(Some(buf))
        } else {
            Ok(None)
        }
    }
}

/// Room for `more` bytes in `buf`, exactly, or an `io` error (never an abort).
fn reserve(buf: &mut Vec<u8>, more: u64, path: &str) -> Result<(), FsError> {
    usize::try_from(more)
        .ok()
        .and_then(|more| buf.try_reserve_exact(more).ok())
        .ok_or_else(|| io_msg(path, "out of memory for the file's content"))
}

fn read_some(mut f: &cap_std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match f.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// The range of `bytes` a read answers with: `line` is the 1-based first line (0 counts as 1),
/// `limit` the number of lines, each with its `\n`; a `line` past the end gives an empty range.
/// The whole file must be UTF-8 (`NotUtf8`), whatever part of it is asked for.
pub(crate) fn content_range(
    bytes: &[u8],
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<std::ops::Range<usize>, FsError> {
    if std::str::from_utf8(bytes).is_err() {
        return Err(FsError::NotUtf8(path.to_owned()));
    }
    // After the `n`th newline from `from` (the end when there are fewer).
    let after_lines = |from: usize, n: u64| -> usize {
        let mut at = from;
        for _ in 0..n {
            match bytes[at..].iter().position(|&b| b == b'\n') {
                Some(i) => at += i + 1,
                None => return bytes.len(),
            }
        }
        at
    };
    let start = after_lines(0, u64::from(line.unwrap_or(1).max(1) - 1));
    let end = match limit {
        Some(n) => after_lines(start, u64::from(n)),
        None => bytes.len(),
    };
    Ok(start..end)
}

/// `TooLarge` when `content` (of a file of `size` bytes) is over `max` bytes as JSON text,
/// which is how it travels: the limit on a read is the size of its answer's `content`.
pub(crate) fn check_encoded(
    path: &str,
    size: usize,
    content: &[u8],
    max: u64,
) -> Result<usize, FsError> {
    let encoded = crate::wire::escape::escaped_len(content);
    if encoded as u64 > max {
        return Err(FsError::TooLarge {
            path: path.to_owned(),
            size: size as u64,
            limit: max,
            encoded_size: Some(encoded as u64),
        });
    }
    Ok(encoded)
}

/// The text a read answers with, from the file's bytes: UTF-8 (the whole file), the lines asked
/// for, at most `max` bytes as JSON text. No copy: the buffer becomes the string.
fn text_of(
    mut bytes: Vec<u8>,
    path: &str,
    line: Option<u32>,
    limit: Option<u32>,
    max: u64,
) -> Result<String, FsError> {
    let range = content_range(&bytes, path, line, limit)?;
    check_encoded(path, bytes.len(), &bytes[range.clone()], max)?;
    bytes.truncate(range.end);
    bytes.drain(..range.start);
    String::from_utf8(bytes).map_err(|_| FsError::NotUtf8(path.to_owned()))
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
    let walked = resolve::walk(r.root, &r.rel, path)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: the lines of the text, each with its `\n`, from `line` (1-based), `limit`
    /// of them.
    fn slice_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
        let lines = text
            .split_inclusive('\n')
            .skip(line.unwrap_or(1).max(1) as usize - 1);
        match limit {
            Some(n) => lines.take(n as usize).collect(),
            None => lines.collect(),
        }
    }

    #[test]
    fn the_range_is_the_lines_asked_for() {
        for text in ["a\nb\nc\n", "x\ny", "", "\n\n", "one"] {
            for line in [None, Some(0), Some(1), Some(2), Some(3), Some(9)] {
                for limit in [None, Some(0), Some(1), Some(2), Some(5)] {
                    let range = content_range(text.as_bytes(), "p", line, limit).unwrap();
                    assert_eq!(
                        &text[range],
                        slice_lines(text, line, limit),
                        "{text:?} {line:?} {limit:?}"
                    );
                }
            }
        }
        assert_eq!(
            content_range(b"ok\n\xff", "p", Some(1), Some(1)),
            Err(FsError::NotUtf8("p".into())),
            "the whole file is UTF-8 or none of it is read"
        );
    }

    /// The text fast path answers as the component-wise one, on every combination of a small
    /// alphabet of pieces (empty, `.`, `..`, names that are prefixes of each other).
    #[test]
    fn plain_locate_agrees_with_the_general_one() {
        let pieces = ["", ".", "..", "a", "ab", "b"];
        let mut paths = vec![
            "/".to_owned(),
            String::new(),
            "a".to_owned(),
            "/a/x\0y".to_owned(),
        ];
        for x in pieces {
            for y in pieces {
                paths.push(format!("/{x}"));
                paths.push(format!("/{x}/{y}"));
                paths.push(format!("/{x}/{y}/"));
                for z in pieces {
                    paths.push(format!("/{x}/{y}/{z}"));
                }
            }
        }
        let root_sets: Vec<Vec<PathBuf>> = vec![
            vec![PathBuf::from("/")],
            vec![PathBuf::from("/a")],
            vec![PathBuf::from("/a"), PathBuf::from("/a/b")],
            vec![PathBuf::from("/a/b"), PathBuf::from("/a")],
            vec![PathBuf::from("/ab"), PathBuf::from("/a/ab")],
            vec![PathBuf::from("/a"), PathBuf::from("/a")],
            vec![PathBuf::from("/"), PathBuf::from("/b")],
        ];
        let mut fast = 0;
        for roots in &root_sets {
            for path in &paths {
                let general = locate_general(roots, path);
                if let Some(plain) = locate_plain(roots, path) {
                    fast += 1;
                    assert_eq!(plain, general.clone().ok(), "{path} in {roots:?}");
                }
                assert_eq!(locate(roots, path), general, "{path} in {roots:?}");
            }
        }
        assert!(fast > 100, "the fast path was taken {fast} times");
    }

    #[test]
    fn locate_prefers_longest_root() {
        let roots = vec![PathBuf::from("/a"), PathBuf::from("/a/b")];
        assert_eq!(locate(&roots, "/a/b/c").unwrap(), (1, PathBuf::from("c")));
        assert_eq!(locate(&roots, "/a/./x").unwrap(), (0, PathBuf::from("x")));
        assert_eq!(locate(&roots, "/a/bc").unwrap(), (0, PathBuf::from("bc")));
        assert_eq!(locate(&roots, "/a").unwrap(), (0, PathBuf::new()));
        assert!(matches!(
            locate(&roots, "/a/b/../c"),
            Err(FsError::OutsideRoots(_))
        ));
        assert!(matches!(
            locate(&roots, "a/b"),
            Err(FsError::NotAbsolute(_))
        ));
        assert!(matches!(
            locate(&roots, "/a/x\0y"),
            Err(FsError::OutsideRoots(_))
        ));
        assert!(matches!(
            locate(&roots, "/ab"),
            Err(FsError::OutsideRoots(_))
        ));
    }
}
