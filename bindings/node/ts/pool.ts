/**
 * Pools of agents for one spawn spec.
 */
import type { AcpEvent, ContentBlock } from './types';
import { asyncDispose, type NativePool, type NativePooledSession } from './native';
import { AcpError, abortable, call } from './errors';
import type { Host, PoolStats } from './host';
import { GONE, sessionOptions, type Agent, type CallOptions, type SessionOptions } from './agent';
import { Session, promptContent, type PromptOptions, type SessionState, type TurnResult } from './session';
import type { EventsOptions } from './streams';

/**
 * A pool of agents for one spawn spec (`host.pool(...)`): sessions are handed out on pooled
 * processes — a shared process with room, else a warm spare, else a cold start while under
 * `maxAgents`, else `busy`.
 *
 * ```ts
 * await using pool = host.pool({ command: 'my-agent', pool: { mode: 'shared', maxSessionsPerAgent: 4 } });
 * await pool.ready();                                   // the warm spares are up
 * await using session = await pool.openSession({ cwd: '/abs/project' });
 * const [a, b] = await Promise.all([session.prompt('one'), session.prompt('two')]); // queued, in order
 * ```
 */
export class Pool {
  /** @internal The pool's agents that served a session, by id (one `Agent` per process). */
  readonly agents = new Map<number, Agent>();
  private closing: Promise<void> | null = null;

  /** @internal */
  constructor(
    readonly host: Host,
    /** @internal */ readonly native: NativePool,
  ) {}

  /**
   * Open a session on a pooled process. Rejects with `busy` when the pool is at `maxAgents` and
   * no process has room, `closed` after `shutdown()`, or with the error of a process that could
   * not start (`spawn_failed`, …). Aborting (`signal`) rejects with `cancelled`; a session opened
   * anyway is released.
   */
  async openSession(options: SessionOptions): Promise<PooledSession> {
    if (this.closing) throw new AcpError('closed', 'the pool is shut down');
    const n = await abortable(options?.signal, (a) => this.native.openSession(sessionOptions(options), a));
    return new PooledSession(this.agentOf(n), n);
  }

  /** The `Agent` of a pooled session's process: one object per process. */
  private agentOf(n: NativePooledSession): Agent {
    // Forget the processes that are gone (released, evicted, dead): they are never handed out again.
    for (const [id, agent] of this.agents) {
      if (!agent.native.isGone()) continue;
      this.agents.delete(id);
      this.host.retire(agent);
    }
    const known = this.agents.get(n.agentId);
    if (known) return known;
    const agent = this.host.adopt(n.agent(), true);
    this.agents.set(agent.id, agent);
    return agent;
  }

  /**
   * Resolves once the warm spares are up (or the pool is at its cap); rejects with the error of
   * a spare that could not start (a failing spec is retried with a backoff, never in a tight
   * loop), or `closed` after `shutdown()`.
   */
  ready(options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.ready(a));
  }

  /** What the pool holds right now. */
  stats(): PoolStats {
    return this.native.stats();
  }

  /** Whether `shutdown()` was called (or the host closed). */
  get closed(): boolean {
    return this.closing !== null;
  }

  /**
   * Shut every process of the pool down (spares, idle and busy ones: their sessions end, their
   * prompts reject) and stop refilling; `openSession` rejects with `closed` afterwards. Then the
   * pool keeps nothing alive. Idempotent.
   */
  shutdown(): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        try {
          await call(() => this.native.shutdown());
        } catch (e) {
          if (!(e instanceof AcpError && e.code === 'closed')) throw e;
        } finally {
          this.host.poolClosed(this);
        }
      })();
    }
    return this.closing;
  }

  /** @internal The host closed: its native close shut this pool down. */
  hostClosed(): void {
    this.closing ??= Promise.resolve();
    this.host.poolClosed(this);
  }

  /** `await using pool = host.pool(...)`: shuts the pool down at the end of the scope. */
  [asyncDispose](): Promise<void> {
    return this.shutdown();
  }
}

/**
 * A session handed out by a pool. Its prompts queue: a prompt while another of this session runs
 * waits for it (FIFO, in call order) instead of rejecting with `busy`. Give it back with
 * `release()` (or `await using`); one that is garbage-collected unreleased is released then.
 */
export class PooledSession {
  readonly id: string;
  /**
   * The underlying session: `state`, modes, config options, models, `events()`. Its own
   * `prompt` bypasses the queue (and rejects with `busy` while a turn runs).
   */
  readonly session: Session;
  private releaseCalled = false;

  /** @internal */
  constructor(
    /** The pooled agent (process) serving this session; shared with other sessions in `shared` mode. */
    readonly agent: Agent,
    /** @internal */ readonly native: NativePooledSession,
  ) {
    this.id = native.id;
    this.session = new Session(agent, native.session());
  }

  /** A snapshot of the session's materialised state (as `session.state`). */
  get state(): SessionState {
    return this.native.state() as SessionState;
  }

  /** `release()` was called. */
  get released(): boolean {
    return this.releaseCalled;
  }

  /**
   * Send a prompt (as `Session.prompt`) once the prompts called before it on this session have
   * ended, and wait for its turn to end. Rejects with `cancelled` when `cancel()` is called while
   * it is queued (it is never sent), with `closed` after `release()`. Aborting `signal` withdraws
   * it while queued (nothing is sent) or abandons its running turn (the agent gets
   * `session/cancel`); either way it rejects with `cancelled` at once. To stop the running turn
   * and get the agent's answer (stop reason `cancelled`), use `cancel()`.
   */
  prompt(input: string | ContentBlock | (string | ContentBlock)[], options: PromptOptions = {}): Promise<TurnResult> {
    const content = promptContent(input);
    // Settles after the turn's events reached every stream of the session (the ordering contract).
    return this.agent.host.hub.prompt(this.agent.id, this.id, () => abortable(options.signal, (a) => this.native.prompt(content, a)) as Promise<TurnResult>);
  }

  /**
   * `session/cancel` for the running turn (it ends with stop reason `cancelled`), and every
   * prompt queued before this call rejects with `cancelled` without being sent. Prompts called
   * afterwards run as usual.
   */
  cancel(): Promise<void> {
    return call(() => this.native.cancel());
  }

  /**
   * Give the session back: it is closed on the agent (`session/close`, when the agent supports
   * it), the pool counts one session less on its process, and in `process-per-session` mode the
   * process is shut down. Prompts called afterwards reject with `closed`. Idempotent.
   */
  release(): Promise<void> {
    this.releaseCalled = true;
    return call(() => this.native.release());
  }

  /** This session's events (as `session.events()`: from its history's oldest event, whenever called). */
  events(options: EventsOptions = {}): AsyncIterableIterator<AcpEvent> {
    return this.session.events(options);
  }

  /**
   * `await using session = await pool.openSession(...)`: released at the end of the scope. Never
   * throws for a session whose agent is gone, a pool shut down or a closed host.
   */
  async [asyncDispose](): Promise<void> {
    try {
      await this.release();
    } catch (e) {
      if (!(e instanceof AcpError && GONE.has(e.code))) throw e;
    }
  }
}

