//! `doc-check KIND FILE`: feeds one JSON block of the docs to the core's own parser for KIND
//! (`policy`, `registry`, `event`, `options` (host, agent or session), `options-host`,
//! `options-agent`, `options-session`); exits 1
//! with the parser's error when the core refuses it. Used by scripts/test-docs.
// A command-line tool: its verdict goes to stdout, its errors to stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use acp_host::options::{self, Face};
use acp_host::permission::policy::Policy;
use acp_host::registry::Registry;
use acp_host::{EventKind, events};

fn check(kind: &str, text: &str) -> Result<String, String> {
    match kind {
        "policy" => Policy::from_json(text)
            .map(|_| "a policy the core loads".into())
            .map_err(|e| e.to_string()),
        "registry" => {
            let r = Registry::from_json(text).map_err(|e| e.to_string())?;
            Ok(format!("a registry of {} agent(s)", r.agents().len()))
        }
        "event" => {
            let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
            let name = v["kind"].as_str().ok_or("no `kind`")?;
            let kind = EventKind::from_name(name).ok_or(format!("unknown kind {name}"))?;
            // `session` and `turn` are left out when there is none (Event::to_json).
            for field in ["seq", "at", "agent", "replay", "data"] {
                if v.get(field).is_none() {
                    return Err(format!("envelope without `{field}`"));
                }
            }
            let decoded = events::decode_data(kind, &v["data"].to_string());
            if !decoded.is_exact() {
                return Err(format!("data does not decode exactly: {:?}", decoded.notes));
            }
            Ok(format!("a {name} event that decodes exactly"))
        }
        // An option document of any kind: accepted when one of the core's documents takes it
        // whole (as the C face would: the JSON text itself).
        "options" => {
            let doc = options::document(text).map_err(|e| e.to_string())?;
            let mut why = Vec::new();
            for (name, r) in [
                ("host", options::host(&doc, Face::C).map(|_| ())),
                ("agent", options::agent_spec(&doc, Face::C).map(|_| ())),
                ("session", options::session(&doc, Face::C).map(|_| ())),
            ] {
                match r {
                    Ok(()) => return Ok(format!("a {name} option document the core accepts")),
                    Err(e) => why.push(format!("as {name} options: {e}")),
                }
            }
            Err(why.join("; "))
        }
        "options-host" | "options-agent" | "options-session" => {
            let doc = options::document(text).map_err(|e| e.to_string())?;
            let r = match kind {
                "options-host" => options::host(&doc, Face::Rust).map(|_| ()),
                "options-agent" => options::agent_spec(&doc, Face::Rust).map(|_| ()),
                _ => options::session(&doc, Face::Rust).map(|_| ()),
            };
            r.map(|_| format!("{kind} document the core accepts"))
                .map_err(|e| e.to_string())
        }
        _ => Err(format!("unknown kind {kind}")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, kind, file] = &args[..] else {
        eprintln!("usage: doc-check KIND FILE");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("doc-check: {file}: {e}");
            return ExitCode::from(2);
        }
    };
    match check(kind, &text) {
        Ok(what) => {
            println!("{what}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("doc-check: {kind}: {e}");
            ExitCode::FAILURE
        }
    }
}
