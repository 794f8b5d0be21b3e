//! The cross-face option documents (tests/options/cases.json) through the core: the outcome and
//! `data.path` every face must report for them. Each face's suite runs the same file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use acp_host::options::{self, Face};
use acp_host::{Host, HostConfig};
use serde_json::Value;

/// The case file with its placeholders filled in for this machine.
fn cases(dir: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/options/cases.json"
    ))
    .unwrap();
    let file = dir.join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let policy = dir.join("policy.json");
    std::fs::write(&policy, r#"{"preset": "read-only"}"#).unwrap();
    let json_str = |p: &std::path::Path| {
        let s = serde_json::to_string(&p.to_string_lossy()).unwrap();
        s[1..s.len() - 1].to_owned()
    };
    let text = text
        .replace("$DIR", &json_str(dir))
        .replace("$MISSING", &json_str(&dir.join("missing")))
        .replace("$FILE", &json_str(&file))
        .replace("$POLICY", &json_str(&policy))
        .replace("$MOCK", &json_str(&common::mock_agent()));
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

fn outcome(r: acp_host::Result<()>) -> Value {
    match r {
        Ok(()) => Value::from("ok"),
        Err(e) => serde_json::json!({"kind": e.kind(), "path": e.data()["path"]}),
    }
}

#[tokio::test]
async fn every_shared_case_has_its_outcome_in_the_core() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let all = cases(dir.path());
    assert!(all.len() >= 50, "{} cases", all.len());
    for case in &all {
        let doc = &case["doc"];
        let got = match case["document"].as_str().unwrap() {
            "host" => outcome(
                options::host(doc, Face::Rust)
                    .and_then(|o| o.with_hooks(options::Hooks::default()).map(|_| ())),
            ),
            "agent" => match options::agent_spec(doc, Face::Rust) {
                Ok(spec) => {
                    let host = Host::new(HostConfig::default());
                    let r = host.spawn(spec).await.map(|_| ());
                    host.shutdown().await;
                    outcome(r)
                }
                Err(e) => outcome(Err(e)),
            },
            "session" => outcome(options::session(doc, Face::Rust).map(|_| ())),
            "pool" => outcome(options::pool(common::mock(None), doc, Face::Rust).map(|_| ())),
            other => panic!("unknown document {other}"),
        };
        let mut want = case["expect"].clone();
        if let Some(w) = want.as_object_mut() {
            w.remove("except");
        }
        if got != want {
            failures.push(format!("{}: got {got}, want {want}", case["name"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
