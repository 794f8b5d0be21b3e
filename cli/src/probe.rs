//! `acph probe`: spawn, handshake, print what the agent said about itself, shut down.

use std::io::Write;

use acp_host::options::{self, Face};
use acp_host::{Agent, EventKind, Host};
use serde_json::Value;
use tokio::sync::watch;

use crate::args::ProbeArgs;
use crate::render::{self, eprint_line, one_line};
use crate::signals::{Signals, interruptible};
use crate::{DRAIN_TIMEOUT, Failure, agent_spec, command_line, fail, host_document, verbose_log};

pub(crate) async fn probe(
    args: ProbeArgs,
    verbose: bool,
    mut interrupts: watch::Receiver<Signals>,
) -> i32 {
    let checked = (|| {
        let doc = host_document(&args.host)?;
        let hooks = options::Hooks {
            log: verbose_log(verbose),
            ..options::Hooks::default()
        };
        let config = options::host(&Value::Object(doc), Face::Cli)?.with_hooks(hooks)?;
        Ok::<_, Failure>((config, agent_spec(&args.agent)?))
    })();
    let (config, spec) = match checked {
        Ok(c) => c,
        Err(f) => return fail(None, &f, None),
    };
    let command = command_line(&spec);
    let host = Host::new(config);
    let Some(events) = host.events() else {
        return fail(
            None,
            &Failure::Message("the host's event stream is unavailable".into()),
            None,
        );
    };
    // Keep the queue moving; only the agent's stderr is shown (with --verbose).
    let drain = tokio::spawn(async move {
        while let Some(ev) = events.next().await {
            match ev.kind {
                EventKind::Progress => crate::status::progress(&ev.data_value()),
                EventKind::AgentStderr if verbose => {
                    let line = ev.data_value();
                    let line = line.get("line").and_then(Value::as_str).unwrap_or("");
                    eprint_line(&format!("[agent stderr] {}", render::clean(line)));
                }
                EventKind::AgentExited => break,
                _ => {}
            }
        }
    });
    let result = interruptible(host.spawn(spec), &mut interrupts).await;
    let code = match &result {
        Ok(agent) => {
            print_probe(agent, args.json, &command);
            agent.shutdown().await;
            0
        }
        Err(_) => 1,
    };
    drop(host);
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain).await;
    match result {
        Ok(_) => code,
        Err(f) => fail(None, &f, None),
    }
}

fn print_probe(agent: &Agent, json: bool, command: &str) {
    crate::status::finish();
    let Some(info) = agent.info() else { return };
    let mut w = std::io::stdout().lock();
    if json {
        let auth = Value::from(info.auth_methods.clone());
        let _ = writeln!(
            w,
            "{{\"protocolVersion\":{},\"agentInfo\":{},\"agentCapabilities\":{},\"authMethods\":{}}}",
            info.protocol_version, info.agent_info, info.capabilities, auth
        );
        let _ = w.flush();
        return;
    }
    let mut text = format!("protocol version: {}\n", info.protocol_version);
    let ai = &info.agent_info;
    let field = |k: &str| ai.get(k).and_then(Value::as_str).map(one_line);
    let agent_line = match (field("name"), field("version"), field("title")) {
        // No name: what was started, so the line still says which agent this is.
        (None, _, _) => format!("{command} (no name sent)"),
        (Some(n), v, t) => {
            let mut s = n;
            if let Some(v) = v {
                s.push_str(&format!(" {v}"));
            }
            if let Some(t) = t {
                s.push_str(&format!(" \"{t}\""));
            }
            s
        }
    };
    text.push_str(&format!("agent: {agent_line}\n"));
    let mut caps = Vec::new();
    flatten("", &info.capabilities, &mut caps);
    if caps.is_empty() {
        text.push_str("capabilities: none\n");
    } else {
        text.push_str("capabilities:\n");
        let width = caps.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in caps {
            text.push_str(&format!("  {k:<width$}  {v}\n"));
        }
    }
    if info.auth_methods.is_empty() {
        text.push_str("auth methods: none\n");
    } else {
        text.push_str("auth methods:\n");
        for m in &info.auth_methods {
            let s = |k: &str| m.get(k).and_then(Value::as_str).map(one_line);
            let mut line = format!(
                "  {}: {} ({})",
                s("id").unwrap_or_else(|| "?".into()),
                s("name").unwrap_or_default(),
                s("type").unwrap_or_else(|| "agent".into())
            );
            if let Some(d) = s("description") {
                line.push_str(&format!(" - {d}"));
            }
            text.push_str(&line);
            text.push('\n');
        }
    }
    let _ = w.write_all(text.as_bytes());
    let _ = w.flush();
}

/// `{"a":{"b":true}}` → `[("a.b", "true")]`; an empty object (a capability marker) is "supported".
pub(crate) fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    one_line(k)
                } else {
                    format!("{prefix}.{}", one_line(k))
                };
                flatten(&key, v, out);
            }
        }
        Value::Object(_) if !prefix.is_empty() => out.push((prefix.to_owned(), "supported".into())),
        Value::Object(_) => {}
        Value::String(s) => out.push((prefix.to_owned(), one_line(s))),
        other => out.push((prefix.to_owned(), one_line(&other.to_string()))),
    }
}
