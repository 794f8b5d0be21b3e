/**
 * The typed event stream: `AcpEvent` is a union discriminated on `kind`, its `data` typed per kind
 * (and, for `session_update`, per `sessionUpdate`) by the types generated from
 * schema/events.schema.json (./generated/events.ts, see scripts/gen-types.mjs). Types only: this
 * module has no runtime code.
 */

import type { EventData, SessionConfigOption, SessionModeState, StopReason, ToolCall } from './generated/events';
import type { Progress } from './progress';

/** Every ACP and host type of the event schema, by its schema name (`acp.ToolCall`, `acp.Diff`, …). */
export type * as acp from './generated/events';

// The types a consumer handles most, by name (the rest: the `acp` namespace).
export type {
  AgentCapabilities,
  AgentExited,
  AgentFailed,
  AgentReady,
  AgentRestarted,
  AgentRestarting,
  AgentStderr,
  AudioContent,
  AuthMethod,
  AvailableCommand,
  CallCompleted,
  ContentBlock,
  ContentChunk,
  DecidedBy,
  Diff,
  ElicitationCompleted,
  ElicitationRequested,
  ElicitationResolved,
  EmbeddedResource,
  ErrorInfo,
  EventData,
  ExtNotification,
  ExtRequest,
  FsRead,
  FsWrite,
  ImageContent,
  Implementation,
  PermissionOption,
  PermissionOptionKind,
  PermissionRequested,
  PermissionResolved,
  Plan,
  PlanEntry,
  ProtocolError,
  ProtocolNoise,
  RecoveredSession,
  RequestPermissionOutcome,
  ResourceLink,
  SessionClosed,
  SessionConfigOption,
  SessionLost,
  SessionMode,
  SessionModeState,
  SessionOpened,
  SessionUpdate,
  StopReason,
  TerminalCreated,
  TerminalExited,
  TextContent,
  ToolCall,
  ToolCallContent,
  ToolCallLocation,
  ToolCallStatus,
  ToolCallUpdate,
  ToolKind,
  TurnEnded,
  TurnStarted,
  UsageUpdate,
  Wire,
  Receipt,
  RequestState,
} from './generated/events';

/**
 * The event kinds of docs/EVENTS.md. Newer hosts may add kinds: at runtime an event of a kind
 * missing here can still arrive, so a `switch (ev.kind)` keeps a `default:` branch.
 */
export type EventKind = keyof EventData;

/**
 * Each kind's `data`: the generated types, with `progress`'s phase and stage names spelled out
 * (the schema has them as strings).
 */
export interface HostEventData extends Omit<EventData, 'progress'> {
  progress: Progress;
}

/** The envelope fields every event has (docs/EVENTS.md). */
export interface EventEnvelope {
  /** Strictly increasing per host, from 1, without gaps: the one total order. */
  seq: number;
  /** When the host observed it (RFC 3339, UTC, milliseconds). */
  at: string;
  /** The host's id of the agent. */
  agent: number;
  /** The ACP `sessionId`, when the event belongs to a session. */
  session?: string;
  /** The host's turn id, when the event belongs to a prompt turn. */
  turn?: number;
  /** `true` for updates replayed by `session/load`. */
  replay: boolean;
  /**
   * Only on the first event a `session.events()` stream yields, when the session's opening
   * history overflowed its bound: how many of the session's events after this one were left out
   * (their `seq`s are missing from the stream). Not part of the host's event JSON.
   */
  dropped?: number;
}

/**
 * One event, exactly the JSON envelope of docs/EVENTS.md: narrowing on `kind` types `data` (the
 * ACP JSON verbatim for protocol-derived events, the documented fields for host events).
 * `session_update` data narrows further on `data.sessionUpdate`.
 *
 * The union is what this version knows. Agents and newer hosts may send more (kinds, update
 * kinds, fields, enum values): code that switches on `kind` or `sessionUpdate` keeps a
 * `default:` branch, and the JSON is passed through unchanged.
 */
export type AcpEvent = {
  [K in EventKind]: EventEnvelope & {
    /** The event kind (snake_case); selects the type of `data`. */
    kind: K;
    /** The payload of this kind. */
    data: HostEventData[K];
  };
}[EventKind];

/** The events of one kind (or of a union of kinds): `AcpEventOf<'turn_ended'>`. */
export type AcpEventOf<K extends EventKind> = Extract<AcpEvent, { kind: K }>;

/** A `session_update` event whose update is of one kind: `SessionUpdateEventOf<'tool_call'>`. */
export type SessionUpdateEventOf<U extends EventData['session_update']['sessionUpdate']> = AcpEventOf<'session_update'> & {
  data: Extract<EventData['session_update'], { sessionUpdate: U }>;
};

// ------------------------------------------------------------------- shapes the schema lacks

/**
 * Token usage of a prompt turn (ACP's `Usage`, unstable in ACP v1 and not part of the event
 * schema): as the agent sent it.
 */
export interface TurnUsage {
  totalTokens: number;
  inputTokens: number;
  outputTokens: number;
  thoughtTokens?: number | null;
  cachedReadTokens?: number | null;
  cachedWriteTokens?: number | null;
  _meta?: { [k: string]: unknown } | null;
  /** Fields of newer ACP versions, passed through. */
  [k: string]: unknown;
}

/** The `session/prompt` response as the agent sent it (`TurnResult.raw`). */
export interface PromptResponse {
  stopReason: StopReason | (string & {});
  usage?: TurnUsage | null;
  _meta?: { [k: string]: unknown } | null;
  /** Fields of newer ACP versions, passed through. */
  [k: string]: unknown;
}

/** One session of `agent.listSessions()` (ACP's `SessionInfo`). */
export interface SessionListEntry {
  sessionId: string;
  /** Absolute working directory of the session. */
  cwd: string;
  additionalDirectories?: string[];
  title?: string | null;
  /** RFC 3339. */
  updatedAt?: string | null;
  _meta?: { [k: string]: unknown } | null;
  /** Fields of newer ACP versions, passed through. */
  [k: string]: unknown;
}

/** One page of `agent.listSessions()` (ACP's `ListSessionsResponse`). */
export interface ListSessionsResult {
  sessions: SessionListEntry[];
  /** Pass as `cursor` for the next page; absent (or null) on the last one. */
  nextCursor?: string | null;
  _meta?: { [k: string]: unknown } | null;
}

/** `agent.sessionStatus()` (unstable `session/status`). */
export interface SessionStatusResult {
  /** `open`: in memory for any connection (load or resume it before prompting if not opened here); `saved`: known, resumable. A value this host does not know is `saved`. */
  status: 'open' | 'saved';
  /** The agent's value verbatim (differs from `status` only for one this host does not know). */
  reported: string;
}

/** `agent.sessionOptions()` (unstable `session/options`): what a session would start with. */
export interface SessionDefaults {
  modes: SessionModeState | null;
  configOptions: SessionConfigOption[] | null;
}

/** The legacy `models` of a session/new, load or resume response (agents before the `model` config option). */
export interface LegacySessionModels {
  currentModelId: string;
  availableModels: Array<{ modelId: string; name: string; description?: string | null; _meta?: { [k: string]: unknown } | null }>;
  _meta?: { [k: string]: unknown } | null;
}

/**
 * A tool call of `SessionState.toolCalls`: the `tool_call` with every `tool_call_update` merged
 * over it (`null` fields removed). `title` is missing only for a call the agent updated without
 * ever announcing it. Oversized `content`/`rawInput`/`rawOutput` are cut, and
 * `_meta.acpHost.truncated` names what was cut.
 */
export type SessionToolCall = Omit<ToolCall, 'title'> & { title?: string };

