// The unstable session methods besides fork (sessionStatus, setSessionTitle, archiveSession,
// unarchiveSession, sessionOptions) and request-scoped elicitations naming none of the host's
// requests (scopeKnown = false), against the mock's `unstable-sessions` and
// `elicitation-unknown-request` scenarios.
package dev.acphost

import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files

class UnstableSessionsTest {
    private val all = listOf("session/status", "session/set_title", "session/archive", "session/unarchive", "session/options")
    private val cwd = Files.createTempDirectory("acp-kt-unstable").toRealPath().toString()

    @Test
    fun `without the opt-in or the capability the calls are unsupported`() = runBlocking<Unit> {
        withTimeout(Fixtures.T) {
            Host().use { host ->
                val agent = host.spawn(Fixtures.mock("unstable-sessions"))
                val e = assertThrows<AcpException.Unsupported> { agent.sessionStatus("sess_stored") }
                assertTrue(e.message!!.contains("session/status"), e.message)
                assertThrows<AcpException.Unsupported> { agent.archiveSession("sess_stored") }
            }
            Host(HostOptions(unstable = all)).use { host ->
                val plain = host.spawn(Fixtures.mock("default"))
                assertThrows<AcpException.Unsupported> { plain.setSessionTitle("sess_1", "x") }
                assertThrows<AcpException.Unsupported> { plain.sessionOptions(SessionOptions(cwd = cwd), null) }
            }
        }
    }

    @Test
    fun `status, title, archive and options against the mock`() = runBlocking<Unit> {
        withTimeout(Fixtures.T) {
            Host(HostOptions(unstable = all)).use { host ->
                val agent = host.spawn(Fixtures.mock("unstable-sessions"))
                val session = agent.newSession(SessionOptions(cwd = cwd))
                val sid = session.id()
                assertEquals(SessionStatus(status = "open", reported = "open"), agent.sessionStatus(sid))
                assertEquals(SessionStatus(status = "saved", reported = "_hibernating"), agent.sessionStatus("_mock_custom_status"))
                assertEquals("Release notes", agent.setSessionTitle(sid, "  Release notes "))
                val state = Json.parseToJsonElement(session.state()).jsonObject
                assertEquals("Release notes", state.getValue("title").jsonPrimitive.content)
                val defaults = agent.sessionOptions(SessionOptions(cwd = cwd), null)
                assertNotNull(defaults.modes)
                assertTrue(defaults.configOptions!!.startsWith("["))
                agent.archiveSession(sid)
                assertEquals("saved", agent.sessionStatus(sid).status)
                assertFalse(agent.listSessions(null, null).contains("\"sessionId\":\"$sid\""))
                agent.unarchiveSession(sid)
                assertTrue(agent.listSessions(null, null).contains("\"sessionId\":\"$sid\""))
                // The agent's errors and malformed answers.
                assertThrows<AcpException.AgentException> { agent.sessionStatus("sess_nope") }
                assertThrows<AcpException.Protocol> { agent.sessionStatus("_mock_malformed") }
                assertThrows<AcpException.Protocol> { agent.setSessionTitle("_mock_malformed", "x") }
            }
        }
    }

    @Test
    fun `a request-scoped elicitation naming no request of the host is asked, marked unknown`() = runBlocking<Unit> {
        withTimeout(Fixtures.T) {
            val seen = mutableListOf<ElicitationRequest>()
            val handler = elicitationHandler { req ->
                seen += req
                if (req.mode == "form") """{"action":"accept","content":{"name":"ws"}}""" else """{"action":"decline"}"""
            }
            Host(HostOptions(elicitationModes = listOf("form", "url")), elicitationHandler = handler).use { host ->
                val agent = host.spawn(Fixtures.mock("elicitation-unknown-request"))
                val session = agent.newSession(SessionOptions(cwd = cwd))
                assertEquals("form accept {\"name\":\"ws\"}url decline", session.prompt("go").text)
                assertEquals(listOf("\"agent-req-1\"", "9999"), seen.map { it.scopeRequestId })
                assertEquals(listOf(false, false), seen.map { it.scopeKnown })
                assertTrue(seen.all { it.sessionId == null })
            }
        }
    }
}
