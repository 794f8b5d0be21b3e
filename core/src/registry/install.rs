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

/// A [`Fetcher`] for `file://` URLs (`file:///abs/path`, `file://localhost/abs/path`, percent
/// escapes decoded) and plain local paths. A relative path is taken relative to the base
/// directory, when one is set, and refused otherwise. Any other scheme is `unsupported`.
#[derive(Debug, Clone, Default)]
pub struct FileFetcher {
    base_dir: Option<PathBuf>,
}

impl FileFetcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Resolve relative paths against `dir` (e.g. the directory of the registry file).
    pub fn with_base_dir(dir: impl Into<PathBuf>) -> Self {
        FileFetcher {
            base_dir: Some(dir.into()),
        }
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
        let mut file = fs::File::open(&path).map_err(|e| with_path(e, &path))?;
        io::copy(&mut file, sink).map_err(|e| with_path(e, &path))?;
        Ok(())
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
        download.fetch_verified(fetcher, &expected, limits)?;
        archive::extract(&staging.download, &staging.dir, limits).map_err(|e| match e {
            ExtractError::Refused(why) => invalid(
                agent.target_path(platform, "archive"),
                format!("{why}; nothing was installed"),
            ),
            ExtractError::Unsupported(why) => Error::Unsupported(why),
            ExtractError::Io(e) => with_path(e, &staging.dir),
        })?;
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
            return Err(invalid(
                &self.sha_path,
                format!(
                    "the archive's sha256 is {}, the registry says {}; nothing was extracted",
                    hex(&actual),
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
