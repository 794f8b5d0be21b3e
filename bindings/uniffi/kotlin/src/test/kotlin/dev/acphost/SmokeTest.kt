package dev.acphost

import kotlinx.coroutines.async
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.nio.file.Files

class SmokeTest {
    @Test
    fun `a turn against the mock agent streams its events in order`() = runBlocking {
        withTimeout(Fixtures.T) {
            Host().use { host ->
                val events = async { host.events().takeWhile { it !is Event.AgentExited }.toList() }
                val agent = host.spawn(Fixtures.mock("default"))
                val cwd = Files.createTempDirectory("acp-kt").toRealPath().toString()
                val session = agent.newSession(SessionOptions(cwd = cwd))
                val turn = session.prompt("hello")
                assertEquals("end_turn", turn.stopReason)
                agent.shutdown()
                val seen = events.await()
                assertTrue(seen.first() is Event.AgentReady, seen.first().kind)
                assertTrue(seen.any { it is Event.SessionUpdate && it.updateKind == "agent_message_chunk" })
                assertEquals(seen.map { it.seq }.sorted(), seen.map { it.seq })
                // The streamed text is what the turn returns, without parsing any payload.
                val streamed = seen.filterIsInstance<Event.SessionUpdate>()
                    .filter { it.updateKind == "agent_message_chunk" }.joinToString("") { it.text ?: "" }
                assertTrue(streamed.isNotEmpty())
                assertEquals(turn.text, streamed)
            }
        }
    }
}
