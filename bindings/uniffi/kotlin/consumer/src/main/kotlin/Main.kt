// The whole consumer: one turn against the agent named by args[0] (the mock agent: its embedded
// `default` scenario, so nothing of the repository is read), then the stop reason and the number
// of events on stdout, and the stop reason again as the typed `turn_ended` payload. run.sh checks them.
import dev.acphost.AgentSpec
import dev.acphost.Event
import dev.acphost.Host
import dev.acphost.SessionOptions
import dev.acphost.events
import dev.acphost.payloads.TurnEnded
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.count
import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.transformWhile
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import java.nio.file.Files
import kotlin.system.exitProcess

fun main(args: Array<String>) {
    val agentCommand = args.singleOrNull() ?: run {
        System.err.println("usage: MainKt <path to acp-mock-agent>")
        exitProcess(2)
    }
    val cwd = Files.createTempDirectory("acp-consumer").toRealPath()
    try {
        runBlocking {
            withTimeout(30_000) {
                Host().use { host ->
                    // Every event up to and including the agent's last one.
                    val events = async { host.events().transformWhile { emit(it); it !is Event.AgentExited }.count() }
                    // A second collector (each collection reads a stream of its own): the typed payload.
                    val ended = async { host.events().filterIsInstance<Event.TurnEnded>().first().payload }
                    val agent = host.spawn(AgentSpec(command = agentCommand, args = listOf("--scenario", "default")))
                    val session = agent.newSession(SessionOptions(cwd = cwd.toString()))
                    val turn = session.prompt("hello")
                    agent.shutdown()
                    println("stopReason=${turn.stopReason}")
                    println("events=${events.await()}")
                    println("typedStopReason=${(ended.await() as? TurnEnded)?.stopReason?.value}")
                }
            }
        }
    } finally {
        cwd.toFile().deleteRecursively()
    }
}
