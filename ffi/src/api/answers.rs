//! Answers to the agents' requests the embedder decides: permission and elicitation requests
//! (their `*_requested` events). Non-blocking, from any thread, also from callbacks.

use std::ffi::c_char;

use crate::host::acph_host;
use crate::status::{acph_error, acph_status};

/// Answer a pending permission request (`acph_event.request` of a `permission_requested` event,
/// i.e. its `data.requestId`) with one of the offered option ids, or deny it with `option_id`
/// NULL. Requires `"permission": "manual"` in the config (otherwise nobody waits for an answer).
/// Returns at once, from any thread (also from callbacks); the `permission_resolved` event tells
/// who decided (a timeout or a cancel may have won the race).
///
/// `ACPH_STATUS_ALREADY_RESOLVED` for a second answer or a request already resolved;
/// `ACPH_STATUS_INVALID_ARGUMENT` for an option that was not offered (the request is then
/// denied, fail-closed); `ACPH_STATUS_NOT_FOUND` for an id this host never announced.
///
/// # Safety
/// `host` is NULL or a live host; `option_id` is NULL or points to `option_len` readable bytes;
/// `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_permission_respond(
    host: *mut acph_host,
    request_id: u64,
    option_id: *const c_char,
    option_len: usize,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let option = try_opt_str!(option_id, option_len);
        host.state.respond_permission(request_id, option)
    })
}

/// Answer a pending elicitation request (`acph_event.request` of an `elicitation_requested`
/// event, i.e. its `data.requestId`). `answer_json` is the ACP response shape:
/// `{"action": "accept", "content": {...}}` (form mode; `content` must match the requested
/// schema), `{"action": "accept"}` (URL mode: the user consented to open the URL),
/// `{"action": "decline"}` or `{"action": "cancel"}`. Requires `"elicitation": "manual"` in the
/// config. Returns at once, from any thread (also from callbacks); the `elicitation_resolved`
/// event tells how it ended: content that does not match the schema is answered `cancel`
/// (`decidedBy: invalid_answer`, with the `reason`), and a timeout or a cancel may have won the
/// race.
///
/// `ACPH_STATUS_INVALID_JSON` / `ACPH_STATUS_INVALID_ARGUMENT` for an answer that is not of that
/// shape (nothing is sent; the request stays pending); `ACPH_STATUS_ALREADY_RESOLVED` for a
/// second answer or a request already resolved; `ACPH_STATUS_NOT_FOUND` for an id this host never
/// announced.
///
/// # Safety
/// `host` is NULL or a live host; `answer_json` points to `answer_len` readable bytes;
/// `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_elicitation_respond(
    host: *mut acph_host,
    request_id: u64,
    answer_json: *const c_char,
    answer_len: usize,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let answer = try_str!(answer_json, answer_len);
        host.state.respond_elicitation(request_id, answer)
    })
}

/// Answer a pending permission request as [`acph_permission_respond`] does, and learn whether
/// the answer reached the agent: `*call_out` is a call whose `call_completed` event has, as
/// `result`, the answer's receipt (docs/EVENTS.md, "Delivery receipts"):
/// `{"status": "delivered"}` once its line is written to the agent's stdin, `{"status":
/// "uncertain", "code", "message"}` when the pipe failed mid-write (`io`) or the agent did not
/// read it within 5 s (`timeout`), `{"status": "rejected", "state", "code", "message"}` when the
/// agent's stdin was closed before it. A call that fails (an option that was not offered: the
/// request is denied, `invalid_argument`) has the `rejected` receipt in `error.data.receipt`.
/// `permission_resolved` carries the same receipt.
///
/// Fails at once, writing nothing to `call_out`, for a second answer or a request already
/// resolved (`ACPH_STATUS_ALREADY_RESOLVED`) and an id this host never announced
/// (`ACPH_STATUS_NOT_FOUND`); the error's `data.receipt` is then the `rejected` receipt, with
/// the request `unavailable`.
///
/// # Safety
/// `host` is NULL or a live host; `option_id` is NULL or points to `option_len` readable bytes;
/// `call_out` is writable; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_permission_answer(
    host: *mut acph_host,
    request_id: u64,
    option_id: *const c_char,
    option_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(call_out);
        let option = try_opt_str!(option_id, option_len);
        out.write(host.state.answer_permission(request_id, option)?);
        Ok(())
    })
}

/// Answer a pending elicitation request as [`acph_elicitation_respond`] does, and learn whether
/// the answer reached the agent: `*call_out` is a call whose `call_completed` result is the
/// answer's receipt, as for [`acph_permission_answer`] (content that does not match the schema
/// fails the call with `invalid_argument`, the request answered `cancel`).
///
/// Fails at once, writing nothing to `call_out`: `ACPH_STATUS_INVALID_JSON` /
/// `ACPH_STATUS_INVALID_ARGUMENT` for an answer that is not of the ACP shape (nothing is sent;
/// `data.receipt.state` is `pending` while the request still waits for an answer),
/// `ACPH_STATUS_ALREADY_RESOLVED` / `ACPH_STATUS_NOT_FOUND` as for
/// [`acph_permission_answer`].
///
/// # Safety
/// `host` is NULL or a live host; `answer_json` points to `answer_len` readable bytes;
/// `call_out` is writable; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_elicitation_answer(
    host: *mut acph_host,
    request_id: u64,
    answer_json: *const c_char,
    answer_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(call_out);
        let answer = try_str!(answer_json, answer_len);
        out.write(host.state.answer_elicitation(request_id, answer)?);
        Ok(())
    })
}
