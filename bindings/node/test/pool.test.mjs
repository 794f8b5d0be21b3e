// Pools (`host.pool(...)`): process-per-session and shared modes, warm spares, the cap, the
// per-session prompt queue with cancel and abort, release, pool.shutdown and host.close leaving no
// process and nothing that keeps Node alive, and a bad config as a typed error that starts nothing.
//
// The agent is the mock behind a wrapper that counts its starts in the test's directory (as in
// core/tests/integration/pool.rs), so "no cold start happened" is checked, not timed. Every process of a test
// carries a tag of its own in its environment: the process table says what is left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { acp, T, PKG_DIR, MOCK, NODE_WRAPPER, tmpdir, collectUntil, drain, withTimeout, waitGone, alive, wrapperProcesses } from './helpers.mjs';

const WIN = process.platform === 'win32';

const COUNTING = 'd=$0; m=$1; shift; n=$(( $(cat "$d/starts" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/starts"; exec "$m" "$@"';

/** The mock behind the counting wrapper, tagged with `dir` (extra mock arguments after). */
function spec(dir, extra = []) {
  return {
    // Windows: no /bin/sh; the node wrapper counts the same way (helpers.mjs).
    ...(WIN ? { command: process.execPath, args: ['-e', NODE_WRAPPER, dir, MOCK, ...extra] } : { command: '/bin/sh', args: ['-c', COUNTING, dir, MOCK, ...extra] }),
    env: { ACP_MOCK_STATE_DIR: null, ACP_MOCK_EXIT_ON: null, ACP_POOL_TEST: dir },
  };
}

/** How many times the wrapper was started. */
function starts(dir) {
  try {
    return Number(fs.readFileSync(path.join(dir, 'starts'), 'utf8').trim());
  } catch {
    return 0;
  }
}

/** Live processes started for `dir` (found by their environment). */
function processesOf(dir) {
  // Windows has no /proc: the wrapper recorded every pid it and its child had.
  if (WIN) return wrapperProcesses(dir);
  const needle = `ACP_POOL_TEST=${dir}\0`;
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/environ`, 'latin1').includes(needle) && alive(Number(d))) out.push(Number(d));
    } catch {
      // raced with an exiting process, or not ours to read
    }
  }
  return out;
}

/** A mock scenario file: each turn streams "one", then takes 300 ms. */
function slowScenario(dir) {
  const file = path.join(dir, 'slow.json');
  const turn = [
    { update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'one' } } },
    { sleepMs: 100 },
  ];
  fs.writeFileSync(file, JSON.stringify({ description: 'bindings/node/test/pool.test.mjs', prompts: [turn] }));
  return file;
}

const turns = (evs) => evs.filter((e) => e.kind === 'turn_started' || e.kind === 'turn_ended').map((e) => `${e.kind} ${e.turn}`);
const code = (c) => (e) => e instanceof acp.AcpError && e.code === c;

test('process-per-session: each session has its own process, release ends it, shutdown ends the rest', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    const pool = host.pool({ ...spec(dir), pool: { warmSpares: 0, maxAgents: 4, idleTimeoutMs: null } });
    const a = await pool.openSession({ cwd: dir });
    const b = await pool.openSession({ cwd: dir });
    const c = await pool.openSession({ cwd: dir });
    const pids = [a, b, c].map((s) => s.agent.pid);
    assert.equal(new Set(pids).size, 3, `distinct processes: ${pids}`);
    assert.equal(new Set([a, b, c].map((s) => s.agent.id)).size, 3);
    assert.ok(pids.every(alive));
    assert.equal(starts(dir), 3);
    for (const s of [a, b, c]) assert.equal((await s.prompt('hi')).stopReason, 'end_turn');
    assert.deepEqual(pool.stats(), { agents: 3, spares: 0, starting: 0, sessions: 3 });

    await a.release();
    assert.equal(a.released, true);
    assert.ok(await waitGone(pids[0]), 'the released session took its process with it');
    await withTimeout(a.agent.exited, T, 'the pooled agent is gone');
    assert.ok(alive(pids[1]) && alive(pids[2]));
    await assert.rejects(a.prompt('late'), code('closed'));
    await a.release(); // idempotent
    assert.deepEqual(pool.stats(), { agents: 2, spares: 0, starting: 0, sessions: 2 });

    await pool.shutdown();
    assert.equal(pool.closed, true);
    assert.ok(!alive(pids[1]) && !alive(pids[2]), 'shutdown waited for the processes to end');
    assert.deepEqual(processesOf(dir), []);
    assert.deepEqual(pool.stats(), { agents: 0, spares: 0, starting: 0, sessions: 0 });
    await assert.rejects(pool.openSession({ cwd: dir }), code('closed'));
    await assert.rejects(b.prompt('after'), (e) => e.code === 'agent_exited' || e.code === 'closed');
    await withTimeout(c.agent.exited, T, 'the agents of a shut down pool are gone');
    await pool.shutdown(); // idempotent
  } finally {
    await host.close();
  }
  assert.deepEqual(processesOf(dir), []);
});

test('shared mode packs sessions onto a process up to maxSessionsPerAgent, the next goes to a new one', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    const pool = host.pool({ ...spec(dir), pool: { mode: 'shared', maxSessionsPerAgent: 2, warmSpares: 0, maxAgents: 4 } });
    const s1 = await pool.openSession({ cwd: dir });
    const s2 = await pool.openSession({ cwd: dir });
    const s3 = await pool.openSession({ cwd: dir });
    assert.equal(s1.agent, s2.agent, 'one Agent object per process');
    assert.equal(s1.agent.pid, s2.agent.pid);
    assert.notEqual(s3.agent.pid, s1.agent.pid);
    assert.notEqual(s1.id, s2.id);
    assert.equal(starts(dir), 2);
    assert.deepEqual(pool.stats(), { agents: 2, spares: 0, starting: 0, sessions: 3 });
    // Two sessions of one process run side by side.
    const [r1, r2] = await Promise.all([s1.prompt('a'), s2.prompt('b')]);
    assert.equal(r1.stopReason, 'end_turn');
    assert.equal(r2.stopReason, 'end_turn');
    // A released place is taken again: no new process.
    await s1.release();
    const s4 = await pool.openSession({ cwd: dir });
    assert.equal(starts(dir), 2);
    assert.deepEqual(pool.stats(), { agents: 2, spares: 0, starting: 0, sessions: 3 });
    assert.equal((await s4.prompt('c')).stopReason, 'end_turn');
    assert.ok(alive(s1.agent.pid), 'a shared process outlives one of its sessions');
  } finally {
    await host.close();
  }
  assert.deepEqual(processesOf(dir), []);
});

test('the cap: a session that needs one process more rejects with busy until one is released', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    const pool = host.pool({ ...spec(dir), pool: { warmSpares: 0, maxAgents: 2 } });
    const a = await pool.openSession({ cwd: dir });
    await pool.openSession({ cwd: dir });
    await assert.rejects(pool.openSession({ cwd: dir }), (e) => {
      assert.ok(e instanceof acp.AcpError, String(e));
      assert.equal(e.code, 'busy');
      assert.match(e.message, /cap of 2/);
      return true;
    });
    assert.equal(starts(dir), 2);
    const pid = a.agent.pid;
    await a.release();
    assert.ok(await waitGone(pid));
    const c = await pool.openSession({ cwd: dir });
    assert.equal((await c.prompt('hi')).stopReason, 'end_turn');
    assert.equal(starts(dir), 3);
  } finally {
    await host.close();
  }
});

test('a warm spare: after ready() the first session starts no process', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    const pool = host.pool({ ...spec(dir), pool: { warmSpares: 1, maxAgents: 3 } });
    await withTimeout(pool.ready(), T, 'the spare is up');
    assert.deepEqual(pool.stats(), { agents: 0, spares: 1, starting: 0, sessions: 0 });
    const before = processesOf(dir);
    assert.equal(before.length, 1);
    assert.equal(starts(dir), 1);
    // The session is served by the process that was already up (a new spare is started after).
    const s = await pool.openSession({ cwd: dir });
    assert.equal(s.agent.pid, before[0], 'no cold start: the session is on the spare');
    assert.equal(pool.stats().agents, 1);
    assert.equal((await s.prompt('hi')).stopReason, 'end_turn');
    await withTimeout(pool.ready(), T, 'the spare is refilled');
    assert.deepEqual(pool.stats(), { agents: 1, spares: 1, starting: 0, sessions: 1 });
    assert.equal(starts(dir), 2);
    // Released (process per session: its process ends); the spare is there already.
    await s.release();
    assert.ok(await waitGone(before[0]));
    await withTimeout(pool.ready(), T, 'the spare');
    assert.equal(starts(dir), 2);
    const spare = processesOf(dir);
    assert.equal(spare.length, 1);
    const t = await pool.openSession({ cwd: dir });
    assert.equal(t.agent.pid, spare[0], 'the next session takes the refilled spare');
  } finally {
    await host.close();
  }
  assert.deepEqual(processesOf(dir), []);
});

test('two prompts at once on a pooled session: the second waits for the first, in call order', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    const pool = host.pool({ ...spec(dir, ['--scenario', slowScenario(dir)]), pool: { warmSpares: 0 } });
    const s = await pool.openSession({ cwd: dir });
    const events = s.events();
    // Six in one tick: each napi call is a task of its own, first polled in any order; the
    // turns must still follow the call order.
    const rs = await withTimeout(Promise.all(['1', '2', '3', '4', '5', '6'].map((t) => s.prompt(t))), T, 'six prompts');
    for (const r of rs) assert.equal(r.stopReason, 'end_turn');
    assert.equal(rs[0].text, 'one');
    const order = rs.map((r) => r.turn);
    assert.deepEqual(order, [...order].sort((a, b) => a - b), `FIFO in call order: turns ${order}`);
    const last = order.at(-1);
    const evs = await collectUntil(events, (e) => e.kind === 'turn_ended' && e.turn === last);
    assert.deepEqual(turns(evs), order.flatMap((t) => [`turn_started ${t}`, `turn_ended ${t}`]));
    assert.equal(s.state.lastStopReason, 'end_turn');
    // Without the queue (the underlying session), an overlapping prompt is refused.
    const running = s.prompt('third');
    await collectUntil(events, (e) => e.kind === 'turn_started');
    await assert.rejects(s.session.prompt('overlap'), code('busy'));
    assert.equal((await running).stopReason, 'end_turn');
    await pool.shutdown();
  } finally {
    await host.close();
  }
});

test('cancel: the running turn ends cancelled, the queued prompts reject cancelled and are never sent', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    const pool = host.pool({ ...spec(dir, ['--scenario', 'wait-for-cancel']), pool: { warmSpares: 0 } });
    const s = await pool.openSession({ cwd: dir });
    const events = s.events();
    const running = s.prompt('long');
    await collectUntil(events, (e) => e.kind === 'turn_started');
    const queued = [s.prompt('queued 1'), s.prompt('queued 2')];
    for (const q of queued) q.catch(() => {});
    await s.cancel();
    const r = await withTimeout(running, T, 'the running prompt');
    assert.equal(r.stopReason, 'cancelled');
    for (const q of queued) await assert.rejects(withTimeout(q, T, 'a queued prompt'), code('cancelled'));
    const rest = await drain(events, 300);
    assert.deepEqual(
      rest.filter((e) => e.kind === 'turn_started'),
      [],
      'nothing of the queued prompts reached the agent',
    );
    // The session works on: a prompt after the cancel runs.
    const next = s.prompt('after');
    const started = await collectUntil(events, (e) => e.kind === 'turn_started');
    await s.cancel();
    const n = await withTimeout(next, T, 'the prompt after the cancel');
    assert.equal(n.stopReason, 'cancelled');
    assert.equal(started.at(-1).turn, n.turn);
  } finally {
    await host.close();
  }
});

test('aborting a queued prompt withdraws it (never sent); the running one goes on', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    const pool = host.pool({ ...spec(dir, ['--scenario', 'wait-for-cancel']), pool: { warmSpares: 0 } });
    const s = await pool.openSession({ cwd: dir });
    const events = s.events();
    const running = s.prompt('long');
    await collectUntil(events, (e) => e.kind === 'turn_started');
    const ac = new AbortController();
    const queued = s.prompt('queued', { signal: ac.signal });
    const after = s.prompt('after');
    after.catch(() => {});
    ac.abort();
    await assert.rejects(withTimeout(queued, T, 'the aborted prompt'), code('cancelled'));
    await assert.rejects(s.prompt('already aborted', { signal: ac.signal }), code('cancelled'));
    // The running turn was not touched: it ends when cancelled, and the next one runs.
    await s.cancel();
    assert.equal((await withTimeout(running, T, 'the running prompt')).stopReason, 'cancelled');
    const rest = await drain(events, 300);
    assert.deepEqual(rest.filter((e) => e.kind === 'turn_started'), [], 'neither queued prompt was sent');
    await assert.rejects(withTimeout(after, T, 'queued before the cancel'), code('cancelled'));
  } finally {
    await host.close();
  }
});

test('host.close() shuts an open pool down: spares, busy processes, no process left', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  const pool = host.pool({ ...spec(dir, ['--scenario', 'wait-for-cancel']), pool: { mode: 'shared', warmSpares: 2, maxAgents: 4 } });
  await withTimeout(pool.ready(), T, 'the spares are up');
  const s = await pool.openSession({ cwd: dir });
  const events = s.events();
  const running = s.prompt('long');
  running.catch(() => {});
  await collectUntil(events, (e) => e.kind === 'turn_started');
  assert.ok(processesOf(dir).length >= 2, 'a busy process and a spare');
  await host.close();
  assert.deepEqual(processesOf(dir), []);
  assert.equal(pool.closed, true);
  await assert.rejects(withTimeout(running, T, 'the running prompt'), (e) => e.code === 'closed' || e.code === 'agent_exited');
  await assert.rejects(pool.openSession({ cwd: dir }), code('closed'));
  await pool.shutdown(); // after close: nothing to do, no error
  assert.throws(() => host.pool(spec(dir)), code('closed'));
});

test('Symbol.asyncDispose shuts a pool down and releases a pooled session', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  const dispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');
  try {
    const pool = host.pool({ ...spec(dir), pool: { warmSpares: 0 } });
    const s = await pool.openSession({ cwd: dir });
    const pid = s.agent.pid;
    await s[dispose]();
    assert.equal(s.released, true);
    assert.ok(await waitGone(pid));
    const t = await pool.openSession({ cwd: dir });
    await pool[dispose]();
    assert.equal(pool.closed, true);
    assert.ok(!alive(t.agent.pid));
    await t[dispose](); // its process is gone: no error
    assert.deepEqual(processesOf(dir), []);
  } finally {
    await host.close();
  }
});

test('a bad pool config or restart policy is a typed invalid_config error and starts nothing', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    // Each at the core's full path (tests/options/cases.json has more).
    for (const [bad, at] of [
      [{ mode: 'per-session' }, 'pool.mode'],
      [{ maxSessionsPerAgent: 2 }, 'pool.maxSessionsPerAgent'],
      [{ mode: 'shared', maxSessionsPerAgent: 0 }, 'pool.maxSessionsPerAgent'],
      [{ maxAgents: 0 }, 'pool.maxAgents'],
      [{ warmSpares: 3, maxAgents: 2 }, 'pool.warmSpares'],
      [{ warmSpare: 1 }, 'pool.warmSpare'],
      [{ maxAgents: -1 }, 'pool.maxAgents'],
      [{ maxAgents: 1.5 }, 'pool.maxAgents'],
      [{ idleTimeoutMs: Number.NaN }, 'pool.idleTimeoutMs'],
      [{ idleTimeoutMs: Infinity }, 'pool.idleTimeoutMs'],
      [{ idleTimeoutMs: '100' }, 'pool.idleTimeoutMs'],
      ['shared', 'pool'],
      [[], 'pool'],
    ]) {
      assert.throws(
        () => host.pool({ ...spec(dir), pool: bad }),
        (e) => e instanceof acp.AcpError && e.code === 'invalid_config' && e.data?.path === at,
        JSON.stringify(bad),
      );
    }
    assert.throws(
      () => host.pool({ ...spec(dir), restart: { maxRestarts: -1 } }),
      (e) => e instanceof acp.AcpError && e.code === 'invalid_config' && e.data?.path === 'restart.maxRestarts',
    );
    assert.throws(() => host.pool({ pool: {} }), (e) => e.code === 'invalid_config' && e.data?.path === 'command');
    // A good one starts its spare; none of the bad ones started anything.
    const pool = host.pool({ ...spec(dir), pool: { warmSpares: 1, idleTimeoutMs: null } });
    await withTimeout(pool.ready(), T, 'the spare is up');
    assert.equal(starts(dir), 1);
  } finally {
    await host.close();
  }
  assert.deepEqual(processesOf(dir), []);
});

test('a spec that cannot start: openSession and ready reject with spawn_failed', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    const pool = host.pool({ command: path.join(dir, 'missing'), pool: { warmSpares: 1 } });
    await assert.rejects(pool.openSession({ cwd: dir }), code('spawn_failed'));
    await assert.rejects(withTimeout(pool.ready(), T, 'ready'), code('spawn_failed'));
    const { agents, spares } = pool.stats();
    assert.deepEqual([agents, spares], [0, 0]);
  } finally {
    await host.close();
  }
});

/** Run a script in a fresh node process; it must exit by itself within `ms`. */
function runChild(script, ms = 10_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ACP_PKG: PKG_DIR },
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
    child.on('exit', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, out, err });
    });
  });
}

const PRELUDE = (dir) => `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Host } = require(process.env.ACP_PKG);
const spec = ${JSON.stringify(spec(dir))};
`;

test('after host.close() an open pool keeps neither the Node process nor an agent alive', async () => {
  const dir = tmpdir();
  const r = await runChild(`${PRELUDE(dir)}
const host = new Host();
const pool = host.pool({ ...spec, pool: { mode: 'shared', warmSpares: 1 } });
await pool.ready();
const session = await pool.openSession({ cwd: ${JSON.stringify(dir)} });
const turn = await session.prompt('hello');
await host.close();
console.log(JSON.stringify({ stopReason: turn.stopReason }));
`);
  assert.equal(r.status, 0, r.err);
  assert.equal(JSON.parse(r.out.trim()).stopReason, 'end_turn');
  assert.ok(starts(dir) >= 1);
  assert.deepEqual(processesOf(dir), []);
});

test('after pool.shutdown() (host left open) the Node process exits by itself', async () => {
  const dir = tmpdir();
  const r = await runChild(`${PRELUDE(dir)}
const host = new Host();
const pool = host.pool({ ...spec, pool: { warmSpares: 2 } });
await pool.ready();
const session = await pool.openSession({ cwd: ${JSON.stringify(dir)} });
const turn = await session.prompt('hello');
await pool.shutdown();
console.log(JSON.stringify({ stopReason: turn.stopReason }));
`);
  assert.equal(r.status, 0, r.err);
  assert.equal(JSON.parse(r.out.trim()).stopReason, 'end_turn');
  assert.ok(starts(dir) >= 2, 'the spares were started');
  assert.deepEqual(processesOf(dir), []);
});
