//! The wire: NDJSON framing with a bounded line length and the JSON-RPC 2.0 message model.

pub mod framing;
pub mod message;

pub use framing::{Frame, FrameRef, LineReader};
pub use message::{Incoming, RawId, RpcError, codes};
