/**
 * acp-host for Node: the host (client) side of the Agent Client Protocol, for VS Code, Theia and
 * Electron extensions. A TypeScript facade over the napi-rs addon of the acp-host Rust core.
 *
 * ```ts
 * import { Host } from 'acp-host';
 * await using host = new Host({ policy: 'ask', onPermission: async (req) => pickOption(req) });
 * const events = host.events();                        // subscribe before spawning: nothing is missed
 * await using agent = await host.spawn({ command: 'claude-agent-acp' });
 * await using session = await agent.newSession({ cwd: '/abs/project', signal: AbortSignal.timeout(30_000) });
 * const mine = session.events();                      // from its session_opened on (see ./streams.ts)
 * const { stopReason } = await session.prompt('Fix the tests', { signal });
 * ```
 *
 * The event shape is the one of docs/EVENTS.md. Nothing here prints, and nothing listens on the
 * network.
 */

import type { ContentBlock } from './types';
import { native } from './native';
import { callSync } from './errors';

// The typed events and the ACP types (types only: nothing of it exists at runtime).
export type * from './types';
export type * from './generated/options';
export type { EventsOptions } from './streams';
export type { LogHandler, LogLevel, LogRecord } from './log';
export type { Progress, ProgressHandler, ProgressPhase, ProgressStage } from './progress';
export { SESSION_HISTORY_LIMIT } from './streams';

// The public API, by concern (each module says what it holds).
export { AcpError } from './errors';
export type { AcpErrorCode } from './errors';
export type {
  PermissionRequest,
  PermissionHandler,
  ElicitationSchema,
  FormElicitationRequest,
  UrlElicitationRequest,
  ElicitationRequest,
  ElicitationValue,
  ElicitationAnswer,
  ElicitationHandler,
  ElicitationModes,
} from './answers';
export { ServiceError } from './services';
export type {
  FsReadRequest,
  FsWriteRequest,
  FsHooks,
  TerminalHooks,
  ExtRequestHandler,
  TerminalAuthCommand,
  TerminalAuthHandler,
  AuthMethodInfo,
} from './services';
export { Host } from './host';
export type {
  PolicyDocument,
  HostOptions,
  SpawnOptions,
  ProcessSpawnOptions,
  ReplaySpawnOptions,
  ReplayOptions,
  RestartPolicy,
  PoolSettings,
  PoolOptions,
  PoolStats,
  AgentInfo,
  ExitInfo,
  HostListener,
} from './host';
export type { ConnectStream } from './connect';
export { Agent } from './agent';
export type { CallOptions, SessionOptions } from './agent';
export { Session } from './session';
export type { TurnResult, SteerResult, ModelInfo, SessionModels, SessionState, PromptOptions } from './session';
export { Pool, PooledSession } from './pool';
export { Registry } from './registry';
export type {
  DistributionKind,
  RegistryPlatform,
  RegistryPackageDistribution,
  RegistryBinaryTarget,
  RegistryAgent,
  ResolveOptions,
  AgentCommand,
  ResolvedAgent,
  InstallOptions,
  ArchiveBytes,
  InstalledAgent,
} from './registry';

// ---------------------------------------------------------------------------------- the protocol

/** One row of the ACP method table (docs/PROTOCOL.md). */
export interface MethodInfo {
  name: string;
  direction: 'client_to_agent' | 'agent_to_client' | 'both';
  kind: 'request' | 'notification';
  stability: 'stable' | 'unstable';
  /** The capability that gates it (`agentCapabilities.loadSession`, ...), or `null`. */
  gate: string | null;
  /** Params and result type names in the ACP schema. */
  params: string;
  result: string | null;
  /** Whether this host sends (or serves) it. */
  implemented: boolean;
  /** The call of each face that maps to it (empty: not exposed). */
  faces: { rust: string; c: string; node: string; python: string; kotlin: string; swift: string };
}

/** Every ACP v1 method and notification this build knows, and how each face exposes it. */
export function methods(): MethodInfo[] {
  return native.methods() as MethodInfo[];
}

/**
 * A prompt content block from a file: an `image`/`audio` block (base64, MIME type from the
 * extension: png, jpg, gif, webp; wav, mp3, ogg, flac, m4a, webm) or an embedded text
 * `resource`. The path must be absolute; files over 16 MiB are refused (`invalid_argument`).
 * Whether the agent accepts the block is checked when the prompt is sent (`unsupported`, nothing
 * sent).
 */
export function contentFromFile(path: string): ContentBlock {
  return callSync(() => native.contentFromFile(path)) as ContentBlock;
}

/** A `resource_link` block (every agent accepts these). */
export function resourceLink(uri: string, name: string): ContentBlock {
  return { type: 'resource_link', uri, name };
}

