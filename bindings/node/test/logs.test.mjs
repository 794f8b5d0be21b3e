// The log handler (`onLog`, `logLevel`) and `progress` events through the Node face, as a user
// meets them (the core's tests/logs_and_progress.rs; the Kotlin face's LogsAndProgressTest): typed
// records, in order, off by default; a throwing handler loses its record only; a handler stuck on
// the JS thread stalls no agent, loses what does not fit 1024 records and is told how many;
// `close()` hands over the shutdown's records and the process still exits by itself; progress
// events for spawn and handshake, an agent that never answers `initialize` included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { acp, T, MOCK, PKG_DIR, mock, tmpdir, collectUntil, ofKind } from './helpers.mjs';

/** Sleep on the JS thread itself (a handler that hogs it). */
const block = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

async function until(what, cond, ms = T) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const steps = (evs) => ofKind(evs, 'progress').map((e) => `${e.data.phase} ${e.data.stage}`);

test('records are typed and in order; progressEvents reports spawn and handshake', async () => {
  const records = [];
  const before = Date.now();
  const host = new acp.Host({ progressEvents: true, onLog: (r) => records.push(r) });
  try {
    const events = host.events();
    const agent = await host.spawn(mock('default'));
    const evs = await collectUntil(events, (e) => e.kind === 'progress' && e.data.phase === 'handshake' && e.data.stage === 'done');
    assert.deepEqual(steps(evs), ['spawn started', 'spawn done', 'handshake started', 'handshake done']);
    assert.ok(ofKind(evs, 'progress').every((e) => e.agent === agent.id && e.session === undefined));
    const done = ofKind(evs, 'progress').at(-1).data;
    assert.equal(typeof done.elapsedMs, 'number');
    assert.equal(done.bytes, null);
    assert.ok(evs.findIndex((e) => e.kind === 'agent_ready') < evs.length - 1, 'agent_ready comes before the handshake is done');

    await until('the handshake record', () => records.some((r) => r.target === 'handshake' && r.message.startsWith('handshake done')));
    const r = records.find((x) => x.target === 'handshake' && x.message.startsWith('handshake done'));
    assert.equal(r.level, 'info');
    assert.equal(r.agent, agent.id);
    assert.equal('session' in r, false, 'no session key for a record about no session');
    assert.match(r.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Date.parse(r.at) >= before - 1000 && Date.parse(r.at) <= Date.now() + 1000, r.at);
    // In the order they were made: spawn's records before the handshake's.
    const order = records.map((x) => x.target).filter((t) => t === 'spawn' || t === 'handshake');
    assert.deepEqual(order, ['spawn', 'spawn', 'handshake', 'handshake']);

    assert.equal((await agent.shutdown()).exitCode, 0);
    await until('the exit record', () => records.some((x) => /exited/.test(x.message)));
    assert.equal(records.find((x) => /exited/.test(x.message)).agent, agent.id);
    assert.equal(host.droppedLogRecords(), 0);
  } finally {
    await host.close();
  }
});

test('off by default: no progress events without the option; logLevel filters; bad values are invalid_config', async () => {
  const records = [];
  const host = new acp.Host({ logLevel: 'warn', onLog: (r) => records.push(r) });
  try {
    const events = host.events();
    const agent = await host.spawn(mock('default'));
    const session = await agent.newSession({ cwd: tmpdir() });
    assert.equal((await session.prompt('hello')).stopReason, 'end_turn');
    await agent.shutdown();
    const evs = await collectUntil(events, (e) => e.kind === 'agent_exited');
    assert.deepEqual(steps(evs), []);
  } finally {
    await host.close();
  }
  assert.ok(records.every((r) => r.level === 'warn' || r.level === 'error'), JSON.stringify(records));

  const plain = new acp.Host();
  assert.equal(plain.droppedLogRecords(), 0);
  await plain.close();
  assert.throws(() => new acp.Host({ logLevel: 'loud' }), (e) => e instanceof acp.AcpError && e.code === 'invalid_config' && e.data.path === 'logLevel');
  assert.throws(() => new acp.Host({ onLog: 'console' }), (e) => e.code === 'invalid_config' && e.data.path === 'onLog');
  assert.throws(() => new acp.Host({ progressEvents: 'yes' }), (e) => e.code === 'invalid_config' && e.data.path === 'progressEvents');
});

test('an agent that never answers initialize is reported waiting, then failed', async () => {
  const records = [];
  // The mock sleeps 7 s before it reads anything: `initialize` times out at 6.5 s.
  const host = new acp.Host({ progressEvents: true, requestTimeoutMs: 6500, onLog: (r) => records.push(r) });
  try {
    const events = host.events();
    const started = Date.now();
    await assert.rejects(host.spawn({ command: MOCK, args: ['--sleep', '7000'] }), (e) => e.code === 'timeout');
    assert.ok(Date.now() - started >= 6000, 'the request timeout held');
    const evs = await collectUntil(events, (e) => e.kind === 'progress' && e.data.stage === 'failed');
    assert.deepEqual(steps(evs), ['spawn started', 'spawn done', 'handshake started', 'handshake waiting', 'handshake failed']);
    const waiting = ofKind(evs, 'progress').find((e) => e.data.stage === 'waiting').data;
    assert.ok(waiting.elapsedMs >= 4900, JSON.stringify(waiting));
    assert.match(waiting.message, /initialize/);
    assert.ok(evs.at(-1).data.message.length > 0);
    await until('the waiting record', () => records.some((r) => r.target === 'handshake' && r.message.startsWith('handshake waiting')));
    assert.equal(records.find((r) => r.message.startsWith('handshake waiting')).level, 'warn');
  } finally {
    await host.close();
  }
});

test('a throwing or rejecting log handler loses only its record: nothing escapes, the host goes on', async () => {
  const escaped = [];
  const onEscape = (e) => escaped.push(e);
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
  let calls = 0;
  const host = new acp.Host({
    logLevel: 'trace',
    onLog: (r) => {
      calls++;
      if (calls % 2) throw new Error(`log sink down (${r.target})`);
      return Promise.reject(new Error('async log sink down'));
    },
  });
  try {
    const agent = await host.spawn(mock('default'));
    const session = await agent.newSession({ cwd: tmpdir() });
    for (let i = 0; i < 3; i++) assert.equal((await session.prompt(`hello ${i}`)).stopReason, 'end_turn');
    assert.equal((await agent.shutdown()).exitCode, 0);
  } finally {
    await host.close();
  }
  await new Promise((r) => setTimeout(r, 50));
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
  assert.ok(calls >= 4, `the handler was called for every record (${calls})`);
  assert.deepEqual(escaped, []);
  assert.equal(host.droppedLogRecords(), 0);
});

test('a handler that hogs the JS thread stalls no agent; past 1024 waiting records it loses the rest and is told', async () => {
  // A turn of 1500 non-JSON stdout lines: one `debug` record each.
  const dir = tmpdir();
  const noise = Array.from({ length: 1500 }, (_, i) => ({ raw: `noise ${i + 1}` }));
  const scenario = path.join(dir, 'noise.json');
  fs.writeFileSync(scenario, JSON.stringify({
    prompts: [[...noise, { update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'done' } } }]],
  }));
  const got = [];
  let host;
  let droppedWhileBlocked = 0;
  host = new acp.Host({
    logLevel: 'debug',
    onLog: (r) => {
      got.push(r);
      if (r.message.startsWith('a non-JSON line') && got.filter((x) => x.message.startsWith('a non-JSON line')).length === 1) {
        // Hold the JS thread until the host has dropped records: the core went on meanwhile.
        const deadline = Date.now() + T;
        while (host.droppedLogRecords() < 400 && Date.now() < deadline) block(5);
        droppedWhileBlocked = host.droppedLogRecords();
      }
    },
  });
  try {
    const agent = await host.spawn(mock(null, ['--scenario', scenario]));
    const session = await agent.newSession({ cwd: dir });
    assert.equal((await session.prompt('go')).text, 'done');
    assert.ok(droppedWhileBlocked >= 400, `the host made records while the handler held the JS thread (${droppedWhileBlocked} dropped)`);
    await agent.shutdown();
  } finally {
    await host.close();
  }
  const dropped = host.droppedLogRecords();
  const notices = got.filter((r) => r.target === 'log');
  assert.ok(notices.length >= 1, 'told of the loss');
  for (const n of notices) {
    assert.equal(n.level, 'warn');
    assert.match(n.message, /^\d+ log records dropped: the log handler fell 1024 records behind$/);
    assert.match(n.at, /Z$/);
  }
  assert.equal(notices.reduce((sum, n) => sum + Number(n.message.split(' ')[0]), 0), dropped, 'every loss told, once');
  // Right after the record it was handed next: the first record past the blocked one, then the notice.
  const first = got.findIndex((r) => r.message.startsWith('a non-JSON line'));
  assert.equal(got[first + 2], notices[0], 'the notice follows the next record delivered');
  const delivered = got.filter((r) => r.message.startsWith('a non-JSON line')).length;
  assert.equal(delivered + dropped >= 1500, true, `${delivered} delivered + ${dropped} dropped`);
  assert.ok(delivered >= 1024 && delivered <= 1500 - 400, `${delivered} delivered`);
});

test('close() hands the handler the shutdown\'s records before it resolves, then nothing more', async () => {
  const records = [];
  const host = new acp.Host({ onLog: (r) => records.push(r) });
  const agent = await host.spawn(mock('default'));
  await agent.newSession({ cwd: tmpdir() });
  await host.close();
  const exited = records.filter((r) => /the agent exited/.test(r.message));
  assert.equal(exited.length, 1, JSON.stringify(records.map((r) => r.message)));
  assert.equal(exited[0].agent, agent.id);
  const n = records.length;
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(records.length, n, 'no record after close()');
  await host.close(); // idempotent
});

/** Run a script in a fresh node process; it must exit by itself within `ms`. */
function runChild(script, ms = 10_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ACP_PKG: PKG_DIR, ACP_MOCK: MOCK, ACP_CWD: tmpdir() },
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
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

const PRELUDE = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Host } = require(process.env.ACP_PKG);
`;

test('a log handler keeps no Node process alive: after close, and on an idle host never closed', async () => {
  const closed = await runChild(`${PRELUDE}
const records = [];
const host = new Host({ logLevel: 'trace', onLog: (r) => records.push(r.target) });
const agent = await host.spawn({ command: process.env.ACP_MOCK, args: ['--scenario', 'default'] });
const session = await agent.newSession({ cwd: process.env.ACP_CWD });
await session.prompt('hello');
await host.close();
console.log(JSON.stringify({ records: records.length, exited: records.includes('transport') }));
`);
  assert.equal(closed.code, 0, closed.err);
  const r = JSON.parse(closed.out.trim());
  assert.ok(r.records > 0 && r.exited, closed.out);

  const idle = await runChild(`${PRELUDE}
const host = new Host({ logLevel: 'trace', onLog: () => {} });
console.log('ok');
`, 5000);
  assert.equal(idle.code, 0, idle.err);
  assert.equal(idle.out.trim(), 'ok');
  assert.equal(idle.err, '', 'the library never prints');
});
