// The names the docs' Kotlin blocks use (tests/docs/kotlin.py compiles each block as the body of
// a suspend function after this file).
import dev.acphost.*
import kotlinx.coroutines.*

val scope: CoroutineScope = CoroutineScope(Dispatchers.Default)
val cache: String = System.getProperty("java.io.tmpdir") + "/acp-doc-cache"
val project: String = System.getProperty("user.dir")
val host: Host = Host()

fun render(ev: Event) = println(ev)

object myHttpClient {
    fun getBytes(url: String): ByteArray = java.net.URI(url).toURL().readBytes()
}
