//! Agent text made safe to show a person.
//!
//! Everything an agent sends — titles, messages, paths, commands, option names, its own name, the
//! URL it asks the user to open — is untrusted, and the events carry it verbatim (by design: they
//! are the agent's data). Printed as is, it can make a terminal or a UI show something other than
//! what is there: a bidirectional override (U+202E) reverses what follows, zero-width and other
//! format characters hide text or split a word, tag characters carry invisible ASCII, control
//! characters move the cursor or start escape sequences, a long user name in a URL pushes its real
//! host out of sight.
//!
//! The functions here escape those characters **visibly**, as `<U+202E>` (never dropped: the user
//! sees that something is there), and parse a URL as a browser does so that its host can be shown
//! unmistakably. They are what `acph` uses for everything it prints of an agent's. What is escaped
//! and what is not (look-alike letters, for one) is listed in docs/PERMISSIONS.md ("Showing agent
//! text").

use std::borrow::Cow;

use unicode_general_category::{GeneralCategory, get_general_category};

/// Code points with the `Default_Ignorable_Code_Point` property (Unicode 16.0,
/// DerivedCoreProperties.txt): drawn as nothing. Most are format characters (Cf) anyway; this
/// adds the variation selectors, the Hangul fillers, the combining grapheme joiner, the Mongolian
/// free variation selectors, the Khmer inherent vowels, and the blocks reserved for future
/// ignorables (so a format character of a later Unicode version is escaped too).
const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

const ZWNJ: char = '\u{200C}';
const ZWJ: char = '\u{200D}';

fn default_ignorable(c: char) -> bool {
    let u = u32::from(c);
    if u < 0xAD {
        return false;
    }
    DEFAULT_IGNORABLE
        .iter()
        .any(|&(lo, hi)| (lo..=hi).contains(&u))
}

/// A variation selector (emoji/text presentation, CJK variants, Mongolian variants).
fn is_selector(c: char) -> bool {
    matches!(u32::from(c), 0xFE00..=0xFE0F | 0xE0100..=0xE01EF | 0x180B..=0x180D | 0x180F)
}

/// What running text escapes: controls, format characters (Cf: the bidirectional controls, the
/// zero-width characters, the soft hyphen, the byte order mark, the tag characters, ...), line and
/// paragraph separators, and every default-ignorable code point.
fn hides_or_reorders(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::Surrogate
    ) || default_ignorable(c)
}

/// True when [`escape`] escapes `c`: every control character (newlines and tabs too), every
/// format character (Unicode category Cf), the line and paragraph separators (Zl, Zp), private-use
/// (Co) and unassigned (Cn, as of Unicode 16.0) code points, and every default-ignorable code
/// point (variation selectors and Hangul fillers included).
pub fn is_unsafe(c: char) -> bool {
    hides_or_reorders(c)
        || (!c.is_ascii()
            && matches!(
                get_general_category(c),
                GeneralCategory::PrivateUse | GeneralCategory::Unassigned
            ))
}

fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write;
    let _ = write!(out, "<U+{:04X}>", u32::from(c));
}

/// One field — a title, a name, a path, a command, a URL — made safe to show on one line: each
/// character [`is_unsafe`] is written as `<U+XXXX>` (uppercase hex, at least four digits).
/// Everything else, accents, CJK and emoji included, is kept. Borrowed when nothing is escaped.
///
/// The escape is for display only: it is not reversible (an agent can write `<U+202E>` itself).
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// What was last written by [`escape_text`], for the joiners and selectors it keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start of text, whitespace, or an escape.
    Nothing,
    /// A visible character.
    Base,
    /// A variation selector kept after a base.
    Selector,
    /// A zero-width (non-)joiner kept between two visible characters.
    Joiner,
}

/// Running text — an agent's message or thought, a line of its stderr — made safe to show,
/// keeping what ordinary text needs. Escaped as `<U+XXXX>`: controls other than newline and tab
/// (a CR that ends a line before LF is dropped), format characters (Cf), line and paragraph
/// separators, and default-ignorable code points, except:
///
/// - a zero-width joiner or non-joiner (U+200D, U+200C) between two visible characters (emoji
///   sequences such as 👩‍💻, Indic and Persian text);
/// - one variation selector right after a visible character (❤️, CJK variants); a second one in
///   a row, which can only smuggle data, is escaped.
///
/// Unlike [`escape`], private-use and unassigned code points are kept (newer emoji). Tag
/// characters are always escaped, so the flags of England, Scotland and Wales show their tags.
/// Borrowed when nothing is escaped.
pub fn escape_text(s: &str) -> Cow<'_, str> {
    if !s
        .chars()
        .any(|c| c != '\n' && c != '\t' && hides_or_reorders(c))
    {
        return Cow::Borrowed(s);
    }
    let visible = |c: char| !c.is_whitespace() && !hides_or_reorders(c);
    let mut out = String::with_capacity(s.len() + 16);
    let mut prev = Prev::Nothing;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        prev = match c {
            '\n' | '\t' => {
                out.push(c);
                Prev::Nothing
            }
            '\r' if next == Some('\n') => prev,
            ZWJ | ZWNJ
                if matches!(prev, Prev::Base | Prev::Selector) && next.is_some_and(visible) =>
            {
                out.push(c);
                Prev::Joiner
            }
            c if is_selector(c) && prev == Prev::Base => {
                out.push(c);
                Prev::Selector
            }
            c if hides_or_reorders(c) => {
                push_escaped(&mut out, c);
                Prev::Nothing
            }
            c => {
                out.push(c);
                if c.is_whitespace() {
                    Prev::Nothing
                } else {
                    Prev::Base
                }
            }
        };
    }
    Cow::Owned(out)
}

/// A URL an agent asks the user to open (URL-mode elicitation), prepared for a consent prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlView {
    /// The whole URL, never shortened: as a browser reads it (the WHATWG serialization: ASCII
    /// only, the host in its ASCII (punycode) form, `\` read as `/` in http(s) URLs, spaces,
    /// controls and non-ASCII percent-encoded). For a URL that does not parse, the agent's text
    /// passed through [`escape`].
    pub shown: String,
    /// Where it goes: the host as a browser contacts it — the ASCII (punycode) name, or the IP
    /// address — with `:port` when the port is not the scheme's default. `None` when the URL
    /// does not parse or has no host.
    pub host: Option<String>,
    /// The Unicode form of an internationalized (`xn--`) host name, escaped, when it differs
    /// from [`host`](Self::host).
    pub host_unicode: Option<String>,
    /// Why the URL should not be offered to open at all: it does not parse, or it is not an
    /// `http`/`https` URL (`javascript:`, `data:`, `file:`, ... can run code or open local files).
    /// `acph` declines those without asking.
    pub refusal: Option<String>,
    /// What the user should know before consenting (each a short sentence): a user name before
    /// the host, an internationalized host, an IP address, plain http, backslashes.
    pub warnings: Vec<String>,
}

/// Parse `raw` as browsers do (WHATWG URL Standard) and describe it for a consent prompt.
pub fn url(raw: &str) -> UrlView {
    let parsed = match url::Url::parse(raw) {
        Ok(u) => u,
        Err(e) => {
            return UrlView {
                shown: escape(raw).into_owned(),
                host: None,
                host_unicode: None,
                refusal: Some(format!("it is not a valid URL ({e})")),
                warnings: Vec::new(),
            };
        }
    };
    let shown = escape(parsed.as_str()).into_owned();
    let scheme = parsed.scheme();
    let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
    let mut host = None;
    let mut host_unicode = None;
    let mut warnings = Vec::new();
    match parsed.host() {
        Some(url::Host::Domain(d)) => {
            host = Some(format!("{}{port}", escape(d)));
            if d.split('.').any(|l| l.starts_with("xn--")) {
                let (unicode, _) = idna::domain_to_unicode(d);
                if unicode != d {
                    host_unicode = Some(escape(&unicode).into_owned());
                }
            }
        }
        Some(url::Host::Ipv4(a)) => host = Some(format!("{a}{port}")),
        Some(url::Host::Ipv6(a)) => host = Some(format!("[{a}]{port}")),
        None => {}
    }
    if scheme != "http" && scheme != "https" {
        return UrlView {
            shown,
            host,
            host_unicode,
            refusal: Some(format!(
                "it is not an http or https URL (scheme `{}`)",
                escape(scheme)
            )),
            warnings,
        };
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let what = if parsed.password().is_some() {
            "a user name and password"
        } else {
            "a user name"
        };
        warnings.push(format!(
            "it carries {what} before the host: everything up to `@` is not where it goes"
        ));
    }
    if let Some(unicode) = &host_unicode {
        warnings.push(format!(
            "the host is internationalized (shown as {unicode}): look-alike letters are not \
             detected, compare its ASCII form"
        ));
    }
    if matches!(parsed.host(), Some(url::Host::Ipv4(_) | url::Host::Ipv6(_))) {
        warnings.push("the host is an IP address, not a name".to_owned());
    }
    if scheme == "http" {
        warnings.push("plain http: not encrypted".to_owned());
    }
    if raw.contains('\\') {
        warnings.push("its backslashes are read as slashes, as browsers read them".to_owned());
    }
    UrlView {
        shown,
        host,
        host_unicode,
        refusal: None,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character the issue names, one by one.
    const HIDING: &[char] = &[
        '\u{061C}',
        '\u{200E}',
        '\u{200F}',
        '\u{202A}',
        '\u{202B}',
        '\u{202C}',
        '\u{202D}',
        '\u{202E}',
        '\u{2066}',
        '\u{2067}',
        '\u{2068}',
        '\u{2069}', // bidi controls
        '\u{200B}',
        '\u{200C}',
        '\u{200D}',
        '\u{2060}',
        '\u{2061}',
        '\u{2062}',
        '\u{2063}',
        '\u{2064}',
        '\u{FEFF}',
        '\u{00AD}', // zero-width and invisible
        '\u{E0001}',
        '\u{E0041}',
        '\u{E007F}', // tags
        '\u{FE0F}',
        '\u{E0100}', // variation selectors
        '\u{2028}',
        '\u{2029}', // separators
        '\u{0085}',
        '\u{009B}',
        '\u{001B}',
        '\u{0007}',
        '\u{007F}',
        '\n',
        '\t',
        '\r', // controls
        '\u{3164}',
        '\u{115F}',
        '\u{034F}',
        '\u{180E}', // fillers and other ignorables
        '\u{E000}',
        '\u{F0000}', // private use
        '\u{0378}',  // unassigned
    ];

    #[test]
    fn escape_shows_every_hiding_character_as_its_code_point() {
        for &c in HIDING {
            let s = format!("a{c}b");
            let want = format!("a<U+{:04X}>b", u32::from(c));
            assert_eq!(escape(&s), want, "{c:?}");
        }
        assert_eq!(escape("invoice\u{202E}fdp.exe"), "invoice<U+202E>fdp.exe");
    }

    #[test]
    fn escape_keeps_ordinary_text_borrowed() {
        for s in [
            "café naïve Ærø",
            "日本語のテキスト",
            "עברית ועربية", // right-to-left letters are text, not controls
            "emoji 🎉🚀",
            "tabs are not here, spaces   are",
            "",
        ] {
            assert!(matches!(escape(s), Cow::Borrowed(_)), "{s:?}");
        }
    }

    #[test]
    fn escape_text_keeps_newlines_tabs_and_ordinary_text() {
        let s = "café 日本語 🎉\n\tindented\n";
        assert!(matches!(escape_text(s), Cow::Borrowed(_)));
        assert_eq!(escape_text("one\r\ntwo\r\n"), "one\ntwo\n");
        assert_eq!(escape_text("over\rwrite"), "over<U+000D>write");
        assert_eq!(escape_text("\x1b[31mred"), "<U+001B>[31mred");
    }

    #[test]
    fn escape_text_escapes_what_reorders_or_hides() {
        for &c in HIDING {
            if matches!(c, '\n' | '\t' | '\r') || !hides_or_reorders(c) {
                continue;
            }
            // Between spaces nothing is joined or selected: always escaped.
            let s = format!("a {c} b");
            let want = format!("a <U+{:04X}> b", u32::from(c));
            assert_eq!(escape_text(&s), want, "{c:?}");
        }
        // Private use and unassigned code points are kept in running text (newer emoji).
        assert_eq!(escape_text("a\u{E000}\u{0378}"), "a\u{E000}\u{0378}");
    }

    #[test]
    fn escape_text_keeps_emoji_sequences_but_not_smuggling() {
        for s in [
            "👩\u{200D}💻",        // ZWJ sequence
            "🏳\u{FE0F}\u{200D}🌈", // selector then ZWJ
            "❤\u{FE0F} love",      // emoji presentation
            "می\u{200C}خواهم",     // Persian ZWNJ
            "1\u{FE0F}\u{20E3}",   // keycap
        ] {
            assert_eq!(escape_text(s), s, "{s:?}");
        }
        // A joiner with nothing visible on one side, two selectors in a row, a joiner before a
        // control: escaped.
        assert_eq!(escape_text("\u{200D}x"), "<U+200D>x");
        assert_eq!(escape_text("x\u{200D}"), "x<U+200D>");
        assert_eq!(escape_text("x\u{200D} y"), "x<U+200D> y");
        assert_eq!(escape_text("x\u{200D}\u{200D}y"), "x<U+200D><U+200D>y");
        assert_eq!(
            escape_text("x\u{FE0F}\u{FE01}\u{FE02}"),
            "x\u{FE0F}<U+FE01><U+FE02>"
        );
        assert_eq!(escape_text("x\u{200D}\u{202E}"), "x<U+200D><U+202E>");
        // Tags (ASCII smuggling) always.
        assert_eq!(escape_text("🏴\u{E0067}\u{E007F}"), "🏴<U+E0067><U+E007F>");
        // Prompts and titles escape the joiners and selectors too.
        assert_eq!(escape("👩\u{200D}💻"), "👩<U+200D>💻");
    }

    #[test]
    fn a_long_user_name_does_not_hide_the_host() {
        let raw = format!(
            "https://accounts.example.com{}@evil.example/login?next=1",
            "a".repeat(300)
        );
        let v = url(&raw);
        assert_eq!(v.refusal, None);
        assert_eq!(v.host.as_deref(), Some("evil.example"));
        assert_eq!(v.shown, raw, "shown whole");
        assert!(v.warnings[0].contains("user name before the host"), "{v:?}");
        let v = url("https://user:pw@example.com/");
        assert!(v.warnings[0].contains("user name and password"), "{v:?}");
    }

    #[test]
    fn hosts_are_shown_as_browsers_contact_them() {
        // IDN: ASCII form as the host, the Unicode form beside it, a warning.
        let v = url("https://аpple.example/"); // Cyrillic а
        assert_eq!(v.host.as_deref(), Some("xn--pple-43d.example"));
        assert_eq!(v.host_unicode.as_deref(), Some("аpple.example"));
        assert_eq!(v.shown, "https://xn--pple-43d.example/");
        assert!(v.warnings.iter().any(|w| w.contains("internationalized")));
        // Backslashes are slashes to a browser: the host is good.example, not evil.example.
        let v = url("https://good.example\\@evil.example/");
        assert_eq!(v.host.as_deref(), Some("good.example"));
        assert_eq!(v.shown, "https://good.example/@evil.example/");
        assert!(v.warnings.iter().any(|w| w.contains("backslashes")));
        // Percent-encoded and numeric hosts are decoded as browsers decode them.
        let v = url("http://%65vil.example:8080/");
        assert_eq!(v.host.as_deref(), Some("evil.example:8080"));
        assert!(v.warnings.iter().any(|w| w.contains("plain http")));
        let v = url("https://0x7f.1/");
        assert_eq!(v.host.as_deref(), Some("127.0.0.1"));
        assert!(v.warnings.iter().any(|w| w.contains("IP address")));
        let v = url("https://[::1]:443/");
        assert_eq!(v.host.as_deref(), Some("[::1]"));
        // Spaces, controls and non-ASCII in the path are percent-encoded: `shown` is ASCII.
        let v = url("https://example.com/a b\u{202E}c\t");
        assert_eq!(v.shown, "https://example.com/a%20b%E2%80%AEc");
        assert!(v.warnings.is_empty(), "{v:?}");
    }

    #[test]
    fn urls_that_are_not_web_addresses_are_refused() {
        for raw in [
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "vscode://extension/x",
        ] {
            let v = url(raw);
            assert!(
                v.refusal
                    .as_deref()
                    .is_some_and(|r| r.contains("not an http")),
                "{raw}: {v:?}"
            );
        }
        // Does not parse: refused, shown escaped.
        let v = url("https://exa mple.com/\u{202E}");
        assert!(
            v.refusal
                .as_deref()
                .is_some_and(|r| r.contains("not a valid URL"))
        );
        assert_eq!(v.shown, "https://exa mple.com/<U+202E>");
        assert_eq!(v.host, None);
        // A bidi control in the host does not parse (IDNA forbids it).
        let v = url("https://evil\u{202E}elpmaxe.com/");
        assert!(v.refusal.is_some(), "{v:?}");
        assert!(!v.shown.contains('\u{202E}'));
        assert!(url("not a url").refusal.is_some());
    }
}
