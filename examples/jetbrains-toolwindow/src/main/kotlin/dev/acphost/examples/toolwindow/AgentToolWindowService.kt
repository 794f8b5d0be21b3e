// The logic behind an "Agent" tool window, shaped like an IntelliJ project service (a class with a
// CoroutineScope, a listener the UI implements, dispose()), in plain Kotlin against dev.acphost so
// it runs and is tested without an IDE. README.md shows the few lines of IntelliJ glue.
package dev.acphost.examples.toolwindow

import dev.acphost.AcpException
import dev.acphost.Agent
import dev.acphost.AgentSpec
import dev.acphost.Event
import dev.acphost.Host
import dev.acphost.HostOptions
import dev.acphost.PermissionRequest
import dev.acphost.Session
import dev.acphost.SessionOptions
import dev.acphost.code
import dev.acphost.events
import dev.acphost.permissionHandler
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Job
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.update
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeoutOrNull
import java.util.concurrent.atomic.AtomicBoolean
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.EmptyCoroutineContext
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds

/** Which agent to run, where, and how long the UI may take to answer. */
data class AgentToolWindowConfig(
    val command: String,
    val args: List<String> = emptyList(),
    /** Set for the agent over the IDE's environment. */
    val env: Map<String, String> = emptyMap(),
    /** The project's base directory: absolute and real (the sandbox compares real paths). */
    val projectDir: String,
    /** How long a permission request waits for the user before it is denied. */
    val permissionTimeout: Duration = 60.seconds,
    /** How long Stop waits for the agent to acknowledge before the window is usable again. */
    val stopGrace: Duration = 5.seconds,
)

/** How a turn ended, as the tool window shows it. */
sealed interface TurnOutcome {
    /** The agent answered: `end_turn`, `max_tokens`, `refusal`, `cancelled`, … */
    data class Finished(val stopReason: String) : TurnOutcome
    /** The user pressed Stop. */
    data object Stopped : TurnOutcome
    /** The turn failed: [code] is the stable error code (`agent_exited`, `busy`, …). */
    data class Failed(val code: String, val message: String) : TurnOutcome
}

/**
 * What the tool window's UI implements. Every call runs in the service's `uiContext`
 * (`Dispatchers.EDT` in a plugin), one at a time per kind of call.
 */
interface ToolWindowListener {
    /** Append [text] to the transcript document. */
    fun onTextAppended(text: String) {}

    fun onTurnFinished(outcome: TurnOutcome) {}

    /**
     * Show the request (title, options) and suspend until the user picks: return the chosen
     * `optionId`, or null to deny. The call is cancelled when the request is settled without the
     * user (timeout, Stop, dispose): close the dialog then.
     */
    suspend fun askPermission(request: PermissionRequest): String? = null
}

/**
 * One agent and one session per project, started on the first prompt. [cs] is the scope the
 * platform gives a service (cancelled when the project closes); [uiContext] is where listener
 * calls run.
 */
class AgentToolWindowService(
    cs: CoroutineScope,
    private val config: AgentToolWindowConfig,
    private val uiContext: CoroutineContext = EmptyCoroutineContext,
) : AutoCloseable {

    enum class State { IDLE, STARTING, RUNNING, STOPPING, DISPOSED }

    /** A child of [cs]: dispose() cancels our work without cancelling the caller's scope. */
    private val scope = CoroutineScope(cs.coroutineContext + SupervisorJob(cs.coroutineContext[Job]))
    private val disposed = AtomicBoolean(false)
    private val state_ = MutableStateFlow(State.IDLE)

    /** Send is enabled in [State.IDLE], Stop in [State.STARTING] and [State.RUNNING]. */
    val state: StateFlow<State> = state_.asStateFlow()

    @Volatile private var listener: ToolWindowListener? = null
    private val document = StringBuilder()

    /** The highest turn id whose `turn_ended` the event pump has handled. */
    private val lastEndedTurn = MutableStateFlow(0uL)
    /** The highest agent id whose `agent_exited` (its last event) the pump has handled. */
    private val lastExitedAgent = MutableStateFlow(0uL)
    private val startLock = Mutex()
    @Volatile private var agent: Agent? = null
    private var session: Session? = null
    @Volatile private var turnJob: Job? = null

    private val host = Host(
        // The core's own deadline is a backstop behind ours (it denies too).
        options = HostOptions(permissionTimeoutMs = (config.permissionTimeout + 5.seconds).inWholeMilliseconds.toULong()),
        permissionHandler = permissionHandler { request -> askUser(request) },
    )

    init {
        scope.launch { pumpEvents() }
    }

    /** Show this UI (the tool window's content); without one, permission requests are denied. */
    fun attach(ui: ToolWindowListener?) {
        listener = ui
    }

    /** The transcript so far (what the document shows). */
    fun documentText(): String = synchronized(document) { document.toString() }

    /** The agent's process id while it runs (for a status bar; tests check it is gone). */
    fun agentPid(): Long? = agent?.takeIf { it.exitStatus() == null }?.pid()?.toLong()

    /**
     * Send [prompt] (the Send button). Starts the agent first if needed. The returned job ends
     * when the turn has ended and [ToolWindowListener.onTurnFinished] was called.
     */
    fun startTurn(prompt: String): Job {
        check(!disposed.get()) { "the service is disposed" }
        check(state_.compareAndSet(State.IDLE, State.STARTING)) { "a turn is in progress (${state_.value})" }
        // Started only once stop() can see it.
        val job = scope.launch(start = CoroutineStart.LAZY) { runTurn(prompt) }
        turnJob = job
        job.start()
        return job
    }

    /** The Stop button: cancel the turn's coroutine (the core sends `session/cancel`). */
    fun stop() {
        turnJob?.cancel()
    }

    /**
     * Stop everything and shut the agent down (stdin EOF, then SIGTERM, then SIGKILL, each
     * after the core's 2 s grace); returns when its process is gone. Idempotent.
     */
    fun dispose() {
        if (!disposed.compareAndSet(false, true)) return
        state_.value = State.DISPOSED
        scope.cancel()
        // Explicit and blocking: host.close() alone would defer the shutdown while a call is in flight.
        runBlocking { host.shutdown() }
        host.close()
    }

    override fun close() = dispose()

    private suspend fun runTurn(prompt: String) {
        var outcome: TurnOutcome = TurnOutcome.Stopped
        var opened: Session? = null
        try {
            opened = openSession()
            state_.value = State.RUNNING
            val result = opened.prompt(prompt)
            // prompt() returns on the agent's answer; let the pump append the turn's last chunks.
            withTimeoutOrNull(config.stopGrace) { lastEndedTurn.first { it >= result.turn } }
            outcome = TurnOutcome.Finished(result.stopReason)
        } catch (e: CancellationException) {
            throw e
        } catch (e: AcpException) {
            val id = agent?.id()
            if (e is AcpException.AgentExited && id != null) {
                // Show everything the agent sent before it died (agent_exited is its last event).
                withTimeoutOrNull(config.stopGrace) { lastExitedAgent.first { it >= id } }
            }
            outcome = TurnOutcome.Failed(e.code, e.message.orEmpty())
        } catch (e: Exception) {
            outcome = TurnOutcome.Failed("internal", e.toString())
        } finally {
            withContext(NonCancellable) {
                if (disposed.get()) return@withContext
                if (outcome == TurnOutcome.Stopped && opened != null) {
                    state_.value = State.STOPPING
                    awaitSettled(opened)
                }
                state_.value = State.IDLE
                ui { onTurnFinished(outcome) }
            }
        }
    }

    /** The live session, spawning the agent (again, if it exited) and opening one if needed. */
    private suspend fun openSession(): Session = startLock.withLock {
        session?.takeIf { agent?.exitStatus() == null }?.let { return it }
        val spawned = host.spawn(AgentSpec(config.command, config.args, config.env, cwd = config.projectDir))
        agent = spawned
        spawned.newSession(SessionOptions(cwd = config.projectDir)).also { session = it }
    }

    /**
     * After Stop, wait (bounded) until the agent answered the cancelled turn, so the next Send
     * does not fail `busy` and the document holds everything the turn sent.
     */
    private suspend fun awaitSettled(s: Session) {
        val active = s.activeTurn() ?: return
        withTimeoutOrNull(config.stopGrace) { lastEndedTurn.first { it >= active } }
    }

    private suspend fun askUser(request: PermissionRequest): String? {
        val ui = listener ?: return null
        if (disposed.get()) return null
        // Timing out cancels the UI's call (its dialog closes) and denies.
        return withTimeoutOrNull(config.permissionTimeout) {
            withContext(uiContext) { ui.askPermission(request) }
        }
    }

    /** The host's one event stream: message chunks into the document, turn ends noted. */
    private suspend fun pumpEvents() {
        host.events().collect { e ->
            when (e) {
                is Event.SessionUpdate ->
                    if (!e.replay && e.updateKind == "agent_message_chunk") e.text?.let { append(it) }
                is Event.TurnEnded -> e.turn?.let { t -> lastEndedTurn.update { maxOf(it, t) } }
                is Event.AgentExited -> lastExitedAgent.update { maxOf(it, e.agent) }
                else -> Unit
            }
        }
    }

    private suspend fun append(text: String) {
        synchronized(document) { document.append(text) }
        ui { onTextAppended(text) }
    }

    private suspend fun ui(call: ToolWindowListener.() -> Unit) {
        val l = listener ?: return
        withContext(uiContext) { l.call() }
    }
}
