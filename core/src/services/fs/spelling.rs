//! Windows spellings of a path, reduced to what will be opened (docs/PERMISSIONS.md, "Per-OS
//! spellings").
//!
//! On Windows the fs service opens through cap-std, which hands each name to the file system
//! relative to a directory handle (`NtCreateFile`), below Win32's path rewriting. So the request is
//! rewritten here the way Win32 would read it, and what Win32 would read as something other than
//! a file inside the root is refused (`outside_roots`):
//!
//! - prefixes: `\\?\C:\`, `\\.\C:\` and `\??\C:\` are `C:\`; `\\?\UNC\srv\share\` is
//!   `\\srv\share\`; any other device path (`\\.\pipe\x`, `\\?\GLOBALROOT\...`, `\\.\CON`) is
//!   refused. `/` and `\` both separate. A path without a drive or a UNC share (`\x`, `C:x`) is
//!   not absolute.
//! - roots match case-insensitively (drive letters, servers, shares and names).
//! - in each name: trailing dots and spaces are dropped (`.git.` and `.git ` are `.git`); one left
//!   empty (`...`) is refused; a `:` (an alternate data stream: `.git:x`, `config::$DATA`,
//!   `.git::$INDEX_ALLOCATION`) is refused; a reserved device name (`CON`, `NUL`, `COM1`, `COM¹`,
//!   `aux.txt`, `CONOUT$`) is refused.
//!
//! Names read back from the opened handles (8.3 short names such as `GIT~1`, case) are resolve.rs's
//! business. The functions here are pure and compiled everywhere, so their tests run on every OS.

/// The volume a Windows path starts at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Volume {
    /// A drive letter, upper case.
    Disk(char),
    /// `\\server\share`, both lower case.
    Unc(String, String),
}

/// A Windows path reduced as above: its volume and its names (as spelt, trailing dots and spaces
/// dropped; `.` components dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WinPath {
    pub volume: Volume,
    pub names: Vec<String>,
}

/// Why a Windows path was not reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// No drive or UNC share: `\x`, `C:x`, `x`.
    NotAbsolute,
    /// Names no file inside a root: a device path, a stream, a device name, `..`, a NUL.
    Outside,
}

/// Reduce `path` as Win32 would read it (see the module's documentation).
pub(super) fn parse_windows(path: &str) -> Result<WinPath, Refused> {
    if path.contains('\0') {
        return Err(Refused::Outside);
    }
    let unified = path.replace('/', "\\");
    let (volume, rest) = volume_of(&unified)?;
    let mut names = Vec::new();
    for piece in rest.split('\\') {
        match piece {
            "" | "." => continue,
            ".." => return Err(Refused::Outside),
            _ => {}
        }
        names.push(name_of(piece)?);
    }
    Ok(WinPath { volume, names })
}

/// The volume and what follows it, without its leading separator.
fn volume_of(p: &str) -> Result<(Volume, &str), Refused> {
    let device = ["\\\\?\\", "\\\\.\\", "\\??\\"]
        .iter()
        .find_map(|prefix| p.strip_prefix(prefix));
    if let Some(rest) = device {
        if let Some(unc) = strip_prefix_ignore_case(rest, "UNC\\") {
            return unc_of(unc);
        }
        return match disk_of(rest) {
            Some((letter, after)) if after.is_empty() || after.starts_with('\\') => {
                Ok((Volume::Disk(letter), after))
            }
            _ => Err(Refused::Outside),
        };
    }
    if let Some(unc) = p.strip_prefix("\\\\") {
        return unc_of(unc);
    }
    match disk_of(p) {
        Some((letter, after)) if after.starts_with('\\') => Ok((Volume::Disk(letter), after)),
        _ => Err(Refused::NotAbsolute),
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn disk_of(p: &str) -> Option<(char, &str)> {
    let mut chars = p.chars();
    let letter = chars.next().filter(char::is_ascii_alphabetic)?;
    (chars.next() == Some(':')).then(|| (letter.to_ascii_uppercase(), &p[2..]))
}

fn unc_of(p: &str) -> Result<(Volume, &str), Refused> {
    let mut parts = p.splitn(3, '\\');
    let server = parts.next().unwrap_or_default();
    let share = parts.next().unwrap_or_default();
    if server.is_empty() || share.is_empty() || matches!(server, "." | "?") {
        return Err(Refused::Outside);
    }
    let rest = parts.next().unwrap_or_default();
    Ok((
        Volume::Unc(server.to_lowercase(), share.to_lowercase()),
        rest,
    ))
}

/// One name as Win32 opens it: trailing dots and spaces dropped; streams and device names
/// refused. Also applied to the names in a link's target (resolve.rs).
pub(super) fn name_of(piece: &str) -> Result<String, Refused> {
    if piece.contains(':') || piece.chars().any(|c| c < ' ') {
        return Err(Refused::Outside);
    }
    let name = piece.trim_end_matches(['.', ' ']);
    if name.is_empty() || is_reserved_device_name(name) {
        return Err(Refused::Outside);
    }
    Ok(name.to_owned())
}

/// Whether Win32 opens a device for `name` wherever it stands: `CON`, `PRN`, `AUX`, `NUL`,
/// `COM0`-`COM9`, `LPT0`-`LPT9` (and their superscript-digit forms `COM¹`...), `CONIN$`,
/// `CONOUT$`, in any case, alone or followed by an extension (`aux.txt`, `nul.tar.gz`) or spaces.
pub(crate) fn is_reserved_device_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).trim_end_matches(' ');
    let upper = stem.to_uppercase();
    if matches!(
        upper.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) {
        return true;
    }
    let Some(digit) = upper
        .strip_prefix("COM")
        .or_else(|| upper.strip_prefix("LPT"))
    else {
        return false;
    };
    let mut chars = digit.chars();
    matches!(
        (chars.next(), chars.next()),
        (Some('0'..='9' | '\u{b9}' | '\u{b2}' | '\u{b3}'), None)
    )
}

/// Whether root `root` (reduced) contains `path` (reduced), comparing as Windows does (case
/// folded); the depth of the root and the names below it.
pub(super) fn under<'a>(root: &WinPath, path: &'a WinPath) -> Option<(usize, &'a [String])> {
    if root.volume != path.volume || root.names.len() > path.names.len() {
        return None;
    }
    let same = root
        .names
        .iter()
        .zip(&path.names)
        .all(|(a, b)| same_name(a, b));
    same.then(|| (root.names.len(), &path.names[root.names.len()..]))
}

/// Names compared as NTFS does by default: case-insensitively (Unicode lower case stands in for
/// the volume's upcase table).
pub(super) fn same_name(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.to_lowercase() == b.to_lowercase()
    }
}

/// [`super::locate`] for Windows spellings: the root (index) with the longest match and the
/// names below it.
pub(super) fn locate_windows(
    roots: &[std::path::PathBuf],
    path: &str,
) -> Result<(usize, Vec<String>), Refused> {
    let wanted = parse_windows(path)?;
    let mut best: Option<(usize, usize, &[String])> = None;
    for (i, root) in roots.iter().enumerate() {
        let Some(root) = root.to_str().and_then(|r| parse_windows(r).ok()) else {
            continue;
        };
        if let Some((depth, rel)) = under(&root, &wanted)
            && best.is_none_or(|(_, d, _)| depth > d)
        {
            best = Some((i, depth, rel));
        }
    }
    best.map(|(i, _, rel)| (i, rel.to_vec()))
        .ok_or(Refused::Outside)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn names(p: &str) -> Result<(Volume, Vec<String>), Refused> {
        parse_windows(p).map(|w| (w.volume, w.names))
    }

    fn c(names: &[&str]) -> Result<(Volume, Vec<String>), Refused> {
        Ok((
            Volume::Disk('C'),
            names.iter().map(|s| (*s).to_owned()).collect(),
        ))
    }

    #[test]
    fn prefixes_and_separators_reduce_to_the_drive() {
        for p in [
            r"C:\p\a",
            r"c:\p\a",
            "C:/p/a",
            r"C:\p/a\",
            r"\\?\C:\p\a",
            r"\\.\c:\p\a",
            r"\??\C:\p\a",
            r"//?/C:/p/a",
            r"C:\p\.\a",
            r"C:\\p\\a",
        ] {
            assert_eq!(names(p), c(&["p", "a"]), "{p}");
        }
        let unc = Ok((
            Volume::Unc("srv".into(), "share".into()),
            vec!["p".to_owned()],
        ));
        assert_eq!(names(r"\\srv\share\p"), unc);
        assert_eq!(names(r"\\SRV\Share\p"), unc);
        assert_eq!(names(r"\\?\UNC\srv\share\p"), unc);
        assert_eq!(names(r"\\?\unc\srv\share\p"), unc);
    }

    #[test]
    fn what_is_not_a_file_under_a_drive_or_share_is_refused() {
        for p in [r"\p\a", r"C:p\a", "p", "", r"C:"] {
            assert_eq!(names(p), Err(Refused::NotAbsolute), "{p}");
        }
        for p in [
            r"\\.\pipe\x",
            r"\\.\CON",
            r"\\?\GLOBALROOT\Device\HarddiskVolume1\p",
            r"\\?\Volume{01234567-0000-0000-0000-000000000000}\p",
            r"\\.\PhysicalDrive0",
            r"\\srv",
            r"\\srv\\x",
            r"C:\p\..\q",
            "C:\\p\\a\0b",
            "C:\\p\\a\u{1}b",
        ] {
            assert_eq!(names(p), Err(Refused::Outside), "{p}");
        }
    }

    #[test]
    fn trailing_dots_and_spaces_are_dropped_streams_refused() {
        assert_eq!(names(r"C:\p\.git.\config"), c(&["p", ".git", "config"]));
        assert_eq!(names(r"C:\p\.git \config"), c(&["p", ".git", "config"]));
        assert_eq!(names(r"C:\p\.git. . \config"), c(&["p", ".git", "config"]));
        for p in [
            r"C:\p\.git:x\config",
            r"C:\p\config::$DATA",
            r"C:\p\.git::$INDEX_ALLOCATION\config",
            r"C:\p\...",
            r"C:\p\ ",
        ] {
            assert_eq!(names(p), Err(Refused::Outside), "{p}");
        }
    }

    #[test]
    fn reserved_device_names() {
        for yes in [
            "CON",
            "con",
            "Nul",
            "AUX",
            "aux.txt",
            "nul.tar.gz",
            "PRN",
            "COM1",
            "com9",
            "LPT1",
            "COM0",
            "COM\u{b9}",
            "lpt\u{b2}",
            "CONOUT$",
            "conin$",
            "CON ",
            "AUX .txt",
        ] {
            assert!(is_reserved_device_name(yes), "{yes}");
            assert_eq!(
                names(&format!(r"C:\p\{yes}")),
                Err(Refused::Outside),
                "{yes}"
            );
        }
        for no in [
            "CONFIG",
            "console",
            "auxiliary",
            "COM10",
            "COM",
            "LPT",
            "xNUL",
            "CONOUT",
            "COM1x",
            "nul_",
            "COM\u{b4}",
        ] {
            assert!(!is_reserved_device_name(no), "{no}");
        }
    }

    #[test]
    fn roots_match_case_insensitively_longest_first() {
        let roots = vec![PathBuf::from(r"C:\Work"), PathBuf::from(r"\\?\c:\work\Sub")];
        assert_eq!(
            locate_windows(&roots, r"c:\WORK\a"),
            Ok((0, vec!["a".to_owned()]))
        );
        assert_eq!(
            locate_windows(&roots, r"\\?\C:\work\sub\b"),
            Ok((1, vec!["b".to_owned()]))
        );
        assert_eq!(locate_windows(&roots, r"C:\Work"), Ok((0, vec![])));
        assert_eq!(
            locate_windows(&roots, r"C:\Workshop\a"),
            Err(Refused::Outside)
        );
        assert_eq!(locate_windows(&roots, r"D:\Work\a"), Err(Refused::Outside));
        // A root on a share matches its UNC spellings, not another share or server.
        let roots = vec![PathBuf::from(r"\\srv\share\proj")];
        for p in [
            r"\\SRV\Share\proj\x",
            r"\\?\UNC\srv\share\PROJ\x",
            "//srv/share/proj/x",
        ] {
            assert_eq!(
                locate_windows(&roots, p),
                Ok((0, vec!["x".to_owned()])),
                "{p}"
            );
        }
        for p in [r"\\srv\other\proj\x", r"\\srv2\share\proj\x", r"C:\proj\x"] {
            assert_eq!(locate_windows(&roots, p), Err(Refused::Outside), "{p}");
        }
        // Unicode case: `É` and `é` are one name to NTFS.
        let roots = vec![PathBuf::from("C:\\Caf\u{c9}")];
        assert_eq!(
            locate_windows(&roots, "C:\\caf\u{e9}\\x"),
            Ok((0, vec!["x".to_owned()]))
        );
    }
}
