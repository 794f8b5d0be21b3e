// What every test needs: the repository root, the mock agent, a deadline.
package dev.acphost

import java.nio.file.Path
import java.nio.file.Paths
import kotlin.time.Duration.Companion.seconds

object Fixtures {
    val root: Path = Paths.get(System.getProperty("acp.root") ?: "../../..").toAbsolutePath().normalize()
    val mockAgent: String = root.resolve("target/debug/acp-mock-agent").toString()
    val conformance: Path = root.resolve("fixtures/scenarios/conformance")

    /** Every wait in a test is bounded by this. */
    val T = 20.seconds

    fun mock(scenario: String, vararg extra: String, env: Map<String, String?> = emptyMap()): AgentSpec =
        AgentSpec(command = mockAgent, args = listOf("--scenario", scenario) + extra, env = env)
}
