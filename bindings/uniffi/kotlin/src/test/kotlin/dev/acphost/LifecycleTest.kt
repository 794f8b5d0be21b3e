// Coroutine cancellation and closing without leaks: a cancelled prompt coroutine tells the agent
// (`session/cancel`) and settles at once; `close()`/`use {}` and JVM exit leave no agent process;
// calls after shutdown fail typed; the event Flow ends after shutdown and loses nothing under a
// slow collector; the Kotlin lists of event kinds and error codes match the core's. Model: the
// Python face's cancel/abort tests (test_api.py, test_streams.py) and tests/test_exit.py.
package dev.acphost

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.io.File
import java.nio.file.Files
import java.nio.file.Paths
import java.util.Collections
import java.util.concurrent.TimeUnit

/**
 * The child JVM of the exit tests: spawns an agent that ignores stdin EOF (so only the host's
 * care can end it), prints its pid, then leaves without closing the host: `exit` calls
 * System.exit(0) with a prompt in flight once a line arrives on stdin, `kill` waits to be killed
 * (destroyForcibly).
 */
object LifecycleExitChild {
    @JvmStatic
    fun main(args: Array<String>) = runBlocking {
        val (mode, mock, scenario) = args
        val host = Host(HostOptions())
        val agent = host.spawn(AgentSpec(command = mock, args = listOf("--scenario", scenario)))
        val session = agent.newSession(SessionOptions(cwd = "/"))
        launch(Dispatchers.IO) { runCatching { session.prompt("in flight at exit") } }
        delay(200)
        println("PID ${agent.pid()}")
        System.out.flush()
        when (mode) {
            // Exits once the test has seen the agent running (a line on stdin): exiting right
            // after the pid raced the test's check (the host's exit had already ended the agent).
            "exit" -> {
                readLine()
                System.exit(0)
            }
            else -> Thread.sleep(60_000)
        }
    }
}

class LifecycleTest {

    companion object {
        fun tmp(): String = Files.createTempDirectory("acp-kt-life").toRealPath().toString()

        /** The methods of the `wire` events going out (needs `wireEvents`). */
        fun outMethods(events: List<Event>): List<String> = events.filterIsInstance<Event.Wire>()
            .map { obj(it.data) }
            .filter { str(it, "direction") == "out" }
            .mapNotNull { str(it["message"]!!.jsonObject, "method") }

        fun isToolCall(e: Event) = e is Event.SessionUpdate && e.updateKind == "tool_call"
    }

    // ------------------------------------------------------------------ coroutine cancellation

    @Test
    fun `cancelling the prompt's coroutine sends session cancel and settles at once`() = test {
        Host(HostOptions(wireEvents = true, cancelGraceMs = 5_000u)).use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("wait-for-cancel")).newSession(SessionOptions(cwd = tmp()))
            val job = launch { session.prompt("go") }
            log.until(::isToolCall) // the agent now waits for the cancel
            val started = System.nanoTime()
            job.cancel()
            job.join()
            assertTrue(ms(started) < 2_000, "the cancelled call settled after ${ms(started)} ms")
            assertTrue(job.isCancelled)
            val evs = log.until { it is Event.TurnEnded }
            assertTrue("session/cancel" in outMethods(evs), "session/cancel went out: ${outMethods(evs)}")
            assertEquals("cancelled", str(obj(evs.last().data), "stopReason"), "the agent honoured the cancel")
            // The session is not left busy: the next turn runs (and is cancelled the explicit way).
            val next = async { session.prompt("again") }
            log.until(::isToolCall)
            session.cancel()
            assertEquals("cancelled", withTimeout(Fixtures.T) { next.await() }.stopReason)
        }
    }

    @Test
    fun `a withTimeout around prompt cancels the turn the same way`() = test {
        Host(HostOptions(wireEvents = true, cancelGraceMs = 5_000u)).use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("wait-for-cancel")).newSession(SessionOptions(cwd = tmp()))
            val started = System.nanoTime()
            assertThrows<TimeoutCancellationException> { withTimeout(500) { session.prompt("go") } }
            assertTrue(ms(started) < 3_000, "withTimeout(500) returned after ${ms(started)} ms")
            val evs = log.until { it is Event.TurnEnded }
            assertTrue("session/cancel" in outMethods(evs), outMethods(evs).toString())
            assertEquals("cancelled", str(obj(evs.last().data), "stopReason"))
        }
    }

    @Test
    fun `cancelling a prompt the agent never answers settles at once, the turn ends after the grace`() = test {
        Host(HostOptions(cancelGraceMs = 2_000u)).use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("hang")).newSession(SessionOptions(cwd = tmp()))
            val job = launch { session.prompt("go") }
            log.until { it is Event.SessionUpdate }
            val started = System.nanoTime()
            job.cancel()
            job.join()
            assertTrue(ms(started) < 1_500, "CancellationException at once, not after the grace (${ms(started)} ms)")
            val ended = obj(log.until { it is Event.TurnEnded }.last().data)
            assertEquals("cancelled", str(ended["error"]!!.jsonObject, "kind"))
            // A new turn starts: the session is not left busy by the ignoring agent.
            val again = launch { session.prompt("again") }
            log.until { it is Event.TurnStarted }
            again.cancel()
        }
    }

    // ------------------------------------------------------------------ close, shutdown

    @Test
    fun `close without shutdown kills the agent`() = test {
        val host = Host(HostOptions(shutdownGraceMs = 300u))
        val (pid, session) = try {
            val agent = host.spawn(Fixtures.mock("ignore-stdin-eof"))
            val session = agent.newSession(SessionOptions(cwd = tmp()))
            assertEquals("end_turn", session.prompt("hi").stopReason)
            Pair(agent.pid()!!.toLong(), session)
        } catch (e: Throwable) {
            host.close()
            throw e
        }
        assertTrue(alive(pid))
        withContext(Dispatchers.IO) { host.close() } // close(), not shutdown(): what use {} does
        assertTrue(waitGone(pid), "agent $pid outlived host.close()")
        // The handles that outlive the host fail typed, at once.
        withTimeout(5_000) {
            val e = runCatching { session.prompt("after close") }.exceptionOrNull()
            assertTrue(e is AcpException.Closed || e is AcpException.AgentExited, "prompt after close: $e")
        }
    }

    @Test
    fun `use {} with a turn in flight kills the agent and fails the turn typed`() = test {
        var pid = 0L
        val turn = Host(HostOptions(shutdownGraceMs = 300u)).use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock("wait-for-cancel"))
            pid = agent.pid()!!.toLong()
            val session = agent.newSession(SessionOptions(cwd = tmp()))
            val turn = async(Dispatchers.IO) { runCatching { session.prompt("go") } }
            log.until(::isToolCall)
            turn
        }
        assertTrue(waitGone(pid), "agent $pid outlived use {}")
        val e = withTimeout(Fixtures.T) { turn.await() }.exceptionOrNull()
        assertTrue(e is AcpException.Closed || e is AcpException.AgentExited, "the pending prompt failed: $e")
    }

    @Test
    fun `shutdown twice is fine and later calls fail typed instead of hanging`() = test {
        Host().use { host ->
            val events = async { host.events().toList() }
            val agent = host.spawn(Fixtures.mock("default"))
            val pid = agent.pid()!!.toLong()
            val session = agent.newSession(SessionOptions(cwd = tmp()))
            assertEquals("end_turn", session.prompt("hi").stopReason)
            assertFalse(host.isShutDown())
            host.shutdown()
            assertTrue(host.isShutDown())
            withTimeout(5_000) { host.shutdown() }
            assertTrue(waitGone(pid))
            withTimeout(5_000) {
                assertThrows<AcpException.Closed> { host.spawn(Fixtures.mock("default")) }
                val p = runCatching { session.prompt("again") }.exceptionOrNull()
                assertTrue(p is AcpException.Closed || p is AcpException.AgentExited, "prompt after shutdown: $p")
                val n = runCatching { agent.newSession(SessionOptions(cwd = tmp())) }.exceptionOrNull()
                assertTrue(n is AcpException.Closed || n is AcpException.AgentExited, "newSession after shutdown: $n")
                assertThrows<AcpException.NotFound> { host.respondPermission(1_000_000u, null) }
                agent.shutdown() // idempotent: reports how it ended
            }
            val all = withTimeout(Fixtures.T) { events.await() }
            assertTrue(all.last() is Event.AgentExited, "agent_exited last: ${all.map { it.kind }}")
            assertEquals("shutdown", str(obj(all.last().data), "reason"))
        }
    }

    @Test
    fun `events can be taken many times, and not at all when disabled`() = test {
        Host().use { host ->
            // Each call (and each collection) reads a stream of its own (SharedEventsTest).
            host.events()
            host.events()
            host.eventStream().close()
        }
        Host(HostOptions(events = false)).use { host ->
            assertThrows<AcpException.Unsupported> { host.events() }
            // Without events the calls still work (return values only).
            assertEquals("end_turn", host.spawn(Fixtures.mock("default")).newSession(SessionOptions(cwd = tmp())).prompt("hi").stopReason)
        }
    }

    @Test
    fun `the event Flow completes after shutdown with agent_exited last`() = test {
        Host().use { host ->
            val events = async { host.events().toList() }
            val a = host.spawn(Fixtures.mock("default"))
            val b = host.spawn(Fixtures.mock("default"))
            assertEquals("end_turn", a.newSession(SessionOptions(cwd = tmp())).prompt("hi").stopReason)
            assertEquals("end_turn", b.newSession(SessionOptions(cwd = tmp())).prompt("hi").stopReason)
            host.shutdown()
            val all = withTimeout(Fixtures.T) { events.await() }
            assertEquals(2, all.count { it is Event.AgentExited })
            assertTrue(all.last() is Event.AgentExited)
            for (id in listOf(a.id(), b.id())) {
                assertTrue(all.last { it.agent == id } is Event.AgentExited, "agent_exited is agent $id's last event")
            }
            val seqs = all.map { it.seq }
            assertEquals(seqs.sorted().distinct(), seqs, "seq strictly increasing")
        }
    }

    // ------------------------------------------------------------------ backpressure

    @Test
    fun `a slow collector loses nothing and holds the agent back`() = test {
        val n = 3_000
        Host(HostOptions(eventCapacity = 16u)).use { host ->
            val flow = host.events(batch = 8u)
            val session = host.spawn(Fixtures.mock("default", "--flood", "$n")).newSession(SessionOptions(cwd = tmp()))
            val turn = async(Dispatchers.IO) { session.prompt("flood") }
            delay(700) // nobody pulls yet (well under the core's 3 s stall timeout)
            assertFalse(turn.isCompleted, "the turn finished although nobody pulled $n events")
            val seen = mutableListOf<Event>()
            flow.takeWhile { it !is Event.TurnEnded }.collect {
                seen += it
                if (seen.size % 200 == 0) delay(50) // a slow collector
            }
            assertEquals("end_turn", withTimeout(Fixtures.T) { turn.await() }.stopReason)
            val seqs = seen.map { it.seq }
            assertEquals(1uL, seqs.first())
            assertEquals((1uL..seqs.last()).toList(), seqs, "every seq, in order, none lost")
            assertEquals(n, seen.count { it is Event.SessionUpdate })
        }
    }

    @Test
    fun `a host whose events nobody takes never stalls the agent`() = test {
        // As in the Python face: an embedder that only uses return values must not be held back by
        // a queue nobody will ever pull.
        Host(HostOptions(eventCapacity = 16u)).use { host ->
            val session = host.spawn(Fixtures.mock("default", "--flood", "2000")).newSession(SessionOptions(cwd = tmp()))
            assertEquals("end_turn", session.prompt("flood").stopReason)
            // Taken late: the newest events that fit the queue are still there, in order.
            val late = host.eventStream()
            val got = late.nextBatch(1000u)
            assertEquals(16, got.size, "as many as the event queue holds")
            assertEquals(got.map { it.seq }.sorted(), got.map { it.seq })
            assertTrue(late.droppedBeforeTaken() > 0uL)
        }
    }

    @Test
    fun `a collection that stops early never stalls the agent`() = test {
        Host(HostOptions(eventCapacity = 16u)).use { host ->
            val events = host.events()
            val agent = host.spawn(Fixtures.mock("default", "--flood", "2000"))
            assertTrue(events.first() is Event.AgentReady)
            val session = agent.newSession(SessionOptions(cwd = tmp()))
            assertEquals("end_turn", session.prompt("flood").stopReason)
        }
    }

    // ------------------------------------------------------------------ the face's lists

    @Test
    fun `the Kotlin event classes and error codes match the core's lists`() {
        assertEquals(eventKinds().size, eventKinds().toSet().size)
        assertEquals(eventKinds().toSet(), Event.KNOWN_KINDS, "a kind of the core has no Event class (or vice versa)")
        val variants = AcpException::class.java.declaredClasses.filter { AcpException::class.java.isAssignableFrom(it) }
        val codes = variants.map {
            val e = it.getConstructor(String::class.java, String::class.java).newInstance("m", null) as AcpException
            e.code
        }
        assertEquals(codes.size, codes.toSet().size, "one code per variant: $codes")
        assertEquals(errorCodes().toSet(), codes.toSet(), "AcpException variants vs the core's error table")
        assertEquals(errorCodes().size, codes.size)
    }

    // ------------------------------------------------------------------ JVM exit

    private fun exitChild(mode: String): Long {
        // An agent that ignores stdin EOF and waits in a turn: only the host's own care ends it.
        val scenario = Files.createTempFile("ignore-eof-wait", ".json")
        Files.writeString(scenario, """{"description": "waits, ignores stdin EOF", "ignoreStdinEof": true, "prompts": [[{"waitForCancel": true}]]}""")
        val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString()
        val child = ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), LifecycleExitChild::class.java.name,
            mode, Fixtures.mockAgent, scenario.toString())
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .directory(File("/"))
            .start()
        try {
            val reader = child.inputStream.bufferedReader()
            val line = generateSequence { reader.readLine() }.firstOrNull { it.startsWith("PID ") }
                ?: throw AssertionError("the child printed no pid (exit ${child.waitFor(5, TimeUnit.SECONDS).let { if (it) child.exitValue() else "?" }})")
            val pid = line.removePrefix("PID ").trim().toLong()
            assertTrue(alive(pid), "agent $pid runs before the child leaves")
            if (mode == "kill") child.destroyForcibly()
            if (mode == "exit") child.outputStream.use { it.write('\n'.code) }
            assertTrue(child.waitFor(Fixtures.T.inWholeSeconds, TimeUnit.SECONDS), "the child JVM did not exit")
            if (mode == "exit") assertEquals(0, child.exitValue(), "System.exit(0) with a host open exits cleanly")
            return pid
        } finally {
            child.destroyForcibly()
            Files.deleteIfExists(scenario)
        }
    }

    @Test
    fun `System exit without closing the host leaves no agent behind`() = test {
        val pid = withContext(Dispatchers.IO) { exitChild("exit") }
        assertTrue(waitGone(pid, 5_000), "agent $pid outlived the JVM that called System.exit")
    }

    @Test
    fun `a JVM killed with destroyForcibly leaves no agent behind`() = test {
        val pid = withContext(Dispatchers.IO) { exitChild("kill") }
        assertTrue(waitGone(pid, 5_000), "agent $pid outlived the killed JVM")
    }
}
