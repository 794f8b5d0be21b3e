// Option documents as Kotlin records: each record's fields are the options of docs/OPTIONS.md under
// the same names, and `fromJson` takes a whole document as JSON text (fields set beside it replace
// its values). The core checks every document: an error is AcpException.InvalidConfig with
// `data` `{"path": …}` naming the field exactly as docs/OPTIONS.md does.
package dev.acphost

/** Host options from a JSON document (docs/OPTIONS.md, "Host options"); checked when the [Host] is made. */
fun HostOptions.Companion.fromJson(text: String): HostOptions = HostOptions(document = text)

/** An agent spec from a JSON document (docs/OPTIONS.md, "Agent spec"); checked by [Host.spawn]. */
fun AgentSpec.Companion.fromJson(text: String): AgentSpec = AgentSpec(document = text)

/** Session options from a JSON document (docs/OPTIONS.md, "Session options"); checked when a session opens. */
fun SessionOptions.Companion.fromJson(text: String): SessionOptions = SessionOptions(document = text)

/** Pool options from a JSON document (docs/OPTIONS.md, "Pool options", without the `pool.` prefix); checked by [Host.pool]. */
fun PoolOptions.Companion.fromJson(text: String): PoolOptions = PoolOptions(document = text)
