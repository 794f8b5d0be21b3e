// The ordering contract of the Kotlin face (issue 26, item 3): every event of a turn is emitted on
// a running `session.events()` collection before `prompt()` returns, even when the collector is
// slow; and a `session.events()` collected at any time after `session_opened` misses nothing of the
// session — or, when its bounded history overflowed, says exactly how much it left out.
package dev.acphost

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.nio.file.Files
import java.util.Collections

class OrderingTest {
    private val dir = Files.createTempDirectory("acp-kt-order").toRealPath().toString()

    private fun textOf(events: List<Event>, turn: ULong) = events
        .filter { it is Event.SessionUpdate && it.turn == turn && it.updateKind == "agent_message_chunk" }
        .joinToString("") { (it as Event.SessionUpdate).text ?: "" }

    @Test
    fun `a slow session collector has every event of a long turn before prompt returns (20 runs)`() = test {
        Host().use { host ->
            val agent = host.spawn(Fixtures.mock("default", "--flood", "150"))
            repeat(20) { run ->
                val session = agent.newSession(SessionOptions(cwd = dir))
                val seen = Collections.synchronizedList(mutableListOf<Event>())
                val running = CompletableDeferred<Unit>()
                val collector = launch(Dispatchers.IO) {
                    session.events().collect { ev ->
                        seen += ev
                        running.complete(Unit)
                        // A slow UI: every update takes a while to render.
                        if (ev is Event.SessionUpdate) delay(1)
                    }
                }
                running.await()
                val turn = session.prompt("go")
                val snapshot = seen.toList()
                assertTrue(
                    snapshot.any { it is Event.TurnEnded && it.turn == turn.turn },
                    "run $run: prompt returned before the collector got turn_ended (${snapshot.size} events)",
                )
                assertEquals(turn.text, textOf(snapshot, turn.turn), "run $run: the collector's text")
                assertEquals(150, snapshot.count { it is Event.SessionUpdate && it.turn == turn.turn }, "run $run")
                collector.cancel()
            }
            agent.shutdown()
        }
    }

    @Test
    fun `a session collected late gets the whole session from session_opened`() = test {
        Host().use { host ->
            val all = async(Dispatchers.IO) { host.events().takeWhile { it !is Event.AgentExited }.toList() }
            val agent = host.spawn(Fixtures.mock("early-updates"))
            val session = agent.newSession(SessionOptions(cwd = dir))
            val first = session.prompt("one")
            val second = session.prompt("two")
            // Long after session_opened and two turns: a collection from the beginning.
            val late = session.events().takeWhile { !(it is Event.TurnEnded && it.turn == second.turn) }.toList()
            assertTrue(late.first() is Event.SessionOpened, late.first().kind)
            assertNull(late.first().dropped)
            assertEquals(first.text, textOf(late, first.turn))
            assertEquals(second.text, textOf(late, second.turn))
            agent.shutdown()
            val hostSeqs = all.await().filter { it.session == session.id() }.map { it.seq }
            val lateSeqs = late.map { it.seq }
            assertEquals(hostSeqs.take(lateSeqs.size), lateSeqs, "the late collection is the host's view of the session")
            assertTrue(late.any { it is Event.SessionUpdate && it.updateKind == "session_info_update" }, "early updates kept")
        }
    }

    @Test
    fun `a late collection past the bounded history says exactly how much it left out`() = test {
        Host(HostOptions(earlyUpdateLimit = 16u)).use { host ->
            val all = async(Dispatchers.IO) { host.events().takeWhile { it !is Event.AgentExited }.toList() }
            val agent = host.spawn(Fixtures.mock("default", "--flood", "100"))
            val session = agent.newSession(SessionOptions(cwd = dir))
            val turn = session.prompt("go")
            val late = session.events().takeWhile { !(it is Event.TurnEnded && it.turn == turn.turn) }.toList()
            agent.shutdown()
            val ofSession = all.await().filter { it.session == session.id() }
            val endAt = ofSession.indexOfFirst { it is Event.TurnEnded && it.turn == turn.turn }
            val dropped = requireNotNull(late.first().dropped) { "the history overflowed: the first event says so" }
            // What it left out plus what it delivered is the session up to turn_ended, exactly.
            assertEquals(endAt.toULong(), dropped + late.size.toULong())
            assertEquals(ofSession.drop(dropped.toInt()).take(late.size).map { it.seq }, late.map { it.seq })
        }
    }

    @Test
    fun `a collection that has ended does not hold prompts back`() = test {
        Host().use { host ->
            val agent = host.spawn(Fixtures.mock("default"))
            val session = agent.newSession(SessionOptions(cwd = dir))
            // takeWhile ends the collection at session_opened; the stream is closed then.
            session.events().takeWhile { it !is Event.SessionOpened }.toList()
            val started = System.nanoTime()
            assertEquals("end_turn", session.prompt("hi").stopReason)
            assertTrue(ms(started) < 2_000, "prompt took ${ms(started)} ms")
            agent.shutdown()
        }
    }

    @Test
    fun `a prompt awaited inside its own session's collector fails EventsStalled instead of hanging`() = test {
        Host(HostOptions(eventStallTimeoutMs = 300u)).use { host ->
            val agent = host.spawn(Fixtures.mock("default"))
            val session = agent.newSession(SessionOptions(cwd = dir))
            val e = runCatching {
                session.events().collect { ev ->
                    if (ev is Event.SessionOpened) session.prompt("inside")
                }
            }.exceptionOrNull()
            assertTrue(e is AcpException.EventsStalled, "$e")
            assertTrue((e as AcpException.EventsStalled).detail.contains("launch it"), e.detail)
            // The session is fine: the same prompt launched outside the collector returns.
            assertEquals("end_turn", session.prompt("outside").stopReason)
            agent.shutdown()
        }
    }
}
