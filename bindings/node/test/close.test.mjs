// close(): turns in flight fail with `closed`, pending permission requests resolve as
// disconnected, iterators end, no agent process remains, and nothing keeps Node alive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import os from 'node:os';

import { acp, T, PKG_DIR, MOCK, mock, collectUntil, ofKind, withTimeout, waitGone, alive, agentPid, mockChildrenOf } from './helpers.mjs';

const CWD = os.tmpdir();

test('close with turns in flight: prompts reject closed, permission resolves disconnected, iterators end, processes gone', async () => {
  const host = new acp.Host({ permission: 'manual', shutdownGraceMs: 300 });
  const all = host.events();
  const collected = [];
  const reading = (async () => {
    for await (const ev of all) collected.push(ev);
    return 'ended';
  })();
  const hung = await host.spawn(mock('hang'));
  const asking = await host.spawn(mock('permission-write'));
  const s1 = await hung.newSession({ cwd: CWD });
  const s2 = await asking.newSession({ cwd: CWD });
  const perSession = s2.events();
  const t1 = s1.prompt('go');
  const t2 = s2.prompt('write');
  t1.catch(() => {});
  t2.catch(() => {});
  await collectUntil(perSession, (e) => e.kind === 'permission_requested');
  const started = Date.now();
  await host.close();
  assert.ok(Date.now() - started < 5000, 'close is bounded');
  await assert.rejects(withTimeout(t1, T, 't1'), (e) => e instanceof acp.AcpError && e.code === 'closed');
  await assert.rejects(withTimeout(t2, T, 't2'), (e) => e.code === 'closed');
  assert.equal(await withTimeout(reading, T, 'the host iterator ends'), 'ended');
  const rest = [];
  for await (const ev of perSession) rest.push(ev);
  assert.ok(rest.every((e) => e.session === s2.id), 'the session iterator only sees its session');
  assert.deepEqual(ofKind(collected, 'permission_resolved').map((e) => e.data.decidedBy), ['disconnected']);
  const exited = ofKind(collected, 'agent_exited');
  assert.equal(exited.length, 2);
  assert.ok(exited.every((e) => e.data.reason === 'shutdown'));
  for (const ev of ofKind(collected, 'agent_ready')) assert.ok(await waitGone(ev.data.pid), `agent ${ev.data.pid} still alive`);
  assert.equal(mockChildrenOf(process.pid).length, 0);
  // After close: calls fail with closed, and close is idempotent.
  await assert.rejects(host.spawn(mock('default')), (e) => e.code === 'closed');
  await assert.rejects(s1.prompt('again'), (e) => e.code === 'closed' || e.code === 'agent_exited');
  await host.close();
  assert.equal(host.closed, true);
});

test('Symbol.asyncDispose closes the host', async () => {
  const host = new acp.Host();
  const events = host.events();
  await host.spawn(mock('default'));
  const evs = await collectUntil(events, (e) => e.kind === 'agent_ready');
  const pid = agentPid(evs);
  const dispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');
  assert.equal(typeof host[dispose], 'function');
  await host[dispose]();
  assert.equal(host.closed, true);
  assert.ok(await waitGone(pid));
});

/** Run a script in a fresh node process; it must exit by itself within `ms`. */
function runChild(script, ms = 8000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ACP_PKG: PKG_DIR, ACP_MOCK: MOCK },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the node process did not exit by itself within ${ms} ms; stdout: ${out} stderr: ${err}`));
    }, ms);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}

const PRELUDE = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Host } = require(process.env.ACP_PKG);
const mock = (scenario) => ({ command: process.env.ACP_MOCK, args: ['--scenario', scenario] });
`;

test('after close the Node process exits by itself and no agent remains', async () => {
  const r = await runChild(`${PRELUDE}
const host = new Host({ onPermission: (req) => req.options[0].optionId });
const events = host.events();
let pid = null;
(async () => { for await (const ev of events) if (ev.kind === 'agent_ready') pid = ev.data.pid; })();
const agent = await host.spawn(mock('default'));
const session = await agent.newSession({ cwd: ${JSON.stringify(CWD)} });
const turn = await session.prompt('hello');
await host.close();
console.log(JSON.stringify({ pid, stopReason: turn.stopReason }));
`);
  assert.equal(r.code, 0, r.err);
  const { pid, stopReason } = JSON.parse(r.out.trim());
  assert.equal(stopReason, 'end_turn');
  assert.equal(typeof pid, 'number');
  assert.ok(await waitGone(pid), 'the agent outlived the node process');
});

test('close with a turn in flight and a stalled iterator: the process still exits by itself', async () => {
  const r = await runChild(`${PRELUDE}
const host = new Host({ eventCapacity: 16 });
const events = host.events({ highWaterMark: 8 }); // subscribed, never read: it fills up and stalls
const agent = await host.spawn({ command: process.env.ACP_MOCK, args: ['--flood', '100000'] });
const session = await agent.newSession({ cwd: ${JSON.stringify(CWD)} });
const turn = session.prompt('flood').then((r) => r.stopReason, (e) => e.code);
await new Promise((r) => setTimeout(r, 300));
await host.close();
const first = await events.next();
console.log(JSON.stringify({ outcome: await turn, firstKind: first.value?.kind }));
`);
  assert.equal(r.code, 0, r.err);
  const { outcome, firstKind } = JSON.parse(r.out.trim());
  assert.equal(outcome, 'closed');
  assert.equal(firstKind, 'agent_ready', 'what the stalled iterator buffered stays readable');
});

test('an idle host (never spawned, never closed) does not keep the process alive', async () => {
  const r = await runChild(`${PRELUDE}
const host = new Host();
const it = host.events();
console.log('ok');
`, 5000);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out.trim(), 'ok');
});

test('a host whose agents all exited does not keep the process alive', async () => {
  const r = await runChild(`${PRELUDE}
const host = new Host();
const agent = await host.spawn(mock('default'));
await agent.shutdown();
console.log('ok');
`, 8000);
  assert.equal(r.code, 0, r.err);
});

test('no handles are left behind by a closed host', async () => {
  const count = (list) => list.filter((x) => x !== 'Timeout').reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map());
  const before = count(process.getActiveResourcesInfo());
  const host = new acp.Host({ onPermission: () => null });
  const events = host.events();
  const seen = [];
  const reading = (async () => {
    for await (const ev of events) seen.push(ev);
  })();
  const agent = await host.spawn(mock('default'));
  const session = await agent.newSession({ cwd: CWD });
  await session.prompt('hi');
  const during = count(process.getActiveResourcesInfo());
  await host.close();
  await reading;
  await new Promise((r) => setTimeout(r, 50));
  const after = count(process.getActiveResourcesInfo());
  // Nothing new survives the close: no handle, no pending napi work (timers of the runner aside).
  for (const [kind, n] of after) assert.ok(n <= (before.get(kind) ?? 0), `${kind}: ${n} after close, ${before.get(kind) ?? 0} before (${during.get(kind) ?? 0} during)`);
  assert.ok(await waitGone(agentPid(seen)));
  assert.equal(mockChildrenOf(process.pid).length, 0);
});

test('an agent that exits right after the handshake: exited resolves, nothing keeps the process alive', async () => {
  const r = await runChild(`${PRELUDE}
const host = new Host();
// A node script (portable, no shell): answers initialize, then exits 7.
const quick = ['-e', 'process.stdin.once("data", () => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1 } }) + "\\\\n", () => process.exit(7)))'];
const results = [];
for (let i = 0; i < 5; i++) {
  const agent = await host.spawn({ command: process.execPath, args: quick });
  results.push((await agent.exited).exitCode);
}
console.log(JSON.stringify(results));
`, process.platform === 'win32' ? 30000 : 8000); // five node starts: seconds each under Wine
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(JSON.parse(r.out.trim()), [7, 7, 7, 7, 7]);
});
