//! Writes one test per ```rust block of the docs listed in tests/docs/files.txt into
//! $OUT_DIR/blocks.rs; tests/blocks.rs includes it. A block marked `<!-- doc-test: skip ... -->`
//! or `<!-- doc-test: compile ... -->` on the line before it is respectively left out or only
//! compiled (its test is `#[ignore]`d); scripts/test-docs prints the reasons.
// A build script reports a broken doc list or prelude by failing the build.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let list = root.join("tests/docs/files.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    // scripts/test-docs names the files it runs (its own test feeds it a broken fixture).
    println!("cargo:rerun-if-env-changed=ACP_DOC_FILES");
    let files = match std::env::var("ACP_DOC_FILES") {
        Ok(v) => v.split(':').map(str::to_owned).collect::<Vec<_>>(),
        Err(_) => std::fs::read_to_string(&list)
            .expect("tests/docs/files.txt")
            .lines()
            .map(str::to_owned)
            .collect(),
    };
    let prelude_path = root.join("tests/docs/rust/prelude.rs.in");
    println!("cargo:rerun-if-changed={}", prelude_path.display());
    let prelude = std::fs::read_to_string(&prelude_path).expect("prelude.rs.in");
    let mut out = String::new();
    for rel in &files {
        let rel = rel.trim();
        if rel.is_empty() || rel.starts_with('#') {
            continue;
        }
        let path = root.join(rel);
        println!("cargo:rerun-if-changed={}", path.display());
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let t = lines[i].trim_start();
            let indent = lines[i].len() - t.len();
            if !t.starts_with("```") {
                i += 1;
                continue;
            }
            let lang = t
                .trim_start_matches('`')
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_owned();
            let start = i;
            let mut body = String::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                body.push_str(lines[i].get(indent..).unwrap_or(lines[i].trim_start()));
                body.push('\n');
                i += 1;
            }
            i += 1;
            if lang != "rust" {
                continue;
            }
            let marker = lines[..start]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim())
                .unwrap_or("");
            let kind = marker
                .strip_prefix("<!-- doc-test:")
                .map(|m| m.split_whitespace().next().unwrap_or(""));
            if kind == Some("skip") {
                continue;
            }
            let body = abs_paths(&body);
            let name = format!(
                "{}_l{}",
                rel.replace(['/', '.', '-'], "_").to_lowercase(),
                start + 1
            );
            // Ignored: they need the scratch directory scripts/test-docs prepares (it passes
            // --ignored); a `compile` block's name ends in `_compiled` and is skipped there.
            let (name, ignore) = if kind == Some("compile") {
                (
                    format!("{name}_compiled"),
                    "#[ignore = \"compiled only\"]\n",
                )
            } else {
                (name, "#[ignore = \"run by scripts/test-docs\"]\n")
            };
            writeln!(
                out,
                "#[tokio::test(flavor = \"multi_thread\", worker_threads = 2)]\n{ignore}#[allow(unused, clippy::all, clippy::pedantic)]\nasync fn {name}() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {{\n    // {rel}:{line}\n    let fixture = acp_host_doc_tests::Fixture::new(\"{name}\").await;\n{prelude}\n    {{\n{body}\n    }}\n    #[allow(unreachable_code)]\n    Ok(())\n}}\n",
                line = start + 1,
            )
            .unwrap();
        }
    }
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("blocks.rs");
    std::fs::write(dest, out).unwrap();
}

/// `"/abs/…"` (a path of the reader's) becomes `acp_host_doc_tests::abs("/abs/…")`.
fn abs_paths(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(i) = rest.find("\"/abs/") {
        let end = rest[i + 1..]
            .find('"')
            .map(|e| i + 1 + e + 1)
            .unwrap_or(rest.len());
        out.push_str(&rest[..i]);
        out.push_str("acp_host_doc_tests::abs(");
        out.push_str(&rest[i..end]);
        out.push(')');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
