//! Node addon of acp-host: a thin napi-rs layer over the Rust core. The public API is the
//! TypeScript facade in `ts/` (package `acp-host`); nothing here is meant to be used directly.
//!
//! Conventions of this layer:
//! - every core error crosses as a JS `Error` whose message is `ERR_PREFIX` + the core's
//!   `{kind, message, data}` JSON; the facade turns it into an `AcpError`;
//! - events are read through the core's `EventHub` readers (`NativeEventReader`, one per stream)
//!   and cross in batches, as one columnar JSON string per `nextBatch` call (one `JSON.parse` on
//!   the JS side is far cheaper than building objects property by property through napi);
//! - JS callbacks (permission and elicitation dispatchers, fs/terminal/extension hooks) are weak
//!   threadsafe functions: they never keep the Node event loop alive on
//!   their own;
//! - a pending `nextBatch` call ends (with `null`) once the host is closed and its reader drained,
//!   so after `close()` no napi work is left pending.
//!
//! Modules, by concern: `host` (the host and its close), `agent`, `session`, `events` (event
//! readers and batches), `answers` (permission and elicitation requests answered by the facade), `services`
//! (fs/terminal/extension/terminal-login requests), `abort` (abort handles), `pool`, `connect`,
//! `log`, `registry`.

use std::path::Path;

use acp_host::options::Face;
use acp_host::{AgentSpec, SessionOptions};
use napi::Status;
use napi::bindgen_prelude::Result;
use napi_derive::napi;
use serde_json::Value;

mod abort;
mod agent;
mod answers;
mod connect;
mod events;
mod host;
mod log;
mod pool;
mod registry;
mod services;
mod session;

// Shared by the modules. The exported functions are re-exported: the crate root keeps them
// all (and a function only JS calls is not dead code to the test build).
pub(crate) use abort::abortable;
pub use abort::{abort_create, abort_fire, abort_release};
pub(crate) use agent::NativeAgent;
pub use answers::{elicitation_decision, permission_decision};
pub(crate) use host::HostCore;
pub(crate) use session::{NativeSession, turn_json, wrap_session};

/// Prefix of the message of every error that carries a core error as JSON.
const ERR_PREFIX: &str = "\u{1}acp-host:";

fn core_err(e: acp_host::Error) -> napi::Error {
    napi::Error::new(
        Status::GenericFailure,
        format!("{ERR_PREFIX}{}", e.to_json()),
    )
}

fn err_json(kind: &str, message: impl Into<String>) -> napi::Error {
    let v = serde_json::json!({ "kind": kind, "message": message.into(), "data": null });
    napi::Error::new(Status::GenericFailure, format!("{ERR_PREFIX}{v}"))
}

fn invalid(message: impl Into<String>) -> napi::Error {
    err_json("invalid_argument", message)
}

fn closed_err() -> napi::Error {
    err_json("closed", "the host was closed")
}

/// The ACP method table this addon was built with (docs/PROTOCOL.md), as JSON.
#[napi]
pub fn methods() -> Value {
    acp_host::protocol::methods_json()
}

/// A prompt content block built from a file (`acp_host::content::from_file`).
#[napi]
pub fn content_from_file(path: String) -> Result<Value> {
    acp_host::content::from_file(Path::new(&path)).map_err(core_err)
}

/// An option document as the facade hands it over (JSON text), parsed by the core: text that is
/// not JSON is `invalid_config` at `$`.
fn doc(text: &str) -> Result<Value> {
    acp_host::options::document(text).map_err(core_err)
}

fn spawn_spec(spec_json: &str) -> Result<AgentSpec> {
    acp_host::options::agent_spec(&doc(spec_json)?, Face::Node).map_err(core_err)
}

/// A session options document (`acp_host::options::session`).
fn session_options(options_json: &str) -> Result<SessionOptions> {
    acp_host::options::session(&doc(options_json)?, Face::Node).map_err(core_err)
}

/// The option table (`acp_host::options::table_json`): `[{document, path, type, default, doc,
/// face}]`, from which the facade's option types are generated (scripts/gen-options.mjs).
#[napi]
pub fn options_table() -> Value {
    acp_host::options::table_json()
}
