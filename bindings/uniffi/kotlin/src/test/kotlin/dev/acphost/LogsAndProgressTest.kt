// The log handler and `progress` events through Kotlin (the core's tests/logs_and_progress.rs, as
// a Kotlin user meets them): typed records off the host's threads, a slow or throwing handler that
// stalls nothing, a failing permission or elicitation handler whose exception (class, message,
// stack) is the resolution's `reason` and a `warn` record, an option's name instead of its id
// named as such, and spawn/handshake progress, including an agent that never answers `initialize`.
package dev.acphost

import kotlinx.coroutines.async
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files
import java.time.Instant
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit

class LogsAndProgressTest {
    /** A log handler that keeps every record. */
    private class Recorder {
        val records = ConcurrentLinkedQueue<LogRecord>()
        val handler = logHandler { records += it }

        /** Waits (bounded) for a record matching [pred]: delivery is asynchronous. */
        fun await(pred: (LogRecord) -> Boolean): LogRecord {
            val deadline = System.nanoTime() + Fixtures.T.inWholeNanoseconds
            while (System.nanoTime() < deadline) {
                records.firstOrNull(pred)?.let { return it }
                Thread.sleep(10)
            }
            throw AssertionError("no such record among ${records.map { "${it.level} ${it.target}: ${it.message}" }}")
        }
    }

    private fun steps(events: List<Event>): List<String> = events.filterIsInstance<Event.Progress>().map {
        val d = obj(it.data)
        "${str(d, "phase")} ${str(d, "stage")}"
    }

    private fun cwd() = Files.createTempDirectory("acp-kt-log").toRealPath().toString()

    @Test
    fun `spawn and handshake are reported in order and the log handler gets typed records`() = test {
        val rec = Recorder()
        val before = Instant.now()
        Host(HostOptions(progressEvents = true), logHandler = rec.handler).use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock("default"))
            val evs = log.until { it is Event.Progress && str(obj(it.data), "phase") == "handshake" && str(obj(it.data), "stage") == "done" }
            assertEquals(listOf("spawn started", "spawn done", "handshake started", "handshake done"), steps(evs))
            assertTrue(evs.all { it.agent == agent.id() })
            assertTrue(evs.indexOfFirst { it is Event.AgentReady } in 0 until evs.size - 1, "agent_ready before the handshake's done")
            val done = rec.await { it.target == "handshake" && it.message.startsWith("handshake done") }
            assertEquals(LogLevel.INFO, done.level)
            assertEquals(agent.id(), done.agent)
            assertTrue(!done.at.isBefore(before) && done.at.isBefore(Instant.now().plusSeconds(1)), "${done.at}")
            assertEquals(0, agent.shutdown().exitCode)
            val exited = rec.await { "exited" in it.message }
            assertEquals(agent.id(), exited.agent)
            assertEquals(0uL, host.droppedLogRecords())
        }
    }

    @Test
    fun `without the option there are no progress events, and logLevel filters records`() = test {
        val rec = Recorder()
        Host(HostOptions(logLevel = "warn"), logHandler = rec.handler).use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock("default"))
            val session = agent.newSession(SessionOptions(cwd = cwd()))
            assertEquals("end_turn", session.prompt("hello").stopReason)
            agent.shutdown()
            val evs = log.until { it is Event.AgentExited }
            assertEquals(emptyList<String>(), steps(evs))
        }
        assertTrue(rec.records.all { it.level == LogLevel.WARN || it.level == LogLevel.ERROR }, rec.records.toString())
        // (The core shows the level in force only when there is a handler: without one, nothing is.)
        assertEquals("\"warn\"", obj(Host(HostOptions(logLevel = "warn"), logHandler = rec.handler).use { it.effectiveOptions() })["logLevel"].toString())
        val e = assertThrows<AcpException.InvalidConfig> { Host(HostOptions(logLevel = "loud")) }
        assertEquals("logLevel", str(obj(e.data!!), "path"))
    }

    @Test
    fun `an agent that never answers initialize is reported waiting, then failed`() = test {
        val rec = Recorder()
        // The mock sleeps 7 s before it reads anything: `initialize` times out at 6.5 s.
        val options = HostOptions(progressEvents = true, requestTimeoutMs = 6500u)
        Host(options, logHandler = rec.handler).use { host ->
            val log = EventLog(this, host)
            val started = System.nanoTime()
            val e = runCatching { host.spawn(AgentSpec(command = Fixtures.mockAgent, args = listOf("--sleep", "7000"))) }.exceptionOrNull()
            assertTrue(e is AcpException.Timeout, "spawn failed with $e")
            assertTrue(ms(started) >= 6000, "the request timeout held (${ms(started)} ms)")
            val evs = log.until { it is Event.Progress && str(obj(it.data), "stage") == "failed" }
            assertEquals(
                listOf("spawn started", "spawn done", "handshake started", "handshake waiting", "handshake failed"),
                steps(evs),
            )
            val waiting = obj(evs.filterIsInstance<Event.Progress>().first { str(obj(it.data), "stage") == "waiting" }.data)
            assertTrue(waiting["elapsedMs"]!!.jsonPrimitive.long >= 4900, waiting.toString())
            assertTrue("initialize" in str(waiting, "message")!!, waiting.toString())
            val failed = obj(evs.last().data)
            assertTrue(str(failed, "message")!!.isNotEmpty(), failed.toString())
            val warned = rec.await { it.target == "handshake" && it.message.startsWith("handshake waiting") }
            assertEquals(LogLevel.WARN, warned.level)
        }
    }

    @Test
    fun `a stuck, then throwing log handler stalls no turn and breaks nothing`() = test {
        val gate = CountDownLatch(1)
        val calls = ConcurrentLinkedQueue<LogRecord>()
        // A raw LogHandler (no adapter catching for it): it blocks until the turns are done, then
        // throws on every record.
        val handler = object : LogHandler {
            override fun log(record: LogRecord) {
                gate.await(Fixtures.T.inWholeMilliseconds, TimeUnit.MILLISECONDS)
                calls += record
                throw IllegalStateException("log sink down")
            }
        }
        Host(HostOptions(logLevel = "trace", wireEvents = true), logHandler = handler).use { host ->
            val started = System.nanoTime()
            val agent = host.spawn(Fixtures.mock("default"))
            val session = agent.newSession(SessionOptions(cwd = cwd()))
            repeat(3) { assertEquals("end_turn", session.prompt("hello $it").stopReason) }
            assertTrue(ms(started) < 10_000, "turns ran while the handler was stuck (${ms(started)} ms)")
            assertTrue(calls.isEmpty(), "the handler was held")
            gate.countDown()
            val deadline = System.nanoTime() + Fixtures.T.inWholeNanoseconds
            while (calls.isEmpty() && System.nanoTime() < deadline) Thread.sleep(10)
            assertTrue(calls.isNotEmpty(), "records were delivered once the handler went on")
            // It threw on every record; the host goes on.
            assertEquals("end_turn", session.prompt("after").stopReason)
            assertEquals(0, agent.shutdown().exitCode)
        }
    }

    @Test
    fun `a handler that falls 1024 records behind loses the rest, counted and told`() = test {
        // A turn with 1500 non-JSON stdout lines: one `debug` record each, while the handler is stuck.
        val dir = Files.createTempDirectory("acp-kt-log-flood").toRealPath()
        val noise = (1..1500).joinToString(",") { """{"raw":"noise $it"}""" }
        val scenario = dir.resolve("noise.json")
        Files.writeString(scenario, """{"prompts":[[$noise,{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}}]]}""")
        val gate = CountDownLatch(1)
        val got = ConcurrentLinkedQueue<LogRecord>()
        val handler = logHandler {
            gate.await(Fixtures.T.inWholeMilliseconds, TimeUnit.MILLISECONDS)
            got += it
        }
        Host(HostOptions(logLevel = "debug"), logHandler = handler).use { host ->
            val agent = host.spawn(AgentSpec(command = Fixtures.mockAgent, args = listOf("--scenario", scenario.toString())))
            val session = agent.newSession(SessionOptions(cwd = dir.toString()))
            assertEquals("done", session.prompt("go").text)
            val dropped = host.droppedLogRecords()
            assertTrue(dropped >= 1500uL - 1025uL, "dropped $dropped")
            gate.countDown()
            val deadline = System.nanoTime() + Fixtures.T.inWholeNanoseconds
            while (got.none { it.target == "log" } && System.nanoTime() < deadline) Thread.sleep(10)
            val notice = got.firstOrNull { it.target == "log" } ?: throw AssertionError("no drop notice among ${got.size} records")
            assertEquals(LogLevel.WARN, notice.level)
            assertTrue(notice.message.endsWith("log records dropped: the log handler fell 1024 records behind"), notice.message)
            // Told once it went on: every drop so far (the host is idle, so no more came since).
            assertEquals(dropped, notice.message.substringBefore(' ').toULong(), notice.message)
            // The notice comes right after the record the handler was stuck on, before the queued
            // ones: wait for the queue's first (a loaded machine delivers them later).
            while (got.none { it.message.startsWith("a non-JSON line") } && System.nanoTime() < deadline) Thread.sleep(10)
            assertTrue(got.count { it.message.startsWith("a non-JSON line") } in 1..1025, "${got.size} delivered")
            assertEquals(0, agent.shutdown().exitCode)
        }
    }

    private suspend fun permissionRun(handler: PermissionHandler, rec: Recorder): Pair<JsonObject, String> {
        val run = FailClosedTest.permissionWrite(handler = handler, logHandler = rec.handler)
        FailClosedTest.assertDenied(run, "invalid_answer")
        val resolved = run.resolutions().single()
        val session = run.events.first { it is Event.PermissionRequested }.session!!
        return resolved to session
    }

    @Test
    fun `a throwing permission handler's class, message and stack are the reason, and logged at warn`() = test {
        val rec = Recorder()
        val (resolved, session) = permissionRun(permissionHandler { throw IllegalStateException("UI unavailable") }, rec)
        val reason = str(resolved, "reason")!!
        assertTrue(reason.startsWith("the permission handler failed: "), reason)
        assertTrue("java.lang.IllegalStateException: UI unavailable" in reason, reason)
        assertTrue("\tat dev.acphost.LogsAndProgressTest" in reason, "the stack trace names the handler's frame: $reason")
        val r = rec.await { it.target == "permission" }
        assertEquals(LogLevel.WARN, r.level)
        assertEquals(session, r.session)
        assertTrue("UI unavailable" in r.message && "\tat dev.acphost.LogsAndProgressTest" in r.message, r.message)
    }

    @Test
    fun `a raw PermissionHandler's exception keeps its stack too`() = test {
        val rec = Recorder()
        val raw = object : PermissionHandler {
            override suspend fun decide(request: PermissionRequest): String? = throw UnsupportedOperationException("no dialog")
        }
        val reason = str(permissionRun(raw, rec).first, "reason")!!
        assertTrue("java.lang.UnsupportedOperationException: no dialog" in reason, reason)
        assertTrue("\tat dev.acphost.LogsAndProgressTest" in reason, reason)
    }

    @Test
    fun `a handler answering an option's name instead of its id is told so`() = test {
        val rec = Recorder()
        val (resolved, _) = permissionRun(permissionHandler { it.optionOfKind("allow_once")!!.name }, rec)
        val reason = str(resolved, "reason")!!
        assertTrue("is not one of the offered option ids" in reason && "id is expected, not its name" in reason, reason)
        assertTrue(rec.await { it.target == "permission" }.message.contains("not its name"))
    }

    @Test
    fun `a throwing elicitation handler's exception is the reason, and logged at warn`() = test {
        val rec = Recorder()
        val handler = elicitationHandler { throw IllegalArgumentException("form UI gone") }
        Host(HostOptions(), elicitationHandler = handler, logHandler = rec.handler).use { host ->
            val events = async { host.events().takeWhile { it !is Event.AgentExited }.toList() }
            val agent = host.spawn(Fixtures.mock("elicitation"))
            val session = agent.newSession(SessionOptions(cwd = cwd()))
            assertEquals("end_turn", session.prompt("deploy").stopReason)
            agent.shutdown()
            val resolved = events.await().filterIsInstance<Event.ElicitationResolved>().map { obj(it.data) }
            assertEquals(2, resolved.size, resolved.toString())
            for (d in resolved) {
                assertEquals("invalid_answer", str(d, "decidedBy"))
                val reason = str(d, "reason")!!
                assertTrue("java.lang.IllegalArgumentException: form UI gone" in reason, reason)
                assertTrue("\tat dev.acphost.LogsAndProgressTest" in reason, reason)
            }
            val r = rec.await { it.target == "elicitation" }
            assertEquals(LogLevel.WARN, r.level)
            assertTrue("form UI gone" in r.message, r.message)
        }
    }

    @Test
    fun `progressEvents and logLevel come from a JSON document too`() {
        Host(HostOptions.fromJson("""{"progressEvents": true, "logLevel": "debug"}"""), logHandler = logHandler {}).use { host ->
            val eff = obj(host.effectiveOptions())
            assertEquals("true", eff["progressEvents"].toString())
            assertEquals("\"debug\"", eff["logLevel"].toString())
        }
        val e = assertThrows<AcpException.InvalidConfig> { Host(HostOptions.fromJson("""{"progressEvents": "yes"}""")) }
        assertEquals("progressEvents", str(obj(e.data!!), "path"))
    }
}
