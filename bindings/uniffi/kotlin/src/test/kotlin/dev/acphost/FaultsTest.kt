// Faults through the Kotlin face: the agent crashes, hangs, ignores stdin EOF, pollutes stdout or
// cannot be started. Each ends in a typed AcpException or a completed turn, never a hang, and no
// agent process is left behind. Model: the Python face's tests/test_faults.py (same scenarios).
package dev.acphost

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files
import java.util.Collections

class FaultsTest {

    companion object {
        fun tmp(): String = Files.createTempDirectory("acp-kt-faults").toRealPath().toString()

        /** One turn of [scenario]: its result (or typed failure) and every event up to its `turn_ended`. */
        suspend fun runTurn(scenario: String, options: HostOptions = HostOptions()): Pair<List<Event>, Result<TurnResult>> =
            coroutineScope {
                Host(options).use { host ->
                    val log = EventLog(this, host)
                    val session = host.spawn(Fixtures.mock(scenario)).newSession(SessionOptions(cwd = tmp()))
                    val result = runCatching { session.prompt("go") }
                    log.until { it is Event.TurnEnded }
                    Pair(log.all.toList(), result)
                }
            }
    }

    @Test
    fun `a crash mid-turn fails the prompt with AgentExited and later calls fail typed`() = test {
        Host().use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock("crash-mid-turn"))
            val session = agent.newSession(SessionOptions(cwd = tmp()))
            val e = assertThrows<AcpException.AgentExited> { session.prompt("go") }
            assertEquals("agent_exited", e.code)
            val data = obj(requireNotNull(e.data) { "agent_exited carries the exit" })
            assertEquals(3, data["exitCode"]!!.jsonPrimitive.int)
            assertEquals(null, str(data, "signal"))
            assertTrue(str(data, "stderrTail")!!.contains("fatal: mock crash"), data.toString())

            val evs = log.until { it is Event.AgentExited }
            val ended = obj(evs.filterIsInstance<Event.TurnEnded>().single().data)
            assertEquals(JsonNull, ended["stopReason"])
            assertEquals("agent_exited", str(ended["error"]!!.jsonObject, "kind"))
            val exited = obj(evs.last().data)
            assertEquals("exited", str(exited, "reason"))
            assertEquals(3, exited["exitCode"]!!.jsonPrimitive.int)
            assertEquals(2, evs.filterIsInstance<Event.SessionUpdate>().size, "the chunks before the crash arrived")

            val status = requireNotNull(agent.exitStatus()) { "the exit status after the crash" }
            assertEquals(3, status.exitCode)
            assertTrue(status.stderrTail.contains("fatal: mock crash"))
            // Later calls on the dead agent fail at once, typed.
            withTimeout(5_000) {
                val again = runCatching { session.prompt("again") }.exceptionOrNull()
                assertTrue(again is AcpException.AgentExited || again is AcpException.Closed, "prompt after the crash: $again")
                val open = runCatching { agent.newSession(SessionOptions(cwd = tmp())) }.exceptionOrNull()
                assertTrue(open is AcpException.AgentExited || open is AcpException.Closed, "newSession after the crash: $open")
                assertEquals(3, agent.exited().exitCode)
                assertEquals(3, agent.shutdown().exitCode, "shutdown of an exited agent reports its exit")
            }
        }
    }

    @Test
    fun `an agent ignoring stdin EOF is terminated by the shutdown ladder`() = test {
        Host(HostOptions(shutdownGraceMs = 300u)).use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock("ignore-stdin-eof"))
            val pid = agent.pid()!!.toLong()
            assertEquals("end_turn", agent.newSession(SessionOptions(cwd = tmp())).prompt("hi").stopReason)
            assertTrue(alive(pid))
            val started = System.nanoTime()
            val status = agent.shutdown()
            assertTrue(ms(started) < 5_000, "the ladder took ${ms(started)} ms")
            assertTrue(status.signal == "SIGTERM" || status.signal == "SIGKILL", "ended by a signal: $status")
            assertEquals(null, status.exitCode)
            assertTrue(waitGone(pid), "agent $pid survived the ladder")
            val exited = obj(log.until { it is Event.AgentExited }.last().data)
            assertEquals("shutdown", str(exited, "reason"))
            assertEquals(status.signal, str(exited, "signal"))
        }
    }

    @Test
    fun `closing the host kills agents that ignore EOF and ends the stream`() = test {
        val host = Host(HostOptions(shutdownGraceMs = 200u))
        val events = async { host.events().toList() }
        val pids = try {
            listOf(host.spawn(Fixtures.mock("ignore-stdin-eof")), host.spawn(Fixtures.mock("ignore-stdin-eof")))
                .map { it.pid()!!.toLong() }
        } catch (e: Throwable) {
            host.close()
            throw e
        }
        assertTrue(pids.all { alive(it) })
        val started = System.nanoTime()
        host.close()
        assertTrue(ms(started) < 5_000, "close took ${ms(started)} ms")
        for (pid in pids) assertTrue(waitGone(pid), "agent $pid outlived its host")
        val all = withTimeout(Fixtures.T) { events.await() }
        assertEquals(2, all.count { it is Event.AgentExited })
        assertTrue(all.last() is Event.AgentExited, all.last().kind)
    }

    @Test
    fun `a hanging agent shut down mid-turn fails the pending prompt Closed`() = test {
        Host(HostOptions(shutdownGraceMs = 300u)).use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock("hang"))
            val pid = agent.pid()!!.toLong()
            val session = agent.newSession(SessionOptions(cwd = tmp()))
            val turn = async { runCatching { session.prompt("go") } }
            log.until { it is Event.SessionUpdate }
            agent.shutdown()
            val err = withTimeout(Fixtures.T) { turn.await() }.exceptionOrNull()
            assertTrue(err is AcpException.Closed, "the pending prompt failed: $err")
            assertTrue(waitGone(pid))
        }
    }

    @Test
    fun `a prompt timeout on a hanging agent is Timeout and settles`() = test {
        val started = System.nanoTime()
        val (events, result) = runTurn("hang", HostOptions(promptTimeoutMs = 300u, cancelGraceMs = 300u))
        val e = result.exceptionOrNull()
        assertTrue(e is AcpException.Timeout, "got $e")
        e as AcpException.Timeout
        assertEquals("timeout", e.code)
        assertEquals(300L, obj(e.data!!)["afterMs"]!!.jsonPrimitive.long)
        assertTrue(ms(started) < 10_000)
        val ended = obj(events.filterIsInstance<Event.TurnEnded>().last().data)
        assertEquals("timeout", str(ended["error"]!!.jsonObject, "kind"))
    }

    @Test
    fun `a control request the agent never answers is Timeout`() = test {
        val scenario = Files.createTempFile("new-session-hangs", ".json")
        Files.writeString(scenario, """{"description": "session/new is never answered", "newSession": {"before": [{"hang": true}]}}""")
        Host(HostOptions(requestTimeoutMs = 300u)).use { host ->
            val agent = host.spawn(Fixtures.mock(scenario.toString()))
            val started = System.nanoTime()
            val e = assertThrows<AcpException.Timeout> { agent.newSession(SessionOptions(cwd = tmp())) }
            assertTrue(ms(started) < 5_000)
            val data = obj(e.data!!)
            assertEquals(300L, data["afterMs"]!!.jsonPrimitive.long)
            assertTrue(str(data, "what")!!.isNotEmpty())
        }
        Files.delete(scenario)
    }

    @Test
    fun `garbage on stdout is noise and the turn completes`() = test {
        val (events, result) = runTurn("garbage-stdout")
        val turn = result.getOrThrow()
        assertEquals("end_turn", turn.stopReason)
        assertEquals("one two three", turn.text)
        val counts = events.filterIsInstance<Event.ProtocolNoise>().map { obj(it.data)["count"]!!.jsonPrimitive.int }
        assertTrue(counts.isNotEmpty())
        assertEquals((1..counts.size).toList(), counts)
    }

    @Test
    fun `an over-long line is skipped and reported, and the connection survives`() = test {
        val (events, result) = runTurn("huge-line", HostOptions(maxLineBytes = 1024uL * 1024uL))
        assertEquals("end_turn", result.getOrThrow().stopReason)
        assertEquals("after the huge line", result.getOrThrow().text)
        val err = obj(events.filterIsInstance<Event.ProtocolError>().single().data)
        assertEquals("line_too_long", str(err, "reason"))
        assertTrue(err["bytes"]!!.jsonPrimitive.long > 2_000_000, err.toString())
        // Under the default limit the same 2 MiB line is an ordinary update.
        val (events2, result2) = runTurn("huge-line")
        assertEquals("end_turn", result2.getOrThrow().stopReason)
        assertTrue(events2.none { it is Event.ProtocolError })
        assertTrue(events2.any { it.data.length > 2_000_000 })
    }

    @Test
    fun `invalid UTF-8 is decoded lossily and reported`() = test {
        val (events, result) = runTurn("invalid-utf8")
        assertEquals("end_turn", result.getOrThrow().stopReason)
        assertEquals("invalid_utf8", str(obj(events.filterIsInstance<Event.ProtocolError>().single().data), "reason"))
        assertTrue(events.filterIsInstance<Event.SessionUpdate>().any { it.data.contains('\uFFFD') })
    }

    @Test
    fun `unknown and duplicate responses are reported and ignored`() = test {
        val (events, result) = runTurn("unknown-response-id")
        assertEquals("end_turn", result.getOrThrow().stopReason)
        assertEquals(setOf("unknown_response_id"), events.filterIsInstance<Event.ProtocolError>().map { str(obj(it.data), "reason") }.toSet())
        Host().use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("duplicate-response")).newSession(SessionOptions(cwd = tmp()))
            assertEquals("end_turn", session.prompt("1").stopReason)
            assertEquals("duplicate_response", str(obj(log.until { it is Event.ProtocolError }.last().data), "reason"))
            assertEquals("end_turn", session.prompt("2").stopReason, "still usable")
        }
    }

    @Test
    fun `a stderr flood is drained and the tail is bounded`() = test {
        Host().use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock("stderr-flood"))
            agent.newSession(SessionOptions(cwd = tmp())).prompt("go")
            val status = agent.shutdown()
            val lines = log.until { it is Event.AgentExited }.count { it is Event.AgentStderr }
            assertTrue(lines >= 20_000, "$lines stderr lines")
            assertTrue(status.stderrTail.length <= 64 * 1024)
        }
    }

    @Test
    fun `a version mismatch is typed and the agent is shut down`() = test {
        Host().use { host ->
            val log = EventLog(this, host)
            val e = assertThrows<AcpException.VersionUnsupported> { host.spawn(Fixtures.mock("version-mismatch")) }
            assertEquals(2, obj(e.data!!)["agentVersion"]!!.jsonPrimitive.int)
            val evs = log.until { it is Event.AgentExited }
            assertTrue(evs.none { it is Event.AgentReady })
            assertEquals("shutdown", str(obj(evs.last().data), "reason"))
        }
    }

    @Test
    fun `a missing agent command is SpawnFailed`() = test {
        Host().use { host ->
            val e = assertThrows<AcpException.SpawnFailed> {
                host.spawn(AgentSpec(command = "/nonexistent/agent-binary", args = listOf("--x")))
            }
            assertEquals("spawn_failed", e.code)
            assertTrue(e.detail.contains("/nonexistent/agent-binary"), e.detail)
            val empty = runCatching { host.spawn(AgentSpec(command = "", args = emptyList())) }
                .exceptionOrNull()
            assertTrue(empty is AcpException.InvalidConfig && str(obj(empty.data!!), "path") == "command", "an empty command: $empty")
            // The host is still usable after failed spawns.
            assertEquals("end_turn", host.spawn(Fixtures.mock("default")).newSession(SessionOptions(cwd = tmp())).prompt("hi").stopReason)
        }
    }

    @Test
    fun `a cwd that is not an existing directory is typed and names it`() = test {
        val dir = tmp()
        val missing = "$dir/no-such-dir"
        Host().use { host ->
            val mock = Fixtures.mock("default")
            val e = assertThrows<AcpException.InvalidConfig> { host.spawn(mock.copy(cwd = missing)) }
            assertEquals("cwd", str(obj(e.data!!), "path"))
            assertTrue(e.detail.contains(missing) && e.detail.contains("does not exist"), e.detail)
            val agent = host.spawn(mock)
            // The same rule for a session's cwd (the core's option table, docs/OPTIONS.md).
            val s = assertThrows<AcpException.InvalidConfig> { agent.newSession(SessionOptions(cwd = missing)) }
            assertEquals("cwd", str(obj(s.data!!), "path"))
            assertTrue(s.detail.contains(missing), s.detail)
        }
    }

    @Test
    fun `JSON given that would nest past the message limit is InvalidArgument`() = test {
        Host().use { host ->
            val agent = host.spawn(Fixtures.mock("default"))
            // Params are level 2 of the request: 100 more levels pass the 100-level limit; 300
            // pass serde_json's own.
            for (levels in listOf(100, 300)) {
                val params = "[".repeat(levels) + "0" + "]".repeat(levels)
                assertThrows<AcpException.InvalidArgument> { agent.extRequest("_x/deep", params) }
            }
        }
    }

    @Test
    fun `a slow-reading agent still completes`() = test {
        assertEquals("end_turn", runTurn("slow-read").second.getOrThrow().stopReason)
    }

    @Test
    fun `an agent ignoring cancel keeps streaming and ends its way`() = test {
        Host(HostOptions(cancelGraceMs = 30_000u)).use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("ignore-cancel")).newSession(SessionOptions(cwd = tmp()))
            val turn = async { session.prompt("go") }
            log.until { it is Event.SessionUpdate }
            session.cancel()
            assertEquals("end_turn", withTimeout(Fixtures.T) { turn.await() }.stopReason)
            assertFalse(log.until { it is Event.TurnEnded }.none { it is Event.SessionUpdate }, "updates after cancel still delivered")
        }
    }
}
