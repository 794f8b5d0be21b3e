//! Agents: spawn (+ handshake), authenticate, open/list/delete sessions, shut down, release.
//!
//! Asynchronous calls write a call id to `*call_out` and return at once; the outcome arrives as a
//! `call_completed` event with that id (`acph_event.call`), whose JSON `data` is
//! `{"call": id, "ok": true, "result": {...}}` or `{"call": id, "ok": false, "error": {"kind",
//! "message", "data"}}`. Each documents its `result`. The `_wait` variants block the calling
//! thread up to `timeout_ms` (`ACPH_TIMEOUT_INFINITE`: no limit) and return the outcome directly;
//! on `ACPH_STATUS_TIMEOUT` the work is abandoned (the agent is told, as for `acph_call_cancel`).
//! Blocking variants return `ACPH_STATUS_WRONG_THREAD` on library threads (callbacks).

use std::ffi::c_char;

use crate::config;
use crate::host::{OpenHow, acph_host, agent_json};
use crate::ptr;
use crate::status::{Failure, acph_error, acph_status};

fn session_handle(v: &serde_json::Value) -> Result<u64, Failure> {
    v["session"].as_u64().ok_or_else(|| {
        Failure::new(
            acph_status::ACPH_STATUS_INTERNAL,
            "session result without a handle",
        )
    })
}

/// Spawn an agent process and perform the handshake (`initialize`, protocol version check).
/// `spec_json`: `{"command": "/path/or/name", "args": [...], "env": {"NAME": "value" | null},
/// "cwd": "/dir", "restart": {...}}` (the command runs directly, without a shell, in its own
/// process group; `env` overlays the inherited environment, null removes a variable). `restart`
/// (optional) supervises the agent: `{"maxRestarts": 3, "backoffMs": 250, "maxBackoffMs": 10000,
/// "resetAfterMs": 60000}` (every field optional, these defaults): a process that dies unasked is
/// started again under the same agent id and its open sessions reopened, keeping their handles
/// (events `agent_restarting`, `agent_restarted`, `session_lost`, `agent_failed`; docs/FFI.md).
/// The spec is an option document (docs/OPTIONS.md, "Agent spec"): a bad one (text that is not
/// JSON, an unknown field, a `cwd` that is not an existing directory, a bad `restart`) is
/// `ACPH_STATUS_INVALID_CONFIG` with the core's message and `data.path` (`cwd`,
/// `restart.backoffMs`, ...) and nothing is started. `result`: `{"agent": id, "protocolVersion", "agentInfo", "agentCapabilities",
/// "authMethods", "exited": null, "restartsExhausted": false}`; the `agent_ready` event precedes
/// it. A failed handshake still reports the agent it started, as an `agent_exited` event under an
/// agent id the caller never receives.
///
/// # Safety
/// `host` is NULL or a live host; `spec_json` points to `spec_len` readable bytes; `call_out` and
/// `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_spawn(
    host: *mut acph_host,
    spec_json: *const c_char,
    spec_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let spec = unsafe { ptr::str_in(spec_json, spec_len, "spec_json") }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(call_out, "call_out") }?;
        let spec = config::agent_spec(spec)?;
        let st = &host.state;
        out.write(st.start_call(0, st.op_spawn(spec))?);
        Ok(())
    })
}

/// Blocking `acph_host_spawn`: on success `*agent_out` is the new agent's id.
///
/// # Safety
/// As `acph_host_spawn`; `agent_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_spawn_wait(
    host: *mut acph_host,
    spec_json: *const c_char,
    spec_len: usize,
    timeout_ms: u32,
    agent_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let spec = unsafe { ptr::str_in(spec_json, spec_len, "spec_json") }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(agent_out, "agent_out") }?;
        let spec = config::agent_spec(spec)?;
        let st = &host.state;
        let v = st.wait("acph_host_spawn_wait", timeout_ms, st.op_spawn(spec))?;
        out.write(v["agent"].as_u64().unwrap_or(0));
        Ok(())
    })
}

/// What the agent negotiated, as JSON: `{"agent", "protocolVersion", "agentInfo",
/// "agentCapabilities", "authMethods", "exited": null | {"exitCode", "signal", "stderrTail"},
/// "restartsExhausted": bool}` (of its current process, for a supervised agent: `exited` is
/// cleared again by a restart; `restartsExhausted` is true once its supervisor gave up, after
/// `agent_failed`). `*json_out` is owned by the caller (`acph_string_free`). Also for a pool's
/// process while this host holds one of its sessions. Non-blocking.
///
/// # Safety
/// `host` is NULL or a live host; `json_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_info(
    host: *mut acph_host,
    agent: u64,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(json_out, "json_out") }?;
        let a = host.state.agent_or_pooled(agent)?;
        out.write(ptr::string_into_raw(agent_json(&a).to_string().as_bytes()));
        Ok(())
    })
}

/// `authenticate` with one of the agent's advertised `authMethods` (`"type": "agent"` methods
/// only). `result`: `{}`.
///
/// # Safety
/// `host` is NULL or a live host; `method_id` points to `method_len` readable bytes; `call_out`
/// and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_authenticate(
    host: *mut acph_host,
    agent: u64,
    method_id: *const c_char,
    method_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let method = unsafe { ptr::str_in(method_id, method_len, "method_id") }?.to_owned();
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(call_out, "call_out") }?;
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, async move {
            a.authenticate(&method)
                .await
                .map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// Terminal login (docs/FFI.md): run the login of `method_id` (a `"type": "terminal"` auth
/// method, or one with the legacy `_meta["terminal-auth"]`) through the service handler (config
/// `"terminalAuth": "embedder"`: method `acph/terminal_auth`, answered `{"exitCode": n}`); when it
/// exits 0 the agent is shut down and started again from its spec. `result`: the new agent, as
/// `acph_host_spawn`'s (`{"agent": id, ...}`); retry the call that failed with `auth_required`
/// on it. A login that exits non-zero is `ACPH_STATUS_AUTH_REQUIRED` (the agent keeps running);
/// without `terminalAuth` it is `ACPH_STATUS_UNSUPPORTED`. `authenticate` is never sent.
///
/// # Safety
/// As `acph_agent_authenticate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_terminal_auth(
    host: *mut acph_host,
    agent: u64,
    method_id: *const c_char,
    method_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let method = unsafe { ptr::str_in(method_id, method_len, "method_id") }?.to_owned();
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(call_out, "call_out") }?;
        let a = host.state.agent(agent)?;
        out.write(
            host.state
                .start_call(agent, host.state.op_terminal_auth(a, method))?,
        );
        Ok(())
    })
}

/// Blocking `acph_agent_terminal_auth`: `*agent_out` is the relaunched agent's id. The service
/// handler must answer from another thread (or before returning) while this blocks.
///
/// # Safety
/// As `acph_agent_terminal_auth`; `agent_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_terminal_auth_wait(
    host: *mut acph_host,
    agent: u64,
    method_id: *const c_char,
    method_len: usize,
    timeout_ms: u32,
    agent_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let method = unsafe { ptr::str_in(method_id, method_len, "method_id") }?.to_owned();
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(agent_out, "agent_out") }?;
        let st = &host.state;
        let a = st.agent(agent)?;
        let v = st.wait("terminal login", timeout_ms, st.op_terminal_auth(a, method))?;
        let id = v
            .get("agent")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| {
                Failure::new(
                    crate::status::acph_status::ACPH_STATUS_INTERNAL,
                    "the relaunched agent has no id",
                )
            })?;
        out.write(id);
        Ok(())
    })
}

/// `logout` (needs `agentCapabilities.auth.logout`; else `ACPH_STATUS_UNSUPPORTED` and nothing
/// is sent). `result`: `{}`.
///
/// # Safety
/// `host` is NULL or a live host; `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_logout(
    host: *mut acph_host,
    agent: u64,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(call_out, "call_out") }?;
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, async move {
            a.logout().await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// Blocking `acph_agent_logout`.
///
/// # Safety
/// As `acph_agent_logout`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_logout_wait(
    host: *mut acph_host,
    agent: u64,
    timeout_ms: u32,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        let a = host.state.agent(agent)?;
        host.state
            .wait("acph_agent_logout_wait", timeout_ms, a.logout())
    })
}

/// An extension request to the agent: `method` starts with `_` (`_vendor/thing`; anything else
/// is `ACPH_STATUS_INVALID_ARGUMENT`), `params_json` is its params (any JSON; NULL: `{}`).
/// `result`: the agent's result, verbatim.
///
/// # Safety
/// `host` is NULL or a live host; `method` points to `method_len` readable bytes; `params_json`
/// is NULL or points to `params_len` readable bytes; `call_out` and `error_out` are NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_ext_request(
    host: *mut acph_host,
    agent: u64,
    method: *const c_char,
    method_len: usize,
    params_json: *const c_char,
    params_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let method = unsafe { ptr::str_in(method, method_len, "method") }?.to_owned();
        // SAFETY: the caller's contract.
        let params = unsafe { ext_params(params_json, params_len) }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(call_out, "call_out") }?;
        let a = host.state.agent(agent)?;
        out.write(
            host.state
                .start_call(agent, async move { a.ext_request(&method, &params).await })?,
        );
        Ok(())
    })
}

/// Blocking `acph_agent_ext_request`: `*json_out` (owned, `acph_string_free`) is the result.
///
/// # Safety
/// As `acph_agent_ext_request`; `json_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_ext_request_wait(
    host: *mut acph_host,
    agent: u64,
    method: *const c_char,
    method_len: usize,
    params_json: *const c_char,
    params_len: usize,
    timeout_ms: u32,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let method = unsafe { ptr::str_in(method, method_len, "method") }?;
        // SAFETY: the caller's contract.
        let params = unsafe { ext_params(params_json, params_len) }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(json_out, "json_out") }?;
        let a = host.state.agent(agent)?;
        let v = host.state.wait(
            "acph_agent_ext_request_wait",
            timeout_ms,
            a.ext_request(method, &params),
        )?;
        out.write(ptr::string_into_raw(v.to_string().as_bytes()));
        Ok(())
    })
}

/// The params of an extension request: any JSON (NULL: `{}`).
///
/// # Safety
/// `json` is NULL or points to `len` readable bytes.
unsafe fn ext_params(json: *const c_char, len: usize) -> Result<serde_json::Value, Failure> {
    // SAFETY: the caller's contract.
    match unsafe { ptr::opt_str_in(json, len, "params_json") }? {
        None => Ok(serde_json::json!({})),
        Some(text) => serde_json::from_str(text).map_err(|e| {
            Failure::new(
                crate::status::acph_status::ACPH_STATUS_INVALID_JSON,
                format!("params_json: not valid JSON: {e}"),
            )
        }),
    }
}

/// Blocking `acph_agent_authenticate`.
///
/// # Safety
/// As `acph_agent_authenticate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_authenticate_wait(
    host: *mut acph_host,
    agent: u64,
    method_id: *const c_char,
    method_len: usize,
    timeout_ms: u32,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let method = unsafe { ptr::str_in(method_id, method_len, "method_id") }?;
        let a = host.state.agent(agent)?;
        host.state.wait(
            "acph_agent_authenticate_wait",
            timeout_ms,
            a.authenticate(method),
        )
    })
}

/// The common part of new/load/resume.
#[allow(clippy::too_many_arguments)]
///
/// # Safety
/// The pointer arguments as in `acph_agent_load_session`.
unsafe fn open_session(
    host: *mut acph_host,
    agent: u64,
    session_id: Option<(*const c_char, usize)>,
    options_json: *const c_char,
    options_len: usize,
    with_id: fn(String) -> OpenHow,
    wait: Option<(u32, *mut u64)>,
    call_out: *mut u64,
) -> Result<(), Failure> {
    // SAFETY: the caller's contract.
    let host = unsafe { ptr::host(host) }?;
    let how = match session_id {
        None => OpenHow::New,
        Some((p, len)) => {
            // SAFETY: the caller's contract.
            let id = unsafe { ptr::str_in(p, len, "session_id") }?.to_owned();
            with_id(id)
        }
    };
    // SAFETY: the caller's contract.
    let options = unsafe { ptr::str_in(options_json, options_len, "options_json") }?;
    let options = config::session_options(options)?;
    let st = &host.state;
    match wait {
        Some((timeout_ms, session_out)) => {
            // SAFETY: the caller's contract.
            let out = unsafe { ptr::out(session_out, "session_out") }?;
            let a = st.agent(agent)?;
            let v = st.wait(
                "opening a session",
                timeout_ms,
                st.op_open_session(a, how, options),
            )?;
            out.write(session_handle(&v)?);
        }
        None => {
            // SAFETY: the caller's contract.
            let out = unsafe { ptr::out(call_out, "call_out") }?;
            let a = st.agent(agent)?;
            out.write(st.start_call(agent, st.op_open_session(a, how, options))?);
        }
    }
    Ok(())
}

/// `session/new`. `options_json`: `{"cwd": "/absolute/dir", "additionalDirectories": [...],
/// "mcpServers": [...]}` (`cwd` required; docs/OPTIONS.md, "Session options": a bad document is
/// `ACPH_STATUS_INVALID_CONFIG` with the core's `data.path`, e.g. `additionalDirectories[1]`).
/// `result`: `{"session": handle, "sessionId": "..."}`, after the `session_opened` event (which carries the same handle in `acph_event.session`).
/// Session handles stay valid until the agent is released or the host freed.
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
        // SAFETY: forwarded caller contract.
        unsafe {
            open_session(
                host,
                agent,
                None,
                options_json,
                options_len,
                OpenHow::Resume,
                None,
                call_out,
            )
        }
    })
}

/// Blocking `acph_agent_new_session`: `*session_out` is the session handle.
///
/// # Safety
/// As `acph_agent_new_session`; `session_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_new_session_wait(
    host: *mut acph_host,
    agent: u64,
    options_json: *const c_char,
    options_len: usize,
    timeout_ms: u32,
    session_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: forwarded caller contract.
        unsafe {
            open_session(
                host,
                agent,
                None,
                options_json,
                options_len,
                OpenHow::Resume,
                Some((timeout_ms, session_out)),
                std::ptr::null_mut(),
            )
        }
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
        // SAFETY: forwarded caller contract.
        unsafe {
            open_session(
                host,
                agent,
                Some((session_id, session_id_len)),
                options_json,
                options_len,
                OpenHow::Load,
                None,
                call_out,
            )
        }
    })
}

/// Blocking `acph_agent_load_session`.
///
/// # Safety
/// As `acph_agent_load_session`; `session_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_load_session_wait(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    timeout_ms: u32,
    session_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: forwarded caller contract.
        unsafe {
            open_session(
                host,
                agent,
                Some((session_id, session_id_len)),
                options_json,
                options_len,
                OpenHow::Load,
                Some((timeout_ms, session_out)),
                std::ptr::null_mut(),
            )
        }
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
        // SAFETY: forwarded caller contract.
        unsafe {
            open_session(
                host,
                agent,
                Some((session_id, session_id_len)),
                options_json,
                options_len,
                OpenHow::Resume,
                None,
                call_out,
            )
        }
    })
}

/// Blocking `acph_agent_resume_session`.
///
/// # Safety
/// As `acph_agent_load_session_wait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_resume_session_wait(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    timeout_ms: u32,
    session_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: forwarded caller contract.
        unsafe {
            open_session(
                host,
                agent,
                Some((session_id, session_id_len)),
                options_json,
                options_len,
                OpenHow::Resume,
                Some((timeout_ms, session_out)),
                std::ptr::null_mut(),
            )
        }
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
        // SAFETY: forwarded caller contract.
        unsafe {
            open_session(
                host,
                agent,
                Some((session_id, session_id_len)),
                options_json,
                options_len,
                OpenHow::Fork,
                None,
                call_out,
            )
        }
    })
}

/// Blocking `acph_agent_fork_session`.
///
/// # Safety
/// As `acph_agent_load_session_wait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_fork_session_wait(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    options_json: *const c_char,
    options_len: usize,
    timeout_ms: u32,
    session_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: forwarded caller contract.
        unsafe {
            open_session(
                host,
                agent,
                Some((session_id, session_id_len)),
                options_json,
                options_len,
                OpenHow::Fork,
                Some((timeout_ms, session_out)),
                std::ptr::null_mut(),
            )
        }
    })
}

/// Parse the optional list parameters.
///
/// # Safety
/// `params_json` is NULL or points to `params_len` readable bytes.
unsafe fn list_params(
    params_json: *const c_char,
    params_len: usize,
) -> Result<(Option<String>, Option<String>), Failure> {
    // SAFETY: the caller's contract.
    match unsafe { ptr::opt_str_in(params_json, params_len, "params_json") }? {
        None => Ok((None, None)),
        Some(p) => config::list_params(p),
    }
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
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let (cwd, cursor) = unsafe { list_params(params_json, params_len) }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(call_out, "call_out") }?;
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, async move {
            a.list_sessions(cwd.as_deref(), cursor.as_deref()).await
        })?);
        Ok(())
    })
}

/// Blocking `acph_agent_list_sessions`: `*json_out` (owned, `acph_string_free`) is the result.
///
/// # Safety
/// As `acph_agent_list_sessions`; `json_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_list_sessions_wait(
    host: *mut acph_host,
    agent: u64,
    params_json: *const c_char,
    params_len: usize,
    timeout_ms: u32,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let (cwd, cursor) = unsafe { list_params(params_json, params_len) }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(json_out, "json_out") }?;
        let a = host.state.agent(agent)?;
        let v = host.state.wait(
            "acph_agent_list_sessions_wait",
            timeout_ms,
            a.list_sessions(cwd.as_deref(), cursor.as_deref()),
        )?;
        out.write(ptr::string_into_raw(v.to_string().as_bytes()));
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
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let sid = unsafe { ptr::str_in(session_id, session_id_len, "session_id") }?.to_owned();
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(call_out, "call_out") }?;
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, async move {
            a.delete_session(&sid).await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// Blocking `acph_agent_delete_session`.
///
/// # Safety
/// As `acph_agent_delete_session`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_delete_session_wait(
    host: *mut acph_host,
    agent: u64,
    session_id: *const c_char,
    session_id_len: usize,
    timeout_ms: u32,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let sid = unsafe { ptr::str_in(session_id, session_id_len, "session_id") }?;
        let a = host.state.agent(agent)?;
        host.state.wait(
            "acph_agent_delete_session_wait",
            timeout_ms,
            a.delete_session(sid),
        )
    })
}

/// Shut the agent down: stdin EOF, grace, SIGTERM to its process group, grace, SIGKILL. Pending
/// calls of the agent complete with `closed`. `result`: `{"exitCode", "signal", "stderrTail"}`,
/// after the agent's `agent_exited` event. The id stays valid until `acph_agent_release`: calls
/// then fail with `ACPH_STATUS_CLOSED` (`ACPH_STATUS_AGENT_EXITED` for an agent that exited on
/// its own).
///
/// # Safety
/// `host` is NULL or a live host; `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_shutdown(
    host: *mut acph_host,
    agent: u64,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(call_out, "call_out") }?;
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, async move {
            let exit = a.shutdown().await;
            Ok(serde_json::to_value(exit).unwrap_or_default())
        })?);
        Ok(())
    })
}

/// Blocking `acph_agent_shutdown`; `*exit_json_out` (NULL: not wanted) receives the result.
///
/// # Safety
/// As `acph_agent_shutdown`; `exit_json_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_shutdown_wait(
    host: *mut acph_host,
    agent: u64,
    timeout_ms: u32,
    exit_json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::opt_out(exit_json_out) };
        let a = host.state.agent(agent)?;
        let exit = host
            .state
            .wait("acph_agent_shutdown_wait", timeout_ms, async move {
                Ok(a.shutdown().await)
            })?;
        if let Some(out) = out {
            let json = serde_json::to_value(exit).unwrap_or_default().to_string();
            out.write(ptr::string_into_raw(json.as_bytes()));
        }
        Ok(())
    })
}

/// Forget an agent: its id and the handles of its sessions become stale
/// (`ACPH_STATUS_STALE_ID`). A running agent is shut down in the background (its events still
/// arrive). Non-blocking.
///
/// # Safety
/// `host` is NULL or a live host; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_agent_release(
    host: *mut acph_host,
    agent: u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        host.state.release_agent(agent)
    })
}

/// Cancel an asynchronous call: it completes with `cancelled` (its `call_completed` event
/// follows); the work is dropped, which tells the agent (`$/cancel_request`). A prompt call is
/// told `session/cancel` instead (pending permission requests of the session are answered
/// `cancelled` at once) and completes with the agent's answer (normally stop reason `cancelled`)
/// if it comes within `cancelGraceMs`, else with `cancelled`: it always completes, even when the
/// agent ignores the cancel. `ACPH_STATUS_STALE_ID` when the call is unknown or already completed
/// (cancelling a finished call changes nothing).
/// Non-blocking.
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
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        host.state.cancel_call(call)
    })
}

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
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let option = unsafe { ptr::opt_str_in(option_id, option_len, "option_id") }?;
        host.state.respond_permission(request_id, option)
    })
}

/// Answer a pending elicitation request (`acph_event.request` of an `elicitation_requested`
/// event, i.e. its `data.requestId`). `answer_json` is the ACP response shape:
/// `{"action": "accept", "content": {...}}` (form mode; `content` must match the requested
/// schema), `{"action": "accept"}` (URL mode: the user consented to open the URL),
/// `{"action": "decline"}` or `{"action": "cancel"}`. Requires `"elicitation": [modes]` in the
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
        // SAFETY: the caller's contract.
        let host = unsafe { ptr::host(host) }?;
        // SAFETY: the caller's contract.
        let answer = unsafe { ptr::str_in(answer_json, answer_len, "answer_json") }?;
        host.state.respond_elicitation(request_id, answer)
    })
}
