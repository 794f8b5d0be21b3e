//! The option table: every option of the host, an agent spec, a session, a pool and a restart
//! policy, with its type, range, default and meaning. Every face parses its options through
//! [`super::parse`] against these rows, and docs/OPTIONS.md is rendered from them
//! ([`super::markdown`]), so a name, a range or a default is written down once.

/// One option: its camelCase JSON name (what every face's document uses), its type and range,
/// its default as shown to users, and what it does.
#[derive(Debug)]
pub struct Opt {
    pub name: &'static str,
    pub ty: Ty,
    pub default: &'static str,
    pub doc: &'static str,
    /// `Some(face)`: only that face takes the option (its own delivery knob); elsewhere it is
    /// `invalid_config` ("only in the C face").
    pub face: Option<super::Face>,
}

/// The type and range of an option's value.
#[derive(Debug)]
pub enum Ty {
    Bool,
    /// A whole number in `min..=max`.
    Int {
        min: u64,
        max: u64,
    },
    /// A whole number of milliseconds in `min..=max`; with `none`, `null` means "no limit".
    Ms {
        min: u64,
        max: u64,
        none: bool,
    },
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// A list of distinct strings, each one of these.
    EnumList(&'static [&'static str]),
    /// A non-empty string.
    Text,
    /// A list of strings (any).
    Texts,
    /// An absolute path; with `dir`, of a directory that exists when the options are parsed.
    Path {
        dir: bool,
    },
    /// A list of absolute paths; with `dir`, of directories that exist.
    Paths {
        dir: bool,
    },
    /// `{"NAME": "value" | null}`: null removes an inherited variable.
    Env,
    /// A list of JSON objects passed on as they are (e.g. MCP server configurations).
    Objects,
    /// A permission policy: a preset name, an absolute file path, `{"file": "/abs"}` or a
    /// policy document (docs/PERMISSIONS.md).
    Policy,
    /// A nested object of these options.
    Object(&'static [Opt]),
}

const fn opt(name: &'static str, ty: Ty, default: &'static str, doc: &'static str) -> Opt {
    Opt {
        name,
        ty,
        default,
        doc,
        face: None,
    }
}

/// 30 days: the longest any time option may be (tokio timers and `Instant` arithmetic stay far
/// from overflow, and no human answers a prompt later than that).
pub const MAX_MS: u64 = 30 * 24 * 3600 * 1000;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

pub const CLIENT_INFO: &[Opt] = &[
    opt(
        "name",
        Ty::Text,
        "\"acp-host\"",
        "`clientInfo.name` sent in `initialize`.",
    ),
    opt(
        "version",
        Ty::Text,
        "this library's version",
        "`clientInfo.version` sent in `initialize`.",
    ),
];

pub const FS_LIMITS: &[Opt] = &[
    opt(
        "maxReadBytes",
        Ty::Int {
            min: 0,
            max: 4 * GIB,
        },
        "16777216 (16 MiB)",
        "Largest `fs/read_text_file` answer, its content counted as JSON text; larger files are \
         refused (`too_large`). Also held to half of `maxOutboundBytes`.",
    ),
    opt(
        "maxWriteBytes",
        Ty::Int {
            min: 0,
            max: 4 * GIB,
        },
        "16777216 (16 MiB)",
        "Largest content an `fs/write_text_file` may write.",
    ),
];

pub const RECORD: &[Opt] = &[
    opt(
        "dir",
        Ty::Path { dir: true },
        "none",
        "Record each connection into a new file of this directory \
         (`agent<id>-<n>-<pid>-<ms>.acprec.jsonl`). One of `dir` and `file`.",
    ),
    opt(
        "file",
        Ty::Path { dir: false },
        "none",
        "Record the host's first connection into this file (created; never over an existing \
         one), later ones into `FILE.2`, `FILE.3`, …. One of `dir` and `file`.",
    ),
    opt(
        "maxBytes",
        Ty::Int {
            min: 4096,
            max: 64 * GIB,
        },
        "268435456 (256 MiB)",
        "A recording's bound: past it a `truncated` line ends the file.",
    ),
    opt(
        "redact",
        Ty::Bool,
        "true",
        "Leave secrets out: environment and header values, `authenticate` payloads, `_meta` keys \
         named like credentials, elicitation form values (docs/RECORDING.md).",
    ),
];

pub const TERMINAL_LIMITS: &[Opt] = &[
    opt(
        "maxOutputBytes",
        Ty::Int { min: 0, max: GIB },
        "1048576 (1 MiB)",
        "Output kept per terminal, whatever `outputByteLimit` the agent asks for.",
    ),
    opt(
        "maxTerminals",
        Ty::Int { min: 1, max: 4096 },
        "64",
        "Terminals alive at once per session (created, not yet released).",
    ),
];

/// The host's options (`HostConfig`): C `acph_host_new`'s JSON, Node `new Host(options)`,
/// Python `Host(**options)`, Kotlin `HostOptions`.
pub const HOST: &[Opt] = &[
    opt(
        "clientInfo",
        Ty::Object(CLIENT_INFO),
        "acp-host and its version",
        "Who the host says it is in `initialize`.",
    ),
    opt(
        "policy",
        Ty::Policy,
        "`deny-all` without a permission handler, `ask` with one",
        "The permission policy: a preset (`deny-all`, `read-only`, `ask`), an absolute path of a \
         JSON policy file (or `{\"file\": \"/abs/policy.json\"}`), or a policy document \
         (docs/PERMISSIONS.md).",
    ),
    opt(
        "permission",
        Ty::Enum(&["deny", "manual", "handler"]),
        "`handler` when the face was given a permission handler, else `deny`",
        "Who answers a permission request no rule decided: nobody (`deny`), the embedder later \
         through `respondPermission` (`manual`, driven by `permission_requested` events), or the \
         face's permission handler (`handler`).",
    ),
    opt(
        "permissionTimeoutMs",
        Ty::Ms {
            min: 0,
            max: MAX_MS,
            none: false,
        },
        "300000 (5 min)",
        "How long a permission request waits for an answer before it is denied.",
    ),
    opt(
        "roots",
        Ty::Paths { dir: false },
        "[]",
        "Extra sandbox roots for every session, besides its `cwd` and `additionalDirectories`.",
    ),
    opt(
        "elicitation",
        Ty::Enum(&["none", "manual", "handler"]),
        "`handler` when the face was given an elicitation handler, else `none`",
        "Who answers `elicitation/create`: nobody (`none`: not advertised, answered -32601), the \
         embedder through `respondElicitation` (`manual`), or the face's handler (`handler`).",
    ),
    opt(
        "elicitationModes",
        Ty::EnumList(&["form", "url"]),
        "[\"form\", \"url\"]",
        "The elicitation modes advertised when `elicitation` is not `none`.",
    ),
    opt(
        "elicitationTimeoutMs",
        Ty::Ms {
            min: 0,
            max: MAX_MS,
            none: false,
        },
        "300000 (5 min)",
        "How long an elicitation waits for an answer before it is answered `cancel`.",
    ),
    opt(
        "requestTimeoutMs",
        Ty::Ms {
            min: 1,
            max: MAX_MS,
            none: true,
        },
        "120000 (2 min)",
        "Timeout of control requests (`initialize`, `session/new`, `session/load`, ...); `null`: \
         none. Prompts have their own (`promptTimeoutMs`).",
    ),
    opt(
        "promptTimeoutMs",
        Ty::Ms {
            min: 1,
            max: MAX_MS,
            none: true,
        },
        "null (none)",
        "Limit for a whole prompt turn; when it elapses the turn fails with `timeout` and \
         `session/cancel` is sent.",
    ),
    opt(
        "cancelGraceMs",
        Ty::Ms {
            min: 0,
            max: MAX_MS,
            none: false,
        },
        "2000",
        "How long a cancelled turn waits for the agent's answer to `session/cancel` before it \
         settles as `cancelled` anyway.",
    ),
    opt(
        "shutdownGraceMs",
        Ty::Ms {
            min: 0,
            max: MAX_MS,
            none: false,
        },
        "2000",
        "Grace between the rungs of the shutdown ladder (stdin closed, terminate, kill).",
    ),
    opt(
        "events",
        Ty::Bool,
        "true",
        "`false`: no events are queued at all (for embedders that only use return values).",
    ),
    opt(
        "eventCapacity",
        Ty::Int {
            min: 1,
            max: 16 * MIB,
        },
        "65536",
        "Events the queue holds; when full the agents' stdout is not read (backpressure).",
    ),
    opt(
        "eventQueueBytes",
        Ty::Int {
            min: 4 * KIB,
            max: 16 * GIB,
        },
        "33554432 (32 MiB)",
        "Bytes the event queue holds (payloads plus a per-event estimate).",
    ),
    opt(
        "eventStallTimeoutMs",
        Ty::Ms {
            min: 1,
            max: MAX_MS,
            none: true,
        },
        "3000",
        "A call whose answer waits behind a full event queue nobody pulls from fails with \
         `events_stalled` after this long; `null`: wait for ever.",
    ),
    opt(
        "progressEvents",
        Ty::Bool,
        "false",
        "Emit `progress` events for the slow steps of an agent's start (spawn, handshake, \
         login): `started`, `waiting` every 5 s, `done` or `failed` (docs/EVENTS.md).",
    ),
    opt(
        "wireEvents",
        Ty::Bool,
        "false",
        "Emit a `wire` event for every message in and out (protocol log views).",
    ),
    opt(
        "record",
        Ty::Object(RECORD),
        "none (no recording)",
        "Record every agent connection to a file: the wire in both directions and the events \
         (docs/RECORDING.md).",
    ),
    opt(
        "coalesceToolCallUpdates",
        Ty::Bool,
        "false",
        "Merge a `tool_call_update` into the queued, not yet pulled update of the same tool call.",
    ),
    opt(
        "maxLineBytes",
        Ty::Int { min: KIB, max: GIB },
        "67108864 (64 MiB)",
        "Longest line accepted from an agent; a longer one is skipped and reported.",
    ),
    opt(
        "stderrTailBytes",
        Ty::Int {
            min: 0,
            max: 64 * MIB,
        },
        "65536 (64 KiB)",
        "How much of the agent's stderr is kept for exit errors.",
    ),
    opt(
        "maxOutboundBytes",
        Ty::Int {
            min: 64 * KIB,
            max: 16 * GIB,
        },
        "67108864 (64 MiB)",
        "The most the queue to an agent's stdin holds; half for answers to the agent's requests, \
         half for the host's own lines (docs/ARCHITECTURE.md).",
    ),
    opt(
        "maxPendingAgentRequests",
        Ty::Int {
            min: 1,
            max: 1_048_576,
        },
        "1024",
        "Requests from the agent (permission, fs, terminal) pending at once; more are refused \
         with a JSON-RPC error.",
    ),
    opt(
        "earlyUpdateLimit",
        Ty::Int {
            min: 1,
            max: 16 * MIB,
        },
        "65536",
        "Updates buffered while a session is being opened (early updates, load replay).",
    ),
    opt(
        "fs",
        Ty::Enum(&["builtin", "embedder", "disabled"]),
        "\"builtin\"",
        "Who serves `fs/*`: the built-in sandbox, the face's service hooks, or nobody (not \
         advertised).",
    ),
    opt(
        "fsLimits",
        Ty::Object(FS_LIMITS),
        "see below",
        "Size limits of the built-in `fs/*`.",
    ),
    opt(
        "terminal",
        Ty::Enum(&["builtin", "embedder", "disabled"]),
        "\"builtin\"",
        "Who serves `terminal/*`: the built-in terminal manager, the face's service hooks, or \
         nobody (not advertised).",
    ),
    opt(
        "terminalLimits",
        Ty::Object(TERMINAL_LIMITS),
        "see below",
        "Limits of the built-in terminal manager.",
    ),
    opt(
        "ext",
        Ty::Enum(&["none", "embedder"]),
        "\"none\"",
        "Who answers the agent's `_`-prefixed extension requests (`none`: -32601).",
    ),
    opt(
        "terminalAuth",
        Ty::Enum(&["none", "embedder"]),
        "\"none\"",
        "Who runs the agent's terminal logins (advertises `auth.terminal` when `embedder`).",
    ),
    opt(
        "unstable",
        Ty::EnumList(crate::protocol::OPT_IN_METHODS),
        "[]",
        "Unstable ACP methods to opt into; without it their calls fail with `unsupported`. \
         `protocol/v2`: `initialize` offers the draft ACP v2 (v1 when the agent answers 1; \
         docs/PROTOCOL.md).",
    ),
    opt(
        "logLevel",
        Ty::Enum(&["error", "warn", "info", "debug", "trace"]),
        "\"info\"",
        "The least severe record the face's log hook gets (no hook: nothing is logged; the \
         library never prints).",
    ),
    Opt {
        name: "services",
        ty: Ty::Enum(&["callback", "events"]),
        default: "\"callback\"",
        doc: "How the C face delivers embedder service calls: to the service callback, or as \
              `service_request` events.",
        face: Some(super::Face::C),
    },
];

pub const RESTART: &[Opt] = &[
    opt(
        "maxRestarts",
        Ty::Int {
            min: 0,
            max: 1_000_000,
        },
        "3",
        "Restarts allowed since the last healthy period (`resetAfterMs`) before the supervisor gives up.",
    ),
    opt(
        "backoffMs",
        Ty::Ms {
            min: 0,
            max: MAX_MS,
            none: false,
        },
        "250",
        "Delay before the first restart; doubles per attempt.",
    ),
    opt(
        "maxBackoffMs",
        Ty::Ms {
            min: 0,
            max: MAX_MS,
            none: false,
        },
        "10000",
        "Ceiling of the delay between restarts.",
    ),
    opt(
        "resetAfterMs",
        Ty::Ms {
            min: 0,
            max: MAX_MS,
            none: false,
        },
        "60000",
        "An agent up this long is healthy: the attempt count starts again at 0.",
    ),
];

/// A recording played back instead of a process (`AgentSpec::replay`), under `replay`.
pub const REPLAY: &[Opt] = &[
    opt(
        "file",
        Ty::Path { dir: false },
        "required",
        "The recording (docs/RECORDING.md) whose agent side is played.",
    ),
    opt(
        "pace",
        Ty::Enum(&["recorded", "fast"]),
        "\"recorded\"",
        "The recorded delays between the agent's messages, or none.",
    ),
    opt(
        "waitMs",
        Ty::Ms {
            min: 1,
            max: MAX_MS,
            none: true,
        },
        "10000",
        "How long a recorded host message is waited for before it is reported missing and the \
         replay goes on; `null`: until the host closes the connection.",
    ),
    opt(
        "report",
        Ty::Path { dir: false },
        "none",
        "Write the replay's report (JSON: its divergences) to this file when it ends, before the \
         agent's side closes; replaced if it exists.",
    ),
    opt(
        "ignore",
        Ty::Texts,
        "[]",
        "Fields never compared, as a divergence names them (`params.prompt`, `result.outcome`).",
    ),
];

/// An agent to spawn (`AgentSpec`).
pub const AGENT: &[Opt] = &[
    opt(
        "command",
        Ty::Text,
        "required (unless `replay`)",
        "The program: an absolute path, or a name looked up on `PATH` (never the cwd).",
    ),
    opt("args", Ty::Texts, "[]", "Its arguments."),
    opt(
        "env",
        Ty::Env,
        "{}",
        "Environment changes over the host's: a string sets, `null` removes.",
    ),
    opt(
        "cwd",
        Ty::Path { dir: true },
        "the host process's",
        "The agent's working directory; must exist.",
    ),
    opt(
        "restart",
        Ty::Object(RESTART),
        "none (no restarts)",
        "Restart the agent when its process dies.",
    ),
    opt(
        "replay",
        Ty::Object(REPLAY),
        "none",
        "Instead of a process, play this recording's agent side inside the host \
         (docs/RECORDING.md, \"Replaying\"); no `command`, `args`, `env`, `cwd` or `restart` then.",
    ),
];

/// A session to open, load or resume (`SessionOptions`).
pub const SESSION: &[Opt] = &[
    opt(
        "cwd",
        Ty::Path { dir: true },
        "required",
        "The session's working directory and first sandbox root; must exist.",
    ),
    opt(
        "additionalDirectories",
        Ty::Paths { dir: true },
        "[]",
        "More sandbox roots, sent to agents that support `additionalDirectories`; must exist.",
    ),
    opt(
        "mcpServers",
        Ty::Objects,
        "[]",
        "MCP server configurations, in ACP shape.",
    ),
];

/// A pool of agents (`PoolConfig`), under `pool`.
pub const POOL: &[Opt] = &[
    opt(
        "mode",
        Ty::Enum(&["process-per-session", "shared"]),
        "\"process-per-session\"",
        "One process per session, or up to `maxSessionsPerAgent` sessions per process.",
    ),
    opt(
        "maxSessionsPerAgent",
        Ty::Int {
            min: 1,
            max: 65_536,
        },
        "8",
        "Sessions per process in `shared` mode (only with `mode: \"shared\"`).",
    ),
    opt(
        "warmSpares",
        Ty::Int { min: 0, max: 1024 },
        "1",
        "Processes kept started and initialized, ready for a session (at most `maxAgents`).",
    ),
    opt(
        "maxAgents",
        Ty::Int { min: 1, max: 1024 },
        "8",
        "Live processes at most (spares and starting ones count).",
    ),
    opt(
        "idleTimeoutMs",
        Ty::Ms {
            min: 1,
            max: MAX_MS,
            none: true,
        },
        "300000 (5 min)",
        "A shared process without sessions this long is shut down; `null`: never.",
    ),
];

/// The documents, as docs/OPTIONS.md lists them: (title, where the document is given, rows,
/// path prefix of its errors).
pub const DOCUMENTS: &[(&str, &str, &[Opt], &str)] = &[
    (
        "Host options",
        "C `acph_host_new` JSON · Node `new Host({...})` · Python `Host(...)` · Kotlin `HostOptions` · CLI flags",
        HOST,
        "",
    ),
    (
        "Agent spec",
        "C `acph_host_spawn` JSON · Node `host.spawn({...})` · Python `host.spawn(...)` · Kotlin `AgentSpec` · CLI `-- cmd args`",
        AGENT,
        "",
    ),
    (
        "Session options",
        "C `acph_agent_new_session` JSON · Node `agent.newSession({...})` · Python `agent.new_session(...)` · Kotlin `SessionOptions`",
        SESSION,
        "",
    ),
    ("Pool options", "`pool` of a pool's options", POOL, "pool."),
];
