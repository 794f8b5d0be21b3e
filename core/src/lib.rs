//! acp-host: the embeddable host (client) side of the Agent Client Protocol.
//!
//! ```no_run
//! # async fn demo() -> acp_host::Result<()> {
//! use acp_host::{AgentSpec, Host, HostConfig, SessionOptions};
//! let host = Host::new(HostConfig::default());
//! let mut events = host.events().expect("first call");
//! tokio::spawn(async move { while let Some(ev) = events.next().await { println!("{}", ev.to_json()); } });
//! let agent = host.spawn(AgentSpec::new("acp-mock-agent")).await?;
//! let session = agent.new_session(SessionOptions::new("/tmp")).await?;
//! let turn = session.prompt_text("hello").await?;
//! assert_eq!(turn.stop_reason, "end_turn");
//! # Ok(()) }
//! ```

pub mod agent;
pub mod auth;
mod buffers;
pub mod connection;
pub mod content;
pub mod display;
pub mod elicitation;
pub mod error;
pub mod events;
pub mod host;
pub mod log;
pub mod options;
pub mod orchestration;
pub mod permission;
pub mod progress;
pub mod protocol;
pub mod receipt;
pub mod record;
pub mod registry;
pub mod replay;
pub mod services;
pub mod session;
pub mod transport;
pub mod wire;

pub use agent::{Agent, SessionDefaults, SessionOptions, SessionStatusInfo};
/// The pinned ACP schema crate (`agent-client-protocol-schema`) whose types type the payloads.
pub use agent_client_protocol_schema as schema;
pub use connection::{AgentInfo, PROTOCOL_VERSION, PROTOCOL_VERSION_2, steering_supported};
pub use elicitation::{
    ElicitationAnswer, ElicitationDecider, ElicitationHandler, ElicitationKind, ElicitationModes,
    ElicitationRequest,
};
pub use error::{Error, ExitInfo, Result};
pub use events::{DecodeNote, Decoded, Event, EventHub, EventKind, HubReader, Payload};
pub use host::{ClientInfo, EventStream, Host, HostConfig};
pub use orchestration::{Pool, PoolConfig, PoolMode, PoolStats, PooledSession, RestartPolicy};
pub use permission::{
    DecidedBy, PermissionAnswer, PermissionDecider, PermissionHandler, PermissionOption,
    PermissionRequest, Settled,
};
pub use receipt::{Receipt, RequestState};
pub use services::ClientCapabilities;
pub use session::{ModelInfo, ModelSwitch, Models, Session, SessionView, SteerResult, TurnResult};
pub use transport::AgentSpec;
pub use wire::LazyJson;
