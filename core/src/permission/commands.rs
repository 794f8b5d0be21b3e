//! Command-line analysis for the policy: the forms a command line is matched in.
//!
//! Not a shell parser. Restrictive rules (`deny`, `ask`, `hardDeny`) see many forms of a line
//! (segments, unquoted, wrappers stripped, basenames, `sh -c` scripts) so that common spellings
//! of a denied command are caught; allow rules see only the line's segments as given.

use std::collections::HashSet;

pub(crate) fn join_command(command: &str, args: &[&str]) -> String {
    let mut line = command.to_owned();
    for arg in args {
        line.push(' ');
        line.push_str(arg);
    }
    line
}

/// Command lines longer than this are not analysed: they match every restrictive command
/// pattern and no allow pattern (fail-closed, and the actor never spends long on one request).
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// The forms of one command line.
pub(crate) struct CommandForms {
    /// For deny/ask/hardDeny: the line, each segment, each also unquoted, with prefixes (env
    /// assignments, `sudo`…) stripped and with the program replaced by its basename, and the
    /// script of `sh -c …`, recursively.
    pub(crate) deny: Forms,
    /// For allow: the line split at shell control operators; every one must match.
    pub(crate) segments: Vec<String>,
    /// False when the line writes to a file through a redirection: no rule can allow it.
    pub(crate) allowable: bool,
    /// Longer than [`MAX_COMMAND_BYTES`].
    pub(crate) oversized: bool,
}

impl CommandForms {
    pub(crate) fn new(line: &str) -> CommandForms {
        if line.len() > MAX_COMMAND_BYTES {
            return CommandForms {
                deny: Forms::default(),
                segments: Vec::new(),
                allowable: false,
                oversized: true,
            };
        }
        let mut deny = Forms::default();
        deny.push(line.trim());
        expand_command(line, &mut deny, 0);
        CommandForms {
            deny,
            segments: segments(line).into_iter().map(str::to_owned).collect(),
            allowable: !has_file_redirect(line),
            oversized: false,
        }
    }
}

/// Distinct non-empty strings in insertion order.
#[derive(Default)]
pub(crate) struct Forms {
    pub(crate) list: Vec<String>,
    seen: HashSet<String>,
}

impl Forms {
    fn push(&mut self, s: &str) {
        if !s.is_empty() && !self.seen.contains(s) {
            self.seen.insert(s.to_owned());
            self.list.push(s.to_owned());
        }
    }
}

const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "command", "builtin", "exec", "nohup", "time", "nice", "{", "}", "!",
    "if", "then", "else", "elif", "do", "while", "until",
];
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "fish"];

fn expand_command(text: &str, out: &mut Forms, depth: usize) {
    if depth < 2
        && let Some(script) = shell_script(strip_prefixes(text.trim()))
    {
        out.push(script);
        expand_command(script, out, depth + 1);
    }
    for seg in segments(text) {
        let unquoted = seg.replace(['"', '\''], "");
        for form in [seg, unquoted.trim()] {
            out.push(form);
            out.push(&basename_form(form));
            let stripped = strip_prefixes(form);
            out.push(stripped);
            out.push(&basename_form(stripped));
            if depth < 2
                && let Some(script) = shell_script(stripped)
            {
                out.push(script);
                expand_command(script, out, depth + 1);
            }
        }
    }
}

/// Split at `;`, `&`, `&&`, `|`, `||`, newlines, parentheses and backticks (not at the `&` of
/// `2>&1` / `&>`). Not a shell parser: quotes are not honoured, which only yields more segments.
fn segments(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|(_, n)| *n);
        let split = match c {
            ';' | '|' | '\n' | '\r' | '(' | ')' | '`' => true,
            '&' => !matches!(prev, Some('>' | '<')) && next != Some('>'),
            _ => false,
        };
        if split {
            let seg = text[start..i].trim();
            if !seg.is_empty() {
                out.push(seg);
            }
            start = i + c.len_utf8();
        }
        prev = Some(c);
    }
    let seg = text[start..].trim();
    if !seg.is_empty() {
        out.push(seg);
    }
    out
}

/// `(first token, rest)` with whitespace trimmed around them.
fn split_first(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    match s.find(char::is_whitespace) {
        Some(i) => Some((&s[..i], s[i..].trim_start())),
        None => Some((s, "")),
    }
}

fn program_name(token: &str) -> &str {
    let base = token.rsplit(['/', '\\']).next().unwrap_or(token);
    match base.len().checked_sub(4) {
        Some(cut)
            if cut > 0
                && base.is_char_boundary(cut)
                && base[cut..].eq_ignore_ascii_case(".exe") =>
        {
            &base[..cut]
        }
        _ => base,
    }
}

fn basename_form(seg: &str) -> String {
    match split_first(seg) {
        Some((first, "")) => program_name(first).to_owned(),
        Some((first, rest)) => format!("{} {rest}", program_name(first)),
        None => String::new(),
    }
}

fn is_env_assignment(token: &str) -> bool {
    let Some((name, _)) = token.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Drop leading `NAME=value` assignments, wrappers such as `sudo`/`env`/`nohup` (with their
/// `-flags`) and shell keywords.
fn strip_prefixes(seg: &str) -> &str {
    let mut rest = seg.trim();
    let mut after_wrapper = false;
    while let Some((first, tail)) = split_first(rest) {
        let drop = is_env_assignment(first)
            || WRAPPERS.contains(&program_name(first))
            || (after_wrapper && first.starts_with('-'));
        if !drop {
            break;
        }
        after_wrapper = !is_env_assignment(first) || after_wrapper;
        rest = tail;
    }
    rest
}

/// The script of `sh -c script` / `bash -lc script` (surrounding quotes removed).
fn shell_script(seg: &str) -> Option<&str> {
    let (first, mut rest) = split_first(seg)?;
    if !SHELLS.contains(&program_name(first)) {
        return None;
    }
    while let Some((flag, tail)) = split_first(rest) {
        if !flag.starts_with('-') {
            return None;
        }
        if !flag.starts_with("--") && flag.contains('c') {
            let script = tail.trim();
            for q in ['"', '\''] {
                if script.len() >= 2 && script.starts_with(q) && script.ends_with(q) {
                    return Some(&script[1..script.len() - 1]);
                }
            }
            return Some(script);
        }
        rest = tail;
    }
    None
}

/// Whether the line redirects output into a file (`> f`, `>> f`, `&> f`); `>&2`, `2>&1` and
/// `> /dev/null` do not count.
fn has_file_redirect(line: &str) -> bool {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'>' {
            let mut j = i + 1;
            while j < bytes.len() && matches!(bytes[j], b'>' | b'|') {
                j += 1;
            }
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < bytes.len() && bytes[j] == b'&' {
                i = j + 1;
                continue;
            }
            let end = line[j..]
                .find(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | ')'))
                .map_or(line.len(), |k| j + k);
            if &line[j..end] != "/dev/null" {
                return true;
            }
            i = end;
            continue;
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_commands() {
        assert_eq!(
            segments("cargo test 2>&1 | tail -n 5 && echo ok; ls"),
            vec!["cargo test 2>&1", "tail -n 5", "echo ok", "ls"]
        );
        assert_eq!(segments("echo $(rm -rf /)"), vec!["echo $", "rm -rf /"]);
        assert_eq!(strip_prefixes("FOO=1 sudo -E env rm -rf /"), "rm -rf /");
        assert_eq!(shell_script("bash -lc 'rm -rf /'"), Some("rm -rf /"));
        assert_eq!(shell_script("/bin/bash --norc -c ls"), Some("ls"));
        assert_eq!(shell_script("bash script.sh"), None);
        assert_eq!(basename_form("/usr/bin/rm -rf /"), "rm -rf /");
        assert_eq!(basename_form("C:\\bin\\rm.EXE -rf"), "rm -rf");
        assert!(has_file_redirect("echo hi > ~/.bashrc"));
        assert!(has_file_redirect("echo hi >>out.txt"));
        assert!(!has_file_redirect("cargo test 2>&1 >/dev/null"));
        assert!(!has_file_redirect("echo oops >&2"));
    }

    #[test]
    fn deny_forms_cover_wrappers_and_shells() {
        let forms = CommandForms::new("sh -c \"cd /p && /bin/rm -rf .\"")
            .deny
            .list;
        assert!(forms.iter().any(|f| f == "rm -rf ."), "{forms:?}");
    }
}
