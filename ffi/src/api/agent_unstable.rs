//! The unstable session methods besides fork: `session/status`, `session/set_title`,
//! `session/archive` / `session/unarchive`, `session/options`. Each needs its name in the host
//! config's `"unstable"` list and the agent's `sessionCapabilities.*` marker; otherwise
//! `ACPH_STATUS_UNSUPPORTED` and nothing is sent. Asynchronous like every agent call: the
//! result arrives through `acph_call_wait` / the `call_completed` event.

use std::ffi::c_char;

use crate::calls::Primary;
use crate::config;
use crate::host::acph_host;
use crate::status::{acph_error, acph_status};

/// `session/status` (unstable; `"unstable": ["session/status"]` and the agent's
/// `sessionCapabilities.status`): whether the agent has the session in memory. `result`:
/// `{"status": "open"|"saved", "reported": "<the agent's value>"}` (a value the host does not
/// know is `"saved"`, as the spec requires).
///
/// # Safety
/// `host` is NULL or a live host; `session_id` points to `session_id_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_session_status(
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
            a.session_status(&sid)
                .await
                .map(|s| serde_json::to_value(s).unwrap_or_default())
        })?);
        Ok(())
    })
}

/// `session/set_title` (unstable; `"unstable": ["session/set_title"]` and
/// `sessionCapabilities.title`). `result`: `{"title": "<the title the agent stored>"}` (it may
/// normalise it: show this one); a session open on this host gets it as its title.
///
/// # Safety
/// As `acph_agent_session_status`; `title` points to `title_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_set_session_title(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    title: *const c_char,
    title_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let sid = try_str!(session_id, session_id_len).to_owned();
        let title = try_str!(title, title_len).to_owned();
        let out = try_out!(call_out);
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            a.set_session_title(&sid, &title)
                .await
                .map(|t| serde_json::json!({ "title": t }))
        })?);
        Ok(())
    })
}

/// `session/archive` (unstable; `"unstable": ["session/archive"]` and
/// `sessionCapabilities.archive`): hidden from default `session/list` results. A session open on
/// this host is closed (`session_closed`, reason `archived`). `result`: `{}`.
///
/// # Safety
/// As `acph_agent_session_status`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_archive_session(
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
            a.archive_session(&sid)
                .await
                .map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// `session/unarchive` (unstable; `"unstable": ["session/unarchive"]` and
/// `sessionCapabilities.archive`): back in default `session/list` results; never loads or
/// resumes it. `result`: `{}`.
///
/// # Safety
/// As `acph_agent_session_status`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_unarchive_session(
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
            a.unarchive_session(&sid)
                .await
                .map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// `session/options` (unstable; `"unstable": ["session/options"]` and
/// `sessionCapabilities.options`): the modes and config options a session would start with,
/// without creating one. `options_json` as for `acph_agent_new_session` (`cwd` required;
/// `mcpServers` is not sent). `session_id`: NULL for a new session, or an existing one's id
/// (then the agent must support load or resume). `result`: `{"modes": {...}|null,
/// "configOptions": [...]|null}`.
///
/// # Safety
/// `host` is NULL or a live host; `options_json` points to `options_len` readable bytes;
/// `session_id` is NULL or points to `session_id_len` readable bytes; `call_out` and `error_out`
/// are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_session_options(
    host: *mut acph_host,
    agent: u64,
    options_json: *const c_char,
    options_len: usize,
    session_id: *const c_char,
    session_id_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let options = config::session_options(try_str!(options_json, options_len))?;
        let sid = try_opt_str!(session_id, session_id_len).map(str::to_owned);
        let out = try_out!(call_out);
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            a.session_options(&options, sid.as_deref())
                .await
                .map(|d| serde_json::to_value(d).unwrap_or_default())
        })?);
        Ok(())
    })
}
