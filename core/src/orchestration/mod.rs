//! The layer above one connection: keeping agents running ([`supervisor`]).

pub mod supervisor;

pub use supervisor::RestartPolicy;
