// `host.events()` with several collectors: each collection reads a stream of its own; all see the
// same events in the same seq order; the slowest sets the pace (backpressure), none loses an event.
package dev.acphost

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.nio.file.Files

class SharedEventsTest {
    private fun tmp(): String = Files.createTempDirectory("acp-host-kt-shared-").toRealPath().toString()

    @Test
    fun `two collectors see the same events in the same seq order`() = test {
        Host().use { host ->
            val a = async(Dispatchers.IO) { host.events().takeWhile { it !is Event.AgentExited }.toList() }
            val flow = host.events()
            // The same flow collected twice: two streams.
            val b = async(Dispatchers.IO) { flow.takeWhile { it !is Event.AgentExited }.toList() }
            val session = host.spawn(Fixtures.mock("all-updates")).newSession(SessionOptions(cwd = tmp()))
            assertEquals("end_turn", session.prompt("hi").stopReason)
            host.shutdown()
            val (x, y) = withTimeout(Fixtures.T) { a.await() to b.await() }
            assertTrue(x.size > 10, "${x.map { it.kind }}")
            assertEquals(x.map { it.seq }, y.map { it.seq })
            assertEquals(x.map { it.data }, y.map { it.data })
            assertEquals(x.map { it.seq }.sorted().distinct(), x.map { it.seq }, "strictly increasing")
        }
    }

    @Test
    fun `a slow collector loses nothing and holds the fast one and the agent back`() = test {
        val n = 2_000
        Host(HostOptions(eventCapacity = 16u)).use { host ->
            val fast = host.events(batch = 64u)
            val slow = host.events(batch = 8u)
            val fastSeen = async(Dispatchers.IO) { fast.takeWhile { it !is Event.TurnEnded }.toList() }
            val session = host.spawn(Fixtures.mock("default", "--flood", "$n")).newSession(SessionOptions(cwd = tmp()))
            val turn = async(Dispatchers.IO) { session.prompt("flood") }
            delay(700) // the slow collector has not started: the queue is full, the agent waits
            assertFalse(turn.isCompleted, "the turn finished although one stream took nothing of $n events")
            assertFalse(fastSeen.isCompleted, "the fast collector got past the slow one's queue bound")
            val slowSeen = mutableListOf<Event>()
            slow.takeWhile { it !is Event.TurnEnded }.collect {
                slowSeen += it
                if (slowSeen.size % 200 == 0) delay(30)
            }
            assertEquals("end_turn", withTimeout(Fixtures.T) { turn.await() }.stopReason)
            val fastList = withTimeout(Fixtures.T) { fastSeen.await() }
            for (seen in listOf(slowSeen, fastList)) {
                val seqs = seen.map { it.seq }
                assertEquals(1uL, seqs.first())
                assertEquals((1uL..seqs.last()).toList(), seqs, "every seq, in order, none lost")
                assertEquals(n, seen.count { it is Event.SessionUpdate })
            }
        }
    }

    @Test
    fun `a collection that ends lets the others go on`() = test {
        Host(HostOptions(eventCapacity = 16u)).use { host ->
            val quitter = host.events()
            val stayer = async(Dispatchers.IO) { host.events().takeWhile { it !is Event.TurnEnded }.toList() }
            val agent = host.spawn(Fixtures.mock("default", "--flood", "1000"))
            assertTrue(quitter.first() is Event.AgentReady) // its stream is closed here
            assertEquals("end_turn", agent.newSession(SessionOptions(cwd = tmp())).prompt("flood").stopReason)
            assertEquals(1000, withTimeout(Fixtures.T) { stayer.await() }.count { it is Event.SessionUpdate })
        }
    }

    @Test
    fun `a later stream starts at its opening`() = test {
        Host().use { host ->
            val first = host.eventStream()
            host.spawn(Fixtures.mock("default"))
            val ready = first.nextBatch(1u).single()
            assertEquals("agent_ready", ready.kind)
            val later = host.eventStream()
            val agent = host.spawn(Fixtures.mock("default"))
            val got = later.nextBatch(1u).single()
            assertEquals("agent_ready", got.kind)
            assertEquals(agent.id(), got.agent, "the second stream starts after the first agent's events")
            assertEquals(0uL, later.droppedBeforeTaken())
            first.close()
            later.close()
        }
    }
}
