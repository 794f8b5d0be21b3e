//! Every exported function. Conventions (docs/FFI.md): the host handle first, then inputs, then
//! out-params, then `acph_error **error_out` (NULL or writable; written only on failure, with a
//! new error object that the caller frees with `acph_error_free`). Out-params are written only on
//! success. Strings in are UTF-8 `(ptr, len)` and are copied before the call returns; strings out
//! are owned `char *` freed with `acph_string_free`. Pointer arguments are read through the
//! argument macros of `src/lib.rs` (`try_host!`, `try_str!`, `try_out!`, ...), one line each.
//!
//! Every function that takes a `const acph_host *`/`acph_host *` has the same basic safety
//! contract: `host` is NULL or a pointer returned by `acph_host_new` and not yet passed to
//! `acph_host_free`, and no thread calls `acph_host_free` on it while the call runs.
//!
//! Asynchronous functions write a call id to `*call_out` and return at once; `call.rs` has the
//! one wait, release and cancel for all of them.

// The header lists the functions in this order.
mod meta;

mod host;

mod events;

mod call;

mod agent;

mod agent_sessions;

mod agent_unstable;

mod connect;

mod session;

mod session_v2;

mod answers;

mod pool;

mod registry;

pub use agent::*;
pub use agent_sessions::*;
pub use agent_unstable::*;
pub use answers::*;
pub use call::*;
pub use connect::*;
pub use events::*;
pub use host::*;
pub use meta::*;
pub use pool::*;
pub use registry::*;
pub use session::*;
pub use session_v2::*;
