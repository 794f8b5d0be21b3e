// Delivery receipts through Kotlin (docs/EVENTS.md, "Delivery receipts"): respondPermission and
// respondElicitation return the answer's receipt (JSON), a thrown error's data holds the
// `rejected` receipt of an unused answer, and the resolution event carries the same receipt.
package dev.acphost

import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files

class ReceiptsTest {

    /** A manual host, the agent of [scenario], its first turn running; [during] answers. */
    private suspend fun withTurn(scenario: String, during: suspend (Host, EventLog) -> Unit) = coroutineScope {
        val cwd = Files.createTempDirectory("acp-kt-receipts").toRealPath()
        Host(HostOptions(permission = "manual", elicitation = "manual")).use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock(scenario))
            val session = agent.newSession(SessionOptions(cwd = cwd.toString()))
            val turn = async { runCatching { session.prompt("x") } }
            during(host, log)
            agent.shutdown()
            turn.await()
            log.job.cancel()
        }
    }

    private fun requestId(e: Event): ULong = obj(e.data)["requestId"]!!.jsonPrimitive.long.toULong()

    @Test
    fun `a permission answer is delivered, a second one rejected with the request unavailable`() = test {
        withTurn("permission-write") { host, log ->
            val id = requestId(log.until { it is Event.PermissionRequested }.last())
            val receipt = obj(host.respondPermission(id, "allow-once"))
            assertEquals("delivered", receipt["status"]!!.jsonPrimitive.content)
            val resolved = obj(log.until { it is Event.PermissionResolved }.last().data)
            assertEquals(receipt, resolved["receipt"]!!.jsonObject)
            val again = assertThrows<AcpException.AlreadyResolved> { host.respondPermission(id, null) }
            val rejected = obj(again.data!!)["receipt"]!!.jsonObject
            assertEquals("rejected", rejected["status"]!!.jsonPrimitive.content)
            assertEquals("unavailable", rejected["state"]!!.jsonPrimitive.content)
            assertEquals("already_resolved", rejected["code"]!!.jsonPrimitive.content)
        }
    }

    @Test
    fun `a large answer whose pipe fails mid-write is uncertain`() = test {
        withTurn("receipt-broken-pipe") { host, log ->
            val id = requestId(log.until { it is Event.ElicitationRequested }.last())
            val note = "n".repeat(1 shl 20)
            val receipt = obj(host.respondElicitation(id, """{"action":"accept","content":{"note":"$note"}}"""))
            assertEquals("uncertain", receipt["status"]!!.jsonPrimitive.content, receipt.toString())
            assertEquals("io", receipt["code"]!!.jsonPrimitive.content)
            val resolved = obj(log.until { it is Event.ElicitationResolved }.last().data)
            assertEquals(receipt, resolved["receipt"]!!.jsonObject)
        }
    }
}
