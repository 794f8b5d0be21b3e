//! Extraction of `.tar.gz`/`.tgz` and `.zip` archives into a fresh, empty directory.
//!
//! The rules (docs/REGISTRY.md repeats them):
//! - an entry name is a relative path: absolute names, drive prefixes, `..` components and NUL are
//!   refused (`\` counts as a separator);
//! - only regular files and directories are extracted: every link (symbolic or hard), device,
//!   FIFO or sparse entry is refused, whatever its target. As the directory starts empty and no
//!   link is ever created, no entry can be written through a link;
//! - files are created new (a second entry of the same name is refused), below a
//!   [`cap_std::fs::Dir`] opened on the destination, which refuses to resolve anything outside it
//!   (a second fence behind the name check);
//! - modes: `0o755` when the entry had any execute bit, else `0o644`; setuid, setgid and sticky
//!   bits are never set; owners and times are not restored;
//! - the number of entries and the bytes written are counted as they are extracted (declared
//!   sizes are not trusted) and bounded by [`InstallLimits`];
//! - an entry's path is bounded in depth ([`InstallLimits::max_depth`] components), in the length
//!   of each component ([`MAX_ENTRY_COMPONENT_BYTES`]) and in total ([`MAX_ENTRY_PATH_BYTES`]), and
//!   the directories an extraction creates, named or implied by a deeper path, are counted before
//!   they are made ([`InstallLimits::max_dirs`]): one entry cannot make thousands of directories
//!   or a tree deeper than tools that walk it can handle.
//!
//! Any refusal stops the extraction; the caller removes the directory.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, OpenOptions};

use super::relative_path;
use super::{InstallLimits, MAX_ENTRY_COMPONENT_BYTES, MAX_ENTRY_PATH_BYTES};

/// Longest entry name accepted as written in the archive, before normalization, in bytes.
const MAX_NAME_BYTES: usize = 4096;

/// Longest part of an entry name quoted in an error message, in bytes.
const SHOWN_NAME_BYTES: usize = 120;

/// Why an extraction stopped.
#[derive(Debug)]
pub(super) enum ExtractError {
    /// The archive's content is refused (a hostile or corrupt entry, a limit).
    Refused(String),
    /// A format this version does not extract.
    Unsupported(String),
    /// The local filesystem failed.
    Io(io::Error),
}

impl From<io::Error> for ExtractError {
    fn from(e: io::Error) -> Self {
        ExtractError::Io(e)
    }
}

/// Extract `archive` (format sniffed from its first bytes) into the empty directory `dest`.
pub(super) fn extract(
    archive: &Path,
    dest: &Path,
    limits: &InstallLimits,
) -> Result<(), ExtractError> {
    let mut file = File::open(archive)?;
    let mut magic = [0u8; 4];
    let mut have = 0;
    while have < magic.len() {
        match file.read(&mut magic[have..]) {
            Ok(0) => break,
            Ok(n) => have += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    file.rewind()?;
    let dir = Dir::open_ambient_dir(dest, cap_std::ambient_authority())?;
    let mut budget = Budget {
        entries: 0,
        bytes: 0,
        dirs: HashSet::new(),
        limits: *limits,
    };
    match &magic[..have] {
        [0x1f, 0x8b, ..] => extract_tar_gz(file, &dir, &mut budget),
        [b'P', b'K', 3, 4] | [b'P', b'K', 5, 6] => extract_zip(file, &dir, &mut budget),
        [b'B', b'Z', b'h', ..] => Err(ExtractError::Unsupported(
            "bzip2 archives (.tar.bz2, .tbz2) are not supported; .tar.gz, .tgz and .zip are"
                .to_owned(),
        )),
        _ => Err(ExtractError::Unsupported(
            "the archive is not a .tar.gz, .tgz or .zip (raw binaries and other formats are not supported)"
                .to_owned(),
        )),
    }
}

/// What an entry is, once accepted.
enum Kind {
    File { executable: bool },
    Dir,
}

struct Budget {
    entries: u64,
    bytes: u64,
    /// The directories created so far, relative to the destination (it started empty, so these
    /// are all the directories there are).
    dirs: HashSet<PathBuf>,
    limits: InstallLimits,
}

impl Budget {
    /// Check the shape of an entry's (normalized) path: component length, depth, total length.
    fn check_path(&self, name: &str, rel: &Path) -> Result<(), ExtractError> {
        let refuse = |why: String| ExtractError::Refused(format!("entry `{}` {why}", shown(name)));
        if let Some(long) = rel
            .components()
            .map(|c| c.as_os_str().len())
            .find(|&n| n > MAX_ENTRY_COMPONENT_BYTES)
        {
            return Err(refuse(format!(
                "has a path component of {long} bytes; at most {MAX_ENTRY_COMPONENT_BYTES} are extracted (MAX_ENTRY_COMPONENT_BYTES)"
            )));
        }
        let depth = rel.components().count() as u64;
        if depth > self.limits.max_depth {
            return Err(refuse(format!(
                "is {depth} path components deep; at most {} are extracted (InstallLimits::max_depth)",
                self.limits.max_depth
            )));
        }
        let len = rel.as_os_str().len();
        if len > MAX_ENTRY_PATH_BYTES {
            return Err(refuse(format!(
                "has a path of {len} bytes; at most {MAX_ENTRY_PATH_BYTES} are extracted (MAX_ENTRY_PATH_BYTES)"
            )));
        }
        Ok(())
    }

    /// Count the directories that creating `dir` (and its parents) would make, before any is
    /// made.
    fn count_dirs(&mut self, name: &str, dir: &Path) -> Result<(), ExtractError> {
        let mut prefix = PathBuf::new();
        for part in dir.components() {
            prefix.push(part);
            if self.dirs.contains(&prefix) {
                continue;
            }
            if self.dirs.len() as u64 >= self.limits.max_dirs {
                return Err(ExtractError::Refused(format!(
                    "entry `{}` would create more than {} directories (InstallLimits::max_dirs)",
                    shown(name),
                    self.limits.max_dirs
                )));
            }
            self.dirs.insert(prefix.clone());
        }
        Ok(())
    }

    fn count_entry(&mut self) -> Result<(), ExtractError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(ExtractError::Refused(format!(
                "the archive has more than {} entries (InstallLimits::max_entries)",
                self.limits.max_entries
            )));
        }
        Ok(())
    }

    /// Copy one entry's data, counting every byte against the total.
    fn copy(
        &mut self,
        from: &mut dyn Read,
        to: &mut cap_std::fs::File,
    ) -> Result<(), ExtractError> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(corrupt(&e)),
            };
            self.bytes += n as u64;
            if self.bytes > self.limits.max_total_bytes {
                return Err(ExtractError::Refused(format!(
                    "the archive expands to more than {} bytes (InstallLimits::max_total_bytes)",
                    self.limits.max_total_bytes
                )));
            }
            to.write_all(&buf[..n])?;
        }
    }
}

/// An entry name as quoted in messages: cut after [`SHOWN_NAME_BYTES`] (a name may be kilobytes).
fn shown(name: &str) -> String {
    if name.len() <= SHOWN_NAME_BYTES {
        return name.to_owned();
    }
    let mut end = SHOWN_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &name[..end], name.len())
}

fn corrupt(e: &dyn std::fmt::Display) -> ExtractError {
    ExtractError::Refused(format!("the archive is corrupt or truncated: {e}"))
}

fn link_refused(name: &str, what: &str, target: Option<String>) -> ExtractError {
    let to = target
        .map(|t| format!(" to `{}`", shown(&t)))
        .unwrap_or_default();
    ExtractError::Refused(format!(
        "entry `{}` is a {what}{to}: links are refused (only files and directories are extracted)",
        shown(name)
    ))
}

fn extract_tar_gz(file: File, dir: &Dir, budget: &mut Budget) -> Result<(), ExtractError> {
    use tar::EntryType;
    let gz = flate2::read::MultiGzDecoder::new(BufReader::new(file));
    let mut archive = tar::Archive::new(gz);
    let entries = archive.entries().map_err(|e| corrupt(&e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| corrupt(&e))?;
        budget.count_entry()?;
        let name = String::from_utf8(entry.path_bytes().into_owned())
            .map_err(|_| ExtractError::Refused("an entry name is not UTF-8".to_owned()))?;
        let link_target = || {
            entry
                .link_name_bytes()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        };
        let kind = match entry.header().entry_type() {
            EntryType::Regular | EntryType::Continuous => Kind::File {
                executable: entry.header().mode().is_ok_and(|m| m & 0o111 != 0),
            },
            EntryType::Directory => Kind::Dir,
            // pax global headers carry defaults for the entries that follow, not a file.
            EntryType::XGlobalHeader => continue,
            EntryType::Symlink => return Err(link_refused(&name, "symlink", link_target())),
            EntryType::Link => return Err(link_refused(&name, "hard link", link_target())),
            other => {
                return Err(ExtractError::Refused(format!(
                    "entry `{}` has type {other:?}: only files and directories are extracted",
                    shown(&name)
                )));
            }
        };
        place(dir, &name, kind, &mut entry, budget)?;
    }
    Ok(())
}

fn extract_zip(file: File, dir: &Dir, budget: &mut Budget) -> Result<(), ExtractError> {
    let zip_error = |e: zip::result::ZipError| match e {
        zip::result::ZipError::UnsupportedArchive(what) => {
            ExtractError::Unsupported(format!("this zip archive is not supported: {what}"))
        }
        other => corrupt(&other),
    };
    let mut archive = zip::ZipArchive::new(BufReader::new(file)).map_err(zip_error)?;
    if archive.len() as u64 > budget.limits.max_entries {
        return Err(ExtractError::Refused(format!(
            "the archive has more than {} entries (InstallLimits::max_entries)",
            budget.limits.max_entries
        )));
    }
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(zip_error)?;
        budget.count_entry()?;
        let name = entry.name().to_owned();
        let mode = entry.unix_mode();
        let kind = match mode.map_or(0, |m| m & 0o170_000) {
            0o120_000 => return Err(link_refused(&name, "symlink", None)),
            0o040_000 => Kind::Dir,
            0 | 0o100_000 if entry.is_dir() => Kind::Dir,
            0 | 0o100_000 => Kind::File {
                executable: mode.is_some_and(|m| m & 0o111 != 0),
            },
            other => {
                return Err(ExtractError::Refused(format!(
                    "entry `{}` has file type {other:o}: only files and directories are extracted",
                    shown(&name)
                )));
            }
        };
        place(dir, &name, kind, &mut entry, budget)?;
    }
    Ok(())
}

/// Create one accepted entry below `dir`.
fn place(
    dir: &Dir,
    name: &str,
    kind: Kind,
    data: &mut dyn Read,
    budget: &mut Budget,
) -> Result<(), ExtractError> {
    if name.len() > MAX_NAME_BYTES {
        return Err(ExtractError::Refused(format!(
            "entry `{}` has a name longer than {MAX_NAME_BYTES} bytes",
            shown(name)
        )));
    }
    let rel = relative_path(name)
        .map_err(|why| ExtractError::Refused(format!("entry `{}` {why}", shown(name))))?;
    budget.check_path(name, &rel)?;
    let conflict = |e: io::Error| match e.kind() {
        io::ErrorKind::AlreadyExists
        | io::ErrorKind::NotADirectory
        | io::ErrorKind::IsADirectory => ExtractError::Refused(format!(
            "entry `{}` conflicts with an earlier entry ({e})",
            shown(name)
        )),
        _ => ExtractError::Io(e),
    };
    match kind {
        Kind::Dir => {
            if !rel.as_os_str().is_empty() {
                budget.count_dirs(name, &rel)?;
                dir.create_dir_all(&rel).map_err(conflict)?;
            }
            Ok(())
        }
        Kind::File { executable } => {
            let Some(parent) = rel.parent().filter(|_| !rel.as_os_str().is_empty()) else {
                return Err(ExtractError::Refused(format!(
                    "entry `{}` names no file",
                    shown(name)
                )));
            };
            if !parent.as_os_str().is_empty() {
                budget.count_dirs(name, parent)?;
                dir.create_dir_all(parent).map_err(conflict)?;
            }
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let mut file = dir.open_with(&rel, &options).map_err(conflict)?;
            set_mode(&file, executable)?;
            budget.copy(data, &mut file)?;
            file.sync_all()?;
            Ok(())
        }
    }
}

#[cfg(unix)]
fn set_mode(file: &cap_std::fs::File, executable: bool) -> io::Result<()> {
    use cap_std::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    file.set_permissions(cap_std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &cap_std::fs::File, _executable: bool) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn limits() -> InstallLimits {
        InstallLimits::default()
    }

    fn tar_gz(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        build(&mut b);
        let tar = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    fn file_header(size: u64, mode: u32) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_size(size);
        h.set_mode(mode);
        h.set_entry_type(tar::EntryType::Regular);
        h
    }

    fn run(bytes: &[u8], limits: &InstallLimits) -> (tempfile::TempDir, Result<(), ExtractError>) {
        let tmp = tempfile::tempdir().unwrap();
        let archive = tmp.path().join("a");
        std::fs::write(&archive, bytes).unwrap();
        let dest = tmp.path().join("out");
        std::fs::create_dir(&dest).unwrap();
        let r = extract(&archive, &dest, limits);
        (tmp, r)
    }

    #[test]
    fn modes_keep_only_the_execute_bit() {
        let bytes = tar_gz(|b| {
            let mut h = file_header(2, 0o4755);
            b.append_data(&mut h, "bin/tool", &b"#!"[..]).unwrap();
            let mut h = file_header(1, 0o2666);
            b.append_data(&mut h, "data.txt", &b"x"[..]).unwrap();
        });
        let (tmp, r) = run(&bytes, &limits());
        r.unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &str| {
                std::fs::metadata(tmp.path().join("out").join(p))
                    .unwrap()
                    .permissions()
                    .mode()
                    & 0o7777
            };
            assert_eq!(mode("bin/tool"), 0o755);
            assert_eq!(mode("data.txt"), 0o644);
        }
        drop(tmp);
    }

    #[test]
    fn duplicate_entries_are_refused() {
        let bytes = tar_gz(|b| {
            for _ in 0..2 {
                let mut h = file_header(1, 0o644);
                b.append_data(&mut h, "same", &b"x"[..]).unwrap();
            }
        });
        let (_tmp, r) = run(&bytes, &limits());
        assert!(matches!(r, Err(ExtractError::Refused(m)) if m.contains("conflicts")));
    }

    #[test]
    fn entry_count_is_bounded() {
        let bytes = tar_gz(|b| {
            for i in 0..5 {
                let mut h = file_header(0, 0o644);
                b.append_data(&mut h, format!("f{i}"), io::empty()).unwrap();
            }
        });
        let small = InstallLimits {
            max_entries: 4,
            ..limits()
        };
        let (_tmp, r) = run(&bytes, &small);
        assert!(matches!(r, Err(ExtractError::Refused(m)) if m.contains("max_entries")));
    }

    #[test]
    fn directories_are_counted_once_and_bounded() {
        let entries = |b: &mut tar::Builder<Vec<u8>>, extra: bool| {
            let mut h = file_header(1, 0o644);
            b.append_data(&mut h, "a/b/c/f", &b"x"[..]).unwrap();
            let mut h = file_header(1, 0o644);
            b.append_data(&mut h, "a/b/g", &b"x"[..]).unwrap();
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_size(0);
            b.append_data(&mut h, "a/b/", io::empty()).unwrap();
            if extra {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                b.append_data(&mut h, "a/x/", io::empty()).unwrap();
            }
        };
        let three = InstallLimits {
            max_dirs: 3,
            ..limits()
        };
        // a, a/b, a/b/c: three, however many entries name or imply them.
        let (_tmp, r) = run(&tar_gz(|b| entries(b, false)), &three);
        r.unwrap();
        let (tmp, r) = run(&tar_gz(|b| entries(b, true)), &three);
        assert!(
            matches!(&r, Err(ExtractError::Refused(m)) if m.contains("`a/x/` would create more than 3 directories")),
            "{r:?}"
        );
        assert!(
            !tmp.path().join("out/a/x").exists(),
            "refused before it is made"
        );
    }

    #[test]
    fn long_names_are_cut_in_messages() {
        let name = "é".repeat(200);
        let cut = shown(&name);
        assert!(cut.len() < 140 && cut.ends_with("(400 bytes)"), "{cut}");
        assert_eq!(shown("bin/tool"), "bin/tool");
    }

    #[test]
    fn fifo_and_unknown_formats_are_refused() {
        let bytes = tar_gz(|b| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Fifo);
            h.set_size(0);
            b.append_data(&mut h, "pipe", io::empty()).unwrap();
        });
        let (_tmp, r) = run(&bytes, &limits());
        assert!(matches!(r, Err(ExtractError::Refused(m)) if m.contains("Fifo")));
        let (_tmp, r) = run(b"BZh91AY&SY", &limits());
        assert!(matches!(r, Err(ExtractError::Unsupported(_))));
        let (_tmp, r) = run(b"\x7fELF", &limits());
        assert!(matches!(r, Err(ExtractError::Unsupported(_))));
    }
}
