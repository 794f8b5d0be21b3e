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
