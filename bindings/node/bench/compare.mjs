// One measurement of the Node faces for `scripts/bench-compare` (issue 14): acp-host's Node face
// (`host`) or the official TypeScript SDK 2.x client (`sdk`, acp-sdk-2 in fixtures/interop),
// one workload, one fresh process:
//
//   node bindings/node/bench/compare.mjs <host|sdk> <permission|read|flood|spawn> \
//        --agent PATH --workspace DIR --n N [--file PATH]
//
//   permission  --agent acp-bench-agent: one prompt `permission N`; the agent sends N sequential
//               session/request_permission requests, answered `allow-once` at once (host:
//               onPermission returning the id; sdk: an onRequest handler), and times each round
//               trip itself. Its statistics (the prompt response's `_meta.bench`, else the file
//               $ACP_BENCH_OUT it also writes) are printed: p50_us, p90_us, p99_us, mean_us, ….
//   read        the same with `read N FILE` (--file, inside --workspace): N fs/read_text_file
//               requests, served by acp-host's built-in sandboxed fs service (host) or a read
//               handler calling fs.readFileSync (sdk, fs.readTextFile advertised; the fastest
//               read, about 250 µs less per round trip than fs.promises.readFile here).
//   flood       --agent acp-mock-agent (run with --flood N): N agent_message_chunk updates of one
//               prompt (host: `for await` over host.events(); sdk: its fastest reader, the
//               session.nextUpdate() loop, 1.3-1.6x its onNotification handler here):
//               updates_per_sec, seconds, idle_rss_kib (after loading the addon/SDK, before
//               spawning), peak_rss_kib (VmHWM at the end).
//   spawn       --agent acp-mock-agent: N times (default 50) spawn → initialize → session/new
//               answered (timed: p50_ms, p99_ms, mean_ms), then shut the agent down (host: one
//               Host for all; sdk: a fresh process and connection each time).
//
// Prints exactly one JSON line on stdout ({"client": "node:host"|"node:sdk", "workload", …});
// diagnostics go to stderr. Exit 1 on a broken run (wrong count, failures, a crash), 2 on usage.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { hostFlood, loadHost, loadSdk, procStatusKib, sdkConnect, sdkSessionFlood } from './common.mjs';

const USAGE =
  'usage: node bindings/node/bench/compare.mjs <host|sdk> <permission|read|flood|spawn> --agent PATH --workspace DIR --n N [--file PATH]';

function parseArgs(argv) {
  const pos = [];
  const o = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      o[a.slice(2)] = argv[++i];
    } else pos.push(a);
  }
  return { pos, o };
}

let cli;
try {
  cli = parseArgs(process.argv.slice(2));
} catch (e) {
  usage(e.message);
}
const [MODE, WORKLOAD] = cli.pos;
const DEFAULT_N = { permission: 2000, read: 2000, flood: 200000, spawn: 50 };
if (!['host', 'sdk'].includes(MODE) || !(WORKLOAD in DEFAULT_N) || cli.pos.length !== 2) usage();
for (const k of Object.keys(cli.o)) if (!['agent', 'workspace', 'n', 'file'].includes(k)) usage(`unknown option --${k}`);
if (!cli.o.agent) usage('--agent is required');
const AGENT = path.resolve(cli.o.agent);
const WORKSPACE = path.resolve(cli.o.workspace ?? os.tmpdir());
const N = Number((cli.o.n ?? String(DEFAULT_N[WORKLOAD])).replaceAll('_', ''));
if (!Number.isInteger(N) || N <= 0) usage(`--n must be a positive integer, got ${cli.o.n}`);
const FILE = cli.o.file === undefined ? undefined : path.resolve(cli.o.file);
if (WORKLOAD === 'read' && !FILE) usage('read needs --file');
const CLIENT = `node:${MODE}`;

function usage(msg) {
  if (msg) process.stderr.write(`compare.mjs: ${msg}\n`);
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}

class BrokenRun extends Error {}

// ------------------------------------------------------------------------ permission / read

/** The agent's stats: from `_meta.bench` of the prompt response, else from its $ACP_BENCH_OUT. */
function agentStats(raw, outFile) {
  let stats = raw?._meta?.bench;
  let from = '_meta';
  if (!stats) {
    from = 'ACP_BENCH_OUT';
    try {
      stats = JSON.parse(fs.readFileSync(outFile, 'utf8'));
    } catch (e) {
      throw new BrokenRun(`no statistics: neither _meta.bench in the prompt response nor ${outFile} (${e.message})`);
    }
  }
  const { kind, ...metrics } = stats;
  if (kind !== WORKLOAD) throw new BrokenRun(`the agent ran ${kind}, not ${WORKLOAD}`);
  if (metrics.n !== N) throw new BrokenRun(`the agent timed ${metrics.n} round trips, expected ${N}`);
  if (metrics.failures > 0) throw new BrokenRun(`${metrics.failures} of ${N} round trips failed (a wrong or refused answer)`);
  return { ...metrics, stats_from: from };
}

async function roundTrips() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-compare-'));
  const outFile = path.join(tmp, 'stats.json');
  const text = WORKLOAD === 'permission' ? `permission ${N}` : `read ${N} ${FILE}`;
  const t0 = process.hrtime.bigint();
  try {
    let stopReason;
    let raw;
    if (MODE === 'host') {
      const { Host } = loadHost();
      // A host used through return values (events off, as the Rust host client runs it),
      // answering at once.
      const host = new Host({ policy: 'ask', events: false, onPermission: () => 'allow-once' });
      try {
        const agent = await host.spawn({ command: AGENT, env: { ACP_BENCH_OUT: outFile } });
        const session = await agent.newSession({ cwd: WORKSPACE });
        ({ stopReason, raw } = await session.prompt(text));
      } finally {
        await host.close();
      }
    } else {
      raw = await sdkConnect({
        agent: AGENT,
        env: { ACP_BENCH_OUT: outFile },
        sdk: await loadSdk(),
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
        handlers: (c) =>
          c
            .onRequest('session/request_permission', () => ({ outcome: { outcome: 'selected', optionId: 'allow-once' } }))
            .onRequest('fs/read_text_file', (ctx) => ({ content: fs.readFileSync(ctx.params.path, 'utf8') })),
        body: async (ctx) => {
          const { sessionId } = await ctx.request('session/new', { cwd: WORKSPACE, mcpServers: [] });
          return ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
        },
      });
      stopReason = raw.stopReason;
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (stopReason !== 'end_turn') throw new BrokenRun(`the turn ended ${stopReason}, not end_turn`);
    return { ...agentStats(raw, outFile), wall_seconds: +seconds.toFixed(3) };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------ flood

async function flood() {
  // The runtime's idle RSS: the addon / SDK loaded, nothing spawned yet.
  const lib = MODE === 'host' ? loadHost() : await loadSdk();
  const idle = procStatusKib('VmRSS');
  const r = MODE === 'host' ? await hostFlood({ agent: AGENT, n: N, cwd: WORKSPACE, Host: lib.Host }) : await sdkSessionFlood({ agent: AGENT, n: N, cwd: WORKSPACE, sdk: lib });
  if (r.updates !== N) throw new BrokenRun(`counted ${r.updates} updates, expected ${N}`);
  if (r.stopReason !== 'end_turn') throw new BrokenRun(`the turn ended ${r.stopReason}, not end_turn`);
  const reader = MODE === 'host' ? 'for await (host.events())' : 'session.nextUpdate()';
  return { n: N, updates: r.updates, seconds: r.seconds, updates_per_sec: r.updates_per_sec, idle_rss_kib: idle, peak_rss_kib: procStatusKib('VmHWM'), reader };
}

// ------------------------------------------------------------------------------------ spawn

async function spawnOpen() {
  const ms = [];
  const now = () => process.hrtime.bigint();
  if (MODE === 'host') {
    const { Host } = loadHost();
    const host = new Host();
    try {
      for (let i = 0; i < N; i++) {
        const t0 = now();
        const agent = await host.spawn({ command: AGENT });
        await agent.newSession({ cwd: WORKSPACE });
        ms.push(Number(now() - t0) / 1e6);
        await agent.shutdown();
      }
    } finally {
      await host.close();
    }
  } else {
    const sdk = await loadSdk();
    for (let i = 0; i < N; i++) {
      const t0 = now();
      await sdkConnect({
        agent: AGENT,
        sdk,
        body: async (ctx) => {
          await ctx.request('session/new', { cwd: WORKSPACE, mcpServers: [] });
          ms.push(Number(now() - t0) / 1e6);
        },
      });
    }
  }
  if (ms.length !== N) throw new BrokenRun(`timed ${ms.length} opens, expected ${N}`);
  ms.sort((a, b) => a - b);
  const q = (p) => ms[Math.round((ms.length - 1) * p)];
  const r3 = (x) => +x.toFixed(3);
  return { n: N, p50_ms: r3(q(0.5)), p90_ms: r3(q(0.9)), p99_ms: r3(q(0.99)), mean_ms: r3(ms.reduce((a, b) => a + b, 0) / N), min_ms: r3(ms[0]), max_ms: r3(ms[N - 1]) };
}

const run = { permission: roundTrips, read: roundTrips, flood, spawn: spawnOpen }[WORKLOAD];
try {
  const metrics = await run();
  process.stdout.write(`${JSON.stringify({ client: CLIENT, workload: WORKLOAD, ...metrics, runtime: `node ${process.version}` })}\n`);
} catch (e) {
  process.stderr.write(`compare.mjs ${MODE} ${WORKLOAD}: ${e instanceof BrokenRun ? e.message : (e?.stack ?? e)}\n`);
  process.exitCode = 1;
}
