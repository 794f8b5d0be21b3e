/**
 * The event streams: one pump (`EventHub`) between the addon's event queue and the subscribers
 * (`host.events()`, `agent.events()`, `session.events()`), and what a session stream needs to
 * start at the session's beginning (its opening history).
 *
 * Why the opening history: `session_opened`, the updates an agent sends before its
 * `session/new` response, and a `session/load` replay are dispatched while the open call is in
 * flight, before the caller has a `Session` to subscribe with. The hub keeps them (bounded) so
 * that `session.events()` can yield them before the live events, without a gap or a duplicate.
 */

import type * as NativeTypes from '../index';
import type { ExitInfo } from './index';
import type { AcpEvent } from './types';
import { parseHostJson } from './json';

type NativeHost = NativeTypes.NativeHost;

/** Options of an event subscription. */
export interface EventsOptions {
  /** Ends the iteration when aborted. */
  signal?: AbortSignal;
  /**
   * Events buffered for this subscriber before the host stops pulling from the agents
   * (backpressure: the agent's stdout is then not read). Default 8192. A turn's events are
   * queued in every stream before its `prompt()` settles, so a settling prompt pulls them past
   * this mark (they are held by the core's bounded queue already, `eventCapacity`).
   */
  highWaterMark?: number;
}

const BATCH = 4096;
const DEFAULT_HIGH_WATER = 8192;

/**
 * Events of one session kept for its `session.events()` streams while it is open, so a stream
 * opened at any time starts at its `session_opened`: the core's own bound on updates held back
 * while a session opens (`earlyUpdateLimit`'s default), so a session whose whole opening the core
 * delivered is never cut here. Past it the oldest after `session_opened` are dropped, and a
 * stream opened later is told exactly how many (`dropped` on its first event).
 */
export const SESSION_HISTORY_LIMIT = 65_536;

type Waiter = { resolve: (r: IteratorResult<AcpEvent>) => void; reject: (e: unknown) => void };
type Predicate = (ev: AcpEvent) => boolean;

type Envelope = [at: string, agent: number, session: string | null, turn: number | null, kind: string, replay: boolean];
interface Batch {
  seq: number;
  envs: Envelope[];
  idx: number[];
  seqs?: number[];
  data: unknown[];
}

/**
 * Rebuild the events of one native batch (columnar: distinct envelopes + per-event index and
 * payload) as plain objects with exactly the docs/EVENTS.md shape and key order. Text that
 * cannot be decoded (never, from this host) ends the streams with an `AcpError` `protocol`.
 */
export function decodeBatch(text: string): AcpEvent[] {
  const b = parseHostJson<Batch>(text, 'an event batch');
  const n = b.idx.length;
  const out = new Array<AcpEvent>(n);
  const { envs, idx, data, seqs } = b;
  for (let i = 0; i < n; i++) {
    const [at, agent, session, turn, kind, replay] = envs[idx[i]];
    const seq = seqs ? seqs[i] : b.seq + i;
    // The payload is the host's JSON as is: its type is the schema's promise, not checked here.
    out[i] = (
      session === null
        ? turn === null
          ? { seq, at, agent, kind, replay, data: data[i] }
          : { seq, at, agent, turn, kind, replay, data: data[i] }
        : turn === null
          ? { seq, at, agent, session, kind, replay, data: data[i] }
          : { seq, at, agent, session, turn, kind, replay, data: data[i] }
    ) as AcpEvent;
  }
  return out;
}

/**
 * One subscriber's queue. Registered synchronously when created, so an iterator made before a
 * `spawn` sees every event of that agent. Pulling (calling `next`) is what lets the host read on.
 */
export class Subscription implements AsyncIterableIterator<AcpEvent> {
  private queue: AcpEvent[] = [];
  private head = 0;
  private waiter: Waiter | null = null;
  private done = false;
  private error: unknown = null;
  private readonly onAbort?: () => void;

  constructor(
    private readonly hub: EventHub,
    /** Which events this subscriber gets (`null`: all). */
    readonly filter: Predicate | null,
    /** The event after which the stream ends (yielded when `filter` accepts it). */
    readonly until: Predicate | null,
    readonly highWater: number,
    private readonly signal?: AbortSignal,
    /** The agent whose end (also one no event marks: a supervised agent shut down) ends it. */
    readonly agent: number | null = null,
  ) {
    if (signal) {
      if (signal.aborted) this.done = true;
      else {
        this.onAbort = () => this.close();
        signal.addEventListener('abort', this.onAbort, { once: true });
      }
    }
  }

  get waiting(): boolean {
    return this.waiter !== null;
  }

  get full(): boolean {
    return this.queue.length - this.head >= this.highWater;
  }

  get finished(): boolean {
    return this.done;
  }

  /** Called by the hub with every event of a batch: takes its own, ends after `until`. */
  offer(evs: AcpEvent[]): void {
    if (this.done) return;
    let part = evs;
    let stop = false;
    if (this.until) {
      const i = evs.findIndex(this.until);
      if (i >= 0) {
        part = evs.slice(0, i + 1);
        stop = true;
      }
    }
    this.push(this.filter === null ? part : part.filter(this.filter));
    if (stop) this.end();
  }

  /** Queue events (already this subscriber's). */
  push(evs: AcpEvent[]): void {
    if (this.done || evs.length === 0) return;
    let i = 0;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve({ value: evs[0], done: false });
      i = 1;
    }
    for (; i < evs.length; i++) this.queue.push(evs[i]);
  }

  end(error: unknown = null): void {
    if (this.done) return;
    this.done = true;
    this.error = error;
    this.settleWaiter();
    this.detach();
  }

  private settleWaiter(): void {
    if (!this.waiter || this.head < this.queue.length) return;
    const w = this.waiter;
    this.waiter = null;
    if (this.error) w.reject(this.error);
    else w.resolve({ value: undefined, done: true });
  }

  private detach(): void {
    if (this.signal && this.onAbort) this.signal.removeEventListener('abort', this.onAbort);
    this.hub.unsubscribe(this);
  }

  next(): Promise<IteratorResult<AcpEvent>> {
    if (this.head < this.queue.length) {
      const value = this.queue[this.head++];
      if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
        this.hub.kick();
      } else if (this.queue.length - this.head === this.highWater >> 1) {
        this.hub.kick();
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.done) {
      if (this.error) {
        const e = this.error;
        this.error = null;
        return Promise.reject(e);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.hub.kick();
    });
  }

  /** Drain what is buffered right now without waiting (for batch consumers). */
  takeBuffered(): AcpEvent[] {
    const out = this.head === 0 ? this.queue : this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    this.hub.kick();
    return out;
  }

  /** Stop the subscription (what `break` in a `for await` does). */
  close(): void {
    this.queue = [];
    this.head = 0;
    this.end();
  }

  return(): Promise<IteratorResult<AcpEvent>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<AcpEvent> {
    return this;
  }
}

/**
 * The events of one session from its first one on, bounded: past `limit` the oldest after the
 * first are dropped (and counted), so what is kept is always contiguous with the live events.
 */
class SessionLog {
  private first: AcpEvent | null = null;
  private rest: AcpEvent[] = [];
  private head = 0;
  dropped = 0;
  closed = false;

  constructor(private readonly limit: number) {}

  get size(): number {
    return (this.first ? 1 : 0) + this.rest.length - this.head;
  }

  add(ev: AcpEvent): void {
    if (ev.kind === 'session_closed') this.closed = true;
    if (!this.first) {
      this.first = ev;
      return;
    }
    this.rest.push(ev);
    if (this.size > this.limit) {
      this.head++;
      this.dropped++;
      if (this.head >= 1024 && this.head * 2 >= this.rest.length) {
        this.rest = this.rest.slice(this.head);
        this.head = 0;
      }
    }
  }

  /** The kept events; the first says how many after it were dropped (`dropped`), if any. */
  snapshot(): AcpEvent[] {
    if (!this.first) return [];
    const first = this.dropped > 0 ? { ...this.first, dropped: this.dropped } : this.first;
    return [first, ...this.rest.slice(this.head)];
  }
}

/**
 * An open call (`session/new`, load, resume, fork) in flight on one agent, or on whichever agent
 * a pool picks (`agent: null`).
 */
export interface Opening {
  readonly agent: number | null;
  /** Per session not yet known to be open (by `sessionKey`): its events seen while the call is in flight. */
  readonly logs: Map<string, SessionLog>;
}

const sessionKey = (agent: number, session: string): string => `${agent}\u0000${session}`;
const turnKey = (agent: number, session: string, turn: number): string => `${agent}\u0000${session}\u0000${turn}`;
const TURNS_KEPT = 4096;

/**
 * The one pump between the addon's event stream and the subscribers. It pulls batches only while
 * someone needs them (a live agent, an open pool or a waiting subscriber) and no subscriber is
 * full, so a slow consumer slows the agent down instead of growing memory, and an idle host keeps
 * no native call pending (nothing holds the Node event loop open).
 */
export class EventHub {
  private readonly subs = new Set<Subscription>();
  private pumping = false;
  private ended = false;
  private endError: unknown = null;
  pendingSpawns = 0;
  /** Pools not shut down: their processes (spares too) come and go without a spawn call. */
  openPools = 0;
  /** Agents that are not gone: running, or supervised and between a crash and its restart. */
  readonly liveAgents = new Set<number>();
  /**
   * Agents spawned with a restart policy: their `agent_exited` is not their end (`agent_failed`,
   * or a shutdown, is). Known from `spawn` on; an agent is taken for unsupervised before.
   */
  readonly supervised = new Set<number>();
  /** How each agent ended (`agent_exited` data), for agents whose spawn had not returned yet. */
  readonly exits = new Map<number, ExitInfo>();
  /** Agents that are gone (their last event was dispatched): their streams end at once. */
  private readonly exitedAgents = new Set<number>();
  /**
   * Supervised agents that were shut down: no event marks their end, so once everything queued
   * until then was dispatched (a pull that does not wait came back empty) their streams end.
   */
  private readonly fences = new Set<number>();
  draining = false;
  private drainWaiters: Array<() => void> = [];

  /** Open calls in flight. */
  private readonly openings = new Set<Opening>();
  /** Sessions an open call returned that have not closed (by `sessionKey`). */
  private readonly openSessions = new Set<string>();
  /** The history of each open session (from its `session_opened`, bounded by `historyLimit`). */
  private readonly histories = new Map<string, SessionLog>();
  /** @internal How many events a session's history keeps (tests lower it). */
  historyLimit = SESSION_HISTORY_LIMIT;
  /**
   * Turns whose `turn_ended` was dispatched and whose prompt has not asked yet (by `turnKey`;
   * bounded: a turn nobody prompted through this facade is forgotten after `TURNS_KEPT` more).
   */
  private readonly endedTurns = new Set<string>();
  /** Prompts waiting for their turn's `turn_ended` to reach the subscribers. */
  private readonly turnWaiters = new Map<string, () => void>();

  constructor(
    private readonly nativeHost: NativeHost,
    private readonly dispatch: (evs: AcpEvent[]) => void,
    private readonly mapError: (e: unknown) => unknown,
  ) {}

  subscribe(
    filter: Predicate | null,
    opts: EventsOptions = {},
    until: Predicate | null = null,
    history: AcpEvent[] = [],
    ended = false,
    agent: number | null = null,
  ): Subscription {
    const sub = new Subscription(this, filter, until, Math.max(1, opts.highWaterMark ?? DEFAULT_HIGH_WATER), opts.signal, agent);
    sub.push(history);
    if (this.ended) sub.end(this.endError);
    else if (ended) sub.end();
    else if (!sub.finished) this.subs.add(sub);
    return sub;
  }

  /**
   * Whether `ev` is the last event of its agent: its `agent_exited`, or for a supervised agent
   * `agent_failed` (a supervised agent's `agent_exited` is followed by a restart).
   */
  isLast(ev: AcpEvent): boolean {
    return ev.kind === 'agent_failed' || (ev.kind === 'agent_exited' && !this.supervised.has(ev.agent));
  }

  /** A `session_closed` that does not end the session: its supervised agent died and reopens it. */
  private survives(ev: AcpEvent): boolean {
    return ev.kind === 'session_closed' && this.supervised.has(ev.agent) && (ev.data as { reason?: string }).reason === 'agent_exited';
  }

  /**
   * Every event of `agent`, ending after its last one (`agent_exited`; for a supervised agent
   * `agent_failed` or its shutdown), at once when that was dispatched.
   */
  subscribeAgent(agent: number, opts: EventsOptions = {}): Subscription {
    const mine = (ev: AcpEvent) => ev.agent === agent;
    const last = (ev: AcpEvent) => ev.agent === agent && this.isLast(ev);
    return this.subscribe(mine, opts, last, [], this.exitedAgents.has(agent), agent);
  }

  /**
   * The events of one session: its opening history while it is kept, then the live ones, ending
   * after its `session_closed` (or its agent's end; at once when the session already closed). A
   * supervised agent's session lives on across restarts: its stream ends with its
   * `session_lost`, not with the `session_closed` of a crash.
   */
  subscribeSession(agent: number, session: string, opts: EventsOptions = {}): Subscription {
    const key = sessionKey(agent, session);
    const mine = (ev: AcpEvent) => ev.session === session && ev.agent === agent;
    const last = (ev: AcpEvent) =>
      ev.agent === agent &&
      (this.isLast(ev) ||
        (ev.session === session && (ev.kind === 'session_lost' || (ev.kind === 'session_closed' && !this.survives(ev)))));
    const history = this.histories.get(key)?.snapshot() ?? [];
    return this.subscribe(mine, opts, last, history, !this.openSessions.has(key), agent);
  }

  /**
   * @internal `spawn` returned a supervised agent that is not gone. Its `agent_exited` may have
   * been dispatched already, taken for its end: a restart follows, it is live again.
   */
  adoptSupervised(agent: number, live = true): void {
    this.supervised.add(agent);
    this.exits.delete(agent);
    this.exitedAgents.delete(agent);
    // A pooled agent is pulled for while its pool is open, not on its own.
    if (live) this.liveAgents.add(agent);
  }

  /**
   * @internal A supervised agent was shut down (no event marks its end): its streams end once
   * everything queued until now was dispatched.
   */
  retire(agent: number): void {
    this.liveAgents.delete(agent);
    if (this.ended || this.exitedAgents.has(agent)) return;
    this.fences.add(agent);
    // A pull waiting for more must come back: the next one only takes what is queued.
    if (this.pumping) this.nativeHost.interruptWait();
    this.kick();
  }

  /** Everything queued before these agents were retired was dispatched: they are gone. */
  private passFences(agents: number[]): void {
    for (const agent of agents) {
      if (!this.fences.delete(agent)) continue;
      this.forgetAgent(agent);
      for (const s of [...this.subs]) if (s.agent === agent) s.end();
    }
  }

  /** An open call on `agent` (`null`: any, a pool's) is about to be sent: keep what its session will need. */
  beginOpening(agent: number | null): Opening {
    const op: Opening = { agent, logs: new Map() };
    this.openings.add(op);
    return op;
  }

  /**
   * The open call settled: with the session id it returned, that session's events seen so far
   * become its opening history (recorded on while it is open); `null` (it failed):
   * nothing is kept. Called in the same tick as the `Session` is made, so nothing falls between.
   */
  endOpening(op: Opening, session: string | null, agent: number | null = op.agent): void {
    if (!this.openings.delete(op) || session === null || agent === null) return;
    const key = sessionKey(agent, session);
    const log = op.logs.get(key) ?? new SessionLog(this.historyLimit);
    op.logs.clear();
    // Gone already (closed, or its agent exited, before the caller got it): nothing to stream.
    if (this.ended || log.closed || this.exitedAgents.has(agent)) return;
    this.openSessions.add(key);
    this.histories.set(key, log);
  }

  /** @internal Drop a session's opening history (its `Session` was disposed). */
  releaseHistory(agent: number, session: string): void {
    this.histories.delete(sessionKey(agent, session));
  }

  /** @internal Events held for session streams (opening histories and open calls in flight). */
  get retainedEvents(): number {
    let n = 0;
    for (const h of this.histories.values()) n += h.size;
    for (const op of this.openings) for (const l of op.logs.values()) n += l.size;
    return n;
  }

  /** Keep the opening histories and the open-session set current with a dispatched batch. */
  private record(evs: AcpEvent[]): void {
    // The common case (a turn streaming, nothing opening) costs a few comparisons per event.
    const keeping = this.histories.size > 0 || this.openings.size > 0;
    for (const ev of evs) {
      if (this.isLast(ev)) {
        this.forgetAgent(ev.agent);
        continue;
      }
      if (!keeping && ev.kind !== 'session_closed' && ev.kind !== 'session_lost') continue;
      const session = ev.session;
      if (session === undefined) continue;
      const key = sessionKey(ev.agent, session);
      const history = this.histories.get(key);
      history?.add(ev);
      if (ev.kind === 'session_lost' || (ev.kind === 'session_closed' && !this.survives(ev))) {
        this.histories.delete(key);
        this.openSessions.delete(key);
      } else if (ev.kind === 'session_closed') {
        // Closed by the crash of its supervised agent: reopened (or lost) by the restart.
      } else if (this.openings.size > 0 && !this.openSessions.has(key)) {
        // Not a session anybody holds yet: maybe the one an open call in flight will return.
        for (const op of this.openings) {
          if (op.agent !== null && op.agent !== ev.agent) continue;
          let log = op.logs.get(key);
          if (!log) op.logs.set(key, (log = new SessionLog(this.historyLimit)));
          log.add(ev);
        }
      }
    }
  }

  private forgetAgent(agent: number): void {
    this.exitedAgents.add(agent);
    this.liveAgents.delete(agent);
    const prefix = `${agent}\u0000`;
    for (const key of this.histories.keys()) if (key.startsWith(prefix)) this.histories.delete(key);
    for (const key of this.openSessions) if (key.startsWith(prefix)) this.openSessions.delete(key);
    for (const op of this.openings) {
      if (op.agent === agent) op.logs.clear();
      else if (op.agent === null) for (const key of op.logs.keys()) if (key.startsWith(prefix)) op.logs.delete(key);
    }
  }

  unsubscribe(sub: Subscription): void {
    if (this.subs.delete(sub)) queueMicrotask(() => this.kick());
  }

  private shouldPull(): boolean {
    if (this.ended) return false;
    // A prompt waits for its turn's events to reach the streams. They, and everything queued
    // before them, are in the core's queue already (bounded by `eventCapacity` and
    // `eventQueueBytes`), so pulling them past the high-water marks buffers no more than that;
    // not pulling would leave the prompt waiting on a consumer that waits on the prompt.
    if (this.turnWaiters.size > 0) return true;
    let waiting =
      this.draining || this.pendingSpawns > 0 || this.openPools > 0 || this.liveAgents.size > 0 || this.fences.size > 0 || this.turnWaiters.size > 0;
    let stalled: Subscription[] | null = null;
    for (const s of this.subs) {
      if (s.full) {
        // While closing, a subscriber that stopped pulling must not block the shutdown: its
        // subscription ends (what it buffered stays readable) and the others read on.
        if (!this.draining) return false;
        (stalled ??= []).push(s);
      } else if (s.waiting) waiting = true;
    }
    if (stalled) for (const s of stalled) s.end();
    return waiting;
  }

  kick(): void {
    if (this.pumping) {
      // A pull still waits natively although nothing is left to wait for (e.g. the last agent
      // exited while a spawn was pending): end it, or the pending call keeps Node alive.
      if (!this.shouldPull()) this.nativeHost.interruptWait();
      return;
    }
    if (!this.shouldPull()) return;
    void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.shouldPull()) {
        // Retired agents: take only what is queued, until nothing is (then they are gone).
        const fenced = this.fences.size > 0 ? [...this.fences] : null;
        const text = await this.nativeHost.nextEvents(BATCH, fenced === null);
        if (text === null) {
          this.finish(null);
          break;
        }
        if (text === '') {
          // Nothing queued (a pull that does not wait), or interrupted: decide again whether to wait.
          if (fenced) this.passFences(fenced);
          continue;
        }
        const evs = decodeBatch(text);
        for (const ev of evs) {
          if (!this.isLast(ev)) continue;
          this.liveAgents.delete(ev.agent);
          // A supervised agent's exit is its agent's (`agent.exitInfo`), not an event's.
          if (ev.kind === 'agent_exited') this.exits.set(ev.agent, ev.data as ExitInfo);
        }
        try {
          this.dispatch(evs);
        } catch (e) {
          // A throwing 'event' listener behaves as in any EventEmitter (an uncaught exception);
          // it must not end the stream for everyone else.
          queueMicrotask(() => {
            throw e;
          });
        }
        // After the emitter (a stream opened by a listener gets this batch live, not twice) and
        // before the subscribers, in one tick: a history snapshot plus what follows has no gap.
        this.record(evs);
        for (const s of this.subs) s.offer(evs);
        // Last: the prompts of the turns that ended here settle with every event of them queued.
        this.turnsEnded(evs);
      }
    } catch (e) {
      this.finish(this.mapError(e));
    } finally {
      this.pumping = false;
    }
  }

  /**
   * Resolves once the `turn_ended` of `turn` was handed to every subscriber (and the emitter): a
   * prompt settles after that, so the turn's events are already queued in every stream. The core
   * queues a turn's events before it answers the prompt, so the pump only has to reach it (it
   * waits for a slow consumer like any pull: nothing is dropped or reordered). At once when the
   * stream ended (or events are off).
   */
  turnDelivered(agent: number, session: string, turn: number): Promise<void> {
    const key = turnKey(agent, session, turn);
    if (this.ended || this.endedTurns.delete(key)) return Promise.resolve();
    return new Promise((resolve) => {
      this.turnWaiters.set(key, resolve);
      this.kick();
    });
  }

  private turnsEnded(evs: AcpEvent[]): void {
    for (const ev of evs) {
      if (ev.kind !== 'turn_ended' || ev.session === undefined || ev.turn === undefined) continue;
      const key = turnKey(ev.agent, ev.session, ev.turn);
      const waiter = this.turnWaiters.get(key);
      if (waiter) {
        this.turnWaiters.delete(key);
        waiter();
        continue;
      }
      this.endedTurns.add(key);
      if (this.endedTurns.size > TURNS_KEPT) {
        for (const old of this.endedTurns) {
          this.endedTurns.delete(old);
          break;
        }
      }
    }
  }

  private finish(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.endError = error;
    for (const s of [...this.subs]) s.end(error);
    this.subs.clear();
    this.fences.clear();
    this.histories.clear();
    this.openSessions.clear();
    for (const op of this.openings) op.logs.clear();
    for (const w of this.drainWaiters) w();
    this.drainWaiters = [];
    for (const w of this.turnWaiters.values()) w();
    this.turnWaiters.clear();
  }

  /** From now on pull whatever arrives, whoever waits: the host is closing. */
  beginDrain(): void {
    this.draining = true;
    this.kick();
  }

  /** Resolves when the native stream ended (after the native `close`). */
  drainToEnd(): Promise<void> {
    if (this.ended) return Promise.resolve();
    this.beginDrain();
    return new Promise((resolve) => {
      this.drainWaiters.push(resolve);
      this.kick();
    });
  }
}
