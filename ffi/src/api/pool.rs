//! Pools: sessions handed out on pooled agent processes (docs/FFI.md, "Pools").
//!
//! A pool id (`uint64_t`) names a pool of agent processes for one spec. Its sessions are ordinary
//! session handles (prompt, cancel, modes, state, events), except that a second prompt while a
//! turn runs waits its turn instead of failing `busy`, and that the pool owns their lifecycle:
//! give one back with `acph_pool_release_session` (not `acph_session_close`). The asynchronous
//! calls are waited for, released and cancelled as every call (`acph_call_wait`, src/api/call.rs).

use std::ffi::c_char;

use crate::calls::Primary;
use crate::config;
use crate::host::acph_host;
use crate::ptr;
use crate::status::{acph_error, acph_status};

/// Create a pool of agents for one spec. `spec_json` is an agent spec as for `acph_host_spawn`
/// (`restart` included: a supervised pooled process is restarted in place). `pool_json` (NULL:
/// every default) is `{"mode": "process-per-session" | "shared", "maxSessionsPerAgent": 8,
/// "warmSpares": 1, "maxAgents": 8, "idleTimeoutMs": 300000}` (every field optional, these
/// defaults; `maxSessionsPerAgent` only with `"shared"`; `idleTimeoutMs` null: never):
/// process-per-session gives every session its own process, shut down when the session is
/// released; shared packs up to `maxSessionsPerAgent` sessions onto each process, least-loaded
/// first. `warmSpares` processes are kept started and initialized (a session on one costs one
/// `session/new`), refilled in the background; at most `maxAgents` processes live (spares
/// included); a shared process without sessions for `idleTimeoutMs` is shut down. A bad
/// document (an unknown field, a wrong type, `maxAgents` 0, more spares than agents, text that is
/// not JSON), or a bad spec, is `ACPH_STATUS_INVALID_CONFIG` with the core's message and
/// `data.path` (`pool.maxAgents`, `restart.backoffMs`, `cwd`; docs/OPTIONS.md); nothing is
/// started then. Non-blocking: `*pool_out` is the new pool's id; its spares start in the
/// background (`acph_pool_ready` waits for them). `acph_host_shutdown` and `acph_host_free` end
/// every pool of the host.
///
/// # Safety
/// `host` is NULL or a live host; `spec_json` points to `spec_len` readable bytes; `pool_json` is
/// NULL or points to `pool_len` readable bytes; `pool_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_pool_new(
    host: *mut acph_host,
    spec_json: *const c_char,
    spec_len: usize,
    pool_json: *const c_char,
    pool_len: usize,
    pool_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let spec = try_str!(spec_json, spec_len);
        let pool = try_opt_str!(pool_json, pool_len);
        let out = try_out!(pool_out);
        let spec = config::agent_spec(spec)?;
        let cfg = config::pool_config(spec, pool)?;
        out.write(host.state.new_pool(cfg)?);
        Ok(())
    })
}

/// Wait until the pool's warm spares are started (or it is at its cap). Fails with the error of a
/// spare that could not be started (`ACPH_STATUS_SPAWN_FAILED`, …; a failing spec is retried with
/// a backoff up to 30 s), or `ACPH_STATUS_CLOSED` after `acph_pool_shutdown`. `result`: `{}`.
///
/// # Safety
/// `host` is NULL or a live host; `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_pool_ready(
    host: *mut acph_host,
    pool: u64,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(call_out);
        let p = host.state.pool(pool)?;
        out.write(host.state.start_call(0, Primary::Nothing, async move {
            p.ready().await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// Open a session on a pooled process: a shared process with room, else a warm spare, else a new
/// process while under `maxAgents`, else `ACPH_STATUS_BUSY` at once. `options_json` as for
/// `acph_agent_new_session`. `result`: `{"session": handle, "sessionId": "...", "agent": id}`
/// (`acph_call_wait`'s `*id_out`: the handle; after the `session_opened` event; the call's `call_completed` carries the pooled agent's
/// id). The handle works with the session calls (prompt, cancel, modes, models, config options,
/// state); prompts on it queue (docs/FFI.md, "Pools"). The agent id works with `acph_agent_info`
/// while this host holds a session on it; the pool starts and ends the process.
///
/// # Safety
/// `host` is NULL or a live host; `options_json` points to `options_len` readable bytes;
/// `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_pool_open_session(
    host: *mut acph_host,
    pool: u64,
    options_json: *const c_char,
    options_len: usize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let options = try_str!(options_json, options_len);
        let out = try_out!(call_out);
        let options = config::session_options(options)?;
        let st = &host.state;
        let p = st.pool(pool)?;
        out.write(st.start_call(0, Primary::Session, st.op_pool_open(pool, p, options))?);
        Ok(())
    })
}

/// Give a pooled session back: its handle is stale from this call on (`ACPH_STATUS_STALE_ID`;
/// later events of the session carry `session` 0), prompts still queued on it fail with
/// `ACPH_STATUS_CLOSED`, the session is closed on the agent (when it supports `session/close`),
/// and in process-per-session mode its process is shut down (its `agent_exited` follows).
/// `ACPH_STATUS_INVALID_ARGUMENT` for a handle a pool did not open. `result`: `{}`.
///
/// # Safety
/// `host` is NULL or a live host; `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_pool_release_session(
    host: *mut acph_host,
    session: u64,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(call_out);
        let p = host.state.take_pooled(session)?;
        let agent = p.agent().id();
        // Marked released by this call (queued prompts fail `closed` before it returns).
        let release = p.release();
        out.write(host.state.start_call(agent, Primary::Nothing, async move {
            release.await.map(|()| serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// What the pool holds now, as JSON owned by the caller (`acph_string_free`): `{"agents": n
/// (processes serving sessions, or idle shared ones), "spares": n, "starting": n, "sessions": n
/// (handed out and not released)}`. Non-blocking.
///
/// # Safety
/// `host` is NULL or a live host; `json_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_pool_stats(
    host: *mut acph_host,
    pool: u64,
    json_out: *mut *mut c_char,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(json_out);
        let s = host.state.pool(pool)?.stats();
        let json = serde_json::json!({
            "agents": s.agents,
            "spares": s.spares,
            "starting": s.starting,
            "sessions": s.sessions,
        });
        out.write(ptr::string_into_raw(json.to_string().as_bytes()));
        Ok(())
    })
}

/// Shut every process of the pool down (spares, idle and busy ones: their sessions end, their
/// prompts fail) and stop refilling. The pool id stays valid (stats, release) until
/// `acph_pool_release`; opening a session on it fails with `ACPH_STATUS_CLOSED`. `result`: `{}`,
/// once every process has exited.
///
/// # Safety
/// `host` is NULL or a live host; `call_out` and `error_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_pool_shutdown(
    host: *mut acph_host,
    pool: u64,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(call_out);
        let p = host.state.pool(pool)?;
        out.write(host.state.start_call(0, Primary::Nothing, async move {
            p.shutdown().await;
            Ok(serde_json::json!({}))
        })?);
        Ok(())
    })
}

/// Forget a pool: its id and the handles of its sessions become stale (`ACPH_STATUS_STALE_ID`);
/// its processes are shut down in the background (their `agent_exited` events still arrive).
/// Non-blocking.
///
/// # Safety
/// `host` is NULL or a live host; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_pool_release(
    host: *mut acph_host,
    pool: u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        host.state.release_pool(pool)
    })
}
