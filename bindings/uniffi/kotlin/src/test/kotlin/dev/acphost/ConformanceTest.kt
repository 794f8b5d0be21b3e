// Cross-face conformance: every case of fixtures/scenarios/conformance/cases.json through the Kotlin
// face must produce the normalised trace in expected/<case>.json (the same traces the Rust, C, Node
// and Python faces produce). The runner follows fixtures/scenarios/conformance/README.md and the
// Python/Node runners op by op. The recordings of fixtures/recordings/faces/ (every face's) replay
// through this face to the same traces with no divergence (docs/RECORDING.md, "Replaying");
// `ACP_RECORDINGS_OUT=DIR` writes this face's recordings to DIR/kotlin/.
package dev.acphost

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.async
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.channels.ClosedReceiveChannelException
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.boolean
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.fail
import java.nio.file.Files
import java.nio.file.Path
import java.nio.file.Paths
import java.util.UUID
import kotlin.io.path.deleteRecursively
import kotlin.io.path.ExperimentalPathApi
import kotlin.io.path.isDirectory
import kotlin.io.path.listDirectoryEntries
import kotlin.io.path.nameWithoutExtension
import kotlin.io.path.readText
import kotlin.io.path.writeText
import kotlin.time.Duration.Companion.seconds

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConformanceTest {
    private val doc: JsonObject = Json.parseToJsonElement(Fixtures.conformance.resolve("cases.json").readText()).jsonObject
    private val cases: List<JsonObject> = doc.getValue("cases").jsonArray.map { it.jsonObject }
    private val cwd: String = doc.str("cwd")!!

    // The mock agent's credentials files (a terminal login creates one): a fresh path per case,
    // never the variable of the environment the tests run in.
    private val credentials: Path = Files.createTempDirectory("acp-host-kt-creds-").toRealPath()

    // The replays' reports.
    private val reports: Path = Files.createTempDirectory("acp-host-kt-replay-").toRealPath()

    /** fixtures/recordings/faces/cases.json: the cases each face records and every face replays. */
    private val faces: JsonObject = Json.parseToJsonElement(Fixtures.root.resolve("fixtures/recordings/faces/cases.json").readText()).jsonObject
    private val faceCases: List<String> = faces.getValue("cases").jsonArray.map { it.jsonPrimitive.content }

    @OptIn(ExperimentalPathApi::class)
    @AfterAll
    fun removeCredentials() {
        credentials.deleteRecursively()
        reports.deleteRecursively()
    }

    @TestFactory
    fun `every case produces the expected trace`(): List<DynamicTest> =
        cases.map { case ->
            val name = case.str("name")!!
            // Surefire reports dynamic tests by index: every failure names its case.
            DynamicTest.dynamicTest(name) { compare(name, run(name, case, Source.Mock)) }
        }

    /** Where a case's agent comes from: the mock agent, recorded to a file, or a recording played. */
    private sealed class Source {
        object Mock : Source()
        class Record(val file: Path) : Source()
        class Replay(val file: Path, val report: Path) : Source()
    }

    /** One case from [source], bounded; a failure names the case. */
    private fun run(label: String, case: JsonObject, source: Source): List<JsonObject> {
        prepare()
        return try {
            runBlocking { withTimeout(CASE_BOUND) { runCase(case, source) } }
        } catch (e: Throwable) {
            throw AssertionError("$label: ${e.message}", e)
        }
    }

    private fun caseNamed(name: String): JsonObject =
        cases.firstOrNull { it.str("name") == name } ?: fail("no conformance case $name")

    @Test
    fun `record this face's fixtures when asked`() {
        // ACP_RECORDINGS_OUT=DIR: this face records the cases into DIR/kotlin/; without it, nothing.
        val out = System.getenv("ACP_RECORDINGS_OUT")?.takeIf { it.isNotEmpty() } ?: return
        val dir = Files.createDirectories(Paths.get(out).toAbsolutePath().resolve(FACE))
        for (name in faceCases) {
            val file = dir.resolve("$name.acprec.jsonl")
            Files.deleteIfExists(file)
            // A recorded run is still the case: the same trace.
            compare(name, run(name, caseNamed(name), Source.Record(file)))
            awaitEnd(file)
        }
    }

    /**
     * Every face's recording of every case of fixtures/recordings/faces/cases.json, replayed
     * here instead of the mock agent (the same host, answers and ops): the case's expected trace
     * less what a replay has no process for, and a report without divergence. A face with no
     * recordings directory yet is skipped (saying so); a missing file in one that exists fails.
     */
    @TestFactory
    fun `every face's recording replays through Kotlin without divergence`(): List<DynamicTest> =
        RECORDING_FACES.flatMap { face ->
            faceCases.map { name ->
                DynamicTest.dynamicTest("$face/$name") {
                    val file = recordings(face).resolve("$name.acprec.jsonl")
                    assertTrue(Files.isRegularFile(file), "$face/$name: no recording at $file (record them with ACP_RECORDINGS_OUT=DIR)")
                    val report = reports.resolve("$face-$name.json")
                    val got = run("$face/$name", caseNamed(name), Source.Replay(file, report))
                    val r = readReport(report)
                    assertTrue(
                        r.getValue("divergenceCount").jsonPrimitive.long == 0L && r.getValue("complete").jsonPrimitive.boolean,
                        "$face/$name: the replay diverged: $r",
                    )
                    compare("$face/$name", got.map { withoutProcess(it) as JsonObject }, ::withoutProcess)
                }
            }
        }

    /** A host answering a permission otherwise than the recorded one: `answer_differs` for every face's recording. */
    @TestFactory
    fun `a changed permission answer is a divergence for every face's recording`(): List<DynamicTest> {
        val changed = faces.getValue("changed").jsonObject
        val name = changed.str("case")!!
        val case = JsonObject(caseNamed(name) + ("permission" to changed.getValue("permission")))
        return RECORDING_FACES.map { face ->
            DynamicTest.dynamicTest("$face/$name") {
                val file = recordings(face).resolve("$name.acprec.jsonl")
                assertTrue(Files.isRegularFile(file), "$face/$name: no recording at $file (record them with ACP_RECORDINGS_OUT=DIR)")
                val report = reports.resolve("$face-$name-changed.json")
                run("$face/$name (changed)", case, Source.Replay(file, report))
                val r = readReport(report)
                val found = r.getValue("divergences").jsonArray.map { it.jsonObject }.any {
                    it.str("kind") == "answer_differs" && it.str("method") == "session/request_permission"
                }
                assertTrue(found, "$face/$name: no answer_differs of session/request_permission: $r")
            }
        }
    }

    private val skipped = mutableSetOf<String>()

    /** fixtures/recordings/faces/<face>/; a face that has none yet is skipped, with the reason printed. */
    private fun recordings(face: String): Path {
        val dir = Fixtures.root.resolve("fixtures/recordings/faces/$face")
        if (!dir.isDirectory()) {
            val why = "$face: no recordings yet (fixtures/recordings/faces/$face/ does not exist)"
            if (skipped.add(face)) println("ConformanceTest: skipped $why")
            assumeTrue(false, why)
        }
        return dir
    }

    private fun readReport(path: Path): JsonObject {
        assertTrue(Files.isRegularFile(path), "the replay wrote no report at $path")
        return Json.parseToJsonElement(path.readText()).jsonObject
    }

    /** A recording is whole once its `end` line is written (after `agent_exited`). */
    private fun awaitEnd(file: Path) {
        val deadline = System.nanoTime() + Fixtures.T.inWholeNanoseconds
        while (!(Files.isRegularFile(file) && file.readText().trimEnd().substringAfterLast('\n').contains("\"end\""))) {
            assertTrue(System.nanoTime() < deadline, "$file: no end line within ${Fixtures.T}")
            Thread.sleep(20)
        }
    }

    @Test
    fun `every expected trace has a case`() {
        val files = Fixtures.conformance.resolve("expected").listDirectoryEntries("*.json").map { it.nameWithoutExtension }.toSet()
        assertEquals(files, cases.map { it.str("name")!! }.toSet())
    }

    /** README step 0: the case's cwd with the same files on every face. */
    private fun prepare() {
        val dir = Paths.get(cwd)
        Files.createDirectories(dir)
        assertTrue(dir.isDirectory())
        // Other faces' runs share this directory (side by side in scripts/test): a file already
        // right is left alone, another one replaced at once (a rename), never seen empty.
        for ((file, content) in doc.getValue("files").jsonObject) {
            val path = dir.resolve(file)
            val text = content.jsonPrimitive.content
            if (Files.isRegularFile(path) && Files.readString(path) == text) continue
            val tmp = dir.resolve("$file.${ProcessHandle.current().pid()}.tmp")
            tmp.writeText(text)
            Files.move(tmp, path, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE)
        }
    }

    /** The host's events, read by a concurrent collector, handed out up to a matching one. */
    private class Events(scope: CoroutineScope, host: Host) {
        private val queue = Channel<Event>(Channel.UNLIMITED)
        val job: Job = scope.launch {
            try {
                host.events().collect { queue.send(it) }
            } finally {
                queue.close()
            }
        }

        /** Events up to and including the first one [stop] accepts (each wait bounded). */
        suspend fun collectUntil(what: String, stop: (Event) -> Boolean): List<Event> {
            val out = mutableListOf<Event>()
            while (true) {
                val ev = try {
                    withTimeout(Fixtures.T) { queue.receive() }
                } catch (e: TimeoutCancellationException) {
                    fail("no $what within ${Fixtures.T}; got: ${out.map { describe(it) }}")
                } catch (e: ClosedReceiveChannelException) {
                    fail("the event stream ended before $what; got: ${out.map { describe(it) }}")
                }
                out += ev
                if (stop(ev)) return out
            }
        }

        private fun describe(e: Event) = if (e is Event.SessionUpdate) "${e.kind}:${e.updateKind}" else e.kind
    }

    private suspend fun runCase(case: JsonObject, source: Source): List<JsonObject> = coroutineScopeFor { scope ->
        val trace = mutableListOf<Event>()
        val spec = if (source is Source.Replay) {
            AgentSpec(replay = ReplayOptions(file = source.file.toString(), pace = ReplayPace.FAST, report = source.report.toString()))
        } else {
            Fixtures.mock(
                case.str("scenario")!!,
                env = mapOf("ACP_MOCK_CREDENTIALS" to credentials.resolve("credentials-${UUID.randomUUID()}").toString()),
            )
        }
        val h = hostFor(case)
        val options = if (source is Source.Record) h.options.copy(record = RecordOptions(file = source.file.toString())) else h.options
        val host = Host(options, h.permission, h.elicitation, h.ext, h.terminalAuth)
        val events = Events(scope, host)
        try {
            case.str("spawnExpect")?.let { spawnExpect ->
                val e = runCatching { host.spawn(spec) }.exceptionOrNull()
                assertTrue(e is AcpException, "spawn: expected $spawnExpect, got ${e ?: "an agent"}")
                assertEquals(spawnExpect.removePrefix("error:"), (e as AcpException).code, "spawn: $e")
                trace += events.collectUntil("agent_exited") { it is Event.AgentExited }
                return@coroutineScopeFor normalise(trace)
            }
            var agent = host.spawn(spec)
            var current: Session? = null
            var exited = false
            for (op in case.getValue("ops").jsonArray.map { it.jsonObject }) {
                val name = op.str("op")!!
                val expect = op.str("expect")
                if (name == "prompt") {
                    val session = checkNotNull(current) { "prompt without a session" }
                    val r = prompt(scope, session, op, events, trace)
                    exited = exited || r == "error:agent_exited"
                    continue
                }
                if (name == "steer") {
                    val session = checkNotNull(current) { "steer without a session" }
                    val outcome = steerOutcome(session, op.str("text")!!, expect)
                    if (outcome == "prompted") trace += events.collectUntil("turn_ended") { it is Event.TurnEnded }
                    continue
                }
                // The op's `sessionId`, else the current session's.
                val sid = { op.str("sessionId") ?: checkNotNull(current) { "$name without a session" }.id() }
                val error = try {
                    when (name) {
                        "session_status" -> checkValue(name, expect, agent.sessionStatus(sid()).status)
                        "set_title" -> checkValue(name, expect, agent.setSessionTitle(sid(), op.str("title")!!))
                        "archive_session" -> agent.archiveSession(sid())
                        "unarchive_session" -> agent.unarchiveSession(sid())
                        "session_options" -> {
                            val modes = agent.sessionOptions(SessionOptions(cwd = cwd), op.str("sessionId")).modes
                            val mode = modes?.let { Json.parseToJsonElement(it).jsonObject.str("currentModeId") }
                            checkValue(name, expect, mode)
                        }
                        "new_session" -> current = agent.newSession(SessionOptions(cwd = cwd))
                        "load_session" -> current = agent.loadSession(op.str("sessionId")!!, SessionOptions(cwd = cwd))
                        "resume_session" -> current = agent.resumeSession(op.str("sessionId")!!, SessionOptions(cwd = cwd))
                        "fork_session" -> current = agent.forkSession(op.str("sessionId")!!, SessionOptions(cwd = cwd))
                        "set_mode" -> current!!.setMode(op.str("modeId")!!)
                        // The value as JSON (a string here: "architect").
                        "set_config_option" -> current!!.setConfigOption(op.str("configId")!!, op.getValue("value").toString())
                        "set_model" -> current!!.setModel(op.str("modelId")!!)
                        "authenticate" -> agent.authenticate(op.str("methodId")!!)
                        "logout" -> agent.logout()
                        "terminal_auth" -> {
                            agent = agent.terminalAuth(op.str("methodId")!!)
                            // The old agent's exit and the new one's agent_ready are in the trace.
                            trace += events.collectUntil("agent_ready") { it is Event.AgentReady }
                        }
                        "list_sessions" -> agent.listSessions(null, null)
                        "close_session" -> current!!.closeSession()
                        "delete_session" -> agent.deleteSession(op.str("sessionId")!!)
                        "shutdown" -> {
                            agent.shutdown()
                            exited = true
                        }
                        else -> fail("unknown op $name")
                    }
                    null
                } catch (e: AcpException) {
                    e
                }
                checkOutcome(name, expect, error)
            }
            assertTrue(exited, "a case ends with shutdown or an agent exit")
            // This agent's exit ends the trace (after terminal_auth an older agent exited first).
            val last = agent.id()
            trace += events.collectUntil("agent_exited of agent $last") { it is Event.AgentExited && it.agent == last }
            normalise(trace)
        } finally {
            withContext(NonCancellable) {
                // No agent outlives the case, even when it failed (close() would shut down too).
                withTimeoutOrNull(Fixtures.T) { host.shutdown() }
                events.job.cancel()
                host.close()
            }
        }
    }

    /**
     * One `prompt` op: the turn runs in its own coroutine while the events are watched for
     * `cancelOn` (→ `session.cancel()`) or `abortOn` (→ cancelling the prompt's coroutine, the
     * way Kotlin users abort a call). Returns the outcome as `stopReason` or `error:<kind>`.
     */
    private suspend fun prompt(scope: CoroutineScope, session: Session, op: JsonObject, events: Events, trace: MutableList<Event>): String? {
        val expect = op.str("expect")
        val content = op["content"]?.jsonArray
        // An AcpException is the turn's outcome, not a failure of the case's scope: return it.
        val turn = scope.async {
            try {
                if (content != null) session.promptContent(content.map { it.toString() }) else session.prompt(op.str("text")!!)
            } catch (e: AcpException) {
                e
            }
        }
        op.str("steerOn")?.let { spec ->
            trace += events.collectUntil(spec) { matches(it, spec) }
            steerOutcome(session, op.str("steer")!!, op.str("steerExpect"))
        }
        op.str("cancelOn")?.let { spec ->
            trace += events.collectUntil(spec) { matches(it, spec) }
            session.cancel()
        }
        // v2: cancel the tool call / terminal the matching update names; the call returns the
        // agent's acceptance (the confirming update follows in the trace).
        for ((key, field) in listOf("cancelToolCallOn" to "toolCallId", "cancelTerminalOn" to "terminalId")) {
            op.str(key)?.let { spec ->
                val seen = events.collectUntil(spec) { matches(it, spec) }
                trace += seen
                val id = Json.parseToJsonElement(seen.last().data).jsonObject[field]!!.jsonPrimitive.content
                val accepted = if (key == "cancelToolCallOn") session.cancelToolCall(id) else session.cancelTerminal(id)
                assertEquals("{}", accepted, key)
            }
        }
        op.str("abortOn")?.let { spec ->
            // Kotlin's Stop: the coroutine ends at once with CancellationException (no result to
            // observe, as with Python's cancelled task); the uniffi future is dropped, the core
            // sends session/cancel, and the turn still ends (the agent's `cancelled` answer, or
            // failing `cancelled` after cancelGraceMs) — its turn_ended carries the outcome.
            trace += events.collectUntil(spec) { matches(it, spec) }
            turn.cancel()
            withTimeout(Fixtures.T) { turn.join() }
            assertTrue(turn.isCancelled, "the aborted prompt settled otherwise: ${runCatching { turn.getCompleted() }}")
            trace += events.collectUntil("turn_ended") { it is Event.TurnEnded }
            return null
        }
        val outcome = when (val r = withTimeout(Fixtures.T) { turn.await() }) {
            is TurnResult -> r.stopReason
            is AcpException -> {
                checkOutcome("prompt", expect, r)
                "error:${r.code}"
            }
            else -> fail("prompt returned $r")
        }
        assertEquals(expect, outcome, "prompt")
        // Let the turn's events land before the next op (a prompt refused locally, `unsupported`,
        // sent nothing: it has no turn).
        // `turns`: a queued steer is a turn of its own after the prompt's.
        if (expect != "error:unsupported") {
            repeat(op["turns"]?.jsonPrimitive?.long?.toInt() ?: 1) {
                trace += events.collectUntil("turn_ended") { it is Event.TurnEnded }
            }
        }
        return outcome
    }

    /** Steer [session] with [text]: the outcome (`injected`, `queued`, ...) must be [expect] (or its `error:<kind>`). */
    private suspend fun steerOutcome(session: Session, text: String, expect: String?): String? {
        val r = try {
            session.steer(text)
        } catch (e: AcpException) {
            checkOutcome("steer", expect, e)
            return null
        }
        checkValue("steer", expect, r.outcome)
        return r.outcome
    }

    /** A call's value against `expect` (an `error:` one: the call should have failed). */
    private fun checkValue(what: String, expect: String?, got: String?) {
        assertTrue(expect?.startsWith("error:") != true, "$what: expected $expect, got $got")
        if (expect != null) assertEquals(expect, got, what)
    }

    private fun checkOutcome(what: String, expect: String?, error: AcpException?) {
        if (error == null) {
            assertTrue(expect?.startsWith("error:") != true, "$what: expected $expect, it succeeded")
            return
        }
        if (expect?.startsWith("error:") != true) throw AssertionError("$what failed: ${error.code}: ${error.message}", error)
        assertEquals(expect.removePrefix("error:"), error.code, "$what: ${error.message}")
    }

    private class HostParts(
        val options: HostOptions,
        val permission: PermissionHandler?,
        val elicitation: ElicitationHandler?,
        val ext: ExtHandler?,
        val terminalAuth: TerminalAuthRunner?,
    )

    /** README step 1: the host a case asks for. */
    private fun hostFor(case: JsonObject): HostParts {
        val permission = case.str("permission") ?: "deny"
        val answers = case["elicitation"]?.jsonObject
        val table = case["ext"]?.jsonObject
        val options = HostOptions(
            permission = if (permission == "manual") "manual" else null,
            maxLineBytes = case["maxLineBytes"]?.jsonPrimitive?.long?.toULong(),
            cancelGraceMs = case["cancelGraceMs"]?.jsonPrimitive?.long?.toULong(),
            unstable = case["unstable"]?.jsonArray?.map { it.jsonPrimitive.content },
            // Advertise exactly the modes the case answers.
            elicitationModes = answers?.keys?.toList(),
        )
        return HostParts(
            options = options,
            permission = if (permission == "allow") permissionHandler { it.optionIdOfKind("allow_once") } else null,
            elicitation = answers?.let { a -> elicitationHandler { req -> a.getValue(req.mode).toString() } },
            ext = table?.let { ExtTable(it) },
            // The "user" logs in: the login leaves the credentials file the mock agent looks for.
            terminalAuth = if (case["terminalAuth"]?.jsonPrimitive?.boolean == true) CredentialsLogin else null,
        )
    }

    /** Serves extension requests from a case's table; a method not in it: -32601. */
    private class ExtTable(private val table: JsonObject) : ExtHandler {
        override suspend fun handle(method: String, params: String): ExtReply {
            val entry = table[method]?.jsonObject ?: return ExtReply.Error(-32601, "method not found", null)
            entry["result"]?.let { return ExtReply.Result(it.toString()) }
            val err = entry.getValue("error").jsonObject
            return ExtReply.Error(err["code"]?.jsonPrimitive?.long ?: -32603, err.str("message") ?: "error", null)
        }
    }

    private object CredentialsLogin : TerminalAuthRunner {
        override suspend fun run(command: TerminalAuthCommand): Int {
            val path = command.env["ACP_MOCK_CREDENTIALS"] ?: return 1
            withContext(Dispatchers.IO) { Paths.get(path).writeText("logged-in\n") }
            return 0
        }
    }

    /** [got] against expected/<case>.json (its events through [expected], for a replay: [withoutProcess]). */
    private fun compare(name: String, got: List<JsonObject>, expected: (JsonElement) -> JsonElement = { it }) {
        val case = name.substringAfter('/')
        val want = JsonArray(
            Json.parseToJsonElement(Fixtures.conformance.resolve("expected/$case.json").readText())
                .jsonObject.getValue("events").jsonArray.map(expected),
        )
        for (i in 0 until minOf(want.size, got.size)) {
            if (want[i] != got[i]) {
                fail(
                    "$name: trace differs at event $i (${firstDifference(want[i], got[i], "")})\n" +
                        "  want: ${want[i]}\n  got:  ${got[i]}\n" + kinds(want, got),
                )
            }
        }
        if (want.size != got.size) fail("$name: ${got.size} events, want ${want.size}\n" + kinds(want, got))
    }

    private fun kinds(want: JsonArray, got: List<JsonObject>) =
        "  want kinds: ${want.map { it.jsonObject.str("kind") }}\n  got kinds:  ${got.map { it.str("kind") }}"

    companion object {
        /** A whole case (several bounded waits; the slowest is a 10 s cancel grace at most). */
        val CASE_BOUND = 60.seconds

        /** The faces whose recordings (fixtures/recordings/faces/<face>/) replay here; this face records as `kotlin`. */
        val RECORDING_FACES = listOf("c", "kotlin", "node", "python", "rust")
        const val FACE = "kotlin"

        /**
         * A trace as a replay gives it: no process, so no `exitCode`, `signal` or `stderrTail` at
         * any depth, and no `message` in an `agent_exited` error (core/tests/integration/replay.rs).
         */
        fun withoutProcess(v: JsonElement): JsonElement = when (v) {
            is JsonObject -> {
                val agentExited = (v["kind"] as? JsonPrimitive)?.content == "agent_exited"
                JsonObject(
                    v.filterKeys { it !in setOf("exitCode", "signal", "stderrTail") && !(agentExited && it == "message") }
                        .mapValues { withoutProcess(it.value) },
                )
            }
            is JsonArray -> JsonArray(v.map { withoutProcess(it) })
            else -> v
        }

        /** The normalised form of the events (README "Normalisation"). */
        fun normalise(events: List<Event>): List<JsonObject> =
            events.filter { it !is Event.AgentStderr && it !is Event.TerminalExited }.map { ev ->
                var data = Json.parseToJsonElement(ev.data)
                if (ev is Event.AgentReady) data = JsonObject(data.jsonObject - "pid")
                if (ev is Event.AgentExited) data = JsonObject(data.jsonObject - "stderrTail")
                JsonObject(
                    mapOf(
                        "kind" to JsonPrimitive(ev.kind),
                        "session" to (ev.session?.let { JsonPrimitive(it) } ?: JsonNull),
                        "turn" to (ev.turn?.let { JsonPrimitive(it.toLong()) } ?: JsonNull),
                        "replay" to JsonPrimitive(ev.replay),
                        "data" to data,
                    ),
                )
            }

        /** `kind` or `kind:sessionUpdate`. */
        fun matches(ev: Event, spec: String): Boolean {
            val kind = spec.substringBefore(':')
            val update = spec.substringAfter(':', "")
            return ev.kind == kind && (update.isEmpty() || (ev is Event.SessionUpdate && ev.updateKind == update))
        }

        /** The JSON path of the first difference, for a readable failure. */
        fun firstDifference(want: JsonElement, got: JsonElement, path: String): String = when {
            want is JsonObject && got is JsonObject -> {
                val key = (want.keys + got.keys).sorted().firstOrNull { want[it] != got[it] }
                when {
                    key == null -> "no difference"
                    key !in got -> "${path.ifEmpty { "." }}: missing key `$key`"
                    key !in want -> "${path.ifEmpty { "." }}: unexpected key `$key`"
                    else -> firstDifference(want.getValue(key), got.getValue(key), "$path.$key")
                }
            }
            want is JsonArray && got is JsonArray && want.size == got.size -> {
                val i = want.indices.first { want[it] != got[it] }
                firstDifference(want[i], got[i], "$path[$i]")
            }
            else -> "${path.ifEmpty { "." }}: want $want, got $got"
        }

        private fun JsonObject.str(key: String): String? = (this[key] as? JsonPrimitive)?.takeIf { it !is JsonNull }?.content

        /** A scope for the case's concurrent coroutines (event collector, prompts). */
        private suspend fun <T> coroutineScopeFor(block: suspend (CoroutineScope) -> T): T =
            kotlinx.coroutines.coroutineScope { block(this) }
    }
}
