/**
 * The event streams: each `host.events()`, `agent.events()` and `session.events()` is an async
 * iterator over one reader of the core's `EventHub` (docs/EVENTS.md, "Readers"), pulled in
 * batches. Where a stream starts, when it ends, its bounds and when a prompt's answer may settle
 * are the hub's rule; this file only translates (batches into events, `missed` into `dropped`,
 * errors into `AcpError`s) and decides when to pull, so that an idle stream keeps no native call
 * pending (a pending one keeps the Node process alive).
 *
 * The host's `EventEmitter` reads the hub's host reader, pulled while something can produce
 * events (a live agent, a spawn or connect in flight, an open pool, a closing host).
 */

import type * as NativeTypes from '../index';
import type { ExitInfo } from './index';
import type { AcpEvent } from './types';
import { parseHostJson } from './json';

type NativeHost = NativeTypes.NativeHost;
type NativeEventReader = NativeTypes.NativeEventReader;

/** Options of an event subscription. */
export interface EventsOptions {
  /** Ends the iteration when aborted. */
  signal?: AbortSignal;
  /**
   * Events buffered for this subscriber in JS before it stops pulling (the core's reader then
   * holds the next ones within its bounds, `eventCapacity`/`eventQueueBytes`, and past them the
   * host stops reading the agents: backpressure). Default 8192.
   */
  highWaterMark?: number;
}

const BATCH = 4096;
const DEFAULT_HIGH_WATER = 8192;

/**
 * How many events a session's history keeps by default (the host option `earlyUpdateLimit`,
 * whose default this is): a session stream opened later starts at the oldest one kept, and one
 * opened after the history overflowed says how many it left out (`dropped` on its first event).
 */
export const SESSION_HISTORY_LIMIT = 65_536;

type Waiter = { resolve: (r: IteratorResult<AcpEvent>) => void; reject: (e: unknown) => void };

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
 * Pulls one reader while `want()` holds, handing each batch to `take`, and `end(error)` once the
 * reader ended (`null`) or failed. `kick()` after anything that changes `want()`.
 */
class Puller {
  private pulling = false;

  constructor(
    private readonly reader: NativeEventReader,
    private readonly want: () => boolean,
    private readonly take: (evs: AcpEvent[]) => void,
    private readonly end: (error: unknown) => void,
    /** Whether only the events that end or restart an agent are wanted now. */
    private readonly lifecycleOnly: () => boolean = () => false,
  ) {}

  /** Pull if wanted; stop a pending pull that is not (a pending napi call keeps Node alive). */
  kick(): void {
    if (this.pulling) {
      if (!this.want()) this.reader.interrupt();
    } else if (this.want()) void this.run();
  }

  private async run(): Promise<void> {
    this.pulling = true;
    try {
      while (this.want()) {
        const text = await this.reader.nextBatch(BATCH, this.lifecycleOnly());
        if (text === null) {
          this.end(null);
          break;
        }
        // `""`: interrupted, decide again.
        if (text !== '') this.take(decodeBatch(text));
      }
    } catch (e) {
      this.end(e);
    } finally {
      this.pulling = false;
    }
    // Wanted again while the loop was winding down.
    this.kick();
  }
}

/**
 * One stream: a hub reader and the events pulled from it not yet taken. It pulls while its
 * consumer waits, and ahead while the hub is eager (up to `highWater`; past it once a prompt's
 * answer came and waits for its turn's events to be handed on).
 */
export class Subscription implements AsyncIterableIterator<AcpEvent> {
  private queue: AcpEvent[] = [];
  private head = 0;
  private waiter: Waiter | null = null;
  private done = false;
  private error: unknown = null;
  private first = true;
  private readonly puller: Puller | null = null;
  private readonly onAbort?: () => void;

  constructor(
    private readonly hub: EventHub,
    /** `null`: events are disabled, the stream is over at once. */
    private readonly reader: NativeEventReader | null,
    readonly highWater: number,
    private readonly signal?: AbortSignal,
  ) {
    if (!reader || signal?.aborted) {
      this.end();
      return;
    }
    const take = (evs: AcpEvent[]) => {
      if (this.first && evs.length > 0) {
        this.first = false;
        const missed = reader.missed;
        if (missed > 0) evs[0] = { ...evs[0], dropped: missed } as AcpEvent;
      }
      this.push(evs);
    };
    this.puller = new Puller(reader, () => this.wants(), take, (e) => this.end(e === null ? null : hub.mapError(e)));
    hub.subs.add(this);
    if (signal) {
      this.onAbort = () => this.close();
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
    this.kick();
  }

  private get buffered(): number {
    return this.queue.length - this.head;
  }

  /** Whether to pull now. A full stream of a closing host ends instead (it must not hold the shutdown). */
  private wants(): boolean {
    if (this.done) return false;
    // A settling prompt's turn is in the core's bounded queues already: taken past the mark.
    if (this.waiter || this.hub.settling) return true;
    if (!this.hub.eager) return false;
    if (this.buffered < this.highWater) return true;
    // What it buffered stays readable.
    if (this.hub.draining) this.end();
    return false;
  }

  kick(): void {
    this.puller?.kick();
  }

  private push(evs: AcpEvent[]): void {
    if (this.done) return;
    let i = 0;
    if (this.waiter && evs.length > 0) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve({ value: evs[0], done: false });
      i = 1;
    }
    for (; i < evs.length; i++) this.queue.push(evs[i]);
  }

  private end(error: unknown = null): void {
    if (this.done) return;
    this.done = true;
    this.error = error;
    if (this.waiter && this.buffered === 0) {
      const w = this.waiter;
      this.waiter = null;
      if (error) w.reject(error);
      else w.resolve({ value: undefined, done: true });
    }
    if (this.signal && this.onAbort) this.signal.removeEventListener('abort', this.onAbort);
    this.hub.subs.delete(this);
    // The hub no longer waits for it (a pending pull comes back with the end).
    this.reader?.close();
  }

  next(): Promise<IteratorResult<AcpEvent>> {
    if (this.head < this.queue.length) {
      const value = this.queue[this.head++];
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
      } else if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      if (this.hub.eager) this.kick();
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
      this.kick();
    });
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
 * The host's streams: it makes them, tells them when to pull ahead, and pumps the host reader
 * into the `EventEmitter` (which also tells the facade that an agent is gone).
 */
export class EventHub {
  /** @internal The open streams. */
  readonly subs = new Set<Subscription>();
  /** Prompts waiting for their turn (or for its events to be handed on). */
  private prompts = 0;
  /** Of them, those whose answer came and wait for its events to be handed on. */
  private settlingPrompts = 0;
  draining = false;
  private drainWaiters: Array<() => void> = [];

  /** Pumps the emitter's reader (`null`: events are disabled). */
  private readonly pump: Puller | null;
  private ended = false;
  pendingSpawns = 0;
  /** Pools not shut down: their processes (spares too) come and go without a spawn call. */
  openPools = 0;
  /** Agents whose last event the emitter has not had yet. */
  readonly liveAgents = new Set<number>();
  /** How each agent ended (`agent_exited` data), for agents whose spawn had not returned yet. */
  readonly exits = new Map<number, ExitInfo>();

  constructor(
    private readonly nativeHost: NativeHost,
    private readonly dispatch: (evs: AcpEvent[]) => void,
    readonly mapError: (e: unknown) => unknown,
    /** Whether the emitter has no listener (then it takes only what ends or restarts agents). */
    unheard: () => boolean = () => false,
  ) {
    const reader = nativeHost.hostReader();
    this.pump =
      reader && new Puller(reader, () => this.shouldPump(), (evs) => this.emit(evs), () => this.finish(reader), unheard);
    this.ended = reader === null;
  }

  /**
   * Whether the streams pull ahead of their consumers (up to their mark): while something can
   * produce events (as the emitter pumps) or a prompt is in flight. Otherwise a stream pulls only
   * while its consumer waits, so an idle stream keeps no native call pending.
   */
  get eager(): boolean {
    return this.prompts > 0 || this.shouldPump();
  }

  /** Whether the streams pull ahead past their mark. */
  get settling(): boolean {
    return this.settlingPrompts > 0;
  }

  private make(reader: NativeEventReader | null, opts: EventsOptions): Subscription {
    return new Subscription(this, reader, Math.max(1, opts.highWaterMark ?? DEFAULT_HIGH_WATER), opts.signal);
  }

  /** Every event from now on. */
  subscribe(opts: EventsOptions = {}): Subscription {
    return this.make(this.nativeHost.liveReader(null), opts);
  }

  /** Every event of `agent` from now on, until its last one. */
  subscribeAgent(agent: number, opts: EventsOptions = {}): Subscription {
    return this.make(this.nativeHost.liveReader(agent), opts);
  }

  /** The events of one session, from the oldest its history holds, until its last one. */
  subscribeSession(agent: number, session: string, opts: EventsOptions = {}): Subscription {
    return this.make(this.nativeHost.sessionReader(agent, session), opts);
  }

  /** An agent's last event: `agent_failed`, or an `agent_exited` after which no restart comes. */
  isLast(ev: AcpEvent): boolean {
    return ev.kind === 'agent_failed' || (ev.kind === 'agent_exited' && (ev.data as { restart?: boolean }).restart !== true);
  }

  /**
   * Run a prompt and settle once its turn's events were handed on by every open stream of the
   * session (the core's turn delivery; `events_stalled` when nothing moves for
   * `eventStallTimeoutMs`). Meanwhile the streams pull ahead, so a stream nobody iterates yet
   * takes the turn's events.
   */
  async prompt<T extends { turn: number }>(agent: number, session: string, run: () => Promise<T>): Promise<T> {
    this.prompts++;
    this.kickAll();
    try {
      const turn = await run();
      this.settlingPrompts++;
      this.kickAll();
      try {
        await this.nativeHost.turnDelivered(agent, session, turn.turn);
      } catch (e) {
        throw this.mapError(e);
      } finally {
        this.settlingPrompts--;
      }
      return turn;
    } finally {
      this.prompts--;
      this.kickAll();
    }
  }

  private kickAll(): void {
    for (const s of [...this.subs]) s.kick();
  }

  private shouldPump(): boolean {
    return !this.ended && (this.draining || this.pendingSpawns > 0 || this.openPools > 0 || this.liveAgents.size > 0);
  }

  /** After a change of what can produce events: pull, or stop pulls nothing needs. */
  kick(): void {
    this.pump?.kick();
    this.kickAll();
  }

  private emit(evs: AcpEvent[]): void {
    let gone = false;
    for (const ev of evs) {
      if (!this.isLast(ev)) continue;
      gone = this.liveAgents.delete(ev.agent) || gone;
      if (ev.kind === 'agent_exited') this.exits.set(ev.agent, ev.data as ExitInfo);
    }
    if (gone) this.kickAll();
    try {
      this.dispatch(evs);
    } catch (e) {
      // A throwing 'event' listener behaves as in any EventEmitter (an uncaught exception);
      // it must not end the pump.
      queueMicrotask(() => {
        throw e;
      });
    }
  }

  private finish(reader: NativeEventReader): void {
    this.ended = true;
    reader.close();
    for (const w of this.drainWaiters) w();
    this.drainWaiters = [];
  }

  /** From now on pull whatever arrives, whoever waits: the host is closing. */
  beginDrain(): void {
    this.draining = true;
    this.kick();
  }

  /** Resolves when the emitter's reader ended (after the native `close`). */
  drainToEnd(): Promise<void> {
    this.beginDrain();
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      this.drainWaiters.push(resolve);
      this.kick();
    });
  }
}
