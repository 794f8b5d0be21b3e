//! The one table of error kinds: every face reports failures with these `kind` strings (C with
//! the status number beside it). docs/ERRORS.md is generated from it, and tests check the C
//! statuses, Node's `AcpErrorCode` and Python's exception classes against it.

use serde::Serialize;

/// Which faces can report a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// Rust, C, Node, Python, Kotlin and Swift.
    Every,
    /// Only the C ABI (pointers, UTF-8, handles and threads only exist there).
    COnly,
}

/// One error kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ErrorKindInfo {
    /// The stable snake_case kind (`AcpError.code` in Node, `AcpError.code` in Python,
    /// `acph_status_str` in C).
    pub kind: &'static str,
    /// The `acph_status` number.
    pub status: u32,
    pub reach: Reach,
    /// When it is reported.
    pub meaning: &'static str,
    /// What `data` holds (`null` when nothing).
    pub data: &'static str,
}

use Reach::{COnly, Every};

/// Every error kind, in `acph_status` order.
pub const ERROR_KINDS: &[ErrorKindInfo] = &[
    ErrorKindInfo {
        kind: "null_argument",
        status: 100,
        reach: COnly,
        meaning: "a required pointer argument was NULL",
        data: "null",
    },
    ErrorKindInfo {
        kind: "invalid_utf8",
        status: 101,
        reach: COnly,
        meaning: "a string argument was not valid UTF-8",
        data: "null",
    },
    ErrorKindInfo {
        kind: "invalid_json",
        status: 102,
        reach: COnly,
        meaning: "a JSON argument did not parse",
        data: "null",
    },
    ErrorKindInfo {
        kind: "invalid_argument",
        status: 103,
        reach: Every,
        meaning: "an argument was well-formed but not acceptable (a relative path, a session `cwd` that is not an existing directory, an option id that was not offered, content that does not match a schema, a registry archive URL naming something that is not a regular file, JSON nested deeper than the message depth limit, a request too large to ever send to the agent, …)",
        data: "null, or `{path}` naming the field",
    },
    ErrorKindInfo {
        kind: "invalid_config",
        status: 104,
        reach: Every,
        meaning: "the host's configuration was rejected: an unknown field, a wrong type, a policy that cannot be used, an unknown `unstable` method, an agent spec's `restart` policy or a pool's settings that cannot be used, an agent spec's `cwd` that is not an existing directory (checked before anything is started); or a registry document or entry that cannot be used (a missing field, a binary without `sha256`, a digest mismatch, a refused archive)",
        data: "`{path}`: where (`policy.rules[0].action`, `unstable`, `restart`, `cwd`, `pool`, `agents[3].distribution.npx.package`, …)",
    },
    ErrorKindInfo {
        kind: "stale_id",
        status: 105,
        reach: COnly,
        meaning: "an agent, session or call handle that this host never issued, issued by another host, or released",
        data: "null",
    },
    ErrorKindInfo {
        kind: "already_resolved",
        status: 106,
        reach: Every,
        meaning: "a permission, elicitation or service request that was already answered or settled (timeout, cancel, agent exit)",
        data: "null",
    },
    ErrorKindInfo {
        kind: "wrong_thread",
        status: 107,
        reach: COnly,
        meaning: "a blocking function was called from a library thread (inside a callback)",
        data: "null",
    },
    ErrorKindInfo {
        kind: "agent_exited",
        status: 200,
        reach: Every,
        meaning: "the agent exited while the operation was pending, or before it started",
        data: "`{exitCode, signal, stderrTail}`",
    },
    ErrorKindInfo {
        kind: "timeout",
        status: 201,
        reach: Every,
        meaning: "the operation did not complete in time (a per-call timeout, the host's request timeout, or a registry install's read of a local archive: `FileFetcher`'s stall and total bounds)",
        data: "`{what, afterMs}`",
    },
    ErrorKindInfo {
        kind: "unsupported",
        status: 202,
        reach: Every,
        meaning: "the agent does not advertise what the call needs, or an unstable method was not opted into; nothing was sent. Also: an archive format or URL scheme a registry install cannot handle",
        data: "null",
    },
    ErrorKindInfo {
        kind: "protocol",
        status: 203,
        reach: Every,
        meaning: "the agent broke the protocol in a way that prevents the operation",
        data: "null",
    },
    ErrorKindInfo {
        kind: "agent_error",
        status: 204,
        reach: Every,
        meaning: "the agent answered with a JSON-RPC error",
        data: "`{code, data}` of the JSON-RPC error",
    },
    ErrorKindInfo {
        kind: "auth_required",
        status: 205,
        reach: Every,
        meaning: "the agent requires `authenticate` first (JSON-RPC -32000)",
        data: "`{code: -32000, data}`",
    },
    ErrorKindInfo {
        kind: "version_unsupported",
        status: 206,
        reach: Every,
        meaning: "the agent speaks a protocol version this host does not",
        data: "`{agentVersion, hostVersion}`",
    },
    ErrorKindInfo {
        kind: "spawn_failed",
        status: 207,
        reach: Every,
        meaning: "the agent command could not be started",
        data: "null",
    },
    ErrorKindInfo {
        kind: "io",
        status: 208,
        reach: Every,
        meaning: "an I/O error: the agent's pipes, or a registry install (the cache directory, the archive, the embedder's fetch hook failing)",
        data: "null",
    },
    ErrorKindInfo {
        kind: "closed",
        status: 209,
        reach: Every,
        meaning: "the host or the agent connection is shut down or shutting down",
        data: "null",
    },
    ErrorKindInfo {
        kind: "cancelled",
        status: 210,
        reach: Every,
        meaning: "the operation was cancelled (an abort signal, a cancelled call, or the agent answered -32800)",
        data: "null",
    },
    ErrorKindInfo {
        kind: "busy",
        status: 211,
        reach: Every,
        meaning: "the session is busy (a turn in flight, still opening)",
        data: "null",
    },
    ErrorKindInfo {
        kind: "not_found",
        status: 212,
        reach: Every,
        meaning: "the thing named is not known: a session that is not open, a permission or elicitation request id that was never issued, an agent id the registry does not list or a distribution it lacks for this platform",
        data: "null",
    },
    ErrorKindInfo {
        kind: "events_stalled",
        status: 213,
        reach: Every,
        meaning: "the event queue is full and nobody pulled an event for the stall timeout; the call was abandoned",
        data: "`{waitedMs}`",
    },
    ErrorKindInfo {
        kind: "panic",
        status: 900,
        reach: COnly,
        meaning: "a bug: a panic was caught at the boundary (other faces raise their own internal error)",
        data: "null",
    },
    ErrorKindInfo {
        kind: "internal",
        status: 901,
        reach: COnly,
        meaning: "a bug: an internal invariant failed",
        data: "null",
    },
];

/// docs/ERRORS.md's table (checked for drift in tests).
pub fn markdown_table() -> String {
    let mut out =
        String::from("| kind | C status | faces | when | `data` |\n|---|---|---|---|---|\n");
    for k in ERROR_KINDS {
        let reach = match k.reach {
            Every => "every face",
            COnly => "C only",
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            k.kind, k.status, reach, k.meaning, k.data
        ));
    }
    out
}
