// Supervised agents through the Kotlin face (AgentSpec.restart): a crash mid-turn fails the prompt
// typed, the agent comes back under the same id and the same Session object prompts it again; an
// agent that cannot start again ends in AgentFailed with restartsExhausted(); a session the new
// process cannot reopen is reported SessionLost. The agent is the mock behind a small shell
// wrapper that counts its starts in a directory and sources `start.N` (else `start.rest`) before
// exec'ing the mock, so each start can crash or fail (the technique of core/tests/integration/supervisor.rs).
package dev.acphost

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.boolean
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files
import java.nio.file.Path

class SupervisorTest {

    companion object {
        // `@` stands for `$` (a Kotlin string would interpolate it).
        private val WRAPPER = """
            d=@0; m=@1; n=@(( @(cat "@d/starts" 2>/dev/null || echo 0) + 1 )); echo @n > "@d/starts"; ARGS=""
            if [ -f "@d/start.@n" ]; then . "@d/start.@n"; elif [ -f "@d/start.rest" ]; then . "@d/start.rest"; fi
            exec "@m" @ARGS
        """.trimIndent().replace('@', '$')

        fun tmp(): Path = Files.createTempDirectory("acp-kt-sup").toRealPath()

        fun fast(maxRestarts: UInt) = RestartPolicy(maxRestarts = maxRestarts.toULong(), backoffMs = 20uL, maxBackoffMs = 200uL)

        /** The supervised wrapper; [starts] maps a start number (or `rest`) to shell lines run before the mock. */
        fun wrapper(dir: Path, policy: RestartPolicy, vararg starts: Pair<String, String>): AgentSpec {
            for ((n, body) in starts) Files.writeString(dir.resolve("start.$n"), body + "\n")
            return AgentSpec(
                command = "/bin/sh",
                args = listOf("-c", WRAPPER, dir.toString(), Fixtures.mockAgent),
                env = mapOf("ACP_MOCK_STATE_DIR" to dir.toString(), "ACP_MOCK_EXIT_ON" to null, "ACP_MOCK_CREDENTIALS" to null),
                restart = policy,
            )
        }

        /** How many times the wrapper ran. */
        fun starts(dir: Path): Int = runCatching { Files.readString(dir.resolve("starts")).trim().toInt() }.getOrDefault(0)

        /** Kinds without the agents' stderr lines (their timing is the OS's). */
        fun trace(events: List<Event>) = events.map { it.kind }.filter { it != "agent_stderr" }
    }

    @Test
    fun `an empty restart policy takes the core's defaults and an unsupervised spec has none`() {
        // Null fields are "not given": the document says `restart: {}` and the core's table
        // fills in 3 attempts from 250 ms (docs/OPTIONS.md).
        assertEquals(RestartPolicy(null, null, null, null), RestartPolicy())
        assertNull(Fixtures.mock("default").restart)
    }

    @Test
    fun `a crash mid-turn fails the prompt, then the same Session prompts the restarted agent`() = test {
        val dir = tmp()
        Host().use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(wrapper(dir, fast(3u), "1" to "ARGS=\"--scenario crash-mid-turn\""))
            val firstPid = requireNotNull(agent.pid())
            val session = agent.newSession(SessionOptions(cwd = tmp().toString()))
            assertFalse(agent.restartsExhausted())

            val e = assertThrows<AcpException.AgentExited> { session.prompt("go") }
            assertEquals(3, obj(requireNotNull(e.data))["exitCode"]!!.jsonPrimitive.int)

            val evs = log.until { it is Event.AgentRestarted }
            assertEquals(
                listOf("turn_ended", "session_closed", "agent_exited", "agent_restarting", "agent_ready", "session_opened", "agent_restarted"),
                trace(evs).dropWhile { it != "turn_ended" },
            )
            assertTrue(evs.all { it.agent == agent.id() }, "one agent id throughout")
            assertTrue(evs.none { it is Event.Unknown }, "typed: ${evs.filterIsInstance<Event.Unknown>().map { it.kind }}")
            val restarting = evs.filterIsInstance<Event.AgentRestarting>().single()
            assertEquals(1u, restarting.attempt)
            assertEquals(3u, restarting.maxRestarts)
            assertEquals(20uL, restarting.delayMs)
            assertEquals("agent_exited", restarting.error.kind)
            assertEquals(3, obj(requireNotNull(restarting.error.data))["exitCode"]!!.jsonPrimitive.int)
            val reopened = evs.filterIsInstance<Event.SessionOpened>().last()
            assertEquals(session.id(), reopened.session)
            assertEquals("resume", str(obj(reopened.data), "origin"))

            val restarted = evs.last() as Event.AgentRestarted
            assertEquals(1u, restarted.attempt)
            assertEquals(listOf(RecoveredSession(sessionId = session.id(), via = "resume")), restarted.recovered)
            assertEquals(emptyList<String>(), restarted.lost)
            val newPid = requireNotNull(agent.pid())
            assertNotEquals(firstPid, newPid)
            assertEquals(newPid, restarted.pid)
            assertNull(agent.exitStatus(), "the restarted agent is running")

            // The objects the embedder already holds reach the new process.
            val turn = session.prompt("again")
            assertEquals("end_turn", turn.stopReason)
            assertTrue(turn.text.isNotEmpty())
            assertFalse(agent.restartsExhausted())
            assertTrue(waitGone(firstPid.toLong()), "the crashed process is gone")
            assertEquals(2, starts(dir))

            // Shutdown ends the supervision: the process is not started again.
            agent.shutdown()
            assertTrue(waitGone(newPid.toLong()))
            assertEquals(2, starts(dir))
        }
    }

    @Test
    fun `a session stream lives on across a restart and ends with the agent's shutdown`() = test {
        // docs/EVENTS.md, "The one session-stream rule": the crash's session_closed carries
        // restart: true, so the stream goes on with the reopened session; the shutdown's exit
        // (no restart) is the agent's last event and ends it.
        val dir = tmp()
        Host().use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(wrapper(dir, fast(3u), "1" to "ARGS=\"--scenario crash-mid-turn\""))
            val session = agent.newSession(SessionOptions(cwd = tmp().toString()))
            val stream = async(Dispatchers.IO) { withTimeout(30_000) { session.events().toList() } }
            assertThrows<AcpException.AgentExited> { session.prompt("go") }
            log.until { it is Event.AgentRestarted }
            assertEquals("end_turn", session.prompt("again").stopReason)
            agent.shutdown()
            val kinds = trace(stream.await())
            assertEquals("session_opened", kinds.first())
            val closed = stream.await().filterIsInstance<Event.SessionClosed>()
            // The crash's close (restart follows), then the shutdown's: the stream's last event.
            assertEquals(listOf(true, null), closed.map { obj(it.data)["restart"]?.jsonPrimitive?.boolean })
            assertEquals("session_closed", kinds.last())
            assertEquals(2, kinds.count { it == "session_opened" }, "$kinds")
            assertEquals(2, kinds.count { it == "turn_ended" }, "both turns: $kinds")
        }
    }

    @Test
    fun `an agent that cannot start again ends in AgentFailed and stays down`() = test {
        val dir = tmp()
        Host().use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(wrapper(dir, fast(2u), "1" to "", "rest" to "echo 'cannot start' >&2; exit 7"))
            val pid = requireNotNull(agent.pid())
            val session = agent.newSession(SessionOptions(cwd = tmp().toString()))
            ProcessHandle.of(pid.toLong()).ifPresent { it.destroyForcibly() }

            val evs = log.until { it is Event.AgentFailed }
            assertEquals(listOf(1u, 2u), evs.filterIsInstance<Event.AgentRestarting>().map { it.attempt }, "${trace(evs)}")
            assertTrue(evs.none { it is Event.AgentRestarted })
            val failed = evs.last() as Event.AgentFailed
            assertEquals(agent.id(), failed.agent)
            assertEquals(2u, failed.attempts)
            assertTrue(failed.error.kind.isNotEmpty(), "says why: ${failed.error}")
            assertTrue(agent.restartsExhausted())
            assertEquals(3, starts(dir))

            // Terminal: calls fail typed, at once.
            assertThrows<AcpException.AgentExited> { session.prompt("hi") }
            assertThrows<AcpException.AgentExited> { agent.newSession(SessionOptions(cwd = tmp().toString())) }
            assertTrue(waitGone(pid.toLong()))
            assertEquals(3, starts(dir))
        }
    }

    @Test
    fun `a session the restarted agent cannot reopen is reported SessionLost`() = test {
        val dir = tmp()
        // Later starts advertise neither session/resume nor session/load.
        val scenario = dir.resolve("neither.json")
        Files.writeString(
            scenario,
            """{"description": "SupervisorTest", "initialize": {"agentCapabilities": {"loadSession": false, "sessionCapabilities": {}}}}""",
        )
        Host().use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(wrapper(dir, fast(3u), "rest" to "ARGS=\"--scenario $scenario\""))
            val session = agent.newSession(SessionOptions(cwd = tmp().toString()))
            ProcessHandle.of(requireNotNull(agent.pid()).toLong()).ifPresent { it.destroyForcibly() }

            val evs = log.until { it is Event.AgentRestarted }
            val lost = evs.filterIsInstance<Event.SessionLost>().single()
            assertEquals(session.id(), lost.sessionId)
            assertEquals("unsupported", lost.error.kind)
            val restarted = evs.last() as Event.AgentRestarted
            assertEquals(emptyList<RecoveredSession>(), restarted.recovered)
            assertEquals(listOf(session.id()), restarted.lost)
            // The agent works again; the lost session does not.
            assertEquals("end_turn", agent.newSession(SessionOptions(cwd = tmp().toString())).prompt("hi").stopReason)
            assertTrue(runCatching { session.prompt("hi") }.exceptionOrNull() is AcpException)
            agent.shutdown()
        }
    }
}
