//! Agents the embedder reaches itself: ACP over a stream it opened (a socket, a container's
//! stdio, an SSH channel) instead of a process the host spawns.

use crate::calls::Primary;
use crate::host::acph_host;
use crate::status::{acph_error, acph_status};

/// Speak ACP over a byte stream the embedder opened, and perform the handshake (`initialize`,
/// protocol version check) as `acph_host_spawn` does: an agent in a container, behind an SSH
/// channel, or listening on a socket. `read_fd` is what the agent writes to us, `write_fd` what
/// we write to it; pass the same value twice for a duplex socket.
///
/// Unix: file descriptors (a socket, pipes, a pty; anything `poll` works on, not a regular
/// file); they are made non-blocking. Windows: a `SOCKET`, or a `HANDLE` (a pipe, a console)
/// cast to `intptr_t`; each direction is read/written by a library thread.
///
/// Ownership: when the call returns `ACPH_STATUS_NULL_ARGUMENT` or
/// `ACPH_STATUS_INVALID_ARGUMENT` (a negative, closed or unusable descriptor) nothing was taken:
/// both are left as they were, still the caller's to close. On every other outcome (success,
/// `closed`, a failed handshake, a timeout) the library owns both from this call on and closes
/// them when the connection ends (`acph_agent_shutdown`, `acph_agent_release`, the peer closing
/// its end, `acph_host_free`), or at once when nothing started.
/// Never read, write or close them afterwards. Closing our writing end is all the agent gets at
/// shutdown (on a socket: `shutdown(SHUT_WR)`, so it sees EOF).
///
/// Every guarantee of a spawned agent holds (ordered events, backpressure, timeouts, typed
/// errors), except process containment: there is no process to signal, `restart` does not
/// exist, and the agent's exit status is unknown. When the peer goes away (EOF or an error on
/// the stream) pending calls complete at once with `ACPH_STATUS_AGENT_EXITED` and `agent_exited`
/// follows (`exitCode` and `signal` null). `result` and events as for `acph_host_spawn`:
/// `{"agent": id, "protocolVersion", ...}` after `agent_ready` (`acph_call_wait`'s `*id_out`:
/// the agent id).
///
/// # Safety
/// `host` is NULL or a live host; `call_out` and `error_out` are NULL or writable; `read_fd` and
/// `write_fd` are descriptors (handles) this process owns and hands over (see Ownership).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn acph_host_connect(
    host: *mut acph_host,
    read_fd: isize,
    write_fd: isize,
    call_out: *mut u64,
    error_out: *mut *mut acph_error,
) -> acph_status {
    ffi_fn!(error_out, {
        let host = try_host!(host);
        let out = try_out!(call_out);
        let st = &host.state;
        let halves = crate::stream::adopt(&st.rt, read_fd, write_fd)?;
        // From here the descriptors are ours: a host shutting down drops (closes) them.
        out.write(st.start_call(0, Primary::Agent, st.op_connect(halves))?);
        Ok(())
    })
}
