// The stable error code of every AcpException (the same codes as every other face, docs/ERRORS.md).
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
