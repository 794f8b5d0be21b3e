//! Every exported function. Conventions (docs/FFI.md): the host handle first, then inputs, then
//! out-params, then `acph_error **error_out` (NULL or writable; written only on failure, with a
//! new error object that the caller frees with `acph_error_free`). Out-params are written only on
//! success. Strings in are UTF-8 `(ptr, len)` and are copied before the call returns; strings out
//! are owned `char *` freed with `acph_string_free`.
//!
//! Every function that takes a `const acph_host *`/`acph_host *` has the same basic safety
//! contract: `host` is NULL or a pointer returned by `acph_host_new` and not yet passed to
//! `acph_host_free`, and no thread calls `acph_host_free` on it while the call runs.

// The header lists the functions in this order.
mod meta;

mod host;

mod events;

mod agent;

mod connect;

mod session;

mod pool;

mod registry;

pub use agent::*;
pub use connect::*;
pub use events::*;
pub use host::*;
pub use meta::*;
pub use pool::*;
pub use registry::*;
pub use session::*;
