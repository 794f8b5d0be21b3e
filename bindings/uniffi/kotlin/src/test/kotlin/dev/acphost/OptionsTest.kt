// The shared option documents (tests/options/cases.json) through the Kotlin face the way its users
// call it (`fromJson` of each document kind; agent cases spawn the mock, session cases open a session
// on a spawned mock, pool cases make a pool of the mock), each with exactly the core's outcome and
// `data.path`; and the typed records reaching every option of docs/OPTIONS.md.
package dev.acphost

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files
import java.nio.file.Path
import kotlin.io.path.readText

class OptionsTest {
    private val dir: Path = Files.createTempDirectory("acp-kt-opts").toRealPath()

    /** The cases with their placeholders filled in for this machine. */
    private fun cases(): List<JsonObject> {
        val file = dir.resolve("file.txt").also { Files.writeString(it, "x") }
        val policy = dir.resolve("policy.json").also { Files.writeString(it, """{"preset": "read-only"}""") }
        // A path as the inside of a JSON string.
        fun j(p: Any) = JsonPrimitive(p.toString()).toString().removeSurrounding("\"")
        val text = Fixtures.root.resolve("tests/options/cases.json").readText()
            .replace("\$DIR", j(dir))
            .replace("\$MISSING", j(dir.resolve("missing")))
            .replace("\$FILE", j(file))
            .replace("\$POLICY", j(policy))
            .replace("\$MOCK", j(Fixtures.mockAgent))
        return Json.parseToJsonElement(text).jsonObject.getValue("cases").jsonArray.map { it.jsonObject }
    }

    /** "ok", or `{kind, path}` of what the call threw (an unexpected throwable as its class). */
    private suspend fun outcome(block: suspend () -> Unit): String = try {
        block()
        "ok"
    } catch (e: AcpException) {
        val path = e.data?.let { str(obj(it), "path") }
        """{"kind":"${e.code}","path":${if (path == null) "null" else "\"$path\""}}"""
    }

    private fun expected(case: JsonObject): String {
        val want = case.getValue("expect")
        if (want is JsonPrimitive) return want.content
        val o = want.jsonObject
        val except = o["except"]?.jsonArray?.map { it.jsonPrimitive.content } ?: emptyList()
        if ("kotlin" in except) return "ok"
        return """{"kind":"${str(o, "kind")}","path":"${str(o, "path")}"}"""
    }

    @Test
    fun `every shared option case has the core's outcome and path through the Kotlin face`() = test {
        val all = cases()
        assertTrue(all.size >= 50, "${all.size} cases")
        val failures = mutableListOf<String>()
        Host().use { host ->
            for (case in all) {
                val doc = case.getValue("doc").toString()
                val got = when (val kind = str(case, "document")) {
                    "host" -> outcome { Host(HostOptions.fromJson(doc)).close() }
                    "agent" -> outcome {
                        val agent = host.spawn(AgentSpec.fromJson(doc))
                        // A really spawned mock: initialized, with a process of its own.
                        assertTrue(agent.pid() != null && agent.info() != "null")
                        agent.shutdown()
                    }
                    "session" -> {
                        val agent = host.spawn(Fixtures.mock("default"))
                        try {
                            outcome {
                                val session = agent.newSession(SessionOptions.fromJson(doc))
                                assertTrue(session.id().isNotEmpty())
                            }
                        } finally {
                            agent.shutdown()
                        }
                    }
                    "pool" -> outcome {
                        val pool = host.pool(Fixtures.mock("default"), PoolOptions.fromJson(doc))
                        try {
                            pool.ready()
                        } finally {
                            pool.shutdown()
                        }
                    }
                    else -> error("unknown document $kind")
                }
                val want = expected(case)
                if (got != want) failures += "${str(case, "name")}: got $got, want $want"
            }
        }
        assertTrue(failures.isEmpty(), failures.joinToString("\n"))
    }

    @Test
    fun `every typed option reaches the core under its own name`() {
        val options = HostOptions(
            clientInfo = ClientInfo(name = "my-editor", version = "1.2.3"),
            policy = "read-only",
            permission = "manual",
            permissionTimeoutMs = 1_000u,
            roots = listOf(dir.toString()),
            elicitation = "manual",
            elicitationModes = listOf("form"),
            elicitationTimeoutMs = 2_000u,
            requestTimeoutMs = 3_000u,
            promptTimeoutMs = 4_000u,
            cancelGraceMs = 5u,
            shutdownGraceMs = 6u,
            events = true,
            eventCapacity = 77u,
            eventQueueBytes = 8_192u,
            eventStallTimeoutMs = 9_000u,
            wireEvents = true,
            record = RecordOptions(dir = dir.toString(), maxBytes = 1_000_000u, redact = false),
            coalesceToolCallUpdates = true,
            maxLineBytes = 2_048u,
            stderrTailBytes = 10u,
            maxOutboundBytes = 131_072u,
            maxPendingAgentRequests = 11u,
            earlyUpdateLimit = 12u,
            fs = "disabled",
            fsLimits = FsLimits(maxReadBytes = 13u, maxWriteBytes = 14u),
            terminal = "disabled",
            terminalLimits = TerminalLimits(maxOutputBytes = 15u, maxTerminals = 16u),
            ext = "none",
            terminalAuth = "none",
            unstable = listOf("session/fork"),
            logLevel = "debug",
        )
        val eff = Host(options).use { obj(it.effectiveOptions()) }
        val want = mapOf(
            "permission" to "manual", "permissionTimeoutMs" to 1000, "elicitation" to "manual",
            "elicitationTimeoutMs" to 2000, "requestTimeoutMs" to 3000, "promptTimeoutMs" to 4000,
            "cancelGraceMs" to 5, "shutdownGraceMs" to 6, "eventCapacity" to 77, "eventQueueBytes" to 8192,
            "eventStallTimeoutMs" to 9000, "wireEvents" to true, "coalesceToolCallUpdates" to true,
            "maxLineBytes" to 2048, "stderrTailBytes" to 10, "maxOutboundBytes" to 131072,
            "maxPendingAgentRequests" to 11, "earlyUpdateLimit" to 12, "fs" to "disabled", "terminal" to "disabled",
            "policy" to "read-only",
        )
        for ((k, v) in want) assertEquals(v.toString(), eff.getValue(k).jsonPrimitive.content, k)
        assertEquals("""{"name":"my-editor","version":"1.2.3"}""", eff.getValue("clientInfo").toString())
        assertEquals("""{"maxReadBytes":13,"maxWriteBytes":14}""", eff.getValue("fsLimits").toString())
        assertEquals("""{"maxOutputBytes":15,"maxTerminals":16}""", eff.getValue("terminalLimits").toString())
        assertEquals(
            """{"dir":${JsonPrimitive(dir.toString())},"file":null,"maxBytes":1000000,"redact":false}""",
            eff.getValue("record").toString(),
        )
        assertEquals("""["form"]""", eff.getValue("elicitationModes").toString())
        assertEquals("""["session/fork"]""", eff.getValue("unstable").toString())
        assertEquals("[${JsonPrimitive(dir.toString())}]", eff.getValue("roots").toString())
    }

    @Test
    fun `a recorded connection writes its header, wire and events to the file`() = test {
        // docs/RECORDING.md; the format is the core's (core/tests/integration/record.rs).
        val file = dir.resolve("kotlin.acprec.jsonl")
        Host(HostOptions(record = RecordOptions(file = file.toString()))).use { host ->
            val agent = host.spawn(Fixtures.mock("default"))
            val session = agent.newSession(SessionOptions(cwd = dir.toString()))
            assertEquals("end_turn", session.prompt("hello").stopReason)
            agent.shutdown()
        }
        var lines = emptyList<JsonObject>()
        val deadline = System.nanoTime() + 10_000_000_000
        while (lines.lastOrNull()?.containsKey("end") != true) {
            assertTrue(System.nanoTime() < deadline, "the recording ends with its end line")
            Thread.sleep(20)
            lines = file.readText().lines().filter { it.isNotBlank() }.map { Json.parseToJsonElement(it).jsonObject }
        }
        assertEquals(3, lines.first().getValue("acpRecording").jsonPrimitive.content.toInt())
        assertEquals(1, lines.first().getValue("protocolVersion").jsonPrimitive.content.toInt())
        val methods = lines.mapNotNull { (it["msg"] as? JsonObject)?.get("method")?.jsonPrimitive?.content }
        assertTrue(methods.containsAll(listOf("initialize", "session/new", "session/prompt", "session/update")), "$methods")
        val kinds = lines.mapNotNull { (it["event"] as? JsonObject)?.get("kind")?.jsonPrimitive?.content }
        assertEquals("agent_exited", kinds.last())
        assertThrows<AcpException.InvalidConfig> { Host(HostOptions(record = RecordOptions())) }
    }

    @Test
    fun `fromJson keeps what the document says and the fields given beside it win`() {
        val base = HostOptions.fromJson("""{"requestTimeoutMs": null, "maxLineBytes": 4096, "fsLimits": {"maxReadBytes": 1}}""")
        val eff = Host(base.copy(maxLineBytes = 8192u, fsLimits = FsLimits(maxWriteBytes = 2u))).use { obj(it.effectiveOptions()) }
        assertEquals("null", eff.getValue("requestTimeoutMs").toString(), "null in a document: no timeout")
        assertEquals(8192L, eff.getValue("maxLineBytes").jsonPrimitive.long)
        assertEquals("""{"maxReadBytes":1,"maxWriteBytes":2}""", eff.getValue("fsLimits").toString())
        // Text that is not JSON, and a document that is not an object, are the core's errors at `$`.
        for (bad in listOf("{nope", "[]")) {
            val e = assertThrows<AcpException.InvalidConfig> { Host(HostOptions.fromJson(bad)) }
            assertEquals("$", str(obj(e.data!!), "path"), bad)
        }
    }

    @Test
    fun `a handler given while its option names another answerer is refused by the core`() {
        val e = assertThrows<AcpException.InvalidConfig> {
            Host(HostOptions(permission = "deny"), permissionHandler = permissionHandler { null })
        }
        assertEquals("permission", str(obj(e.data!!), "path"))
        // Every exception carries detail and data on the base type.
        val base: AcpException = e
        assertTrue(base.detail.isNotEmpty() && base.data != null)
    }

    @Test
    fun `a turn result has the core's fields and its exact JSON`() = test {
        Host().use { host ->
            val agent = host.spawn(Fixtures.mock("default"))
            val turn = agent.newSession(SessionOptions(cwd = dir.toString())).prompt("hello")
            val json = obj(turn.json)
            assertEquals(listOf("turn", "stopReason", "usage", "raw", "text", "thought", "textTruncated"), json.keys.toList())
            assertEquals(turn.turn.toLong(), json.getValue("turn").jsonPrimitive.long)
            assertEquals(turn.stopReason, str(json, "stopReason"))
            assertEquals(turn.text, str(json, "text"))
            assertEquals(turn.thought, str(json, "thought"))
            assertEquals(turn.textTruncated.toString(), json.getValue("textTruncated").jsonPrimitive.content)
            assertEquals(Json.parseToJsonElement(turn.raw), json.getValue("raw"))
            assertEquals(turn.usage?.let { Json.parseToJsonElement(it) }?.toString() ?: "null", json.getValue("usage").toString())
            assertTrue(turn.text.isNotEmpty())
            agent.shutdown()
        }
    }
}
