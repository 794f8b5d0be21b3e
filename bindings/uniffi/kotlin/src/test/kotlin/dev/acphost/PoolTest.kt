// Agent pools through the Kotlin face (Host.pool): process-per-session gives each session its own
// process and release ends it; the cap fails a session with Busy; shared mode packs sessions; two
// prompts on one pooled session from two coroutines run one after the other (the second waits
// instead of failing Busy); cancel() drops the queued prompt (Cancelled, never sent), and a
// cancelled coroutine leaves the line without wedging it; shutdown and the host's close leave no
// process; a bad config is a typed InvalidConfig. Processes are found by a marker variable in
// their environment.
package dev.acphost

import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.launch
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.io.File
import java.nio.file.Files
import java.nio.file.Paths
import java.util.UUID

class PoolTest {

    companion object {
        fun opts() = SessionOptions(cwd = Files.createTempDirectory("acp-kt-pool").toRealPath().toString())

        /** The mock with a marker in its environment (to find its processes). */
        fun marked(scenario: String, mark: String) = Fixtures.mock(scenario, env = mapOf("ACP_KT_POOL" to mark))

        /** Live processes carrying the marker. */
        fun processes(mark: String): List<Long> = (File("/proc").listFiles() ?: emptyArray())
            .mapNotNull { it.name.toLongOrNull() }
            .filter { pid ->
                val env = runCatching { Files.readAllBytes(Paths.get("/proc/$pid/environ")) }.getOrNull()
                env != null && String(env).split('\u0000').contains("ACP_KT_POOL=$mark") && alive(pid)
            }

        fun requestId(e: Event): ULong = obj(e.data)["requestId"]!!.jsonPrimitive.long.toULong()

        /** (kind, turn) of the turn events of a session, in order. */
        fun turns(events: List<Event>, session: String) = events
            .filter { (it is Event.TurnStarted || it is Event.TurnEnded) && it.session == session }
            .map { it.kind to it.turn }
    }

    @Test
    fun `pool options name only what they change and fromJson takes the document`() {
        assertEquals(PoolOptions(null, null, null, null, null, null), PoolOptions())
        assertEquals("""{"mode": "shared"}""", PoolOptions.fromJson("""{"mode": "shared"}""").document)
    }

    @Test
    fun `process per session gives each session its own process and release ends it`() = test {
        val mark = UUID.randomUUID().toString()
        Host().use { host ->
            val log = EventLog(this, host)
            val pool = host.pool(marked("default", mark), PoolOptions.fromJson("""{"warmSpares": 1, "maxAgents": 2, "idleTimeoutMs": null}"""))
            pool.ready()
            assertEquals(1u, pool.stats().spares)

            val a = pool.openSession(opts())
            // The refill of the spare `a` took is starting: `b` gets it instead of failing Busy.
            val b = pool.openSession(opts())
            val (pa, pb) = requireNotNull(a.agent().pid()).toLong() to requireNotNull(b.agent().pid()).toLong()
            assertNotEquals(pa, pb)
            assertNotEquals(a.agent().id(), b.agent().id())
            assertTrue(alive(pa) && alive(pb))
            assertEquals("end_turn", a.prompt("hi").stopReason)
            assertEquals("end_turn", b.prompt("hi").stopReason)
            assertEquals(PoolStats(agents = 2u, spares = 0u, starting = 0u, sessions = 2u), pool.stats())
            assertEquals(a.id(), a.session().id())

            val aId = a.agent().id()
            a.release()
            log.until { it is Event.AgentExited && it.agent == aId }
            assertTrue(waitGone(pa), "the released session's process is gone")
            assertTrue(alive(pb))
            assertThrows<AcpException.Closed> { a.prompt("late") }
            assertEquals(1u, pool.stats().sessions)

            pool.shutdown()
            assertEquals(emptyList<Long>(), processes(mark), "no process of the pool is left")
            assertEquals(PoolStats(0u, 0u, 0u, 0u), pool.stats())
            assertThrows<AcpException.Closed> { pool.openSession(opts()) }
            assertTrue(runCatching { b.prompt("after shutdown") }.exceptionOrNull() is AcpException)
        }
    }

    @Test
    fun `at the cap a session fails Busy until one is released`() = test {
        Host().use { host ->
            val pool = host.pool(Fixtures.mock("default"), PoolOptions(warmSpares = 0u, maxAgents = 1u))
            val a = pool.openSession(opts())
            val e = assertThrows<AcpException.Busy> { pool.openSession(opts()) }
            assertEquals("busy", e.code)
            a.release()
            assertEquals("end_turn", pool.openSession(opts()).prompt("hi").stopReason)
            pool.shutdown()
        }
    }

    @Test
    fun `shared mode packs sessions onto a process`() = test {
        Host().use { host ->
            val pool = host.pool(Fixtures.mock("default"), PoolOptions(mode = PoolMode.SHARED, maxSessionsPerAgent = 2u, warmSpares = 0u, maxAgents = 2u))
            val s = List(3) { pool.openSession(opts()) }
            assertEquals(s[0].agent().id(), s[1].agent().id())
            assertNotEquals(s[0].agent().id(), s[2].agent().id())
            assertEquals(PoolStats(agents = 2u, spares = 0u, starting = 0u, sessions = 3u), pool.stats())
            s[0].release()
            assertTrue(alive(requireNotNull(s[1].agent().pid()).toLong()), "the process serves its other session")
            assertEquals("end_turn", s[1].prompt("hi").stopReason)
            pool.shutdown()
        }
    }

    @Test
    fun `two concurrent prompts on one pooled session run one after the other`() = test {
        Host(HostOptions(permission = "manual")).use { host ->
            val log = EventLog(this, host)
            val pool = host.pool(Fixtures.mock("default"), PoolOptions(warmSpares = 0u))
            val s = pool.openSession(opts())
            val first = async(start = CoroutineStart.UNDISPATCHED) { s.prompt("first") }
            val asked = log.until { it is Event.PermissionRequested }.last()
            // The first turn waits for this answer: the second prompt is certainly queued behind it.
            val second = async(start = CoroutineStart.UNDISPATCHED) { s.prompt("second") }
            host.respondPermission(requestId(asked), null)
            val askedAgain = log.until { it is Event.PermissionRequested }.last()
            assertNotEquals(asked.turn, askedAgain.turn)
            host.respondPermission(requestId(askedAgain), null)
            val (r1, r2) = first.await() to second.await()
            assertEquals("end_turn", r1.stopReason)
            assertEquals("end_turn", r2.stopReason)
            assertTrue(r1.turn < r2.turn)
            log.until { it is Event.TurnEnded && it.turn == r2.turn }
            assertEquals(
                listOf("turn_started" to r1.turn, "turn_ended" to r1.turn, "turn_started" to r2.turn, "turn_ended" to r2.turn),
                turns(log.all.toList(), s.id()),
            )
            pool.shutdown()
        }
    }

    @Test
    fun `cancel drops the queued prompt and a cancelled coroutine leaves the line`() = test {
        Host().use { host ->
            val log = EventLog(this, host)
            val pool = host.pool(Fixtures.mock("wait-for-cancel"), PoolOptions(warmSpares = 0u))
            val s = pool.openSession(opts())
            val running = async(start = CoroutineStart.UNDISPATCHED) { s.prompt("running") }
            log.until { it is Event.TurnStarted }
            val queued = async(start = CoroutineStart.UNDISPATCHED) { runCatching { s.prompt("queued") } }
            val abandoned = launch(start = CoroutineStart.UNDISPATCHED) { s.prompt("abandoned") }
            abandoned.cancelAndJoin()
            s.cancel()
            assertEquals("cancelled", running.await().stopReason)
            val e = queued.await().exceptionOrNull()
            assertTrue(e is AcpException.Cancelled, "the queued prompt fails Cancelled: $e")

            // Not wedged: the next prompt is the second turn to start (neither the queued nor the
            // abandoned prompt was sent).
            val next = async(start = CoroutineStart.UNDISPATCHED) { s.prompt("next") }
            val nextTurn = log.until { it is Event.TurnStarted }.last().turn
            assertEquals(2, log.all.count { it is Event.TurnStarted && it.session == s.id() })

            // Cancelling the coroutine of the running prompt cancels its turn; the prompt queued
            // behind it starts once that turn has ended (not Busy).
            val behind = async(start = CoroutineStart.UNDISPATCHED) { s.prompt("behind") }
            next.cancelAndJoin()
            val started = log.until { it is Event.TurnStarted }
            assertTrue(started.any { it is Event.TurnEnded && it.turn == nextTurn }, "${started.map { it.kind }}")
            s.cancel()
            assertEquals("cancelled", behind.await().stopReason)
            assertEquals(3, log.all.count { it is Event.TurnStarted && it.session == s.id() })

            // Release fails a waiting prompt with Closed.
            val last = async(start = CoroutineStart.UNDISPATCHED) { runCatching { s.prompt("last") } }
            log.until { it is Event.TurnStarted }
            val waiting = async(start = CoroutineStart.UNDISPATCHED) { runCatching { s.prompt("waiting") } }
            s.release()
            assertTrue(waiting.await().exceptionOrNull() is AcpException.Closed)
            last.await()
            pool.shutdown()
        }
    }

    @Test
    fun `shutdown and the host's close leave no process`() = test {
        val mark = UUID.randomUUID().toString()
        Host().use { host ->
            val pool = host.pool(marked("default", mark), PoolOptions(warmSpares = 2u, maxAgents = 3u))
            pool.ready()
            val s = pool.openSession(opts())
            assertEquals("end_turn", s.prompt("hi").stopReason)
            assertTrue(processes(mark).size >= 2)
            pool.shutdown()
            assertEquals(emptyList<Long>(), processes(mark))
            assertThrows<AcpException.Closed> { pool.ready() }

            // A second pool, left running: the host's close ends it.
            val other = host.pool(marked("default", mark), PoolOptions(warmSpares = 2u))
            other.ready()
            other.openSession(opts())
            other.ready()
            assertEquals(3, processes(mark).size, "a session and a refilled pair of spares")
        }
        assertEquals(emptyList<Long>(), processes(mark))
    }

    @Test
    fun `a bad config is a typed InvalidConfig and starts nothing`() = test {
        val mark = UUID.randomUUID().toString()
        Host().use { host ->
            for (bad in listOf(
                PoolOptions(maxAgents = 0u) to "pool.maxAgents",
                PoolOptions(warmSpares = 3u, maxAgents = 2u) to "pool.warmSpares",
                PoolOptions(mode = PoolMode.SHARED, maxSessionsPerAgent = 0u) to "pool.maxSessionsPerAgent",
                PoolOptions(maxSessionsPerAgent = 2u) to "pool.maxSessionsPerAgent",
            )) {
                val e = assertThrows<AcpException.InvalidConfig> { host.pool(marked("default", mark), bad.first) }
                assertEquals("invalid_config", e.code)
                assertEquals(bad.second, str(obj(requireNotNull(e.data)), "path"), "${bad.first}")
            }
            assertEquals(emptyList<Long>(), processes(mark))
            host.shutdown()
            assertThrows<AcpException.Closed> { host.pool(marked("default", mark), PoolOptions()) }
        }
    }
}
