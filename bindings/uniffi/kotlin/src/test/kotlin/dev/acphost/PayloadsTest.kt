// The typed payloads (dev.acphost.payloads, generated from schema/events.schema.json): every event
// of real mock-agent sessions decodes as its kind's class (never Unknown), and hostile payloads
// (wrong types, unknown kinds and tags, missing required fields, not JSON) are Unknown, never a throw.
package dev.acphost

import dev.acphost.payloads.AgentExited
import dev.acphost.payloads.ContentBlock
import dev.acphost.payloads.EventPayload
import dev.acphost.payloads.ExitReason
import dev.acphost.payloads.PermissionOptionKind
import dev.acphost.payloads.PermissionRequested
import dev.acphost.payloads.PlanEntryPriority
import dev.acphost.payloads.PlanUpdateContent
import dev.acphost.payloads.SessionOpened
import dev.acphost.payloads.SessionUpdate
import dev.acphost.payloads.StopReason
import dev.acphost.payloads.ToolCallContent
import dev.acphost.payloads.ToolCallStatus
import dev.acphost.payloads.ToolKind
import dev.acphost.payloads.TurnEnded
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.nio.file.Files

class PayloadsTest {
    private fun tmp(): String = Files.createTempDirectory("acp-host-kt-payloads-").toRealPath().toString()

    /** Every event of one prompt of [scenario] (then the agent shut down), from a fresh host. */
    private suspend fun session(scenario: String, options: HostOptions = HostOptions()): List<Event> {
        val allow = permissionHandler { req -> req.optionIdOfKind("allow_once") }
        return Host(options, permissionHandler = allow).use { host ->
            kotlinx.coroutines.coroutineScope {
                val events = async(Dispatchers.IO) { host.events().toList() }
                val agent = host.spawn(Fixtures.mock(scenario))
                runCatching { agent.newSession(SessionOptions(cwd = tmp())).prompt("hi") }
                host.shutdown()
                withTimeout(Fixtures.T) { events.await() }
            }
        }
    }

    @Test
    fun `every event of real sessions decodes as its kind's class`() = test {
        val scenarios = listOf("all-updates", "modes-config", "permission-write", "fs-read-write", "terminal",
            "garbage-stdout", "stop-reasons", "ext-notification", "crash-mid-turn")
        val all = scenarios.flatMap { session(it, HostOptions(progressEvents = true)) }
        val kinds = mutableSetOf<String>()
        val updates = mutableSetOf<String>()
        for (ev in all) {
            val p = ev.payload
            assertTrue(p !is EventPayload.Unknown, "${ev.kind} did not decode: $p")
            assertTrue(ev.kind in EventPayload.KINDS)
            kinds += ev.kind
            if (ev is Event.SessionUpdate) {
                if (ev.updateKind == "future_kind") {
                    // all-updates sends a kind no schema knows: the lenient fallback, with the JSON.
                    assertTrue(p is SessionUpdate.Unknown, "future_kind: $p")
                    continue
                }
                assertTrue(p is SessionUpdate && p !is SessionUpdate.Unknown, "${ev.updateKind}: $p")
                updates += ev.updateKind!!
                if (p is SessionUpdate.ToolCallUpdate) {
                    p.content?.forEach { assertTrue(it !is ToolCallContent.Unknown, "tool call content: $it") }
                    assertTrue(p.status !is ToolCallStatus.Unknown)
                }
                if (p is SessionUpdate.AgentMessageChunk) assertTrue(p.content is ContentBlock.Text, "${p.content}")
            }
        }
        assertTrue(kinds.containsAll(listOf("agent_ready", "session_opened", "session_update", "turn_started", "turn_ended",
            "permission_requested", "permission_resolved", "fs_read", "fs_write", "terminal_created", "protocol_noise",
            "ext_notification", "agent_exited", "progress")), "kinds seen: $kinds")
        assertTrue(updates.containsAll(listOf("user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "plan",
            "tool_call", "tool_call_update", "available_commands_update", "current_mode_update", "config_option_update",
            "session_info_update", "usage_update")), "updates seen: $updates")
    }

    @Test
    fun `typed fields carry what data says`() = test {
        val all = session("all-updates") + session("permission-write")
        val call = all.map { it.payload }.filterIsInstance<SessionUpdate.ToolCall>().first()
        assertEquals("call_1", call.toolCallId)
        assertEquals(ToolKind.Read, call.kind)
        assertEquals(ToolCallStatus.Pending, call.status)
        val plan = all.map { it.payload }.filterIsInstance<SessionUpdate.Plan>().first()
        assertEquals(listOf(PlanEntryPriority.High, PlanEntryPriority.Low), plan.entries.map { it.priority })
        val ended = all.first { it is Event.TurnEnded }.payload as TurnEnded
        assertEquals(StopReason.EndTurn, ended.stopReason)
        assertEquals("end_turn", ended.stopReason!!.value)
        val opened = all.first { it is Event.SessionOpened }
        assertEquals(opened.session, (opened.payload as SessionOpened).sessionId)
        val asked = all.first { it is Event.PermissionRequested }.payload as PermissionRequested
        assertTrue(asked.options.any { it.kind == PermissionOptionKind.AllowOnce }, "${asked.options}")
        val exited = all.last { it is Event.AgentExited }.payload as AgentExited
        assertEquals(ExitReason.Shutdown, exited.reason)
        // The same decoding as the raw JSON's: `data` is kept and the accessors still work.
        val chunk = all.first { it is Event.SessionUpdate && it.updateKind == "agent_message_chunk" } as Event.SessionUpdate
        assertEquals(chunk.text, ((chunk.payload as SessionUpdate.AgentMessageChunk).content as ContentBlock.Text).text)
        assertTrue(chunk.data.contains("agent_message_chunk"))
    }

    @Test
    fun `v2 update kinds narrow to their typed variants and an unknown kind stays Unknown`() = test {
        val all = session("v2-updates", HostOptions(unstable = listOf("protocol/v2")))
        val updates = all.filterIsInstance<Event.SessionUpdate>()
        val lines = updates.map { ev ->
            when (val p = ev.payload) {
                is SessionUpdate.UserMessage -> "user ${p.messageId}"
                is SessionUpdate.AgentMessage -> "agent ${(p.content!!.single() as ContentBlock.Text).text}"
                is SessionUpdate.AgentThought -> "thought ${p.messageId}"
                is SessionUpdate.ToolCallContentChunk -> "chunk ${p.toolCallId} ${p.content::class.simpleName}"
                is SessionUpdate.TerminalUpdate ->
                    "terminal ${p.terminalId} ${p.size?.let { "${it.cols}x${it.rows}" }} ${p.exitStatus?.exitCode}"
                is SessionUpdate.TerminalOutputChunk -> "output ${p.terminalId} ${p.data}"
                is SessionUpdate.PlanUpdate -> when (val plan = p.plan) {
                    is PlanUpdateContent.Items -> "plan ${plan.entries.map { it.priority }}"
                    else -> "plan ${plan::class.simpleName}"
                }
                is SessionUpdate.Unknown -> "unknown ${ev.updateKind} ${ev.data.contains("somethingNew")}"
                else -> null
            }
        }.filterNotNull()
        assertEquals(listOf(
            "user user_1", "thought thought_1", "chunk call_1 Content", "chunk call_1 Terminal",
            "terminal term_1 80x24 null", "output term_1 b2sK", "terminal term_1 null 0",
            "plan [High, Low]", "plan Markdown", "unknown future_kind true", "agent Here: permission selected.",
        ), lines)
        // The permission request carries the call as the v2 upsert and the chunks built it.
        val asked = all.first { it is Event.PermissionRequested }.payload as PermissionRequested
        assertEquals("Run the tests", asked.toolCall.title)
        assertEquals(2, asked.toolCall.content?.size)

        // Hostile v2 payloads: a missing required field is Unknown, an unknown block that block's Unknown.
        assertTrue(EventPayload.decode("session_update", """{"sessionUpdate":"terminal_output_chunk","terminalId":"t"}""")
            is SessionUpdate.Unknown)
        val odd = EventPayload.decode("session_update",
            """{"sessionUpdate":"agent_message","messageId":"m","content":[{"type":"hologram"}],"extra":1}""")
        assertTrue((odd as SessionUpdate.AgentMessage).content!!.single() is ContentBlock.Unknown, "$odd")
    }

    @Test
    fun `hostile payloads are Unknown, never a throw`() {
        fun unknown(kind: String, data: String) {
            val p = EventPayload.decode(kind, data)
            assertTrue(p is EventPayload.Unknown, "$kind $data -> $p")
            assertEquals(kind, (p as EventPayload.Unknown).kind)
        }
        unknown("turn_ended", "[]") // not an object
        unknown("turn_ended", "not json {")
        unknown("no_such_kind", """{"a":1}""")
        unknown("agent_exited", "{}") // required `reason` missing
        unknown("permission_requested", """{"requestId":"x","sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}""")
        unknown("protocol_noise", """{"line":"x","bytes":1.5,"count":1}""") // not an integer
        unknown("session_opened", """{"sessionId": null}""")
        assertEquals("not JSON", (EventPayload.decode("turn_ended", "{") as EventPayload.Unknown).reason.take(8))

        // A union's unknown tag or a member missing a required field: that union's Unknown, with the JSON.
        val future = EventPayload.decode("session_update", """{"sessionUpdate":"future_kind","x":1}""")
        assertTrue(future is SessionUpdate.Unknown, "$future")
        assertEquals("future_kind", ((future as SessionUpdate.Unknown).raw as kotlinx.serialization.json.JsonObject)["sessionUpdate"].let { (it as JsonPrimitive).content })
        assertTrue(EventPayload.decode("session_update", """{"sessionUpdate":"tool_call"}""") is SessionUpdate.Unknown)
        assertTrue(EventPayload.decode("session_update", """{"sessionUpdate":5}""") is SessionUpdate.Unknown)
        assertTrue(EventPayload.decode("session_update", "[1,2]") is SessionUpdate.Unknown)
        val block = EventPayload.decode("session_update", """{"sessionUpdate":"agent_message_chunk","content":{"type":"hologram","x":1}}""")
        assertTrue((block as SessionUpdate.AgentMessageChunk).content is ContentBlock.Unknown, "$block")

        // Unknown enum values and fields: the value's Unknown, the rest decoded; extra fields ignored.
        val odd = EventPayload.decode("session_update",
            """{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"teleport","status":"in_progress","extra":{"deep":[1]}}""")
        odd as SessionUpdate.ToolCall
        assertEquals(ToolKind.Unknown(JsonPrimitive("teleport")), odd.kind)
        assertEquals("teleport", odd.kind!!.value)
        assertEquals(ToolCallStatus.InProgress, odd.status)
        // An enum of the wrong type is that enum's Unknown too (the value kept), not a failure.
        val odd7 = EventPayload.decode("agent_exited", """{"reason": 7}""") as AgentExited
        assertEquals(ExitReason.Unknown(JsonPrimitive(7)), odd7.reason)
        // An optional field of the wrong type is null, not a failure of its object.
        val partial = EventPayload.decode("turn_ended", """{"stopReason":{"no":1},"error":"text"}""") as TurnEnded
        assertTrue(partial.stopReason is StopReason.Unknown, "${partial.stopReason}")
        assertEquals(null, partial.error)
        // Deep nesting within the core's bound (101 levels) decodes; rawInput stays JSON.
        val deep = "[".repeat(90) + "]".repeat(90)
        val nested = EventPayload.decode("session_update",
            """{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","rawInput":$deep}""")
        assertTrue(nested is SessionUpdate.ToolCall, "$nested")
    }

    @Test
    fun `the payload types cover the core's event kinds`() {
        assertEquals(Event.KNOWN_KINDS, EventPayload.KINDS)
    }
}
