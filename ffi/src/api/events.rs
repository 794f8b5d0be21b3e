//! Pulling events.

use std::time::Duration;

use crate::event::acph_event;
use crate::host::acph_host;
use crate::ptr;
use crate::status::acph_status;

/// Take the next event, waiting up to `timeout_ms` milliseconds (`ACPH_TIMEOUT_INFINITE`: until
/// one arrives; 0: do not wait).
///
/// Returns `ACPH_STATUS_OK` with `*event_out` set to a new event owned by the caller (free it with
/// `acph_event_free`), `ACPH_STATUS_EMPTY` when the timeout elapsed (`*event_out` untouched),
/// `ACPH_STATUS_CLOSED` after `acph_host_shutdown` once every event was taken (or when the config
/// disabled events), `ACPH_STATUS_WRONG_THREAD` when called with a non-zero timeout from a
/// library thread (a callback), or `ACPH_STATUS_NULL_ARGUMENT`.
///
/// Pull continuously: the queue is bounded, and while it is full the host stops reading the
/// agents (backpressure). Any thread; several threads may pull (each event goes to one).
///
/// # Safety
/// `host` is NULL or a live host; `event_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_next_event(
    host: *mut acph_host,
    timeout_ms: u32,
    event_out: *mut *mut acph_event,
) -> acph_status {
    ffi_status!({
        // SAFETY: `host` is NULL or live (this function's contract); NULL is checked.
        let Ok(host) = (unsafe { ptr::host(host) }) else {
            return acph_status::ACPH_STATUS_NULL_ARGUMENT;
        };
        // SAFETY: `event_out` is NULL or writable (this function's contract); NULL is checked.
        let Ok(out) = (unsafe { ptr::out(event_out, "event_out") }) else {
            return acph_status::ACPH_STATUS_NULL_ARGUMENT;
        };
        let timeout = match timeout_ms {
            crate::ACPH_TIMEOUT_INFINITE => None,
            ms => Some(Duration::from_millis(u64::from(ms))),
        };
        if timeout != Some(Duration::ZERO) && tokio::runtime::Handle::try_current().is_ok() {
            return acph_status::ACPH_STATUS_WRONG_THREAD;
        }
        match host.state.queue.pop(timeout) {
            Ok(ev) => {
                out.write(ptr::event_into_raw(host.state.convert(ev)));
                acph_status::ACPH_STATUS_OK
            }
            Err(status) => status,
        }
    })
}

/// Take the next event if one is ready: `acph_host_next_event` with a timeout of 0. Never
/// blocks; may be called from callbacks.
///
/// # Safety
/// As `acph_host_next_event`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_try_next_event(
    host: *mut acph_host,
    event_out: *mut *mut acph_event,
) -> acph_status {
    // SAFETY: forwarded caller contract.
    unsafe { acph_host_next_event(host, 0, event_out) }
}

/// Free an event. NULL is a no-op. May be called after the host was freed.
///
/// # Safety
/// `event` is NULL or an event returned by this library that was not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_event_free(event: *mut acph_event) {
    ffi_value!((), {
        // SAFETY: `event` is NULL or an unfreed event of this library (this function's contract).
        unsafe { ptr::event_free(event) }
    })
}
