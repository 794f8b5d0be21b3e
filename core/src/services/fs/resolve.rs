//! Resolving a request path inside its root one component at a time, holding a handle on every
//! directory on the way, so that the path the policy decides on is the path of the handles we
//! then read from or write through.
//!
//! Each component is looked at with `lstat` relative to the directory handle above it. A symlink
//! is read and its target spliced into the rest of the path (an absolute target, or a `..` that
//! climbs above the root, is an escape). A directory is opened with `O_NOFOLLOW`: if a symlink was
//! swapped in since the `lstat`, the open fails instead of following it. The leaf is never opened
//! here: the caller opens it relative to [`Walked::dir`], without following links either.
//!
//! So the chain of handles always spells [`Walked::rel`], whatever the agent (or anyone) does to
//! the tree meanwhile: a link swapped in after the walk only affects later requests. What a handle
//! cannot tell is a directory *renamed* (moved) after it was opened; see docs/PERMISSIONS.md.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, Metadata};

use super::{FsError, io_msg, map_io};

/// Links followed for one request before giving up (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

/// What the walk found at the end of the path.
#[derive(Debug)]
pub(super) enum Leaf {
    /// The path names [`Walked::dir`] itself (the root, a directory, a link to one).
    Directory,
    /// An existing entry of [`Walked::dir`] that is not a symlink (its `lstat` metadata).
    Entry { name: OsString, meta: Metadata },
    /// `rest[0]` does not exist in [`Walked::dir`]; `rest` is what is left of the path, file name
    /// last. `via_link`: part of `rest` comes from a symlink's target (a dangling link).
    Missing { rest: Vec<OsString>, via_link: bool },
}

/// A path resolved inside a root: open handles from the root down to the deepest existing
/// directory, and what is below it.
#[derive(Debug)]
pub(super) struct Walked {
    root: Dir,
    /// `(name, handle)` of each directory below the root, outermost first.
    stack: Vec<(OsString, Dir)>,
    pub leaf: Leaf,
}

impl Walked {
    /// The directory the leaf is (or is to be created) in.
    pub fn dir(&self) -> &Dir {
        self.stack.last().map_or(&self.root, |(_, d)| d)
    }

    /// The first directory on the way (root included) that git takes for a repository, as a
    /// path relative to the root (see `repository.rs`).
    pub fn repository(&self) -> Option<PathBuf> {
        let mut rel = PathBuf::new();
        if super::repository::holds_repository(&self.root) {
            return Some(rel);
        }
        for (name, dir) in &self.stack {
            rel.push(name);
            if super::repository::holds_repository(dir) {
                return Some(rel);
            }
        }
        None
    }

    /// Other names of what the request opens: through a mount point inside the root, its path
    /// from the mount's source (see `mounts.rs`). `opened` is the leaf when it is open (a file
    /// bind-mounted at the leaf is a mount of its own).
    #[cfg(target_os = "linux")]
    pub fn other_names(&self, opened: Option<&cap_std::fs::File>) -> io::Result<Vec<String>> {
        use super::mounts::{mount_of, other_names};
        let mut prev = mount_of(&self.root)?;
        let mut crossing = None;
        for (i, (_, dir)) in self.stack.iter().enumerate() {
            let m = mount_of(dir)?;
            if m != prev {
                crossing = Some((i + 1, m));
            }
            prev = m;
        }
        if let Some(file) = opened {
            let m = mount_of(file)?;
            if m != prev {
                return other_names(m, &[]);
            }
        }
        let Some((below, m)) = crossing else {
            return Ok(Vec::new());
        };
        let mut rest: Vec<OsString> = self.stack[below..].iter().map(|(n, _)| n.clone()).collect();
        match &self.leaf {
            Leaf::Directory => {}
            Leaf::Entry { name, .. } => rest.push(name.clone()),
            Leaf::Missing { rest: more, .. } => rest.extend(more.iter().cloned()),
        }
        other_names(m, &rest)
    }

    /// Elsewhere: not looked for (docs/PERMISSIONS.md, "Other names of a file").
    #[cfg(not(target_os = "linux"))]
    pub fn other_names(&self, _opened: Option<&cap_std::fs::File>) -> io::Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// The leaf's path relative to the root, links resolved: the path that will be opened.
    pub fn rel(&self) -> PathBuf {
        let mut rel: PathBuf = self.stack.iter().map(|(n, _)| n.as_os_str()).collect();
        match &self.leaf {
            Leaf::Directory => {}
            Leaf::Entry { name, .. } => rel.push(name),
            Leaf::Missing { rest, .. } => rel.extend(rest),
        }
        rel
    }
}

/// Resolve `rel` (normalised: no `.`/`..` components) inside `root`. `path` is the request's path,
/// for errors. A symlink leading outside the root is `OutsideRoots`; a non-directory in the middle
/// of the path, a directory swapped for a link during the walk, or too many links are `Io`.
pub(super) fn walk(root: Dir, rel: &Path, path: &str) -> Result<Walked, FsError> {
    let anchor = stored::Anchor::of(&root);
    let mut pending: VecDeque<(OsString, bool)> = VecDeque::new();
    for c in rel.components() {
        push_component(&mut pending, c, false, path)?;
    }
    let mut walked = Walked {
        root,
        stack: Vec::new(),
        leaf: Leaf::Directory,
    };
    let mut links = 0usize;
    while let Some((name, from_link)) = pending.pop_front() {
        if name == OsStr::new("..") {
            if walked.stack.pop().is_none() {
                return Err(FsError::OutsideRoots(path.to_owned()));
            }
            continue;
        }
        let meta = match walked.dir().symlink_metadata(&name) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut rest = vec![name];
                let mut via_link = from_link;
                for (n, l) in pending {
                    if n == OsStr::new("..") {
                        // `..` below a missing directory: nothing to resolve it against.
                        return Err(io_msg(path, "symlink target does not exist"));
                    }
                    rest.push(n);
                    via_link |= l;
                }
                walked.leaf = Leaf::Missing { rest, via_link };
                return Ok(walked);
            }
            Err(e) => return Err(map_io(path, &e)),
        };
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(io_msg(path, "too many levels of symbolic links"));
            }
            let target = walked
                .dir()
                .read_link_contents(&name)
                .map_err(|e| map_io(path, &e))?;
            let mut spliced = VecDeque::new();
            for c in target.components() {
                push_component(&mut spliced, c, true, path)?;
            }
            while let Some(c) = spliced.pop_back() {
                pending.push_front(c);
            }
        } else if meta.is_dir() {
            // O_NOFOLLOW: a link swapped in since the lstat makes this fail (ELOOP/ENOTDIR)
            // instead of being followed.
            let dir = walked
                .dir()
                .open_dir_nofollow(&name)
                .map_err(|e| map_io(path, &e))?;
            let name = stored::dir_name(&anchor, &dir, name, path)?;
            walked.stack.push((name, dir));
        } else if pending.is_empty() {
            let name = stored::entry_name(&anchor, walked.dir(), name, path)?;
            walked.leaf = Leaf::Entry { name, meta };
            return Ok(walked);
        } else {
            return Err(io_msg(path, "not a directory"));
        }
    }
    Ok(walked)
}

fn push_component(
    out: &mut VecDeque<(OsString, bool)>,
    c: Component<'_>,
    from_link: bool,
    path: &str,
) -> Result<(), FsError> {
    match c {
        Component::Normal(n) => out.push_back((spelt(n, path)?, from_link)),
        Component::CurDir => {}
        Component::ParentDir => out.push_back((OsString::from(".."), from_link)),
        // An absolute link target leaves the root's capability (cap-std refuses them too).
        Component::RootDir | Component::Prefix(_) => {
            return Err(FsError::OutsideRoots(path.to_owned()));
        }
    }
    Ok(())
}

/// A name as it will be opened: on Windows as Win32 reads it (`spelling.rs`; the request's names
/// already are, a link's target's are not), a stream or a device name being an escape.
fn spelt(name: &OsStr, path: &str) -> Result<OsString, FsError> {
    if !cfg!(windows) {
        return Ok(name.to_owned());
    }
    let text = name
        .to_str()
        .ok_or_else(|| FsError::OutsideRoots(path.to_owned()))?;
    super::spelling::name_of(text)
        .map(OsString::from)
        .map_err(|_| FsError::OutsideRoots(path.to_owned()))
}

/// The names the file system stores for what a request reached (Windows: an 8.3 alias such as
/// `GIT~1`, or another case, reads back as the stored `.git`), read from the open handle, so the
/// policy decides on the name the file has whatever the request called it. The whole path read
/// back must also lie under the root's: a way out the walk did not see as a link (a mount, or
/// Wine showing a Unix symlink as a plain directory) is refused as an escape.
#[cfg(windows)]
mod stored {
    use std::ffi::OsString;
    use std::path::PathBuf;

    use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
    use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};

    use super::FsError;

    /// The root's own path as read back (lower case, `\` last), when it can be.
    #[derive(Debug)]
    pub(super) struct Anchor(Option<String>);

    impl Anchor {
        pub(super) fn of(root: &Dir) -> Anchor {
            let full = root
                .try_clone()
                .ok()
                .and_then(|d| full_path(&d.into_std_file()));
            Anchor(full.map(|p| {
                let mut p = p.to_string_lossy().to_lowercase();
                if !p.ends_with('\\') {
                    p.push('\\');
                }
                p
            }))
        }

        /// `Err` when `full` is known to lie outside the root.
        fn contains(&self, full: &std::path::Path, path: &str) -> Result<(), FsError> {
            match &self.0 {
                Some(root) if !full.to_string_lossy().to_lowercase().starts_with(root) => {
                    Err(FsError::OutsideRoots(path.to_owned()))
                }
                _ => Ok(()),
            }
        }
    }

    /// The stored name of `dir`, opened as `asked`.
    pub(super) fn dir_name(
        anchor: &Anchor,
        dir: &Dir,
        asked: OsString,
        path: &str,
    ) -> Result<OsString, FsError> {
        let full = dir
            .try_clone()
            .ok()
            .and_then(|d| full_path(&d.into_std_file()));
        settle(anchor, full, asked, path)
    }

    /// The stored name of the entry `asked` of `parent` (not a directory, not a link): opened
    /// for no access, without following a link, only to read its name back.
    pub(super) fn entry_name(
        anchor: &Anchor,
        parent: &Dir,
        asked: OsString,
        path: &str,
    ) -> Result<OsString, FsError> {
        let mut opts = OpenOptions::new();
        opts.access_mode(0).follow(FollowSymlinks::No);
        let full = parent
            .open_with(&asked, &opts)
            .ok()
            .and_then(|f| full_path(&f.into_std()));
        settle(anchor, full, asked, path)
    }

    fn full_path(file: &std::fs::File) -> Option<PathBuf> {
        winx::file::get_file_path(file).ok()
    }

    /// The name read back (its path checked against the root's); when none could be, the name
    /// asked for, unless it may be an 8.3 alias (it has a `~`): then the request is refused
    /// rather than decided on a name the file may not have.
    fn settle(
        anchor: &Anchor,
        full: Option<PathBuf>,
        asked: OsString,
        path: &str,
    ) -> Result<OsString, FsError> {
        if let Some(full) = &full {
            anchor.contains(full, path)?;
        }
        match full.as_deref().and_then(std::path::Path::file_name) {
            Some(name) => Ok(name.to_owned()),
            None if asked.to_string_lossy().contains('~') => Err(super::io_msg(
                path,
                "the stored name of a possible 8.3 short name could not be read back",
            )),
            None => Ok(asked),
        }
    }
}

/// Elsewhere the name asked for is the name opened (a case-insensitive macOS volume keeps the
/// request's spelling: the policy's restrictive rules match case and Unicode variants).
#[cfg(not(windows))]
mod stored {
    use std::ffi::OsString;

    use cap_std::fs::Dir;

    use super::FsError;

    #[derive(Debug)]
    pub(super) struct Anchor;

    impl Anchor {
        pub(super) fn of(_root: &Dir) -> Anchor {
            Anchor
        }
    }

    #[allow(clippy::unnecessary_wraps)]
    pub(super) fn dir_name(
        _anchor: &Anchor,
        _dir: &Dir,
        asked: OsString,
        _path: &str,
    ) -> Result<OsString, FsError> {
        Ok(asked)
    }

    #[allow(clippy::unnecessary_wraps)]
    pub(super) fn entry_name(
        _anchor: &Anchor,
        _parent: &Dir,
        asked: OsString,
        _path: &str,
    ) -> Result<OsString, FsError> {
        Ok(asked)
    }
}
