//! Command-line analysis for the policy: the forms a command line is matched in.
//!
//! Not a shell parser. Restrictive rules (`deny`, `ask`, `hardDeny`) see many forms of a line
//! (segments, unquoted, wrappers stripped, basenames, `sh -c` scripts) so that common spellings
//! of a denied command are caught; allow rules see only the line's segments as given.

use std::collections::HashSet;

use super::wrappers::{WRAPPERS, Wrapper};

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

/// Shell keywords and prefixes that take no options of their own: dropped before the command.
const KEYWORDS: &[&str] = &[
    "{", "}", "!", "if", "then", "else", "elif", "do", "while", "until", "coproc",
];
const SHELLS: &[&str] = &[
    "sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh",
    "tcsh",
];

fn expand_command(text: &str, out: &mut Forms, depth: usize) {
    if depth < MAX_DEPTH {
        let whole = strip_prefixes(text.trim());
        for script in whole
            .scripts
            .iter()
            .copied()
            .chain(shell_script(whole.command))
        {
            out.push(script);
            expand_command(script, out, depth + 1);
        }
    }
    for seg in segments(text) {
        let unquoted = seg.replace(['"', '\''], "");
        for form in [seg, unquoted.trim()] {
            out.push(form);
            out.push(&basename_form(form));
            let stripped = strip_prefixes(form);
            out.push(stripped.command);
            out.push(&basename_form(stripped.command));
            if depth < MAX_DEPTH {
                for found in find_exec(stripped.command) {
                    out.push(found);
                    expand_command(found, out, depth + 1);
                }
                let scripts = stripped.scripts.iter().copied();
                for script in scripts.chain(shell_script(stripped.command)) {
                    out.push(script);
                    expand_command(script, out, depth + 1);
                }
            }
        }
    }
}

/// How deep `sh -c` scripts (and wrapper command strings) inside scripts are expanded.
const MAX_DEPTH: usize = 3;

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

/// A command-line option value and the rest: a value in matching `'…'` or `"…"` quotes ends at
/// the closing quote (the quotes are removed); an unquoted one is taken to run to the end of the
/// segment, because a terminal's `args` are joined by spaces and lose their boundaries
/// (`env -S "rm -rf /"` arrives as `env -S rm -rf /`).
fn take_script(s: &str) -> (&str, &str) {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q) {
            return match inner.find(q) {
                Some(end) => (&inner[..end], inner[end + 1..].trim_start()),
                None => (inner, ""),
            };
        }
    }
    (s, "")
}

/// The commands of `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`).
fn find_exec(command: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let Some((first, mut rest)) = split_first(command) else {
        return found;
    };
    if program_name(first) != "find" {
        return found;
    }
    while let Some((tok, after)) = split_first(rest) {
        rest = after;
        if matches!(tok, "-exec" | "-execdir" | "-ok" | "-okdir") {
            // The command runs up to a `;` or `+` argument (`\;` once segments are split).
            let mut end = 0;
            let mut scan = after;
            while let Some((t, next)) = split_first(scan) {
                if matches!(t, ";" | "\\;" | "\\" | "+" | "';'" | "\";\"") {
                    break;
                }
                end = after.len() - next.len();
                scan = next;
            }
            let cmd = after[..end].trim();
            if !cmd.is_empty() {
                found.push(cmd);
            }
            rest = scan;
        }
    }
    found
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

/// A segment with its prefixes removed: the command it runs, and the command lines given to
/// wrappers as option values (`flock -c 'rm -rf /' lock`, `env -S 'rm -rf /'`).
pub(crate) struct Stripped<'a> {
    pub(crate) command: &'a str,
    pub(crate) scripts: Vec<&'a str>,
}

/// Drop leading `NAME=value` assignments, shell keywords and wrappers (with their options and
/// operands, see [`WRAPPERS`]), repeatedly: `sudo -u x timeout -s KILL 5 nice -n 5 rm -rf /` is
/// `rm -rf /`.
fn strip_prefixes(seg: &str) -> Stripped<'_> {
    let mut rest = seg.trim();
    let mut scripts = Vec::new();
    // Bounded: every round consumes at least one token.
    while let Some((first, tail)) = split_first(rest) {
        if is_env_assignment(first) || KEYWORDS.contains(&first) {
            rest = tail;
            continue;
        }
        let name = program_name(first);
        let sub = split_first(tail).map(|(s, _)| s);
        let Some(wrapper) = WRAPPERS
            .iter()
            .find(|w| w.name == name && (w.sub.is_none() || w.sub == sub))
        else {
            break;
        };
        let args = match wrapper.sub {
            Some(_) => split_first(tail).map_or("", |(_, r)| r),
            None => tail,
        };
        rest = skip_wrapper_args(wrapper, args, &mut scripts);
    }
    Stripped {
        command: rest,
        scripts,
    }
}

/// Skip a wrapper's options and operands; collect the command lines given as option values.
fn skip_wrapper_args<'a>(w: &Wrapper, args: &'a str, scripts: &mut Vec<&'a str>) -> &'a str {
    let (mut rest, ended) = skip_options(w, args, scripts);
    if w.operands > 0 {
        for _ in 0..w.operands {
            rest = split_first(rest).map_or("", |(_, r)| r);
        }
        // GNU tools accept options after operands (`flock FILE -c CMD`, `su USER -c CMD`).
        if !ended {
            (rest, _) = skip_options(w, rest, scripts);
        }
    }
    rest
}

/// Skip options (and the values of those that take one) up to the first operand or `--`.
/// Returns the rest and whether `--` ended the options.
fn skip_options<'a>(w: &Wrapper, args: &'a str, scripts: &mut Vec<&'a str>) -> (&'a str, bool) {
    let mut rest = args;
    loop {
        // `tok` starts at index 0 of `here`, so option values can be sliced out of `here`.
        let here = rest.trim_start();
        let Some((tok, after)) = split_first(here) else {
            break;
        };
        if tok == "--" {
            return (after, true);
        }
        if tok == "-" {
            // `su -` (a login shell), `xargs -` and the like: a flag.
            rest = after;
            continue;
        }
        let Some(body) = tok.strip_prefix('-') else {
            break;
        };
        if let Some(long) = body.strip_prefix('-') {
            let (name, value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            if w.script_long.contains(&name) {
                let from = if value {
                    // The value starts after the `=`: `--command='rm -rf /'`.
                    let at = tok.find('=').map_or(tok.len(), |i| i + 1);
                    &here[at..]
                } else {
                    after
                };
                let (script, tail) = take_script(from);
                scripts.push(script);
                rest = tail;
            } else if !value && w.long_args.contains(&name) {
                rest = split_first(after).map_or("", |(_, r)| r);
            } else {
                rest = after;
            }
            continue;
        }
        rest = after;
        for (i, c) in body.char_indices() {
            let attached = i + c.len_utf8() < body.len();
            if w.script_short.contains(c) {
                // `-c 'cmd'` or `-c'cmd'`: the value may be quoted and contain spaces.
                let from = if attached {
                    &here[1 + i + c.len_utf8()..]
                } else {
                    after
                };
                let (script, tail) = take_script(from);
                scripts.push(script);
                rest = tail;
                break;
            }
            if w.short_args.contains(c) {
                if !attached {
                    rest = split_first(after).map_or("", |(_, r)| r);
                }
                break;
            }
        }
    }
    (rest, false)
}
/// The script of `sh -c script` / `bash -lc script` / `bash -o pipefail -c script` (surrounding
/// quotes removed).
fn shell_script(seg: &str) -> Option<&str> {
    let (first, mut rest) = split_first(seg)?;
    if !SHELLS.contains(&program_name(first)) {
        return None;
    }
    while let Some((flag, tail)) = split_first(rest) {
        if !flag.starts_with(['-', '+']) {
            return None;
        }
        if matches!(flag, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            // These take a value: `bash -o pipefail -c …`.
            rest = split_first(tail).map_or("", |(_, r)| r);
            continue;
        }
        if flag.starts_with('-') && !flag.starts_with("--") && flag.contains('c') {
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
        assert_eq!(
            strip_prefixes("FOO=1 sudo -E env rm -rf /").command,
            "rm -rf /"
        );
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

    fn stripped(seg: &str) -> &str {
        strip_prefixes(seg).command
    }

    #[test]
    fn wrappers_with_option_values_and_operands() {
        for (line, want) in [
            ("timeout 5 rm -rf /", "rm -rf /"),
            ("timeout -s KILL -k 2 5 rm x", "rm x"),
            ("timeout --signal=KILL 5s rm x", "rm x"),
            ("/usr/bin/timeout 5 /bin/rm x", "/bin/rm x"),
            ("nice -n 5 rm x", "rm x"),
            ("nice -5 rm x", "rm x"),
            ("nice --adjustment 5 rm x", "rm x"),
            ("setsid -f rm x", "rm x"),
            ("stdbuf -oL -e 0 rm x", "rm x"),
            ("ionice -c 3 rm x", "rm x"),
            ("ionice -c3 -n7 rm x", "rm x"),
            ("chrt -f 1 rm x", "rm x"),
            ("taskset -c 0 rm x", "rm x"),
            ("taskset 0x1 rm x", "rm x"),
            ("flock -w 3 /tmp/lock rm x", "rm x"),
            ("nohup rm x", "rm x"),
            ("env -i PATH=/bin rm x", "rm x"),
            ("env -u HOME -C /tmp rm x", "rm x"),
            ("xargs -0 -n 1 -I {} rm {}", "rm {}"),
            ("busybox rm x", "rm x"),
            ("sudo -u nobody -g adm rm x", "rm x"),
            ("sudo --user=nobody rm x", "rm x"),
            ("doas -u root rm x", "rm x"),
            ("unbuffer -p rm x", "rm x"),
            ("watch -n 1 rm x", "rm x"),
            ("strace -f -e trace=file -o /dev/null rm x", "rm x"),
            ("time -p rm x", "rm x"),
            ("command -p rm x", "rm x"),
            ("exec -a foo rm x", "rm x"),
            ("sudo timeout 5 nice -n 5 FOO=1 rm x", "rm x"),
            ("uv run --with requests rm x", "rm x"),
            ("bundle exec rm x", "rm x"),
            ("chroot / rm x", "rm x"),
            ("if true", "true"),
            // Not wrappers: left alone.
            ("uv pip install x", "uv pip install x"),
            ("rm x", "rm x"),
        ] {
            assert_eq!(stripped(line), want, "{line}");
        }
    }

    #[test]
    fn wrapper_command_strings_are_scripts() {
        for (line, want) in [
            ("flock /tmp/lock -c 'rm -rf /'", "rm -rf /"),
            ("flock -c \"rm -rf /\" /tmp/lock", "rm -rf /"),
            ("su -c 'rm -rf /' root", "rm -rf /"),
            ("su root -c 'rm -rf /'", "rm -rf /"),
            ("su - root --command='rm -rf /'", "rm -rf /"),
            ("script -q -c 'rm -rf /' /dev/null", "rm -rf /"),
            ("env -S 'rm -rf /'", "rm -rf /"),
            ("env -S'rm -rf /'", "rm -rf /"),
        ] {
            assert_eq!(strip_prefixes(line).scripts, vec![want], "{line}");
        }
        assert_eq!(
            shell_script("bash -o pipefail -c 'rm -rf /'"),
            Some("rm -rf /")
        );
        assert_eq!(
            find_exec("find . -name x -exec rm -f {} \\"),
            vec!["rm -f {}"]
        );
        assert_eq!(find_exec("find . -execdir rm {} + -print"), vec!["rm {}"]);
    }

    #[test]
    fn deny_forms_see_through_wrappers() {
        for line in [
            "timeout 5 rm -rf /",
            "nice -n 5 rm -rf /",
            "setsid rm -rf /",
            "/usr/bin/timeout 5 /bin/rm -rf /",
            "bash -c timeout 5 rm -rf /",
            "sh -c 'sudo -u x nohup rm -rf /'",
            "flock /tmp/l -c 'rm -rf /'",
            "find / -exec rm -rf / ;",
            "ls | xargs -0 rm -rf /",
        ] {
            let forms = CommandForms::new(line).deny.list;
            assert!(forms.iter().any(|f| f == "rm -rf /"), "{line}: {forms:?}");
        }
    }
}
