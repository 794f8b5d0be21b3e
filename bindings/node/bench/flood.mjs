// Benchmark runner (one measurement per process, so each reader starts from a fresh heap):
//
//   node bench/flood.mjs MODE --agent PATH [--updates N] [--requests N] [--sdk DIR]
//
// MODE:
//   host         acp-host: `for await (const ev of host.events())`, counting session_update events
//   host-batch   acp-host: the same stream drained a batch at a time (Subscription.takeBuffered)
//   sdk          official TS SDK client connection (acp-sdk-2 = @agentclientprotocol/sdk 2.x),
//                onNotification('session/update') handler counting updates (its fastest API)
//   sdk-session  official TS SDK, session.nextUpdate() loop
//   perm-host    permission round trips through acp-host with an async onPermission handler
//   perm-host-noevents  the same with `events: false` (no event stream at all)
//   perm-sdk     permission round trips through the TS SDK with an async request handler
//
// The agent is `acp-mock-agent --flood N` (flood modes) or a generated scenario of N permission
// requests in one turn (perm modes). Prints one JSON line: rate (updates/s) or latency (µs, the
// interval between consecutive handler calls = answer → agent → next request → handler).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const PKG = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const args = process.argv.slice(2);
const mode = args[0];
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const AGENT = opt('agent');
const UPDATES = Number(opt('updates', 200000));
const REQUESTS = Number(opt('requests', 2000));
const SDK_DIR = opt('sdk', path.resolve(PKG, '../../fixtures/interop/node_modules/acp-sdk-2'));
const CWD = os.tmpdir();

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 20);
sampler.unref();

function permissionScenario(n) {
  const step = {
    request: {
      method: 'session/request_permission',
      params: {
        sessionId: '$SESSION',
        toolCall: { toolCallId: 'call_1', title: 'Edit notes.txt', kind: 'edit' },
        options: [
          { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
          { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
        ],
      },
    },
  };
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-')), 'permissions.json');
  fs.writeFileSync(file, JSON.stringify({ description: `${n} permission requests in one turn`, prompts: [Array.from({ length: n }, () => step)] }));
  return file;
}

function latency(stamps) {
  const d = [];
  const skip = Math.min(100, Math.floor(stamps.length / 10)); // warm-up
  for (let i = skip + 1; i < stamps.length; i++) d.push(Number(stamps[i] - stamps[i - 1]) / 1000);
  d.sort((a, b) => a - b);
  const q = (p) => d[Math.min(d.length - 1, Math.floor(p * d.length))];
  return { samples: d.length, p50_us: q(0.5), p99_us: q(0.99), mean_us: d.reduce((a, b) => a + b, 0) / d.length };
}

async function hostFlood(batch) {
  const { Host } = require(PKG);
  const host = new Host();
  const events = host.events();
  const agent = await host.spawn({ command: AGENT, args: ['--flood', String(UPDATES)] });
  const session = await agent.newSession({ cwd: CWD });
  let updates = 0;
  const t0 = process.hrtime.bigint();
  const turn = session.prompt('flood');
  if (batch) {
    outer: for (;;) {
      const first = await events.next();
      if (first.done) break;
      const evs = [first.value, ...events.takeBuffered()];
      for (const ev of evs) {
        if (ev.kind === 'session_update') updates++;
        else if (ev.kind === 'turn_ended') break outer;
      }
    }
  } else {
    for await (const ev of events) {
      if (ev.kind === 'session_update') updates++;
      else if (ev.kind === 'turn_ended') break;
    }
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const { stopReason } = await turn;
  await host.close();
  return { updates, seconds: secs, updates_per_sec: updates / secs, stopReason };
}

async function sdkConnect(agentArgs, handlers, body) {
  const acp = await import(pathToFileURL(path.join(SDK_DIR, 'dist/v1/acp.js')).href).catch(() => import('acp-sdk-2'));
  const child = spawn(AGENT, agentArgs, { stdio: ['pipe', 'pipe', 'ignore'] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  let c = acp.client({ name: 'bench', version: '0' });
  c = handlers(c);
  try {
    return await c.connectWith(stream, async (ctx) => {
      await ctx.request('initialize', { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
      return body(ctx, acp);
    });
  } finally {
    child.kill();
  }
}

async function sdkFlood() {
  let updates = 0;
  let secs = 0;
  const r = await sdkConnect(
    ['--flood', String(UPDATES)],
    (c) => c.onNotification('session/update', () => void updates++),
    async (ctx) => {
      const { sessionId } = await ctx.request('session/new', { cwd: CWD, mcpServers: [] });
      const t0 = process.hrtime.bigint();
      const res = await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'flood' }] });
      secs = Number(process.hrtime.bigint() - t0) / 1e9;
      return res;
    },
  );
  return { updates, seconds: secs, updates_per_sec: updates / secs, stopReason: r.stopReason };
}

async function sdkSessionFlood() {
  let updates = 0;
  let secs = 0;
  const r = await sdkConnect(
    ['--flood', String(UPDATES)],
    (c) => c,
    async (ctx) =>
      ctx.buildSession(CWD).withSession(async (session) => {
        const t0 = process.hrtime.bigint();
        session.prompt('flood');
        for (;;) {
          const m = await session.nextUpdate();
          if (m.kind === 'stop') {
            secs = Number(process.hrtime.bigint() - t0) / 1e9;
            return m.response;
          }
          updates++;
        }
      }),
  );
  return { updates, seconds: secs, updates_per_sec: updates / secs, stopReason: r.stopReason };
}

async function hostPermissions(events = true) {
  const { Host } = require(PKG);
  const stamps = [];
  const host = new Host({
    events,
    policy: 'ask',
    onPermission: async (req) => {
      stamps.push(process.hrtime.bigint());
      return req.options[0].optionId;
    },
  });
  const agent = await host.spawn({ command: AGENT, args: ['--scenario', permissionScenario(REQUESTS)] });
  const session = await agent.newSession({ cwd: CWD });
  const { stopReason } = await session.prompt('ask');
  await host.close();
  return { requests: stamps.length, stopReason, ...latency(stamps) };
}

async function sdkPermissions() {
  const stamps = [];
  const r = await sdkConnect(
    ['--scenario', permissionScenario(REQUESTS)],
    (c) =>
      c.onRequest('session/request_permission', async (ctx) => {
        stamps.push(process.hrtime.bigint());
        return { outcome: { outcome: 'selected', optionId: ctx.params.options[0].optionId } };
      }),
    async (ctx) => {
      const { sessionId } = await ctx.request('session/new', { cwd: CWD, mcpServers: [] });
      return ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'ask' }] });
    },
  );
  return { requests: stamps.length, stopReason: r.stopReason, ...latency(stamps) };
}

const modes = {
  host: () => hostFlood(false),
  'host-batch': () => hostFlood(true),
  sdk: sdkFlood,
  'sdk-session': sdkSessionFlood,
  'perm-host': () => hostPermissions(true),
  'perm-host-noevents': () => hostPermissions(false),
  'perm-sdk': sdkPermissions,
};
if (!modes[mode] || !AGENT) {
  process.stderr.write(`usage: node bench/flood.mjs (${Object.keys(modes).join('|')}) --agent PATH [--updates N] [--requests N]\n`);
  process.exit(2);
}
const out = await modes[mode]();
peakRss = Math.max(peakRss, process.memoryUsage.rss());
process.stdout.write(JSON.stringify({ mode, node: process.version, ...out, peak_rss_mib: +(peakRss / 2 ** 20).toFixed(1) }) + '\n');
