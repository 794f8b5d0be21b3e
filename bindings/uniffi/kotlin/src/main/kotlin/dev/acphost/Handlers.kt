// Handlers as Kotlin lambdas. The core is fail-closed whatever a handler does (throws, never
// answers before the timeout, names an option that was not offered: denied); these adapters also
// turn any Throwable into a refusal at once instead of letting it escape the coroutine, carrying
// its class, message and stack trace as the resolution's `reason` (and the log handler's `warn`
// record). Also the registry's download hook (`registryFetcher { url -> bytes }`): what it throws
// fails the install; and the log and install-progress callbacks, whose failures are ignored.
package dev.acphost

import kotlinx.coroutines.CancellationException

/** The first offered option of [kind] (`allow_once`, `allow_always`, `reject_once`, …), or null. */
fun PermissionRequest.optionOfKind(kind: String): PermissionOption? = options.firstOrNull { it.kind == kind }

/** The id of the first offered option of [kind], or null (null denies). */
fun PermissionRequest.optionIdOfKind(kind: String): String? = optionOfKind(kind)?.optionId

/**
 * A [PermissionHandler] from a suspending lambda returning the chosen option id (not its name), or
 * null to deny. Anything it throws denies: `permission_resolved` has `decidedBy` `invalid_answer`
 * and `reason` with the exception's class, message and stack trace.
 */
fun permissionHandler(decide: suspend (PermissionRequest) -> String?): PermissionHandler =
    object : PermissionHandler {
        override suspend fun decide(request: PermissionRequest): String? =
            try {
                decide(request)
            } catch (e: CancellationException) {
                throw e
            } catch (e: Throwable) {
                throw HandlerException.Failed("permission handler threw: ${e.stackTraceToString()}")
            }
    }

/**
 * An [ElicitationHandler] from a suspending lambda returning the ACP answer as JSON
 * (`{"action":"accept","content":{…}}`, `{"action":"decline"}`, `{"action":"cancel"}`).
 * Anything it throws answers `cancel`: `elicitation_resolved` has `decidedBy` `invalid_answer` and
 * `reason` with the exception's class, message and stack trace.
 */
fun elicitationHandler(elicit: suspend (ElicitationRequest) -> String): ElicitationHandler =
    object : ElicitationHandler {
        override suspend fun elicit(request: ElicitationRequest): String =
            try {
                elicit(request)
            } catch (e: CancellationException) {
                throw e
            } catch (e: Throwable) {
                throw HandlerException.Failed("elicitation handler threw: ${e.stackTraceToString()}")
            }
    }

/**
 * A [RegistryFetcher] for [Registry.install] from a suspending lambda returning the bytes of the
 * archive at `url`, downloaded with your own HTTP client (acp-host opens no connection). It is
 * called only for URLs that are not `file://` or local paths, and only when the install needs the
 * download; the bytes are checked against the entry's sha256 as always. Anything it throws fails
 * the install with [AcpException.Io] naming the URL and the exception; nothing is installed.
 */
fun registryFetcher(fetch: suspend (url: String) -> ByteArray): RegistryFetcher =
    object : RegistryFetcher {
        override suspend fun fetch(url: String): ByteArray =
            try {
                fetch(url)
            } catch (e: CancellationException) {
                throw e
            } catch (e: Throwable) {
                throw HandlerException.Failed(e.toString())
            }
    }

/**
 * A [LogHandler] for `Host(logHandler = …)` from a lambda. It runs on the host's log thread, one
 * record at a time in order, never on the host's own threads: a slow one loses records past
 * 1024 waiting (counted by [Host.droppedLogRecords]), it never stalls a turn. What it throws
 * loses that record only.
 */
fun logHandler(handle: (LogRecord) -> Unit): LogHandler =
    object : LogHandler {
        override fun log(record: LogRecord) {
            try {
                handle(record)
            } catch (e: Throwable) {
                // Ignored by the host either way; kept from reaching JNA's callback thread.
            }
        }
    }

/**
 * A [ProgressHandler] for [Registry.install] from a lambda: the download's and the extraction's
 * `started`, then `done` (with the archive's size) or `failed`. Called on the install's thread;
 * what it throws is ignored.
 */
fun progressHandler(handle: (Progress) -> Unit): ProgressHandler =
    object : ProgressHandler {
        override fun progress(progress: Progress) {
            try {
                handle(progress)
            } catch (e: Throwable) {
                // The install goes on either way.
            }
        }
    }
