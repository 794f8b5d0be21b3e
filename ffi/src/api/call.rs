//! Calls: one wait, one release and one cancel for every asynchronous call (docs/FFI.md, "Calls").
//!
//! Every asynchronous function writes a call id to `*call_out` and returns at once. The id is
//! the caller's until released exactly once: by `acph_call_wait` returning a final status, or by
//! `acph_call_free`. Its outcome arrives both ways: `acph_call_wait` hands it over, and a
//! `call_completed` event (`acph_event.call`) carries it for event loops, whose JSON `data` is
//! `{"call": id, "ok": true, "result": {...}}` or `{"call": id, "ok": false, "error": {"kind",
//! "message", "data"}}`. Each asynchronous function documents its `result`.

use std::ffi::c_char;

use crate::host::acph_host;
use crate::ptr;
use crate::status::{Failure, acph_error, acph_status};

/// Wait for an asynchronous call to complete, up to `timeout_ms` milliseconds
/// (`ACPH_TIMEOUT_INFINITE`: no limit; 0: do not wait, a poll), and take its outcome.
///
/// Completed: returns the call's own status (`ACPH_STATUS_OK`, or its failure with the error in
/// `*error_out`) and releases the call: its id is stale from then on. On success `*id_out` (NULL:
/// not wanted) is the call's primary id (the agent of `acph_host_spawn`, `acph_host_connect` and
/// `acph_agent_terminal_auth`; the session handle of the session-opening calls and
/// `acph_pool_open_session`; 0 for the others) and `*result_out` (NULL: not wanted; owned, free
/// with `acph_string_free`) the call's `result` JSON, the same as its `call_completed` event's.
/// It does not matter whether an event thread took that event first: the outcome is kept until
/// the call is released.
///
/// Not completed in time: `ACPH_STATUS_TIMEOUT` with `data` `{"what": "acph_call_wait",
/// "afterMs", "call", "running": true}`; the call keeps running and its id stays the caller's
/// (wait again, `acph_call_cancel` it, or `acph_call_free` it). A call that itself failed with a
/// timeout (an agent that did not answer within `requestTimeoutMs`) is completed and released:
/// its error's `data` has no `running`.
///
/// `ACPH_STATUS_STALE_ID` for an id that is not the caller's: never issued, another host's, or
/// already released. `ACPH_STATUS_WRONG_THREAD` when called with a non-zero timeout on a library
/// thread (inside a callback); a poll (0) is fine anywhere. Two threads may wait for the same
/// call: one gets the outcome, the other `ACPH_STATUS_STALE_ID`.
///
/// # Safety
/// `host` is NULL or a live host; `id_out`, `result_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_call_wait(
    host: *mut acph_host,
    call: u64,
    timeout_ms: u32,
    id_out: *mut u64,
    result_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let id_out = opt_out!(id_out);
        let result_out = opt_out!(result_out);
        if timeout_ms != 0 && tokio::runtime::Handle::try_current().is_ok() {
            return Err(Failure::wrong_thread("acph_call_wait with a timeout"));
        }
        let (id, result) = host.state.calls.wait(call, timeout_ms)?;
        if let Some(out) = id_out {
            out.write(id);
        }
        if let Some(out) = result_out {
            out.write(ptr::string_into_raw(result.to_string().as_bytes()));
        }
        Ok(())
    })
}

/// Release a call id without waiting for it. A completed call's outcome is dropped; a running
/// call goes on (releasing is not cancelling: `acph_call_cancel` first for that) and its outcome
/// is dropped when it comes (its `call_completed` event still arrives). `ACPH_STATUS_STALE_ID`
/// for an id that is not the caller's (never issued, another host's, or already released).
/// Non-blocking; any thread.
///
/// # Safety
/// `host` is NULL or a live host; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_call_free(
    host: *mut acph_host,
    call: u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        host.state.calls.free(call)
    })
}

/// Cancel a running call: it completes with `cancelled` (its outcome and `call_completed`
/// follow; the id stays the caller's until released); the work is dropped, which tells the agent
/// (`$/cancel_request`). A prompt call is told `session/cancel` instead (pending permission
/// requests of the session are answered `cancelled` at once) and completes with the agent's
/// answer (normally stop reason `cancelled`) if it comes within `cancelGraceMs`, else with
/// `cancelled`: it always completes, even when the agent ignores the cancel. Cancelling again
/// while it settles changes nothing. `ACPH_STATUS_ALREADY_RESOLVED` when the call has already
/// completed (nothing changes: its outcome waits for `acph_call_wait`); `ACPH_STATUS_STALE_ID`
/// for an id that is not the caller's. Non-blocking; any thread.
///
/// # Safety
/// `host` is NULL or a live host; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_call_cancel(
    host: *mut acph_host,
    call: u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        host.state.calls.cancel(call)
    })
}
