/* eslint-disable */
/**
 * GENERATED FILE, do not edit: the option documents of docs/OPTIONS.md, generated from the
 * core's option table (`acp_host::options::table_json()`) by
 * bindings/node/scripts/gen-options.mjs. Regenerate with `npm run gen-options` (in
 * bindings/node, after building the addon) when the table changes.
 *
 * `undefined` is "not given" (the default). The core checks every value: a bad one throws
 * `AcpError` `invalid_config` with `data.path` naming it.
 */

/** A permission policy: a preset, an absolute path of a JSON policy file, `{ file }`, or a policy document (docs/PERMISSIONS.md). */
export type PolicyValue =
  | 'deny-all'
  | 'read-only'
  | 'ask'
  | `/${string}`
  | `${string}:\\${string}`
  | `${string}:/${string}`
  | `\\\\${string}`
  | { file: string }
  | Record<string, unknown>;

/** Host options (docs/OPTIONS.md). */
export interface HostOptionsDocument {
  /**
   * Who the host says it is in `initialize`.
   *
   * Type: object. Default: acp-host and its version.
   */
  clientInfo?: {
    /**
     * `clientInfo.name` sent in `initialize`.
     *
     * Type: non-empty string. Default: "acp-host".
     */
    name?: string;
    /**
     * `clientInfo.version` sent in `initialize`.
     *
     * Type: non-empty string. Default: this library's version.
     */
    version?: string;
  };
  /**
   * The permission policy: a preset (`deny-all`, `read-only`, `ask`), an absolute path of a JSON
   * policy file (or `{"file": "/abs/policy.json"}`), or a policy document (docs/PERMISSIONS.md).
   *
   * Type: preset name | absolute path | `{"file": path}` | object. Default: `deny-all` without a
   * permission handler, `ask` with one.
   */
  policy?: PolicyValue;
  /**
   * Who answers a permission request no rule decided: nobody (`deny`), the embedder later through
   * `respondPermission` (`manual`, driven by `permission_requested` events), or the face's
   * permission handler (`handler`).
   *
   * Type: `"deny"` | `"manual"` | `"handler"`. Default: `handler` when the face was given a
   * permission handler, else `deny`.
   */
  permission?: 'deny' | 'manual' | 'handler';
  /**
   * How long a permission request waits for an answer before it is denied.
   *
   * Type: milliseconds 0 ..= 30 days. Default: 300000 (5 min).
   */
  permissionTimeoutMs?: number;
  /**
   * Extra sandbox roots for every session, besides its `cwd` and `additionalDirectories`.
   *
   * Type: list of absolute paths. Default: [].
   */
  roots?: string[];
  /**
   * Who answers `elicitation/create`: nobody (`none`: not advertised, answered -32601), the
   * embedder through `respondElicitation` (`manual`), or the face's handler (`handler`).
   *
   * Type: `"none"` | `"manual"` | `"handler"`. Default: `handler` when the face was given an
   * elicitation handler, else `none`.
   */
  elicitation?: 'none' | 'manual' | 'handler';
  /**
   * The elicitation modes advertised when `elicitation` is not `none`.
   *
   * Type: list of `"form"` | `"url"`. Default: ["form", "url"].
   */
  elicitationModes?: Array<'form' | 'url'>;
  /**
   * How long an elicitation waits for an answer before it is answered `cancel`.
   *
   * Type: milliseconds 0 ..= 30 days. Default: 300000 (5 min).
   */
  elicitationTimeoutMs?: number;
  /**
   * Timeout of control requests (`initialize`, `session/new`, `session/load`, ...); `null`: none.
   * Prompts have their own (`promptTimeoutMs`).
   *
   * Type: milliseconds 1 ..= 30 days, or `null` (none). Default: 120000 (2 min).
   */
  requestTimeoutMs?: number | null;
  /**
   * Limit for a whole prompt turn; when it elapses the turn fails with `timeout` and
   * `session/cancel` is sent.
   *
   * Type: milliseconds 1 ..= 30 days, or `null` (none). Default: null (none).
   */
  promptTimeoutMs?: number | null;
  /**
   * How long a cancelled turn waits for the agent's answer to `session/cancel` before it settles
   * as `cancelled` anyway.
   *
   * Type: milliseconds 0 ..= 30 days. Default: 2000.
   */
  cancelGraceMs?: number;
  /**
   * Grace between the rungs of the shutdown ladder (stdin closed, terminate, kill).
   *
   * Type: milliseconds 0 ..= 30 days. Default: 2000.
   */
  shutdownGraceMs?: number;
  /**
   * `false`: no events are queued at all (for embedders that only use return values).
   *
   * Type: boolean. Default: true.
   */
  events?: boolean;
  /**
   * Events the queue holds; when full the agents' stdout is not read (backpressure).
   *
   * Type: integer 1 ..= 16 MiB. Default: 65536.
   */
  eventCapacity?: number;
  /**
   * Bytes the event queue holds (payloads plus a per-event estimate).
   *
   * Type: integer 4 KiB ..= 16 GiB. Default: 33554432 (32 MiB).
   */
  eventQueueBytes?: number;
  /**
   * A call whose answer waits behind a full event queue nobody pulls from fails with
   * `events_stalled` after this long; `null`: wait for ever.
   *
   * Type: milliseconds 1 ..= 30 days, or `null` (none). Default: 3000.
   */
  eventStallTimeoutMs?: number | null;
  /**
   * Emit `progress` events for the slow steps of an agent's start (spawn, handshake, login):
   * `started`, `waiting` every 5 s, `done` or `failed` (docs/EVENTS.md).
   *
   * Type: boolean. Default: false.
   */
  progressEvents?: boolean;
  /**
   * Emit a `wire` event for every message in and out (protocol log views).
   *
   * Type: boolean. Default: false.
   */
  wireEvents?: boolean;
  /**
   * Record every agent connection to a file: the wire in both directions and the events
   * (docs/RECORDING.md).
   *
   * Type: object. Default: none (no recording).
   */
  record?: {
    /**
     * Record each connection into a new file of this directory
     * (`agent<id>-<n>-<pid>-<ms>.acprec.jsonl`). One of `dir` and `file`.
     *
     * Type: absolute path of an existing directory. Default: none.
     */
    dir?: string;
    /**
     * Record the host's first connection into this file (created; never over an existing one),
     * later ones into `FILE.2`, `FILE.3`, …. One of `dir` and `file`.
     *
     * Type: absolute path. Default: none.
     */
    file?: string;
    /**
     * A recording's bound: past it a `truncated` line ends the file.
     *
     * Type: integer 4 KiB ..= 64 GiB. Default: 268435456 (256 MiB).
     */
    maxBytes?: number;
    /**
     * Leave secrets out: environment and header values, `authenticate` payloads, `_meta` keys
     * named like credentials, elicitation form values (docs/RECORDING.md).
     *
     * Type: boolean. Default: true.
     */
    redact?: boolean;
  };
  /**
   * Merge a `tool_call_update` into the queued, not yet pulled update of the same tool call.
   *
   * Type: boolean. Default: false.
   */
  coalesceToolCallUpdates?: boolean;
  /**
   * Longest line accepted from an agent; a longer one is skipped and reported.
   *
   * Type: integer 1 KiB ..= 1 GiB. Default: 67108864 (64 MiB).
   */
  maxLineBytes?: number;
  /**
   * How much of the agent's stderr is kept for exit errors.
   *
   * Type: integer 0 ..= 64 MiB. Default: 65536 (64 KiB).
   */
  stderrTailBytes?: number;
  /**
   * The most the queue to an agent's stdin holds; half for answers to the agent's requests, half
   * for the host's own lines (docs/ARCHITECTURE.md).
   *
   * Type: integer 64 KiB ..= 16 GiB. Default: 67108864 (64 MiB).
   */
  maxOutboundBytes?: number;
  /**
   * Requests from the agent (permission, fs, terminal) pending at once; more are refused with a
   * JSON-RPC error.
   *
   * Type: integer 1 ..= 1 MiB. Default: 1024.
   */
  maxPendingAgentRequests?: number;
  /**
   * Updates buffered while a session is being opened (early updates, load replay).
   *
   * Type: integer 1 ..= 16 MiB. Default: 65536.
   */
  earlyUpdateLimit?: number;
  /**
   * Who serves `fs/*`: the built-in sandbox, the face's service hooks, or nobody (not advertised).
   *
   * Type: `"builtin"` | `"embedder"` | `"disabled"`. Default: "builtin".
   */
  fs?: 'builtin' | 'embedder' | 'disabled';
  /**
   * Size limits of the built-in `fs/*`.
   *
   * Type: object. Default: see below.
   */
  fsLimits?: {
    /**
     * Largest `fs/read_text_file` answer, its content counted as JSON text; larger files are
     * refused (`too_large`). Also held to half of `maxOutboundBytes`.
     *
     * Type: integer 0 ..= 4 GiB. Default: 16777216 (16 MiB).
     */
    maxReadBytes?: number;
    /**
     * Largest content an `fs/write_text_file` may write.
     *
     * Type: integer 0 ..= 4 GiB. Default: 16777216 (16 MiB).
     */
    maxWriteBytes?: number;
  };
  /**
   * Who serves `terminal/*`: the built-in terminal manager, the face's service hooks, or nobody
   * (not advertised).
   *
   * Type: `"builtin"` | `"embedder"` | `"disabled"`. Default: "builtin".
   */
  terminal?: 'builtin' | 'embedder' | 'disabled';
  /**
   * Limits of the built-in terminal manager.
   *
   * Type: object. Default: see below.
   */
  terminalLimits?: {
    /**
     * Output kept per terminal, whatever `outputByteLimit` the agent asks for.
     *
     * Type: integer 0 ..= 1 GiB. Default: 1048576 (1 MiB).
     */
    maxOutputBytes?: number;
    /**
     * Terminals alive at once per session (created, not yet released).
     *
     * Type: integer 1 ..= 4 KiB. Default: 64.
     */
    maxTerminals?: number;
  };
  /**
   * Who answers the agent's `_`-prefixed extension requests (`none`: -32601).
   *
   * Type: `"none"` | `"embedder"`. Default: "none".
   */
  ext?: 'none' | 'embedder';
  /**
   * Who runs the agent's terminal logins (advertises `auth.terminal` when `embedder`).
   *
   * Type: `"none"` | `"embedder"`. Default: "none".
   */
  terminalAuth?: 'none' | 'embedder';
  /**
   * Unstable ACP methods to opt into; without it their calls fail with `unsupported`.
   * `protocol/v2`: `initialize` offers the draft ACP v2 (v1 when the agent answers 1;
   * docs/PROTOCOL.md).
   *
   * Type: list of `"session/fork"` | `"session/status"` | `"session/set_title"` |
   * `"session/archive"` | `"session/unarchive"` | `"session/options"` | `"protocol/v2"` |
   * `"_session/steering"`. Default: [].
   */
  unstable?: Array<'session/fork' | 'session/status' | 'session/set_title' | 'session/archive' | 'session/unarchive' | 'session/options' | 'protocol/v2' | '_session/steering'>;
  /**
   * The least severe record the face's log hook gets (no hook: nothing is logged; the library
   * never prints).
   *
   * Type: `"error"` | `"warn"` | `"info"` | `"debug"` | `"trace"`. Default: "info".
   */
  logLevel?: 'error' | 'warn' | 'info' | 'debug' | 'trace';
}

/** Agent spec (docs/OPTIONS.md). */
export interface AgentSpecDocument {
  /**
   * The program: an absolute path, or a name looked up on `PATH` (never the cwd).
   *
   * Type: non-empty string. Default: required (unless `replay`).
   */
  command?: string;
  /**
   * Its arguments.
   *
   * Type: list of strings. Default: [].
   */
  args?: string[];
  /**
   * Environment changes over the host's: a string sets, `null` removes.
   *
   * Type: object: name → string | `null`. Default: {}.
   */
  env?: Record<string, string | null | undefined>;
  /**
   * The agent's working directory; must exist.
   *
   * Type: absolute path of an existing directory. Default: the host process's.
   */
  cwd?: string;
  /**
   * Restart the agent when its process dies.
   *
   * Type: object. Default: none (no restarts).
   */
  restart?: {
    /**
     * Restarts allowed since the last healthy period (`resetAfterMs`) before the supervisor gives
     * up.
     *
     * Type: integer 0 ..= 1000000. Default: 3.
     */
    maxRestarts?: number;
    /**
     * Delay before the first restart; doubles per attempt.
     *
     * Type: milliseconds 0 ..= 30 days. Default: 250.
     */
    backoffMs?: number;
    /**
     * Ceiling of the delay between restarts.
     *
     * Type: milliseconds 0 ..= 30 days. Default: 10000.
     */
    maxBackoffMs?: number;
    /**
     * An agent up this long is healthy: the attempt count starts again at 0.
     *
     * Type: milliseconds 0 ..= 30 days. Default: 60000.
     */
    resetAfterMs?: number;
  };
  /**
   * Instead of a process, play this recording's agent side inside the host (docs/RECORDING.md,
   * "Replaying"); no `command`, `args`, `env`, `cwd` or `restart` then.
   *
   * Type: object. Default: none.
   */
  replay?: {
    /**
     * The recording (docs/RECORDING.md) whose agent side is played.
     *
     * Type: absolute path. Default: required.
     */
    file: string;
    /**
     * The recorded delays between the agent's messages, or none.
     *
     * Type: `"recorded"` | `"fast"`. Default: "recorded".
     */
    pace?: 'recorded' | 'fast';
    /**
     * How long a recorded host message is waited for before it is reported missing and the replay
     * goes on; `null`: until the host closes the connection.
     *
     * Type: milliseconds 1 ..= 30 days, or `null` (none). Default: 10000.
     */
    waitMs?: number | null;
    /**
     * Write the replay's report (JSON: its divergences) to this file when it ends, before the
     * agent's side closes; replaced if it exists.
     *
     * Type: absolute path. Default: none.
     */
    report?: string;
    /**
     * Fields never compared, as a divergence names them (`params.prompt`, `result.outcome`).
     *
     * Type: list of strings. Default: [].
     */
    ignore?: string[];
  };
}

/** Session options (docs/OPTIONS.md). */
export interface SessionOptionsDocument {
  /**
   * The session's working directory and first sandbox root; must exist.
   *
   * Type: absolute path of an existing directory. Default: required.
   */
  cwd: string;
  /**
   * More sandbox roots, sent to agents that support `additionalDirectories`; must exist.
   *
   * Type: list of absolute paths of existing directories. Default: [].
   */
  additionalDirectories?: string[];
  /**
   * MCP server configurations, in ACP shape.
   *
   * Type: list of objects. Default: [].
   */
  mcpServers?: Array<Record<string, unknown>>;
}

/** Pool options (docs/OPTIONS.md). */
export interface PoolSettingsDocument {
  /**
   * One process per session, or up to `maxSessionsPerAgent` sessions per process.
   *
   * Type: `"process-per-session"` | `"shared"`. Default: "process-per-session".
   */
  mode?: 'process-per-session' | 'shared';
  /**
   * Sessions per process in `shared` mode (only with `mode: "shared"`).
   *
   * Type: integer 1 ..= 64 KiB. Default: 8.
   */
  maxSessionsPerAgent?: number;
  /**
   * Processes kept started and initialized, ready for a session (at most `maxAgents`).
   *
   * Type: integer 0 ..= 1 KiB. Default: 1.
   */
  warmSpares?: number;
  /**
   * Live processes at most (spares and starting ones count).
   *
   * Type: integer 1 ..= 1 KiB. Default: 8.
   */
  maxAgents?: number;
  /**
   * A shared process without sessions this long is shut down; `null`: never.
   *
   * Type: milliseconds 1 ..= 30 days, or `null` (none). Default: 300000 (5 min).
   */
  idleTimeoutMs?: number | null;
}
