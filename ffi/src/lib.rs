//! C ABI of acp-host: `include/acp_host.h`, `libacp_host.{so,a}`.
//!
//! The reference for C users is `docs/FFI.md` (ownership of every pointer, threading, shutdown)
//! and the header's comments, which are generated from the doc comments in `src/api/`.
//!
//! Layout:
//! - `api/`: every exported function. Each runs inside one panic boundary ([`ffi_fn!`]) and turns
//!   failures into a status code plus an optional owned error object; its pointer arguments are
//!   checked by the one-line argument macros below ([`try_host!`], [`try_str!`], [`try_out!`],
//!   ...), where the safety reasoning is written once.
//! - `ptr`: the only module that reads, writes, casts, allocates or frees raw pointers and calls C
//!   function pointers.
//! - `host`: the host object (runtime, core `Host`, event queue and pump, id tables).
//! - `calls`: the call table (every asynchronous call's id, and its outcome until released).
//! - `sessions`: the session handles; `answers`: the permission and elicitation requests the
//!   embedder answers by id.
//! - `services`: fs/terminal requests routed to the embedder.
//! - `config`: the JSON arguments (host config, agent spec, session options, registry options).
//! - `stream`: the descriptors/handles of `acph_host_connect`, adopted as the core's reader and
//!   writer (the only module that takes raw descriptors over).
//! - `registry`: the registry handle and the fetch callback as the core's `Fetcher`.
//! - `log`: the log callback, fed from a queue on a thread of its own.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

/// The panic boundary of every export returning `acph_status` with an `acph_error **error_out`:
/// the body returns `Result<(), Failure>`; a failure (or a caught panic) becomes its status and,
/// when `error_out` is not NULL, a new error object.
macro_rules! ffi_fn {
    ($error_out:expr, $body:block) => {{
        let error_out: *mut *mut $crate::status::acph_error = $error_out;
        let result = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(
            || -> ::std::result::Result<(), $crate::status::Failure> { $body },
        ));
        let failure = match result {
            Ok(Ok(())) => return $crate::status::acph_status::ACPH_STATUS_OK,
            Ok(Err(f)) => f,
            Err(payload) => $crate::status::Failure::panic(&*payload),
        };
        let status = failure.status;
        let _ = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| {
            // SAFETY: every export documents `error_out` as NULL or valid for writing a pointer.
            unsafe { $crate::ptr::write_error(error_out, &failure) }
        }));
        status
    }};
}

/// The panic boundary of exports that return a status without an error object.
macro_rules! ffi_status {
    ($body:block) => {{
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(
            || -> $crate::status::acph_status { $body },
        )) {
            Ok(status) => status,
            Err(_) => $crate::status::acph_status::ACPH_STATUS_PANIC,
        }
    }};
}

/// The panic boundary of exports that return nothing (or a value with a fallback).
macro_rules! ffi_value {
    ($fallback:expr, $body:block) => {{ ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| $body)).unwrap_or($fallback) }};
}

/// Argument checks, one line each (rustls-ffi's `try_ref_from_ptr!` model): each reads one
/// pointer parameter of the export it is written in, and on a bad one returns its failure
/// (`null_argument`, `invalid_utf8`, a length past `isize::MAX`) from the enclosing `ffi_fn!`
/// body, naming the parameter (`stringify!`). They take identifiers only, so they can only be
/// used on an export's own parameters.
///
/// The safety reasoning, once for all of them: every export's `# Safety` section states each
/// pointer parameter as NULL or valid for what its macro does with it, for the duration of the
/// call (a host returned by `acph_host_new` and not freed; a registry not freed; the sink of a
/// fetch callback that has not returned; `len` readable bytes that do not change during the call;
/// an out-param writable as its type; a callback and `user_data` usable from any thread until the
/// finalizer ran), and NULL itself is checked here. Nothing read is kept past the call: strings
/// are copied (`to_owned`) before anything outlives it.
///
/// `try_host!(host)`: the `&acph_host` behind a `*const`/`*mut acph_host` parameter.
macro_rules! try_host {
    ($p:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::host($p) }?
    };
}

/// `try_registry!(registry)`: the `&acph_registry` behind a registry parameter.
macro_rules! try_registry {
    ($p:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::registry($p) }?
    };
}

/// `try_sink!(sink)`: the sink of a fetch callback that is running.
macro_rules! try_sink {
    ($p:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::fetch_sink($p) }?
    };
}

/// `try_str!(text, text_len)`: a required UTF-8 string `(ptr, len)` as `&str`.
macro_rules! try_str {
    ($p:ident, $len:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::str_in($p, $len, stringify!($p)) }?
    };
}

/// `try_opt_str!(json, json_len)`: an optional UTF-8 string (NULL: `None`).
macro_rules! try_opt_str {
    ($p:ident, $len:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::opt_str_in($p, $len, stringify!($p)) }?
    };
}

/// `try_bytes!(data, len)`: a byte buffer `(ptr, len)` (NULL allowed when `len` is 0).
macro_rules! try_bytes {
    ($p:ident, $len:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::bytes_in($p, $len, stringify!($p)) }?
    };
}

/// `try_out!(call_out)`: a required out-param (NULL: `null_argument`, before any work starts).
macro_rules! try_out {
    ($p:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::out($p, stringify!($p)) }?
    };
}

/// `opt_out!(len_out)`: an optional out-param (NULL: `None`, the caller does not want it).
macro_rules! opt_out {
    ($p:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::opt_out($p) }
    };
}

/// `callback!(f, user_data, finalizer)`: a C callback taken over with its `user_data` and
/// finalizer (the finalizer runs when the returned value is dropped, so take it first: every
/// failure after it runs the finalizer before the export returns).
macro_rules! callback {
    ($f:expr, $user_data:ident, $finalizer:ident) => {
        // SAFETY: the export's contract (see the argument checks above).
        unsafe { $crate::ptr::Callback::new($f, $user_data, $finalizer) }
    };
}

mod answers;
mod api;
mod calls;
mod config;
mod event;
mod host;
mod log;
mod ptr;
mod queue;
mod registry;
mod services;
mod sessions;
mod status;
mod stream;

pub use api::*;
pub use event::{acph_event, acph_event_kind};
pub use host::acph_host;
pub use log::acph_log_level;
pub use ptr::{
    acph_fetch_fn, acph_free_fn, acph_log_fn, acph_progress_fn, acph_service_fn, acph_wakeup_fn,
};
pub use registry::{acph_fetch_sink, acph_registry};
pub use status::{acph_error, acph_status};

/// Version of the C ABI (`acph_abi_version()`): bumped on every incompatible change of the header
/// (a removed or changed function, type or field). Additions keep it. 2: one `acph_call_wait`
/// and `acph_call_free` for every asynchronous call instead of a blocking `_wait` twin per call.
pub const ACPH_ABI_VERSION: u32 = 2;

/// No timeout: wait as long as it takes.
pub const ACPH_TIMEOUT_INFINITE: u32 = u32::MAX;

#[cfg(test)]
mod tests;
