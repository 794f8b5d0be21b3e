/**
 * An agent: its handshake info, authentication and sessions.
 */
import type { AcpEvent, ListSessionsResult, SessionDefaults, SessionStatusResult } from './types';
import type { SessionOptionsDocument } from './generated/options';
import type { EventsOptions } from './streams';
import { asyncDispose, type NativeAgent, type NativeSession } from './native';
import { AcpError, abortable, call, optionDocument } from './errors';
import type { AuthMethodInfo } from './services';
import type { AgentInfo, ExitInfo, Host } from './host';
import { Session } from './session';

export interface CallOptions {
  /** Aborting drops the call: the agent is told with `$/cancel_request`; the call rejects with `cancelled`. */
  signal?: AbortSignal;
}

/**
 * A session's options (docs/OPTIONS.md "Session options": `cwd` is required, absolute and must
 * exist), and the call's `signal`.
 */
export interface SessionOptions extends SessionOptionsDocument, CallOptions {}

/** A session's option document (its `signal` is the call's, not an option). */
export function sessionOptions(o: SessionOptions = {} as SessionOptions): string {
  const { signal: _signal, ...doc } = o ?? ({} as SessionOptions);
  return optionDocument(doc);
}

/**
 * A connected, initialized agent. A supervised one (`spawn` with `restart`) keeps its id and this
 * object across restarts: its calls reach the current process.
 */
export class Agent {
  /** The host's id of this agent (the `agent` field of its events). */
  readonly id: number;
  /** Spawned with a `restart` policy: restarted when its process dies. */
  readonly supervised: boolean;
  /**
   * Resolves when the agent is gone (with how its last process ended). A supervised agent is gone
   * once its supervisor gave up (`agent_failed`) or it was shut down, not when a restart follows.
   */
  readonly exited: Promise<ExitInfo>;
  private resolveExited!: (e: ExitInfo) => void;
  private exit: ExitInfo | null = null;
  private negotiated: AgentInfo;

  /** @internal */
  constructor(
    readonly host: Host,
    /** @internal */ readonly native: NativeAgent,
  ) {
    this.id = native.id;
    this.supervised = native.supervised;
    this.negotiated = native.info() as AgentInfo;
    this.exited = new Promise((resolve) => (this.resolveExited = resolve));
    const e = native.isGone() ? (native.exitInfo() as ExitInfo | null) : null;
    if (e) this.markExited(e);
  }

  /** @internal */
  markExited(e: ExitInfo): void {
    if (this.exit) return;
    this.exit = e;
    this.resolveExited(e);
  }

  /** @internal Its `agent_restarted` was dispatched: a new process answers now. */
  restarted(): void {
    this.negotiated = this.native.info() as AgentInfo;
  }

  /** What the agent negotiated in `initialize` (a restarted agent's: its new process's). */
  get info(): AgentInfo {
    return this.negotiated;
  }

  /**
   * How the agent's process ended, once it has (else `null`). A supervised agent's is set between
   * a crash and its restart, and `null` again once restarted.
   */
  get exitInfo(): ExitInfo | null {
    return this.exit ?? (this.native.exitInfo() as ExitInfo | null);
  }

  /** The process id of the agent's current process (a restarted agent has a new one). */
  get pid(): number | null {
    return this.native.pid() ?? null;
  }

  /**
   * The supervisor gave up (`agent_failed`): the agent stays down and its calls reject with
   * `agent_exited`. Always `false` for an agent spawned without `restart`.
   */
  get restartsExhausted(): boolean {
    return this.native.restartsExhausted();
  }

  /** `authenticate` with one of the agent's advertised `agent`-type auth methods. */
  authenticate(methodId: string, options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.authenticate(methodId, a));
  }

  /**
   * `logout` (needs `agentCapabilities.auth.logout`; otherwise rejects with `unsupported` and
   * nothing is sent): the agent forgets its credentials, and calls that need them fail with
   * `auth_required` until `authenticate` again.
   */
  /** The agent's `authMethods`, parsed: which need `authenticate` and which a terminal login. */
  get authMethods(): AuthMethodInfo[] {
    return this.native.authMethods() as AuthMethodInfo[];
  }

  /**
   * Terminal login: runs the login of `methodId` (a terminal auth method) through the host's
   * `onTerminalAuth`; when it exits 0, this agent is shut down and started again from the same
   * spawn options, and the new agent is returned — retry the call that failed with
   * `auth_required` on it (this agent's sessions are gone: load or resume them). A non-zero exit
   * rejects with `auth_required` and leaves this agent running. `authenticate` is never sent.
   */
  async terminalAuth(methodId: string, options: CallOptions = {}): Promise<Agent> {
    const hub = this.host.hub;
    hub.pendingSpawns++;
    hub.kick();
    try {
      const n = await abortable(options.signal, (a) => this.native.terminalAuth(methodId, a));
      // This agent was shut down: it is gone (its last event ends its streams).
      this.host.retire(this);
      return this.host.adopt(n);
    } finally {
      hub.pendingSpawns--;
      hub.kick();
    }
  }

  logout(options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.logout(a));
  }

  /** `session/new`. */
  newSession(options: SessionOptions): Promise<Session> {
    return this.open(options?.signal, (a) => this.native.newSession(sessionOptions(options), a));
  }

  /** `session/load` (needs `loadSession`): the replay arrives as `session_update` events with `replay: true`. */
  loadSession(sessionId: string, options: SessionOptions): Promise<Session> {
    return this.open(options?.signal, (a) => this.native.loadSession(sessionId, sessionOptions(options), a));
  }

  /** `session/resume` (needs `sessionCapabilities.resume`): reopen without replay. */
  resumeSession(sessionId: string, options: SessionOptions): Promise<Session> {
    return this.open(options?.signal, (a) => this.native.resumeSession(sessionId, sessionOptions(options), a));
  }

  /**
   * `session/fork` (unstable in ACP): a new session that starts from `sessionId`'s history. Needs
   * `unstable: ['session/fork']` in the host's options and the agent's
   * `sessionCapabilities.fork`; otherwise it rejects with `unsupported` and nothing is sent.
   */
  forkSession(sessionId: string, options: SessionOptions): Promise<Session> {
    return this.open(options?.signal, (a) => this.native.forkSession(sessionId, sessionOptions(options), a));
  }

  /** Run an open call (the session's stream starts at its history's oldest event, whenever opened). */
  private async open(signal: AbortSignal | undefined, f: (abort: number | undefined) => Promise<NativeSession>): Promise<Session> {
    return new Session(this, await abortable(signal, f));
  }

  /** `session/list` (needs `sessionCapabilities.list`): one page. */
  listSessions(options: CallOptions & { cwd?: string; cursor?: string } = {}): Promise<ListSessionsResult> {
    return abortable(options.signal, (a) => this.native.listSessions(options.cwd, options.cursor, a));
  }

  /** `session/close` (needs `sessionCapabilities.close`). */
  closeSession(sessionId: string, options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.closeSession(sessionId, a));
  }

  /** `session/delete` (needs `sessionCapabilities.delete`). */
  deleteSession(sessionId: string, options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.deleteSession(sessionId, a));
  }

  // The unstable session methods: each needs its name in the host's `unstable` option and the
  // agent's `sessionCapabilities.*` marker; otherwise it rejects with `unsupported` and nothing
  // is sent. The agent's errors reject as for every call (`agent_error`, its code in `data`);
  // an answer of the wrong shape rejects with `protocol`.

  /**
   * `session/status` (unstable; `unstable: ['session/status']`, `sessionCapabilities.status`):
   * whether the agent has the session in memory. A status this host does not know is `saved`.
   */
  sessionStatus(sessionId: string, options: CallOptions = {}): Promise<SessionStatusResult> {
    return abortable(options.signal, (a) => this.native.sessionStatus(sessionId, a));
  }

  /**
   * `session/set_title` (unstable; `unstable: ['session/set_title']`, `sessionCapabilities.title`):
   * resolves with the title the agent stored (it may normalise it: show this one). A session open
   * here gets it as `state.title`.
   */
  setSessionTitle(sessionId: string, title: string, options: CallOptions = {}): Promise<string> {
    return abortable(options.signal, (a) => this.native.setSessionTitle(sessionId, title, a));
  }

  /**
   * `session/archive` (unstable; `unstable: ['session/archive']`, `sessionCapabilities.archive`):
   * hidden from default `listSessions` results. A session open here is closed (`session_closed`
   * with `reason: 'archived'`).
   */
  archiveSession(sessionId: string, options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.archiveSession(sessionId, a));
  }

  /** `session/unarchive` (unstable; `unstable: ['session/unarchive']`): listed again, not reopened. */
  unarchiveSession(sessionId: string, options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.unarchiveSession(sessionId, a));
  }

  /**
   * `session/options` (unstable; `unstable: ['session/options']`, `sessionCapabilities.options`):
   * the modes and config options a session would start with in `options.cwd`, without creating
   * one; with `sessionId`, what a load or resume of it would give (needs `loadSession` or
   * `sessionCapabilities.resume`). `mcpServers` is not sent.
   */
  sessionOptions(options: SessionOptions & { sessionId?: string }): Promise<SessionDefaults> {
    const { sessionId, ...rest } = options;
    return abortable(options?.signal, (a) => this.native.sessionOptions(sessionOptions(rest), sessionId ?? null, a));
  }

  /** An extension request (`_vendor/method`); resolves with the raw result. */
  extRequest(method: string, params: unknown = {}, options: CallOptions = {}): Promise<unknown> {
    return abortable(options.signal, (a) => this.native.extRequest(method, params, a));
  }

  /** A handle to an open session of this agent, or `null`. */
  session(sessionId: string): Session | null {
    const n = this.native.session(sessionId);
    return n ? new Session(this, n) : null;
  }

  /**
   * This agent's events (every event whose `agent` is this one; a live reader of the core's hub),
   * from now on, ending after its last event — `agent_failed`, or an `agent_exited` without
   * `restart: true` (a supervised agent's go on across restarts; one shut down while down gets a
   * final `agent_exited`) — at once when that was already delivered. Same
   * options and backpressure as `host.events()`. `agent_ready` and what came before `spawn`
   * resolved are in `host.events()`.
   */
  events(options: EventsOptions = {}): AsyncIterableIterator<AcpEvent> {
    return this.host.hub.subscribeAgent(this.id, options);
  }

  /**
   * Shut the agent down (stdin EOF → grace → SIGTERM → grace → SIGKILL, to its process group). A
   * supervised agent is not restarted any more: a restart waiting for its backoff is dropped, a
   * process being started is shut down too.
   */
  async shutdown(): Promise<ExitInfo> {
    const e = (await call(() => this.native.shutdown())) as ExitInfo;
    this.markExited(e);
    return e;
  }

  /**
   * `await using agent = await host.spawn(...)`: shuts the agent down at the end of the scope.
   * Never throws for an agent that is already gone or a closed host.
   */
  async [asyncDispose](): Promise<void> {
    try {
      await this.shutdown();
    } catch (e) {
      if (!(e instanceof AcpError && GONE.has(e.code))) throw e;
    }
  }
}

/** Codes that mean there is nothing left to close or shut down (a disposer ignores them). */
export const GONE: ReadonlySet<string> = new Set(['closed', 'agent_exited', 'not_found', 'unsupported']);

