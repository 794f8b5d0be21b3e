//! The one error table (`acp_host::error::ERROR_KINDS`): docs/ERRORS.md is generated from it, the
//! core's own kinds are all in it, and the C header's statuses match it name for name, number
//! for number.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use acp_host::error::{ERROR_KINDS, Reach, markdown_table};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn docs_errors_md_shows_the_table() {
    let path = root().join("docs/ERRORS.md");
    let text = std::fs::read_to_string(&path).expect("docs/ERRORS.md");
    let (begin, end) = ("<!-- errors:begin -->\n", "<!-- errors:end -->");
    let start = text.find(begin).expect("begin marker") + begin.len();
    let stop = text.find(end).expect("end marker");
    let table = markdown_table();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        let fresh = format!("{}{}{}", &text[..start], table, &text[stop..]);
        std::fs::write(&path, fresh).expect("write");
        return;
    }
    assert!(
        text[start..stop] == table,
        "docs/ERRORS.md is stale: UPDATE_EXPECT=1 cargo test -p acp-host --test integration error_table::"
    );
}

#[test]
fn every_core_error_kind_is_in_the_table_for_every_face() {
    use acp_host::Error;
    let samples = [
        Error::AgentExited(Default::default()),
        Error::Timeout {
            what: "x".into(),
            after_ms: 1,
        },
        Error::Unsupported("x".into()),
        Error::Protocol("x".into()),
        Error::Agent {
            code: 1,
            message: "x".into(),
            data: None,
        },
        Error::AuthRequired {
            message: "x".into(),
            data: None,
        },
        Error::VersionUnsupported {
            agent: 2.into(),
            host: 1,
        },
        Error::InvalidArgument("x".into()),
        Error::InvalidConfig {
            path: "p".into(),
            message: "x".into(),
        },
        Error::SpawnFailed {
            command: "x".into(),
            message: "x".into(),
        },
        Error::Io(std::sync::Arc::new(std::io::Error::other("x"))),
        Error::Closed("x".into()),
        Error::Cancelled,
        Error::Busy("x".into()),
        Error::NotFound("x".into()),
        Error::AlreadyResolved("x".into()),
        Error::EventsStalled { waited_ms: 1 },
    ];
    let every: BTreeSet<&str> = ERROR_KINDS
        .iter()
        .filter(|k| k.reach == Reach::Every)
        .map(|k| k.kind)
        .collect();
    let core: BTreeSet<&str> = samples.iter().map(Error::kind).collect();
    assert_eq!(
        core, every,
        "the core's kinds are exactly the every-face kinds"
    );
}

#[test]
fn a_bad_policy_is_invalid_config_with_its_path() {
    let bad = r#"{"rules":[{"action":"maybe"}]}"#;
    let err: acp_host::Error = acp_host::permission::policy::Policy::from_json(bad)
        .expect_err("a bad action")
        .into();
    assert_eq!(err.kind(), "invalid_config");
    let path = err.data()["path"].as_str().unwrap_or_default().to_owned();
    assert!(path.starts_with("policy.rules[0]"), "{path}");
}

#[test]
fn the_c_header_statuses_are_the_table() {
    let header = std::fs::read_to_string(root().join("include/acp_host.h")).expect("header");
    let mut statuses = BTreeSet::new();
    for line in header.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("ACPH_STATUS_") else {
            continue;
        };
        let Some((name, num)) = rest.split_once(" = ") else {
            continue;
        };
        let num: u32 = num.trim_end_matches(',').parse().expect("a number");
        statuses.insert((name.to_ascii_lowercase(), num));
    }
    // Not errors (ok, empty) and the catch-all for kinds newer than the header (other).
    statuses.retain(|(n, _)| !matches!(n.as_str(), "ok" | "empty" | "other"));
    let table: BTreeSet<(String, u32)> = ERROR_KINDS
        .iter()
        .map(|k| (k.kind.to_owned(), k.status))
        .collect();
    assert_eq!(statuses, table);
}

/// The kinds a face can raise, read from its sources: Node's `AcpErrorCode` union and the `code`
/// attributes of Python's exception classes.
fn face_kinds(path: &str, pattern: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join(path)).expect("face source");
    let re = regex::Regex::new(pattern).expect("regex");
    re.captures_iter(&text).map(|c| c[1].to_owned()).collect()
}

fn every_face_kinds() -> BTreeSet<String> {
    ERROR_KINDS
        .iter()
        .filter(|k| k.reach == Reach::Every)
        .map(|k| k.kind.to_owned())
        .collect()
}

#[test]
fn node_error_codes_are_the_every_face_kinds() {
    let text =
        std::fs::read_to_string(root().join("bindings/node/ts/errors.ts")).expect("errors.ts");
    let start = text
        .find("export type AcpErrorCode =")
        .expect("AcpErrorCode");
    let end = start + text[start..].find(';').expect("end of the union");
    let union = &text[start..end];
    let re = regex::Regex::new(r"'([a-z_]+)'").expect("regex");
    let codes: BTreeSet<String> = re.captures_iter(union).map(|c| c[1].to_owned()).collect();
    assert_eq!(codes, every_face_kinds());
}

#[test]
fn python_exception_codes_are_the_every_face_kinds() {
    let codes = face_kinds(
        "bindings/python/python/acp_host/_errors.py",
        r#"(?m)^    code = "([a-z_]+)""#,
    );
    // `error`: the base class's placeholder; `service_error`: what an embedder's handler raises
    // to answer the agent with a JSON-RPC error (never a kind the host reports).
    let codes: BTreeSet<String> = codes
        .into_iter()
        .filter(|c| c != "error" && c != "service_error")
        .collect();
    assert_eq!(codes, every_face_kinds());
}
