//! `fs/read_text_file`: resolve, open, decide on what was opened, then read through that handle.

use std::io::{self, Read};
use std::path::PathBuf;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::OpenOptions;

#[cfg(target_os = "linux")]
use super::cached;
use super::resolve::{Leaf, walk};
use super::{
    FsError, FsLimits, Opened, absolute, check_regular, decided, io_msg, map_io,
    open_without_waiting, resolve,
};

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
    let walked = walk(r.root, &r.rel, path)?;
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
pub(super) fn text_of(
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
}
