// Benchmark runner (one measurement per process, so each reader starts from a fresh heap):
//
//   node bench/flood.mjs MODE --agent PATH [--updates N] [--requests N] [--sdk DIR]
//
// MODE:
//   host         acp-host: `for await (const ev of host.events())`, counting session_update events
//   host-batch   acp-host: the same stream drained a batch at a time (Subscription.takeBuffered)
//   sdk          official TS SDK client connection (acp-sdk-2 = @agentclientprotocol/sdk 2.x),
//                onNotification('session/update') handler counting updates
//   sdk-session  official TS SDK, session.nextUpdate() loop (the faster of the two, 2.4.0 on
//                Node 20: 1.3-1.6x)
//   perm-host    permission round trips through acp-host with an async onPermission handler
//   perm-host-noevents  the same with `events: false` (no event stream at all)
//   perm-sdk     permission round trips through the TS SDK with an async request handler
//
// The agent is `acp-mock-agent --flood N` (flood modes) or a generated scenario of N permission
// requests in one turn (perm modes). Prints one JSON line: rate (updates/s) or latency (µs, the
// interval between consecutive handler calls = answer → agent → next request → handler).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { hostFlood, loadHost, loadSdk, sdkConnect, sdkFlood, sdkSessionFlood } from './common.mjs';

const args = process.argv.slice(2);
const mode = args[0];
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const AGENT = opt('agent');
const UPDATES = Number(opt('updates', 200000));
const REQUESTS = Number(opt('requests', 2000));
const SDK_DIR = opt('sdk');
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

async function hostPermissions(events = true) {
  const { Host } = loadHost();
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
  const r = await sdkConnect({
    agent: AGENT,
    args: ['--scenario', permissionScenario(REQUESTS)],
    sdk: await loadSdk(SDK_DIR),
    stderr: 'ignore',
    handlers: (c) =>
      c.onRequest('session/request_permission', async (ctx) => {
        stamps.push(process.hrtime.bigint());
        return { outcome: { outcome: 'selected', optionId: ctx.params.options[0].optionId } };
      }),
    body: async (ctx) => {
      const { sessionId } = await ctx.request('session/new', { cwd: CWD, mcpServers: [] });
      return ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'ask' }] });
    },
  });
  return { requests: stamps.length, stopReason: r.stopReason, ...latency(stamps) };
}

const flood = { agent: AGENT, n: UPDATES, cwd: CWD };
const modes = {
  host: () => hostFlood(flood),
  'host-batch': () => hostFlood({ ...flood, batch: true }),
  sdk: async () => sdkFlood({ ...flood, sdk: await loadSdk(SDK_DIR) }),
  'sdk-session': async () => sdkSessionFlood({ ...flood, sdk: await loadSdk(SDK_DIR) }),
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
