//! The policy engine on command lines and environment variables: wrappers in front of a denied
//! command, `sh -c` strings, terminal env that smuggles code past an allow rule, and what a
//! policy advertises it can ever allow.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use acp_host::permission::policy::{
    BUILTIN_ENV_DENY, BUILTIN_ENV_SPARED, Operation, Policy, Subject, Verdict,
};
use serde_json::json;

fn policy(doc: serde_json::Value) -> Policy {
    Policy::from_json(&doc.to_string()).unwrap()
}

fn is_allow(v: &Verdict) -> bool {
    matches!(v, Verdict::Allow { .. })
}

fn denied_by(v: &Verdict) -> String {
    match v {
        Verdict::Deny { rule } => rule.clone(),
        other => panic!("expected a deny, got {other:?}"),
    }
}

/// A terminal/create subject the way the host builds it: command, args, env names.
fn terminal(command: &str, args: &[&str], env: &[&str]) -> Subject {
    Subject::execute(command, args).with_env(env.iter().copied())
}

fn rm_hard_denied() -> Policy {
    policy(json!({"preset": "ask", "hardDeny": {"commands": ["rm *"]}}))
}

// ---------------------------------------------------------------------------------------------
// Wrappers in front of a hard-denied command

#[test]
fn wrappers_do_not_get_a_command_past_hard_deny() {
    let p = rm_hard_denied();
    for (command, args) in [
        ("timeout", &["5", "rm", "-rf", "/"][..]),
        ("timeout", &["-s", "KILL", "-k", "1", "5", "rm", "-rf", "/"]),
        ("nice", &["-n", "5", "rm", "-rf", "/"]),
        ("setsid", &["rm", "-rf", "/"]),
        ("/usr/bin/timeout", &["5", "/bin/rm", "-rf", "/"]),
        ("stdbuf", &["-oL", "rm", "-rf", "/"]),
        ("ionice", &["-c", "3", "rm", "-rf", "/"]),
        ("chrt", &["-f", "1", "rm", "-rf", "/"]),
        ("taskset", &["-c", "0", "rm", "-rf", "/"]),
        ("flock", &["/tmp/lock", "rm", "-rf", "/"]),
        ("env", &["-i", "PATH=/bin", "rm", "-rf", "/"]),
        ("env", &["-S", "rm -rf /"]),
        ("xargs", &["-0", "rm", "-rf"]),
        ("busybox", &["rm", "-rf", "/"]),
        ("sudo", &["-u", "nobody", "rm", "-rf", "/"]),
        ("doas", &["rm", "-rf", "/"]),
        ("unbuffer", &["rm", "-rf", "/"]),
        ("script", &["-q", "-c", "rm -rf /", "/dev/null"]),
        ("watch", &["-n", "1", "rm", "-rf", "/"]),
        ("strace", &["-f", "-o", "/dev/null", "rm", "-rf", "/"]),
        ("find", &["/", "-exec", "rm", "-rf", "{}", "+"]),
        (
            "sudo",
            &[
                "timeout", "5", "nice", "-n", "5", "setsid", "rm", "-rf", "/",
            ],
        ),
        ("bash", &["-c", "timeout 5 rm -rf /"]),
        ("bash", &["-c", "nice -n 5 /bin/rm -rf /"]),
        ("/bin/sh", &["-c", "cd /tmp && setsid rm -rf /"]),
        ("bash", &["-o", "pipefail", "-c", "ls | xargs rm -f"]),
    ] {
        let verdict = p.evaluate(&terminal(command, args, &[]));
        assert_eq!(
            verdict,
            Verdict::Deny {
                rule: "hardDeny.commands (rm *)".into()
            },
            "{command} {args:?}"
        );
    }
}

#[test]
fn wrappers_in_a_permission_requests_command_are_seen_through() {
    let p = rm_hard_denied();
    for command in [
        json!("timeout 5 rm -rf /"),
        json!("nice -n 5 rm -rf /"),
        json!("setsid rm -rf /"),
        json!("/usr/bin/timeout 5 /bin/rm -rf /"),
        json!(["/usr/bin/timeout", "5", "/bin/rm", "-rf", "/"]),
        json!("bash -lc 'timeout 5 rm -rf ~'"),
    ] {
        let s = Subject::from_tool_call(
            &json!({"kind": "execute", "title": "Run", "rawInput": {"command": command}}),
        );
        assert_eq!(
            denied_by(&p.evaluate(&s)),
            "hardDeny.commands (rm *)",
            "{command}"
        );
    }
}

#[test]
fn wrappers_do_not_deny_harmless_commands() {
    let p = rm_hard_denied();
    for (command, args) in [
        ("timeout", &["5", "cargo", "test"][..]),
        ("nice", &["-n", "5", "make"]),
        ("echo", &["rm", "-rf", "/"]),
        ("git", &["commit", "-m", "rm the old files"]),
    ] {
        assert!(
            is_allow(&p.evaluate(&terminal(command, args, &[]))),
            "{command} {args:?}"
        );
    }
}

#[test]
fn allow_rules_stay_strict_about_wrappers_and_paths() {
    let p = policy(json!({
        "preset": "deny-all",
        "rules": [{"action": "allow", "operations": ["execute"], "commands": ["git status"]}]
    }));
    assert!(is_allow(&p.evaluate(&terminal("git", &["status"], &[]))));
    // A wrapper or another binary of the same name is a different command line.
    for (command, args) in [
        ("timeout", &["5", "git", "status"][..]),
        ("/tmp/evil/git", &["status"]),
        ("env", &["git", "status"]),
    ] {
        assert_eq!(
            denied_by(&p.evaluate(&terminal(command, args, &[]))),
            "preset deny-all",
            "{command} {args:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Environment variables

fn allow_git_status() -> Policy {
    policy(json!({
        "preset": "deny-all",
        "rules": [{"action": "allow", "operations": ["execute"], "commands": ["git status"]}]
    }))
}

#[test]
fn git_config_env_does_not_ride_on_an_exact_allow() {
    let p = allow_git_status();
    let s = terminal(
        "git",
        &["status"],
        &["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"],
    );
    assert_eq!(
        denied_by(&p.evaluate(&s)),
        "deny env GIT_CONFIG_COUNT (built-in)"
    );
    assert_eq!(
        p.hard_deny(&s).as_deref(),
        Some("deny env GIT_CONFIG_COUNT (built-in)")
    );
    // Harmless variables do not get in the way.
    let harmless = terminal("git", &["status"], &["TERM", "LANG", "CI", "RUST_LOG"]);
    assert!(is_allow(&p.evaluate(&harmless)));
}

#[test]
fn bash_env_does_not_ride_on_an_allowed_bash_c() {
    let p = policy(json!({
        "preset": "deny-all",
        "rules": [{"action": "allow", "operations": ["execute"], "commands": ["bash -c true"]}]
    }));
    assert!(is_allow(&p.evaluate(&terminal(
        "bash",
        &["-c", "true"],
        &[]
    ))));
    for var in [
        "BASH_ENV",
        "ENV",
        "BASH_FUNC_true%%",
        "SHELLOPTS",
        "LD_PRELOAD",
        "PATH",
    ] {
        let s = terminal("bash", &["-c", "true"], &[var]);
        assert_eq!(
            denied_by(&p.evaluate(&s)),
            format!("deny env {var} (built-in)")
        );
    }
}

#[test]
fn env_names_are_compared_case_insensitively_and_by_their_name_part() {
    let p = policy(json!({"preset": "ask"}));
    for var in ["ld_preload", "Path", "LD_PRELOAD=/tmp/x.so:"] {
        let s = terminal("ls", &[], &[var]);
        assert!(denied_by(&p.evaluate(&s)).starts_with("deny env "), "{var}");
    }
}

#[test]
fn an_allow_rule_naming_the_variable_lets_it_through() {
    let p = policy(json!({
        "preset": "deny-all",
        "rules": [
            {"action": "allow", "operations": ["execute"], "commands": ["git status"]},
            {"action": "allow", "operations": ["execute"], "commands": ["git status"],
             "env": ["GIT_CONFIG_*"], "description": "git with config"}
        ]
    }));
    let s = terminal(
        "git",
        &["status"],
        &["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"],
    );
    // The first matching allow rule is named; the second one lifted the deny.
    assert!(is_allow(&p.evaluate(&s)), "{:?}", p.evaluate(&s));
    // The naming rule must match the whole request: not another command...
    let other = terminal("git", &["log"], &["GIT_CONFIG_COUNT"]);
    assert_eq!(
        denied_by(&p.evaluate(&other)),
        "deny env GIT_CONFIG_COUNT (built-in)"
    );
    // ...and an allow rule's `env` lists every variable the request may set.
    let extra = terminal("git", &["status"], &["GIT_CONFIG_COUNT", "TERM"]);
    assert_eq!(
        denied_by(&p.evaluate(&extra)),
        "deny env GIT_CONFIG_COUNT (built-in)"
    );
    // It does not lift other dangerous variables.
    let more = terminal("git", &["status"], &["GIT_CONFIG_COUNT", "GIT_SSH_COMMAND"]);
    assert!(denied_by(&p.evaluate(&more)).starts_with("deny env "));
}

#[test]
fn hard_deny_env_cannot_be_lifted() {
    let mut p = policy(json!({
        "preset": "ask",
        "rules": [{"action": "allow", "env": ["AWS_*", "LD_PRELOAD"]}],
        "hardDeny": {"env": ["aws_*"]}
    }));
    let s = terminal("ls", &[], &["AWS_SECRET_ACCESS_KEY"]);
    assert_eq!(
        denied_by(&p.evaluate(&s)),
        "hardDeny.env (aws_*: AWS_SECRET_ACCESS_KEY)"
    );
    assert!(is_allow(&p.evaluate(&terminal("ls", &[], &["LD_PRELOAD"]))));
    p.add_hard_deny_env("LD_PRELOAD").unwrap();
    assert_eq!(
        denied_by(&p.evaluate(&terminal("ls", &[], &["LD_PRELOAD"]))),
        "hardDeny.env (LD_PRELOAD: LD_PRELOAD)"
    );
    assert_eq!(p.name(), "custom");
    assert!(p.add_hard_deny_env(" ").is_err());
    assert_eq!(
        p.add_hard_deny_env("A[").unwrap_err().path,
        "hardDeny.env[2]"
    );
}

#[test]
fn deny_and_ask_rules_match_env_names() {
    let p = policy(json!({
        "preset": "ask",
        "rules": [
            {"action": "deny", "env": ["SECRET_*"], "description": "no secrets"},
            {"action": "ask", "operations": ["permission"], "env": ["DEBUG"]}
        ]
    }));
    assert_eq!(
        denied_by(&p.evaluate(&terminal("ls", &[], &["secret_token"]))),
        "rules[0] (deny: no secrets)"
    );
    assert!(is_allow(&p.evaluate(&terminal("ls", &[], &["TERM"]))));
    assert!(is_allow(&p.evaluate(&terminal("ls", &[], &[]))));
    // A permission request's rawInput.env counts too (object keys or {name} items).
    for env in [
        json!({"SECRET_KEY": "x"}),
        json!([{"name": "SECRET_KEY", "value": "x"}]),
    ] {
        let s = Subject::from_tool_call(
            &json!({"kind": "execute", "title": "Run", "rawInput": {"command": "ls", "env": env}}),
        );
        assert_eq!(s.env, vec!["SECRET_KEY".to_owned()]);
        assert_eq!(denied_by(&p.evaluate(&s)), "rules[0] (deny: no secrets)");
    }
    let s = Subject::from_tool_call(
        &json!({"kind": "execute", "title": "Run", "rawInput": {"command": "ls", "env": {"DEBUG": "1"}}}),
    );
    assert_eq!(p.evaluate(&s), Verdict::Ask);
}

#[test]
fn env_criteria_are_validated_with_their_location() {
    for (doc, path) in [
        (
            r#"{"rules": [{"action": "allow", "env": []}]}"#,
            "rules[0].env",
        ),
        (
            r#"{"rules": [{"action": "allow", "env": "PATH"}]}"#,
            "rules[0].env",
        ),
        (
            r#"{"rules": [{"action": "allow", "env": ["PATH", ""]}]}"#,
            "rules[0].env[1]",
        ),
        (
            r#"{"rules": [{"action": "deny", "env": ["OK", "A[x"]}]}"#,
            "rules[0].env[1]",
        ),
        (r#"{"hardDeny": {"env": ["X", 3]}}"#, "hardDeny.env[1]"),
        (r#"{"hardDeny": {"env": ["[oops"]}}"#, "hardDeny.env[0]"),
        (r#"{"hardDeny": {"envs": ["X"]}}"#, "hardDeny.envs"),
    ] {
        let err = Policy::from_json(doc).unwrap_err();
        assert_eq!(err.path, path, "{doc}: {err}");
    }
    let err = Policy::from_json(r#"{"hardDeny": {"envs": ["X"]}}"#).unwrap_err();
    assert!(
        err.message.contains("paths, commands, commandRegex, env"),
        "{err}"
    );
}

#[test]
fn the_builtin_env_list_is_public_and_covers_the_documented_families() {
    for glob in [
        "LD_*", "DYLD_*", "BASH_ENV", "GIT_*", "PATH", "NODE_*", "PYTHON*",
    ] {
        assert!(BUILTIN_ENV_DENY.contains(&glob), "{glob}");
    }
    assert!(BUILTIN_ENV_SPARED.contains(&"GIT_AUTHOR_NAME"));
}

// ---------------------------------------------------------------------------------------------
// What a policy can ever allow (drives the advertised client capabilities)

#[test]
fn can_allow_follows_the_preset_and_the_allow_rules() {
    let deny_all = Policy::preset("deny-all").unwrap();
    let read_only = Policy::preset("read-only").unwrap();
    let ask = Policy::preset("ask").unwrap();
    for p in [&deny_all, &read_only] {
        assert!(p.can_allow(Operation::Read));
        assert!(!p.can_allow(Operation::Write), "{}", p.name());
        assert!(!p.can_allow(Operation::Execute), "{}", p.name());
    }
    assert!(!deny_all.can_allow(Operation::Permission));
    assert!(read_only.can_allow(Operation::Permission));
    assert!(ask.can_allow(Operation::Write));
    assert!(ask.can_allow(Operation::Execute));

    let p = policy(json!({"preset": "deny-all", "rules": [
        {"action": "allow", "operations": ["execute"], "commands": ["cargo test*"]}
    ]}));
    assert!(p.can_allow(Operation::Execute));
    assert!(!p.can_allow(Operation::Write));

    let p = policy(json!({"preset": "read-only", "rules": [
        {"action": "allow", "kinds": ["edit"], "paths": ["/p/**"]}
    ]}));
    assert!(p.can_allow(Operation::Write));
    assert!(p.can_allow(Operation::Permission));
    assert!(!p.can_allow(Operation::Execute));

    // Rules that cannot match a write or a terminal do not count: other operations, kinds,
    // titles, tool names, commands on writes, paths on terminals, and deny/ask rules.
    let p = policy(json!({"preset": "deny-all", "rules": [
        {"action": "allow", "operations": ["permission"]},
        {"action": "allow", "kinds": ["read", "search"]},
        {"action": "allow", "titles": ["Write *"]},
        {"action": "allow", "toolNames": ["Bash"]},
        {"action": "allow", "operations": ["write"], "commands": ["x"]},
        {"action": "allow", "operations": ["execute"], "paths": ["/p/**"]},
        {"action": "ask", "operations": ["write", "execute"]},
        {"action": "deny", "operations": ["write", "execute"]}
    ]}));
    assert!(!p.can_allow(Operation::Write));
    assert!(!p.can_allow(Operation::Execute));
    assert!(p.can_allow(Operation::Permission));

    // A rule without criteria allows everything.
    let p = policy(json!({"preset": "deny-all", "rules": [{"action": "allow"}]}));
    assert!(p.can_allow(Operation::Write) && p.can_allow(Operation::Execute));
}
