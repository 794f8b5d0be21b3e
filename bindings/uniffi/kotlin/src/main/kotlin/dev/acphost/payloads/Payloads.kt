// GENERATED FILE, do not edit: the typed event payloads (docs/EVENTS.md), generated from
// schema/events.schema.json by bindings/uniffi/scripts/gen_kotlin_types.py. Regenerate with
// `python3 bindings/uniffi/scripts/gen_kotlin_types.py` after the schema changes; scripts/test-kotlin
// checks it is current. Lenient: unknown fields are ignored, unknown kinds, tags and enum
// values and undecodable payloads are `Unknown` variants carrying the raw JSON.
@file:Suppress("ktlint", "unused", "RedundantVisibilityModifier")

package dev.acphost.payloads

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.doubleOrNull
import kotlinx.serialization.json.longOrNull

/**
 * The typed `data` of an event, by its kind (docs/EVENTS.md). Every payload class of a kind
 * implements it; [decode] never throws: a kind this version does not know, or data that does
 * not decode as its kind's, is [Unknown] with the raw JSON.
 */
sealed interface EventPayload {
    /** An unknown kind, or data that did not decode ([reason] says why); [raw] as sent (null: not JSON). */
    data class Unknown(val kind: String, val raw: JsonElement?, val reason: String) : EventPayload

    companion object {
        /** The event kinds this version has a payload type for. */
        val KINDS: Set<String> = setOf(
            "agent_ready",
            "agent_exited",
            "session_opened",
            "session_closed",
            "session_update",
            "turn_started",
            "turn_ended",
            "permission_requested",
            "permission_resolved",
            "elicitation_requested",
            "elicitation_resolved",
            "elicitation_completed",
            "fs_read",
            "fs_write",
            "terminal_created",
            "terminal_exited",
            "agent_stderr",
            "protocol_noise",
            "protocol_error",
            "ext_notification",
            "ext_request",
            "wire",
            "call_completed",
            "service_requested",
            "agent_restarting",
            "agent_restarted",
            "agent_failed",
            "session_lost",
            "progress",
            "steer",
        )

        /** [data] (JSON text) decoded as the payload of [kind]. Never throws. */
        fun decode(kind: String, data: String): EventPayload {
            val raw = try {
                D.json.parseToJsonElement(data)
            } catch (e: Exception) {
                return Unknown(kind, null, "not JSON: ${e.message}")
            }
            return decode(kind, raw)
        }

        /** [raw] decoded as the payload of [kind]. Never throws. */
        fun decode(kind: String, raw: JsonElement): EventPayload = try {
            when (kind) {
                "agent_ready" -> AgentReady.decode(raw)
                "agent_exited" -> AgentExited.decode(raw)
                "session_opened" -> SessionOpened.decode(raw)
                "session_closed" -> SessionClosed.decode(raw)
                "session_update" -> SessionUpdate.decode(raw)
                "turn_started" -> TurnStarted.decode(raw)
                "turn_ended" -> TurnEnded.decode(raw)
                "permission_requested" -> PermissionRequested.decode(raw)
                "permission_resolved" -> PermissionResolved.decode(raw)
                "elicitation_requested" -> ElicitationRequested.decode(raw)
                "elicitation_resolved" -> ElicitationResolved.decode(raw)
                "elicitation_completed" -> ElicitationCompleted.decode(raw)
                "fs_read" -> FsRead.decode(raw)
                "fs_write" -> FsWrite.decode(raw)
                "terminal_created" -> TerminalCreated.decode(raw)
                "terminal_exited" -> TerminalExited.decode(raw)
                "agent_stderr" -> AgentStderr.decode(raw)
                "protocol_noise" -> ProtocolNoise.decode(raw)
                "protocol_error" -> ProtocolError.decode(raw)
                "ext_notification" -> ExtNotification.decode(raw)
                "ext_request" -> ExtRequest.decode(raw)
                "wire" -> Wire.decode(raw)
                "call_completed" -> CallCompleted.decode(raw)
                "service_requested" -> ServiceRequested.decode(raw)
                "agent_restarting" -> AgentRestarting.decode(raw)
                "agent_restarted" -> AgentRestarted.decode(raw)
                "agent_failed" -> AgentFailed.decode(raw)
                "session_lost" -> SessionLost.decode(raw)
                "progress" -> Progress.decode(raw)
                "steer" -> Steer.decode(raw)
                else -> Unknown(kind, raw, "unknown kind")
            }
        } catch (e: Exception) {
            Unknown(kind, raw, e.message ?: e.toString())
        }
    }
}

/**
 * ACP v2 (draft, `unstable: ["protocol/v2"]`): a `session_update` with `sessionUpdate:
 * "state_update"`, the session's foreground state. `idle` ends the turn (docs/EVENTS.md).
 */
data class SessionStateUpdate(
    /** `running`, `idle`, `requires_action`, `unknown`, or a future state. */
    val state: kotlin.String,
    /** Why the work stopped (on `idle`): `end_turn`, `cancelled`, `max_tokens`, `error`, …. */
    val stopReason: kotlin.String? = null,
    /** With `stopReason: "error"`: the failure, as a JSON-RPC error object. */
    val error: JsonElement? = null,
    /** Work running independently of the foreground work, as the agent reports it. */
    val background: List<JsonElement>? = null,
    /** Token usage for the completed work (unstable in ACP, passed through as sent). */
    val usage: JsonElement? = null,
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionStateUpdate {
            val o = D.obj(e)
            return SessionStateUpdate(
                D.req(o, "state", D::str),
                D.opt(o, "stopReason", D::str),
                D.opt(o, "error", { it }),
                D.opt(o, "background", { D.list(it, false, { it }) }),
                D.opt(o, "usage", { it }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** `agent_ready`: the handshake succeeded. */
data class AgentReady(
    val protocolVersion: kotlin.Long,
    val agentInfo: Implementation? = null,
    val agentCapabilities: AgentCapabilities,
    val authMethods: List<AuthMethod>,
    /** The agent's process id; null for non-process transports. */
    val pid: kotlin.Long? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): AgentReady {
            val o = D.obj(e)
            return AgentReady(
                D.req(o, "protocolVersion", D::long),
                D.opt(o, "agentInfo", Implementation::decode),
                D.req(o, "agentCapabilities", AgentCapabilities::decode),
                D.req(o, "authMethods", { D.list(it, false, AuthMethod::decode) }),
                D.opt(o, "pid", D::long),
            )
        }
    }
}

/**
 * Metadata about the implementation of the client or agent. Describes the name and version of an
 * ACP implementation, with an optional title for UI representation.
 */
data class Implementation(
    /**
     * Intended for programmatic or logical use, but can be used as a display name fallback if
     * title isn't present.
     */
    val name: kotlin.String,
    /**
     * Intended for UI and end-user contexts and optimized to be human-readable and easily
     * understood.
     */
    val title: kotlin.String? = null,
    /**
     * Version of the implementation. Can be displayed to the user or used for debugging or metrics
     * purposes. (e.g. "1.0.0").
     */
    val version: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Implementation {
            val o = D.obj(e)
            return Implementation(
                D.req(o, "name", D::str),
                D.opt(o, "title", D::str),
                D.req(o, "version", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capabilities supported by the agent. */
data class AgentCapabilities(
    /** Whether the agent supports `session/load`. */
    val loadSession: kotlin.Boolean? = null,
    /** Prompt capabilities supported by the agent. */
    val promptCapabilities: PromptCapabilities? = null,
    /** MCP capabilities supported by the agent. */
    val mcpCapabilities: McpCapabilities? = null,
    /** Session lifecycle and prompt capabilities advertised by the agent. */
    val sessionCapabilities: SessionCapabilities? = null,
    /** Authentication-related capabilities supported by the agent. */
    val auth: AgentAuthCapabilities? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): AgentCapabilities {
            val o = D.obj(e)
            return AgentCapabilities(
                D.opt(o, "loadSession", D::bool),
                D.opt(o, "promptCapabilities", PromptCapabilities::decode),
                D.opt(o, "mcpCapabilities", McpCapabilities::decode),
                D.opt(o, "sessionCapabilities", SessionCapabilities::decode),
                D.opt(o, "auth", AgentAuthCapabilities::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Prompt capabilities supported by the agent in `session/prompt` requests. */
data class PromptCapabilities(
    /** Agent supports `image` content blocks. */
    val image: kotlin.Boolean? = null,
    /** Agent supports `audio` content blocks. */
    val audio: kotlin.Boolean? = null,
    /** Agent supports embedded context in `session/prompt` requests. */
    val embeddedContext: kotlin.Boolean? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): PromptCapabilities {
            val o = D.obj(e)
            return PromptCapabilities(
                D.opt(o, "image", D::bool),
                D.opt(o, "audio", D::bool),
                D.opt(o, "embeddedContext", D::bool),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** MCP capabilities supported by the agent */
data class McpCapabilities(
    /** Agent supports `http` MCP servers. */
    val http: kotlin.Boolean? = null,
    /** Agent supports `sse` MCP servers. */
    val sse: kotlin.Boolean? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): McpCapabilities {
            val o = D.obj(e)
            return McpCapabilities(
                D.opt(o, "http", D::bool),
                D.opt(o, "sse", D::bool),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Session capabilities supported by the agent. */
data class SessionCapabilities(
    /** Whether the agent supports `session/list`. */
    val list: SessionListCapabilities? = null,
    /** Whether the agent supports `session/delete`. */
    val delete: SessionDeleteCapabilities? = null,
    /** Whether the agent supports `additionalDirectories` on supported session lifecycle requests. */
    val additionalDirectories: SessionAdditionalDirectoriesCapabilities? = null,
    /** Whether the agent supports `systemPrompt` on session lifecycle requests. */
    val systemPrompt: SessionSystemPromptCapabilities? = null,
    /** Whether the agent supports `session/resume`. */
    val resume: SessionResumeCapabilities? = null,
    /** Whether the agent supports `session/close`. */
    val close: SessionCloseCapabilities? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionCapabilities {
            val o = D.obj(e)
            return SessionCapabilities(
                D.opt(o, "list", SessionListCapabilities::decode),
                D.opt(o, "delete", SessionDeleteCapabilities::decode),
                D.opt(o, "additionalDirectories", SessionAdditionalDirectoriesCapabilities::decode),
                D.opt(o, "systemPrompt", SessionSystemPromptCapabilities::decode),
                D.opt(o, "resume", SessionResumeCapabilities::decode),
                D.opt(o, "close", SessionCloseCapabilities::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capabilities for the `session/list` method. */
data class SessionListCapabilities(
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionListCapabilities {
            val o = D.obj(e)
            return SessionListCapabilities(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capabilities for the `session/delete` method. */
data class SessionDeleteCapabilities(
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionDeleteCapabilities {
            val o = D.obj(e)
            return SessionDeleteCapabilities(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capabilities for additional session directories support. */
data class SessionAdditionalDirectoriesCapabilities(
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionAdditionalDirectoriesCapabilities {
            val o = D.obj(e)
            return SessionAdditionalDirectoriesCapabilities(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capabilities for client-provided system prompts. */
data class SessionSystemPromptCapabilities(
    /** Delivery modes the agent supports in addition to `append`. */
    val mode: SessionSystemPromptModeCapabilities? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionSystemPromptCapabilities {
            val o = D.obj(e)
            return SessionSystemPromptCapabilities(
                D.opt(o, "mode", SessionSystemPromptModeCapabilities::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** System prompt delivery modes the agent supports in addition to `append`. */
data class SessionSystemPromptModeCapabilities(
    /** Whether the agent supports `override` mode. */
    val override: SessionSystemPromptOverrideCapabilities? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionSystemPromptModeCapabilities {
            val o = D.obj(e)
            return SessionSystemPromptModeCapabilities(
                D.opt(o, "override", SessionSystemPromptOverrideCapabilities::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capabilities for the `override` system prompt mode. */
data class SessionSystemPromptOverrideCapabilities(
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionSystemPromptOverrideCapabilities {
            val o = D.obj(e)
            return SessionSystemPromptOverrideCapabilities(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capabilities for the `session/resume` method. */
data class SessionResumeCapabilities(
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionResumeCapabilities {
            val o = D.obj(e)
            return SessionResumeCapabilities(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capabilities for the `session/close` method. */
data class SessionCloseCapabilities(
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionCloseCapabilities {
            val o = D.obj(e)
            return SessionCloseCapabilities(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Authentication-related capabilities supported by the agent. */
data class AgentAuthCapabilities(
    /** Whether the agent supports the logout method. */
    val logout: LogoutCapabilities? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): AgentAuthCapabilities {
            val o = D.obj(e)
            return AgentAuthCapabilities(
                D.opt(o, "logout", LogoutCapabilities::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Logout capabilities supported by the agent. */
data class LogoutCapabilities(
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): LogoutCapabilities {
            val o = D.obj(e)
            return LogoutCapabilities(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Describes an available authentication method. */
sealed interface AuthMethod {

    /**
     * Client runs the configured agent program as a separate interactive process, without passing
     * this method to `authenticate`.
     */
    data class Terminal(
        /** Unique identifier for this authentication method. */
        val id: kotlin.String,
        /** Human-readable name of the authentication method. */
        val name: kotlin.String,
        /** Optional human-readable description of this authentication method. */
        val description: kotlin.String? = null,
        /** Additional arguments to append to the configured agent invocation for terminal auth. */
        val args: List<kotlin.String>? = null,
        /**
         * Additional environment variables to set on the configured agent invocation for terminal
         * auth. These values override same-named variables in the base launch configuration.
         */
        val env: JsonObject? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : AuthMethod {
        internal companion object {
            fun decode(e: JsonElement): Terminal {
                val o = D.obj(e)
                return Terminal(
                    D.req(o, "id", D::str),
                    D.req(o, "name", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "args", { D.list(it, false, D::str) }),
                    D.opt(o, "env", D::obj),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Agent handles authentication itself through `authenticate`. */
    data class AuthMethodAgent(
        /** Unique identifier for this authentication method. */
        val id: kotlin.String,
        /** Human-readable name of the authentication method. */
        val name: kotlin.String,
        /** Optional human-readable description of this authentication method. */
        val description: kotlin.String? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : AuthMethod {
        internal companion object {
            fun decode(e: JsonElement): AuthMethodAgent {
                val o = D.obj(e)
                return AuthMethodAgent(
                    D.req(o, "id", D::str),
                    D.req(o, "name", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : AuthMethod

    companion object {
        internal fun decode(e: JsonElement): AuthMethod {
            val tag = D.tag(e, "type")
            val byTag: AuthMethod? = runCatching {
                when (tag) {
                    "terminal" -> Terminal.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("terminal")) return Unknown(e)
            runCatching { AuthMethodAgent.decode(e) }.getOrNull()?.let { return it }
            return Unknown(e)
        }
    }
}

/** Terminal-based authentication method. */
data class AuthMethodTerminal(
    /** Unique identifier for this authentication method. */
    val id: kotlin.String,
    /** Human-readable name of the authentication method. */
    val name: kotlin.String,
    /** Optional human-readable description of this authentication method. */
    val description: kotlin.String? = null,
    /** Additional arguments to append to the configured agent invocation for terminal auth. */
    val args: List<kotlin.String>? = null,
    /**
     * Additional environment variables to set on the configured agent invocation for terminal
     * auth. These values override same-named variables in the base launch configuration.
     */
    val env: JsonObject? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): AuthMethodTerminal {
            val o = D.obj(e)
            return AuthMethodTerminal(
                D.req(o, "id", D::str),
                D.req(o, "name", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "args", { D.list(it, false, D::str) }),
                D.opt(o, "env", D::obj),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Agent handles authentication itself through `authenticate`. */
data class AuthMethodAgent(
    /** Unique identifier for this authentication method. */
    val id: kotlin.String,
    /** Human-readable name of the authentication method. */
    val name: kotlin.String,
    /** Optional human-readable description of this authentication method. */
    val description: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): AuthMethodAgent {
            val o = D.obj(e)
            return AuthMethodAgent(
                D.req(o, "id", D::str),
                D.req(o, "name", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/**
 * `agent_exited`: the agent's process is gone. Its last event, unless the agent is supervised
 * (`agent_restarting` or `agent_failed` follows).
 */
data class AgentExited(
    val reason: ExitReason,
    val exitCode: kotlin.Long? = null,
    /** The signal that ended it, e.g. `SIGKILL`. */
    val signal: kotlin.String? = null,
    val stderrTail: kotlin.String? = null,
    /** Why a handshake failed (`version_unsupported`, …). */
    val error: ErrorInfo? = null,
    /**
     * A supervisor acts on this exit (`agent_restarting` or `agent_failed` follows): not the
     * agent's last event. Absent otherwise.
     */
    val restart: kotlin.Boolean? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): AgentExited {
            val o = D.obj(e)
            return AgentExited(
                D.req(o, "reason", ExitReason::decode),
                D.opt(o, "exitCode", D::long),
                D.opt(o, "signal", D::str),
                D.opt(o, "stderrTail", D::str),
                D.opt(o, "error", ErrorInfo::decode),
                D.opt(o, "restart", D::bool),
            )
        }
    }
}

/** Why an agent ended. */
sealed interface ExitReason {
    /** The value on the wire. */
    val value: kotlin.String
    /** It exited (or closed its stdout) on its own. */
    data object Exited : ExitReason { override val value: kotlin.String get() = "exited" }
    /** The host shut it down (`shutdown`, the host dropped, a failed handshake). */
    data object Shutdown : ExitReason { override val value: kotlin.String get() = "shutdown" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ExitReason {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): ExitReason = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "exited" -> Exited
            "shutdown" -> Shutdown
            else -> Unknown(e)
        }
    }
}

/** An error as every face reports it: `{kind, message, data}` (kinds in docs/ERRORS.md). */
data class ErrorInfo(
    /** The stable error kind, e.g. `agent_exited`, `cancelled`, `agent_error`. */
    val kind: kotlin.String,
    val message: kotlin.String,
    val data: JsonElement? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ErrorInfo {
            val o = D.obj(e)
            return ErrorInfo(
                D.req(o, "kind", D::str),
                D.req(o, "message", D::str),
                D.opt(o, "data", { it }),
            )
        }
    }
}

/** `session_opened`. */
data class SessionOpened(
    val sessionId: kotlin.String,
    val origin: SessionOrigin? = null,
    val cwd: kotlin.String? = null,
    val modes: SessionModeState? = null,
    val configOptions: List<SessionConfigOption>? = null,
    /** Set when a very long load replay forced the session open before the load response. */
    val partial: kotlin.Boolean? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): SessionOpened {
            val o = D.obj(e)
            return SessionOpened(
                D.req(o, "sessionId", D::str),
                D.opt(o, "origin", SessionOrigin::decode),
                D.opt(o, "cwd", D::str),
                D.opt(o, "modes", SessionModeState::decode),
                D.opt(o, "configOptions", { D.list(it, false, SessionConfigOption::decode) }),
                D.opt(o, "partial", D::bool),
            )
        }
    }
}

/** How a session was opened. */
sealed interface SessionOrigin {
    /** The value on the wire. */
    val value: kotlin.String
    data object New : SessionOrigin { override val value: kotlin.String get() = "new" }
    data object Load : SessionOrigin { override val value: kotlin.String get() = "load" }
    data object Resume : SessionOrigin { override val value: kotlin.String get() = "resume" }
    data object Fork : SessionOrigin { override val value: kotlin.String get() = "fork" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : SessionOrigin {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): SessionOrigin = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "new" -> New
            "load" -> Load
            "resume" -> Resume
            "fork" -> Fork
            else -> Unknown(e)
        }
    }
}

/** The set of modes and the one currently active. */
data class SessionModeState(
    /** The current mode the Agent is in. */
    val currentModeId: kotlin.String,
    /** The set of modes that the Agent can operate in */
    val availableModes: List<SessionMode>,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionModeState {
            val o = D.obj(e)
            return SessionModeState(
                D.req(o, "currentModeId", D::str),
                D.req(o, "availableModes", { D.list(it, true, SessionMode::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A mode the agent can operate in. */
data class SessionMode(
    /** Stable identifier used to refer to this protocol object in later messages. */
    val id: kotlin.String,
    /** Human-readable name shown for this protocol object. */
    val name: kotlin.String,
    /** Optional human-readable details shown with this protocol object. */
    val description: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionMode {
            val o = D.obj(e)
            return SessionMode(
                D.req(o, "id", D::str),
                D.req(o, "name", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A session configuration option selector and its current state. */
data class SessionConfigOption(
    /** Unique identifier for the configuration option. */
    val id: kotlin.String,
    /** Human-readable label for the option. */
    val name: kotlin.String,
    /** Optional description for the Client to display to the user. */
    val description: kotlin.String? = null,
    /** Optional semantic category for this option (UX only). */
    val category: dev.acphost.payloads.SessionConfigOptionCategory? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
    /** The variant part (by its tag). */
    val variant: SessionConfigOptionVariant,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionConfigOption {
            val o = D.obj(e)
            return SessionConfigOption(
                D.req(o, "id", D::str),
                D.req(o, "name", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "category", dev.acphost.payloads.SessionConfigOptionCategory::decode),
                D.opt(o, "_meta", D::obj),
                (SessionConfigOptionVariant::decode)(e),
            )
        }
    }
}

/** The variants of [SessionConfigOption]. */
sealed interface SessionConfigOptionVariant {

    /** Single-value selector (dropdown). */
    data class Select(
        /** The currently selected value. */
        val currentValue: kotlin.String,
        /** The set of selectable options. */
        val options: JsonElement,
    ) : SessionConfigOptionVariant {
        internal companion object {
            fun decode(e: JsonElement): Select {
                val o = D.obj(e)
                return Select(
                    D.req(o, "currentValue", D::str),
                    D.req(o, "options", { it }),
                )
            }
        }
    }

    /** Boolean on/off toggle. */
    data class Boolean(
        /** The current value of the boolean option. */
        val currentValue: kotlin.Boolean,
    ) : SessionConfigOptionVariant {
        internal companion object {
            fun decode(e: JsonElement): Boolean {
                val o = D.obj(e)
                return Boolean(
                    D.req(o, "currentValue", D::bool),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : SessionConfigOptionVariant

    companion object {
        internal fun decode(e: JsonElement): SessionConfigOptionVariant {
            val tag = D.tag(e, "type")
            val byTag: SessionConfigOptionVariant? = runCatching {
                when (tag) {
                    "select" -> Select.decode(e)
                    "boolean" -> Boolean.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("select", "boolean")) return Unknown(e)
            return Unknown(e)
        }
    }
}

/** Semantic category for a session configuration option. */
sealed interface SessionConfigOptionCategory {
    /** The value on the wire. */
    val value: kotlin.String
    /** Session mode selector. */
    data object Mode : SessionConfigOptionCategory { override val value: kotlin.String get() = "mode" }
    /** Model selector. */
    data object Model : SessionConfigOptionCategory { override val value: kotlin.String get() = "model" }
    /** Model-related configuration parameter. */
    data object ModelConfig : SessionConfigOptionCategory { override val value: kotlin.String get() = "model_config" }
    /** Thought/reasoning level selector. */
    data object ThoughtLevel : SessionConfigOptionCategory { override val value: kotlin.String get() = "thought_level" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : SessionConfigOptionCategory {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): SessionConfigOptionCategory = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "mode" -> Mode
            "model" -> Model
            "model_config" -> ModelConfig
            "thought_level" -> ThoughtLevel
            else -> Unknown(e)
        }
    }
}

/** A possible value for a session configuration option. */
data class SessionConfigSelectOption(
    /** Unique identifier for this option value. */
    val value: kotlin.String,
    /** Human-readable label for this option value. */
    val name: kotlin.String,
    /** Optional description for this option value. */
    val description: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionConfigSelectOption {
            val o = D.obj(e)
            return SessionConfigSelectOption(
                D.req(o, "value", D::str),
                D.req(o, "name", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A group of possible values for a session configuration option. */
data class SessionConfigSelectGroup(
    /** Unique identifier for this group. */
    val group: kotlin.String,
    /** Human-readable label for this group. */
    val name: kotlin.String,
    /** The set of option values in this group. */
    val options: List<SessionConfigSelectOption>,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionConfigSelectGroup {
            val o = D.obj(e)
            return SessionConfigSelectGroup(
                D.req(o, "group", D::str),
                D.req(o, "name", D::str),
                D.req(o, "options", { D.list(it, true, SessionConfigSelectOption::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A single-value selector (dropdown) session configuration option payload. */
data class SessionConfigSelect(
    /** The currently selected value. */
    val currentValue: kotlin.String,
    /** The set of selectable options. */
    val options: JsonElement,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionConfigSelect {
            val o = D.obj(e)
            return SessionConfigSelect(
                D.req(o, "currentValue", D::str),
                D.req(o, "options", { it }),
            )
        }
    }
}

/** A boolean on/off toggle session configuration option payload. */
data class SessionConfigBoolean(
    /** The current value of the boolean option. */
    val currentValue: kotlin.Boolean,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionConfigBoolean {
            val o = D.obj(e)
            return SessionConfigBoolean(
                D.req(o, "currentValue", D::bool),
            )
        }
    }
}

/** `session_closed`. */
data class SessionClosed(
    val sessionId: kotlin.String,
    val reason: CloseReason,
    /**
     * Its agent's process died and the supervisor reopens it under the same id: not the session's
     * last event. Absent otherwise.
     */
    val restart: kotlin.Boolean? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): SessionClosed {
            val o = D.obj(e)
            return SessionClosed(
                D.req(o, "sessionId", D::str),
                D.req(o, "reason", CloseReason::decode),
                D.opt(o, "restart", D::bool),
            )
        }
    }
}

/** Why a session closed. */
sealed interface CloseReason {
    /** The value on the wire. */
    val value: kotlin.String
    /** `session/archive` (unstable) of a session open on this host. */
    data object Archived : CloseReason { override val value: kotlin.String get() = "archived" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : CloseReason {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): CloseReason = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "archived" -> Archived
            else -> Unknown(e)
        }
    }
}

/** Different types of updates that can be sent during session processing. */
sealed interface SessionUpdate : EventPayload {

    /** A chunk of the user's message being streamed. */
    data class UserMessageChunk(
        /** A single item of content */
        val content: dev.acphost.payloads.ContentBlock,
        /** A unique identifier for the message this chunk belongs to. */
        val messageId: kotlin.String? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): UserMessageChunk {
                val o = D.obj(e)
                return UserMessageChunk(
                    D.req(o, "content", dev.acphost.payloads.ContentBlock::decode),
                    D.opt(o, "messageId", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A chunk of the agent's response being streamed. */
    data class AgentMessageChunk(
        /** A single item of content */
        val content: dev.acphost.payloads.ContentBlock,
        /** A unique identifier for the message this chunk belongs to. */
        val messageId: kotlin.String? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): AgentMessageChunk {
                val o = D.obj(e)
                return AgentMessageChunk(
                    D.req(o, "content", dev.acphost.payloads.ContentBlock::decode),
                    D.opt(o, "messageId", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A chunk of the agent's internal reasoning being streamed. */
    data class AgentThoughtChunk(
        /** A single item of content */
        val content: dev.acphost.payloads.ContentBlock,
        /** A unique identifier for the message this chunk belongs to. */
        val messageId: kotlin.String? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): AgentThoughtChunk {
                val o = D.obj(e)
                return AgentThoughtChunk(
                    D.req(o, "content", dev.acphost.payloads.ContentBlock::decode),
                    D.opt(o, "messageId", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Notification that a new tool call has been initiated. */
    data class ToolCall(
        /** Unique identifier for this tool call within the session. */
        val toolCallId: kotlin.String,
        /** Human-readable title describing what the tool is doing. */
        val title: kotlin.String,
        /** Programmatic name of the tool being invoked. */
        val name: kotlin.String? = null,
        /**
         * The category of tool being invoked. Helps clients choose appropriate icons and UI
         * treatment.
         */
        val kind: dev.acphost.payloads.ToolKind? = null,
        /** Current execution status of the tool call. */
        val status: dev.acphost.payloads.ToolCallStatus? = null,
        /** Content produced by the tool call. */
        val content: List<dev.acphost.payloads.ToolCallContent>? = null,
        /** File locations affected by this tool call. Enables "follow-along" features in clients. */
        val locations: List<dev.acphost.payloads.ToolCallLocation>? = null,
        /** Raw input parameters sent to the tool. */
        val rawInput: JsonElement? = null,
        /** Raw output returned by the tool. */
        val rawOutput: JsonElement? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): ToolCall {
                val o = D.obj(e)
                return ToolCall(
                    D.req(o, "toolCallId", D::str),
                    D.req(o, "title", D::str),
                    D.opt(o, "name", D::str),
                    D.opt(o, "kind", dev.acphost.payloads.ToolKind::decode),
                    D.opt(o, "status", dev.acphost.payloads.ToolCallStatus::decode),
                    D.opt(o, "content", { D.list(it, true, dev.acphost.payloads.ToolCallContent::decode) }),
                    D.opt(o, "locations", { D.list(it, true, dev.acphost.payloads.ToolCallLocation::decode) }),
                    D.opt(o, "rawInput", { it }),
                    D.opt(o, "rawOutput", { it }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Update on the status or results of a tool call. */
    data class ToolCallUpdate(
        /** The ID of the tool call being updated. */
        val toolCallId: kotlin.String,
        /** Update the tool kind. */
        val kind: dev.acphost.payloads.ToolKind? = null,
        /** Update the execution status. */
        val status: dev.acphost.payloads.ToolCallStatus? = null,
        /** Update the human-readable title. */
        val title: kotlin.String? = null,
        /** Update the programmatic name of the tool being invoked. */
        val name: kotlin.String? = null,
        /** Replace the content collection. */
        val content: List<dev.acphost.payloads.ToolCallContent>? = null,
        /** Replace the locations collection. */
        val locations: List<dev.acphost.payloads.ToolCallLocation>? = null,
        /** Update the raw input. */
        val rawInput: JsonElement? = null,
        /** Update the raw output. */
        val rawOutput: JsonElement? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
        /**
         * ACP v2 (draft): what the client may do with the call (`cancel`: `tool_call/cancel`), as
         * the agent sent it; `null` clears it.
         */
        val capabilities: JsonElement? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): ToolCallUpdate {
                val o = D.obj(e)
                return ToolCallUpdate(
                    D.req(o, "toolCallId", D::str),
                    D.opt(o, "kind", dev.acphost.payloads.ToolKind::decode),
                    D.opt(o, "status", dev.acphost.payloads.ToolCallStatus::decode),
                    D.opt(o, "title", D::str),
                    D.opt(o, "name", D::str),
                    D.opt(o, "content", { D.list(it, true, dev.acphost.payloads.ToolCallContent::decode) }),
                    D.opt(o, "locations", { D.list(it, true, dev.acphost.payloads.ToolCallLocation::decode) }),
                    D.opt(o, "rawInput", { it }),
                    D.opt(o, "rawOutput", { it }),
                    D.opt(o, "_meta", D::obj),
                    D.opt(o, "capabilities", { it }),
                )
            }
        }
    }

    /**
     * The agent's execution plan for complex tasks. See protocol docs: [Agent
     * Plan](https://agentclientprotocol.com/protocol/v1/agent-plan)
     */
    data class Plan(
        /** The list of tasks to be accomplished. */
        val entries: List<dev.acphost.payloads.PlanEntry>,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): Plan {
                val o = D.obj(e)
                return Plan(
                    D.req(o, "entries", { D.list(it, true, dev.acphost.payloads.PlanEntry::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /**
     * Replaces the plan with this ID. Agents MUST NOT send this update unless the Client
     * advertised `plan`.
     */
    data class PlanUpdate(
        /** Replaces the whole plan with this `planId`, even if its `type` changes. */
        val plan: dev.acphost.payloads.PlanUpdateContent,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): PlanUpdate {
                val o = D.obj(e)
                return PlanUpdate(
                    D.req(o, "plan", dev.acphost.payloads.PlanUpdateContent::decode),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /**
     * Removes the plan with this ID. Agents MUST NOT send this update unless the Client advertised
     * `plan`.
     */
    data class PlanRemoved(
        /** The plan ID to remove. Clients MUST ignore a removal for an unknown ID. */
        val planId: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): PlanRemoved {
                val o = D.obj(e)
                return PlanRemoved(
                    D.req(o, "planId", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Available commands are ready or have changed */
    data class AvailableCommandsUpdate(
        /** Commands the agent can execute */
        val availableCommands: List<dev.acphost.payloads.AvailableCommand>,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): AvailableCommandsUpdate {
                val o = D.obj(e)
                return AvailableCommandsUpdate(
                    D.req(o, "availableCommands", { D.list(it, true, dev.acphost.payloads.AvailableCommand::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** The current mode of the session has changed */
    data class CurrentModeUpdate(
        /** The ID of the current mode */
        val currentModeId: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): CurrentModeUpdate {
                val o = D.obj(e)
                return CurrentModeUpdate(
                    D.req(o, "currentModeId", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Session configuration options have been updated. */
    data class ConfigOptionUpdate(
        /** The full set of configuration options and their current values. */
        val configOptions: List<dev.acphost.payloads.SessionConfigOption>,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): ConfigOptionUpdate {
                val o = D.obj(e)
                return ConfigOptionUpdate(
                    D.req(o, "configOptions", { D.list(it, true, dev.acphost.payloads.SessionConfigOption::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Session metadata has been updated (title, timestamps, custom metadata) */
    data class SessionInfoUpdate(
        /** Human-readable title for the session. Set to null to clear. */
        val title: kotlin.String? = null,
        /** ISO 8601 timestamp of last activity. Set to null to clear. */
        val updatedAt: kotlin.String? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): SessionInfoUpdate {
                val o = D.obj(e)
                return SessionInfoUpdate(
                    D.opt(o, "title", D::str),
                    D.opt(o, "updatedAt", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Context window and cost update for the session. */
    data class UsageUpdate(
        /** Tokens currently in context. */
        val used: kotlin.Long,
        /** Total context window size in tokens. */
        val size: kotlin.Long,
        /** Cumulative session cost (optional). */
        val cost: dev.acphost.payloads.Cost? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): UsageUpdate {
                val o = D.obj(e)
                return UsageUpdate(
                    D.req(o, "used", D::long),
                    D.req(o, "size", D::long),
                    D.opt(o, "cost", dev.acphost.payloads.Cost::decode),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Information for the user that is not part of session history. */
    data class Notice(
        /** Presentation severity hint. */
        val severity: dev.acphost.payloads.NoticeSeverity,
        /** Required non-empty plain-text title that can stand alone. */
        val title: kotlin.String,
        /** Optional plain-text detail or guidance. */
        val description: kotlin.String? = null,
        /** Metadata scoped to this notice. */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): Notice {
                val o = D.obj(e)
                return Notice(
                    D.req(o, "severity", dev.acphost.payloads.NoticeSeverity::decode),
                    D.req(o, "title", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A context compaction has been created or updated. */
    data class CompactionUpdate(
        /** The Agent-owned ID of this compaction, unique within the session. */
        val compactionId: kotlin.String,
        /** Current lifecycle status. */
        val status: dev.acphost.payloads.CompactionStatus,
        /** Complete replacement user-displayable summary content for the compaction. */
        val summary: List<dev.acphost.payloads.ContentBlock>? = null,
        /** Human-readable error details for the compaction. */
        val error: kotlin.String? = null,
        /** Extensible metadata patch for this compaction. */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): CompactionUpdate {
                val o = D.obj(e)
                return CompactionUpdate(
                    D.req(o, "compactionId", D::str),
                    D.req(o, "status", dev.acphost.payloads.CompactionStatus::decode),
                    D.opt(o, "summary", { D.list(it, true, dev.acphost.payloads.ContentBlock::decode) }),
                    D.opt(o, "error", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A content block appended to a context compaction's retained summary. */
    data class CompactionSummaryChunk(
        /** ID of the compaction whose summary receives this content. */
        val compactionId: kotlin.String,
        /** One content block to append. */
        val content: dev.acphost.payloads.ContentBlock,
        /** Metadata scoped to this chunk. Omission and `null` both mean absent. */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): CompactionSummaryChunk {
                val o = D.obj(e)
                return CompactionSummaryChunk(
                    D.req(o, "compactionId", D::str),
                    D.req(o, "content", dev.acphost.payloads.ContentBlock::decode),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /**
     * Announces a child session created and owned by this session, or updates that ownership
     * association's metadata.
     */
    data class SubagentUpdate(
        /** The opaque session ID identifying the child in all ACP messages. */
        val sessionId: kotlin.String,
        /** The parent's human-readable display title for this child. It need not be unique. */
        val title: kotlin.String? = null,
        /** The parent's human-readable description of the child's role or purpose. */
        val description: kotlin.String? = null,
        /** Client-initiated session mutations permitted for this subagent session. */
        val capabilities: dev.acphost.payloads.SubagentSessionCapabilities? = null,
        /** Current state snapshot for the child session. */
        val state: dev.acphost.payloads.StateUpdate? = null,
        /** The child's working directory. Must be an absolute path. */
        val cwd: kotlin.String? = null,
        /** Additional workspace roots for the child. Each path MUST be absolute. */
        val additionalDirectories: List<kotlin.String>? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): SubagentUpdate {
                val o = D.obj(e)
                return SubagentUpdate(
                    D.req(o, "sessionId", D::str),
                    D.opt(o, "title", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "capabilities", dev.acphost.payloads.SubagentSessionCapabilities::decode),
                    D.opt(o, "state", dev.acphost.payloads.StateUpdate::decode),
                    D.opt(o, "cwd", D::str),
                    D.opt(o, "additionalDirectories", { D.list(it, false, D::str) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /**
     * A message upsert observed in this session's transcript, sent to or received from another
     * session.
     */
    data class SessionMessage(
        /** Identifier of this message within the enclosing session's transcript. */
        val messageId: kotlin.String,
        /** The sending session. */
        val senderSessionId: kotlin.String? = null,
        /** The receiving session. */
        val recipientSessionId: kotlin.String? = null,
        /**
         * On an incoming view, the `messageId` of the same message's outgoing view in the sender's
         * transcript.
         */
        val senderMessageId: kotlin.String? = null,
        /**
         * On an outgoing view, the `messageId` of the same message's incoming view in the
         * recipient's transcript.
         */
        val recipientMessageId: kotlin.String? = null,
        /**
         * Omitted leaves content unchanged. `null` or `[]` clears it. A non-empty array replaces
         * all content.
         */
        val content: List<dev.acphost.payloads.ContentBlock>? = null,
        /** Omitted leaves metadata unchanged. `null` removes it. */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): SessionMessage {
                val o = D.obj(e)
                return SessionMessage(
                    D.req(o, "messageId", D::str),
                    D.opt(o, "senderSessionId", D::str),
                    D.opt(o, "recipientSessionId", D::str),
                    D.opt(o, "senderMessageId", D::str),
                    D.opt(o, "recipientMessageId", D::str),
                    D.opt(o, "content", { D.list(it, true, dev.acphost.payloads.ContentBlock::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** One content block appended to a sent or received session message. */
    data class SessionMessageChunk(
        /** Identifier of this message within the enclosing session's transcript. */
        val messageId: kotlin.String,
        /** A single content block appended to the message. */
        val content: dev.acphost.payloads.ContentBlock,
        /** Optional and nullable chunk-scoped metadata. Omitted or `null` means none. */
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): SessionMessageChunk {
                val o = D.obj(e)
                return SessionMessageChunk(
                    D.req(o, "messageId", D::str),
                    D.req(o, "content", dev.acphost.payloads.ContentBlock::decode),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** ACP v2 (draft): the session's foreground state; `idle` ends the turn. */
    data class StateUpdate(
        /** `running`, `idle`, `requires_action`, `unknown`, or a future state. */
        val state: kotlin.String,
        /** Why the work stopped (on `idle`): `end_turn`, `cancelled`, `max_tokens`, `error`, …. */
        val stopReason: kotlin.String? = null,
        /** With `stopReason: "error"`: the failure, as a JSON-RPC error object. */
        val error: JsonElement? = null,
        /** Work running independently of the foreground work, as the agent reports it. */
        val background: List<JsonElement>? = null,
        /** Token usage for the completed work (unstable in ACP, passed through as sent). */
        val usage: JsonElement? = null,
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): StateUpdate {
                val o = D.obj(e)
                return StateUpdate(
                    D.req(o, "state", D::str),
                    D.opt(o, "stopReason", D::str),
                    D.opt(o, "error", { it }),
                    D.opt(o, "background", { D.list(it, false, { it }) }),
                    D.opt(o, "usage", { it }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** ACP v2 (draft): a user message created or patched. */
    data class UserMessage(
        /** Unique per message kind within the session. */
        val messageId: kotlin.String,
        /** The message's whole content (replaces what the chunks built up). */
        val content: List<dev.acphost.payloads.ContentBlock>? = null,
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): UserMessage {
                val o = D.obj(e)
                return UserMessage(
                    D.req(o, "messageId", D::str),
                    D.opt(o, "content", { D.list(it, false, dev.acphost.payloads.ContentBlock::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** ACP v2 (draft): an agent message created or patched. */
    data class AgentMessage(
        /** Unique per message kind within the session. */
        val messageId: kotlin.String,
        /** The message's whole content (replaces what the chunks built up). */
        val content: List<dev.acphost.payloads.ContentBlock>? = null,
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): AgentMessage {
                val o = D.obj(e)
                return AgentMessage(
                    D.req(o, "messageId", D::str),
                    D.opt(o, "content", { D.list(it, false, dev.acphost.payloads.ContentBlock::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** ACP v2 (draft): an agent thought created or patched. */
    data class AgentThought(
        /** Unique per message kind within the session. */
        val messageId: kotlin.String,
        /** The message's whole content (replaces what the chunks built up). */
        val content: List<dev.acphost.payloads.ContentBlock>? = null,
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): AgentThought {
                val o = D.obj(e)
                return AgentThought(
                    D.req(o, "messageId", D::str),
                    D.opt(o, "content", { D.list(it, false, dev.acphost.payloads.ContentBlock::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** ACP v2 (draft): one content item appended to a tool call. */
    data class ToolCallContentChunk(
        val toolCallId: kotlin.String,
        val content: dev.acphost.payloads.ToolCallContent,
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): ToolCallContentChunk {
                val o = D.obj(e)
                return ToolCallContentChunk(
                    D.req(o, "toolCallId", D::str),
                    D.req(o, "content", dev.acphost.payloads.ToolCallContent::decode),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** ACP v2 (draft): an agent-owned terminal created or patched. */
    data class TerminalUpdate(
        val terminalId: kotlin.String,
        val command: kotlin.String? = null,
        val cwd: kotlin.String? = null,
        val output: dev.acphost.payloads.V2TerminalOutput? = null,
        /** Set once the process ended. */
        val exitStatus: dev.acphost.payloads.V2TerminalExitStatus? = null,
        val size: dev.acphost.payloads.V2TerminalSize? = null,
        /** What the client may do with the terminal (e.g. `cancel`), as the agent sent it. */
        val capabilities: JsonElement? = null,
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): TerminalUpdate {
                val o = D.obj(e)
                return TerminalUpdate(
                    D.req(o, "terminalId", D::str),
                    D.opt(o, "command", D::str),
                    D.opt(o, "cwd", D::str),
                    D.opt(o, "output", dev.acphost.payloads.V2TerminalOutput::decode),
                    D.opt(o, "exitStatus", dev.acphost.payloads.V2TerminalExitStatus::decode),
                    D.opt(o, "size", dev.acphost.payloads.V2TerminalSize::decode),
                    D.opt(o, "capabilities", { it }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** ACP v2 (draft): bytes appended to an agent-owned terminal's output. */
    data class TerminalOutputChunk(
        val terminalId: kotlin.String,
        /** The bytes, base64 (each chunk encoded on its own). */
        val data: kotlin.String,
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): TerminalOutputChunk {
                val o = D.obj(e)
                return TerminalOutputChunk(
                    D.req(o, "terminalId", D::str),
                    D.req(o, "data", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** ACP v2 (draft): the replay a resume asked for is over. */
    data class ReplayComplete(
        val meta: JsonObject? = null,
    ) : SessionUpdate {
        internal companion object {
            fun decode(e: JsonElement): ReplayComplete {
                val o = D.obj(e)
                return ReplayComplete(
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : SessionUpdate

    companion object {
        internal fun decode(e: JsonElement): SessionUpdate {
            val tag = D.tag(e, "sessionUpdate")
            val byTag: SessionUpdate? = runCatching {
                when (tag) {
                    "user_message_chunk" -> UserMessageChunk.decode(e)
                    "agent_message_chunk" -> AgentMessageChunk.decode(e)
                    "agent_thought_chunk" -> AgentThoughtChunk.decode(e)
                    "tool_call" -> ToolCall.decode(e)
                    "tool_call_update" -> ToolCallUpdate.decode(e)
                    "plan" -> Plan.decode(e)
                    "plan_update" -> PlanUpdate.decode(e)
                    "plan_removed" -> PlanRemoved.decode(e)
                    "available_commands_update" -> AvailableCommandsUpdate.decode(e)
                    "current_mode_update" -> CurrentModeUpdate.decode(e)
                    "config_option_update" -> ConfigOptionUpdate.decode(e)
                    "session_info_update" -> SessionInfoUpdate.decode(e)
                    "usage_update" -> UsageUpdate.decode(e)
                    "notice" -> Notice.decode(e)
                    "compaction_update" -> CompactionUpdate.decode(e)
                    "compaction_summary_chunk" -> CompactionSummaryChunk.decode(e)
                    "subagent_update" -> SubagentUpdate.decode(e)
                    "session_message" -> SessionMessage.decode(e)
                    "session_message_chunk" -> SessionMessageChunk.decode(e)
                    "state_update" -> StateUpdate.decode(e)
                    "user_message" -> UserMessage.decode(e)
                    "agent_message" -> AgentMessage.decode(e)
                    "agent_thought" -> AgentThought.decode(e)
                    "tool_call_content_chunk" -> ToolCallContentChunk.decode(e)
                    "terminal_update" -> TerminalUpdate.decode(e)
                    "terminal_output_chunk" -> TerminalOutputChunk.decode(e)
                    "replay_complete" -> ReplayComplete.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan", "plan_update", "plan_removed", "available_commands_update", "current_mode_update", "config_option_update", "session_info_update", "usage_update", "notice", "compaction_update", "compaction_summary_chunk", "subagent_update", "session_message", "session_message_chunk", "state_update", "user_message", "agent_message", "agent_thought", "tool_call_content_chunk", "terminal_update", "terminal_output_chunk", "replay_complete")) return Unknown(e)
            return Unknown(e)
        }
    }
}

/** Content blocks represent displayable information in the Agent Client Protocol. */
sealed interface ContentBlock {

    /** Text content. May be plain text or formatted with Markdown. */
    data class Text(
        /** Optional annotations that help clients decide how to display or route this content. */
        val annotations: dev.acphost.payloads.Annotations? = null,
        /** Text payload carried by this content block. */
        val text: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ContentBlock {
        internal companion object {
            fun decode(e: JsonElement): Text {
                val o = D.obj(e)
                return Text(
                    D.opt(o, "annotations", dev.acphost.payloads.Annotations::decode),
                    D.req(o, "text", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Images for visual context or analysis. */
    data class Image(
        /** Optional annotations that help clients decide how to display or route this content. */
        val annotations: dev.acphost.payloads.Annotations? = null,
        /** Base64-encoded media payload. */
        val data: kotlin.String,
        /** MIME type describing the encoded media payload. */
        val mimeType: kotlin.String,
        /** URI associated with this resource or media payload. */
        val uri: kotlin.String? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ContentBlock {
        internal companion object {
            fun decode(e: JsonElement): Image {
                val o = D.obj(e)
                return Image(
                    D.opt(o, "annotations", dev.acphost.payloads.Annotations::decode),
                    D.req(o, "data", D::str),
                    D.req(o, "mimeType", D::str),
                    D.opt(o, "uri", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Audio data for transcription or analysis. */
    data class Audio(
        /** Optional annotations that help clients decide how to display or route this content. */
        val annotations: dev.acphost.payloads.Annotations? = null,
        /** Base64-encoded media payload. */
        val data: kotlin.String,
        /** MIME type describing the encoded media payload. */
        val mimeType: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ContentBlock {
        internal companion object {
            fun decode(e: JsonElement): Audio {
                val o = D.obj(e)
                return Audio(
                    D.opt(o, "annotations", dev.acphost.payloads.Annotations::decode),
                    D.req(o, "data", D::str),
                    D.req(o, "mimeType", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** References to resources that the agent can access. */
    data class ResourceLink(
        /** Optional annotations that help clients decide how to display or route this content. */
        val annotations: dev.acphost.payloads.Annotations? = null,
        /** Optional human-readable details shown with this protocol object. */
        val description: kotlin.String? = null,
        /** MIME type describing the encoded media payload. */
        val mimeType: kotlin.String? = null,
        /** Human-readable name shown for this protocol object. */
        val name: kotlin.String,
        /** Optional size of the linked resource in bytes, if known. */
        val size: kotlin.Long? = null,
        /** Optional display title for end-user UI. */
        val title: kotlin.String? = null,
        /** URI associated with this resource or media payload. */
        val uri: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ContentBlock {
        internal companion object {
            fun decode(e: JsonElement): ResourceLink {
                val o = D.obj(e)
                return ResourceLink(
                    D.opt(o, "annotations", dev.acphost.payloads.Annotations::decode),
                    D.opt(o, "description", D::str),
                    D.opt(o, "mimeType", D::str),
                    D.req(o, "name", D::str),
                    D.opt(o, "size", D::long),
                    D.opt(o, "title", D::str),
                    D.req(o, "uri", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Complete resource contents embedded directly in the message. */
    data class Resource(
        /** Optional annotations that help clients decide how to display or route this content. */
        val annotations: dev.acphost.payloads.Annotations? = null,
        /** Embedded resource payload, either text or binary data. */
        val resource: dev.acphost.payloads.EmbeddedResourceResource,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ContentBlock {
        internal companion object {
            fun decode(e: JsonElement): Resource {
                val o = D.obj(e)
                return Resource(
                    D.opt(o, "annotations", dev.acphost.payloads.Annotations::decode),
                    D.req(o, "resource", dev.acphost.payloads.EmbeddedResourceResource::decode),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ContentBlock

    companion object {
        internal fun decode(e: JsonElement): ContentBlock {
            val tag = D.tag(e, "type")
            val byTag: ContentBlock? = runCatching {
                when (tag) {
                    "text" -> Text.decode(e)
                    "image" -> Image.decode(e)
                    "audio" -> Audio.decode(e)
                    "resource_link" -> ResourceLink.decode(e)
                    "resource" -> Resource.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("text", "image", "audio", "resource_link", "resource")) return Unknown(e)
            return Unknown(e)
        }
    }
}

/**
 * Optional annotations for the client. The client can use annotations to inform how objects are
 * used or displayed
 */
data class Annotations(
    /** Intended recipients for this content, such as the user or assistant. */
    val audience: List<Role>? = null,
    /** Timestamp indicating when the underlying resource was last modified. */
    val lastModified: kotlin.String? = null,
    /** Relative importance of this content when clients choose what to surface. */
    val priority: kotlin.Double? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Annotations {
            val o = D.obj(e)
            return Annotations(
                D.opt(o, "audience", { D.list(it, true, Role::decode) }),
                D.opt(o, "lastModified", D::str),
                D.opt(o, "priority", D::double),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** The sender or recipient of messages and data in a conversation. */
sealed interface Role {
    /** The value on the wire. */
    val value: kotlin.String
    /** The assistant side of a conversation. */
    data object Assistant : Role { override val value: kotlin.String get() = "assistant" }
    /** The user side of a conversation. */
    data object User : Role { override val value: kotlin.String get() = "user" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : Role {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): Role = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "assistant" -> Assistant
            "user" -> User
            else -> Unknown(e)
        }
    }
}

/** Text provided to or from an LLM. */
data class TextContent(
    /** Optional annotations that help clients decide how to display or route this content. */
    val annotations: Annotations? = null,
    /** Text payload carried by this content block. */
    val text: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): TextContent {
            val o = D.obj(e)
            return TextContent(
                D.opt(o, "annotations", Annotations::decode),
                D.req(o, "text", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** An image provided to or from an LLM. */
data class ImageContent(
    /** Optional annotations that help clients decide how to display or route this content. */
    val annotations: Annotations? = null,
    /** Base64-encoded media payload. */
    val data: kotlin.String,
    /** MIME type describing the encoded media payload. */
    val mimeType: kotlin.String,
    /** URI associated with this resource or media payload. */
    val uri: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ImageContent {
            val o = D.obj(e)
            return ImageContent(
                D.opt(o, "annotations", Annotations::decode),
                D.req(o, "data", D::str),
                D.req(o, "mimeType", D::str),
                D.opt(o, "uri", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Audio provided to or from an LLM. */
data class AudioContent(
    /** Optional annotations that help clients decide how to display or route this content. */
    val annotations: Annotations? = null,
    /** Base64-encoded media payload. */
    val data: kotlin.String,
    /** MIME type describing the encoded media payload. */
    val mimeType: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): AudioContent {
            val o = D.obj(e)
            return AudioContent(
                D.opt(o, "annotations", Annotations::decode),
                D.req(o, "data", D::str),
                D.req(o, "mimeType", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A resource that the server is capable of reading, included in a prompt or tool call result. */
data class ResourceLink(
    /** Optional annotations that help clients decide how to display or route this content. */
    val annotations: Annotations? = null,
    /** Optional human-readable details shown with this protocol object. */
    val description: kotlin.String? = null,
    /** MIME type describing the encoded media payload. */
    val mimeType: kotlin.String? = null,
    /** Human-readable name shown for this protocol object. */
    val name: kotlin.String,
    /** Optional size of the linked resource in bytes, if known. */
    val size: kotlin.Long? = null,
    /** Optional display title for end-user UI. */
    val title: kotlin.String? = null,
    /** URI associated with this resource or media payload. */
    val uri: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ResourceLink {
            val o = D.obj(e)
            return ResourceLink(
                D.opt(o, "annotations", Annotations::decode),
                D.opt(o, "description", D::str),
                D.opt(o, "mimeType", D::str),
                D.req(o, "name", D::str),
                D.opt(o, "size", D::long),
                D.opt(o, "title", D::str),
                D.req(o, "uri", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Resource content that can be embedded in a message. */
sealed interface EmbeddedResourceResource {

    /** Text resource contents embedded directly in the message. */
    data class TextResourceContents(
        /** MIME type describing the encoded media payload. */
        val mimeType: kotlin.String? = null,
        /** Text payload carried by this content block. */
        val text: kotlin.String,
        /** URI associated with this resource or media payload. */
        val uri: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : EmbeddedResourceResource {
        internal companion object {
            fun decode(e: JsonElement): TextResourceContents {
                val o = D.obj(e)
                return TextResourceContents(
                    D.opt(o, "mimeType", D::str),
                    D.req(o, "text", D::str),
                    D.req(o, "uri", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Binary resource contents embedded directly in the message. */
    data class BlobResourceContents(
        /** Base64-encoded bytes for a binary resource payload. */
        val blob: kotlin.String,
        /** MIME type describing the encoded media payload. */
        val mimeType: kotlin.String? = null,
        /** URI associated with this resource or media payload. */
        val uri: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : EmbeddedResourceResource {
        internal companion object {
            fun decode(e: JsonElement): BlobResourceContents {
                val o = D.obj(e)
                return BlobResourceContents(
                    D.req(o, "blob", D::str),
                    D.opt(o, "mimeType", D::str),
                    D.req(o, "uri", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : EmbeddedResourceResource

    companion object {
        internal fun decode(e: JsonElement): EmbeddedResourceResource {
            runCatching { TextResourceContents.decode(e) }.getOrNull()?.let { return it }
            runCatching { BlobResourceContents.decode(e) }.getOrNull()?.let { return it }
            return Unknown(e)
        }
    }
}

/** Text-based resource contents. */
data class TextResourceContents(
    /** MIME type describing the encoded media payload. */
    val mimeType: kotlin.String? = null,
    /** Text payload carried by this content block. */
    val text: kotlin.String,
    /** URI associated with this resource or media payload. */
    val uri: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): TextResourceContents {
            val o = D.obj(e)
            return TextResourceContents(
                D.opt(o, "mimeType", D::str),
                D.req(o, "text", D::str),
                D.req(o, "uri", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Binary resource contents. */
data class BlobResourceContents(
    /** Base64-encoded bytes for a binary resource payload. */
    val blob: kotlin.String,
    /** MIME type describing the encoded media payload. */
    val mimeType: kotlin.String? = null,
    /** URI associated with this resource or media payload. */
    val uri: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): BlobResourceContents {
            val o = D.obj(e)
            return BlobResourceContents(
                D.req(o, "blob", D::str),
                D.opt(o, "mimeType", D::str),
                D.req(o, "uri", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** The contents of a resource, embedded into a prompt or tool call result. */
data class EmbeddedResource(
    /** Optional annotations that help clients decide how to display or route this content. */
    val annotations: Annotations? = null,
    /** Embedded resource payload, either text or binary data. */
    val resource: EmbeddedResourceResource,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): EmbeddedResource {
            val o = D.obj(e)
            return EmbeddedResource(
                D.opt(o, "annotations", Annotations::decode),
                D.req(o, "resource", EmbeddedResourceResource::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A streamed item of content */
data class ContentChunk(
    /** A single item of content */
    val content: ContentBlock,
    /** A unique identifier for the message this chunk belongs to. */
    val messageId: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ContentChunk {
            val o = D.obj(e)
            return ContentChunk(
                D.req(o, "content", ContentBlock::decode),
                D.opt(o, "messageId", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Categories of tools that can be invoked. */
sealed interface ToolKind {
    /** The value on the wire. */
    val value: kotlin.String
    /** Reading files or data. */
    data object Read : ToolKind { override val value: kotlin.String get() = "read" }
    /** Modifying files or content. */
    data object Edit : ToolKind { override val value: kotlin.String get() = "edit" }
    /** Removing files or data. */
    data object Delete : ToolKind { override val value: kotlin.String get() = "delete" }
    /** Moving or renaming files. */
    data object Move : ToolKind { override val value: kotlin.String get() = "move" }
    /** Searching for information. */
    data object Search : ToolKind { override val value: kotlin.String get() = "search" }
    /** Running commands or code. */
    data object Execute : ToolKind { override val value: kotlin.String get() = "execute" }
    /** Internal reasoning or planning. */
    data object Think : ToolKind { override val value: kotlin.String get() = "think" }
    /** Retrieving external data. */
    data object Fetch : ToolKind { override val value: kotlin.String get() = "fetch" }
    /** Switching the current session mode. */
    data object SwitchMode : ToolKind { override val value: kotlin.String get() = "switch_mode" }
    /** Other tool types (default). */
    data object Other : ToolKind { override val value: kotlin.String get() = "other" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ToolKind {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): ToolKind = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "read" -> Read
            "edit" -> Edit
            "delete" -> Delete
            "move" -> Move
            "search" -> Search
            "execute" -> Execute
            "think" -> Think
            "fetch" -> Fetch
            "switch_mode" -> SwitchMode
            "other" -> Other
            else -> Unknown(e)
        }
    }
}

/** Execution status of a tool call. */
sealed interface ToolCallStatus {
    /** The value on the wire. */
    val value: kotlin.String
    /**
     * The tool call hasn't started running yet because the input is either streaming or we're
     * awaiting approval.
     */
    data object Pending : ToolCallStatus { override val value: kotlin.String get() = "pending" }
    /** The tool call is currently running. */
    data object InProgress : ToolCallStatus { override val value: kotlin.String get() = "in_progress" }
    /** The tool call completed successfully. */
    data object Completed : ToolCallStatus { override val value: kotlin.String get() = "completed" }
    /** The tool call failed with an error. */
    data object Failed : ToolCallStatus { override val value: kotlin.String get() = "failed" }
    /** ACP v2 (draft): started, not running now, until something resumes it. */
    data object Paused : ToolCallStatus { override val value: kotlin.String get() = "paused" }
    /** ACP v2 (draft): cancelled before it completed (`tool_call/cancel`). */
    data object Cancelled : ToolCallStatus { override val value: kotlin.String get() = "cancelled" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ToolCallStatus {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): ToolCallStatus = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "pending" -> Pending
            "in_progress" -> InProgress
            "completed" -> Completed
            "failed" -> Failed
            "paused" -> Paused
            "cancelled" -> Cancelled
            else -> Unknown(e)
        }
    }
}

/** Content produced by a tool call. */
sealed interface ToolCallContent {

    /** Standard content block (text, images, resources). */
    data class Content(
        /** The actual content block. */
        val content: dev.acphost.payloads.ContentBlock,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ToolCallContent {
        internal companion object {
            fun decode(e: JsonElement): Content {
                val o = D.obj(e)
                return Content(
                    D.req(o, "content", dev.acphost.payloads.ContentBlock::decode),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** File modification shown as a diff. */
    data class Diff(
        /** The absolute file path being modified. */
        val path: kotlin.String,
        /** The original content (omitted or `null` for new files). */
        val oldText: kotlin.String? = null,
        /** The new content after modification. */
        val newText: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ToolCallContent {
        internal companion object {
            fun decode(e: JsonElement): Diff {
                val o = D.obj(e)
                return Diff(
                    D.req(o, "path", D::str),
                    D.opt(o, "oldText", D::str),
                    D.req(o, "newText", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Embed a terminal created with `terminal/create` by its id. */
    data class Terminal(
        /** Identifier of the terminal instance to embed in the content stream. */
        val terminalId: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ToolCallContent {
        internal companion object {
            fun decode(e: JsonElement): Terminal {
                val o = D.obj(e)
                return Terminal(
                    D.req(o, "terminalId", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A display-only reference to another session, such as a subagent. */
    data class Session(
        /** The referenced session. */
        val sessionId: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ToolCallContent {
        internal companion object {
            fun decode(e: JsonElement): Session {
                val o = D.obj(e)
                return Session(
                    D.req(o, "sessionId", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ToolCallContent

    companion object {
        internal fun decode(e: JsonElement): ToolCallContent {
            val tag = D.tag(e, "type")
            val byTag: ToolCallContent? = runCatching {
                when (tag) {
                    "content" -> Content.decode(e)
                    "diff" -> Diff.decode(e)
                    "terminal" -> Terminal.decode(e)
                    "session" -> Session.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("content", "diff", "terminal", "session")) return Unknown(e)
            return Unknown(e)
        }
    }
}

/** Standard content block (text, images, resources). */
data class Content(
    /** The actual content block. */
    val content: ContentBlock,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Content {
            val o = D.obj(e)
            return Content(
                D.req(o, "content", ContentBlock::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A diff representing file modifications. */
data class Diff(
    /** The absolute file path being modified. */
    val path: kotlin.String,
    /** The original content (omitted or `null` for new files). */
    val oldText: kotlin.String? = null,
    /** The new content after modification. */
    val newText: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Diff {
            val o = D.obj(e)
            return Diff(
                D.req(o, "path", D::str),
                D.opt(o, "oldText", D::str),
                D.req(o, "newText", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Embed a terminal created with `terminal/create` by its id. */
data class Terminal(
    /** Identifier of the terminal instance to embed in the content stream. */
    val terminalId: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Terminal {
            val o = D.obj(e)
            return Terminal(
                D.req(o, "terminalId", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/**
 * A display-only reference to another session that this tool call operates on, such as a subagent
 * it created, delegated to, or is waiting on.
 */
data class SessionReference(
    /** The referenced session. */
    val sessionId: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionReference {
            val o = D.obj(e)
            return SessionReference(
                D.req(o, "sessionId", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A file location being accessed or modified by a tool. */
data class ToolCallLocation(
    /** The absolute file path being accessed or modified. */
    val path: kotlin.String,
    /** Optional 1-based line number within the file. */
    val line: kotlin.Long? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ToolCallLocation {
            val o = D.obj(e)
            return ToolCallLocation(
                D.req(o, "path", D::str),
                D.opt(o, "line", D::long),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Represents a tool call that the language model has requested. */
data class ToolCall(
    /** Unique identifier for this tool call within the session. */
    val toolCallId: kotlin.String,
    /** Human-readable title describing what the tool is doing. */
    val title: kotlin.String,
    /** Programmatic name of the tool being invoked. */
    val name: kotlin.String? = null,
    /** The category of tool being invoked. Helps clients choose appropriate icons and UI treatment. */
    val kind: ToolKind? = null,
    /** Current execution status of the tool call. */
    val status: ToolCallStatus? = null,
    /** Content produced by the tool call. */
    val content: List<ToolCallContent>? = null,
    /** File locations affected by this tool call. Enables "follow-along" features in clients. */
    val locations: List<ToolCallLocation>? = null,
    /** Raw input parameters sent to the tool. */
    val rawInput: JsonElement? = null,
    /** Raw output returned by the tool. */
    val rawOutput: JsonElement? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ToolCall {
            val o = D.obj(e)
            return ToolCall(
                D.req(o, "toolCallId", D::str),
                D.req(o, "title", D::str),
                D.opt(o, "name", D::str),
                D.opt(o, "kind", ToolKind::decode),
                D.opt(o, "status", ToolCallStatus::decode),
                D.opt(o, "content", { D.list(it, true, ToolCallContent::decode) }),
                D.opt(o, "locations", { D.list(it, true, ToolCallLocation::decode) }),
                D.opt(o, "rawInput", { it }),
                D.opt(o, "rawOutput", { it }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** An update to an existing tool call. */
data class ToolCallUpdate(
    /** The ID of the tool call being updated. */
    val toolCallId: kotlin.String,
    /** Update the tool kind. */
    val kind: ToolKind? = null,
    /** Update the execution status. */
    val status: ToolCallStatus? = null,
    /** Update the human-readable title. */
    val title: kotlin.String? = null,
    /** Update the programmatic name of the tool being invoked. */
    val name: kotlin.String? = null,
    /** Replace the content collection. */
    val content: List<ToolCallContent>? = null,
    /** Replace the locations collection. */
    val locations: List<ToolCallLocation>? = null,
    /** Update the raw input. */
    val rawInput: JsonElement? = null,
    /** Update the raw output. */
    val rawOutput: JsonElement? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
    /**
     * ACP v2 (draft): what the client may do with the call (`cancel`: `tool_call/cancel`), as the
     * agent sent it; `null` clears it.
     */
    val capabilities: JsonElement? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ToolCallUpdate {
            val o = D.obj(e)
            return ToolCallUpdate(
                D.req(o, "toolCallId", D::str),
                D.opt(o, "kind", ToolKind::decode),
                D.opt(o, "status", ToolCallStatus::decode),
                D.opt(o, "title", D::str),
                D.opt(o, "name", D::str),
                D.opt(o, "content", { D.list(it, true, ToolCallContent::decode) }),
                D.opt(o, "locations", { D.list(it, true, ToolCallLocation::decode) }),
                D.opt(o, "rawInput", { it }),
                D.opt(o, "rawOutput", { it }),
                D.opt(o, "_meta", D::obj),
                D.opt(o, "capabilities", { it }),
            )
        }
    }
}

/** A single entry in the execution plan. */
data class PlanEntry(
    /** Human-readable description of what this task aims to accomplish. */
    val content: kotlin.String,
    /**
     * The relative importance of this task. Used to indicate which tasks are most critical to the
     * overall goal.
     */
    val priority: PlanEntryPriority,
    /** Current execution status of this task. */
    val status: PlanEntryStatus,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): PlanEntry {
            val o = D.obj(e)
            return PlanEntry(
                D.req(o, "content", D::str),
                D.req(o, "priority", PlanEntryPriority::decode),
                D.req(o, "status", PlanEntryStatus::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Priority levels for plan entries. */
sealed interface PlanEntryPriority {
    /** The value on the wire. */
    val value: kotlin.String
    /** High priority task - critical to the overall goal. */
    data object High : PlanEntryPriority { override val value: kotlin.String get() = "high" }
    /** Medium priority task - important but not critical. */
    data object Medium : PlanEntryPriority { override val value: kotlin.String get() = "medium" }
    /** Low priority task - nice to have but not essential. */
    data object Low : PlanEntryPriority { override val value: kotlin.String get() = "low" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : PlanEntryPriority {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): PlanEntryPriority = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "high" -> High
            "medium" -> Medium
            "low" -> Low
            else -> Unknown(e)
        }
    }
}

/** Status of a plan entry in the execution flow. */
sealed interface PlanEntryStatus {
    /** The value on the wire. */
    val value: kotlin.String
    /** The task has not started yet. */
    data object Pending : PlanEntryStatus { override val value: kotlin.String get() = "pending" }
    /** The task is currently being worked on. */
    data object InProgress : PlanEntryStatus { override val value: kotlin.String get() = "in_progress" }
    /** The task has been successfully completed. */
    data object Completed : PlanEntryStatus { override val value: kotlin.String get() = "completed" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : PlanEntryStatus {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): PlanEntryStatus = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "pending" -> Pending
            "in_progress" -> InProgress
            "completed" -> Completed
            else -> Unknown(e)
        }
    }
}

/** A checklist sent with the `plan` session update. */
data class Plan(
    /** The list of tasks to be accomplished. */
    val entries: List<PlanEntry>,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Plan {
            val o = D.obj(e)
            return Plan(
                D.req(o, "entries", { D.list(it, true, PlanEntry::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Updated content for a plan. */
sealed interface PlanUpdateContent {

    /** Structured plan entries. */
    data class Items(
        /** The plan ID to update. */
        val planId: kotlin.String,
        /** The list of tasks to be accomplished. */
        val entries: List<dev.acphost.payloads.PlanEntry>,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : PlanUpdateContent {
        internal companion object {
            fun decode(e: JsonElement): Items {
                val o = D.obj(e)
                return Items(
                    D.req(o, "planId", D::str),
                    D.req(o, "entries", { D.list(it, true, dev.acphost.payloads.PlanEntry::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** The complete plan as Markdown. */
    data class Markdown(
        /** The plan ID to update. */
        val planId: kotlin.String,
        /** The complete plan as Markdown, not just the text that changed. */
        val content: kotlin.String,
        /** The absolute path of the file that holds this plan. */
        val path: kotlin.String? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : PlanUpdateContent {
        internal companion object {
            fun decode(e: JsonElement): Markdown {
                val o = D.obj(e)
                return Markdown(
                    D.req(o, "planId", D::str),
                    D.req(o, "content", D::str),
                    D.opt(o, "path", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : PlanUpdateContent

    companion object {
        internal fun decode(e: JsonElement): PlanUpdateContent {
            val tag = D.tag(e, "type")
            val byTag: PlanUpdateContent? = runCatching {
                when (tag) {
                    "items" -> Items.decode(e)
                    "markdown" -> Markdown.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("items", "markdown")) return Unknown(e)
            return Unknown(e)
        }
    }
}

/** A plan represented as structured entries. */
data class PlanItems(
    /** The plan ID to update. */
    val planId: kotlin.String,
    /** The list of tasks to be accomplished. */
    val entries: List<PlanEntry>,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): PlanItems {
            val o = D.obj(e)
            return PlanItems(
                D.req(o, "planId", D::str),
                D.req(o, "entries", { D.list(it, true, PlanEntry::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A plan represented as Markdown. */
data class PlanMarkdown(
    /** The plan ID to update. */
    val planId: kotlin.String,
    /** The complete plan as Markdown, not just the text that changed. */
    val content: kotlin.String,
    /** The absolute path of the file that holds this plan. */
    val path: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): PlanMarkdown {
            val o = D.obj(e)
            return PlanMarkdown(
                D.req(o, "planId", D::str),
                D.req(o, "content", D::str),
                D.opt(o, "path", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A content update for a plan identified by ID. */
data class PlanUpdate(
    /** Replaces the whole plan with this `planId`, even if its `type` changes. */
    val plan: PlanUpdateContent,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): PlanUpdate {
            val o = D.obj(e)
            return PlanUpdate(
                D.req(o, "plan", PlanUpdateContent::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Removal notice for a plan identified by ID. */
data class PlanRemoved(
    /** The plan ID to remove. Clients MUST ignore a removal for an unknown ID. */
    val planId: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): PlanRemoved {
            val o = D.obj(e)
            return PlanRemoved(
                D.req(o, "planId", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Information about a command. */
data class AvailableCommand(
    /** Command name (e.g., `create_plan`, `research_codebase`). */
    val name: kotlin.String,
    /** Human-readable description of what the command does. */
    val description: kotlin.String,
    /** Input for the command if required */
    val input: AvailableCommandInput? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): AvailableCommand {
            val o = D.obj(e)
            return AvailableCommand(
                D.req(o, "name", D::str),
                D.req(o, "description", D::str),
                D.opt(o, "input", AvailableCommandInput::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** The input specification for a command. */
sealed interface AvailableCommandInput {

    /** All text that was typed after the command name is provided as input. */
    data class UnstructuredCommandInput(
        /** A hint to display when the input hasn't been provided yet */
        val hint: kotlin.String,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : AvailableCommandInput {
        internal companion object {
            fun decode(e: JsonElement): UnstructuredCommandInput {
                val o = D.obj(e)
                return UnstructuredCommandInput(
                    D.req(o, "hint", D::str),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : AvailableCommandInput

    companion object {
        internal fun decode(e: JsonElement): AvailableCommandInput {
            runCatching { UnstructuredCommandInput.decode(e) }.getOrNull()?.let { return it }
            return Unknown(e)
        }
    }
}

/** All text that was typed after the command name is provided as input. */
data class UnstructuredCommandInput(
    /** A hint to display when the input hasn't been provided yet */
    val hint: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): UnstructuredCommandInput {
            val o = D.obj(e)
            return UnstructuredCommandInput(
                D.req(o, "hint", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Available commands are ready or have changed */
data class AvailableCommandsUpdate(
    /** Commands the agent can execute */
    val availableCommands: List<AvailableCommand>,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): AvailableCommandsUpdate {
            val o = D.obj(e)
            return AvailableCommandsUpdate(
                D.req(o, "availableCommands", { D.list(it, true, AvailableCommand::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** The current mode of the session has changed */
data class CurrentModeUpdate(
    /** The ID of the current mode */
    val currentModeId: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): CurrentModeUpdate {
            val o = D.obj(e)
            return CurrentModeUpdate(
                D.req(o, "currentModeId", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Session configuration options have been updated. */
data class ConfigOptionUpdate(
    /** The full set of configuration options and their current values. */
    val configOptions: List<SessionConfigOption>,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ConfigOptionUpdate {
            val o = D.obj(e)
            return ConfigOptionUpdate(
                D.req(o, "configOptions", { D.list(it, true, SessionConfigOption::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Update to session metadata. All fields are optional to support partial updates. */
data class SessionInfoUpdate(
    /** Human-readable title for the session. Set to null to clear. */
    val title: kotlin.String? = null,
    /** ISO 8601 timestamp of last activity. Set to null to clear. */
    val updatedAt: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionInfoUpdate {
            val o = D.obj(e)
            return SessionInfoUpdate(
                D.opt(o, "title", D::str),
                D.opt(o, "updatedAt", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Cost information for a session. */
data class Cost(
    /** Total cumulative cost for session. */
    val amount: kotlin.Double,
    /**
     * Unit of `amount`: an ISO 4217 currency code (e.g., "USD", "EUR") for money, or another unit
     * such as "credits".
     */
    val currency: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Cost {
            val o = D.obj(e)
            return Cost(
                D.req(o, "amount", D::double),
                D.req(o, "currency", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Context window and cost update for a session. */
data class UsageUpdate(
    /** Tokens currently in context. */
    val used: kotlin.Long,
    /** Total context window size in tokens. */
    val size: kotlin.Long,
    /** Cumulative session cost (optional). */
    val cost: Cost? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): UsageUpdate {
            val o = D.obj(e)
            return UsageUpdate(
                D.req(o, "used", D::long),
                D.req(o, "size", D::long),
                D.opt(o, "cost", Cost::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Severity hint for a session notice. */
sealed interface NoticeSeverity {
    /** The value on the wire. */
    val value: kotlin.String
    /** Informational notice. */
    data object Info : NoticeSeverity { override val value: kotlin.String get() = "info" }
    /** Warning notice. */
    data object Warning : NoticeSeverity { override val value: kotlin.String get() = "warning" }
    /** Error notice. */
    data object Error : NoticeSeverity { override val value: kotlin.String get() = "error" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : NoticeSeverity {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): NoticeSeverity = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "info" -> Info
            "warning" -> Warning
            "error" -> Error
            else -> Unknown(e)
        }
    }
}

/** Fire-and-forget information for the user. */
data class Notice(
    /** Presentation severity hint. */
    val severity: NoticeSeverity,
    /** Required non-empty plain-text title that can stand alone. */
    val title: kotlin.String,
    /** Optional plain-text detail or guidance. */
    val description: kotlin.String? = null,
    /** Metadata scoped to this notice. */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Notice {
            val o = D.obj(e)
            return Notice(
                D.req(o, "severity", NoticeSeverity::decode),
                D.req(o, "title", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Lifecycle state of a context compaction. */
sealed interface CompactionStatus {
    /** The value on the wire. */
    val value: kotlin.String
    /** Compaction has started and has not finished. */
    data object InProgress : CompactionStatus { override val value: kotlin.String get() = "in_progress" }
    /** Compaction finished successfully. */
    data object Completed : CompactionStatus { override val value: kotlin.String get() = "completed" }
    /** Compaction finished unsuccessfully. */
    data object Failed : CompactionStatus { override val value: kotlin.String get() = "failed" }
    /** Compaction was cancelled before it finished. */
    data object Cancelled : CompactionStatus { override val value: kotlin.String get() = "cancelled" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : CompactionStatus {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): CompactionStatus = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "in_progress" -> InProgress
            "completed" -> Completed
            "failed" -> Failed
            "cancelled" -> Cancelled
            else -> Unknown(e)
        }
    }
}

/**
 * A context compaction upsert. The first notification fixes the compaction's timeline position.
 * Later updates with the same ID patch that entity in place. Agents MUST only send this update
 * when the Client advertised the `session.compaction` Client capability.
 */
data class CompactionUpdate(
    /** The Agent-owned ID of this compaction, unique within the session. */
    val compactionId: kotlin.String,
    /** Current lifecycle status. */
    val status: CompactionStatus,
    /** Complete replacement user-displayable summary content for the compaction. */
    val summary: List<ContentBlock>? = null,
    /** Human-readable error details for the compaction. */
    val error: kotlin.String? = null,
    /** Extensible metadata patch for this compaction. */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): CompactionUpdate {
            val o = D.obj(e)
            return CompactionUpdate(
                D.req(o, "compactionId", D::str),
                D.req(o, "status", CompactionStatus::decode),
                D.opt(o, "summary", { D.list(it, true, ContentBlock::decode) }),
                D.opt(o, "error", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/**
 * A content block appended to a compaction's summary. A first-seen ID creates an in-progress
 * compaction. Chunks append in receive order. Agents MUST only send this update when the Client
 * advertised the `session.compaction` Client capability.
 */
data class CompactionSummaryChunk(
    /** ID of the compaction whose summary receives this content. */
    val compactionId: kotlin.String,
    /** One content block to append. */
    val content: ContentBlock,
    /** Metadata scoped to this chunk. Omission and `null` both mean absent. */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): CompactionSummaryChunk {
            val o = D.obj(e)
            return CompactionSummaryChunk(
                D.req(o, "compactionId", D::str),
                D.req(o, "content", ContentBlock::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Client-initiated session mutations permitted for a specific subagent session. */
data class SubagentSessionCapabilities(
    /**
     * Permits the client to cancel this child's current work without ending the session. Omitted
     * or `null` means unsupported. An object (including `{}`) means supported.
     */
    val cancel: SessionCancelCapabilities? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SubagentSessionCapabilities {
            val o = D.obj(e)
            return SubagentSessionCapabilities(
                D.opt(o, "cancel", SessionCancelCapabilities::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Capability to cancel work in a subagent session without ending that session. */
data class SessionCancelCapabilities(
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionCancelCapabilities {
            val o = D.obj(e)
            return SessionCancelCapabilities(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Current foreground-work state of a reusable child session. */
sealed interface StateUpdate {

    /** Foreground work is in progress. */
    data class Running(
        /**
         * The _meta property is reserved by ACP for additional metadata. Implementations MUST NOT
         * make assumptions about values at these keys. Optional. Omitted and `null` mean no
         * metadata for this state snapshot.
         */
        val meta: JsonObject? = null,
    ) : StateUpdate {
        internal companion object {
            fun decode(e: JsonElement): Running {
                val o = D.obj(e)
                return Running(
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Foreground work is not in progress. The parent can give the child more work. */
    data class Idle(
        val value: dev.acphost.payloads.IdleStateUpdate,
    ) : StateUpdate {
        internal companion object {
            fun decode(e: JsonElement): Idle {
                val o = D.obj(e)
                return Idle(
                    (dev.acphost.payloads.IdleStateUpdate::decode)(e),
                )
            }
        }
    }

    /** Foreground work is blocked on user action. */
    data class RequiresAction(
        /**
         * The _meta property is reserved by ACP for additional metadata. Implementations MUST NOT
         * make assumptions about values at these keys. Optional. Omitted and `null` mean no
         * metadata for this state snapshot.
         */
        val meta: JsonObject? = null,
    ) : StateUpdate {
        internal companion object {
            fun decode(e: JsonElement): RequiresAction {
                val o = D.obj(e)
                return RequiresAction(
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** The Agent cannot currently determine foreground activity. */
    data class UnknownValue(
        /**
         * The _meta property is reserved by ACP for additional metadata. Implementations MUST NOT
         * make assumptions about values at these keys. Optional. Omitted and `null` mean no
         * metadata for this state snapshot.
         */
        val meta: JsonObject? = null,
    ) : StateUpdate {
        internal companion object {
            fun decode(e: JsonElement): UnknownValue {
                val o = D.obj(e)
                return UnknownValue(
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : StateUpdate

    companion object {
        internal fun decode(e: JsonElement): StateUpdate {
            val tag = D.tag(e, "state")
            val byTag: StateUpdate? = runCatching {
                when (tag) {
                    "running" -> Running.decode(e)
                    "idle" -> Idle.decode(e)
                    "requires_action" -> RequiresAction.decode(e)
                    "unknown" -> UnknownValue.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("running", "idle", "requires_action", "unknown")) return Unknown(e)
            return Unknown(e)
        }
    }
}

/** Foreground work is in progress. */
data class RunningStateUpdate(
    /**
     * The _meta property is reserved by ACP for additional metadata. Implementations MUST NOT make
     * assumptions about values at these keys. Optional. Omitted and `null` mean no metadata for
     * this state snapshot.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): RunningStateUpdate {
            val o = D.obj(e)
            return RunningStateUpdate(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** JSON-RPC error object. */
data class Error(
    /**
     * A number indicating the error type that occurred. This MUST be an integer as defined in the
     * JSON-RPC specification.
     */
    val code: JsonElement,
    /**
     * A string providing a short description of the error. The message SHOULD be limited to a
     * concise single sentence.
     */
    val message: kotlin.String,
    /**
     * Optional primitive or structured value that contains additional information about the error.
     * This may include debugging information or context-specific details.
     */
    val data: JsonElement? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): Error {
            val o = D.obj(e)
            return Error(
                D.req(o, "code", { it }),
                D.req(o, "message", D::str),
                D.opt(o, "data", { it }),
            )
        }
    }
}

/** Details of a failure that ended a child's foreground work. */
data class ErrorStopReason(
    /** The failure, as a JSON-RPC error object. */
    val error: Error? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ErrorStopReason {
            val o = D.obj(e)
            return ErrorStopReason(
                D.opt(o, "error", Error::decode),
            )
        }
    }
}

/** Foreground work is not in progress. The parent can give the child more work. */
data class IdleStateUpdate(
    /**
     * The _meta property is reserved by ACP for additional metadata. Implementations MUST NOT make
     * assumptions about values at these keys. Optional. Omitted and `null` mean no metadata for
     * this state snapshot.
     */
    val meta: JsonObject? = null,
    /**
     * Why foreground work stopped. The value selects one of this type's variants, which may add
     * fields of their own.
     */
    val stopReason: kotlin.String? = null,
    /** The variant part (by its tag). */
    val variant: IdleStateUpdateVariant,
) {
    internal companion object {
        fun decode(e: JsonElement): IdleStateUpdate {
            val o = D.obj(e)
            return IdleStateUpdate(
                D.opt(o, "_meta", D::obj),
                D.opt(o, "stopReason", D::str),
                (IdleStateUpdateVariant::decode)(e),
            )
        }
    }
}

/** The variants of [IdleStateUpdate]. */
sealed interface IdleStateUpdateVariant {

    /** The work ended successfully. */
    data object EndTurn : IdleStateUpdateVariant {
        internal fun decode(e: JsonElement): EndTurn = D.obj(e).let { EndTurn }
    }

    /** The work ended because the agent reached the maximum number of tokens. */
    data object MaxTokens : IdleStateUpdateVariant {
        internal fun decode(e: JsonElement): MaxTokens = D.obj(e).let { MaxTokens }
    }

    /** The work ended because the agent reached the maximum number of allowed agent requests. */
    data object MaxTurnRequests : IdleStateUpdateVariant {
        internal fun decode(e: JsonElement): MaxTurnRequests = D.obj(e).let { MaxTurnRequests }
    }

    /** The work ended because the agent refused to continue. */
    data object Refusal : IdleStateUpdateVariant {
        internal fun decode(e: JsonElement): Refusal = D.obj(e).let { Refusal }
    }

    /** The work was cancelled. */
    data object Cancelled : IdleStateUpdateVariant {
        internal fun decode(e: JsonElement): Cancelled = D.obj(e).let { Cancelled }
    }

    /** The work ended because something failed. */
    data class Error(
        /** The failure, as a JSON-RPC error object. */
        val error: dev.acphost.payloads.Error? = null,
    ) : IdleStateUpdateVariant {
        internal companion object {
            fun decode(e: JsonElement): Error {
                val o = D.obj(e)
                return Error(
                    D.opt(o, "error", dev.acphost.payloads.Error::decode),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : IdleStateUpdateVariant

    companion object {
        internal fun decode(e: JsonElement): IdleStateUpdateVariant {
            val tag = D.tag(e, "stopReason")
            val byTag: IdleStateUpdateVariant? = runCatching {
                when (tag) {
                    "end_turn" -> EndTurn.decode(e)
                    "max_tokens" -> MaxTokens.decode(e)
                    "max_turn_requests" -> MaxTurnRequests.decode(e)
                    "refusal" -> Refusal.decode(e)
                    "cancelled" -> Cancelled.decode(e)
                    "error" -> Error.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error")) return Unknown(e)
            return Unknown(e)
        }
    }
}

/** Foreground work is blocked on user action. */
data class RequiresActionStateUpdate(
    /**
     * The _meta property is reserved by ACP for additional metadata. Implementations MUST NOT make
     * assumptions about values at these keys. Optional. Omitted and `null` mean no metadata for
     * this state snapshot.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): RequiresActionStateUpdate {
            val o = D.obj(e)
            return RequiresActionStateUpdate(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** The Agent cannot currently determine foreground activity. */
data class UnknownStateUpdate(
    /**
     * The _meta property is reserved by ACP for additional metadata. Implementations MUST NOT make
     * assumptions about values at these keys. Optional. Omitted and `null` mean no metadata for
     * this state snapshot.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): UnknownStateUpdate {
            val o = D.obj(e)
            return UnknownStateUpdate(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Notification that the enclosing parent session created and owns a child session. */
data class SubagentUpdate(
    /** The opaque session ID identifying the child in all ACP messages. */
    val sessionId: kotlin.String,
    /** The parent's human-readable display title for this child. It need not be unique. */
    val title: kotlin.String? = null,
    /** The parent's human-readable description of the child's role or purpose. */
    val description: kotlin.String? = null,
    /** Client-initiated session mutations permitted for this subagent session. */
    val capabilities: SubagentSessionCapabilities? = null,
    /** Current state snapshot for the child session. */
    val state: StateUpdate? = null,
    /** The child's working directory. Must be an absolute path. */
    val cwd: kotlin.String? = null,
    /** Additional workspace roots for the child. Each path MUST be absolute. */
    val additionalDirectories: List<kotlin.String>? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SubagentUpdate {
            val o = D.obj(e)
            return SubagentUpdate(
                D.req(o, "sessionId", D::str),
                D.opt(o, "title", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "capabilities", SubagentSessionCapabilities::decode),
                D.opt(o, "state", StateUpdate::decode),
                D.opt(o, "cwd", D::str),
                D.opt(o, "additionalDirectories", { D.list(it, false, D::str) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** An upsert for an inter-session message. */
data class SessionMessage(
    /** Identifier of this message within the enclosing session's transcript. */
    val messageId: kotlin.String,
    /** The sending session. */
    val senderSessionId: kotlin.String? = null,
    /** The receiving session. */
    val recipientSessionId: kotlin.String? = null,
    /**
     * On an incoming view, the `messageId` of the same message's outgoing view in the sender's
     * transcript.
     */
    val senderMessageId: kotlin.String? = null,
    /**
     * On an outgoing view, the `messageId` of the same message's incoming view in the recipient's
     * transcript.
     */
    val recipientMessageId: kotlin.String? = null,
    /**
     * Omitted leaves content unchanged. `null` or `[]` clears it. A non-empty array replaces all
     * content.
     */
    val content: List<ContentBlock>? = null,
    /** Omitted leaves metadata unchanged. `null` removes it. */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionMessage {
            val o = D.obj(e)
            return SessionMessage(
                D.req(o, "messageId", D::str),
                D.opt(o, "senderSessionId", D::str),
                D.opt(o, "recipientSessionId", D::str),
                D.opt(o, "senderMessageId", D::str),
                D.opt(o, "recipientMessageId", D::str),
                D.opt(o, "content", { D.list(it, true, ContentBlock::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** A streamed content block of an inter-session message. */
data class SessionMessageChunk(
    /** Identifier of this message within the enclosing session's transcript. */
    val messageId: kotlin.String,
    /** A single content block appended to the message. */
    val content: ContentBlock,
    /** Optional and nullable chunk-scoped metadata. Omitted or `null` means none. */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SessionMessageChunk {
            val o = D.obj(e)
            return SessionMessageChunk(
                D.req(o, "messageId", D::str),
                D.req(o, "content", ContentBlock::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** `turn_started`: the prompt as sent. */
data class TurnStarted(
    val prompt: List<ContentBlock>,
    /**
     * `agent`: ACP v2 work the agent started by itself (no prompt; `prompt` is empty). Absent for
     * a prompt's turn.
     */
    val origin: kotlin.String? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): TurnStarted {
            val o = D.obj(e)
            return TurnStarted(
                D.req(o, "prompt", { D.list(it, false, ContentBlock::decode) }),
                D.opt(o, "origin", D::str),
            )
        }
    }
}

/**
 * `turn_ended`: the `session/prompt` result (`stopReason`, `usage`, `_meta` as the agent sent
 * them), or `stopReason: null` with the `error` that ended the turn.
 */
data class TurnEnded(
    val stopReason: StopReason? = null,
    val error: ErrorInfo? = null,
    /** Token usage, when the agent reports it (unstable in ACP, passed through as sent). */
    val usage: JsonElement? = null,
    val meta: JsonObject? = null,
    /**
     * ACP v2: the `messageId` with which the agent accepted the prompt (absent for v1 and for an
     * agent-initiated turn).
     */
    val messageId: kotlin.String? = null,
    /** ACP v2: the `state_update` to `idle` that ended the turn, as the agent sent it. */
    val state: JsonElement? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): TurnEnded {
            val o = D.obj(e)
            return TurnEnded(
                D.opt(o, "stopReason", StopReason::decode),
                D.opt(o, "error", ErrorInfo::decode),
                D.opt(o, "usage", { it }),
                D.opt(o, "_meta", D::obj),
                D.opt(o, "messageId", D::str),
                D.opt(o, "state", { it }),
            )
        }
    }
}

/** Reasons why an agent stops processing a prompt turn. */
sealed interface StopReason {
    /** The value on the wire. */
    val value: kotlin.String
    /** The turn ended successfully. */
    data object EndTurn : StopReason { override val value: kotlin.String get() = "end_turn" }
    /** The turn ended because the agent reached the maximum number of tokens. */
    data object MaxTokens : StopReason { override val value: kotlin.String get() = "max_tokens" }
    /**
     * The turn ended because the agent reached the maximum number of allowed agent requests
     * between user turns.
     */
    data object MaxTurnRequests : StopReason { override val value: kotlin.String get() = "max_turn_requests" }
    /**
     * The turn ended because the agent refused to continue. The user prompt and everything that
     * comes after it won't be included in the next prompt, so this should be reflected in the UI.
     */
    data object Refusal : StopReason { override val value: kotlin.String get() = "refusal" }
    /** The turn was cancelled by the client via `session/cancel`. */
    data object Cancelled : StopReason { override val value: kotlin.String get() = "cancelled" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : StopReason {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): StopReason = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "end_turn" -> EndTurn
            "max_tokens" -> MaxTokens
            "max_turn_requests" -> MaxTurnRequests
            "refusal" -> Refusal
            "cancelled" -> Cancelled
            else -> Unknown(e)
        }
    }
}

/** `permission_requested`. */
data class PermissionRequested(
    /** The host's id: answer with `respond_permission(requestId, optionId | null)`. */
    val requestId: kotlin.Long,
    val sessionId: kotlin.String,
    /** The request's `toolCall` merged over the tool call the session already knows. */
    val toolCall: ToolCallUpdate,
    val options: List<PermissionOption>,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): PermissionRequested {
            val o = D.obj(e)
            return PermissionRequested(
                D.req(o, "requestId", D::long),
                D.req(o, "sessionId", D::str),
                D.req(o, "toolCall", ToolCallUpdate::decode),
                D.req(o, "options", { D.list(it, false, PermissionOption::decode) }),
            )
        }
    }
}

/** An option presented to the user when requesting permission. */
data class PermissionOption(
    /** Unique identifier for this permission option. */
    val optionId: kotlin.String,
    /** Human-readable label to display to the user. */
    val name: kotlin.String,
    /** Hint about the nature of this permission option. */
    val kind: PermissionOptionKind,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): PermissionOption {
            val o = D.obj(e)
            return PermissionOption(
                D.req(o, "optionId", D::str),
                D.req(o, "name", D::str),
                D.req(o, "kind", PermissionOptionKind::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** The type of permission option being presented to the user. */
sealed interface PermissionOptionKind {
    /** The value on the wire. */
    val value: kotlin.String
    /** Allow this operation only this time. */
    data object AllowOnce : PermissionOptionKind { override val value: kotlin.String get() = "allow_once" }
    /** Allow this operation and remember the choice. */
    data object AllowAlways : PermissionOptionKind { override val value: kotlin.String get() = "allow_always" }
    /** Reject this operation only this time. */
    data object RejectOnce : PermissionOptionKind { override val value: kotlin.String get() = "reject_once" }
    /** Reject this operation and remember the choice. */
    data object RejectAlways : PermissionOptionKind { override val value: kotlin.String get() = "reject_always" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : PermissionOptionKind {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): PermissionOptionKind = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "allow_once" -> AllowOnce
            "allow_always" -> AllowAlways
            "reject_once" -> RejectOnce
            "reject_always" -> RejectAlways
            else -> Unknown(e)
        }
    }
}

/** `permission_resolved`: exactly one per `permission_requested`. */
data class PermissionResolved(
    val requestId: kotlin.Long,
    val sessionId: kotlin.String,
    /** What the agent was answered; null when nothing could be sent. */
    val outcome: JsonElement? = null,
    val optionKind: PermissionOptionKind? = null,
    val decidedBy: DecidedBy,
    /** The rule or grant that decided, when one did. */
    val rule: kotlin.String? = null,
    /**
     * Why the host's answer was not used (`decidedBy: "invalid_answer"`): the handler's error (its
     * message and stack, as the face reports it) or the unusable answer.
     */
    val reason: kotlin.String? = null,
    /**
     * Whether the answer sent reached the agent (absent when no answer was sent: `disconnected`,
     * `agent_cancelled`).
     */
    val receipt: JsonElement? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): PermissionResolved {
            val o = D.obj(e)
            return PermissionResolved(
                D.req(o, "requestId", D::long),
                D.req(o, "sessionId", D::str),
                D.opt(o, "outcome", { it }),
                D.opt(o, "optionKind", PermissionOptionKind::decode),
                D.req(o, "decidedBy", DecidedBy::decode),
                D.opt(o, "rule", D::str),
                D.opt(o, "reason", D::str),
                D.opt(o, "receipt", { it }),
            )
        }
    }
}

/** The user selected one of the provided options. */
data class SelectedPermissionOutcome(
    /** The ID of the option the user selected. */
    val optionId: kotlin.String,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): SelectedPermissionOutcome {
            val o = D.obj(e)
            return SelectedPermissionOutcome(
                D.req(o, "optionId", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Who or what settled a permission or elicitation request. */
sealed interface DecidedBy {
    /** The value on the wire. */
    val value: kotlin.String
    data object Rule : DecidedBy { override val value: kotlin.String get() = "rule" }
    data object Grant : DecidedBy { override val value: kotlin.String get() = "grant" }
    data object Host : DecidedBy { override val value: kotlin.String get() = "host" }
    data object Timeout : DecidedBy { override val value: kotlin.String get() = "timeout" }
    data object Cancelled : DecidedBy { override val value: kotlin.String get() = "cancelled" }
    data object Disconnected : DecidedBy { override val value: kotlin.String get() = "disconnected" }
    data object InvalidAnswer : DecidedBy { override val value: kotlin.String get() = "invalid_answer" }
    data object AgentCancelled : DecidedBy { override val value: kotlin.String get() = "agent_cancelled" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : DecidedBy {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): DecidedBy = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "rule" -> Rule
            "grant" -> Grant
            "host" -> Host
            "timeout" -> Timeout
            "cancelled" -> Cancelled
            "disconnected" -> Disconnected
            "invalid_answer" -> InvalidAnswer
            "agent_cancelled" -> AgentCancelled
            else -> Unknown(e)
        }
    }
}

/** What became of a request when an answer was rejected. */
sealed interface RequestState {
    /** The value on the wire. */
    val value: kotlin.String
    /** Still waiting for an answer: another answer may be given. */
    data object Pending : RequestState { override val value: kotlin.String get() = "pending" }
    /** Already resolved, withdrawn by the agent, unknown, or its agent is gone. */
    data object Unavailable : RequestState { override val value: kotlin.String get() = "unavailable" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : RequestState {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): RequestState = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "pending" -> Pending
            "unavailable" -> Unavailable
            else -> Unknown(e)
        }
    }
}

/** `elicitation_requested`. */
data class ElicitationRequested(
    /** The host's id: answer with `respond_elicitation(requestId, …)`. */
    val requestId: kotlin.Long,
    val agent: kotlin.Long,
    val sessionId: kotlin.String? = null,
    val toolCallId: kotlin.String? = null,
    /** The id of the host's request in flight this elicitation belongs to (request scope). */
    val scopeRequestId: JsonElement? = null,
    /**
     * False when `scopeRequestId` names none of the host's requests in flight (the agent chose the
     * id); true otherwise (session scope, or a request of the host's in flight).
     */
    val scopeKnown: kotlin.Boolean,
    val turn: kotlin.Long? = null,
    val message: kotlin.String,
    val mode: ElicitationMode,
    /** `form` mode: the JSON schema of the requested fields. */
    val requestedSchema: ElicitationSchema? = null,
    /** `url` mode. */
    val elicitationId: kotlin.String? = null,
    /** `url` mode: shown to the user in full, never opened by the host. */
    val url: kotlin.String? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): ElicitationRequested {
            val o = D.obj(e)
            return ElicitationRequested(
                D.req(o, "requestId", D::long),
                D.req(o, "agent", D::long),
                D.opt(o, "sessionId", D::str),
                D.opt(o, "toolCallId", D::str),
                D.opt(o, "scopeRequestId", { it }),
                D.req(o, "scopeKnown", D::bool),
                D.opt(o, "turn", D::long),
                D.req(o, "message", D::str),
                D.req(o, "mode", ElicitationMode::decode),
                D.opt(o, "requestedSchema", ElicitationSchema::decode),
                D.opt(o, "elicitationId", D::str),
                D.opt(o, "url", D::str),
            )
        }
    }
}

/** The mode of an elicitation. */
sealed interface ElicitationMode {
    /** The value on the wire. */
    val value: kotlin.String
    data object Form : ElicitationMode { override val value: kotlin.String get() = "form" }
    data object Url : ElicitationMode { override val value: kotlin.String get() = "url" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ElicitationMode {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): ElicitationMode = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "form" -> Form
            "url" -> Url
            else -> Unknown(e)
        }
    }
}

/** Type-safe elicitation schema for requesting structured user input. */
data class ElicitationSchema(
    /** Type discriminator. Always `"object"`. */
    val type: ElicitationSchemaType? = null,
    /** Optional title for the schema. */
    val title: kotlin.String? = null,
    /** Property definitions (MUST be primitive types). */
    val properties: JsonObject? = null,
    /** List of required property names. */
    val required: List<kotlin.String>? = null,
    /** Optional description of what this schema represents. */
    val description: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): ElicitationSchema {
            val o = D.obj(e)
            return ElicitationSchema(
                D.opt(o, "type", ElicitationSchemaType::decode),
                D.opt(o, "title", D::str),
                D.opt(o, "properties", D::obj),
                D.opt(o, "required", { D.list(it, false, D::str) }),
                D.opt(o, "description", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Type discriminator for elicitation schemas. */
sealed interface ElicitationSchemaType {
    /** The value on the wire. */
    val value: kotlin.String
    /** Object schema type. */
    data object Object : ElicitationSchemaType { override val value: kotlin.String get() = "object" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ElicitationSchemaType {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): ElicitationSchemaType = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "object" -> Object
            else -> Unknown(e)
        }
    }
}

/** Property schema for elicitation form fields. */
sealed interface ElicitationPropertySchema {

    /** String property (or single-select enum when `enum`/`oneOf` is set). */
    data class String(
        /** Optional title for the property. */
        val title: kotlin.String? = null,
        /** Human-readable description. */
        val description: kotlin.String? = null,
        /** Minimum string length. */
        val minLength: kotlin.Long? = null,
        /** Maximum string length. */
        val maxLength: kotlin.Long? = null,
        /** Pattern the string must match. */
        val pattern: kotlin.String? = null,
        /** String format. */
        val format: dev.acphost.payloads.StringFormat? = null,
        /** Default value. */
        val default: kotlin.String? = null,
        /**
         * Enum values for untitled single-select enums. Optional. Omitted and `null` are
         * equivalent and mean no untitled single-select choices are declared by `enum`.
         */
        val enum: List<kotlin.String>? = null,
        /**
         * Titled enum options for titled single-select enums. Optional. Omitted and `null` are
         * equivalent and mean no titled single-select choices are declared by `oneOf`.
         */
        val oneOf: List<dev.acphost.payloads.EnumOption>? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ElicitationPropertySchema {
        internal companion object {
            fun decode(e: JsonElement): String {
                val o = D.obj(e)
                return String(
                    D.opt(o, "title", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "minLength", D::long),
                    D.opt(o, "maxLength", D::long),
                    D.opt(o, "pattern", D::str),
                    D.opt(o, "format", dev.acphost.payloads.StringFormat::decode),
                    D.opt(o, "default", D::str),
                    D.opt(o, "enum", { D.list(it, false, D::str) }),
                    D.opt(o, "oneOf", { D.list(it, false, dev.acphost.payloads.EnumOption::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Number (floating-point) property. */
    data class Number(
        /** Optional title for the property. */
        val title: kotlin.String? = null,
        /** Human-readable description. */
        val description: kotlin.String? = null,
        /** Minimum value (inclusive). */
        val minimum: kotlin.Double? = null,
        /** Maximum value (inclusive). */
        val maximum: kotlin.Double? = null,
        /** Default value. */
        val default: kotlin.Double? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ElicitationPropertySchema {
        internal companion object {
            fun decode(e: JsonElement): Number {
                val o = D.obj(e)
                return Number(
                    D.opt(o, "title", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "minimum", D::double),
                    D.opt(o, "maximum", D::double),
                    D.opt(o, "default", D::double),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Integer property. */
    data class Integer(
        /** Optional title for the property. */
        val title: kotlin.String? = null,
        /** Human-readable description. */
        val description: kotlin.String? = null,
        /** Minimum value (inclusive). */
        val minimum: kotlin.Long? = null,
        /** Maximum value (inclusive). */
        val maximum: kotlin.Long? = null,
        /** Default value. */
        val default: kotlin.Long? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ElicitationPropertySchema {
        internal companion object {
            fun decode(e: JsonElement): Integer {
                val o = D.obj(e)
                return Integer(
                    D.opt(o, "title", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "minimum", D::long),
                    D.opt(o, "maximum", D::long),
                    D.opt(o, "default", D::long),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Boolean property. */
    data class Boolean(
        /** Optional title for the property. */
        val title: kotlin.String? = null,
        /** Human-readable description. */
        val description: kotlin.String? = null,
        /** Default value. */
        val default: kotlin.Boolean? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ElicitationPropertySchema {
        internal companion object {
            fun decode(e: JsonElement): Boolean {
                val o = D.obj(e)
                return Boolean(
                    D.opt(o, "title", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "default", D::bool),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Multi-select array property. */
    data class Array(
        /** Optional title for the property. */
        val title: kotlin.String? = null,
        /** Human-readable description. */
        val description: kotlin.String? = null,
        /** Minimum number of items to select. */
        val minItems: kotlin.Long? = null,
        /** Maximum number of items to select. */
        val maxItems: kotlin.Long? = null,
        /** The items definition describing allowed values. */
        val items: dev.acphost.payloads.MultiSelectItems,
        /** Default selected values. */
        val default: List<kotlin.String>? = null,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : ElicitationPropertySchema {
        internal companion object {
            fun decode(e: JsonElement): Array {
                val o = D.obj(e)
                return Array(
                    D.opt(o, "title", D::str),
                    D.opt(o, "description", D::str),
                    D.opt(o, "minItems", D::long),
                    D.opt(o, "maxItems", D::long),
                    D.req(o, "items", dev.acphost.payloads.MultiSelectItems::decode),
                    D.opt(o, "default", { D.list(it, true, D::str) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ElicitationPropertySchema

    companion object {
        internal fun decode(e: JsonElement): ElicitationPropertySchema {
            val tag = D.tag(e, "type")
            val byTag: ElicitationPropertySchema? = runCatching {
                when (tag) {
                    "string" -> String.decode(e)
                    "number" -> Number.decode(e)
                    "integer" -> Integer.decode(e)
                    "boolean" -> Boolean.decode(e)
                    "array" -> Array.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("string", "number", "integer", "boolean", "array")) return Unknown(e)
            return Unknown(e)
        }
    }
}

/** String format types for string properties in elicitation schemas. */
sealed interface StringFormat {
    /** The value on the wire. */
    val value: kotlin.String
    /** Email address format. */
    data object Email : StringFormat { override val value: kotlin.String get() = "email" }
    /** URI format. */
    data object Uri : StringFormat { override val value: kotlin.String get() = "uri" }
    /** Date format (YYYY-MM-DD). */
    data object Date : StringFormat { override val value: kotlin.String get() = "date" }
    /** Date-time format (ISO 8601). */
    data object DateTime : StringFormat { override val value: kotlin.String get() = "date-time" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : StringFormat {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): StringFormat = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "email" -> Email
            "uri" -> Uri
            "date" -> Date
            "date-time" -> DateTime
            else -> Unknown(e)
        }
    }
}

/** A titled enum option with a const value, human-readable title, and optional description. */
data class EnumOption(
    /** The constant value for this option. */
    val const: kotlin.String,
    /** Human-readable title for this option. */
    val title: kotlin.String,
    /** Human-readable description. */
    val description: kotlin.String? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): EnumOption {
            val o = D.obj(e)
            return EnumOption(
                D.req(o, "const", D::str),
                D.req(o, "title", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Schema for string properties in an elicitation form. */
data class StringPropertySchema(
    /** Optional title for the property. */
    val title: kotlin.String? = null,
    /** Human-readable description. */
    val description: kotlin.String? = null,
    /** Minimum string length. */
    val minLength: kotlin.Long? = null,
    /** Maximum string length. */
    val maxLength: kotlin.Long? = null,
    /** Pattern the string must match. */
    val pattern: kotlin.String? = null,
    /** String format. */
    val format: StringFormat? = null,
    /** Default value. */
    val default: kotlin.String? = null,
    /**
     * Enum values for untitled single-select enums. Optional. Omitted and `null` are equivalent
     * and mean no untitled single-select choices are declared by `enum`.
     */
    val enum: List<kotlin.String>? = null,
    /**
     * Titled enum options for titled single-select enums. Optional. Omitted and `null` are
     * equivalent and mean no titled single-select choices are declared by `oneOf`.
     */
    val oneOf: List<EnumOption>? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): StringPropertySchema {
            val o = D.obj(e)
            return StringPropertySchema(
                D.opt(o, "title", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "minLength", D::long),
                D.opt(o, "maxLength", D::long),
                D.opt(o, "pattern", D::str),
                D.opt(o, "format", StringFormat::decode),
                D.opt(o, "default", D::str),
                D.opt(o, "enum", { D.list(it, false, D::str) }),
                D.opt(o, "oneOf", { D.list(it, false, EnumOption::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Schema for number (floating-point) properties in an elicitation form. */
data class NumberPropertySchema(
    /** Optional title for the property. */
    val title: kotlin.String? = null,
    /** Human-readable description. */
    val description: kotlin.String? = null,
    /** Minimum value (inclusive). */
    val minimum: kotlin.Double? = null,
    /** Maximum value (inclusive). */
    val maximum: kotlin.Double? = null,
    /** Default value. */
    val default: kotlin.Double? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): NumberPropertySchema {
            val o = D.obj(e)
            return NumberPropertySchema(
                D.opt(o, "title", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "minimum", D::double),
                D.opt(o, "maximum", D::double),
                D.opt(o, "default", D::double),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Schema for integer properties in an elicitation form. */
data class IntegerPropertySchema(
    /** Optional title for the property. */
    val title: kotlin.String? = null,
    /** Human-readable description. */
    val description: kotlin.String? = null,
    /** Minimum value (inclusive). */
    val minimum: kotlin.Long? = null,
    /** Maximum value (inclusive). */
    val maximum: kotlin.Long? = null,
    /** Default value. */
    val default: kotlin.Long? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): IntegerPropertySchema {
            val o = D.obj(e)
            return IntegerPropertySchema(
                D.opt(o, "title", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "minimum", D::long),
                D.opt(o, "maximum", D::long),
                D.opt(o, "default", D::long),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Schema for boolean properties in an elicitation form. */
data class BooleanPropertySchema(
    /** Optional title for the property. */
    val title: kotlin.String? = null,
    /** Human-readable description. */
    val description: kotlin.String? = null,
    /** Default value. */
    val default: kotlin.Boolean? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): BooleanPropertySchema {
            val o = D.obj(e)
            return BooleanPropertySchema(
                D.opt(o, "title", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "default", D::bool),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Items for a multi-select (array) property schema. */
sealed interface MultiSelectItems {

    /** Multi-select string items with plain string values. */
    data class String(
        /** Allowed enum values. */
        val enum: List<kotlin.String>,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : MultiSelectItems {
        internal companion object {
            fun decode(e: JsonElement): String {
                val o = D.obj(e)
                return String(
                    D.req(o, "enum", { D.list(it, false, D::str) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** Titled multi-select items with human-readable labels. */
    data class TitledMultiSelectItems(
        /** Titled enum options. */
        val anyOf: List<dev.acphost.payloads.EnumOption>,
        /**
         * The _meta property is reserved by ACP to allow clients and agents to attach additional
         * metadata to their interactions. Implementations MUST NOT make assumptions about values
         * at these keys.
         */
        val meta: JsonObject? = null,
    ) : MultiSelectItems {
        internal companion object {
            fun decode(e: JsonElement): TitledMultiSelectItems {
                val o = D.obj(e)
                return TitledMultiSelectItems(
                    D.req(o, "anyOf", { D.list(it, false, dev.acphost.payloads.EnumOption::decode) }),
                    D.opt(o, "_meta", D::obj),
                )
            }
        }
    }

    /** A variant this version does not know, or one that did not decode: [raw] as sent. */
    data class Unknown(val raw: JsonElement) : MultiSelectItems

    companion object {
        internal fun decode(e: JsonElement): MultiSelectItems {
            val tag = D.tag(e, "type")
            val byTag: MultiSelectItems? = runCatching {
                when (tag) {
                    "string" -> String.decode(e)
                    else -> null
                }
            }.getOrNull()
            if (byTag != null) return byTag
            if (tag in setOf("string")) return Unknown(e)
            runCatching { TitledMultiSelectItems.decode(e) }.getOrNull()?.let { return it }
            return Unknown(e)
        }
    }
}

/** String item schema for multi-select enum properties. */
data class StringMultiSelectItems(
    /** Allowed enum values. */
    val enum: List<kotlin.String>,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): StringMultiSelectItems {
            val o = D.obj(e)
            return StringMultiSelectItems(
                D.req(o, "enum", { D.list(it, false, D::str) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Items definition for titled multi-select enum properties. */
data class TitledMultiSelectItems(
    /** Titled enum options. */
    val anyOf: List<EnumOption>,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): TitledMultiSelectItems {
            val o = D.obj(e)
            return TitledMultiSelectItems(
                D.req(o, "anyOf", { D.list(it, false, EnumOption::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Schema for multi-select (array) properties in an elicitation form. */
data class MultiSelectPropertySchema(
    /** Optional title for the property. */
    val title: kotlin.String? = null,
    /** Human-readable description. */
    val description: kotlin.String? = null,
    /** Minimum number of items to select. */
    val minItems: kotlin.Long? = null,
    /** Maximum number of items to select. */
    val maxItems: kotlin.Long? = null,
    /** The items definition describing allowed values. */
    val items: MultiSelectItems,
    /** Default selected values. */
    val default: List<kotlin.String>? = null,
    /**
     * The _meta property is reserved by ACP to allow clients and agents to attach additional
     * metadata to their interactions. Implementations MUST NOT make assumptions about values at
     * these keys.
     */
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): MultiSelectPropertySchema {
            val o = D.obj(e)
            return MultiSelectPropertySchema(
                D.opt(o, "title", D::str),
                D.opt(o, "description", D::str),
                D.opt(o, "minItems", D::long),
                D.opt(o, "maxItems", D::long),
                D.req(o, "items", MultiSelectItems::decode),
                D.opt(o, "default", { D.list(it, true, D::str) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** `elicitation_resolved`: exactly one per `elicitation_requested`. */
data class ElicitationResolved(
    val requestId: kotlin.Long,
    val sessionId: kotlin.String? = null,
    /** Null when nothing could be sent (`disconnected`, `agent_cancelled`). */
    val action: ElicitationActionKind? = null,
    val decidedBy: DecidedBy,
    /** Accepted forms: the names of the fields sent (their values are not copied here). */
    val fields: List<kotlin.String>? = null,
    /** Why an answer was invalid. */
    val reason: kotlin.String? = null,
    /** Whether the answer sent reached the agent (absent when no answer was sent). */
    val receipt: JsonElement? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): ElicitationResolved {
            val o = D.obj(e)
            return ElicitationResolved(
                D.req(o, "requestId", D::long),
                D.opt(o, "sessionId", D::str),
                D.opt(o, "action", ElicitationActionKind::decode),
                D.req(o, "decidedBy", DecidedBy::decode),
                D.opt(o, "fields", { D.list(it, false, D::str) }),
                D.opt(o, "reason", D::str),
                D.opt(o, "receipt", { it }),
            )
        }
    }
}

/** The action an elicitation was answered with (the `action` of ACP's `ElicitationAction`). */
sealed interface ElicitationActionKind {
    /** The value on the wire. */
    val value: kotlin.String
    data object Accept : ElicitationActionKind { override val value: kotlin.String get() = "accept" }
    data object Decline : ElicitationActionKind { override val value: kotlin.String get() = "decline" }
    data object Cancel : ElicitationActionKind { override val value: kotlin.String get() = "cancel" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : ElicitationActionKind {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): ElicitationActionKind = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "accept" -> Accept
            "decline" -> Decline
            "cancel" -> Cancel
            else -> Unknown(e)
        }
    }
}

/** `elicitation_completed`. */
data class ElicitationCompleted(
    val elicitationId: kotlin.String,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): ElicitationCompleted {
            val o = D.obj(e)
            return ElicitationCompleted(
                D.req(o, "elicitationId", D::str),
            )
        }
    }
}

/** `fs_read`. */
data class FsRead(
    val path: kotlin.String,
    val line: kotlin.Long? = null,
    val limit: kotlin.Long? = null,
    val outcome: kotlin.String,
    /** `ok`: the size of the text served. */
    val bytes: kotlin.Long? = null,
    /** `denied`: the policy rule. */
    val rule: kotlin.String? = null,
    /** Failures: a message. */
    val error: kotlin.String? = null,
    /** Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts"). */
    val receipt: JsonElement? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): FsRead {
            val o = D.obj(e)
            return FsRead(
                D.req(o, "path", D::str),
                D.opt(o, "line", D::long),
                D.opt(o, "limit", D::long),
                D.req(o, "outcome", D::str),
                D.opt(o, "bytes", D::long),
                D.opt(o, "rule", D::str),
                D.opt(o, "error", D::str),
                D.opt(o, "receipt", { it }),
            )
        }
    }
}

/** `fs_write`. */
data class FsWrite(
    val path: kotlin.String,
    /** The content's size. */
    val bytes: kotlin.Long? = null,
    val outcome: kotlin.String,
    val rule: kotlin.String? = null,
    val error: kotlin.String? = null,
    /** Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts"). */
    val receipt: JsonElement? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): FsWrite {
            val o = D.obj(e)
            return FsWrite(
                D.req(o, "path", D::str),
                D.opt(o, "bytes", D::long),
                D.req(o, "outcome", D::str),
                D.opt(o, "rule", D::str),
                D.opt(o, "error", D::str),
                D.opt(o, "receipt", { it }),
            )
        }
    }
}

/** `terminal_created`. */
data class TerminalCreated(
    val command: kotlin.String,
    val args: List<kotlin.String>? = null,
    val cwd: kotlin.String? = null,
    val outcome: kotlin.String,
    /** `ok` only. */
    val terminalId: kotlin.String? = null,
    val rule: kotlin.String? = null,
    val error: kotlin.String? = null,
    /** Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts"). */
    val receipt: JsonElement? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): TerminalCreated {
            val o = D.obj(e)
            return TerminalCreated(
                D.req(o, "command", D::str),
                D.opt(o, "args", { D.list(it, false, D::str) }),
                D.opt(o, "cwd", D::str),
                D.req(o, "outcome", D::str),
                D.opt(o, "terminalId", D::str),
                D.opt(o, "rule", D::str),
                D.opt(o, "error", D::str),
                D.opt(o, "receipt", { it }),
            )
        }
    }
}

/** `terminal_exited`. */
data class TerminalExited(
    val terminalId: kotlin.String,
    val exitCode: kotlin.Long? = null,
    val signal: kotlin.String? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): TerminalExited {
            val o = D.obj(e)
            return TerminalExited(
                D.req(o, "terminalId", D::str),
                D.opt(o, "exitCode", D::long),
                D.opt(o, "signal", D::str),
            )
        }
    }
}

/** `agent_stderr`: one line of the agent's stderr (lossy UTF-8). */
data class AgentStderr(
    val line: kotlin.String,
    /** A line over 64 KiB is reported empty, with its size here. */
    val omittedBytes: kotlin.Long? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): AgentStderr {
            val o = D.obj(e)
            return AgentStderr(
                D.req(o, "line", D::str),
                D.opt(o, "omittedBytes", D::long),
            )
        }
    }
}

/** `protocol_noise`: a non-JSON line on the agent's stdout, skipped. */
data class ProtocolNoise(
    /** Its first 1 KiB. */
    val line: kotlin.String,
    val bytes: kotlin.Long,
    /** Noise lines so far from this agent. */
    val count: kotlin.Long,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): ProtocolNoise {
            val o = D.obj(e)
            return ProtocolNoise(
                D.req(o, "line", D::str),
                D.req(o, "bytes", D::long),
                D.req(o, "count", D::long),
            )
        }
    }
}

/**
 * `protocol_error`: something the agent sent broke the protocol; ignored or repaired. Further
 * fields depend on `reason` (`id`, `bytes`, `limit`, `method`, `result`, `error`, …).
 */
data class ProtocolError(
    /**
     * `line_too_long`, `invalid_utf8`, `unknown_response_id`, `duplicate_response`,
     * `invalid_message`, `invalid_params`, `duplicate_request_id`, `stdin_stalled`,
     * `late_response`, …
     */
    val reason: kotlin.String,
    val message: kotlin.String,
    val id: JsonElement? = null,
    val method: kotlin.String? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): ProtocolError {
            val o = D.obj(e)
            return ProtocolError(
                D.req(o, "reason", D::str),
                D.req(o, "message", D::str),
                D.opt(o, "id", { it }),
                D.opt(o, "method", D::str),
            )
        }
    }
}

/** `ext_notification`: a notification the host does not handle. */
data class ExtNotification(
    val method: kotlin.String,
    val params: JsonElement? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): ExtNotification {
            val o = D.obj(e)
            return ExtNotification(
                D.req(o, "method", D::str),
                D.opt(o, "params", { it }),
            )
        }
    }
}

/** `ext_request`: an extension request the embedder's handler served. */
data class ExtRequest(
    val method: kotlin.String,
    /** `ok`, `error` or `cancelled`. */
    val outcome: kotlin.String,
    val error: RpcErrorInfo? = null,
    /** Whether the answer sent reached the agent (docs/EVENTS.md, "Delivery receipts"). */
    val receipt: JsonElement? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): ExtRequest {
            val o = D.obj(e)
            return ExtRequest(
                D.req(o, "method", D::str),
                D.req(o, "outcome", D::str),
                D.opt(o, "error", RpcErrorInfo::decode),
                D.opt(o, "receipt", { it }),
            )
        }
    }
}

/** A JSON-RPC error object as the agent was answered. */
data class RpcErrorInfo(
    val code: kotlin.Long,
    val message: kotlin.String,
) {
    internal companion object {
        fun decode(e: JsonElement): RpcErrorInfo {
            val o = D.obj(e)
            return RpcErrorInfo(
                D.req(o, "code", D::long),
                D.req(o, "message", D::str),
            )
        }
    }
}

/** `wire` (opt-in): every JSON-RPC message in or out. */
data class Wire(
    val direction: WireDirection,
    val message: JsonElement,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): Wire {
            val o = D.obj(e)
            return Wire(
                D.req(o, "direction", WireDirection::decode),
                D.req(o, "message", { it }),
            )
        }
    }
}

/** Direction of a `wire` event's message. */
sealed interface WireDirection {
    /** The value on the wire. */
    val value: kotlin.String
    data object In : WireDirection { override val value: kotlin.String get() = "in" }
    data object Out : WireDirection { override val value: kotlin.String get() = "out" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : WireDirection {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): WireDirection = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "in" -> In
            "out" -> Out
            else -> Unknown(e)
        }
    }
}

/** `call_completed` (C ABI only): the outcome of an asynchronous call. */
data class CallCompleted(
    val call: kotlin.Long,
    val ok: kotlin.Boolean,
    val result: JsonElement? = null,
    val error: ErrorInfo? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): CallCompleted {
            val o = D.obj(e)
            return CallCompleted(
                D.req(o, "call", D::long),
                D.req(o, "ok", D::bool),
                D.opt(o, "result", { it }),
                D.opt(o, "error", ErrorInfo::decode),
            )
        }
    }
}

/**
 * `service_requested` (C ABI only, with `"services": "events"`): an agent's fs/terminal/extension
 * request or a terminal login for the embedder, answered by `requestId` (`acph_service_respond` /
 * `acph_service_fail`).
 */
data class ServiceRequested(
    val requestId: kotlin.Long,
    /**
     * `fs/read_text_file`, `fs/write_text_file`, `terminal&#47;*`, a `_` extension method, or
     * `acph/terminal_auth`.
     */
    val method: kotlin.String,
    /** The request's params (for fs: `{"sessionId", "path", ...}` after the host's checks). */
    val params: JsonElement,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): ServiceRequested {
            val o = D.obj(e)
            return ServiceRequested(
                D.req(o, "requestId", D::long),
                D.req(o, "method", D::str),
                D.req(o, "params", { it }),
            )
        }
    }
}

/**
 * `agent_restarting`: a supervised agent's process ended (or the previous restart attempt failed);
 * attempt `attempt` of `maxRestarts` starts after `delayMs`.
 */
data class AgentRestarting(
    val attempt: kotlin.Long,
    val maxRestarts: kotlin.Long,
    val delayMs: kotlin.Long,
    /** Why: `agent_exited` with the dead process's status, or the failed attempt's error. */
    val error: ErrorInfo,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): AgentRestarting {
            val o = D.obj(e)
            return AgentRestarting(
                D.req(o, "attempt", D::long),
                D.req(o, "maxRestarts", D::long),
                D.req(o, "delayMs", D::long),
                D.req(o, "error", ErrorInfo::decode),
            )
        }
    }
}

/**
 * `agent_restarted`: the new process is the agent's connection; the embedder's handles reach it.
 * Follows the new process's `agent_ready` and the reopened sessions' `session_opened`.
 */
data class AgentRestarted(
    val attempt: kotlin.Long,
    val pid: kotlin.Long? = null,
    val recovered: List<RecoveredSession>,
    /** Session ids that could not be reopened (each also has a `session_lost` event). */
    val lost: List<kotlin.String>,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): AgentRestarted {
            val o = D.obj(e)
            return AgentRestarted(
                D.req(o, "attempt", D::long),
                D.opt(o, "pid", D::long),
                D.req(o, "recovered", { D.list(it, false, RecoveredSession::decode) }),
                D.req(o, "lost", { D.list(it, false, D::str) }),
            )
        }
    }
}

/** How a session came back after a restart. */
data class RecoveredSession(
    val sessionId: kotlin.String,
    /** `resume` or `load` (a load replays the conversation as `replay: true` updates). */
    val via: kotlin.String,
) {
    internal companion object {
        fun decode(e: JsonElement): RecoveredSession {
            val o = D.obj(e)
            return RecoveredSession(
                D.req(o, "sessionId", D::str),
                D.req(o, "via", D::str),
            )
        }
    }
}

/**
 * `agent_failed`: the supervisor gave up after `attempts` restarts; the agent stays down. Always
 * the agent's last event.
 */
data class AgentFailed(
    val attempts: kotlin.Long,
    /** Why the last attempt (or, with `maxRestarts: 0`, the process) failed. */
    val error: ErrorInfo,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): AgentFailed {
            val o = D.obj(e)
            return AgentFailed(
                D.req(o, "attempts", D::long),
                D.req(o, "error", ErrorInfo::decode),
            )
        }
    }
}

/**
 * `session_lost`: a session of a restarted agent that could not be reopened (the agent offers
 * neither resume nor load, or refused); its handle no longer reaches a session.
 */
data class SessionLost(
    val sessionId: kotlin.String,
    val error: ErrorInfo,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): SessionLost {
            val o = D.obj(e)
            return SessionLost(
                D.req(o, "sessionId", D::str),
                D.req(o, "error", ErrorInfo::decode),
            )
        }
    }
}

/**
 * `progress`: a slow step of the host's (`phase`: `spawn`, `handshake`, `login`) started, is still
 * waiting (every 5 s), is done or failed. The agent has no session yet during these.
 */
data class Progress(
    /**
     * `spawn`, `handshake`, `login` (registry installs report `download` and `extract` to their
     * own callback).
     */
    val phase: kotlin.String,
    /** `started`, `waiting`, `done`, `failed`. */
    val stage: kotlin.String,
    /** Since the step started. */
    val elapsedMs: kotlin.Long,
    val bytes: kotlin.Long? = null,
    /** What failed, or what is being waited for. */
    val message: kotlin.String? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): Progress {
            val o = D.obj(e)
            return Progress(
                D.req(o, "phase", D::str),
                D.req(o, "stage", D::str),
                D.req(o, "elapsedMs", D::long),
                D.opt(o, "bytes", D::long),
                D.opt(o, "message", D::str),
            )
        }
    }
}

/**
 * `steer`: one step of a steer's life. `prompt` is the steer's content on every outcome but
 * `prompted` (its `turn_started` carries it).
 */
data class Steer(
    /** The host's id for the steer (per host, increasing; `SteerResult::steer`). */
    val steer: kotlin.Long,
    val outcome: SteerOutcome,
    val prompt: List<ContentBlock>? = null,
    /** Why it was rejected, or the agent's `reason` for `promptRequired`/`failed`. */
    val reason: kotlin.String? = null,
    /** Why it failed (`failed` only). */
    val error: ErrorInfo? = null,
) : EventPayload {
    internal companion object {
        fun decode(e: JsonElement): Steer {
            val o = D.obj(e)
            return Steer(
                D.req(o, "steer", D::long),
                D.req(o, "outcome", SteerOutcome::decode),
                D.opt(o, "prompt", { D.list(it, false, ContentBlock::decode) }),
                D.opt(o, "reason", D::str),
                D.opt(o, "error", ErrorInfo::decode),
            )
        }
    }
}

/** What became of a steer (`Session::steer`). */
sealed interface SteerOutcome {
    /** The value on the wire. */
    val value: kotlin.String
    /** The agent took it into the running turn (the event's `turn`). */
    data object Injected : SteerOutcome { override val value: kotlin.String get() = "injected" }
    /**
     * The agent started a turn of its own for it (it ignored `idleBehavior`): no
     * `turn_started`/`turn_ended` frame that turn, its updates carry no `turn`.
     */
    data object StartedNewTurn : SteerOutcome { override val value: kotlin.String get() = "started_new_turn" }
    /** It waits as the session's next prompt (no steering, or the agent asked for a prompt). */
    data object Queued : SteerOutcome { override val value: kotlin.String get() = "queued" }
    /** Sent as the session's next prompt: its own turn (the event's `turn`) follows. */
    data object Prompted : SteerOutcome { override val value: kotlin.String get() = "prompted" }
    /** Dropped unsent: `reason` says why (`cancelled`, `closed`, `agent_exited`, `shutdown`). */
    data object Rejected : SteerOutcome { override val value: kotlin.String get() = "rejected" }
    /** The agent did not take it: `error` says why. */
    data object Failed : SteerOutcome { override val value: kotlin.String get() = "failed" }
    /** A value this version does not know (a newer agent): [raw] as sent. */
    data class Unknown(val raw: JsonElement) : SteerOutcome {
        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()
    }
    companion object {
        internal fun decode(e: JsonElement): SteerOutcome = when ((e as? JsonPrimitive)?.takeIf { it.isString }?.content) {
            "injected" -> Injected
            "started_new_turn" -> StartedNewTurn
            "queued" -> Queued
            "prompted" -> Prompted
            "rejected" -> Rejected
            "failed" -> Failed
            else -> Unknown(e)
        }
    }
}

/**
 * `user_message`, `agent_message`, `agent_thought`: a message created or patched (a later update
 * with the same `messageId` and kind patches it; chunks append to it).
 */
data class V2Message(
    /** Unique per message kind within the session. */
    val messageId: kotlin.String,
    /** The message's whole content (replaces what the chunks built up). */
    val content: List<ContentBlock>? = null,
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): V2Message {
            val o = D.obj(e)
            return V2Message(
                D.req(o, "messageId", D::str),
                D.opt(o, "content", { D.list(it, false, ContentBlock::decode) }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** `tool_call_content_chunk`: one content item appended to a tool call's `content`. */
data class V2ToolCallContentChunk(
    val toolCallId: kotlin.String,
    val content: ToolCallContent,
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): V2ToolCallContentChunk {
            val o = D.obj(e)
            return V2ToolCallContentChunk(
                D.req(o, "toolCallId", D::str),
                D.req(o, "content", ToolCallContent::decode),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/**
 * `terminal_update`: an agent-owned terminal created or patched (the agent runs it; the host
 * serves no terminal under v2).
 */
data class V2TerminalUpdate(
    val terminalId: kotlin.String,
    val command: kotlin.String? = null,
    val cwd: kotlin.String? = null,
    val output: V2TerminalOutput? = null,
    /** Set once the process ended. */
    val exitStatus: V2TerminalExitStatus? = null,
    val size: V2TerminalSize? = null,
    /** What the client may do with the terminal (e.g. `cancel`), as the agent sent it. */
    val capabilities: JsonElement? = null,
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): V2TerminalUpdate {
            val o = D.obj(e)
            return V2TerminalUpdate(
                D.req(o, "terminalId", D::str),
                D.opt(o, "command", D::str),
                D.opt(o, "cwd", D::str),
                D.opt(o, "output", V2TerminalOutput::decode),
                D.opt(o, "exitStatus", V2TerminalExitStatus::decode),
                D.opt(o, "size", V2TerminalSize::decode),
                D.opt(o, "capabilities", { it }),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** An agent-owned terminal's output snapshot (replaces what the chunks built up). */
data class V2TerminalOutput(
    /** The output bytes, base64. */
    val data: kotlin.String,
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): V2TerminalOutput {
            val o = D.obj(e)
            return V2TerminalOutput(
                D.req(o, "data", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** How an agent-owned terminal's process ended. */
data class V2TerminalExitStatus(
    val exitCode: kotlin.Long? = null,
    /** The signal that ended it, e.g. `SIGTERM`. */
    val signal: kotlin.String? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): V2TerminalExitStatus {
            val o = D.obj(e)
            return V2TerminalExitStatus(
                D.opt(o, "exitCode", D::long),
                D.opt(o, "signal", D::str),
            )
        }
    }
}

/** An agent-owned terminal's size in character cells. */
data class V2TerminalSize(
    val cols: kotlin.Long,
    val rows: kotlin.Long,
) {
    internal companion object {
        fun decode(e: JsonElement): V2TerminalSize {
            val o = D.obj(e)
            return V2TerminalSize(
                D.req(o, "cols", D::long),
                D.req(o, "rows", D::long),
            )
        }
    }
}

/** `terminal_output_chunk`: bytes appended to an agent-owned terminal's output. */
data class V2TerminalOutputChunk(
    val terminalId: kotlin.String,
    /** The bytes, base64 (each chunk encoded on its own). */
    val data: kotlin.String,
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): V2TerminalOutputChunk {
            val o = D.obj(e)
            return V2TerminalOutputChunk(
                D.req(o, "terminalId", D::str),
                D.req(o, "data", D::str),
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/**
 * `replay_complete`: the history replay a `session/resume` asked for is over; later updates are
 * live.
 */
data class V2ReplayComplete(
    val meta: JsonObject? = null,
) {
    internal companion object {
        fun decode(e: JsonElement): V2ReplayComplete {
            val o = D.obj(e)
            return V2ReplayComplete(
                D.opt(o, "_meta", D::obj),
            )
        }
    }
}

/** Thrown inside decoders only; callers see `Unknown` variants (or a `null` optional field). */
internal class PayloadDecodeException(message: String) : Exception(message)

/** The decoding primitives the generated classes use (lenient: see the file header). */
internal object D {
    val json = Json { ignoreUnknownKeys = true }

    fun fail(what: String): Nothing = throw PayloadDecodeException(what)

    fun obj(e: JsonElement): JsonObject = e as? JsonObject ?: fail("expected an object")

    fun str(e: JsonElement): String =
        (e as? JsonPrimitive)?.takeIf { it.isString }?.content ?: fail("expected a string")

    fun long(e: JsonElement): Long =
        (e as? JsonPrimitive)?.takeIf { !it.isString }?.longOrNull ?: fail("expected an integer")

    fun double(e: JsonElement): Double =
        (e as? JsonPrimitive)?.takeIf { !it.isString }?.doubleOrNull ?: fail("expected a number")

    fun bool(e: JsonElement): Boolean =
        (e as? JsonPrimitive)?.takeIf { !it.isString }?.booleanOrNull ?: fail("expected a boolean")

    fun <T> nullable(e: JsonElement, f: (JsonElement) -> T): T? = if (e is JsonNull) null else f(e)

    fun <T> list(e: JsonElement, skipInvalid: Boolean, f: (JsonElement) -> T): List<T> {
        val a = e as? JsonArray ?: fail("expected an array")
        if (!skipInvalid) return a.map(f)
        return a.mapNotNull { runCatching { f(it) }.getOrNull() }
    }

    /** A required field: missing, null or undecodable fails the enclosing object. */
    fun <T> req(o: JsonObject, key: String, f: (JsonElement) -> T): T {
        val v = o[key] ?: fail("missing required field `$key`")
        if (v is JsonNull) fail("required field `$key` is null")
        return try {
            f(v)
        } catch (e: Exception) {
            fail("field `$key`: ${e.message}")
        }
    }

    /** An optional field: missing, null or undecodable is null. */
    fun <T> opt(o: JsonObject, key: String, f: (JsonElement) -> T): T? {
        val v = o[key] ?: return null
        if (v is JsonNull) return null
        return runCatching { f(v) }.getOrNull()
    }

    fun tag(e: JsonElement, key: String): String? =
        ((e as? JsonObject)?.get(key) as? JsonPrimitive)?.takeIf { it.isString }?.content
}
