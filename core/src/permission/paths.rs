//! The forms a path is matched in, and path globs compiled for both directions of matching.
//!
//! Restrictive rules (`deny`, `ask`, `hardDeny`, the built-in `.git` deny) match generously: a
//! path also counts in its Unicode-normalised forms (NFC, NFD, NFKC, NFKD: `.env` spelt with a
//! combining accent or in fullwidth letters), in its Windows spelling (trailing dots and spaces and
//! any `:stream` suffix dropped per component), and globs compare case-insensitively. A file
//! system that folds case or normalises Unicode (macOS, Windows) opens the same file under any of
//! these spellings, and on one that does not, refusing a look-alike costs nothing. Allow rules
//! stay strict: the path as given and its lexical normalisation only, case-sensitively, and
//! every form must match.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use unicode_normalization::UnicodeNormalization;

use super::policy::PolicyError;

/// The forms of one path.
#[derive(Debug, Clone)]
pub(crate) struct PathForms {
    /// The path as given, then its lexical normalisation if different: allow rules need every one
    /// to match.
    pub strict: Vec<String>,
    /// `strict` plus the Unicode and Windows spellings (each also lexically normalised): any one
    /// matching a restrictive rule counts.
    pub generous: Vec<String>,
}

impl PathForms {
    pub(crate) fn new(raw: &str) -> PathForms {
        let mut strict = vec![raw.to_owned()];
        push_new(&mut strict, normalize_path(raw));
        if raw.is_ascii() && windows_spelling_is_same(raw) {
            // No Unicode forms, and the Windows spelling is the path itself: the generous forms
            // are the strict ones (the common case, without building and comparing them).
            let generous = strict.clone();
            return PathForms { strict, generous };
        }
        let mut generous = strict.clone();
        let mut variants: Vec<String> = Vec::new();
        if !raw.is_ascii() {
            variants.push(raw.nfc().collect());
            variants.push(raw.nfd().collect());
            variants.push(raw.nfkc().collect());
            variants.push(raw.nfkd().collect());
        }
        let mut windows: Vec<String> = Vec::new();
        for v in std::iter::once(raw).chain(variants.iter().map(String::as_str)) {
            windows.push(windows_spelling(v));
        }
        for v in variants.into_iter().chain(windows) {
            let normal = normalize_path(&v);
            push_new(&mut generous, v);
            push_new(&mut generous, normal);
        }
        PathForms { strict, generous }
    }
}

fn push_new(list: &mut Vec<String>, s: String) {
    if !list.contains(&s) {
        list.push(s);
    }
}

/// [`windows_spelling`] would return `path` unchanged: no `\\`, no `:` and no component that
/// ends in a dot or a space.
fn windows_spelling_is_same(path: &str) -> bool {
    !path.contains(['\\', ':']) && path.split('/').all(|c| !c.ends_with(['.', ' ']))
}

/// Each component with anything from a `:` on and trailing dots and spaces dropped (how Windows
/// and NTFS resolve `.env.`, `.env ` and `.env::$DATA`). A leading drive (`C:`) is kept.
fn windows_spelling(path: &str) -> String {
    let unified = path.replace('\\', "/");
    unified
        .split('/')
        .enumerate()
        .map(|(i, comp)| {
            let is_drive = i == 0
                && comp.len() == 2
                && comp.ends_with(':')
                && comp.starts_with(|c: char| c.is_ascii_alphabetic());
            if is_drive {
                return comp;
            }
            let comp = comp.split(':').next().unwrap_or(comp);
            comp.trim_end_matches(['.', ' '])
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Path globs compiled twice: as written (case-sensitive, for allow rules) and folded
/// (case-insensitive, also in NFKC form, for restrictive rules).
#[derive(Debug, Clone)]
pub(crate) struct PathGlobs {
    strict: GlobSet,
    folded: GlobSet,
    /// For each glob in `folded`, the index of the pattern it came from.
    folded_origin: Vec<usize>,
}

impl PathGlobs {
    pub(crate) fn empty() -> PathGlobs {
        PathGlobs {
            strict: GlobSet::empty(),
            folded: GlobSet::empty(),
            folded_origin: Vec::new(),
        }
    }

    /// Compile `patterns`; an error names `at[i]`.
    pub(crate) fn new(patterns: &[String], at: &str) -> Result<PathGlobs, PolicyError> {
        let mut strict = GlobSetBuilder::new();
        let mut folded = GlobSetBuilder::new();
        let mut folded_origin = Vec::new();
        for (i, pattern) in patterns.iter().enumerate() {
            strict.add(glob(pattern, false).map_err(|kind| PolicyError {
                path: format!("{at}[{i}]"),
                message: format!("bad glob {pattern:?}: {kind}"),
            })?);
            folded.add(glob(pattern, true).map_err(|kind| PolicyError {
                path: format!("{at}[{i}]"),
                message: format!("bad glob {pattern:?}: {kind}"),
            })?);
            folded_origin.push(i);
            let compat: String = pattern.nfkc().collect();
            // A derived form that does not compile is skipped: the pattern as written still
            // applies, and a policy must never fail to load because of our extra form.
            if compat != *pattern
                && let Ok(g) = glob(&compat, true)
            {
                folded.add(g);
                folded_origin.push(i);
            }
        }
        let build = |b: GlobSetBuilder| {
            b.build().map_err(|e| PolicyError {
                path: at.to_owned(),
                message: format!("bad glob: {e}"),
            })
        };
        Ok(PathGlobs {
            strict: build(strict)?,
            folded: build(folded)?,
            folded_origin,
        })
    }

    /// Restrictive: any generous form of any path. Allow: every strict form of every path (and
    /// at least one path).
    pub(crate) fn matches(&self, paths: &[PathForms], restrictive: bool) -> bool {
        if paths.is_empty() {
            return false;
        }
        if restrictive {
            self.first_restrictive(paths).is_some()
        } else {
            paths
                .iter()
                .all(|p| p.strict.iter().all(|f| self.strict.is_match(f)))
        }
    }

    /// The index of the first pattern matching any generous form of any path.
    pub(crate) fn first_restrictive(&self, paths: &[PathForms]) -> Option<usize> {
        paths.iter().flat_map(|p| &p.generous).find_map(|f| {
            self.folded
                .matches(f)
                .first()
                .and_then(|g| self.folded_origin.get(*g).copied())
        })
    }
}

/// A growable list of path globs that remembers its patterns (for naming the one that matched):
/// `hardDeny.paths`.
#[derive(Debug, Clone)]
pub(crate) struct PathPatterns {
    pub patterns: Vec<String>,
    globs: PathGlobs,
}

impl PathPatterns {
    pub(crate) fn empty() -> PathPatterns {
        PathPatterns {
            patterns: Vec::new(),
            globs: PathGlobs::empty(),
        }
    }

    pub(crate) fn new(patterns: Vec<String>, at: &str) -> Result<PathPatterns, PolicyError> {
        let globs = PathGlobs::new(&patterns, at)?;
        Ok(PathPatterns { patterns, globs })
    }

    pub(crate) fn push(&mut self, pattern: &str, at: &str) -> Result<(), PolicyError> {
        let mut patterns = self.patterns.clone();
        patterns.push(pattern.to_owned());
        *self = PathPatterns::new(patterns, at)?;
        Ok(())
    }

    /// The first pattern matching any generous form of any path (restrictive matching).
    pub(crate) fn first_match(&self, paths: &[PathForms]) -> Option<&str> {
        let i = self.globs.first_restrictive(paths)?;
        self.patterns.get(i).map(String::as_str)
    }
}

fn glob(pattern: &str, case_insensitive: bool) -> Result<globset::Glob, globset::ErrorKind> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .case_insensitive(case_insensitive)
        .build()
        .map_err(|e| e.kind().clone())
}

/// Lexical normalisation: `\` → `/`, empty and `.` components dropped, `..` resolved (never
/// above the root). Symlinks are not resolved here: the fs service resolves them inside the root
/// and the path it will open is decided as well.
pub(crate) fn normalize_path(p: &str) -> String {
    let s = p.replace('\\', "/");
    let absolute = s.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for comp in s.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                let at_drive = parts.len() == 1 && parts[0].ends_with(':');
                match parts.last() {
                    Some(last) if *last != ".." && !at_drive => {
                        parts.pop();
                    }
                    _ if absolute || at_drive => {}
                    _ => parts.push(".."),
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Whether any component of any generous form of `path` names a `.git` entry on some file
/// system: git's own `is_ntfs_dotgit` and `is_hfs_dotgit` ([`is_dotgit_name`]), applied on every
/// OS (a repository may be shared with one that folds these names).
pub(crate) fn has_git_component(path: &str) -> bool {
    forms_have_git_component(&PathForms::new(path))
}

/// [`has_git_component`] of a path whose forms are already built.
pub(crate) fn forms_have_git_component(forms: &PathForms) -> bool {
    forms
        .generous
        .iter()
        .any(|form| form.split(['/', '\\']).any(is_dotgit_name))
}

/// Whether one name opens `.git` on NTFS or HFS+/APFS, as git decides (`is_ntfs_dotgit`,
/// `is_hfs_dotgit` in git's path.c and utf8.c), more generously where that costs nothing:
/// the code points HFS+ ignores (zero-width joiners, direction marks, U+FEFF...) dropped, then
/// anything from a `:` on (an NTFS stream) and trailing dots and spaces dropped, then `.git` or
/// its 8.3 short name `git~1`, in any case (Unicode lower case, so the Kelvin sign and other
/// folds count too).
pub(crate) fn is_dotgit_name(name: &str) -> bool {
    let kept: String;
    let name = if name.is_ascii() {
        name
    } else {
        kept = name.chars().filter(|c| !hfs_ignored(*c)).collect();
        &kept
    };
    let name = name.split(':').next().unwrap_or(name);
    let name = name.trim_end_matches(['.', ' ']);
    if name.is_ascii() {
        name.eq_ignore_ascii_case(".git") || name.eq_ignore_ascii_case("git~1")
    } else {
        let lower = name.to_lowercase();
        lower == ".git" || lower == "git~1"
    }
}

/// The code points HFS+ drops from names before comparing them (git's `next_hfs_char`).
fn hfs_ignored(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generous_forms_cover_unicode_and_windows_spellings() {
        let nfd = PathForms::new("/p/cafe\u{301}/.env");
        assert!(nfd.generous.iter().any(|f| f == "/p/caf\u{e9}/.env"));
        assert_eq!(nfd.strict, vec!["/p/cafe\u{301}/.env".to_owned()]);
        let wide = PathForms::new("/p/\u{ff0e}\u{ff45}\u{ff4e}\u{ff56}");
        assert!(wide.generous.iter().any(|f| f == "/p/.env"), "{wide:?}");
        let ntfs = PathForms::new("C:\\p\\.env.::$DATA");
        assert!(ntfs.generous.iter().any(|f| f == "C:/p/.env"), "{ntfs:?}");
        assert_eq!(PathForms::new("/p/a").generous, vec!["/p/a".to_owned()]);
    }

    /// The shortcut for plain ASCII paths builds exactly the forms the full construction does.
    #[test]
    fn plain_ascii_paths_get_the_same_forms_as_the_full_construction() {
        for raw in [
            "/p/a",
            "/p/./a/../b",
            "a/b",
            "/p/.env",
            "/p/a.",
            "/p/a /b",
            "/p/../..",
            "..",
            "/p/a:b",
            "C:\\p\\a",
            "/p/.git",
            "/p//a/",
            "",
            ".",
        ] {
            let forms = PathForms::new(raw);
            let mut strict = vec![raw.to_owned()];
            push_new(&mut strict, normalize_path(raw));
            let mut generous = strict.clone();
            let windows = windows_spelling(raw);
            let normal = normalize_path(&windows);
            push_new(&mut generous, windows);
            push_new(&mut generous, normal);
            assert_eq!(forms.strict, strict, "{raw}");
            assert_eq!(forms.generous, generous, "{raw}");
        }
    }

    #[test]
    fn folded_globs_are_case_insensitive_only_for_restrictive_matching() {
        let globs = PathGlobs::new(&["**/.env".to_owned()], "t").unwrap();
        let upper = [PathForms::new("/p/.ENV")];
        assert!(globs.matches(&upper, true));
        assert!(!globs.matches(&upper, false));
        let wide_pattern = PathGlobs::new(&["**/\u{ff0e}env".to_owned()], "t").unwrap();
        assert!(wide_pattern.matches(&[PathForms::new("/p/.env")], true));
    }

    #[test]
    fn git_components_in_unicode_spellings() {
        assert!(has_git_component(
            "/p/\u{ff0e}\u{ff47}\u{ff49}\u{ff54}/config"
        ));
        assert!(has_git_component("/p/.GIT/config"));
        assert!(!has_git_component("/p/.gitignore"));
    }

    /// git's own test names (t0060-path-utils.sh, `is_ntfs_dotgit` / `is_hfs_dotgit`), checked
    /// whatever the OS.
    #[test]
    fn dotgit_names_as_git_decides_them() {
        for yes in [
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".git ",
            ".git. .",
            ".git:x",
            ".git::$INDEX_ALLOCATION",
            ".git . :stream",
            "git~1",
            "GIT~1",
            "Git~1.",
            "git~1:x",
            ".g\u{200c}it",
            "\u{200d}.git",
            ".git\u{feff}",
            ".gi\u{200e}t",
            ".g\u{202a}i\u{206f}t",
            "\u{ff0e}\u{ff47}\u{ff49}\u{ff54}",
        ] {
            assert!(has_git_component(&format!("/p/{yes}/config")), "{yes:?}");
        }
        for no in [
            ".gitignore",
            ".git-credentials",
            ".gitx",
            "git",
            ".gi",
            "git~2",
            "git~10",
            "x.git",
            ".g it",
            ".gi\u{200b}t",
            "git~1x",
        ] {
            assert!(!has_git_component(&format!("/p/{no}/config")), "{no:?}");
        }
        // Windows spellings of the whole path.
        assert!(has_git_component(r"C:\p\.GIT.\config"));
        assert!(has_git_component(r"\\?\C:\p\GIT~1\config"));
    }
}
