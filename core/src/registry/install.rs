//! Installing a `binary` distribution, only when the embedder asks: fetch the archive through a
//! [`Fetcher`], check its sha256, extract it into a staging directory and rename that into
//! `<cache_dir>/<id>/<version>/<platform>/`.
//!
//! The steps, and what each guarantees:
//! 1. An entry without `sha256` is refused before anything is fetched: a download is never run
//!    unverified. So is a `cmd` that is absolute or climbs out with `..`.
//! 2. The archive is written to `<cache_dir>/<id>/<version>/.download-…` (bounded by
//!    [`InstallLimits::max_archive_bytes`]) while it is hashed; a digest other than the registry's
//!    stops the install before a single entry is extracted.
//! 3. Entries are extracted into `<cache_dir>/<id>/<version>/.tmp-<platform>-…` under the rules of
//!    the `archive` module (no links, no escapes, bounded, modes limited).
//! 4. The `cmd` must be a regular file of the archive; it is made executable.
//! 5. The staging directory is renamed onto the install directory: the install directory only
//!    ever appears complete, so a crash leaves at worst a `.tmp-…`/`.download-…` leftover, never a
//!    half install that looks installed. On any error the staging files are removed.
//!
//! An existing install directory means installed: a second install of the same version does not
//! fetch anything.
//!
//! Everything here blocks (file I/O, decompression, and whatever the fetcher does): from async
//! code, call it in `tokio::task::spawn_blocking`.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::archive::{self, ExtractError};
use super::{Platform, RegistryAgent, cmd_path, invalid};
use crate::{Error, Result};

/// Default bound on the downloaded archive: 1 GiB.
pub const DEFAULT_MAX_ARCHIVE_BYTES: u64 = 1 << 30;
/// Default bound on the bytes extracted from an archive: 1 GiB.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Default bound on the entries of an archive.
pub const DEFAULT_MAX_ENTRIES: u64 = 100_000;
/// Default bound on the directories an extraction creates (named by entries or implied by their
/// paths, counted once each).
pub const DEFAULT_MAX_DIRS: u64 = 10_000;
/// Default bound on the components of an entry's path (`bin/tool` has 2).
pub const DEFAULT_MAX_DEPTH: u64 = 64;
/// Longest component of an entry's path, in bytes (`NAME_MAX` of common file systems).
pub const MAX_ENTRY_COMPONENT_BYTES: usize = 255;
/// Longest entry path, in bytes, once normalized (`./`, `//` dropped): with the install directory
/// in front it stays well under Linux's 4,096-byte `PATH_MAX` for any reasonable cache directory.
pub const MAX_ENTRY_PATH_BYTES: usize = 1024;

/// Bounds of one install. Exceeding one is `invalid_config` naming the limit; nothing is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstallLimits {
    /// Bytes the fetcher may write (the archive as downloaded).
    pub max_archive_bytes: u64,
    /// Bytes written by extraction, all files together (counted, not taken from headers).
    pub max_total_bytes: u64,
    /// Entries of the archive (files, directories and headers together).
    pub max_entries: u64,
    /// Directories created by extraction, each counted once whether an entry names it or a
    /// deeper entry's path implies it.
    pub max_dirs: u64,
    /// Components of one entry's path (`a/b/c` has 3).
    pub max_depth: u64,
}

impl Default for InstallLimits {
    fn default() -> Self {
        InstallLimits {
            max_archive_bytes: DEFAULT_MAX_ARCHIVE_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            max_entries: DEFAULT_MAX_ENTRIES,
            max_dirs: DEFAULT_MAX_DIRS,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// Gets the bytes of an archive URL. The core has no HTTP client: [`FileFetcher`] reads `file://`
/// URLs and local paths, and an embedder that installs from `https://` supplies its own fetcher
/// (its HTTP stack, its proxies, its TLS policy). The sha256 is checked by the core on the bytes
/// written to `sink`, whatever the fetcher.
pub trait Fetcher {
    /// Write the content at `url` to `sink`. `sink` fails once more than
    /// [`InstallLimits::max_archive_bytes`] were written; return that error (or any other).
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> Result<()>;
}

/// Default bound on the whole of one [`FileFetcher`] read (open, read, every byte handed on): ten
/// minutes.
pub const DEFAULT_FILE_FETCH_TIMEOUT: Duration = Duration::from_secs(600);
/// Default bound on a [`FileFetcher`] read that makes no progress (the open, or one read, that
/// does not return): 30 seconds.
pub const DEFAULT_FILE_FETCH_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A [`Fetcher`] for `file://` URLs (`file:///abs/path`, `file://localhost/abs/path`, percent
/// escapes decoded) and plain local paths. A relative path is taken relative to the base
/// directory, when one is set, and refused otherwise. Any other scheme is `unsupported`.
///
/// A registry document may name any local path, so the read is fenced:
/// - only a **regular file** is read. The path is checked (so a device is not even opened), then
///   opened without waiting (`O_NONBLOCK`, and `O_NOCTTY`, on Unix) and the opened handle checked
///   again (`fstat`), so nothing swapped in after the first check is read: a FIFO, `/dev/stdin`,
///   a terminal, a socket or a device is `invalid_argument` at once, never waited on or read
///   from;
/// - the open and the reads run on a thread of their own while the caller waits with a deadline:
///   no bytes for [`stall_timeout`](Self::stall_timeout) (30 s), or the whole read past
///   [`timeout`](Self::timeout) (10 min), is `timeout` (a hung network file system cannot hang
///   the install). The reader thread is then abandoned: it stops at its next read, or stays
///   blocked in the kernel for as long as the file system keeps it there;
/// - errors name the path and what went wrong, never anything read from the file.
#[derive(Debug, Clone)]
pub struct FileFetcher {
    base_dir: Option<PathBuf>,
    timeout: Duration,
    stall_timeout: Duration,
}

impl Default for FileFetcher {
    fn default() -> Self {
        FileFetcher {
            base_dir: None,
            timeout: DEFAULT_FILE_FETCH_TIMEOUT,
            stall_timeout: DEFAULT_FILE_FETCH_STALL_TIMEOUT,
        }
    }
}

impl FileFetcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Resolve relative paths against `dir` (e.g. the directory of the registry file).
    pub fn with_base_dir(dir: impl Into<PathBuf>) -> Self {
        FileFetcher {
            base_dir: Some(dir.into()),
            ..Self::default()
        }
    }

    /// Bound the whole read (default [`DEFAULT_FILE_FETCH_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Bound the wait for the open and for each read (default
    /// [`DEFAULT_FILE_FETCH_STALL_TIMEOUT`]).
    pub fn stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall_timeout = timeout;
        self
    }

    /// The local file a URL names.
    pub fn local_path(&self, url: &str) -> Result<PathBuf> {
        let scheme_end = url.find("://");
        let Some(at) = scheme_end else {
            let path = PathBuf::from(url);
            if path.is_absolute() {
                return Ok(path);
            }
            return match &self.base_dir {
                Some(base) => Ok(base.join(path)),
                None => Err(Error::InvalidArgument(format!(
                    "`{url}` is a relative path and this FileFetcher has no base directory"
                ))),
            };
        };
        let scheme = &url[..at];
        if !scheme.eq_ignore_ascii_case("file") {
            return Err(Error::Unsupported(format!(
                "FileFetcher reads file:// URLs and local paths, not `{scheme}://`; the core has no HTTP client, so installing from `{url}` needs a Fetcher supplied by the embedder"
            )));
        }
        let rest = &url[at + 3..];
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let path = if rest.starts_with('/') {
            rest
        } else if rest.len() >= 10 && rest[..10].eq_ignore_ascii_case("localhost/") {
            &rest[9..]
        } else {
            return Err(Error::InvalidArgument(format!(
                "`{url}` names a host; FileFetcher reads local files only"
            )));
        };
        let bytes = percent_decode(path);
        // `file:///C:/dir` is `C:/dir` on Windows.
        let bytes = if cfg!(windows) && bytes.len() >= 3 && bytes[2] == b':' {
            bytes[1..].to_vec()
        } else {
            bytes
        };
        bytes_to_path(bytes)
            .ok_or_else(|| Error::InvalidArgument(format!("`{url}` is not a UTF-8 path")))
    }
}

impl Fetcher for FileFetcher {
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> Result<()> {
        let path = self.local_path(url)?;
        let reader_path = path.clone();
        pump_with_deadline(
            move || open_regular(&reader_path),
            &path,
            sink,
            self.timeout,
            self.stall_timeout,
        )
    }
}

/// Open `path` for reading if it is a regular file. Checked first on the path, so that a device
/// is not even opened (opening some has effects: a tape rewinds, a serial line's modem lines
/// change); then opened without waiting (a FIFO swapped in opens at once instead of waiting for a
/// writer; a leased file is retried for a second, as the fs service does) and checked again on
/// the opened handle, which is what counts; then switched back to blocking reads (a FUSE file
/// system may answer `EAGAIN` to a non-blocking read; the caller's deadline bounds the wait
/// instead).
fn open_regular(path: &Path) -> Result<fs::File> {
    let meta = fs::metadata(path).map_err(|e| with_path(e, path))?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    open_checked(path)
}

/// The open and the check that count, on the handle (a FIFO or device swapped in after
/// [`open_regular`]'s first check is refused here).
fn open_checked(path: &Path) -> Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use nix::fcntl::OFlag;
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits());
    }
    let file = crate::services::fs::retry_while_leased(|| options.open(path))
        .map_err(|e| with_path(e, path))?;
    let meta = file.metadata().map_err(|e| with_path(e, path))?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    #[cfg(unix)]
    {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        let blocking = fcntl(&file, FcntlArg::F_GETFL)
            .map(|flags| OFlag::from_bits_retain(flags) & !OFlag::O_NONBLOCK)
            .and_then(|flags| fcntl(&file, FcntlArg::F_SETFL(flags)));
        blocking.map_err(|e| with_path(io::Error::from(e), path))?;
    }
    Ok(file)
}

fn not_regular(path: &Path, meta: &fs::Metadata) -> Error {
    Error::InvalidArgument(format!(
        "`{}` is not a regular file (a {}); FileFetcher reads regular files only",
        path.display(),
        file_kind(meta)
    ))
}

/// What a non-regular file is, for the refusal.
fn file_kind(meta: &fs::Metadata) -> &'static str {
    if meta.is_dir() {
        return "directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_char_device() {
            return "character device";
        }
        if t.is_block_device() {
            return "block device";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    "special file"
}

/// What the reader thread hands to the fetching thread.
enum Piece {
    Bytes(Vec<u8>),
    End,
    OpenFailed(Error),
    ReadFailed(io::Error),
}

/// Run `open` and read what it opened on a thread of its own, writing the bytes to `sink` on this
/// thread: waits at most `stall` for the open and for each piece, and `total` in all. On a
/// timeout (or a `sink` error) this returns and the reader thread is left to stop at its next
/// send, which fails; a reader blocked in the kernel stays blocked until the kernel returns.
fn pump_with_deadline<R: io::Read + 'static>(
    open: impl FnOnce() -> Result<R> + Send + 'static,
    path: &Path,
    sink: &mut dyn Write,
    total: Duration,
    stall: Duration,
) -> Result<()> {
    let (tx, rx) = mpsc::sync_channel::<Piece>(2);
    let started = Instant::now();
    std::thread::Builder::new()
        .name("acp-host-file-fetch".to_owned())
        .spawn(move || {
            let mut reader = match open() {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(Piece::OpenFailed(e));
                    return;
                }
            };
            loop {
                let mut buf = vec![0u8; 64 * 1024];
                let piece = match reader.read(&mut buf) {
                    Ok(0) => Piece::End,
                    Ok(n) => {
                        buf.truncate(n);
                        Piece::Bytes(buf)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => Piece::ReadFailed(e),
                };
                let last = !matches!(piece, Piece::Bytes(_));
                if tx.send(piece).is_err() || last {
                    return;
                }
            }
        })
        .map_err(|e| with_path(e, path))?;
    loop {
        let left = total.saturating_sub(started.elapsed());
        let wait = left.min(stall);
        match rx.recv_timeout(wait) {
            Ok(Piece::Bytes(bytes)) => sink.write_all(&bytes).map_err(Error::from)?,
            Ok(Piece::End) => return Ok(()),
            Ok(Piece::OpenFailed(e)) => return Err(e),
            Ok(Piece::ReadFailed(e)) => return Err(with_path(e, path)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let (what, after) = if wait < left {
                    (
                        format!(
                            "reading `{}` (no progress; FileFetcher::stall_timeout)",
                            path.display()
                        ),
                        stall,
                    )
                } else {
                    (
                        format!("reading `{}` (FileFetcher::timeout)", path.display()),
                        total,
                    )
                };
                return Err(Error::Timeout {
                    what,
                    after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                });
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(with_path(
                    io::Error::other("the reading thread ended without a result"),
                    path,
                ));
            }
        }
    }
}

/// [`FileFetcher`] for the faces (Node, Python, Kotlin), whose users cannot plug in a
/// [`Fetcher`]: another scheme fails `unsupported` with a message saying what they can do.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalOnlyFetcher;

impl Fetcher for LocalOnlyFetcher {
    fn fetch(&self, url: &str, sink: &mut dyn Write) -> Result<()> {
        FileFetcher::new().fetch(url, sink).map_err(|e| match e {
            Error::Unsupported(_) => Error::Unsupported(format!(
                "cannot fetch `{url}`: acp-host installs from file:// URLs and local paths only (it has no HTTP client); download the archive yourself and install from an entry whose `archive` names the local file, or launch the agent through its npx/uvx distribution"
            )),
            other => other,
        })
    }
}

/// The result of an install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// `<cache_dir>/<id>/<version>/<platform>/`.
    pub dir: PathBuf,
    /// The `cmd` inside it.
    pub cmd: PathBuf,
    /// It was already there: nothing was fetched.
    pub already_installed: bool,
}

/// Install `agent`'s binary for `platform` under `cache_dir`, with [`InstallLimits::default`].
pub fn install_binary(
    agent: &RegistryAgent,
    platform: Platform,
    cache_dir: &Path,
    fetcher: &dyn Fetcher,
) -> Result<Installed> {
    install_binary_with_limits(
        agent,
        platform,
        cache_dir,
        fetcher,
        &InstallLimits::default(),
    )
}

/// Install `agent`'s binary for `platform` under `cache_dir` (see the module docs for the steps).
///
/// Errors: `not_found` (no binary for the platform); `invalid_config` with the entry's `path` (no
/// or malformed `sha256`, a digest mismatch, a bad `cmd`, an archive that is refused, corrupt or
/// over a limit); `unsupported` (a URL the fetcher cannot read, an archive format that is not
/// extracted); `io` (the cache directory, or the fetcher's source). After an error nothing of the
/// attempt is left in the cache but directories that were already there.
pub fn install_binary_with_limits(
    agent: &RegistryAgent,
    platform: Platform,
    cache_dir: &Path,
    fetcher: &dyn Fetcher,
    limits: &InstallLimits,
) -> Result<Installed> {
    install_binary_with_progress(
        agent,
        platform,
        cache_dir,
        fetcher,
        limits,
        &crate::progress::NoProgress,
    )
}

/// [`install_binary_with_limits`], reporting the download and the extraction to `progress`
/// (`started`, then `done` with the archive's size or `failed` with why; nothing when the
/// binary was already installed).
pub fn install_binary_with_progress(
    agent: &RegistryAgent,
    platform: Platform,
    cache_dir: &Path,
    fetcher: &dyn Fetcher,
    limits: &InstallLimits,
    progress: &dyn crate::progress::ProgressSink,
) -> Result<Installed> {
    use crate::progress::{Phase, Stage, Step};
    // Report a step's end from its result.
    let ended = |step: &Step, r: &Result<Option<u64>>| {
        let p = match r {
            Ok(bytes) => step.report(Stage::Done, *bytes, None),
            Err(e) => step.report(Stage::Failed, None, Some(e.to_string())),
        };
        progress.progress(&p);
    };
    let Some(target) = agent.binary_for(platform) else {
        return Err(Error::NotFound(format!(
            "agent `{}` has no binary distribution for {platform}",
            agent.id
        )));
    };
    let sha_path = agent.target_path(platform, "sha256");
    let Some(sha) = &target.sha256 else {
        return Err(invalid(
            sha_path,
            "missing: acp-host never installs a download it cannot verify (the entry needs a sha256; npx or uvx distributions need none)",
        ));
    };
    let Some(expected) = parse_sha256(sha) else {
        return Err(invalid(sha_path, format!("`{sha}` is not 64 hex digits")));
    };
    let cmd_field = agent.target_path(platform, "cmd");
    let cmd = cmd_path(&target.cmd, &cmd_field)?;
    let dir = agent.install_dir(cache_dir, platform)?;
    let program = dir.join(&cmd);
    let installed = |already_installed| Installed {
        dir: dir.clone(),
        cmd: program.clone(),
        already_installed,
    };
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => return Ok(installed(true)),
        Ok(_) => {
            return Err(with_path(
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "exists and is not a directory",
                ),
                &dir,
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(with_path(e, &dir)),
    }
    let version_dir = cache_dir.join(&agent.id).join(&agent.version);
    let span = tracing::info_span!("registry_install", agent = %agent.id, version = %agent.version, %platform);
    let _enter = span.enter();
    let result = (|| {
        let staging = Staging::create(&version_dir, platform)?;
        let download = Download {
            url: &target.archive,
            to: &staging.download,
            archive_path: agent.target_path(platform, "archive"),
            sha_path: agent.target_path(platform, "sha256"),
        };
        let step = Step::new(Phase::Download);
        progress.progress(&step.report(Stage::Started, None, Some(target.archive.clone())));
        let fetched = download
            .fetch_verified(fetcher, &expected, limits)
            .map(|()| fs::metadata(&staging.download).ok().map(|m| m.len()));
        ended(&step, &fetched);
        fetched?;
        let step = Step::new(Phase::Extract);
        progress.progress(&step.report(Stage::Started, None, None));
        let extracted = archive::extract(&staging.download, &staging.dir, limits)
            .map_err(|e| match e {
                ExtractError::Refused(why) => invalid(
                    agent.target_path(platform, "archive"),
                    format!("{why}; nothing was installed"),
                ),
                ExtractError::Unsupported(why) => Error::Unsupported(why),
                ExtractError::Io(e) => with_path(e, &staging.dir),
            })
            .map(|_| None);
        ended(&step, &extracted);
        extracted?;
        let staged_cmd = staging.dir.join(&cmd);
        match fs::symlink_metadata(&staged_cmd) {
            Ok(m) if m.is_file() => {}
            _ => {
                return Err(invalid(
                    cmd_field.clone(),
                    format!(
                        "the archive has no file `{}`; nothing was installed",
                        cmd.display()
                    ),
                ));
            }
        }
        make_executable(&staged_cmd)?;
        staging.commit(&dir)
    })();
    match result {
        Ok(already) => {
            tracing::info!(dir = %dir.display(), already, "binary installed");
            Ok(installed(already))
        }
        Err(e) => {
            // Leave the cache as it was: drop the version and id directories if now empty.
            let _ = fs::remove_dir(&version_dir);
            let _ = fs::remove_dir(cache_dir.join(&agent.id));
            tracing::warn!(error = %e, "binary install failed");
            Err(e)
        }
    }
}

/// The staging files of one install attempt, removed on drop unless committed.
struct Staging {
    dir: PathBuf,
    download: PathBuf,
    committed: bool,
}

impl Staging {
    fn create(version_dir: &Path, platform: Platform) -> Result<Staging> {
        let suffix = random_suffix();
        let dir = version_dir.join(format!(".tmp-{platform}-{suffix:016x}"));
        let download = version_dir.join(format!(".download-{platform}-{suffix:016x}"));
        // Retried once: a failed install running at the same time may remove the empty parent.
        let mut made = Err(io::Error::other("not tried"));
        for _ in 0..2 {
            fs::create_dir_all(version_dir).map_err(|e| with_path(e, version_dir))?;
            made = fs::create_dir(&dir);
            if !matches!(&made, Err(e) if e.kind() == io::ErrorKind::NotFound) {
                break;
            }
        }
        made.map_err(|e| with_path(e, &dir))?;
        Ok(Staging {
            dir,
            download,
            committed: false,
        })
    }

    /// Rename the staging directory onto `dest`; `Ok(true)` when another install got there first.
    fn commit(mut self, dest: &Path) -> Result<bool> {
        match fs::rename(&self.dir, dest) {
            Ok(()) => {
                self.committed = true;
                sync_dir(dest.parent());
                Ok(false)
            }
            Err(_) if fs::symlink_metadata(dest).is_ok_and(|m| m.is_dir()) => Ok(true),
            Err(e) => Err(with_path(e, dest)),
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.download);
        if !self.committed {
            // Never follows links (and extraction created none).
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Writes the fetched bytes to the download file, hashing them, up to a limit.
struct Sink {
    out: BufWriter<fs::File>,
    hasher: Sha256,
    written: u64,
    limit: u64,
    over: bool,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written.saturating_add(buf.len() as u64) > self.limit {
            self.over = true;
            return Err(io::Error::other(format!(
                "the archive is larger than {} bytes",
                self.limit
            )));
        }
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One archive to fetch, and where errors about it point.
struct Download<'a> {
    url: &'a str,
    to: &'a Path,
    archive_path: String,
    sha_path: String,
}

impl Download<'_> {
    /// Fetch into the download file and check the digest: nothing is extracted before this.
    fn fetch_verified(
        &self,
        fetcher: &dyn Fetcher,
        expected: &[u8; 32],
        limits: &InstallLimits,
    ) -> Result<()> {
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.to)
            .map_err(|e| with_path(e, self.to))?;
        let mut sink = Sink {
            out: BufWriter::new(file),
            hasher: Sha256::new(),
            written: 0,
            limit: limits.max_archive_bytes,
            over: false,
        };
        let fetched = fetcher.fetch(self.url, &mut sink);
        if sink.over {
            return Err(invalid(
                &self.archive_path,
                format!(
                    "the archive is larger than {} bytes (InstallLimits::max_archive_bytes); nothing was extracted",
                    limits.max_archive_bytes
                ),
            ));
        }
        fetched?;
        let file = sink
            .out
            .into_inner()
            .map_err(|e| with_path(e.into_error(), self.to))?;
        file.sync_all().map_err(|e| with_path(e, self.to))?;
        let actual: [u8; 32] = sink.hasher.finalize().into();
        if &actual != expected {
            // Says only that the bytes differ: the URL may name any local file, and its digest
            // (or size, or content) is not the document's to learn.
            return Err(invalid(
                &self.sha_path,
                format!(
                    "the archive at `{}` does not have the sha256 the registry gives ({}); nothing was extracted",
                    self.url,
                    hex(expected)
                ),
            ));
        }
        Ok(())
    }
}

fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        out[i] = (hi * 16 + lo) as u8;
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn percent_decode(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = (b[i + 1] as char)
                .to_digit(16)
                .zip((b[i + 2] as char).to_digit(16));
            if let Some((hi, lo)) = hex {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(unix)]
fn bytes_to_path(bytes: Vec<u8>) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

#[cfg(not(unix))]
fn bytes_to_path(bytes: Vec<u8>) -> Option<PathBuf> {
    String::from_utf8(bytes).ok().map(PathBuf::from)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(|e| with_path(e, path))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    Ok(())
}

/// Make a rename durable (best effort; directories cannot be opened for sync everywhere).
fn sync_dir(dir: Option<&Path>) {
    #[cfg(unix)]
    if let Some(dir) = dir
        && let Ok(d) = fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

fn with_path(e: io::Error, path: &Path) -> Error {
    Error::from(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn sha256_parsing() {
        let hexed = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
        let parsed = parse_sha256(hexed).unwrap();
        assert_eq!(hex(&parsed), hexed.to_ascii_lowercase());
        assert!(parse_sha256(&hexed[1..]).is_none());
        assert!(parse_sha256(&format!("g{}", &hexed[1..])).is_none());
        assert!(parse_sha256(&format!("sha256:{hexed}")).is_none());
    }

    /// A reader that gives `first`, then waits `then` before each further byte.
    struct Slow {
        first: Vec<u8>,
        then: Duration,
    }

    impl io::Read for Slow {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if !self.first.is_empty() {
                let n = self.first.len().min(buf.len());
                buf[..n].copy_from_slice(&self.first[..n]);
                self.first.drain(..n);
                return Ok(n);
            }
            std::thread::sleep(self.then);
            buf[0] = b'.';
            Ok(1)
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A read that stops making progress (a hung network file system) ends in `timeout` after
    /// the stall bound, with what arrived before handed on.
    #[test]
    fn a_stalled_read_times_out() {
        let mut got = Vec::new();
        let started = Instant::now();
        let e = pump_with_deadline(
            || {
                Ok(Slow {
                    first: b"head".to_vec(),
                    then: Duration::from_secs(5),
                })
            },
            Path::new("/nfs/tool.tgz"),
            &mut got,
            Duration::from_secs(60),
            ms(200),
        )
        .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "waited for the reader"
        );
        assert_eq!(e.kind(), "timeout");
        let m = e.to_string();
        assert!(
            m.contains("/nfs/tool.tgz") && m.contains("stall_timeout") && m.contains("200 ms"),
            "{m}"
        );
        assert_eq!(got, b"head");
    }

    /// An open that does not return is bounded the same way.
    #[test]
    fn a_stalled_open_times_out() {
        let started = Instant::now();
        let e = pump_with_deadline(
            || -> Result<io::Empty> {
                std::thread::sleep(Duration::from_secs(5));
                Ok(io::empty())
            },
            Path::new("/nfs/tool.tgz"),
            &mut Vec::new(),
            Duration::from_secs(60),
            ms(200),
        )
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(e.kind(), "timeout");
    }

    /// A read that trickles (never stalls long enough) is bounded in total.
    #[test]
    fn a_trickling_read_is_bounded_in_total() {
        let started = Instant::now();
        let mut got = Vec::new();
        let e = pump_with_deadline(
            || {
                Ok(Slow {
                    first: Vec::new(),
                    then: ms(20),
                })
            },
            Path::new("/nfs/tool.tgz"),
            &mut got,
            ms(300),
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(e.to_string().contains("FileFetcher::timeout"), "{e}");
        assert!(!got.is_empty(), "bytes arrived until the deadline");
    }

    /// The check on the opened handle, without the check on the path before it: a FIFO (as if
    /// swapped in between the two) opens at once and is refused, nothing waited for.
    #[cfg(unix)]
    #[test]
    fn the_opened_handle_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("swapped.tgz");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (tx, rx) = mpsc::channel();
        let opened = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(open_checked(&opened).map(drop));
        });
        let e = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the open waited for a writer")
            .unwrap_err();
        assert_eq!(e.kind(), "invalid_argument");
        assert!(e.to_string().contains("FIFO"), "{e}");
        let dev = open_checked(Path::new("/dev/null")).unwrap_err();
        assert!(dev.to_string().contains("character device"), "{dev}");
    }

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tgz");
        let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        fs::write(&path, &data).unwrap();
        let mut got = Vec::new();
        // `file:///C:/dir/a.tgz` on Windows.
        let url = match path.to_string_lossy().replace('\\', "/") {
            p if p.starts_with('/') => format!("file://{p}"),
            p => format!("file:///{p}"),
        };
        FileFetcher::new().fetch(&url, &mut got).unwrap();
        assert_eq!(got, data);
        let e = FileFetcher::new()
            .fetch(&dir.path().join("missing").display().to_string(), &mut got)
            .unwrap_err();
        assert_eq!(e.kind(), "io");
        assert!(e.to_string().contains("missing"), "{e}");
    }

    #[test]
    fn file_urls() {
        let f = FileFetcher::new();
        assert_eq!(
            f.local_path("file:///tmp/a%20b.tgz").unwrap(),
            Path::new("/tmp/a b.tgz")
        );
        assert_eq!(
            f.local_path("file://localhost/tmp/x.zip?q#frag").unwrap(),
            Path::new("/tmp/x.zip")
        );
        assert_eq!(f.local_path("/tmp/100%").unwrap(), Path::new("/tmp/100%"));
        assert_eq!(
            f.local_path("file:///tmp/100%").unwrap(),
            Path::new("/tmp/100%")
        );
        assert_eq!(
            f.local_path("file:///tmp/%zz").unwrap(),
            Path::new("/tmp/%zz")
        );
        assert_eq!(
            f.local_path("file://example.com/x").unwrap_err().kind(),
            "invalid_argument"
        );
        assert_eq!(
            f.local_path("rel/x.tgz").unwrap_err().kind(),
            "invalid_argument"
        );
        assert_eq!(
            FileFetcher::with_base_dir("/base")
                .local_path("rel/x.tgz")
                .unwrap(),
            Path::new("/base/rel/x.tgz")
        );
        let e = f.local_path("https://example.com/a.tgz").unwrap_err();
        assert_eq!(e.kind(), "unsupported");
        assert!(
            e.to_string().contains("Fetcher supplied by the embedder"),
            "{e}"
        );
    }
}
