//! Sessions: prompt, cancel, modes and config options, close, state.
//!
//! Session handles are the `uint64_t` values returned by the session-opening calls and carried
//! in `acph_event.session`. The asynchronous calls are waited for, released and cancelled as
//! every call (`acph_call_wait`, src/api/call.rs).

use std::ffi::c_char;

use serde_json::Value;

use crate::calls::Primary;
use crate::config;
use crate::host::acph_host;
use crate::ptr;
use crate::status::{acph_error, acph_status};

/// The session handle of an agent's session, by its ACP id (the `session_id` of events).
/// `ACPH_STATUS_STALE_ID` when this host has none. Non-blocking.
///
/// # Safety
/// `host` is NULL or a live host; `session_id` points to `session_id_len` readable bytes;
/// `session_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_find_session(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    session_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let sid = try_str!(session_id, session_id_len);
        let out = try_out!(session_out);
        out.write(host.state.find_session(agent, sid)?);
        Ok(())
    })
}

/// The ACP session id of a handle: `*id_out` (owned, `acph_string_free`; NUL-terminated) and,
/// unless `len_out` is NULL, its length in bytes. Non-blocking.
///
/// # Safety
/// `host` is NULL or a live host; `id_out`, `len_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_id(
    host: *mut acph_host,
    session: u64,
    id_out: *mut *mut c_char,
    len_out: *mut usize,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(id_out);
        let len = opt_out!(len_out);
        let (_, sid) = host.state.session_key(session)?;
        out.write(ptr::string_into_raw(sid.as_bytes()));
        if let Some(len) = len {
            len.write(sid.len());
        }
        Ok(())
    })
}

/// The agent id of a session handle. Non-blocking.
///
/// # Safety
/// `host` is NULL or a live host; `agent_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_agent(
    host: *mut acph_host,
    session: u64,
    agent_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(agent_out);
        out.write(host.state.session_key(session)?.0);
        Ok(())
    })
}

/// A snapshot of the session's materialised state as JSON (`{"sessionId", "cwd", "open",
/// "modes", "currentModeId", "configOptions", "toolCalls", "plan", "availableCommands", "usage",
/// "title", "activeTurn", "lastStopReason", ...}`), owned by the caller (`acph_string_free`).
/// Non-blocking. `ACPH_STATUS_NOT_FOUND` when the session is not open and this host never held it.
///
/// # Safety
/// `host` is NULL or a live host; `json_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_state(
    host: *mut acph_host,
    session: u64,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(json_out);
        let s = host.state.session(session)?;
        let json = serde_json::to_string(&s.state()).unwrap_or_else(|_| "null".into());
        out.write(ptr::string_into_raw(json.as_bytes()));
        Ok(())
    })
}

/// The result of a finished turn: the core's one shape (`TurnResult::to_json`), reported after
/// its `turn_ended` event.
fn turn_json(t: acp_host::TurnResult) -> Value {
    t.to_json()
}

/// Send a prompt: `content_json` is a JSON array of ACP content blocks (`[{"type": "text",
/// "text": "..."}]`; blocks the agent did not advertise are refused locally). The turn's events
/// follow (`turn_started`, `session_update`s, `turn_ended`), every one of them before the call's
/// `call_completed`, and queued before `acph_call_wait` hands the outcome over. `result` (the
/// same in every face):
/// `{"turn": id, "stopReason": "end_turn" | "cancelled" | ..., "usage": {the turn's token usage}
/// | null, "raw": {the agent's prompt response}, "text": the turn's agent message text,
/// "thought": its thought text, "textTruncated": bool}` (text assembled from the turn's text
/// chunks, at most 4 MiB each). A second prompt while a
/// turn runs fails with `ACPH_STATUS_BUSY`, except on a pooled session (`acph_pool_open_session`):
/// there it waits its turn, in call order, and `acph_call_cancel` of a waiting prompt completes
/// it with `cancelled` without sending it.
///
/// # Safety
/// `host` is NULL or a live host; `content_json` points to `content_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_prompt(
    host: *mut acph_host,
    session: u64,
    content_json: *const c_char,
    content_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let content = try_str!(content_json, content_len);
        let out = try_out!(call_out);
        let content = config::prompt_content(content)?;
        let p = host.state.prompter(session)?;
        out.write(host.state.start_call_abortable(p.agent(), move |abort| {
            let turn = p.prompt(content, abort);
            async move { turn.await.map(turn_json) }
        })?);
        Ok(())
    })
}

/// `acph_session_prompt` with one text block (`text` is plain UTF-8, not JSON).
///
/// # Safety
/// `host` is NULL or a live host; `text` points to `text_len` readable bytes; `call_out` and
/// `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_prompt_text(
    host: *mut acph_host,
    session: u64,
    text: *const c_char,
    text_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let text = try_str!(text, text_len).to_owned();
        let out = try_out!(call_out);
        let p = host.state.prompter(session)?;
        out.write(host.state.start_call_abortable(p.agent(), move |abort| {
            let content = vec![serde_json::json!({ "type": "text", "text": text })];
            let turn = p.prompt(content, abort);
            async move { turn.await.map(turn_json) }
        })?);
        Ok(())
    })
}

/// Steer (unstable: needs `"unstable": ["_session/steering"]` in the host's config, else
/// `ACPH_STATUS_UNSUPPORTED`): `content_json` (a JSON array of ACP content blocks, checked as for
/// a prompt) joins the session's running turn when the agent advertises steering
/// (`_meta.steering.supported`; sent as `_session/steering`) or the connection speaks ACP v2 (sent
/// as a v2 `session/prompt` insertion; an agent's error answer queues it), else waits as the
/// session's next prompt and is sent as its own turn when the running turn ends (at once when none runs).
/// `result` (the same in every face): `{"steer": id, "outcome": "injected" | "started_new_turn"
/// | "queued" | "prompted", "turn": id | null}`; what becomes of a queued steer later
/// (`prompted`, or `rejected` by a cancel, a close or the agent ending) is reported as `steer`
/// events. At most 16 steers wait per session (`ACPH_STATUS_BUSY`). docs/STEERING.md.
///
/// # Safety
/// `host` is NULL or a live host; `content_json` points to `content_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_steer(
    host: *mut acph_host,
    session: u64,
    content_json: *const c_char,
    content_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let content = try_str!(content_json, content_len);
        let out = try_out!(call_out);
        let content = config::prompt_content(content)?;
        let s = host.state.session(session)?;
        let agent = s.agent().id();
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            s.steer(content).await.map(|r| r.to_json())
        })?);
        Ok(())
    })
}

/// `session/cancel`: the agent should end the turn in flight with `cancelled`; every pending
/// permission request of the session is answered `cancelled` at once. Returns at once (any
/// thread, also callbacks); the turn's end arrives as events. On a pooled session every prompt
/// still waiting its turn fails with `ACPH_STATUS_CANCELLED` (never sent): those called before
/// this call, not those called after.
///
/// # Safety
/// `host` is NULL or a live host; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_cancel(
    host: *mut acph_host,
    session: u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        host.state.cancel_session(session)
    })
}

/// `session/set_mode` (one of the `availableModes` the agent returned). `result`: `{}`.
///
/// # Safety
/// `host` is NULL or a live host; `mode_id` points to `mode_len` readable bytes; `call_out` and
/// `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_set_mode(
    host: *mut acph_host,
    session: u64,
    mode_id: *const c_char,
    mode_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let mode = try_str!(mode_id, mode_len).to_owned();
        let out = try_out!(call_out);
        let s = host.state.session(session)?;
        let agent = s.agent().id();
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            s.set_mode(&mode).await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// The session's models as JSON, owned by the caller (`acph_string_free`): `{"current": "id" |
/// null, "available": [{"id", "name", "description"}], "via": {"kind": "config_option",
/// "configId": "model"} | {"kind": "legacy"}}` (the `model` config option of ACP v1, else the
/// legacy `models` of older agents), or `null` when the agent offers no model choice.
/// Non-blocking.
///
/// # Safety
/// `host` is NULL or a live host; `json_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_models(
    host: *mut acph_host,
    session: u64,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(json_out);
        let s = host.state.session(session)?;
        let json = serde_json::to_string(&s.models()).unwrap_or_else(|_| "null".into());
        out.write(ptr::string_into_raw(json.as_bytes()));
        Ok(())
    })
}

/// Switch the session's model (one of `acph_session_models`): through the `model` config option,
/// or the legacy `session/set_model` for agents that only answer that. `result`: `{}`.
///
/// # Safety
/// `host` is NULL or a live host; `model_id` points to `model_len` readable bytes; `call_out` and
/// `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_set_model(
    host: *mut acph_host,
    session: u64,
    model_id: *const c_char,
    model_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let model = try_str!(model_id, model_len).to_owned();
        let out = try_out!(call_out);
        let s = host.state.session(session)?;
        let agent = s.agent().id();
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            s.set_model(&model).await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// `session/set_config_option`: `value_json` is the new value as JSON (`"architect"`, `true`).
/// `result`: `{"configOptions": [the complete updated list]}`.
///
/// # Safety
/// `host` is NULL or a live host; `config_id` and `value_json` point to `config_len` and
/// `value_len` readable bytes; `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_set_config_option(
    host: *mut acph_host,
    session: u64,
    config_id: *const c_char,
    config_len: usize,
    value_json: *const c_char,
    value_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let id = try_str!(config_id, config_len).to_owned();
        let value = try_str!(value_json, value_len);
        let out = try_out!(call_out);
        let value = config::any_json("value_json", value)?;
        let s = host.state.session(session)?;
        let agent = s.agent().id();
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            s.set_config_option(&id, value)
                .await
                .map(|o| serde_json::json!({ "configOptions": o }))
        })?);
        Ok(())
    })
}

/// `session/close` (needs `sessionCapabilities.close`). `result`: `{}`, after `session_closed`.
/// The handle stays valid (for `acph_session_id`, and a later load/resume gets it again). A
/// pooled session is given back with `acph_pool_release_session` instead
/// (`ACPH_STATUS_INVALID_ARGUMENT` here).
///
/// # Safety
/// `host` is NULL or a live host; `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_session_close(
    host: *mut acph_host,
    session: u64,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(call_out);
        let (agent, sid) = host.state.session_key(session)?;
        host.state.not_pooled(session, "acph_session_close")?;
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            a.close_session(&sid).await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}
