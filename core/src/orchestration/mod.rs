//! The layer above one connection: keeping agents running ([`supervisor`]) and handing out
//! sessions on a pool of agent processes ([`pool`]).

pub mod pool;
pub mod supervisor;

pub use pool::{Pool, PoolConfig, PoolMode, PoolStats, PooledSession};
pub use supervisor::RestartPolicy;
