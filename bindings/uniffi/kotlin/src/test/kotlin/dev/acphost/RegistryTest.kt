// The core's ACP registry through the Kotlin face: resolution of each kind from the fixture,
// errors with their paths, an install from a local tar.gz (built here) followed by a turn through
// the installed binary, a hostile archive refused, and installs of an https:// URL through a
// RegistryFetcher that serves the local bytes (thrown, wrong, cancelled). No network.
package dev.acphost

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.io.ByteArrayOutputStream
import java.io.IOException
import java.util.Collections
import java.nio.file.Files
import java.nio.file.Path
import java.security.MessageDigest
import java.util.zip.GZIPOutputStream

class RegistryTest {
    private val fixture = Fixtures.root.resolve("fixtures/registry/registry.json").toString()

    private val platform: String = run {
        val os = System.getProperty("os.name").lowercase()
        val arch = System.getProperty("os.arch").lowercase()
        val o = when {
            os.startsWith("linux") -> "linux"
            os.startsWith("mac") -> "darwin"
            else -> "windows"
        }
        val a = if (arch == "aarch64" || arch == "arm64") "aarch64" else "x86_64"
        "$o-$a"
    }

    private fun tmp(): Path = Files.createTempDirectory("acp-kt-registry").toRealPath()

    private fun path(e: AcpException): String? {
        val data = when (e) {
            is AcpException.InvalidConfig -> e.data
            else -> null
        } ?: return null
        return Json.parseToJsonElement(data).jsonObject["path"]?.jsonPrimitive?.content
    }

    private fun sha256(bytes: ByteArray): String =
        MessageDigest.getInstance("SHA-256").digest(bytes).joinToString("") { "%02x".format(it) }

    /** A .tar.gz of regular files (ustar headers), names taken as given. */
    private fun tarGz(files: Map<String, String>, mode: Int = "644".toInt(8)): ByteArray {
        val tar = ByteArrayOutputStream()
        for ((name, text) in files) {
            val data = text.toByteArray()
            val h = ByteArray(512)
            fun put(at: Int, s: String) = s.toByteArray(Charsets.US_ASCII).copyInto(h, at)
            put(0, name)
            put(100, mode.toString(8).padStart(7, '0') + "\u0000")
            put(108, "0000000\u0000")
            put(116, "0000000\u0000")
            put(124, data.size.toString(8).padStart(11, '0') + "\u0000")
            put(136, "00000000000\u0000")
            put(148, "        ")
            put(156, "0")
            put(257, "ustar\u000000")
            val sum = h.sumOf { it.toInt() and 0xff }
            put(148, sum.toString(8).padStart(6, '0') + "\u0000 ")
            tar.write(h)
            tar.write(data)
            tar.write(ByteArray((512 - data.size % 512) % 512))
        }
        tar.write(ByteArray(1024))
        val out = ByteArrayOutputStream()
        GZIPOutputStream(out).use { it.write(tar.toByteArray()) }
        return out.toByteArray()
    }

    private fun oneBinary(archive: String, sha: String?, cmd: String, args: List<String> = emptyList(), env: Map<String, String> = emptyMap()): Registry {
        val q = { s: String -> "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"" }
        val target = buildString {
            append("{\"archive\":${q(archive)},\"cmd\":${q(cmd)},\"args\":[${args.joinToString(",") { q(it) }}]")
            append(",\"env\":{${env.entries.joinToString(",") { "${q(it.key)}:${q(it.value)}" }}}")
            if (sha != null) append(",\"sha256\":${q(sha)}")
            append("}")
        }
        return Registry.fromJson(
            """{"version":"1.0.0","agents":[{"id":"tool","name":"Tool","version":"0.1.0","description":"local",""" +
                """"distribution":{"binary":{${q(platform)}:$target}}}]}""",
        )
    }

    @Test
    fun `the fixture resolves to npx, uvx and binary specs`() {
        Registry.fromFile(fixture).use { reg ->
            assertEquals("1.0.0", reg.version())
            assertEquals(
                listOf("npx-agent", "uvx-agent", "cmd-agent", "binary-agent", "unverified-agent", "mixed-agent", "escape-agent"),
                reg.agents().map { it.id },
            )
            assertEquals(listOf("Example Author"), reg.agent("npx-agent").authors)

            val npx = reg.resolve("npx-agent")
            assertEquals(DistributionKind.NPX, npx.kind)
            assertEquals("npx" to listOf("-y", "@example/npx-agent@1.2.3", "--acp", "--verbose"), npx.spec.command to npx.spec.args)
            assertEquals(mapOf("NPX_AGENT_MODE" to "acp"), npx.spec.env)
            assertFalse(npx.needsInstall)

            val uvx = reg.resolve("uvx-agent", ResolveOptions(uvxCommand = "/opt/uv/bin/uvx"))
            assertEquals(DistributionKind.UVX, uvx.kind)
            assertEquals("/opt/uv/bin/uvx" to listOf("uvx-agent==0.4.0", "acp"), uvx.spec.command to uvx.spec.args)
            assertEquals(
                listOf("--from", "example-tools==2.0.0", "tools-acp"),
                reg.resolve("cmd-agent", ResolveOptions(prefer = listOf(DistributionKind.UVX))).spec.args,
            )

            val cache = tmp()
            val bin = reg.resolve("binary-agent", ResolveOptions(platform = "linux-x86_64", cacheDir = cache.toString()))
            val dir = cache.resolve("binary-agent/3.1.4/linux-x86_64")
            assertEquals(DistributionKind.BINARY, bin.kind)
            assertTrue(bin.needsInstall)
            assertEquals(dir.toString(), bin.installDir)
            assertEquals(dir.resolve("binary-agent").toString(), bin.spec.command)
            assertEquals(listOf("acp"), bin.spec.args)
            assertFalse(Files.exists(dir)) // resolution never installs
        }
    }

    @Test
    fun `errors carry their kinds and paths`() {
        Registry.fromFile(fixture).use { reg ->
            assertThrows<AcpException.NotFound> { reg.resolve("no-such-agent") }
            assertThrows<AcpException.NotFound> { reg.agent("no-such-agent") }
            assertThrows<AcpException.InvalidArgument> { reg.resolve("binary-agent", ResolveOptions(platform = "beos-m68k", cacheDir = "/tmp")) }
            val esc = assertThrows<AcpException.InvalidConfig> {
                reg.resolve("escape-agent", ResolveOptions(platform = "linux-x86_64", cacheDir = "/tmp"))
            }
            assertEquals("agents[6].distribution.binary.linux-x86_64.cmd", path(esc))
        }
        val bad = """{"agents":[{"id":"a","name":"A","version":"1.0.0","description":"d","distribution":{"npx":{"package":"a"}}},""" +
            """{"id":"b","name":"B","version":"1.0.0","description":"d","distribution":{"npx":{"args":[]}}}]}"""
        assertEquals("agents[1].distribution.npx.package", path(assertThrows<AcpException.InvalidConfig> { Registry.fromJson(bad) }))
        assertEquals("$", path(assertThrows<AcpException.InvalidConfig> { Registry.fromJson("{not json") }))
        assertThrows<AcpException.Io> { Registry.fromFile(tmp().resolve("missing.json").toString()) }
    }

    @Test
    fun `an installed binary runs a turn`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = tmp()
            val script = "#!/bin/sh\n[ \"\$TOOL_FROM_REGISTRY\" = 1 ] || exit 3\n[ \"\$1\" = --from-registry ] || exit 4\nshift\n" +
                "exec '${Fixtures.mockAgent}' \"\$@\"\n"
            val bytes = tarGz(mapOf("agent/run.sh" to script)) // 0644: the install makes the cmd executable
            val archive = dir.resolve("agent.tar.gz")
            Files.write(archive, bytes)
            val cache = dir.resolve("cache").toString()
            oneBinary(archive.toUri().toString(), sha256(bytes), "./agent/run.sh", listOf("--from-registry"), mapOf("TOOL_FROM_REGISTRY" to "1")).use { reg ->
                assertTrue(reg.resolve("tool", ResolveOptions(cacheDir = cache)).needsInstall)
                val installed = reg.install("tool", cache)
                val installDir = dir.resolve("cache/tool/0.1.0/$platform")
                assertEquals(InstalledAgent(installDir.toString(), installDir.resolve("agent/run.sh").toString(), false), installed)
                assertTrue(reg.install("tool", cache).alreadyInstalled)

                val resolved = reg.resolve("tool", ResolveOptions(cacheDir = cache))
                assertEquals(DistributionKind.BINARY, resolved.kind)
                assertFalse(resolved.needsInstall)
                assertEquals(installed.cmd, resolved.spec.command)
                Host().use { host ->
                    val agent = host.spawn(resolved.spec.copy(cwd = dir.toString()))
                    val session = agent.newSession(SessionOptions(cwd = dir.toString()))
                    assertEquals("end_turn", session.prompt("hello").stopReason)
                    assertEquals(0, agent.shutdown().exitCode)
                }
            }
        }
    }

    @Test
    fun `an install reports its download and extraction, and a throwing progress handler changes nothing`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = tmp()
            val bytes = tarGz(mapOf("agent/run.sh" to "#!/bin/sh\nexit 0\n"))
            val archive = dir.resolve("agent.tar.gz")
            Files.write(archive, bytes)
            val seen = Collections.synchronizedList(mutableListOf<Progress>())
            oneBinary(archive.toUri().toString(), sha256(bytes), "./agent/run.sh").use { reg ->
                val cache = dir.resolve("cache").toString()
                assertFalse(reg.install("tool", cache, progress = progressHandler { seen += it }).alreadyInstalled)
                assertEquals(
                    listOf("download started", "download done", "extract started", "extract done"),
                    seen.map { "${it.phase} ${it.stage}" },
                )
                assertEquals(archive.toUri().toString(), seen[0].message)
                assertEquals(bytes.size.toULong(), seen[1].bytes)
                seen.clear()
                assertTrue(reg.install("tool", cache, progress = progressHandler { seen += it }).alreadyInstalled)
                assertEquals(emptyList<Progress>(), seen.toList(), "an installed binary fetches nothing")

                // A raw handler that throws: ignored, the install goes on.
                val throwing = object : ProgressHandler {
                    override fun progress(progress: Progress) {
                        seen += progress
                        throw IllegalStateException("progress bar gone")
                    }
                }
                assertFalse(reg.install("tool", dir.resolve("cache2").toString(), progress = throwing).alreadyInstalled)
                assertEquals(4, seen.size)
            }
            // A digest mismatch: the download fails, with why; nothing is extracted.
            seen.clear()
            oneBinary(archive.toUri().toString(), "0".repeat(64), "./agent/run.sh").use { reg ->
                assertThrows<AcpException.InvalidConfig> {
                    runBlocking { reg.install("tool", dir.resolve("cache3").toString(), progress = progressHandler { seen += it }) }
                }
            }
            assertEquals(listOf("download started", "download failed"), seen.map { "${it.phase} ${it.stage}" })
            assertTrue(seen[1].message!!.contains("sha256"), seen[1].message)
        }
    }

    @Test
    fun `a hostile archive, an unverifiable entry and a remote URL install nothing`() = runBlocking {
        val dir = tmp()
        val bytes = tarGz(mapOf("agent/run.sh" to "#!/bin/sh\n", "../evil" to "pwned\n"))
        val archive = dir.resolve("hostile.tar.gz")
        Files.write(archive, bytes)
        val cache = dir.resolve("nest/cache")
        Files.createDirectories(cache)
        val e = assertThrows<AcpException.InvalidConfig> {
            runBlocking { oneBinary(archive.toString(), sha256(bytes), "./agent/run.sh").install("tool", cache.toString()) }
        }
        assertEquals("agents[0].distribution.binary.$platform.archive", path(e))
        assertEquals(0, Files.list(cache).use { it.count() })
        assertFalse(Files.exists(dir.resolve("nest/evil")))

        val noSha = assertThrows<AcpException.InvalidConfig> {
            runBlocking { oneBinary(archive.toString(), null, "./agent/run.sh").install("tool", cache.toString()) }
        }
        assertEquals("agents[0].distribution.binary.$platform.sha256", path(noSha))
        val remote = assertThrows<AcpException.Unsupported> {
            runBlocking { oneBinary("https://example.invalid/a.tar.gz", sha256(bytes), "./agent/run.sh").install("tool", cache.toString()) }
        }
        assertTrue("file://" in remote.detail, remote.detail)
        assertEquals(0, Files.list(cache).use { it.count() })
    }

    private fun isEmpty(dir: Path): Boolean = Files.list(dir).use { it.count() } == 0L

    @Test
    fun `a fetcher serves an https archive, and the installed binary runs a turn`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = tmp()
            val script = "#!/bin/sh\n[ \"\$1\" = --from-registry ] || exit 4\nshift\nexec '${Fixtures.mockAgent}' \"\$@\"\n"
            val bytes = tarGz(mapOf("agent/run.sh" to script))
            val url = "https://example.invalid/tool/0.1.0/tool.tar.gz"
            val cache = dir.resolve("cache").toString()
            val asked = Collections.synchronizedList(mutableListOf<String>())
            val fetcher = registryFetcher { u ->
                asked.add(u)
                delay(10) // answers later, as a download would
                bytes.copyOf()
            }
            oneBinary(url, sha256(bytes), "./agent/run.sh", listOf("--from-registry")).use { reg ->
                assertTrue(reg.resolve("tool", ResolveOptions(cacheDir = cache)).needsInstall)
                val installed = reg.install("tool", cache, fetcher = fetcher)
                val installDir = dir.resolve("cache/tool/0.1.0/$platform")
                assertEquals(InstalledAgent(installDir.toString(), installDir.resolve("agent/run.sh").toString(), false), installed)
                assertEquals(listOf(url), asked.toList())
                assertEquals(script, Files.readString(installDir.resolve("agent/run.sh")))
                // Installed already: the fetcher is not asked again.
                assertTrue(reg.install("tool", cache, fetcher = fetcher).alreadyInstalled)
                assertEquals(1, asked.size)

                val resolved = reg.resolve("tool", ResolveOptions(cacheDir = cache))
                assertFalse(resolved.needsInstall)
                assertEquals(installed.cmd, resolved.spec.command)
                Host().use { host ->
                    val agent = host.spawn(resolved.spec.copy(cwd = dir.toString()))
                    val session = agent.newSession(SessionOptions(cwd = dir.toString()))
                    assertEquals("end_turn", session.prompt("hello").stopReason)
                    assertEquals(0, agent.shutdown().exitCode)
                }
            }

            // A file:// archive is read locally even with a fetcher.
            val archive = dir.resolve("tool.tar.gz")
            Files.write(archive, bytes)
            val never = registryFetcher { u -> throw AssertionError("asked for $u") }
            val local = oneBinary(archive.toUri().toString(), sha256(bytes), "./agent/run.sh")
            assertFalse(local.install("tool", dir.resolve("cache2").toString(), fetcher = never).alreadyInstalled)
        }
    }

    @Test
    fun `a throwing, lying or missing fetcher installs nothing`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = tmp()
            val bytes = tarGz(mapOf("agent/run.sh" to "#!/bin/sh\n"))
            val url = "https://example.invalid/tool.tar.gz"
            val reg = oneBinary(url, sha256(bytes), "./agent/run.sh")
            val cache = dir.resolve("cache")
            Files.createDirectories(cache)
            suspend fun failing(fetcher: RegistryFetcher?): AcpException =
                try {
                    reg.install("tool", cache.toString(), fetcher = fetcher)
                    throw AssertionError("installed")
                } catch (e: AcpException) {
                    assertTrue(isEmpty(cache), "left in the cache")
                    e
                }

            // Through the lambda adapter, and implemented directly: an Exception, an Error (the
            // generated Kotlin is patched to catch every Throwable; otherwise this would hang),
            // the declared HandlerException.
            val thrown = listOf(
                registryFetcher { throw IOException("HTTP 503") } to "HTTP 503",
                object : RegistryFetcher {
                    override suspend fun fetch(url: String): ByteArray = throw IllegalStateException("proxy refused")
                } to "proxy refused",
                object : RegistryFetcher {
                    override suspend fun fetch(url: String): ByteArray = throw StackOverflowError("deep")
                } to "StackOverflowError",
                object : RegistryFetcher {
                    override suspend fun fetch(url: String): ByteArray = throw HandlerException.Failed("no credentials")
                } to "no credentials",
            )
            for ((fetcher, says) in thrown) {
                val e = failing(fetcher)
                assertTrue(e is AcpException.Io, "$e")
                assertTrue(url in (e as AcpException.Io).detail && says in e.detail, e.detail)
            }

            // Other bytes than the entry's sha256 names.
            val lie = failing(registryFetcher { tarGz(mapOf("agent/run.sh" to "#!/bin/sh\nevil\n")) })
            assertTrue(lie is AcpException.InvalidConfig, "$lie")
            assertEquals("agents[0].distribution.binary.$platform.sha256", path(lie))
            assertTrue(failing(registryFetcher { ByteArray(0) }) is AcpException.InvalidConfig)

            // No fetcher: https:// is `unsupported`, as before, and says what to do.
            val none = failing(null)
            assertTrue(none is AcpException.Unsupported, "$none")
            assertTrue("file://" in none.message!! && "RegistryFetcher" in none.message!!, none.message)
        }
    }

    @Test
    fun `a cancelled install cancels the fetcher and installs nothing`() = runBlocking {
        withTimeout(Fixtures.T) {
            val dir = tmp()
            val bytes = tarGz(mapOf("agent/run.sh" to "#!/bin/sh\n"))
            val reg = oneBinary("https://example.invalid/slow.tar.gz", sha256(bytes), "./agent/run.sh")
            val cache = dir.resolve("cache")
            Files.createDirectories(cache)
            val called = CompletableDeferred<Unit>()
            val cancelled = CompletableDeferred<Unit>()
            val hanging = registryFetcher {
                called.complete(Unit)
                try {
                    awaitCancellation()
                } finally {
                    cancelled.complete(Unit)
                }
            }
            val install = async { reg.install("tool", cache.toString(), fetcher = hanging) }
            called.await()
            install.cancelAndJoin()
            cancelled.await() // the fetcher's coroutine is cancelled, not left running
            while (!isEmpty(cache)) delay(10) // the install fails on its blocking thread and cleans up
        }
    }
}
