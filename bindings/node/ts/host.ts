/**
 * The host: its options, events, agents, pools and close.
 */
import { EventEmitter } from 'node:events';

import type {
  AcpEvent,
  AcpEventOf,
  AgentCapabilities,
  AuthMethod,
  EventKind,
  Implementation,
} from './types';
import { EventHub, type EventsOptions } from './streams';
import type { Receipt } from './types';
import type { AgentSpecDocument, HostOptionsDocument, PoolSettingsDocument } from './generated/options';
import { asyncDispose, native, type NativeAgent, type NativeHost } from './native';
import { AcpError, abortable, call, callSync, configError, optionDocument, toAcpError } from './errors';
import { Answers, type ElicitationAnswer, type ElicitationHandler, type PermissionHandler } from './answers';
import { serve, type ExtRequestHandler, type FsHooks, type TerminalAuthHandler, type TerminalHooks } from './services';
import { logDelivery, type LogHandler } from './log';
import { Agent, type CallOptions } from './agent';
import { Pool } from './pool';
import { pumpConnection, streamPair, type ConnectStream } from './connect';

/** A policy document (docs/PERMISSIONS.md). */
export interface PolicyDocument {
  $schema?: string;
  preset?: 'deny-all' | 'read-only' | 'ask';
  rules?: Array<Record<string, unknown>>;
  hardDeny?: { paths?: string[]; commands?: string[]; commandRegex?: string };
}

/**
 * The host's options: every option of docs/OPTIONS.md ("Host options", generated from the
 * core's table), plus the face's handlers. A handler answers for its option: `onPermission` for
 * `permission` (then `'handler'` by default), `onElicitation` for `elicitation`, `fs`/`terminal`
 * hooks for `fs`/`terminal` (`'embedder'`), `onExtRequest` for `ext`, `onTerminalAuth` for
 * `terminalAuth`. A handler given while its option names another answerer (`permission:
 * 'manual'` with `onPermission`) is an `invalid_config` error at that option.
 */
export interface HostOptions extends Omit<HostOptionsDocument, 'fs' | 'terminal'> {
  /** Answers permission requests that no rule decided (`permission: 'handler'`). Without it they are denied, or left to `respondPermission` with `permission: 'manual'`. */
  onPermission?: PermissionHandler;
  /**
   * Answers `elicitation/create` (forms and URL consent; `elicitation: 'handler'`). Without it
   * (and without `elicitation: 'manual'`) elicitation is not advertised and agents get "method
   * not found".
   */
  onElicitation?: ElicitationHandler;
  /** Who serves `fs/*`: `'builtin'` (the sandbox), `'disabled'`, or your hooks (`'embedder'`). */
  fs?: HostOptionsDocument['fs'] | FsHooks;
  /** Who serves `terminal/*`: `'builtin'`, `'disabled'`, or your hooks (`'embedder'`). */
  terminal?: HostOptionsDocument['terminal'] | TerminalHooks;
  /**
   * Serves the agent's extension requests (`_vendor/method`; `ext: 'embedder'`); each served
   * request is reported as an `ext_request` event. Without it they are answered `-32601`.
   */
  onExtRequest?: ExtRequestHandler;
  /**
   * Runs the agent's terminal logins (`authMethods` of `type: "terminal"` or with the legacy
   * `_meta["terminal-auth"]`; `terminalAuth: 'embedder'`); with it the host advertises
   * `auth.terminal` and `agent.terminalAuth(methodId)` works.
   */
  onTerminalAuth?: TerminalAuthHandler;
  /**
   * Gets the host's log records (`logLevel` and more severe; default `'info'`), in order, on the
   * JS thread; without it nothing is logged. See `LogHandler` and `host.droppedLogRecords()`.
   */
  onLog?: LogHandler;
}

/** A replay's options (`replay` of docs/OPTIONS.md): `file` the recording, `pace`, `report`, … */
export type ReplayOptions = NonNullable<AgentSpecDocument['replay']>;

/** Spawn a program: `command` (required) with its `args`, `env`, `cwd`, `restart`. */
export interface ProcessSpawnOptions extends Omit<AgentSpecDocument, 'command' | 'replay'> {
  command: string;
  replay?: never;
  signal?: AbortSignal;
}

/**
 * Play a recording's agent side instead of a process (docs/RECORDING.md, "Replaying"): nothing
 * of a process goes with it (the core refuses `command` and the rest; the type says so first).
 */
export interface ReplaySpawnOptions {
  replay: ReplayOptions;
  command?: never;
  args?: never;
  env?: never;
  cwd?: never;
  restart?: never;
  signal?: AbortSignal;
}

/** `host.spawn`'s options: the agent spec of docs/OPTIONS.md (a program or a replay), and the call's `signal`. */
export type SpawnOptions = ProcessSpawnOptions | ReplaySpawnOptions;

/** A supervised agent's restart policy (`SpawnOptions.restart`, docs/OPTIONS.md). */
export type RestartPolicy = NonNullable<AgentSpecDocument['restart']>;

/** How a pool hands out sessions (`pool` of docs/OPTIONS.md; errors name `pool.<option>`). */
export type PoolSettings = PoolSettingsDocument;

/** What `host.pool` takes: the agent spec (each process is started from it) and the pool's settings. */
export interface PoolOptions extends AgentSpecDocument {
  pool?: PoolSettings;
}

/** What a pool holds right now (`pool.stats()`). */
export interface PoolStats {
  /** Processes serving sessions (or idle, in shared mode, until evicted). */
  agents: number;
  /** Warm spares ready for a session. */
  spares: number;
  /** Processes being started. */
  starting: number;
  /** Sessions handed out and not released. */
  sessions: number;
}

/** What the agent negotiated in `initialize`. */
export interface AgentInfo {
  protocolVersion: number;
  agentInfo: Implementation | null;
  /** `{}` when the agent sent none. */
  agentCapabilities: AgentCapabilities;
  /** `[]` when the agent sent none. */
  authMethods: AuthMethod[];
}

/** How an agent process ended. */
export interface ExitInfo {
  exitCode: number | null;
  signal: string | null;
  stderrTail: string;
}

/** A listener of the `Host` emitter for one event kind. */
export type HostListener<K extends EventKind> = (ev: AcpEventOf<K>) => void;

/**
 * Typed overloads of the `EventEmitter` methods of `Host` (declaration merging: types only, the
 * methods are EventEmitter's). The last overload of each is EventEmitter's own: it serves event
 * kinds newer than these types (their listener gets the plain event) and the emitter's own events.
 */
export interface Host {
  on<K extends EventKind>(kind: K, listener: HostListener<K>): this;
  on(event: 'event', listener: (ev: AcpEvent) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once<K extends EventKind>(kind: K, listener: HostListener<K>): this;
  once(event: 'event', listener: (ev: AcpEvent) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  once(event: string | symbol, listener: (...args: any[]) => void): this;
  off<K extends EventKind>(kind: K, listener: HostListener<K>): this;
  off(event: 'event', listener: (ev: AcpEvent) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  off(event: string | symbol, listener: (...args: any[]) => void): this;
  addListener<K extends EventKind>(kind: K, listener: HostListener<K>): this;
  addListener(event: 'event', listener: (ev: AcpEvent) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  addListener(event: string | symbol, listener: (...args: any[]) => void): this;
  removeListener<K extends EventKind>(kind: K, listener: HostListener<K>): this;
  removeListener(event: 'event', listener: (ev: AcpEvent) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  removeListener(event: string | symbol, listener: (...args: any[]) => void): this;
  prependListener<K extends EventKind>(kind: K, listener: HostListener<K>): this;
  prependListener(event: 'event', listener: (ev: AcpEvent) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  prependListener(event: string | symbol, listener: (...args: any[]) => void): this;
  prependOnceListener<K extends EventKind>(kind: K, listener: HostListener<K>): this;
  prependOnceListener(event: 'event', listener: (ev: AcpEvent) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  prependOnceListener(event: string | symbol, listener: (...args: any[]) => void): this;
}

/**
 * The host. Events are also emitted on it as an `EventEmitter`: `'event'` for every event and the
 * event's kind (`'session_update'`, `'permission_requested'`, …) for each one.
 *
 * Nothing keeps the Node process alive except live agents, calls in flight and event iterators
 * waiting for more; `close()` ends all of them.
 */
export class Host extends EventEmitter {
  /** @internal */
  readonly native: NativeHost;
  /** @internal */
  readonly hub: EventHub;
  /** The requests handed to `onPermission` and `onElicitation` and not answered yet. */
  private readonly answers = new Answers();
  private closing: Promise<void> | null = null;
  /** @internal */
  readonly agents = new Map<number, Agent>();
  /** Pools not shut down. */
  private readonly pools = new Set<Pool>();

  constructor(options: HostOptions = {}) {
    super();
    // The callables become the core's hooks; everything else is the option document as given
    // (docs/OPTIONS.md), checked by the core (`acp_host::options::host`).
    const rest: Record<string, unknown> = { ...(options ?? {}) };
    const take = <T>(name: string, ok: (v: unknown) => boolean, what: string): T | undefined => {
      const v = rest[name];
      delete rest[name];
      if (v === undefined || v === null) return undefined;
      if (!ok(v)) throw configError(name, `${name} must be ${what}`);
      return v as T;
    };
    const isFn = (v: unknown) => typeof v === 'function';
    const isHooks = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
    const handler = take<PermissionHandler>('onPermission', isFn, 'a function');
    const elicit = take<ElicitationHandler>('onElicitation', isFn, 'a function');
    const ext = take<ExtRequestHandler>('onExtRequest', isFn, 'a function');
    const login = take<TerminalAuthHandler>('onTerminalAuth', isFn, 'a function');
    const onLog = take<LogHandler>('onLog', isFn, 'a function');
    // `fs`/`terminal` are an option value (`'builtin'`, …) or the face's hooks (an object).
    const fs = isHooks(rest.fs) ? take<FsHooks>('fs', isHooks, 'hooks') : undefined;
    const terminal = isHooks(rest.terminal) ? take<TerminalHooks>('terminal', isHooks, 'hooks') : undefined;
    const doc = optionDocument(rest);
    const decide = handler ? (message: string) => this.answers.permissionMessage(handler, message) : undefined;
    const service = fs || terminal || ext || login ? (json: string) => serve(fs, terminal, ext, login, json) : undefined;
    const elicitation = elicit ? (json: string) => this.answers.elicitationMessage(elicit, json) : undefined;
    const hooks = { fs: !!fs, terminal: !!terminal, ext: !!ext, terminalAuth: !!login };
    const log = onLog ? logDelivery(onLog) : undefined;
    this.native = callSync(() => new native.NativeHost(doc, decide, service, elicitation, hooks, log));
    this.hub = new EventHub(this.native, (evs) => this.emitBatch(evs), toAcpError, () => this.eventNames().length === 0);
  }

  private emitBatch(evs: AcpEvent[]): void {
    for (const ev of evs) {
      if (ev.kind === 'agent_restarted') this.agents.get(ev.agent)?.restarted();
      else if (this.hub.isLast(ev)) {
        // Its last event (`agent_failed`, or `agent_exited` without `restart`): it is gone.
        const agent = this.agents.get(ev.agent);
        if (agent) {
          // A supervised agent's is how its last process ended (what `shutdown()` returns).
          const native = agent.native.exitInfo() as ExitInfo | null;
          const exit = (agent.supervised ? native : null) ?? this.hub.exits.get(ev.agent) ?? native;
          this.agents.delete(ev.agent);
          this.hub.exits.delete(ev.agent);
          agent.markExited(exit ?? { exitCode: null, signal: null, stderrTail: '' });
        }
      }
    }
    if (this.eventNames().length === 0) return;
    for (const ev of evs) {
      this.emit('event', ev);
      this.emit(ev.kind, ev);
    }
  }

  /**
   * The host's ordered event stream, from now on (subscribe before `spawn` to see everything).
   * Each call opens an independent reader of the core's hub (a live reader, docs/EVENTS.md);
   * pulling drives backpressure. Ends after `close()`.
   */
  events(options: EventsOptions = {}): AsyncIterableIterator<AcpEvent> {
    return this.hub.subscribe(options);
  }

  /** Capabilities advertised to agents, from what is served. */
  get clientCapabilities(): { readTextFile: boolean; writeTextFile: boolean; terminal: boolean; elicitation: { form: boolean; url: boolean } } {
    return callSync(() => this.native.clientCapabilities());
  }

  /**
   * Log records lost so far because `onLog` fell 1024 records behind (it is told how many in a
   * `warn` record with target `log`); 0 without `onLog`.
   */
  droppedLogRecords(): number {
    return this.native.droppedLogRecords();
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.closing !== null;
  }

  /**
   * Spawn an agent (own process group), perform the handshake and return it. With `restart` the
   * agent is supervised (restarted when its process dies). With `replay` instead of `command` the
   * agent is a recording played inside the host (docs/RECORDING.md, "Replaying"); a bad recording
   * rejects with `invalid_config` at `replay.file`.
   */
  async spawn(options: SpawnOptions): Promise<Agent> {
    if (this.closing) throw new AcpError('closed', 'the host was closed');
    const { signal, ...spec } = options ?? ({} as SpawnOptions);
    const doc = optionDocument(spec);
    this.hub.pendingSpawns++;
    this.hub.kick();
    try {
      const n = await abortable(signal, (abort) => this.native.spawn(doc, abort));
      return this.adopt(n);
    } finally {
      this.hub.pendingSpawns--;
      this.hub.kick();
    }
  }

  /**
   * Speak ACP with an agent over a stream you opened — a `net.Socket`, a child process's
   * `{ readable: child.stdout, writable: child.stdin }`, an ssh2 channel, a container's attach
   * stream: a Duplex, or `{ readable, writable }`. The handshake is done when it resolves. Every
   * guarantee of `spawn` holds but process containment (there is no process of ours): when the
   * stream ends, closes or errors, the agent is gone (`agent_exited`) and its pending calls
   * reject at once. Bytes are pumped with backpressure both ways (the stream is paused while the
   * agent's side is full, and not written past its `write() === false`). The stream is the
   * agent's from now on: it is ended when the agent is shut down (or the host closed).
   */
  async connect(stream: ConnectStream, options: CallOptions = {}): Promise<Agent> {
    if (this.closing) throw new AcpError('closed', 'the host was closed');
    const pair = streamPair(stream);
    const conn = callSync(() => this.native.connect());
    pumpConnection(conn, pair.readable, pair.writable);
    this.hub.pendingSpawns++;
    this.hub.kick();
    try {
      const n = await abortable(options?.signal, (abort) => conn.handshake(abort));
      return this.adopt(n);
    } catch (e) {
      conn.close();
      throw e;
    } finally {
      this.hub.pendingSpawns--;
      this.hub.kick();
    }
  }

  /**
   * A pool of agents started from one spawn spec (each process from `options`, `restart`
   * included), handing out sessions (`pool.openSession`): one process per session or several
   * sessions per process, warm spares, a cap on live processes. Nothing is started until it
   * returns; a bad spec or `pool` setting throws `invalid_config` (`data.path` `restart` or
   * `pool`) and starts nothing. An open pool keeps the Node process alive, as a live agent does,
   * until `pool.shutdown()` or `host.close()` (which shuts every pool down).
   */
  pool(options: PoolOptions): Pool {
    if (this.closing) throw new AcpError('closed', 'the host was closed');
    const { pool: settings, ...spec } = options ?? ({} as PoolOptions);
    // The settings' paths are `pool.*`, as the core reports them.
    const pool = new Pool(this, callSync(() => this.native.pool(optionDocument(spec), optionDocument(settings ?? {}, 'pool'))));
    this.pools.add(pool);
    this.hub.openPools++;
    this.hub.kick();
    return pool;
  }

  /** @internal A pool was shut down: it keeps nothing alive any more, and its agents are gone. */
  poolClosed(pool: Pool): void {
    if (this.pools.delete(pool)) this.hub.openPools--;
    for (const agent of pool.agents.values()) this.retire(agent);
    pool.agents.clear();
    this.hub.kick();
  }

  /**
   * @internal An agent the addon started (a spawn, a relaunch after a terminal login) or one of
   * a pool (`pooled`: pulled for while its pool is open, not on its own).
   */
  adopt(n: NativeAgent, pooled = false): Agent {
    const agent = new Agent(this, n);
    const exit = this.hub.exits.get(agent.id);
    if (exit) {
      // Its last event was dispatched before the call returned.
      this.hub.exits.delete(agent.id);
      agent.markExited(exit);
    } else {
      // Running, or ended with its last event not dispatched yet: the pump goes on until that
      // event marks it exited (a supervised agent's too: the core marks its last event).
      this.agents.set(agent.id, agent);
      if (!pooled) this.hub.liveAgents.add(agent.id);
    }
    return agent;
  }

  /**
   * @internal An agent was shut down (by `shutdown`, a terminal login that replaced it, its pool
   * or the host closing): it is gone now; its last event still ends its streams.
   */
  retire(agent: Agent): void {
    agent.markExited((agent.native.exitInfo() as ExitInfo | null) ?? { exitCode: null, signal: null, stderrTail: '' });
  }

  /**
   * Answer a pending permission request from anywhere (a UI driven by `permission_requested`
   * events): an offered option id, or `null` to deny. Rejects with `not_found` for an unknown id
   * and `already_resolved` for one that was settled; an option that was not offered denies.
   *
   * Resolves with the answer's receipt (docs/EVENTS.md, "Delivery receipts"): `delivered` once
   * its line is written to the agent's stdin, `uncertain` when the pipe failed mid-write or the
   * agent did not read it within 5 s, `rejected` when the agent's stdin was closed before it.
   * A rejection's `AcpError.data.receipt` is the `rejected` receipt of the unused answer.
   * `permission_resolved` carries the same receipt.
   */
  async respondPermission(requestId: number, optionId: string | null): Promise<Receipt> {
    return JSON.parse(await call(() => this.native.respondPermission(requestId, optionId))) as Receipt;
  }

  /**
   * Answer a pending elicitation request from anywhere (a UI driven by `elicitation_requested`
   * events). Rejects with `not_found` for an unknown id and `already_resolved` for one that was
   * settled. Content that does not match the requested schema, or an answer that is not
   * `{ action, content? }`, answers the agent `cancel` and rejects with `invalid_argument`.
   * Resolves with the answer's receipt, as `respondPermission` does.
   */
  async respondElicitation(requestId: number, answer: ElicitationAnswer): Promise<Receipt> {
    let text: string | undefined;
    try {
      text = JSON.stringify(answer);
    } catch {
      text = undefined;
    }
    // Not JSON at all (undefined, a function, a cycle): the native side refuses it like any other malformed answer.
    const json = typeof text === 'string' ? text : 'null';
    return JSON.parse(await call(() => this.native.respondElicitation(requestId, json))) as Receipt;
  }

  /**
   * Shut every agent down (stdin EOF → SIGTERM → SIGKILL to its process group), fail the calls in
   * flight with `closed`, deliver the remaining events and end every event iterator. Afterwards
   * nothing of this host keeps the Node process alive. Idempotent.
   */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        // Pull while the agents shut down: their last events must not wait on a stalled reader.
        this.hub.beginDrain();
        try {
          await call(() => this.native.close());
        } finally {
          await this.hub.drainToEnd();
          // The native close shut every pool down.
          for (const pool of [...this.pools]) pool.hostClosed();
          // Whatever the stream did not say ended is gone too.
          for (const agent of [...this.agents.values()]) this.retire(agent);
          this.agents.clear();
          this.answers.settleAll();
        }
      })();
    }
    return this.closing;
  }

  [asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** What `host.connect` takes: a Duplex (a socket, an ssh2 channel) or a readable and a writable. */
