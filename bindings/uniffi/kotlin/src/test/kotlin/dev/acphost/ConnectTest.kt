// `host.connect` over a stream the embedder opened: the mock agent on a loopback TCP socket
// (`--connect`; the test listens, never the library). A turn runs with its events; the peer going
// away fails a turn in flight promptly with a typed exception; shutting the agent down closes the
// socket; backpressure holds (a big turn through a slow stream).
package dev.acphost

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.io.InputStream
import java.net.InetAddress
import java.net.ServerSocket
import java.net.Socket
import java.nio.file.Files
import java.util.concurrent.TimeUnit

class ConnectTest {
    private val dir = Files.createTempDirectory("acp-kt-connect").toRealPath().toString()

    /** The mock agent connected to a fresh loopback listener, and the accepted socket. */
    private suspend fun agentOnASocket(vararg args: String): Pair<Socket, Process> = withContext(Dispatchers.IO) {
        ServerSocket(0, 1, InetAddress.getLoopbackAddress()).use { server ->
            server.soTimeout = Fixtures.T.inWholeMilliseconds.toInt()
            val proc = ProcessBuilder(listOf(Fixtures.mockAgent, "--connect", "127.0.0.1:${server.localPort}") + args)
                .redirectInput(ProcessBuilder.Redirect.from(java.io.File("/dev/null")))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start()
            server.accept() to proc
        }
    }

    @Test
    fun `a turn over a loopback socket, and shutting the agent down closes the socket`() = test {
        val (socket, proc) = agentOnASocket()
        Host().use { host ->
            val events = async(Dispatchers.IO) { host.events().takeWhile { it !is Event.TurnEnded }.toList() }
            val agent = host.connect(socket)
            assertNull(agent.pid(), "a connected agent has no process of ours")
            assertTrue(agent.info().contains("acp-mock-agent"), agent.info())
            val turn = agent.newSession(SessionOptions(cwd = dir)).prompt("hello")
            assertEquals("end_turn", turn.stopReason)
            assertTrue(turn.text.isNotEmpty())
            assertTrue(events.await().any { it is Event.SessionUpdate && it.text != null })
            agent.shutdown()
            assertTrue(socket.isClosed, "the agent's end closes the socket")
        }
        // Closing our end is all a connected agent gets: it sees EOF and leaves.
        assertTrue(withContext(Dispatchers.IO) { proc.waitFor(Fixtures.T.inWholeSeconds, TimeUnit.SECONDS) })
        assertEquals(0, proc.exitValue())
    }

    @Test
    fun `the peer going away fails the turn in flight promptly with AgentExited`() = test {
        val (socket, proc) = agentOnASocket("--scenario", "hang")
        Host().use { host ->
            val agent = host.connect(socket.getInputStream(), socket.getOutputStream())
            val session = agent.newSession(SessionOptions(cwd = dir))
            val turn = async { runCatching { session.prompt("hang") } }
            delay(200)
            val killed = System.nanoTime()
            proc.destroyForcibly()
            val e = turn.await().exceptionOrNull()
            assertTrue(e is AcpException.AgentExited, "the peer is gone: $e")
            assertTrue(ms(killed) < 5_000, "failed after ${ms(killed)} ms")
            // The agent is gone: later calls fail typed too, never hang.
            assertThrows<AcpException> { session.prompt("again") }
        }
        socket.close()
    }

    @Test
    fun `a stream whose read throws ends the connection and closes it`() = test {
        val (socket, proc) = agentOnASocket("--scenario", "hang")
        val broken = java.util.concurrent.atomic.AtomicBoolean(false)
        // Reads wake every 50 ms to notice the link going down (a real transport's error).
        socket.soTimeout = 50
        val input = object : InputStream() {
            val inner = socket.getInputStream()
            override fun read(): Int = throw UnsupportedOperationException()
            override fun read(b: ByteArray, off: Int, len: Int): Int {
                while (true) {
                    if (broken.get()) throw java.io.IOException("link down")
                    try {
                        return inner.read(b, off, len)
                    } catch (_: java.net.SocketTimeoutException) {
                    }
                }
            }
        }
        try {
            Host().use { host ->
                val agent = host.connect(StreamByteStream(input, socket.getOutputStream()) { socket.close() })
                val session = agent.newSession(SessionOptions(cwd = dir))
                val turn = async { runCatching { session.prompt("hang") } }
                delay(200)
                broken.set(true)
                val e = turn.await().exceptionOrNull()
                assertTrue(e is AcpException.AgentExited, "$e")
                // The agent process is still running: only the stream failed, and its end closed it.
                withTimeout(Fixtures.T) { while (!socket.isClosed) delay(20) }
            }
        } finally {
            proc.destroyForcibly()
        }
    }

    @Test
    fun `a collector that stops taking events stops the reads from the socket`() = test {
        val (socket, proc) = agentOnASocket("--flood", "20000")
        val read = java.util.concurrent.atomic.AtomicLong()
        val input = object : InputStream() {
            val inner = socket.getInputStream()
            override fun read(): Int = throw UnsupportedOperationException()
            override fun read(b: ByteArray, off: Int, len: Int): Int =
                inner.read(b, off, len).also { if (it > 0) read.addAndGet(it.toLong()) }
        }
        try {
            Host(HostOptions(eventCapacity = 16u, earlyUpdateLimit = 16u)).use { host ->
                val agent = host.connect(StreamByteStream(input, socket.getOutputStream()) { socket.close() })
                val session = agent.newSession(SessionOptions(cwd = dir))
                val gate = CompletableDeferred<Unit>()
                var updates = 0
                val collector = async(Dispatchers.IO) {
                    session.events().takeWhile { it !is Event.TurnEnded }.collect {
                        if (it is Event.SessionUpdate) {
                            updates++
                            gate.await() // a UI that stopped taking events
                        }
                    }
                }
                val turn = async { session.prompt("go") }
                delay(1_500)
                val whileStuck = read.get()
                delay(300)
                assertEquals(whileStuck, read.get(), "nothing more is read while the collector is stuck")
                assertTrue(!turn.isCompleted, "the turn waits for its events to be taken")
                gate.complete(Unit)
                assertEquals("end_turn", turn.await().stopReason)
                collector.await()
                assertEquals(20_000, updates)
                // The host had read a bounded part (these pipes, the core's reader queue), then
                // stopped reading the socket until the collector went on.
                val total = read.get()
                assertTrue(whileStuck < total / 2, "read $whileStuck of $total bytes while the collector was stuck")
                agent.shutdown()
            }
        } finally {
            proc.destroyForcibly()
        }
    }
}
