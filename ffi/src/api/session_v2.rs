//! ACP v2 session calls: cancelling one tool call or one agent terminal. The core decides
//! (`unsupported` on a v1 connection or when the latest update does not advertise
//! `capabilities.cancel`, `invalid_argument` for an unknown id); this only translates.

use std::ffi::c_char;

use crate::calls::Primary;
use crate::host::acph_host;
use crate::status::{acph_error, acph_status};

/// ACP v2 `tool_call/cancel`: ask the agent to stop one tool call of the session, while the
/// tool call's latest update advertises `capabilities.cancel`. `result`: the agent's acceptance
/// (`{}`, maybe with `_meta`); the work may still run then. The completion is a later
/// `session_update` event (`tool_call_update` with a final `status`). Fails
/// `ACPH_STATUS_UNSUPPORTED` on a v1 connection or without the capability,
/// `ACPH_STATUS_INVALID_ARGUMENT` for an id no update of the session named, `AGENT_ERROR` when
/// the agent refuses (docs/PROTOCOL.md).
///
/// # Safety
/// `host` is NULL or a live host; `tool_call_id` points to `tool_call_id_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_cancel_tool_call(
    host: *mut acph_host,
    session: u64,
    tool_call_id: *const c_char,
    tool_call_id_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let id = try_str!(tool_call_id, tool_call_id_len).to_owned();
        let out = try_out!(call_out);
        let s = host.state.session(session)?;
        let agent = s.agent().id();
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            s.cancel_tool_call(&id).await
        })?);
        Ok(())
    })
}

/// ACP v2 `terminal/cancel`: ask the agent to stop one of its terminals, while its latest
/// `terminal_update` advertises `capabilities.cancel`. As `acph_session_cancel_tool_call`; the
/// completion is a later `terminal_update` with `exitStatus`.
///
/// # Safety
/// `host` is NULL or a live host; `terminal_id` points to `terminal_id_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_cancel_terminal(
    host: *mut acph_host,
    session: u64,
    terminal_id: *const c_char,
    terminal_id_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let id = try_str!(terminal_id, terminal_id_len).to_owned();
        let out = try_out!(call_out);
        let s = host.state.session(session)?;
        let agent = s.agent().id();
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            s.cancel_terminal(&id).await
        })?);
        Ok(())
    })
}
