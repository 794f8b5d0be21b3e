// session.steer behind `unstable = listOf("_session/steering")` (docs/STEERING.md): injected into
// the running turn of an agent that advertises steering, queued then prompted as its own turn
// otherwise, rejected by a cancel; every step an `Event.Steer`.
package dev.acphost

import kotlinx.coroutines.async
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.nio.file.Files

class SteerTest {
    private fun tmp(): String = Files.createTempDirectory("acp-kt-steer").toRealPath().toString()

    private val optIn = HostOptions(unstable = listOf("_session/steering"))

    private fun steers(evs: List<Event>): List<Pair<String?, ULong?>> =
        evs.filterIsInstance<Event.Steer>().map { str(obj(it.data), "outcome") to it.turn }

    @Test
    fun `without the opt-in steer is unsupported`() = test {
        Host(HostOptions()).use { host ->
            val session = host.spawn(Fixtures.mock("steering")).newSession(SessionOptions(cwd = tmp()))
            val e = assertThrows(AcpException.Unsupported::class.java) {
                kotlinx.coroutines.runBlocking { session.steer("hi") }
            }
            assertTrue("_session/steering" in e.message.orEmpty(), e.message)
        }
    }

    @Test
    fun `an agent that advertises steering takes the text into the running turn`() = test {
        Host(optIn).use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("steering")).newSession(SessionOptions(cwd = tmp()))
            val turn = async { session.prompt("go") }
            val started = log.until { it is Event.TurnStarted }.last()
            val r = session.steer("go left")
            assertEquals("injected", r.outcome)
            assertEquals(started.turn, r.turn)
            assertEquals("workingsteered: go left done", withTimeout(Fixtures.T) { turn.await() }.text)
            val evs = log.until { it is Event.TurnEnded }
            assertEquals(listOf("injected" to started.turn), steers(evs))
        }
    }

    @Test
    fun `without steering the text is queued then prompted as its own turn`() = test {
        Host(optIn).use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("no-steering")).newSession(SessionOptions(cwd = tmp()))
            val turn = async { session.prompt("go") }
            val first = log.until { it is Event.TurnStarted }.last().turn!!
            val r = session.steer("next")
            assertEquals("queued", r.outcome)
            assertNull(r.turn)
            assertEquals("end_turn", withTimeout(Fixtures.T) { turn.await() }.stopReason)
            val evs = log.until { it is Event.TurnEnded && it.turn == first + 1u }
            assertEquals(listOf("queued" to null, "prompted" to first + 1u), steers(evs))
            val second = evs.filterIsInstance<Event.TurnStarted>().single()
            assertTrue("\"next\"" in second.data, second.data)
        }
    }

    @Test
    fun `a cancel rejects the queued steers`() = test {
        Host(optIn).use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("no-steering")).newSession(SessionOptions(cwd = tmp()))
            val turn = async { session.prompt("go") }
            log.until { it is Event.TurnStarted }
            val r = session.steer("never")
            assertEquals("queued", r.outcome)
            session.cancel()
            assertEquals("cancelled", withTimeout(Fixtures.T) { turn.await() }.stopReason)
            val evs = log.until { it is Event.Steer && str(obj(it.data), "outcome") == "rejected" }
            val rejected = obj(evs.last().data)
            assertEquals("cancelled", str(rejected, "reason"))
            assertEquals(r.steer.toString(), str(rejected, "steer"))
        }
    }
}
