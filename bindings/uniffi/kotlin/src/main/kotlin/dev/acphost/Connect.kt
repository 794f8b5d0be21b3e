// `Host.connect` over Java streams and sockets: ACP with an agent at the other end of a stream you
// own (a socket, a container's stdio, an SSH channel). The library calls the stream from two
// threads of its own (one reads, one writes); nothing is buffered beyond a small pipe each way, so a
// slow peer slows the host down instead of filling memory.
package dev.acphost

import java.io.InputStream
import java.io.OutputStream
import java.net.Socket

/**
 * A [ByteStream] over [input] and [output]. `closeStream()` closes both and then runs [onClose] (a
 * socket's `close`, which also unblocks a pending read).
 */
class StreamByteStream(
    private val input: InputStream,
    private val output: OutputStream,
    private val onClose: () -> Unit = {},
) : ByteStream {
    override fun read(max: UInt): ByteArray {
        val buf = ByteArray(max.toInt().coerceAtLeast(1))
        val n = input.read(buf)
        return if (n <= 0) ByteArray(0) else buf.copyOf(n)
    }

    override fun write(data: ByteArray) {
        output.write(data)
        output.flush()
    }

    override fun closeStream() {
        runCatching { output.close() }
        runCatching { input.close() }
        runCatching { onClose() }
    }
}

/**
 * Speak ACP over [input] (the agent's output) and [output] (the agent's input) and initialize the
 * agent: an [Agent] like [Host.spawn]'s, without a process. When the agent's end goes away (EOF,
 * an I/O error) calls in flight fail with [AcpException.AgentExited]; when the agent is shut down
 * both streams are closed. A stream whose `read` cannot be interrupted by closing it (some
 * channel implementations) keeps one library thread until its peer sends or closes.
 */
suspend fun Host.connect(input: InputStream, output: OutputStream): Agent =
    connect(StreamByteStream(input, output))

/** [connect] over a connected [socket] (closed when the agent is shut down or goes away). */
suspend fun Host.connect(socket: Socket): Agent =
    connect(StreamByteStream(socket.getInputStream(), socket.getOutputStream()) { socket.close() })
