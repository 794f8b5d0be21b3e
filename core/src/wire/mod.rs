//! The wire: NDJSON framing with a bounded line length and the JSON-RPC 2.0 message model.

pub mod depth;
pub(crate) mod escape;
pub mod framing;
mod lazy;
pub(crate) mod lenient;
pub mod message;

pub use depth::MAX_JSON_DEPTH;
pub use framing::{Frame, FrameRef, LineReader};
pub use lazy::LazyJson;
pub use message::{Incoming, RawId, RpcError, codes};
