// ACP v2 tool_call/cancel and terminal/cancel (session.cancelToolCall, cancelTerminal) against
// the mock's `v2-cancel` scenario: the acceptance is the call's result, the completion a later
// session_update; the failures are the core's (Unsupported on v1 or without capabilities.cancel,
// InvalidArgument for an unknown id, AgentError when the agent refuses).
package dev.acphost

import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files

class V2CancelTest {
    private val cwd = Files.createTempDirectory("acp-kt-v2cancel").toRealPath().toString()

    /** Prompt a turn that waits for the cancel of `id`; cancel it once the host knows it. */
    private suspend fun runCancelling(scope: kotlinx.coroutines.CoroutineScope, session: Session, id: String, cancel: suspend (String) -> String) {
        val turn = scope.async { session.prompt("go") }
        var accepted: String? = null
        while (accepted == null) {
            try {
                accepted = cancel(id)
            } catch (e: AcpException.InvalidArgument) {
                delay(10)
            }
        }
        assertEquals("{}", accepted)
        turn.await()
    }

    @Test
    fun `cancels are accepted then confirmed, and fail typed`() = runBlocking<Unit> {
        withTimeout(Fixtures.T) {
            Host(HostOptions(unstable = listOf("protocol/v2"))).use { host ->
                val agent = host.spawn(Fixtures.mock("v2-cancel"))
                val session = agent.newSession(SessionOptions(cwd = cwd))
                assertThrows<AcpException.InvalidArgument> { session.cancelToolCall("call_1") }
                runCancelling(this, session, "call_1") { session.cancelToolCall(it) }
                assertThrows<AcpException.Unsupported> { session.cancelToolCall("call_1") }
                assertThrows<AcpException.InvalidArgument> { session.cancelTerminal("call_1") }
                runCancelling(this, session, "term_2") { session.cancelTerminal(it) }
                assertThrows<AcpException.Unsupported> { session.cancelTerminal("term_2") }
                session.prompt("three")
                assertThrows<AcpException.Unsupported> { session.cancelToolCall("call_3") }
                assertThrows<AcpException.Unsupported> { session.cancelTerminal("term_3") }
                assertThrows<AcpException.AgentException> { session.cancelToolCall("refused_3") }
            }
        }
    }

    @Test
    fun `on a v1 connection the cancels are unsupported`() = runBlocking<Unit> {
        withTimeout(Fixtures.T) {
            Host().use { host ->
                val session = host.spawn(Fixtures.mock("v2-cancel")).newSession(SessionOptions(cwd = cwd))
                assertThrows<AcpException.Unsupported> { session.cancelToolCall("call_1") }
                assertThrows<AcpException.Unsupported> { session.cancelTerminal("term_1") }
            }
        }
    }
}
