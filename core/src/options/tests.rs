use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::permission::PermissionRequest;

fn err_path(r: Result<impl std::fmt::Debug>) -> (String, String) {
    match r {
        Err(Error::InvalidConfig { path, message }) => (path, message),
        other => panic!("expected invalid_config, got {other:?}"),
    }
}

/// A Unix-style absolute path as the OS spells one (`C:\...` on Windows, where `/ok` is relative).
fn abs(unix: &str) -> String {
    if cfg!(windows) {
        format!("C:{}", unix.replace('/', "\\"))
    } else {
        unix.to_owned()
    }
}

fn host_err(doc: Value) -> (String, String) {
    err_path(host(&doc, Face::Rust).map(|o| o.config))
}

#[test]
fn the_documented_defaults_are_the_defaults() {
    // Every numeric default the table shows is what an empty document gives.
    let eff = effective(&host(&json!({}), Face::Rust).unwrap().config);
    let mut checked = 0;
    markdown::flatten(table::HOST, "", &mut |path, opt| {
        if opt.face.is_some() {
            return;
        }
        let first = opt.default.split_whitespace().next().unwrap_or("");
        let Some(actual) = path.split('.').try_fold(&eff, |v, k| v.get(k)) else {
            panic!("{path} missing from effective()")
        };
        if let Ok(n) = first.parse::<u64>() {
            assert_eq!(actual, &json!(n), "{path}: table says {}", opt.default);
            checked += 1;
        } else if first == "null" {
            assert!(actual.is_null(), "{path}: table says null, is {actual}");
            checked += 1;
        } else if let Some(s) = first.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            assert_eq!(actual, &json!(s), "{path}");
            checked += 1;
        }
    });
    assert!(checked >= 23, "only {checked} defaults checked");
    let r = RestartPolicy::default();
    assert_eq!(restart(&json!({}), Face::Rust).unwrap(), r);
    let d = |name: &str| {
        table::RESTART
            .iter()
            .find(|o| o.name == name)
            .unwrap()
            .default
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(u64::from(r.max_restarts), d("maxRestarts"));
    assert_eq!(r.backoff.as_millis() as u64, d("backoffMs"));
    assert_eq!(r.max_backoff.as_millis() as u64, d("maxBackoffMs"));
    assert_eq!(r.reset_after.as_millis() as u64, d("resetAfterMs"));
    let p = pool(AgentSpec::new("x"), &json!({}), Face::Rust).unwrap();
    let pd = |name: &str| {
        let row = table::POOL.iter().find(|o| o.name == name).unwrap();
        row.default
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(p.warm_spares as u64, pd("warmSpares"));
    assert_eq!(p.max_agents as u64, pd("maxAgents"));
    assert_eq!(
        p.idle_timeout.unwrap().as_millis() as u64,
        pd("idleTimeoutMs")
    );
}

#[test]
fn options_md_is_rendered_from_the_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/OPTIONS.md");
    let want = markdown::render();
    if std::env::var_os("ACP_BLESS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "docs/OPTIONS.md is not the table's rendering; run `ACP_BLESS=1 cargo test -p acp-host --lib options`"
    );
}

#[test]
fn every_option_the_parser_reads_is_in_the_table() {
    // effective() names what the parser sets; an option missing from the table would be read by
    // the parser yet refused as unknown (progressEvents was).
    let eff = effective(&host(&json!({}), Face::Rust).unwrap().config);
    for key in eff.as_object().unwrap().keys() {
        assert!(
            table::HOST.iter().any(|o| o.name == key),
            "{key} is not in the table"
        );
    }
    let on = host(&json!({"progressEvents": true}), Face::Rust).unwrap();
    assert!(on.config.progress_events);
}

#[test]
fn every_value_is_checked_with_its_full_path() {
    let cases = [
        (json!({"maxLineBytes": 0}), "maxLineBytes", "1024"),
        (json!({"maxLineBytes": 1023}), "maxLineBytes", "1024"),
        (
            json!({"maxLineBytes": 1024.5}),
            "maxLineBytes",
            "whole number",
        ),
        (json!({"maxLineBytes": -1}), "maxLineBytes", "whole number"),
        (
            json!({"maxLineBytes": "big"}),
            "maxLineBytes",
            "whole number",
        ),
        (json!({"eventCapacity": 0}), "eventCapacity", "1 ..="),
        (json!({"eventCapacity": 1u64 << 40}), "eventCapacity", "..="),
        (json!({"eventQueueBytes": 10}), "eventQueueBytes", "4096"),
        (
            json!({"requestTimeoutMs": 0}),
            "requestTimeoutMs",
            "null for none",
        ),
        (
            json!({"permissionTimeoutMs": 1u64 << 60}),
            "permissionTimeoutMs",
            "milliseconds",
        ),
        (
            json!({"fsLimits": {"maxReadBytes": -3}}),
            "fsLimits.maxReadBytes",
            "whole",
        ),
        (
            json!({"fsLimits": {"maxRead": 3}}),
            "fsLimits.maxRead",
            "unknown option",
        ),
        (json!({"fsLimits": 3}), "fsLimits", "expected an object"),
        (
            json!({"terminalLimits": {"maxTerminals": 0}}),
            "terminalLimits.maxTerminals",
            "1 ..=",
        ),
        (
            json!({"maxLineByte": 2048}),
            "maxLineByte",
            "unknown option",
        ),
        (json!({"roots": ["rel/dir"]}), "roots[0]", "absolute"),
        (
            json!({"roots": [abs("/ok"), 3]}),
            "roots[1]",
            "absolute path",
        ),
        (json!({"roots": [abs("/a/../b")]}), "roots[0]", "`..`"),
        (json!({"roots": "/one"}), "roots", "list"),
        (
            json!({"permission": "allow"}),
            "permission",
            "\"deny\", \"manual\", \"handler\"",
        ),
        (json!({"fs": "sandbox"}), "fs", "\"builtin\""),
        (
            json!({"unstable": ["session/nope"]}),
            "unstable[0]",
            "session/fork",
        ),
        (
            json!({"elicitationModes": ["form", "mail"]}),
            "elicitationModes[1]",
            "\"url\"",
        ),
        (json!({"wireEvents": "yes"}), "wireEvents", "true or false"),
        (
            json!({"clientInfo": {"name": ""}}),
            "clientInfo.name",
            "empty",
        ),
        (
            json!({"clientInfo": {"nick": "x"}}),
            "clientInfo.nick",
            "unknown",
        ),
        (
            json!({"services": "events"}),
            "services",
            "only in the C face",
        ),
        (
            json!({"policy": "workspace-write"}),
            "policy",
            "unknown preset",
        ),
        (json!({"policy": "policies/p.json"}), "policy", "absolute"),
        (
            json!({"policy": {"file": "p.json"}}),
            "policy.file",
            "absolute",
        ),
        (
            json!({"policy": {"file": 3}}),
            "policy.file",
            "absolute path",
        ),
        (
            json!({"policy": {"rules": [{"action": "maybe"}]}}),
            "policy.rules[0]",
            "",
        ),
        (json!({"policy": 7}), "policy", "preset name"),
        (json!([1]), "$", "expected an object"),
    ];
    for (doc, path, needle) in cases {
        let (p, m) = host_err(doc.clone());
        assert!(p.starts_with(path), "{doc}: path {p}, want {path} ({m})");
        assert!(m.contains(needle), "{doc}: message {m:?} lacks {needle:?}");
    }
}

#[test]
fn service_requests_as_events_need_the_event_stream() {
    let doc = json!({"services": "events", "events": false});
    let (p, m) = err_path(host(&doc, Face::C).map(|o| o.config));
    assert_eq!(p, "services", "{m}");
    assert!(m.contains("`events` is false"), "{m}");
    assert!(host(&json!({"services": "events"}), Face::C).is_ok());
}

#[test]
fn values_in_range_are_applied() {
    let c = host(
        &json!({
            "maxLineBytes": 1024, "eventCapacity": 1, "requestTimeoutMs": null,
            "promptTimeoutMs": 5000.0, "fsLimits": {"maxReadBytes": 0},
            "terminalLimits": {"maxTerminals": 2}, "maxOutboundBytes": 65536,
            "maxPendingAgentRequests": 3, "earlyUpdateLimit": 9, "permission": "manual",
            "elicitation": "manual", "elicitationModes": ["url"], "fs": "disabled",
            "policy": "read-only", "unstable": ["session/fork"], "events": null
        }),
        Face::Node,
    )
    .unwrap()
    .with_hooks(Hooks::default())
    .unwrap();
    assert_eq!(c.max_line_bytes, 1024);
    assert_eq!(c.event_capacity, 1);
    assert_eq!(c.request_timeout, None);
    assert_eq!(c.prompt_timeout, Some(Duration::from_secs(5)));
    assert_eq!(c.fs_limits.max_read_bytes, 0);
    assert_eq!(c.terminal_limits.max_terminals, 2);
    assert_eq!(c.max_outbound_bytes, 65536);
    assert_eq!(c.max_pending_agent_requests, 3);
    assert_eq!(c.early_update_limit, 9);
    assert!(c.events_enabled, "null is the default");
    assert!(matches!(c.permission, PermissionHandler::Manual));
    assert!(matches!(
        c.elicitation,
        ElicitationHandler::Manual {
            modes: ElicitationModes {
                form: false,
                url: true
            }
        }
    ));
    assert!(matches!(c.fs, FsService::Disabled));
    assert_eq!(c.policy.unwrap().name(), "read-only");
    assert_eq!(effective(&HostConfig::default())["permission"], "deny");
}

struct Yes;

impl PermissionDecider for Yes {
    fn decide(&self, _: PermissionRequest) -> crate::permission::DecisionFuture {
        Box::pin(async { Ok(None) })
    }
}

#[test]
fn a_handler_answers_unless_the_document_names_someone_else() {
    let hooks = || Hooks {
        permission: Some(Arc::new(Yes)),
        ..Hooks::default()
    };
    let c = host(&json!({}), Face::Node)
        .unwrap()
        .with_hooks(hooks())
        .unwrap();
    assert!(matches!(c.permission, PermissionHandler::Decider(_)));
    let c = host(&json!({"permission": "handler"}), Face::Node)
        .unwrap()
        .with_hooks(hooks())
        .unwrap();
    assert!(matches!(c.permission, PermissionHandler::Decider(_)));
    let (p, m) = err_path(
        host(&json!({"permission": "deny"}), Face::Node)
            .unwrap()
            .with_hooks(hooks()),
    );
    assert_eq!(p, "permission");
    assert!(m.contains("never be called"), "{m}");
    let (p, m) = err_path(
        host(&json!({"permission": "handler"}), Face::Node)
            .unwrap()
            .with_hooks(Hooks::default()),
    );
    assert_eq!(p, "permission");
    assert!(m.contains("none was given"), "{m}");
    let (p, _) = err_path(
        host(&json!({"fs": "embedder"}), Face::C)
            .unwrap()
            .with_hooks(Hooks::default()),
    );
    assert_eq!(p, "fs");
}

#[test]
fn agent_and_session_documents() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let spec = agent_spec(
        &json!({"command": "a", "args": ["x"], "env": {"K": "v", "D": null}, "cwd": d,
                "restart": {"maxRestarts": 1}}),
        Face::C,
    )
    .unwrap();
    assert_eq!(spec.args, ["x"]);
    assert_eq!(spec.env.get("D"), Some(&None));
    assert_eq!(spec.restart.unwrap().max_restarts, 1);
    let missing = dir.path().join("gone");
    let cases = [
        (json!({}), "command"),
        (json!({"command": ""}), "command"),
        (json!({"command": "a", "args": ["x", 1]}), "args[1]"),
        (json!({"command": "a", "env": {"K": 1}}), "env.K"),
        (json!({"command": "a", "env": {"A=B": "1"}}), "env.A=B"),
        (json!({"command": "a", "cwd": "rel"}), "cwd"),
        (json!({"command": "a", "cwd": missing}), "cwd"),
        (
            json!({"command": "a", "restart": {"backoffMs": -1}}),
            "restart.backoffMs",
        ),
        (
            json!({"command": "a", "restart": {"tries": 1}}),
            "restart.tries",
        ),
        (json!({"command": "a", "restrat": {}}), "restrat"),
    ];
    for (doc, path) in cases {
        let (p, m) = err_path(agent_spec(&doc, Face::Python));
        assert_eq!(p, path, "{doc}: {m}");
    }
    let (p, m) = err_path(session(&json!({"cwd": missing}), Face::Kotlin));
    assert_eq!(p, "cwd");
    assert!(m.contains("does not exist"), "{m}");
    let (p, _) = err_path(session(
        &json!({"cwd": d, "additionalDirectories": [d, missing]}),
        Face::C,
    ));
    assert_eq!(p, "additionalDirectories[1]");
    let (p, _) = err_path(session(&json!({"cwd": d, "mcpServers": [1]}), Face::C));
    assert_eq!(p, "mcpServers[0]");
    assert_eq!(session(&json!({"cwd": d}), Face::C).unwrap().cwd, d);
}

#[test]
fn pool_documents_name_the_field() {
    let spec = || AgentSpec::new("x");
    let cases = [
        (json!({"maxAgents": 0}), "pool.maxAgents"),
        (json!({"warmSpares": 9, "maxAgents": 2}), "pool.warmSpares"),
        (
            json!({"maxSessionsPerAgent": 2}),
            "pool.maxSessionsPerAgent",
        ),
        (
            json!({"mode": "shared", "maxSessionsPerAgent": 0}),
            "pool.maxSessionsPerAgent",
        ),
        (json!({"mode": "many"}), "pool.mode"),
        (json!({"idleTimeoutMs": 0}), "pool.idleTimeoutMs"),
        (json!({"size": 3}), "pool.size"),
        (json!(3), "pool"),
    ];
    for (doc, path) in cases {
        let (p, m) = err_path(pool(spec(), &doc, Face::Node));
        assert_eq!(p, path, "{doc}: {m}");
    }
    let p = pool(
        spec(),
        &json!({"mode": "shared", "idleTimeoutMs": null}),
        Face::C,
    )
    .unwrap();
    assert_eq!(p.mode, PoolMode::Shared { max_sessions: 8 });
    assert_eq!(p.idle_timeout, None);
}

#[test]
fn a_policy_file_is_read_from_an_absolute_path() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.json");
    std::fs::write(&f, r#"{"preset": "read-only"}"#).unwrap();
    let fs = f.to_str().unwrap();
    for doc in [json!({"policy": fs}), json!({"policy": {"file": fs}})] {
        host(&doc, Face::Python).unwrap();
    }
    std::fs::write(&f, r#"{"preset": "nope"}"#).unwrap();
    let (p, _) = host_err(json!({"policy": {"file": fs}}));
    assert!(p.starts_with("policy"), "{p}");
    let gone = dir.path().join("gone.json");
    let (p, m) = host_err(json!({"policy": gone}));
    assert_eq!(p, "policy");
    assert!(m.contains("cannot read"), "{m}");
}

#[test]
fn the_table_json_lists_every_row_once() {
    let rows = table_json();
    let rows = rows.as_array().unwrap();
    let mut paths: Vec<&str> = rows.iter().map(|r| r["path"].as_str().unwrap()).collect();
    let n = paths.len();
    paths.sort_unstable();
    paths.dedup();
    // Agent and session both have `cwd`; paths repeat only across documents.
    assert!(n - paths.len() <= 1, "{n} rows, {} distinct", paths.len());
    assert!(paths.contains(&"pool.maxAgents") && paths.contains(&"fsLimits.maxReadBytes"));
}
