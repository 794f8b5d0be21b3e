//! Agents: spawn (+ handshake), inspect, authenticate (also the terminal login), log out,
//! extension requests, shut down, release. The asynchronous ones write a call id to `*call_out`
//! and return at once; `acph_call_wait` or the `call_completed` event gives their `result`
//! (src/api/call.rs).

use std::ffi::c_char;

use crate::calls::Primary;
use crate::config;
use crate::host::{acph_host, agent_json};
use crate::ptr;
use crate::status::{Failure, acph_error, acph_status};

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
/// `restart.backoffMs`, ...) and nothing is started. `result`: `{"agent": id, "protocolVersion",
/// "agentInfo", "agentCapabilities", "authMethods", "exited": null, "restartsExhausted": false}`
/// (`acph_call_wait`'s `*id_out`: the agent id); the `agent_ready` event precedes it. A failed
/// handshake still reports the agent it started, as an `agent_exited` event under an agent id the
/// caller never receives.
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
        let host = try_host!(host);
        let spec = try_str!(spec_json, spec_len);
        let out = try_out!(call_out);
        let spec = config::agent_spec(spec)?;
        let st = &host.state;
        out.write(st.start_call(0, Primary::Agent, st.op_spawn(spec))?);
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
        let host = try_host!(host);
        let out = try_out!(json_out);
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
        let host = try_host!(host);
        let method = try_str!(method_id, method_len).to_owned();
        let out = try_out!(call_out);
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
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
/// `acph_host_spawn`'s (`{"agent": id, ...}`; `acph_call_wait`'s `*id_out`: the new agent id);
/// retry the call that failed with `auth_required` on it. A login that exits non-zero is
/// `ACPH_STATUS_AUTH_REQUIRED` (the agent keeps running); without `terminalAuth` it is
/// `ACPH_STATUS_UNSUPPORTED`. `authenticate` is never sent. The service handler must answer
/// from another thread than one blocked in `acph_call_wait` on this call.
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
        let host = try_host!(host);
        let method = try_str!(method_id, method_len).to_owned();
        let out = try_out!(call_out);
        let st = &host.state;
        let a = st.agent(agent)?;
        out.write(st.start_call(agent, Primary::Agent, st.op_terminal_auth(a, method))?);
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
        let host = try_host!(host);
        let out = try_out!(call_out);
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            a.logout().await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
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
        let host = try_host!(host);
        let method = try_str!(method, method_len).to_owned();
        let params = match try_opt_str!(params_json, params_len) {
            None => serde_json::json!({}),
            Some(text) => serde_json::from_str(text).map_err(|e| {
                Failure::new(
                    acph_status::ACPH_STATUS_INVALID_JSON,
                    format!("params_json: not valid JSON: {e}"),
                )
            })?,
        };
        let out = try_out!(call_out);
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            a.ext_request(&method, &params).await
        })?);
        Ok(())
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
        let host = try_host!(host);
        let out = try_out!(call_out);
        let a = host.state.agent(agent)?;
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            let exit = a.shutdown().await;
            Ok(serde_json::to_value(exit).unwrap_or_default())
        })?);
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
        let host = try_host!(host);
        host.state.release_agent(agent)
    })
}
