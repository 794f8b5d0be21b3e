// examples/jetbrains-toolwindow driven headless against the mock agent: the tool window's UI is a
// fake listener whose permission dialog the test answers, on a single "EDT" thread.
package dev.acphost

import dev.acphost.examples.toolwindow.AgentToolWindowConfig
import dev.acphost.examples.toolwindow.AgentToolWindowService
import dev.acphost.examples.toolwindow.AgentToolWindowService.State
import dev.acphost.examples.toolwindow.ToolWindowListener
import dev.acphost.examples.toolwindow.TurnOutcome
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.cancel
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.isActive
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.nio.file.Files
import java.nio.file.Path
import java.util.Collections
import java.util.concurrent.Executors
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

class ToolWindowExampleTest {
    /** Stands in for the IDE's event dispatch thread. */
    private val edtExecutor = Executors.newSingleThreadExecutor { r -> Thread(r, "fake-EDT").apply { isDaemon = true } }
    private val edt = edtExecutor.asCoroutineDispatcher()
    /** Stands in for the scope the platform gives a project service. */
    private val serviceScope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    private val services = mutableListOf<AgentToolWindowService>()
    private val dirs = mutableListOf<Path>()

    @AfterEach
    fun tearDown() {
        services.forEach { it.dispose() }
        serviceScope.cancel()
        edt.close()
        dirs.forEach { d -> d.toFile().deleteRecursively() }
    }

    /** One permission dialog: the test answers it, or watches it being closed (cancelled). */
    class Dialog(val request: PermissionRequest) {
        val answer = CompletableDeferred<String?>()
        val closed = CompletableDeferred<Unit>()
    }

    /** The tool window's UI: records what it is shown; fails on a call off the fake EDT. */
    class FakeUi : ToolWindowListener {
        val chunks: MutableList<String> = Collections.synchronizedList(mutableListOf())
        val text = Channel<String>(Channel.UNLIMITED)
        val outcomes = Channel<TurnOutcome>(Channel.UNLIMITED)
        val dialogs = Channel<Dialog>(Channel.UNLIMITED)
        val offEdt: MutableList<String> = Collections.synchronizedList(mutableListOf())

        private fun onEdt(what: String) {
            if (!Thread.currentThread().name.startsWith("fake-EDT")) offEdt += "$what on ${Thread.currentThread().name}"
        }

        override fun onTextAppended(text: String) {
            onEdt("onTextAppended")
            chunks += text
            this.text.trySend(text)
        }

        override fun onTurnFinished(outcome: TurnOutcome) {
            onEdt("onTurnFinished")
            outcomes.trySend(outcome)
        }

        override suspend fun askPermission(request: PermissionRequest): String? {
            onEdt("askPermission")
            val dialog = Dialog(request)
            dialogs.send(dialog)
            try {
                return dialog.answer.await()
            } catch (e: CancellationException) {
                dialog.closed.complete(Unit)
                throw e
            }
        }

        /** Wait until the document has received [needle] (bounded by the caller's timeout). */
        suspend fun awaitText(needle: String, occurrences: Int = 1) {
            while (chunks.joinToString("").windowed(needle.length).count { it == needle } < occurrences) text.receive()
        }
    }

    private fun projectDir(): Path = Files.createTempDirectory("acp-kt-toolwindow").toRealPath().also { dirs.add(it) }

    private fun service(
        scenario: String,
        dir: Path,
        ui: FakeUi?,
        permissionTimeout: Duration = 20.seconds,
    ): AgentToolWindowService {
        val config = AgentToolWindowConfig(
            command = Fixtures.mockAgent,
            args = listOf("--scenario", scenario),
            projectDir = dir.toString(),
            permissionTimeout = permissionTimeout,
        )
        return AgentToolWindowService(serviceScope, config, edt).also {
            services += it
            it.attach(ui)
        }
    }

    private fun alive(pid: Long): Boolean = ProcessHandle.of(pid).map { it.isAlive }.orElse(false)

    @Test
    fun `a full turn streams into the document and writes the file the user allowed`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = projectDir()
            val ui = FakeUi()
            val svc = service("default", dir, ui)
            assertEquals(State.IDLE, svc.state.value)

            svc.startTurn("take some notes")
            val dialog = ui.dialogs.receive()
            assertEquals("Write notes.txt", dialog.request.title)
            assertEquals("edit", dialog.request.toolKind)
            assertEquals(listOf("allow_once", "allow_always", "reject_once"), dialog.request.options.map { it.kind })
            assertEquals(State.RUNNING, svc.state.value)
            // The text before the tool call streams into the document while the dialog is open.
            ui.awaitText("in notes.txt.\n\n")
            assertTrue(svc.documentText().startsWith("Hello! I am the ACP mock agent."), svc.documentText())
            dialog.answer.complete(dialog.request.optionIdOfKind("allow_once"))

            assertEquals(TurnOutcome.Finished("end_turn"), ui.outcomes.receive())
            assertEquals(State.IDLE, svc.state.value)
            val transcript = "Hello! I am the ACP mock agent. I will take a few notes about your project " +
                "in notes.txt.\n\nAll done. Have a nice day!"
            assertEquals(transcript, svc.documentText())
            assertEquals(transcript, ui.chunks.joinToString(""))
            assertTrue(ui.chunks.size >= 5, "streamed chunk by chunk: ${ui.chunks}")
            val notes = dir.resolve("notes.txt")
            assertTrue(Files.readString(notes).startsWith("Notes from acp-mock-agent\n"), Files.readString(notes))
            assertTrue(Files.readString(notes).contains("- turn: 1\n"))

            // Second turn, same agent: the user rejects, the file keeps turn 1's content.
            val pid = svc.agentPid()!!
            svc.startTurn("again")
            val second = ui.dialogs.receive()
            second.answer.complete(second.request.optionIdOfKind("reject_once"))
            assertEquals(TurnOutcome.Finished("end_turn"), ui.outcomes.receive())
            assertTrue(Files.readString(notes).contains("- turn: 1\n"), Files.readString(notes))
            assertEquals(pid, svc.agentPid())
            assertEquals(emptyList<String>(), ui.offEdt)
        }
    }

    @Test
    fun `an unanswered permission request times out, closes the dialog and denies`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = projectDir()
            val ui = FakeUi()
            val svc = service("permission-write", dir, ui, permissionTimeout = 300.milliseconds)
            svc.startTurn("edit hello.txt")
            val dialog = ui.dialogs.receive()
            assertEquals("Edit hello.txt", dialog.request.title)
            dialog.closed.await()
            assertEquals(TurnOutcome.Finished("end_turn"), ui.outcomes.receive())
            assertFalse(Files.exists(dir.resolve("hello.txt")), "denied: nothing written")
        }
    }

    @Test
    fun `without a UI attached a permission request is denied`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = projectDir()
            val svc = service("permission-write", dir, ui = null)
            svc.startTurn("edit hello.txt").join()
            assertEquals(State.IDLE, svc.state.value)
            assertFalse(Files.exists(dir.resolve("hello.txt")))
        }
    }

    @Test
    fun `Stop cancels the turn and the next Send works on the same agent`() = runBlocking {
        withTimeout(Fixtures.T) {
            val ui = FakeUi()
            val svc = service("wait-for-cancel", projectDir(), ui)
            val first = svc.startTurn("work")
            ui.awaitText("Working until you cancel...")
            assertEquals(State.RUNNING, svc.state.value)
            assertThrows(IllegalStateException::class.java) { svc.startTurn("a second Send while busy") }
            val pid = svc.agentPid()!!
            svc.stop()
            assertEquals(TurnOutcome.Stopped, ui.outcomes.receive())
            assertTrue(first.isCancelled)
            assertEquals(State.IDLE, svc.state.value)

            // The agent got session/cancel (else this Send would fail `busy`): it works again.
            svc.startTurn("work again")
            ui.awaitText("Working until you cancel...", occurrences = 2)
            svc.stop()
            assertEquals(TurnOutcome.Stopped, ui.outcomes.receive())
            assertEquals("Working until you cancel...Working until you cancel...", svc.documentText())
            assertEquals(pid, svc.agentPid())
            assertTrue(alive(pid))
        }
    }

    @Test
    fun `Stop while the permission dialog is open closes it and writes nothing`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = projectDir()
            val ui = FakeUi()
            val svc = service("permission-write", dir, ui)
            svc.startTurn("edit hello.txt")
            val dialog = ui.dialogs.receive()
            svc.stop()
            dialog.closed.await()
            assertEquals(TurnOutcome.Stopped, ui.outcomes.receive())
            assertEquals(State.IDLE, svc.state.value)
            assertFalse(Files.exists(dir.resolve("hello.txt")))
        }
    }

    @Test
    fun `dispose mid-turn closes the dialog and leaves no agent process`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = projectDir()
            val ui = FakeUi()
            val svc = service("permission-write", dir, ui)
            svc.startTurn("edit hello.txt")
            val dialog = ui.dialogs.receive()
            val pid = svc.agentPid()!!
            assertTrue(alive(pid))

            svc.dispose()
            assertFalse(alive(pid), "the agent process is gone when dispose() returns")
            assertNull(svc.agentPid())
            assertEquals(State.DISPOSED, svc.state.value)
            dialog.closed.await()
            assertFalse(Files.exists(dir.resolve("hello.txt")))
            assertThrows(IllegalStateException::class.java) { svc.startTurn("after dispose") }
            svc.dispose() // idempotent
            assertTrue(serviceScope.isActive, "the platform's scope is not ours to cancel")
            assertTrue(ui.outcomes.tryReceive().isFailure, "a disposed window is not updated")
        }
    }

    @Test
    fun `dispose while the agent floods the document returns promptly`() = runBlocking {
        withTimeout(Fixtures.T) {
            val ui = FakeUi()
            val svc = service("flood", projectDir(), ui)
            svc.startTurn("flood")
            ui.text.receive()
            val pid = svc.agentPid()!!
            val started = System.nanoTime()
            svc.dispose()
            val took = (System.nanoTime() - started) / 1_000_000
            assertFalse(alive(pid))
            // Bounded by the shutdown ladder (stdin EOF, SIGTERM 2 s later, SIGKILL 2 s after that):
            // a full event queue nobody pulls any more must not stall it.
            assertTrue(took < 5_000, "dispose took $took ms")
        }
    }

    @Test
    fun `an agent that cannot start fails the turn with spawn_failed`() = runBlocking {
        withTimeout(Fixtures.T) {
            val ui = FakeUi()
            val config = AgentToolWindowConfig(command = "/nonexistent/acp-agent", projectDir = projectDir().toString())
            val svc = AgentToolWindowService(serviceScope, config, edt).also { services += it; it.attach(ui) }
            svc.startTurn("hello")
            val outcome = ui.outcomes.receive()
            assertTrue(outcome is TurnOutcome.Failed && outcome.code == "spawn_failed", "$outcome")
            assertEquals(State.IDLE, svc.state.value)
        }
    }

    @Test
    fun `dispose before any turn spawns nothing and returns at once`() {
        val svc = service("default", projectDir(), FakeUi())
        assertNull(svc.agentPid())
        svc.dispose()
        assertEquals(State.DISPOSED, svc.state.value)
    }

    @Test
    fun `after the agent crashes the turn fails and the next Send starts a new agent`() = runBlocking {
        withTimeout(Fixtures.T) {
            val ui = FakeUi()
            val svc = service("crash-mid-turn", projectDir(), ui)
            svc.startTurn("crash")
            val failed = ui.outcomes.receive()
            assertTrue(failed is TurnOutcome.Failed && failed.code == "agent_exited", "$failed")
            val firstText = svc.documentText()
            assertNotEquals("", firstText)
            assertNull(svc.agentPid())

            svc.startTurn("crash again")
            val again = ui.outcomes.receive()
            assertTrue(again is TurnOutcome.Failed && again.code == "agent_exited", "$again")
            assertEquals(firstText + firstText, svc.documentText())
            assertEquals(State.IDLE, svc.state.value)
        }
    }
}
