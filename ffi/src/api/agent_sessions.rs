//! An agent's sessions: open one (new, load, resume, fork), list them, delete one. The opening
//! calls give a session handle (`result.session`, `acph_call_wait`'s `*id_out`, the
//! `acph_event.session` of the session's events); the handle's own calls are in `session.rs`.

use std::ffi::c_char;

use crate::calls::Primary;
use crate::config;
use crate::host::{OpenHow, acph_host};
use crate::ptr::Out;
use crate::status::{Failure, acph_error, acph_status};

/// The common part of new/load/resume/fork, once the arguments are read.
fn open_session(
    host: &acph_host,
    agent: u64,
    how: OpenHow,
    options: &str,
    out: Out<u64>,
) -> Result<(), Failure> {
    let options = config::session_options(options)?;
    let st = &host.state;
    let a = st.agent(agent)?;
    out.write(st.start_call(agent, Primary::Session, st.op_open_session(a, how, options))?);
    Ok(())
}

/// `session/new`. `options_json`: `{"cwd": "/absolute/dir", "additionalDirectories": [...],
/// "mcpServers": [...]}` (`cwd` required; docs/OPTIONS.md, "Session options": a bad document is
/// `ACPH_STATUS_INVALID_CONFIG` with the core's `data.path`, e.g. `additionalDirectories[1]`).
/// `result`: `{"session": handle, "sessionId": "..."}` (`acph_call_wait`'s `*id_out`: the
/// handle), after the `session_opened` event (which carries the same handle in
/// `acph_event.session`). Session handles stay valid until the agent is released or the host
/// freed.
///
/// # Safety
/// `host` is NULL or a live host; `options_json` points to `options_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_new_session(
    host: *mut acph_host,
    agent: u64,
    options_json: *const c_char,
    options_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let options = try_str!(options_json, options_len);
        let out = try_out!(call_out);
        open_session(host, agent, OpenHow::New, options, out)
    })
}

/// `session/load` (the agent must advertise `loadSession`): the agent replays the conversation,
/// delivered as `session_update` events with `replay: true` after `session_opened`. Options and
/// `result` as for `acph_agent_new_session`.
///
/// # Safety
/// As `acph_agent_new_session`; `session_id` points to `session_id_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_load_session(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let id = try_str!(session_id, session_id_len).to_owned();
        let options = try_str!(options_json, options_len);
        let out = try_out!(call_out);
        open_session(host, agent, OpenHow::Load(id), options, out)
    })
}

/// `session/resume` (needs `sessionCapabilities.resume`): reopen without replay. As
/// `acph_agent_load_session`.
///
/// # Safety
/// As `acph_agent_load_session`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_resume_session(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let id = try_str!(session_id, session_id_len).to_owned();
        let options = try_str!(options_json, options_len);
        let out = try_out!(call_out);
        open_session(host, agent, OpenHow::Resume(id), options, out)
    })
}

/// `session/fork` (unstable in ACP): a new session that starts from `session_id`'s history.
/// Needs `"unstable": ["session/fork"]` in the host's config and the agent's
/// `sessionCapabilities.fork`; otherwise `ACPH_STATUS_UNSUPPORTED` and nothing is sent. Options
/// and `result` as for `acph_agent_new_session` (`session_opened` has `origin: "fork"`).
///
/// # Safety
/// As `acph_agent_load_session`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_fork_session(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let id = try_str!(session_id, session_id_len).to_owned();
        let options = try_str!(options_json, options_len);
        let out = try_out!(call_out);
        open_session(host, agent, OpenHow::Fork(id), options, out)
    })
}

/// `session/list` (needs `sessionCapabilities.list`). `params_json`: NULL or `{"cwd":
/// "/abs", "cursor": "..."}`. `result`: the agent's answer, `{"sessions": [...], "nextCursor"?}`.
///
/// # Safety
/// `host` is NULL or a live host; `params_json` is NULL or points to `params_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_list_sessions(
    host: *mut acph_host,
    agent: u64,
    params_json: *const c_char,
    params_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let (cwd, cursor) = match try_opt_str!(params_json, params_len) {
            None => (None, None),
            Some(p) => config::list_params(p)?,
        };
        let out = try_out!(call_out);
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            a.list_sessions(cwd.as_deref(), cursor.as_deref()).await
        })?);
        Ok(())
    })
}

/// `session/delete` (needs `sessionCapabilities.delete`) of a session by its ACP id (it need not
/// be open). `result`: `{}`.
///
/// # Safety
/// `host` is NULL or a live host; `session_id` points to `session_id_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_delete_session(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let sid = try_str!(session_id, session_id_len).to_owned();
        let out = try_out!(call_out);
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            a.delete_session(&sid).await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}
