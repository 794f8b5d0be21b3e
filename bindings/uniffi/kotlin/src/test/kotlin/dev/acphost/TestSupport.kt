// Helpers the fail-closed, faults and lifecycle tests share.
package dev.acphost

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import java.nio.file.Files
import java.nio.file.Paths
import java.util.Collections

/** Every event of a host, collected by a coroutine as they come (unbounded: few events here). */
class EventLog(scope: CoroutineScope, host: Host) {
    private val channel = Channel<Event>(Channel.UNLIMITED)
    val all: MutableList<Event> = Collections.synchronizedList(mutableListOf())
    val job = scope.launch(Dispatchers.IO) {
        try {
            host.events().collect { channel.send(it) }
        } finally {
            channel.close()
        }
    }

    /** Events up to and including the first that matches (bounded by [Fixtures.T]). */
    suspend fun until(pred: (Event) -> Boolean): List<Event> = withTimeout(Fixtures.T) {
        val out = mutableListOf<Event>()
        for (e in channel) {
            out += e
            all += e
            if (pred(e)) return@withTimeout out
        }
        throw AssertionError("the stream ended before the awaited event: ${out.map { it.kind }}")
    }
}

fun obj(json: String): JsonObject = Json.parseToJsonElement(json).jsonObject

fun str(o: JsonObject, key: String): String? = o[key]?.takeIf { it != JsonNull }?.jsonPrimitive?.content

/** A test body with every wait bounded. */
fun test(block: suspend CoroutineScope.() -> Unit) = runBlocking { withTimeout(Fixtures.T * 2, block) }

fun ms(since: Long) = (System.nanoTime() - since) / 1_000_000

/** Alive and not a zombie (a reaped or never-reaped dead child does not count). */
fun alive(pid: Long): Boolean {
    if (!ProcessHandle.of(pid).map { it.isAlive }.orElse(false)) return false
    val stat = runCatching { Files.readString(Paths.get("/proc/$pid/stat")) }.getOrNull() ?: return false
    return stat.substring(stat.lastIndexOf(')') + 2).split(' ')[0] != "Z"
}

suspend fun waitGone(pid: Long, ms: Long = 10_000): Boolean {
    val deadline = System.nanoTime() + ms * 1_000_000
    while (System.nanoTime() < deadline) {
        if (!alive(pid)) return true
        delay(20)
    }
    return !alive(pid)
}
