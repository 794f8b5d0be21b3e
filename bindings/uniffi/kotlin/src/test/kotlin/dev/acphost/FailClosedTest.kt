// The fail-closed matrix through Kotlin handlers: every way a permission request can end without a
// valid "allow" denies, resolves exactly once (one `permission_resolved`, with who decided), the
// agent sees the denial, and the file write it guarded does not happen. Model: the Python face's
// tests/test_fail_closed.py, same mock scenario (`permission-write`: asks to edit $CWD/hello.txt,
// writes it through fs/write_text_file only when allowed).
package dev.acphost

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files
import java.nio.file.Path
import java.util.Collections
import kotlin.time.Duration.Companion.seconds

class FailClosedTest {

    /** What one `permission-write` turn left behind. */
    class Run(val events: List<Event>, val cwd: Path, val result: Result<TurnResult>) {
        fun resolutions(): List<JsonObject> = events.filterIsInstance<Event.PermissionResolved>().map { obj(it.data) }
        fun written(): Boolean = Files.exists(cwd.resolve("hello.txt"))
        fun toolStatus(): String? = events.filterIsInstance<Event.SessionUpdate>()
            .filter { it.updateKind == "tool_call_update" }
            .mapNotNull { obj(it.data)["status"]?.jsonPrimitive?.content }
            .lastOrNull()
    }

    companion object {
        /** A handler that picks the agent's allow-once option. */
        val allowOnce = permissionHandler { it.optionIdOfKind("allow_once") }

        /**
         * One turn of `permission-write` in a fresh cwd: [during] runs once the request is pending
         * (with its host-wide id), then the turn must end, the agent is shut down and every event up
         * to its `agent_exited` is kept.
         */
        suspend fun permissionWrite(
            options: HostOptions = HostOptions(),
            handler: PermissionHandler? = null,
            during: suspend (Host, Session, ULong) -> Unit = { _, _, _ -> },
        ): Run = coroutineScope {
            val cwd = Files.createTempDirectory("acp-kt-fc").toRealPath()
            Host(options, handler).use { host ->
                val log = EventLog(this, host)
                val agent = host.spawn(Fixtures.mock("permission-write"))
                val session = agent.newSession(SessionOptions(cwd = cwd.toString()))
                val turn = async { runCatching { session.prompt("write") } }
                val requested = log.until { it is Event.PermissionRequested }.last()
                during(host, session, obj(requested.data)["requestId"]!!.jsonPrimitive.long.toULong())
                val result = withTimeout(Fixtures.T) { turn.await() }
                agent.shutdown()
                log.until { it is Event.AgentExited }
                Run(log.all.toList(), cwd, result)
            }
        }

        fun assertDenied(run: Run, decidedBy: String) {
            val res = run.resolutions()
            assertEquals(1, res.size, "exactly one resolution: $res")
            assertEquals(decidedBy, res[0]["decidedBy"]?.jsonPrimitive?.content, res.toString())
            assertFalse(run.written(), "the file was written although the request was denied ($decidedBy)")
            assertEquals("failed", run.toolStatus(), "the agent saw the denial")
            assertEquals("end_turn", run.result.getOrThrow().stopReason, "the turn itself still ends normally")
        }

    }

    // ------------------------------------------------------------------ handlers

    @Test
    fun `allowed by the handler the write happens`() = test {
        val run = permissionWrite(handler = allowOnce)
        assertEquals(1, run.resolutions().size)
        assertEquals("host", run.resolutions()[0]["decidedBy"]?.jsonPrimitive?.content)
        assertTrue(run.written(), "control case: an allowed write lands")
        assertEquals("hello from acp-mock-agent\n", Files.readString(run.cwd.resolve("hello.txt")))
        assertEquals("completed", run.toolStatus())
        assertEquals("end_turn", run.result.getOrThrow().stopReason)
    }

    @Test
    fun `a handler returning null denies and sees the whole request`() = test {
        val seen = Collections.synchronizedList(mutableListOf<PermissionRequest>())
        val run = permissionWrite(handler = permissionHandler { seen += it; null })
        assertDenied(run, "host")
        val req = seen.single()
        assertEquals("sess_1", req.sessionId)
        assertEquals("Edit hello.txt", req.title)
        assertEquals("edit", req.toolKind)
        assertEquals(listOf("allow-once", "allow-always", "reject-once", "reject-always"), req.options.map { it.optionId })
        assertEquals("reject-once", req.optionIdOfKind("reject_once"))
        assertEquals(obj(run.events.filterIsInstance<Event.PermissionRequested>().single().data)["requestId"]!!.jsonPrimitive.long.toULong(), req.requestId)
        assertEquals(obj("""{"outcome":"selected","optionId":"reject-once"}"""), run.resolutions()[0]["outcome"])
    }

    @Test
    fun `a lambda handler that throws an Exception denies`() = test {
        assertDenied(permissionWrite(handler = permissionHandler { throw IllegalStateException("UI unavailable") }), "invalid_answer")
    }

    @Test
    fun `a lambda handler that throws an Error denies`() = test {
        assertDenied(permissionWrite(handler = permissionHandler { throw AssertionError("boom") }), "invalid_answer")
    }

    @Test
    fun `a raw PermissionHandler that throws an Exception denies`() = test {
        val raw = object : PermissionHandler {
            override suspend fun decide(request: PermissionRequest): String? = throw IllegalStateException("UI unavailable")
        }
        assertDenied(permissionWrite(handler = raw), "invalid_answer")
    }

    @Test
    fun `a raw PermissionHandler that throws an Error denies at once`() = test {
        // The generated callback glue catches kotlin.Exception only; an Error must still deny, and
        // promptly (not only when the permission timeout, 300 s by default, finally fires). The
        // timeout is set to 10 s so that a regression fails this test instead of hanging it.
        val raw = object : PermissionHandler {
            override suspend fun decide(request: PermissionRequest): String? = throw AssertionError("boom")
        }
        val started = System.nanoTime()
        val run = permissionWrite(HostOptions(permissionTimeoutMs = 10_000u), raw)
        val took = (System.nanoTime() - started) / 1_000_000
        assertFalse(run.written())
        assertEquals(1, run.resolutions().size)
        assertEquals("invalid_answer", run.resolutions()[0]["decidedBy"]?.jsonPrimitive?.content,
            "an Error thrown by a raw handler must deny as a failing handler (took $took ms)")
        assertTrue(took < 8_000, "denied only after $took ms")
    }

    @Test
    fun `an option that was not offered denies`() = test {
        assertDenied(permissionWrite(handler = permissionHandler { "allow-everything-forever" }), "invalid_answer")
    }

    @Test
    fun `a handler that never answers times out and its coroutine is cancelled`() = test {
        val cancelled = CompletableDeferred<Throwable>()
        val hangs = permissionHandler {
            try {
                awaitCancellation()
            } catch (e: CancellationException) {
                cancelled.complete(e)
                throw e
            }
        }
        val started = System.nanoTime()
        val run = permissionWrite(HostOptions(permissionTimeoutMs = 300u), hangs)
        assertDenied(run, "timeout")
        assertTrue((System.nanoTime() - started) / 1_000_000 < 10_000)
        val seen = withTimeout(5.seconds) { cancelled.await() }
        assertTrue(seen is CancellationException, "the handler saw $seen")
    }

    // ------------------------------------------------------------------ no handler, policies

    @Test
    fun `no handler is deny-all`() = test {
        val run = permissionWrite()
        assertDenied(run, "rule")
        assertEquals("preset deny-all", run.resolutions()[0]["rule"]?.jsonPrimitive?.content)
        Host().use { assertEquals("deny-all", it.policyName()) }
        Host(permissionHandler = allowOnce).use { assertEquals("ask", it.policyName()) }
    }

    @Test
    fun `a hard deny in the policy beats a handler that allows`() = test {
        val asked = CompletableDeferred<Unit>()
        val handler = permissionHandler { asked.complete(Unit); it.optionIdOfKind("allow_once") }
        val run = permissionWrite(HostOptions(policyJson = """{"hardDeny": {"paths": ["**/hello.txt"]}}"""), handler)
        assertDenied(run, "rule")
        assertTrue(run.resolutions()[0]["rule"]!!.jsonPrimitive.content.contains("hello.txt"), run.resolutions().toString())
        assertFalse(asked.isCompleted, "nobody is asked when a hard deny matches")
    }

    @Test
    fun `a deny rule beats a handler that allows, and so does the read-only preset`() = test {
        val rule = """{"preset": "ask", "rules": [{"action": "deny", "paths": ["**/hello.txt"], "description": "no hello"}]}"""
        val run = permissionWrite(HostOptions(policyJson = rule), allowOnce)
        assertDenied(run, "rule")
        assertEquals("rules[0] (deny: no hello)", run.resolutions()[0]["rule"]?.jsonPrimitive?.content)
        val ro = permissionWrite(HostOptions(policy = "read-only"), allowOnce)
        assertDenied(ro, "rule")
        assertEquals("preset read-only", ro.resolutions()[0]["rule"]?.jsonPrimitive?.content)
    }

    @Test
    fun `invalid configuration is InvalidConfig naming the spot`() {
        val dir = Files.createTempDirectory("acp-kt-fc").toRealPath()
        fun path(options: HostOptions): String {
            val e = assertThrows<AcpException.InvalidConfig> { Host(options).close() }
            assertEquals("invalid_config", e.code)
            val data = obj(requireNotNull(e.data) { "data names the spot: ${e.detail}" })
            return data["path"]!!.jsonPrimitive.content
        }
        assertEquals("policy", path(HostOptions(policy = "yolo")))
        assertEquals("policy.rules[0].action", path(HostOptions(policyJson = """{"rules": [{"action": "permit"}]}""")))
        assertEquals("policy", path(HostOptions(policyJson = "{not json")))
        assertEquals("policy.hardDeny.globs", path(HostOptions(policyJson = """{"hardDeny": {"globs": []}}""")))
        assertEquals("policy", path(HostOptions(policy = dir.resolve("missing.json").toString())))
        assertEquals("policy", path(HostOptions(policy = "ask", policyJson = "{}")))
        assertEquals("roots[0]", path(HostOptions(roots = listOf("relative/dir"))))
        assertEquals("eventCapacity", path(HostOptions(eventCapacity = 0u)))
        assertEquals("maxLineBytes", path(HostOptions(maxLineBytes = 0u)))
        assertEquals("unstable[0]", path(HostOptions(unstable = listOf("session/forks"))))
        assertEquals("fs", path(HostOptions(fs = "embedder")))
    }

    // ------------------------------------------------------------------ manual answers

    @Test
    fun `manual answers allow`() = test {
        val run = permissionWrite(HostOptions(permission = "manual")) { host, _, id ->
            host.respondPermission(id, "allow-once")
            assertThrows<AcpException.AlreadyResolved> { host.respondPermission(id, "allow-once") }
        }
        assertEquals(listOf("host"), run.resolutions().map { it["decidedBy"]!!.jsonPrimitive.content })
        assertTrue(run.written())
    }

    @Test
    fun `manual answers deny, answering twice is AlreadyResolved, an unknown id is NotFound`() = test {
        val run = permissionWrite(HostOptions(permission = "manual")) { host, _, id ->
            val nf = assertThrows<AcpException.NotFound> { host.respondPermission(id + 1000u, "allow-once") }
            assertEquals("not_found", nf.code)
            host.respondPermission(id, null)
            val ar = assertThrows<AcpException.AlreadyResolved> { host.respondPermission(id, "allow-once") }
            assertEquals("already_resolved", ar.code)
        }
        assertDenied(run, "host")
    }

    @Test
    fun `a manual answer naming an option that was not offered denies and throws`() = test {
        var thrown: Throwable? = null
        val run = permissionWrite(HostOptions(permission = "manual")) { host, _, id ->
            thrown = runCatching { host.respondPermission(id, "not-offered") }.exceptionOrNull()
        }
        assertDenied(run, "invalid_answer")
        assertTrue(thrown is AcpException, "respondPermission with a bogus option threw $thrown")
    }

    @Test
    fun `nobody answering a manual request times out`() = test {
        assertDenied(permissionWrite(HostOptions(permission = "manual", permissionTimeoutMs = 200u)), "timeout")
    }

    @Test
    fun `session cancel while the request is pending resolves cancelled`() = test {
        val run = permissionWrite(HostOptions(permission = "manual")) { _, session, _ -> session.cancel() }
        val res = run.resolutions()
        assertEquals(1, res.size, res.toString())
        assertEquals("cancelled", res[0]["decidedBy"]!!.jsonPrimitive.content)
        assertEquals(obj("""{"outcome":"cancelled"}"""), res[0]["outcome"])
        assertFalse(run.written())
        assertEquals("cancelled", run.result.getOrThrow().stopReason)
    }

    @Test
    fun `shutting the host down while a request is pending resolves disconnected`() = test {
        val cwd = Files.createTempDirectory("acp-kt-fc").toRealPath()
        Host(HostOptions(permission = "manual", shutdownGraceMs = 300u)).use { host ->
            val log = EventLog(this, host)
            val session = host.spawn(Fixtures.mock("permission-write")).newSession(SessionOptions(cwd = cwd.toString()))
            val turn = async { runCatching { session.prompt("write") } }
            log.until { it is Event.PermissionRequested }
            host.shutdown()
            val result = withTimeout(Fixtures.T) { turn.await() }
            assertTrue(result.exceptionOrNull() is AcpException, "the pending prompt failed typed: $result")
            log.until { it is Event.AgentExited }
            val res = log.all.filterIsInstance<Event.PermissionResolved>().map { obj(it.data) }
            assertEquals(listOf("disconnected"), res.map { it["decidedBy"]!!.jsonPrimitive.content })
            assertEquals(JsonNull, res[0]["outcome"])
            assertFalse(Files.exists(cwd.resolve("hello.txt")))
        }
    }

    @Test
    fun `allow always grants the session and nothing else`() = test {
        val cwd = Files.createTempDirectory("acp-kt-fc").toRealPath().toString()
        val asked = Collections.synchronizedList(mutableListOf<ULong>())
        Host(permissionHandler = permissionHandler { asked += it.requestId; it.optionIdOfKind("allow_always") }).use { host ->
            val log = EventLog(this, host)
            val agent = host.spawn(Fixtures.mock("permission-write"))
            val s1 = agent.newSession(SessionOptions(cwd = cwd))
            s1.prompt("1")
            s1.prompt("2")
            agent.newSession(SessionOptions(cwd = cwd)).prompt("3")
            agent.shutdown()
            log.until { it is Event.AgentExited }
            val by = log.all.filterIsInstance<Event.PermissionResolved>().map { obj(it.data)["decidedBy"]!!.jsonPrimitive.content }
            assertEquals(listOf("host", "grant", "host"), by, "the grant covers its session only")
            assertEquals(2, asked.size)
        }
    }
}
