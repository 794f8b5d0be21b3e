// Replaying a recording through the Kotlin face (`AgentSpec(replay = ReplayOptions(...))`,
// docs/RECORDING.md "Replaying"): a session recorded here with the `record` host option plays back
// with the same turn; a host that prompts otherwise gets a `params_differ` divergence naming the
// field, in the report and as the agent's stderr; bad replay specs are the core's InvalidConfig
// with its path. The shared cases replay in ConformanceTest.
package dev.acphost

import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.nio.file.Files
import java.nio.file.Path
import kotlin.io.path.ExperimentalPathApi
import kotlin.io.path.deleteRecursively
import kotlin.io.path.readText

class ReplayTest {
    private val dir: Path = Files.createTempDirectory("acp-kt-replay").toRealPath()

    @OptIn(ExperimentalPathApi::class)
    @AfterEach
    fun removeDir() = dir.deleteRecursively()

    /** A workspace with the README.md the `every-request` scenario reads. */
    private fun workspace(name: String): Path =
        Files.createDirectories(dir.resolve(name)).also { Files.writeString(it.resolve("README.md"), "# readme\n") }

    private class Played(val text: String, val events: List<Event>)

    /** One `every-request` session (allowing once) from [spec] on [host]: the turn's text and every event. */
    private suspend fun every(host: Host, spec: AgentSpec, cwd: Path, prompt: String): Played = kotlinx.coroutines.coroutineScope {
        val log = EventLog(this, host)
        val agent = host.spawn(spec)
        val turn = agent.newSession(SessionOptions(cwd = cwd.toString())).prompt(prompt)
        assertEquals("end_turn", turn.stopReason)
        agent.shutdown()
        log.until { it is Event.AgentExited }
        log.job.cancel()
        Played(turn.text, log.all.toList())
    }

    private fun allowing() = permissionHandler { it.optionIdOfKind("allow_once") }

    /** A recording of `every-request` made through this face, and the turn's text. */
    private suspend fun record(): Pair<Path, String> {
        val file = dir.resolve("every.acprec.jsonl")
        val played = Host(HostOptions(record = RecordOptions(file = file.toString())), permissionHandler = allowing()).use { host ->
            every(host, Fixtures.mock("every-request"), workspace("recorded"), "everything")
        }
        // The end line is written after agent_exited (docs/RECORDING.md): wait for a whole file.
        val deadline = System.nanoTime() + 10_000_000_000
        while (!Files.isRegularFile(file) || !file.readText().trimEnd().lines().last().contains("\"end\"")) {
            assertTrue(System.nanoTime() < deadline, "the recording ends with its end line")
            Thread.sleep(20)
        }
        return file to played.text
    }

    private fun report(path: Path): JsonObject {
        assertTrue(Files.isRegularFile(path), "no report at $path")
        return obj(path.readText())
    }

    @Test
    fun `a recorded session replays with its turn and a changed prompt is a params_differ divergence`() = test {
        val (file, recordedText) = record()

        // The same host behaviour, in another workspace: no divergence, the recorded turn.
        val same = dir.resolve("same.json")
        val spec = AgentSpec(replay = ReplayOptions(file = file.toString(), pace = ReplayPace.FAST, report = same.toString()))
        val live = workspace("live")
        val replayed = Host(permissionHandler = allowing()).use { every(it, spec, live, "everything") }
        assertEquals(recordedText, replayed.text)
        assertTrue(replayed.text.contains("permission selected allow"), replayed.text)
        assertEquals("every request\n", live.resolve("notes.txt").readText(), "the agent's write landed in the live workspace")
        report(same).let { r ->
            assertEquals(0L, r.getValue("divergenceCount").jsonPrimitive.long, "$r")
            assertEquals("true", r.getValue("complete").jsonPrimitive.content)
        }

        // Another prompt text: reported with the field, the recorded and the live value.
        val other = dir.resolve("other.json")
        val changed = Host(permissionHandler = allowing()).use {
            every(it, spec.copy(replay = spec.replay!!.copy(report = other.toString())), workspace("other"), "something else")
        }
        assertEquals(recordedText, changed.text, "the replay still plays the recorded agent")
        val r = report(other)
        val prompt = r.getValue("divergences").jsonArray.map { it.jsonObject }.firstOrNull { str(it, "kind") == "params_differ" }
            ?: throw AssertionError("no params_differ: $r")
        assertEquals("session/prompt", str(prompt, "method"), "$r")
        val diff = prompt.getValue("differences").jsonArray[0].jsonObject
        assertEquals("params.prompt[0].text", str(diff, "path"))
        assertEquals("everything", str(diff, "recorded"))
        assertEquals("something else", str(diff, "live"))
        // The same, readable, as the agent's stderr events.
        val stderr = changed.events.filterIsInstance<Event.AgentStderr>().map { str(obj(it.data), "line") ?: "" }
        assertTrue(stderr.any { it.startsWith("replay: divergence 1 (params_differ)") }, "$stderr")

        // `ignore` reaches the replay: the prompt is not compared.
        val ignored = dir.resolve("ignored.json")
        val ignoring = AgentSpec(
            replay = ReplayOptions(file = file.toString(), pace = ReplayPace.FAST, report = ignored.toString(), ignore = listOf("params.prompt")),
        )
        Host(permissionHandler = allowing()).use { every(it, ignoring, workspace("ignored"), "something else") }
        assertEquals(0L, report(ignored).getValue("divergenceCount").jsonPrimitive.long, "${report(ignored)}")
    }

    /** The core's `data.path` of what [spec]'s spawn threw (it must be InvalidConfig). */
    private suspend fun refused(host: Host, spec: AgentSpec): Pair<String?, String> {
        val e = try {
            host.spawn(spec).shutdown()
            throw AssertionError("spawned: $spec")
        } catch (e: AcpException.InvalidConfig) {
            e
        }
        return str(obj(e.data!!), "path") to e.detail
    }

    @Test
    fun `a replay spec the core refuses is InvalidConfig with the core's path`() = test {
        val notRecording = dir.resolve("hello.txt").also { Files.writeString(it, "hello\n") }
        val recording = dir.resolve("empty.acprec.jsonl").also { Files.writeString(it, "") }
        Host().use { host ->
            // No such file.
            val (missing, _) = refused(host, AgentSpec(replay = ReplayOptions(file = dir.resolve("nope.acprec.jsonl").toString())))
            assertEquals("replay.file", missing)
            // A file that is not a recording: the line that says so.
            val (path, detail) = refused(host, AgentSpec(replay = ReplayOptions(file = notRecording.toString())))
            assertEquals("replay.file", path)
            assertTrue(detail.contains("line 1: not JSON"), detail)
            assertEquals("replay.file", refused(host, AgentSpec(replay = ReplayOptions(file = recording.toString()))).first)
            // A relative path is not resolved.
            assertEquals("replay.file", refused(host, AgentSpec(replay = ReplayOptions(file = "rec.acprec.jsonl"))).first)
            // No file at all (only a document can say that).
            assertEquals("replay.file", refused(host, AgentSpec.fromJson("""{"replay": {"pace": "fast"}}""")).first)
            // A replay starts no program: `command` (or args, env, cwd, restart) beside it is refused.
            val both = AgentSpec(command = Fixtures.mockAgent, replay = ReplayOptions(file = notRecording.toString()))
            assertEquals("command", refused(host, both).first)
            assertEquals("cwd", refused(host, AgentSpec(cwd = dir.toString(), replay = ReplayOptions(file = notRecording.toString()))).first)
            // The typed fields are checked by the core's table.
            assertEquals("replay.waitMs", refused(host, AgentSpec(replay = ReplayOptions(file = notRecording.toString(), waitMs = 0u))).first)
        }
    }
}
