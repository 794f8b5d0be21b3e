// A consumer of the typed API, type-checked (never run) by test/types.test.mjs with
// `tsc --noEmit -p test/types/tsconfig.json`. Each `@ts-expect-error` proves a narrowing is real:
// were `data` (or any other type here) `any`, the line would compile and tsc would fail on the
// unused directive.
import { Host, Pool, PooledSession, Registry, Session } from 'acp-host';
import type {
  AcpEvent,
  Agent,
  SteerResult,
  AcpEventOf,
  ContentBlock,
  EventKind,
  LogLevel,
  LogRecord,
  PermissionRequest,
  PoolSettings,
  PoolStats,
  Progress,
  ReplayOptions,
  RestartPolicy,
  SpawnOptions,
  SessionState,
  SessionUpdate,
  SessionUpdateEventOf,
  ToolCall,
  TurnResult,
  acp,
} from 'acp-host';

type IsAny<T> = 0 extends 1 & T ? true : false;
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// Nothing of the event model degrades to `any`.
export const dataNotAny: IsAny<AcpEvent['data']> = false;
export const toolCallsNotAny: IsAny<SessionState['toolCalls'][number]> = false;
export const rawNotAny: IsAny<TurnResult['raw']> = false;
// The kinds come from the schema, `call_completed` (C ABI only) included.
export const kinds: Equals<Extract<EventKind, 'agent_ready' | 'call_completed'>, 'agent_ready' | 'call_completed'> = true;
export const turnEndedData: Equals<AcpEventOf<'turn_ended'>['data'], acp.TurnEnded> = true;

/** One line per update, narrowing on `sessionUpdate`. */
export function describeUpdate(u: SessionUpdate): string {
  switch (u.sessionUpdate) {
    case 'agent_message_chunk':
    case 'agent_thought_chunk':
    case 'user_message_chunk':
      // @ts-expect-error a message chunk has no tool call id
      void u.toolCallId;
      return u.content.type === 'text' ? u.content.text : `[${u.content.type}]`;
    case 'tool_call': {
      const call: ToolCall = u;
      const where = (call.locations ?? []).map((l) => `${l.path}:${l.line ?? ''}`).join(', ');
      return `${u.toolCallId} ${u.title} (${u.kind ?? 'other'}, ${u.status ?? 'pending'}) ${where}`;
    }
    case 'tool_call_update': {
      const diffs: string[] = [];
      for (const c of u.content ?? []) {
        if (c.type === 'diff') diffs.push(`${c.path}: ${c.oldText?.length ?? 0} -> ${c.newText.length}`);
        else if (c.type === 'content' && c.content.type === 'text') diffs.push(c.content.text);
        // @ts-expect-error only diffs have a path
        else void c.path;
      }
      // `status` of an update is optional and nullable (only changed fields are sent).
      const status: acp.ToolCallStatus | null | undefined = u.status;
      return `${u.toolCallId} ${status ?? ''} ${diffs.join('; ')}`;
    }
    case 'plan':
      return u.entries.map((e) => `[${e.status}] ${e.content} (${e.priority})`).join('\n');
    case 'usage_update':
      return `${u.used}/${u.size} tokens`;
    case 'config_option_update':
      return u.configOptions.map((o) => o.id).join(', ');
    // ACP v2 (draft): message upserts, tool-call content chunks, agent-owned terminals, plans.
    case 'user_message':
    case 'agent_message':
    case 'agent_thought': {
      // @ts-expect-error an upsert's content is a list of blocks, not one block
      void u.content?.type;
      const text = (u.content ?? []).map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('');
      return `${u.messageId}: ${text}`;
    }
    case 'tool_call_content_chunk': {
      const item: acp.ToolCallContent = u.content;
      return `${u.toolCallId} += ${item.type === 'terminal' ? item.terminalId : item.type}`;
    }
    case 'terminal_update': {
      // @ts-expect-error a terminal update has no tool call id
      void u.toolCallId;
      const exit: number | null | undefined = u.exitStatus?.exitCode;
      return `${u.terminalId} ${u.command ?? ''} ${u.size ? `${u.size.cols}x${u.size.rows}` : ''} ${exit ?? ''}`;
    }
    case 'terminal_output_chunk':
      return `${u.terminalId} += ${u.data.length} base64 chars`;
    case 'plan_update':
      return u.plan.type === 'items' ? u.plan.entries.map((e) => e.content).join(', ') : u.plan.content;
    case 'plan_removed':
      return `-${u.planId}`;
    default:
      // Newer update kinds still arrive at runtime: keep a default branch.
      return u.sessionUpdate;
  }
}

export async function consume(host: Host): Promise<void> {
  for await (const ev of host.events()) {
    const seq: number = ev.seq;
    const session: string | undefined = ev.session;
    switch (ev.kind) {
      case 'agent_ready': {
        const v: number = ev.data.protocolVersion;
        const name: string | undefined = ev.data.agentInfo?.name;
        const canLoad: boolean | undefined = ev.data.agentCapabilities.loadSession;
        // @ts-expect-error agent_ready data is not a session update
        void ev.data.sessionUpdate;
        console.log(seq, v, name, canLoad);
        break;
      }
      case 'session_update': {
        // @ts-expect-error before narrowing on `sessionUpdate` there is no `toolCallId`
        void ev.data.toolCallId;
        if (ev.data.sessionUpdate === 'agent_message_chunk') {
          // @ts-expect-error a message chunk has no tool call id
          void ev.data.toolCallId;
          const block: ContentBlock = ev.data.content;
          console.log(session, block.type);
        } else if (ev.data.sessionUpdate === 'tool_call') {
          const id: string = ev.data.toolCallId;
          console.log(id, ev.data.rawInput);
        }
        console.log(describeUpdate(ev.data));
        break;
      }
      case 'permission_requested': {
        const allow = ev.data.options.find((o) => o.kind === 'allow_once');
        // @ts-expect-error option kinds are a closed set of literals
        void ev.data.options.find((o) => o.kind === 'allow_sometimes');
        const title: string | null | undefined = ev.data.toolCall.title;
        console.log(title);
        await host.respondPermission(ev.data.requestId, allow?.optionId ?? null);
        break;
      }
      case 'permission_resolved':
        if (ev.data.outcome?.outcome === 'selected') console.log(ev.data.outcome.optionId, ev.data.decidedBy);
        break;
      case 'turn_ended':
        if (ev.data.error) console.log(ev.data.error.kind, ev.data.error.message);
        else console.log(ev.data.stopReason === 'end_turn');
        break;
      case 'agent_exited':
        console.log(ev.data.reason === 'shutdown', ev.data.exitCode, ev.data.signal);
        break;
      case 'fs_read':
        console.log(ev.data.path, ev.data.outcome, ev.data.bytes);
        break;
      default: {
        // Kinds not handled above (and, at runtime, kinds newer than these types).
        const other: AcpEvent = ev;
        console.log(other.kind);
      }
    }
  }
}

export async function run(): Promise<void> {
  const onPermission = (req: PermissionRequest): string | null => {
    const title: string = req.toolCall.title ?? req.toolCall.toolCallId;
    const kind: acp.ToolKind | null | undefined = req.toolCall.kind;
    console.log(title, kind, req.sessionId, req.turn);
    return req.options.find((o) => o.kind === 'allow_once')?.optionId ?? null;
  };
  await using host = new Host({ onPermission });

  host.on('turn_ended', (ev) => {
    const turn: number | undefined = ev.turn;
    console.log(turn, ev.data.stopReason ?? ev.data.error?.kind);
    // @ts-expect-error turn_ended data has no protocolVersion
    void ev.data.protocolVersion;
  });
  host.on('session_update', (ev) => console.log(ev.data.sessionUpdate));
  host.once('agent_exited', (ev) => console.log(ev.data.stderrTail));
  const onEvent = (ev: AcpEvent) => console.log(ev.kind);
  host.on('event', onEvent);
  host.off('event', onEvent);
  // A kind newer than these types can still be listened to (EventEmitter's own signature).
  host.on('some_future_kind', (ev: { kind: string; data: unknown }) => console.log(ev.kind));

  const agent = await host.spawn({ command: 'some-agent' });
  const session = await agent.newSession({ cwd: '/abs/project' });

  const result: TurnResult = await session.prompt([
    'Fix the tests',
    { type: 'text', text: 'and explain' },
    { type: 'resource_link', uri: 'file:///abs/project/README.md', name: 'README.md' },
  ]);
  const done: boolean = result.stopReason === 'end_turn';
  const tokens: number | undefined = result.usage?.totalTokens;
  console.log(done, tokens, result.text, result.raw.stopReason);
  // @ts-expect-error a text block needs its text
  await session.prompt({ type: 'text' });

  const steered: SteerResult = await session.steer('also update the changelog');
  const joined: number | null = steered.outcome === 'injected' ? steered.turn : null;
  console.log(steered.steer, joined);
  // @ts-expect-error `rejected` is an event outcome, never the call's
  if (steered.outcome === 'rejected') console.log('never');
  host.on('steer', (ev) => {
    const outcome: 'injected' | 'started_new_turn' | 'queued' | 'prompted' | 'rejected' | 'failed' = ev.data.outcome;
    console.log(outcome, ev.data.steer, ev.data.reason ?? '', ev.data.error?.kind ?? '');
  });

  const st: SessionState = session.state;
  for (const call of st.toolCalls) console.log(call.toolCallId, call.title ?? '', call.status, call.kind);
  const first: acp.PlanEntryStatus | undefined = st.plan?.[0]?.status;
  const modes: string[] = st.modes?.availableModes.map((m) => m.name) ?? [];
  for (const opt of st.configOptions ?? []) {
    if (opt.type === 'select') console.log(opt.id, opt.currentValue);
    else if (opt.type === 'boolean') {
      const on: boolean = opt.currentValue;
      console.log(on);
    }
  }
  console.log(first, modes, st.usage?.used, st.lastStopReason);

  const page = await agent.listSessions();
  for (const s of page.sessions) console.log(s.sessionId, s.cwd, s.title);
  const next: string | null | undefined = page.nextCursor;
  const opts: acp.SessionConfigOption[] = await session.setConfigOption('mode', 'architect');
  console.log(next, opts.length);

  const calls: SessionUpdateEventOf<'tool_call'>[] = [];
  for await (const ev of session.events()) {
    if (ev.kind === 'session_update' && ev.data.sessionUpdate === 'tool_call') calls.push({ ...ev, data: ev.data });
    if (ev.kind === 'turn_ended') break;
  }
  console.log(calls.map((c) => c.data.title));
}

/** Session and Agent are async disposables; the agent's and session's streams are typed events. */
export async function scoped(host: Host): Promise<void> {
  await using agent = await host.spawn({ command: 'some-agent' });
  await using session = await agent.loadSession('sess_old', { cwd: '/abs/project', signal: AbortSignal.timeout(30_000) });
  for await (const ev of session.events({ highWaterMark: 64 })) {
    const dropped: number | undefined = ev.dropped;
    if (ev.kind === 'session_opened') console.log(ev.data.origin, dropped);
    if (ev.kind === 'session_update' && ev.replay) console.log(ev.data.sessionUpdate);
    if (ev.kind === 'session_closed') console.log(ev.data.reason);
  }
  for await (const ev of agent.events({ signal: AbortSignal.timeout(1000) })) {
    if (ev.kind === 'agent_exited') console.log(ev.data.exitCode);
  }
}

/** A registry resolution's `spec` is what `host.spawn` takes. */
export async function fromRegistry(host: Host, path: string, cacheDir: string): Promise<void> {
  const registry = Registry.fromFile(path);
  let r = registry.resolve('my-agent', { prefer: ['binary', 'npx'], cacheDir });
  const kind: 'binary' | 'npx' | 'uvx' = r.kind;
  if (kind === 'binary' && r.needsInstall) {
    const installed = await registry.install('my-agent', { cacheDir });
    const again: boolean = installed.alreadyInstalled;
    void again;
    r = registry.resolve('my-agent', { cacheDir });
  }
  // @ts-expect-error: not a distribution kind
  registry.resolve('my-agent', { prefer: 'pip' });
  // An https:// archive through the embedder's own HTTP client (bytes, sync or async).
  const viaHook = await registry.install('my-agent', {
    cacheDir,
    platform: 'linux-x86_64',
    fetch: async (url: string) => {
      const res = await fetch(url);
      return new Uint8Array(await res.arrayBuffer());
    },
  });
  void viaHook.dir;
  await registry.install('my-agent', { cacheDir, fetch: () => new ArrayBuffer(0) });
  await registry.install('my-agent', { cacheDir, fetch: async () => Buffer.alloc(0) });
  // @ts-expect-error: the hook gives bytes, not a Response
  await registry.install('my-agent', { cacheDir, fetch: (url: string) => fetch(url) });
  // @ts-expect-error: nor text
  await registry.install('my-agent', { cacheDir, fetch: async () => 'archive' });
  await host.spawn({ ...r.spec, cwd: cacheDir });
}

/** A supervised agent: restart options and events are typed; the agent keeps its id across restarts. */
export async function supervised(host: Host): Promise<void> {
  const policy: RestartPolicy = { maxRestarts: 5, backoffMs: 100, maxBackoffMs: 5000, resetAfterMs: 60_000 };
  const agent = await host.spawn({ command: 'some-agent', restart: policy });
  const pid: number | null = agent.pid;
  const gaveUp: boolean = agent.restartsExhausted;
  const isSupervised: boolean = agent.supervised;
  host.on('agent_restarting', (ev) => console.log(ev.data.attempt, ev.data.maxRestarts, ev.data.delayMs, ev.data.error.kind));
  host.on('agent_restarted', (ev) => {
    const recovered: string[] = ev.data.recovered.map((r) => `${r.sessionId} via ${r.via}`);
    const lost: string[] = ev.data.lost;
    console.log(ev.agent === agent.id, ev.data.pid, recovered, lost);
  });
  host.on('agent_failed', (ev) => console.log(ev.data.attempts, ev.data.error.message));
  // @ts-expect-error agent_failed data has no pid
  host.on('agent_failed', (ev) => console.log(ev.data.pid));
  for await (const ev of agent.events()) {
    if (ev.kind === 'session_lost') console.log(ev.session, ev.data.sessionId, ev.data.error.kind);
  }
  // @ts-expect-error the policy's fields are numbers
  await host.spawn({ command: 'some-agent', restart: { maxRestarts: '3' } });
  console.log(pid, gaveUp, isSupervised);
}

/** A replay is spawned like a program, from `replay` instead of `command`, and typed. */
export async function replayed(host: Host, file: string, report: string): Promise<void> {
  const options: ReplayOptions = { file, pace: 'fast', report, waitMs: null, ignore: ['params.prompt'] };
  const agent: Agent = await host.spawn({ replay: options, signal: AbortSignal.timeout(10_000) });
  const specs: SpawnOptions[] = [{ command: 'some-agent', cwd: '/abs/project' }, { replay: { file } }];
  // @ts-expect-error a replay starts no program: not with `command`
  await host.spawn({ command: 'some-agent', replay: { file } });
  // @ts-expect-error nor with the program's `cwd`
  await host.spawn({ replay: { file }, cwd: '/abs/project' });
  // @ts-expect-error the recording is required
  await host.spawn({ replay: { pace: 'fast' } });
  // @ts-expect-error the pace is recorded or fast
  await host.spawn({ replay: { file, pace: 'slow' } });
  // @ts-expect-error a spec is a program or a replay
  await host.spawn({ args: ['--acp'] });
  console.log(agent.id, specs.length);
}

/** A pool: its settings, stats and pooled sessions are typed. */
export async function pooled(host: Host): Promise<void> {
  const settings: PoolSettings = { mode: 'shared', maxSessionsPerAgent: 4, warmSpares: 1, maxAgents: 8, idleTimeoutMs: null };
  await using pool: Pool = host.pool({ command: 'some-agent', args: ['--acp'], restart: { maxRestarts: 2 }, pool: settings });
  await pool.ready({ signal: AbortSignal.timeout(30_000) });
  const stats: PoolStats = pool.stats();
  await using session: PooledSession = await pool.openSession({ cwd: '/abs/project' });
  const [a, b]: TurnResult[] = await Promise.all([session.prompt('one'), session.prompt(['two'], { signal: AbortSignal.timeout(1000) })]);
  const pid: number | null = session.agent.pid;
  const state: SessionState = session.state;
  const underlying: Session = session.session;
  for await (const ev of session.events()) if (ev.kind === 'turn_ended') console.log(ev.data.stopReason);
  await session.cancel();
  await session.release();
  const released: boolean = session.released;
  // @ts-expect-error not a pool mode
  host.pool({ command: 'some-agent', pool: { mode: 'per-session' } });
  // @ts-expect-error idleTimeoutMs is a number or null
  host.pool({ command: 'some-agent', pool: { idleTimeoutMs: '5s' } });
  await pool.shutdown();
  console.log(stats.spares, a.stopReason, b.turn, pid, state.open, underlying.id, released, pool.closed);
}

/** Every option of docs/OPTIONS.md is typed (generated from the core's table), and `connect` takes a stream. */
export async function options(socket: import('node:net').Socket): Promise<void> {
  await using host = new Host({
    permission: 'manual',
    elicitation: 'manual',
    elicitationModes: ['form'],
    policy: '/abs/policy.json',
    eventQueueBytes: 1 << 20,
    eventStallTimeoutMs: null,
    earlyUpdateLimit: 1024,
    maxPendingAgentRequests: 16,
    maxOutboundBytes: 1 << 20,
    fsLimits: { maxReadBytes: 1 << 20, maxWriteBytes: 0 },
    terminalLimits: { maxOutputBytes: 4096, maxTerminals: 2 },
    fs: { readTextFile: () => '' },
    terminal: 'disabled',
    ext: 'none',
  });
  // @ts-expect-error not a policy preset (nor an absolute path)
  new Host({ policy: 'allow-everything' });
  // @ts-expect-error the Node-only spelling of before: `permission: 'manual'`
  new Host({ manualPermissions: true });
  // @ts-expect-error elicitationModes is a list of modes
  new Host({ elicitationModes: { form: true } });
  // @ts-expect-error a session's cwd is required
  await (null as unknown as Agent).newSession({});
  const agent: Agent = await host.connect(socket, { signal: AbortSignal.timeout(1000) });
  await host.connect({ readable: socket, writable: socket });
  console.log(agent.id);
}

/** The log handler's records, `progress` events and install progress are typed. */
export async function logsAndProgress(registry: Registry): Promise<void> {
  const seen: LogRecord[] = [];
  await using host = new Host({
    logLevel: 'debug',
    progressEvents: true,
    onLog: (record) => {
      const level: LogLevel = record.level;
      const agent: number | undefined = record.agent;
      const session: string | undefined = record.session;
      const at: string = record.at;
      // @ts-expect-error the level is one of the five names
      void (record.level === 'verbose');
      console.log(level, agent, session, at, record.target, record.message);
      seen.push(record);
    },
  });
  // Any handler fits: one returning what `push` returns, an async one.
  new Host({ onLog: (r) => seen.push(r) });
  new Host({ onLog: async (r) => void (await Promise.resolve(r)) });
  // @ts-expect-error not a level
  new Host({ logLevel: 'verbose' });
  const dropped: number = host.droppedLogRecords();
  for await (const ev of host.events()) {
    if (ev.kind === 'progress') {
      const p: Progress = ev.data;
      const waited: number = p.elapsedMs;
      const bytes: number | null = p.bytes;
      if (p.phase === 'handshake' && p.stage === 'waiting') console.log(waited, bytes, p.message);
      // @ts-expect-error progress data has no exitCode
      void ev.data.exitCode;
    }
  }
  await registry.install('my-agent', {
    cacheDir: '/abs/cache',
    onProgress: (p: Progress) => console.log(p.phase, p.stage, p.bytes, dropped),
  });
  // @ts-expect-error the hook gets a Progress, not a string
  await registry.install('my-agent', { cacheDir: '/abs/cache', onProgress: (p: string) => console.log(p) });
}
