// The events as Kotlin sees them: a Flow over the pulled uniffi stream (the collector's pace is
// the pull's pace, so the core's backpressure holds and nothing is dropped) and a sealed class per
// kind, the payload as JSON text (`data`) and typed (`payload`, dev.acphost.payloads, generated from
// schema/events.schema.json; docs/EVENTS.md).
package dev.acphost

import dev.acphost.payloads.EventPayload
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.emitAll
import kotlinx.coroutines.flow.flow
import java.util.concurrent.atomic.AtomicReference

/** One event of the host's ordered stream. Unknown future kinds arrive as [Unknown]. */
sealed class Event {
    /** The envelope as the core delivered it. */
    abstract val raw: RawEvent

    /** Strictly increasing per host: the one total order. */
    val seq: ULong get() = raw.seq
    /** RFC 3339 UTC timestamp (milliseconds). */
    val at: String get() = raw.at
    /** The host's id for the agent. */
    val agent: ULong get() = raw.agent
    val session: String? get() = raw.session
    val turn: ULong? get() = raw.turn
    /** The kind's wire name (`session_update`, …). */
    val kind: String get() = raw.kind
    /** True for updates replayed by `session/load`. */
    val replay: Boolean get() = raw.replay
    /** The payload as JSON text. */
    val data: String get() = raw.data

    /**
     * The payload, typed: the kind's class of [dev.acphost.payloads] (generated from
     * schema/events.schema.json), decoded from [data] on first use. Never throws: a kind this
     * version does not know, or data that does not decode as its kind's, is
     * [EventPayload.Unknown]; inside, unknown tags and enum values are their type's `Unknown`.
     */
    val payload: EventPayload by lazy(LazyThreadSafetyMode.PUBLICATION) { EventPayload.decode(raw.kind, raw.data) }
    /**
     * Only on the first event of a [Session.events] flow whose session's history had overflowed
     * before the flow was collected: how many of the session's events were left out before it.
     */
    val dropped: ULong? get() = raw.dropped

    data class AgentReady(override val raw: RawEvent) : Event()
    data class AgentExited(override val raw: RawEvent) : Event()
    data class SessionOpened(override val raw: RawEvent) : Event()
    data class SessionClosed(override val raw: RawEvent) : Event()

    /**
     * A `session/update` notification; [updateKind] is its `sessionUpdate`, [text] the text of its
     * content block when it has one (`agent_message_chunk`, `agent_thought_chunk`, …).
     */
    data class SessionUpdate(override val raw: RawEvent) : Event() {
        val updateKind: String? get() = raw.updateKind
        val text: String? get() = raw.text
    }

    data class TurnStarted(override val raw: RawEvent) : Event()
    data class TurnEnded(override val raw: RawEvent) : Event()
    data class PermissionRequested(override val raw: RawEvent) : Event()
    data class PermissionResolved(override val raw: RawEvent) : Event()
    data class ElicitationRequested(override val raw: RawEvent) : Event()
    data class ElicitationResolved(override val raw: RawEvent) : Event()
    data class ElicitationCompleted(override val raw: RawEvent) : Event()
    data class FsRead(override val raw: RawEvent) : Event()
    data class FsWrite(override val raw: RawEvent) : Event()
    data class TerminalCreated(override val raw: RawEvent) : Event()
    data class TerminalExited(override val raw: RawEvent) : Event()
    data class AgentStderr(override val raw: RawEvent) : Event()
    data class ProtocolNoise(override val raw: RawEvent) : Event()
    data class ProtocolError(override val raw: RawEvent) : Event()
    data class ExtNotification(override val raw: RawEvent) : Event()
    data class ExtRequest(override val raw: RawEvent) : Event()
    data class Wire(override val raw: RawEvent) : Event()
    data class CallCompleted(override val raw: RawEvent) : Event()
    data class ServiceRequested(override val raw: RawEvent) : Event()
    /** `progress` (with `progressEvents`): spawn, handshake or login started, waiting, done or failed. */
    data class Progress(override val raw: RawEvent) : Event()
    /** `steer`: a steer (`session.steer`) was injected, queued, prompted, rejected or failed. */
    data class Steer(override val raw: RawEvent) : Event()

    /**
     * `agent_restarting`: a supervised agent's process died (or the previous attempt failed,
     * [error] says why); attempt [attempt] of [maxRestarts] starts after [delayMs]. Calls made
     * until [AgentRestarted] fail with [AcpException.AgentExited].
     */
    data class AgentRestarting(override val raw: RawEvent) : Event() {
        private val p get() = raw.supervisor as SupervisorEvent.AgentRestarting
        val attempt: UInt get() = p.attempt
        val maxRestarts: UInt get() = p.maxRestarts
        val delayMs: ULong get() = p.delayMs
        val error: EventError get() = p.error
    }

    /**
     * `agent_restarted`: the new process ([pid]) is the agent's; the same [Agent] and [Session]
     * objects reach it. [recovered]: the sessions reopened (`via` `resume` or `load`); [lost]: the
     * ids of those that could not be (each also has a [SessionLost]).
     */
    data class AgentRestarted(override val raw: RawEvent) : Event() {
        private val p get() = raw.supervisor as SupervisorEvent.AgentRestarted
        val attempt: UInt get() = p.attempt
        val pid: UInt? get() = p.pid
        val recovered: List<RecoveredSession> get() = p.recovered
        val lost: List<String> get() = p.lost
    }

    /** `agent_failed`: the supervisor gave up after [attempts] attempts; the agent stays down (its last event). */
    data class AgentFailed(override val raw: RawEvent) : Event() {
        private val p get() = raw.supervisor as SupervisorEvent.AgentFailed
        val attempts: UInt get() = p.attempts
        val error: EventError get() = p.error
    }

    /** `session_lost`: a session the restarted agent could not reopen; its [Session] no longer reaches one. */
    data class SessionLost(override val raw: RawEvent) : Event() {
        private val p get() = raw.supervisor as SupervisorEvent.SessionLost
        val sessionId: String get() = p.sessionId
        val error: EventError get() = p.error
    }

    /** A kind this version does not know (a newer core): keep going, read [raw]. */
    data class Unknown(override val raw: RawEvent) : Event()

    companion object {
        private val BY_KIND: Map<String, (RawEvent) -> Event> = mapOf(
            "agent_ready" to ::AgentReady,
            "agent_exited" to ::AgentExited,
            "session_opened" to ::SessionOpened,
            "session_closed" to ::SessionClosed,
            "session_update" to ::SessionUpdate,
            "turn_started" to ::TurnStarted,
            "turn_ended" to ::TurnEnded,
            "permission_requested" to ::PermissionRequested,
            "permission_resolved" to ::PermissionResolved,
            "elicitation_requested" to ::ElicitationRequested,
            "elicitation_resolved" to ::ElicitationResolved,
            "elicitation_completed" to ::ElicitationCompleted,
            "fs_read" to ::FsRead,
            "fs_write" to ::FsWrite,
            "terminal_created" to ::TerminalCreated,
            "terminal_exited" to ::TerminalExited,
            "agent_stderr" to ::AgentStderr,
            "protocol_noise" to ::ProtocolNoise,
            "protocol_error" to ::ProtocolError,
            "ext_notification" to ::ExtNotification,
            "ext_request" to ::ExtRequest,
            "wire" to ::Wire,
            "call_completed" to ::CallCompleted,
            "service_requested" to ::ServiceRequested,
            "agent_restarting" to ::AgentRestarting,
            "agent_restarted" to ::AgentRestarted,
            "agent_failed" to ::AgentFailed,
            "session_lost" to ::SessionLost,
            "progress" to ::Progress,
            "steer" to ::Steer,
        )

        /** The supervisor's kinds, typed only when their data decoded as theirs (always, from this host). */
        private val SUPERVISOR: Map<String, (SupervisorEvent) -> Boolean> = mapOf(
            "agent_restarting" to { it is SupervisorEvent.AgentRestarting },
            "agent_restarted" to { it is SupervisorEvent.AgentRestarted },
            "agent_failed" to { it is SupervisorEvent.AgentFailed },
            "session_lost" to { it is SupervisorEvent.SessionLost },
        )

        /** The kinds this version has a class for (checked against the core's list by a test). */
        val KNOWN_KINDS: Set<String> get() = BY_KIND.keys

        /** The typed event of a raw one. */
        fun of(raw: RawEvent): Event {
            val decoded = SUPERVISOR[raw.kind]
            if (decoded != null && raw.supervisor?.let(decoded) != true) return Unknown(raw)
            return BY_KIND[raw.kind]?.invoke(raw) ?: Unknown(raw)
        }
    }
}

/**
 * This stream as a [Flow], collected once ([Host.events] opens a stream per collection): each pull
 * takes up to [batch] events and emits them in order; it completes when the host is shut down and
 * everything was delivered. When the collection ends for any reason (completion, an exception,
 * cancellation, an operator such as `first {}` that stops early) the stream is closed: it no
 * longer receives events, so a collector that went away never stalls the agents.
 */
fun EventStream.asFlow(batch: UInt = 256u): Flow<Event> = flow {
    try {
        while (true) {
            val events = nextBatch(batch)
            if (events.isEmpty()) break
            for (e in events) emit(Event.of(e))
        }
    } finally {
        close()
    }
}

/**
 * The host's events as a [Flow]. Call it, and collect the flow, as often as you like: each
 * collection reads a stream of its own ([Host.eventStream]) and gets every event from its start,
 * in `seq` order: all collections see the same events in the same order. The first collection of
 * a call reads the stream opened by the call, so it starts at the call (the very first call of a
 * host also gets the events that arrived before it, as many as the event queue holds); a further
 * collection of the same flow starts when it starts. The slowest running collection sets the
 * pace: while it is `eventCapacity` events (or `eventQueueBytes`) behind, the agents' stdout is
 * not read (backpressure); no collection ever loses an event. When a collection ends, its stream
 * is closed and no longer holds anything back. [AcpException.Unsupported] when events are
 * disabled.
 */
fun Host.events(batch: UInt = 256u): Flow<Event> {
    val opened = AtomicReference<EventStream?>(eventStream())
    return flow { emitAll((opened.getAndSet(null) ?: eventStream()).asFlow(batch)) }
}

/**
 * This session stream as a [Flow], collected once (see [Session.events]); the stream is closed when
 * the collection ends.
 */
fun SessionEventStream.asFlow(batch: UInt = 256u): Flow<Event> = flow {
    try {
        while (true) {
            val events = nextBatch(batch)
            if (events.isEmpty()) break
            for (e in events) emit(Event.of(e))
        }
    } finally {
        close()
    }
}

/**
 * This session's events as a cold [Flow]: each collection starts at the session's beginning
 * (`session_opened`, then everything after it, as the session's bounded history holds it; when it
 * overflowed, the first event's [Event.dropped] says how many were left out) and goes on live until
 * `session_closed` or the host's end. While a collection is running, [Session.prompt] returns only
 * after the collector has taken the turn's `turn_ended` (so every event of the turn was emitted to
 * it first). Independent of [Host.events] and of other collections; a slow collector slows the
 * agent down, it never loses events. [AcpException.Unsupported] when events are disabled.
 */
fun Session.events(batch: UInt = 256u): Flow<Event> = flow {
    emitAll(eventStream().asFlow(batch))
}
