//! The Kotlin and Swift faces of acp-host: the core's `Host`, `Agent` and `Session` as uniffi
//! objects (proc-macros), every I/O call async on the core's tokio runtime, and its ACP registry
//! (`Registry`: resolve an agent id into an `AgentSpec`, install binaries when asked, remote
//! archives through the embedder's `RegistryFetcher`). Aggregates the core keeps as JSON (tool
//! calls, session state, payloads) cross as JSON text; what a caller branches on (kinds, ids, stop
//! reasons, error codes) is typed. The Kotlin package (`kotlin/`) adds the idiomatic layer: `Flow`
//! of sealed event classes, `use {}`; the Swift package (`swift/`) is generated only.

mod agent;
mod agent_unstable;
mod error;
mod events;
mod handlers;
mod host;
mod log;
mod options;
mod pool;
mod progress;
mod registry;
mod runtime;
mod session_v2;
mod transport;

pub use agent::{Agent, ExitStatus, Session, TurnResult};
pub use error::AcpError;
pub use events::{EventStream, RawEvent, SessionEventStream};
pub use handlers::{
    ElicitationHandler, ElicitationRequest, ExtHandler, ExtReply, HandlerError, PermissionHandler,
    PermissionOption, PermissionRequest, TerminalAuthCommand, TerminalAuthRunner,
};
pub use host::Host;
pub use log::{LogHandler, LogLevel, LogRecord};
pub use options::{
    AgentSpec, ClientInfo, FsLimits, HostOptions, PoolMode, PoolOptions, ReplayOptions, ReplayPace,
    RestartPolicy, SessionOptions, TerminalLimits,
};
pub use pool::{Pool, PoolStats, PooledSession};
pub use progress::{Progress, ProgressHandler};
pub use registry::{
    DistributionKind, InstalledAgent, Registry, RegistryAgent, RegistryFetcher, ResolveOptions,
    ResolvedAgent,
};
pub use transport::ByteStream;

uniffi::setup_scaffolding!("acp_host");

/// The ACP protocol version this host speaks.
#[uniffi::export]
pub fn protocol_version() -> u16 {
    acp_host::PROTOCOL_VERSION
}

/// The library's version (one version for every package).
#[uniffi::export]
pub fn library_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// Every event kind the core emits, in the core's order (the Kotlin sealed hierarchy is checked
/// against it).
#[uniffi::export]
pub fn event_kinds() -> Vec<String> {
    acp_host::EventKind::ALL
        .iter()
        .map(|k| k.as_str().to_owned())
        .collect()
}

/// Every error kind this face reports (the `code` of `AcpException`), from the core's table.
#[uniffi::export]
pub fn error_codes() -> Vec<String> {
    acp_host::error::ERROR_KINDS
        .iter()
        .filter(|k| k.reach == acp_host::error::Reach::Every)
        .map(|k| k.kind.to_owned())
        .collect()
}

/// The ACP methods the host knows, with their direction and gating, as JSON (docs/PROTOCOL.md).
#[uniffi::export]
pub fn methods_json() -> String {
    acp_host::protocol::methods::methods_json().to_string()
}

/// A prompt content block read from a file (`image`/`audio` with its MIME type, or an embedded
/// text resource), as JSON for `Session.promptContent`.
#[uniffi::export]
pub fn content_from_file(path: String) -> Result<String, AcpError> {
    let block = acp_host::content::from_file(std::path::Path::new(&path))?;
    Ok(block.to_string())
}
