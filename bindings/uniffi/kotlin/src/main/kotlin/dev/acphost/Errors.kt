// What every AcpException carries: its stable code, message and data (the same codes as every other face, docs/ERRORS.md).
package dev.acphost

/** The stable error code (`timeout`, `agent_exited`, `cancelled`, …; docs/ERRORS.md). */
val AcpException.code: String
    get() = when (this) {
        is AcpException.InvalidArgument -> "invalid_argument"
        is AcpException.InvalidConfig -> "invalid_config"
        is AcpException.AlreadyResolved -> "already_resolved"
        is AcpException.AgentExited -> "agent_exited"
        is AcpException.Timeout -> "timeout"
        is AcpException.Unsupported -> "unsupported"
        is AcpException.Protocol -> "protocol"
        is AcpException.AgentException -> "agent_error"
        is AcpException.AuthRequired -> "auth_required"
        is AcpException.VersionUnsupported -> "version_unsupported"
        is AcpException.SpawnFailed -> "spawn_failed"
        is AcpException.Io -> "io"
        is AcpException.Closed -> "closed"
        is AcpException.Cancelled -> "cancelled"
        is AcpException.Busy -> "busy"
        is AcpException.NotFound -> "not_found"
        is AcpException.EventsStalled -> "events_stalled"
    }

/** The message of any [AcpException] (each subclass carries it as `detail`). */
val AcpException.detail: String
    get() = when (this) {
        is AcpException.InvalidArgument -> detail
        is AcpException.InvalidConfig -> detail
        is AcpException.AlreadyResolved -> detail
        is AcpException.AgentExited -> detail
        is AcpException.Timeout -> detail
        is AcpException.Unsupported -> detail
        is AcpException.Protocol -> detail
        is AcpException.AgentException -> detail
        is AcpException.AuthRequired -> detail
        is AcpException.VersionUnsupported -> detail
        is AcpException.SpawnFailed -> detail
        is AcpException.Io -> detail
        is AcpException.Closed -> detail
        is AcpException.Cancelled -> detail
        is AcpException.Busy -> detail
        is AcpException.NotFound -> detail
        is AcpException.EventsStalled -> detail
    }

/**
 * The kind's documented data of any [AcpException] as JSON text, or null (docs/ERRORS.md;
 * `invalid_config`: `{"path": "pool.maxAgents"}`, the core's full field path).
 */
val AcpException.data: String?
    get() = when (this) {
        is AcpException.InvalidArgument -> data
        is AcpException.InvalidConfig -> data
        is AcpException.AlreadyResolved -> data
        is AcpException.AgentExited -> data
        is AcpException.Timeout -> data
        is AcpException.Unsupported -> data
        is AcpException.Protocol -> data
        is AcpException.AgentException -> data
        is AcpException.AuthRequired -> data
        is AcpException.VersionUnsupported -> data
        is AcpException.SpawnFailed -> data
        is AcpException.Io -> data
        is AcpException.Closed -> data
        is AcpException.Cancelled -> data
        is AcpException.Busy -> data
        is AcpException.NotFound -> data
        is AcpException.EventsStalled -> data
    }
