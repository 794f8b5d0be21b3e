//! C ABI of acp-host: `include/acp_host.h`, `libacp_host.{so,a}`.
//!
//! The reference for C users is `docs/FFI.md` (ownership of every pointer, threading, shutdown)
//! and the header's comments, which are generated from the doc comments in `src/api/`.
//!
//! Layout:
//! - `api/`: every exported function. Each runs inside one panic boundary ([`ffi_fn!`]) and turns
//!   failures into a status code plus an optional owned error object.
//! - `ptr`: the only module that reads, writes, casts, allocates or frees raw pointers and calls C
//!   function pointers.
//! - `host`: the host object (runtime, core `Host`, event queue and pump, id tables, calls).
//! - `services`: fs/terminal requests routed to the embedder.
//! - `config`: the JSON arguments (host config, agent spec, session options, registry options).
//! - `stream`: the descriptors/handles of `acph_host_connect`, adopted as the core's reader and
//!   writer (the only module that takes raw descriptors over).
//! - `registry`: the registry handle and the fetch callback as the core's `Fetcher`.
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

mod api;
mod config;
mod event;
mod host;
mod ptr;
mod queue;
mod registry;
mod services;
mod status;
mod stream;

pub use api::*;
pub use event::{acph_event, acph_event_kind};
pub use host::acph_host;
pub use ptr::{acph_fetch_fn, acph_free_fn, acph_service_fn, acph_wakeup_fn};
pub use registry::{acph_fetch_sink, acph_registry};
pub use status::{acph_error, acph_status};

/// Version of the C ABI (`acph_abi_version()`): bumped on every incompatible change of the header
/// (a removed or changed function, type or field). Additions keep it.
pub const ACPH_ABI_VERSION: u32 = 1;

/// No timeout: wait as long as it takes.
pub const ACPH_TIMEOUT_INFINITE: u32 = u32::MAX;

#[cfg(test)]
mod tests;
