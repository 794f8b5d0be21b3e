//! Host lifecycle, log callback, wake-up callback, event fd, service handler.

use std::ffi::{c_char, c_int, c_void};

use crate::host::acph_host;
use crate::ptr::{self, acph_free_fn, acph_log_fn, acph_service_fn, acph_wakeup_fn};
use crate::services::Delivery;
use crate::status::{acph_error, acph_status};

/// Create a host from a JSON configuration: the host options of docs/OPTIONS.md, the same in
/// every face (`{"permission": "deny"|"manual", "policy": "<preset>"|"/abs/policy.json"|{...},
/// "elicitation": "none"|"manual", "elicitationModes": ["form", "url"], "requestTimeoutMs",
/// "eventCapacity", "maxLineBytes", "fs"/"terminal": "builtin"|"embedder"|"disabled", ...}`),
/// plus the C face's own `"services": "callback"|"events"`. Every field is optional. A bad
/// document (not JSON, an unknown field, a value out of range) is `ACPH_STATUS_INVALID_CONFIG`
/// with the core's message and `data.path` (`maxLineBytes`, `policy.rules[0].action`, ...).
/// `"embedder"` routes a service to the service callback (or `service_requested` events); the C
/// face has no permission or elicitation callback, so `"handler"` there is
/// `ACPH_STATUS_INVALID_CONFIG` (use `"manual"` and answer the events). `config_json` NULL means
/// the defaults (deny every permission request, built-in fs and terminal services).
///
/// On success `*host_out` receives a new host, owned by the caller: free it with
/// `acph_host_free`. The host starts two library threads (its runtime).
///
/// # Safety
/// `config_json` is NULL or points to `config_len` readable bytes; `host_out` is NULL or
/// writable; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_new(
    config_json: *const c_char,
    config_len: usize,
    host_out: *mut *mut acph_host,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let config = try_opt_str!(config_json, config_len);
        let out = try_out!(host_out);
        let host = acph_host::new(config, None)?;
        out.write(ptr::host_into_raw(host));
        Ok(())
    })
}

/// `acph_host_new` with a log callback: `log(user_data, level, record_json, record_len)` gets
/// the host's log records at the config's `"logLevel"` (`"error"`, `"warn"`, `"info"` (the
/// default), `"debug"`, `"trace"`) and more severe: what the host does and why (spawn,
/// handshake, a slow or silent agent, transport and protocol trouble, a policy or permission
/// failure, an agent's exit). `record_json` is `{"level", "target", "message", "agent",
/// "session", "at"}` (docs/FFI.md, "Logs"; NUL-terminated, `record_len` bytes before the NUL,
/// borrowed for the call only). The library never prints; a host made with `acph_host_new` (or
/// `log` NULL) makes no record at all.
///
/// The callback runs on the host's own `acph-log` thread, one record at a time, in order, with
/// no lock of the library held: it may call any function (blocking ones too; freeing the host
/// there finishes on a thread of its own). The host only queues records for it, so a slow
/// callback never stalls an agent; past 1,024 records waiting, new ones are dropped, and the
/// next record delivered is preceded by a `warn` record (target `"log"`) that counts them. It
/// must not unwind. `finalizer(user_data)` (may be NULL) runs exactly once, when the callback
/// is replaced (`acph_host_set_log_handler`) or the host freed and no invocation is in flight,
/// or before this returns when creation fails. `acph_host_free` delivers the records queued so
/// far, then returns only after the last call of the callback.
///
/// # Safety
/// As `acph_host_new`; `log` and `finalizer` are NULL or functions callable from any thread
/// with `user_data` until the finalizer ran.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_new_with_log(
    config_json: *const c_char,
    config_len: usize,
    log: acph_log_fn,
    user_data: *mut c_void,
    finalizer: acph_free_fn,
    host_out: *mut *mut acph_host,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        // Taken first: every failure below drops it, so its finalizer runs before we return.
        let cb = callback!(log, user_data, finalizer);
        let config = try_opt_str!(config_json, config_len);
        let out = try_out!(host_out);
        let host = acph_host::new(config, log.is_some().then_some(cb))?;
        out.write(ptr::host_into_raw(host));
        Ok(())
    })
}

/// Replace (or, with `log` NULL, remove) the log callback of a host made by
/// `acph_host_new_with_log`; after removal records are still made at `logLevel` but go nowhere
/// (a host that should make none is created without a callback). The old callback's finalizer
/// runs once its invocation in flight (if any) returned; a record already on its way may still
/// reach the old callback until then. A host made without a log callback has no log thread:
/// setting one there is `ACPH_STATUS_INVALID_ARGUMENT` (`finalizer` is not run), removing is a
/// no-op. Non-blocking; may be called from any callback.
///
/// # Safety
/// As `acph_host_set_wakeup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_set_log_handler(
    host: *mut acph_host,
    log: acph_log_fn,
    user_data: *mut c_void,
    finalizer: acph_free_fn,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let Some(bridge) = &host.state.log else {
            if log.is_some() {
                // Refused before taking `user_data`: the caller keeps it.
                return Err(crate::status::Failure::invalid(
                    "this host was created without a log callback (acph_host_new), so it makes no log records: create it with acph_host_new_with_log",
                ));
            }
            return Ok(());
        };
        let cb = callback!(log, user_data, finalizer);
        bridge.set(log.is_some().then_some(cb));
        Ok(())
    })
}

/// Free a host. NULL is a no-op. Shuts every agent down (stdin EOF, SIGTERM, SIGKILL to its
/// process group; bounded by about 2 × `shutdownGraceMs` + 2 s), completes pending calls with
/// `closed` (their events are discarded), stops the library threads, and runs the finalizers of
/// the wake-up and service callbacks. Events, errors and strings the caller still holds stay
/// valid and must still be freed.
///
/// Calls on this host from other threads must have returned before (docs/FFI.md, "Shutdown").
/// Called from inside a callback (a library thread), the teardown finishes on a thread of its
/// own after this returns.
///
/// # Safety
/// `host` is NULL or a live host; it is invalid afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_free(host: *mut acph_host) {
    ffi_value!((), {
        // SAFETY: `host` is NULL or live, and no other call on it runs (this function's contract).
        if let Some(host) = unsafe { ptr::host_from_raw(host) } {
            host.teardown();
        }
    })
}

/// Start shutting the host down and return at once: new calls fail with `ACPH_STATUS_CLOSED`,
/// pending calls complete with `closed`, every agent goes down the shutdown ladder. The events
/// of all this (`turn_ended`, `session_closed`, `agent_exited`, `call_completed`) are delivered as
/// usual; after the last one the pull functions return `ACPH_STATUS_CLOSED`. Calling it again is
/// a no-op. Non-blocking: may be called from a callback.
///
/// # Safety
/// `host` is NULL or a live host; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_shutdown(
    host: *mut acph_host,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        host.state.start_shutdown();
        Ok(())
    })
}

/// Set (or, with `callback` NULL, remove) the wake-up callback: `callback(user_data)` is called
/// on a library thread whenever the event queue goes from empty to non-empty (and when the
/// stream ends), so that an event loop can schedule a pull (e.g. `uv_async_send`,
/// `g_main_context_wakeup`, `QMetaObject::invokeMethod`, `loop.call_soon_threadsafe`). After a
/// wake-up, pull with `acph_host_try_next_event` until it returns `ACPH_STATUS_EMPTY`, otherwise
/// there is no further wake-up. If events are already waiting when it is set, the callback is
/// called soon after, from a library thread (never from this call).
///
/// The callback must return quickly, must not block, and must not unwind (C++ exceptions,
/// longjmp). It may call the non-blocking functions (`acph_host_try_next_event`, the
/// asynchronous calls, `acph_permission_respond`, ...); blocking ones return
/// `ACPH_STATUS_WRONG_THREAD` there. `finalizer(user_data)` (may be NULL) runs exactly once,
/// when the callback is replaced or the host freed and no invocation is in flight, on whichever
/// thread that happens.
///
/// # Safety
/// `host` is NULL or a live host; `callback` and `finalizer` are NULL or functions callable from
/// any thread with `user_data` until the finalizer ran; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_set_wakeup(
    host: *mut acph_host,
    callback: acph_wakeup_fn,
    user_data: *mut c_void,
    finalizer: acph_free_fn,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let cb = match callback {
            Some(_) => Some(callback!(callback, user_data, finalizer)),
            None => {
                // Nothing will be called: the finalizer (if any) runs now.
                drop(callback!(callback, user_data, finalizer));
                None
            }
        };
        host.state.set_wakeup(cb);
        Ok(())
    })
}

/// A file descriptor that is readable while events are waiting (or the stream has ended), for
/// `poll`/`epoll`/`select` and event loops (`uv_poll_t`, `GIOChannel`, `QSocketNotifier`,
/// `loop.add_reader`). Level-triggered: it stays readable until the pull functions have taken
/// the last waiting event. Never read, write or close it; it is owned by the host and valid until
/// `acph_host_free`. Unix only (`ACPH_STATUS_UNSUPPORTED` elsewhere).
///
/// # Safety
/// `host` is NULL or a live host; `fd_out` is NULL or writable; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_event_fd(
    host: *const acph_host,
    fd_out: *mut c_int,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(fd_out);
        #[cfg(unix)]
        {
            out.write(host.state.queue.fd());
            Ok(())
        }
        #[cfg(not(unix))]
        {
            let _ = (host, out);
            Err(crate::status::Failure::new(
                acph_status::ACPH_STATUS_UNSUPPORTED,
                "the event fd exists on Unix only; use the wake-up callback",
            ))
        }
    })
}

/// Set (or, with `callback` NULL, remove) the service callback that serves the agents' `fs/*`
/// and `terminal/*` requests when the config routes them to the embedder (`"fs": "embedder"`,
/// `"terminal": "embedder"`). Set it before spawning agents: a request that arrives without a
/// callback is answered with a JSON-RPC error.
///
/// `callback(user_data, request_id, method, params_json, params_len)` is called on a library
/// thread, after the host confined the path/cwd to the session's roots and applied the policy's
/// hard-deny rules. `method` is `"fs/read_text_file"` (params `{"sessionId", "path", "line",
/// "limit"}`), `"fs/write_text_file"` (`{"sessionId", "path", "content"}`) or a `"terminal/..."`
/// method (the agent's params verbatim). Both strings are borrowed for the call only. Answer each
/// request exactly once, now or later, from any thread, with `acph_service_respond` or
/// `acph_service_fail`; a request never answered stays pending until its agent exits or the host
/// is freed. The callback must not block or unwind; `finalizer` as for `acph_host_set_wakeup`.
///
/// With `"services": "events"` in the config the requests arrive as `service_requested` events
/// instead (answered the same way) and setting a callback is `ACPH_STATUS_INVALID_ARGUMENT`
/// (`finalizer` is not run).
///
/// # Safety
/// As `acph_host_set_wakeup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_set_service_handler(
    host: *mut acph_host,
    callback: acph_service_fn,
    user_data: *mut c_void,
    finalizer: acph_free_fn,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        // Refused before taking `user_data`: the finalizer is not run, the caller keeps it.
        if callback.is_some() && host.state.bridge.delivery() == Delivery::Events {
            return Err(crate::status::Failure::invalid(
                "this host delivers service requests as service_requested events (\"services\": \"events\"): there is no callback to set",
            ));
        }
        let cb = callback!(callback, user_data, finalizer);
        if callback.is_some() {
            host.state.bridge.set_handler(Some(cb));
        } else {
            drop(cb);
            host.state.bridge.set_handler(None);
        }
        Ok(())
    })
}

/// Answer a routed fs/terminal request with its result JSON: `{"content": "..."}` for
/// `fs/read_text_file`; anything (or NULL) for `fs/write_text_file`; the ACP result object for
/// `terminal/*` (e.g. `{"terminalId": "t1"}` for `terminal/create`). A result that does not fit
/// the method, or that nests arrays and objects more than 99 levels deep (the answer would pass
/// the 100-level message limit), is `ACPH_STATUS_INVALID_ARGUMENT` and leaves the request
/// pending. Answering twice
/// is `ACPH_STATUS_ALREADY_RESOLVED`, and so is an answer after the request was abandoned (its
/// agent ended). `request_id` is the callback's `request_id` or a `service_requested` event's
/// `request`. Any thread, including the service callback itself.
///
/// # Safety
/// `host` is NULL or a live host; `result_json` is NULL or points to `result_len` readable
/// bytes; `error_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_service_respond(
    host: *mut acph_host,
    request_id: u64,
    result_json: *const c_char,
    result_len: usize,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let result = try_opt_str!(result_json, result_len);
        let result = result
            .map(|r| crate::config::any_json("result_json", r))
            .transpose()?;
        // The result is level 2 of the answer: one that would nest it too deep is refused here
        // (the request stays pending) rather than answered -32603 by the core.
        if let Some(r) = &result {
            acp_host::wire::depth::check_fits(r, 2, "result_json")
                .map_err(|e| crate::status::Failure::too_deep("result_json", &e))?;
        }
        host.state.bridge.respond(request_id, result)
    })
}

/// Answer a routed fs/terminal request with a JSON-RPC error (`code`, e.g. -32002 "resource not
/// found" for a missing file, and a message). Any thread.
///
/// # Safety
/// `host` is NULL or a live host; `message` points to `message_len` readable bytes; `error_out`
/// is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_service_fail(
    host: *mut acph_host,
    request_id: u64,
    code: i64,
    message: *const c_char,
    message_len: usize,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let message = try_str!(message, message_len);
        host.state.bridge.fail(request_id, code, message, None)
    })
}
