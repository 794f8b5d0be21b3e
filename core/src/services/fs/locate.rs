//! Which root a requested path falls under, decided on the path text alone (nothing is read from
//! the file system): step 1 of the confinement (see the module above).

use std::path::{Component, Path, PathBuf};

use super::FsError;
use super::spelling::Refused;

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
/// `OutsideRoots`. Roots that are not absolute or contain `..` never match. On Windows the path
/// is read as Win32 reads it and roots match case-insensitively; a stream, a device name or a
/// device path is `OutsideRoots` (see `spelling.rs`).
pub fn locate(roots: &[PathBuf], path: &str) -> Result<(usize, PathBuf), FsError> {
    if cfg!(windows) {
        return super::spelling::locate_windows(roots, path)
            .map(|(i, names)| (i, names.iter().collect()))
            .map_err(|refused| match refused {
                Refused::NotAbsolute => FsError::NotAbsolute(path.to_owned()),
                Refused::Outside => FsError::OutsideRoots(path.to_owned()),
            });
    }
    if let Some(found) = locate_plain(roots, path) {
        return found.ok_or_else(|| FsError::OutsideRoots(path.to_owned()));
    }
    locate_general(roots, path)
}

/// Already in normal form (Unix): absolute, no empty, `.` or `..` component, no trailing `/`
/// (but `/` itself), no NUL. The components of such a path are its `/`-separated pieces, so a
/// prefix test on the text agrees with one on [`normalise`]d paths.
pub(super) fn plain(p: &str) -> bool {
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

// On Windows `locate` reads Windows spellings (spelling.rs, tested there on every OS).
#[cfg(all(test, not(windows)))]
mod tests {
    use super::*;

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
