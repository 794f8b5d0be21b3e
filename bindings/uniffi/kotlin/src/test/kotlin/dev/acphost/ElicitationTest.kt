// Elicitation through Kotlin handlers, against the mock's `elicitation` scenario (a form for a tool
// call, then a URL consent). The agent echoes every answer it got as a message chunk ("form accept
// {...}", "url decline", "form error -32601"), so these tests check what the agent received. Every
// way an answer can go wrong answers `cancel`, once.
package dev.acphost

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.flow.transformWhile
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files

class ElicitationTest {
    private class Run(val events: List<Event>, val stopReason: String) {
        val texts: List<String> get() = events.filterIsInstance<Event.SessionUpdate>()
            .filter { it.updateKind == "agent_message_chunk" }.mapNotNull { it.text }

        /** (action, decidedBy) of every `elicitation_resolved`, in order. */
        val resolved: List<Pair<String, String>> get() = events.filter { it is Event.ElicitationResolved }.map {
            val d = Json.parseToJsonElement(it.data).jsonObject
            d.getValue("action").jsonPrimitive.content to d.getValue("decidedBy").jsonPrimitive.content
        }
    }

    /** One `deploy` turn; [during] runs while it is in flight with the requests' ids as they come. */
    private fun run(
        options: HostOptions,
        handler: ElicitationHandler? = null,
        during: suspend CoroutineScope.(Host, Channel<ULong>) -> Unit = { _, _ -> },
    ): Run = runBlocking {
        withTimeout(Fixtures.T * 2) {
            Host(options, elicitationHandler = handler).use { host ->
                val requests = Channel<ULong>(Channel.UNLIMITED)
                val events = async {
                    host.events().transformWhile { emit(it); it !is Event.AgentExited }.onEach {
                        if (it is Event.ElicitationRequested) {
                            requests.send(Json.parseToJsonElement(it.data).jsonObject.getValue("requestId").jsonPrimitive.long.toULong())
                        }
                    }.toList()
                }
                val agent = host.spawn(Fixtures.mock("elicitation"))
                val session = agent.newSession(SessionOptions(cwd = Files.createTempDirectory("acp-kt-el").toRealPath().toString()))
                val answering = launch { during(host, requests) }
                val turn = session.prompt("deploy")
                answering.cancel()
                agent.shutdown()
                Run(events.await(), turn.stopReason)
            }
        }
    }

    private fun byMode(form: String, url: String) = elicitationHandler { req -> if (req.mode == "form") form else url }

    @Test
    fun `without a handler elicitation is refused and not advertised`() {
        val r = run(HostOptions())
        assertEquals("end_turn", r.stopReason)
        assertTrue("form error -32601" in r.texts && "url error -32601" in r.texts, r.texts.toString())
        assertTrue(r.resolved.isEmpty())
    }

    @Test
    fun `a handler answers the form and the URL consent`() {
        val seen = mutableListOf<ElicitationRequest>()
        val handler = elicitationHandler { req ->
            seen += req
            if (req.mode == "form") """{"action":"accept","content":{"target":"staging","replicas":2}}""" else """{"action":"accept"}"""
        }
        val r = run(HostOptions(), handler)
        assertEquals("end_turn", r.stopReason)
        assertTrue(r.texts.any { it.startsWith("form accept") && "staging" in it }, r.texts.toString())
        assertTrue("url accept" in r.texts, r.texts.toString())
        assertEquals(listOf("accept" to "host", "accept" to "host"), r.resolved)
        val (form, url) = seen
        assertEquals("form", form.mode)
        assertEquals("Where should I deploy?", form.message)
        assertTrue(form.requestedSchema!!.contains("\"target\""))
        assertEquals("url", url.mode)
        assertEquals("https://example.invalid/login?turn=1", url.url)
        assertEquals("el_1", url.elicitationId)
    }

    @Test
    fun `only the advertised mode is served`() {
        val r = run(HostOptions(elicitationModes = listOf("url")), byMode("""{"action":"decline"}""", """{"action":"decline"}"""))
        assertTrue("form error -32602" in r.texts, r.texts.toString())
        assertTrue("url decline" in r.texts, r.texts.toString())
    }

    @Test
    fun `a raw handler that throws an Error cancels at once`() {
        val handler = object : ElicitationHandler {
            override suspend fun elicit(request: ElicitationRequest): String = throw AssertionError("boom")
        }
        val started = System.nanoTime()
        val r = run(HostOptions(elicitationTimeoutMs = 60_000u), handler)
        assertTrue((System.nanoTime() - started) / 1_000_000 < 20_000, "not held until the timeout")
        assertEquals(listOf("cancel" to "invalid_answer", "cancel" to "invalid_answer"), r.resolved)
        assertTrue(r.texts.any { it.startsWith("form cancel") } && "url cancel" in r.texts, r.texts.toString())
    }

    @Test
    fun `answers that are not answers cancel`() {
        for (bad in listOf("not json", """{"action":"sure"}""", """{"content":{}}""", """{"action":"accept","content":["x"]}""")) {
            val r = run(HostOptions(), byMode(bad, bad))
            assertEquals(listOf("cancel" to "invalid_answer", "cancel" to "invalid_answer"), r.resolved, bad)
        }
    }

    @Test
    fun `form content that does not match the schema cancels`() {
        val r = run(HostOptions(), byMode("""{"action":"accept","content":{"target":"moon"}}""", """{"action":"decline"}"""))
        assertEquals(listOf("cancel" to "invalid_answer", "decline" to "host"), r.resolved)
        assertTrue(r.texts.any { it.startsWith("form cancel") }, r.texts.toString())
    }

    @Test
    fun `a handler that never answers times out as cancel and its coroutine is cancelled`() {
        val cancelled = CompletableDeferred<Unit>()
        val handler = elicitationHandler {
            try {
                awaitCancellation()
            } catch (e: CancellationException) {
                cancelled.complete(Unit)
                throw e
            }
        }
        val r = run(HostOptions(elicitationTimeoutMs = 200u), handler)
        assertEquals(listOf("cancel" to "timeout", "cancel" to "timeout"), r.resolved)
        runBlocking { withTimeout(Fixtures.T) { cancelled.await() } }
    }

    @Test
    fun `manual answers through respondElicitation, checked like a handler's`() {
        val errors = mutableListOf<String>()
        val r = run(HostOptions(elicitation = "manual")) { host, requests ->
            val form = requests.receive()
            errors += assertThrows<AcpException.InvalidArgument> { host.respondElicitation(form, "{") }.code
            errors += assertThrows<AcpException.NotFound> { host.respondElicitation(form + 1000u, """{"action":"cancel"}""") }.code
            host.respondElicitation(form, """{"action":"accept","content":{"target":"production"}}""")
            errors += assertThrows<AcpException.AlreadyResolved> { host.respondElicitation(form, """{"action":"decline"}""") }.code
            host.respondElicitation(requests.receive(), """{"action":"decline"}""")
        }
        assertEquals(listOf("invalid_argument", "not_found", "already_resolved"), errors)
        assertEquals(listOf("accept" to "host", "decline" to "host"), r.resolved)
        assertTrue(r.texts.any { it.startsWith("form accept") && "production" in it }, r.texts.toString())
        assertFalse(r.texts.any { "error" in it }, r.texts.toString())
    }

    @Test
    fun `an unknown elicitation mode is a configuration error at its index`() {
        val e = assertThrows<AcpException.InvalidConfig> { Host(HostOptions(elicitationModes = listOf("form", "sms"), elicitation = "manual")) }
        assertEquals("elicitationModes[1]", str(obj(e.data!!), "path"))
        val h = assertThrows<AcpException.InvalidConfig> { Host(HostOptions(elicitation = "handler")) }
        assertEquals("elicitation", str(obj(h.data!!), "path"))
    }
}
