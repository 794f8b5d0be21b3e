// Supervised agents (`spawn({ restart })`): a dead agent comes back under the same id, its
// sessions reopened, and the embedder's Agent and Session objects keep working; a crash loop gives
// up with `agent_failed`; shutdown and close stop a restart at once and leave no process; a bad
// policy is an `invalid_config` error and starts nothing.
//
// The agent is the mock behind a small shell wrapper (as in core/tests/integration/supervisor.rs) that counts
// its starts in the test's directory and runs that start's instructions (`start.N`, else
// `start.rest`) before exec'ing the mock: set ARGS, export a variable, or `exit N`.
// ACP_MOCK_STATE_DIR makes the mock keep its sessions across processes, as real agents do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';

import { acp, T, PKG_DIR, MOCK, NODE_WRAPPER, mock, tmpdir, collectUntil, ofKind, withTimeout, waitGone, alive, mockChildrenOf, wrapperProcesses } from './helpers.mjs';

const WIN = process.platform === 'win32';
// How a `process.kill(pid, 'SIGKILL')` exit reads: Windows has no signals (libuv terminates the
// process with exit code 1), so the signal there is null.
const KILLED = WIN ? null : 'SIGKILL';

const CWD = os.tmpdir();

const WRAPPER = `d=$0; m=$1; n=$(( $(cat "$d/starts" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/starts"; ARGS=""
if [ -f "$d/start.$n" ]; then . "$d/start.$n"; elif [ -f "$d/start.rest" ]; then . "$d/start.rest"; fi
exec "$m" $ARGS`;

/** Short backoffs: the tests wait for events, never for the defaults. */
const FAST = { maxRestarts: 3, backoffMs: 20, maxBackoffMs: 200 };

/**
 * One start's instruction `{ args, stderr, exit }` (mock arguments; a line to stderr; exit with a
 * code instead of running the mock), written for this platform's wrapper: shell lines for the
 * /bin/sh one, JSON for Windows' node one (helpers.mjs NODE_WRAPPER).
 */
function writeStart(dir, n, { args, stderr, exit }) {
  if (WIN) return fs.writeFileSync(path.join(dir, `start.${n}.json`), JSON.stringify({ args, stderr, exit }));
  const lines = [];
  if (args) lines.push(`ARGS="${args.join(' ')}"`);
  if (stderr) lines.push(`echo '${stderr}' >&2`);
  if (exit !== undefined) lines.push(`exit ${exit}`);
  fs.writeFileSync(path.join(dir, `start.${n}`), lines.join('; '));
}

/** The command and arguments of the wrapper around the mock in `dir`. */
const wrapper = (dir) => (WIN ? { command: process.execPath, args: ['-e', NODE_WRAPPER, dir, MOCK] } : { command: '/bin/sh', args: ['-c', WRAPPER, dir, MOCK] });

/** Spawn options of the supervised wrapper; `starts` maps a start number (or `rest`) to an instruction. */
function supervised(dir, starts, restart) {
  for (const [n, step] of Object.entries(starts)) writeStart(dir, n, step);
  return {
    ...wrapper(dir),
    env: { ACP_MOCK_STATE_DIR: dir, ACP_MOCK_EXIT_ON: null, ACP_MOCK_CREDENTIALS: null },
    restart,
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

/** A start instruction running a scenario whose `initialize` advertises `caps`. */
function scenarioWithCaps(dir, name, caps) {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ description: 'bindings/node/test/supervisor.test.mjs', initialize: { agentCapabilities: caps } }));
  return { args: ['--scenario', file] };
}

/** The kinds of `evs` without the agents' stderr lines (their timing is the OS's). */
const trace = (evs) => evs.map((e) => e.kind).filter((k) => k !== 'agent_stderr');

/** Everything an iterator yields until it ends; fails if it does not end within `ms`. */
async function toEnd(it, ms = T) {
  const got = [];
  await withTimeout(
    (async () => {
      for await (const ev of it) got.push(ev);
    })(),
    ms,
    `the stream ends; got: ${trace(got).join(' ')}`,
  );
  return got;
}

/** Tracks whether a promise settled, without waiting for it. */
function settled(promise) {
  const state = { done: false };
  promise.then(
    () => (state.done = true),
    () => (state.done = true),
  );
  return state;
}

test('a crash mid-turn: the prompt rejects with agent_exited, the agent restarts under its id and the same Session prompts again', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  const stream = host.events();
  try {
    const agent = await host.spawn(supervised(dir, { 1: { args: ['--scenario', 'crash-mid-turn'] } }, FAST));
    assert.equal(agent.supervised, true);
    const firstPid = agent.pid;
    assert.equal(typeof firstPid, 'number');
    const gone = settled(agent.exited);
    const session = await agent.newSession({ cwd: CWD });
    const agentEvents = agent.events();
    const sessionEvents = session.events();

    const collecting = collectUntil(stream, (e) => e.kind === 'agent_restarted');
    const err = await withTimeout(
      session.prompt('go').then(
        () => null,
        (e) => e,
      ),
      T,
      'the prompt settles',
    );
    assert.ok(err instanceof acp.AcpError, String(err));
    assert.equal(err.code, 'agent_exited');
    assert.equal(err.data.exitCode, 3);
    assert.match(err.data.stderrTail, /fatal: mock crash/);

    const evs = await collecting;
    const kinds = trace(evs);
    assert.deepEqual(kinds.slice(kinds.indexOf('turn_ended')), [
      'turn_ended',
      'session_closed',
      'agent_exited',
      'agent_restarting',
      'agent_ready',
      'session_opened',
      'agent_restarted',
    ]);
    assert.ok(
      evs.every((e) => e.agent === agent.id),
      'every event carries the one agent id',
    );
    const restarting = ofKind(evs, 'agent_restarting')[0].data;
    assert.equal(restarting.attempt, 1);
    assert.equal(restarting.maxRestarts, 3);
    assert.equal(restarting.delayMs, 20);
    assert.equal(restarting.error.kind, 'agent_exited');
    assert.equal(restarting.error.data.exitCode, 3);
    const reopened = ofKind(evs, 'session_opened').at(-1);
    assert.equal(reopened.session, session.id);
    assert.equal(reopened.data.origin, 'resume');
    const restarted = ofKind(evs, 'agent_restarted')[0].data;
    assert.deepEqual(restarted.recovered, [{ sessionId: session.id, via: 'resume' }]);
    assert.deepEqual(restarted.lost, []);

    // The same objects reach the new process.
    assert.notEqual(agent.pid, firstPid);
    assert.equal(restarted.pid, agent.pid);
    assert.equal(agent.exitInfo, null);
    assert.equal(agent.restartsExhausted, false);
    assert.equal(gone.done, false, 'a restarted agent has not exited');
    const turn = await session.prompt('again');
    assert.equal(turn.stopReason, 'end_turn');
    assert.ok(turn.text.length > 0);
    assert.equal(session.state.open, true);
    assert.ok(await waitGone(firstPid), `the crashed process ${firstPid} is gone`);
    assert.equal(starts(dir), 2);

    // The session's stream went on across the restart, up to the new turn's end.
    const mine = await collectUntil(sessionEvents, (e) => e.kind === 'turn_ended' && e.turn === turn.turn);
    const mineKinds = trace(mine);
    assert.deepEqual(
      ofKind(mine, 'session_opened').map((e) => e.data.origin),
      ['new', 'resume'],
    );
    assert.ok(mineKinds.indexOf('session_closed') < mineKinds.lastIndexOf('session_opened'), mineKinds.join(' '));

    // Shut down: the agent's stream ends after its last event, and it is gone.
    const pid = agent.pid;
    const exit = await agent.shutdown();
    assert.equal(exit.signal, null);
    assert.ok(await waitGone(pid));
    const rest = await toEnd(agentEvents);
    const agentKinds = trace(rest);
    assert.ok(agentKinds.includes('agent_restarting') && agentKinds.includes('agent_restarted'), agentKinds.join(' '));
    assert.equal(rest.at(-1).kind, 'agent_exited');
    assert.equal(rest.at(-1).data.reason, 'shutdown');
    assert.deepEqual(await withTimeout(agent.exited, T, 'exited'), exit);
  } finally {
    await host.close();
  }
});

test('an agent that cannot restart: agent_failed after maxRestarts attempts, restartsExhausted, later calls reject with agent_exited', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  const stream = host.events();
  try {
    const spec = supervised(dir, { 1: {}, rest: { stderr: 'cannot start', exit: 7 } }, { ...FAST, maxRestarts: 2 });
    const agent = await host.spawn(spec);
    const session = await agent.newSession({ cwd: CWD });
    const agentEvents = agent.events();
    const pid = agent.pid;
    process.kill(pid, 'SIGKILL');

    const evs = await collectUntil(stream, (e) => e.kind === 'agent_failed');
    assert.deepEqual(
      ofKind(evs, 'agent_restarting').map((e) => e.data.attempt),
      [1, 2],
    );
    const failed = ofKind(evs, 'agent_failed')[0];
    assert.equal(failed.agent, agent.id);
    assert.equal(failed.data.attempts, 2);
    assert.equal(typeof failed.data.error.kind, 'string');
    assert.equal(ofKind(evs, 'agent_restarted').length, 0);
    assert.equal(agent.restartsExhausted, true);
    assert.equal(starts(dir), 3);

    // Gone for good: exited resolves with how the agent's process ended, its stream has ended.
    const exit = await withTimeout(agent.exited, T, 'exited resolves after agent_failed');
    assert.equal(exit.signal, KILLED);
    assert.deepEqual(agent.exitInfo, exit);
    const mine = await toEnd(agentEvents);
    assert.equal(mine.at(-1).kind, 'agent_failed');
    await assert.rejects(session.prompt('hi'), (e) => e instanceof acp.AcpError && e.code === 'agent_exited');
    await assert.rejects(agent.newSession({ cwd: CWD }), (e) => e instanceof acp.AcpError && e.code === 'agent_exited');
    assert.equal(alive(pid), false);
  } finally {
    await host.close();
  }
  assert.equal(mockChildrenOf(process.pid).length, 0);
});

test('maxRestarts 0: agent_failed at once, no restart', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  const stream = host.events();
  try {
    const agent = await host.spawn(supervised(dir, {}, { maxRestarts: 0 }));
    process.kill(agent.pid, 'SIGKILL');
    const evs = await collectUntil(stream, (e) => e.kind === 'agent_failed');
    assert.equal(ofKind(evs, 'agent_restarting').length, 0);
    assert.equal(ofKind(evs, 'agent_failed')[0].data.attempts, 0);
    assert.equal(agent.restartsExhausted, true);
    assert.equal((await withTimeout(agent.exited, T, 'exited')).signal, KILLED);
    assert.equal(starts(dir), 1);
  } finally {
    await host.close();
  }
});

for (const how of ['agent.shutdown()', 'host.close()']) {
  test(`${how} during the backoff returns promptly: no restart, no process`, async () => {
    const dir = tmpdir();
    const host = new acp.Host();
    const stream = host.events();
    try {
      const agent = await host.spawn(supervised(dir, {}, { backoffMs: 60_000, maxBackoffMs: 60_000 }));
      const pid = agent.pid;
      const agentEvents = agent.events();
      process.kill(pid, 'SIGKILL');
      const evs = await collectUntil(stream, (e) => e.kind === 'agent_restarting');
      assert.equal(evs.at(-1).data.delayMs, 60_000);
      // Dead, a restart coming: not gone.
      assert.equal(agent.exitInfo?.signal, KILLED);
      assert.equal(agent.restartsExhausted, false);

      const started = Date.now();
      if (how === 'host.close()') await host.close();
      else await agent.shutdown();
      assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
      const exit = await withTimeout(agent.exited, T, 'exited resolves');
      assert.equal(exit.signal, KILLED);
      // The agent's stream ends although no event marks the end.
      const rest = await toEnd(agentEvents);
      assert.equal(ofKind(rest, 'agent_restarted').length, 0, trace(rest).join(' '));
      assert.ok(
        ofKind(rest, 'agent_ready').every((e) => e.data.pid === pid),
        'no new process got ready',
      );
      assert.equal(alive(pid), false);
      assert.equal(starts(dir), 1);
      assert.equal(mockChildrenOf(process.pid).length, 0);
    } finally {
      await host.close();
    }
  });
}

test('close while the restarted process is starting shuts that process down too', async () => {
  const dir = tmpdir();
  const host = new acp.Host({ shutdownGraceMs: 300 });
  const stream = host.events();
  try {
    // The second process never answers `initialize`; its ready event names its pid.
    const agent = await host.spawn(supervised(dir, { 2: { args: ['--sleep', '600000'] } }, FAST));
    process.kill(agent.pid, 'SIGKILL');
    await collectUntil(stream, (e) => e.kind === 'agent_restarting');
    // The new process is up once the wrapper counted its start and exec'd: wait for that.
    const deadline = Date.now() + T;
    let second = null;
    while (second === null) {
      assert.ok(Date.now() < deadline, 'the second start never happened');
      second = WIN ? secondStart(dir) : sleepChildOf(process.pid);
      if (second === null) await new Promise((r) => setTimeout(r, 20));
    }
    await host.close();
    assert.ok(await waitGone(second), `the starting process ${second} outlived close`);
    // Windows: the wrapper's child (the mock) too.
    if (WIN) assert.deepEqual(wrapperProcesses(dir), []);
    assert.equal(starts(dir), 2);
  } finally {
    await host.close();
  }
});

/** Windows: the second start's wrapper pid, once it has started the mock (helpers.mjs NODE_WRAPPER). */
function secondStart(dir) {
  try {
    const line = fs.readFileSync(path.join(dir, 'pids'), 'utf8').split('\n')[1];
    return line ? Number(line.split(' ')[0]) : null;
  } catch {
    return null;
  }
}

/** The pid of a `mock --sleep 600000` child of `ppid` (the wrapper exec'd into it), or null. */
function sleepChildOf(ppid) {
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (!cmd.endsWith('\u0000--sleep\u0000600000\u0000') || !cmd.includes('acp-mock-agent')) continue;
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === ppid && alive(Number(d))) return Number(d);
    } catch {
      // raced with an exiting process
    }
  }
  return null;
}

test('a session the restarted agent cannot reopen: session_lost, and the agent works with its new capabilities', async () => {
  const dir = tmpdir();
  const neither = scenarioWithCaps(dir, 'neither', { loadSession: false, sessionCapabilities: {} });
  const host = new acp.Host();
  const stream = host.events();
  try {
    // The first process offers resume; the restarted one neither resume nor load.
    const agent = await host.spawn(supervised(dir, { rest: neither }, FAST));
    const session = await agent.newSession({ cwd: CWD });
    const sessionEvents = session.events();
    process.kill(agent.pid, 'SIGKILL');

    const evs = await collectUntil(stream, (e) => e.kind === 'agent_restarted');
    const lost = ofKind(evs, 'session_lost');
    assert.equal(lost.length, 1);
    assert.equal(lost[0].agent, agent.id);
    assert.equal(lost[0].session, session.id);
    assert.equal(lost[0].data.sessionId, session.id);
    assert.equal(lost[0].data.error.kind, 'unsupported');
    const restarted = ofKind(evs, 'agent_restarted')[0].data;
    assert.deepEqual(restarted.recovered, []);
    assert.deepEqual(restarted.lost, [session.id]);
    assert.equal(agent.info.agentCapabilities.loadSession, false);
    assert.deepEqual(agent.info.agentCapabilities.sessionCapabilities, {});

    // The lost session's stream ends with session_lost; the session is no longer open.
    const mine = await toEnd(sessionEvents);
    assert.equal(mine.at(-1).kind, 'session_lost');
    assert.equal(session.state.open, false);
    await assert.rejects(session.prompt('hi'), (e) => e instanceof acp.AcpError && e.code === 'not_found');
    // The agent itself works again.
    const fresh = await agent.newSession({ cwd: CWD });
    assert.equal((await fresh.prompt('hi')).stopReason, 'end_turn');
  } finally {
    await host.close();
  }
});

test('an invalid restart policy is an invalid_config error and starts nothing', async () => {
  const dir = tmpdir();
  const host = new acp.Host();
  try {
    // Each at the core's full path; `null` is "not given" (docs/OPTIONS.md).
    const bad = [
      [5, 'restart'],
      ['fast', 'restart'],
      [[1], 'restart'],
      [() => 1, 'restart'],
      [{ maxRestart: 1 }, 'restart.maxRestart'],
      [{ maxRestarts: -1 }, 'restart.maxRestarts'],
      [{ backoffMs: 1.5 }, 'restart.backoffMs'],
      [{ backoffMs: '20' }, 'restart.backoffMs'],
      [{ resetAfterMs: Number.NaN }, 'restart.resetAfterMs'],
      [{ maxRestarts: Number.POSITIVE_INFINITY }, 'restart.maxRestarts'],
      [{ maxRestarts: 2 ** 40 }, 'restart.maxRestarts'],
      [{ maxRestarts: 1n }, 'restart.maxRestarts'],
    ];
    for (const [restart, at] of bad) {
      await assert.rejects(
        host.spawn(supervised(dir, {}, restart)),
        (e) => e instanceof acp.AcpError && e.code === 'invalid_config' && e.data?.path === at,
        `restart: ${inspect(restart)}`,
      );
    }
    assert.equal(starts(dir), 0, 'nothing was spawned');
    // Every field is optional; an `undefined` one is absent.
    const agent = await host.spawn(supervised(dir, {}, { maxRestarts: undefined }));
    assert.equal(agent.supervised, true);
    assert.equal(starts(dir), 1);
    const plain = await host.spawn(supervised(dir, {}, undefined));
    assert.equal(plain.supervised, false);
  } finally {
    await host.close();
  }
});

test('a supervised agent that gives up does not keep the Node process alive, one that restarts is pulled meanwhile', async () => {
  const dir = tmpdir();
  writeStart(dir, 'rest', { exit: 7 });
  const script = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Host } = require(process.env.ACP_PKG);
const host = new Host();
const agent = await host.spawn({
  ...JSON.parse(process.env.WRAPPER),
  env: { ACP_MOCK_STATE_DIR: process.env.DIR },
  restart: { maxRestarts: 2, backoffMs: 20 },
});
process.kill(agent.pid, 'SIGKILL');
// Nobody reads events: the host must still follow the restarts to the end.
const exit = await agent.exited;
console.log(JSON.stringify({ signal: exit.signal, exhausted: agent.restartsExhausted }));
`;
  writeStart(dir, 1, {});
  const r = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ACP_PKG: PKG_DIR, WRAPPER: JSON.stringify(wrapper(dir)), DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the node process did not exit by itself; stdout: ${out} stderr: ${err}`));
    }, T);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(JSON.parse(r.out.trim()), { signal: KILLED, exhausted: true });
  assert.equal(starts(dir), 3);
});

test('a terminal login relaunches a supervised agent supervised; the replaced one is gone and its stream ends', async () => {
  const dir = tmpdir();
  const creds = path.join(dir, 'creds');
  const login = (cmd) => spawnSync(cmd.command, cmd.args, { env: { ...process.env, ...cmd.env }, stdio: 'ignore' }).status;
  const host = new acp.Host({ onTerminalAuth: login });
  const stream = host.events();
  try {
    const agent = await host.spawn({ ...mock('auth-required'), env: { ACP_MOCK_CREDENTIALS: creds, ACP_MOCK_STATE_DIR: dir }, restart: FAST });
    const oldEvents = agent.events();
    const fresh = await agent.terminalAuth('mock-terminal');
    assert.equal(fresh.supervised, true);
    assert.notEqual(fresh.id, agent.id);
    await withTimeout(agent.exited, T, 'the replaced agent is gone');
    const old = await toEnd(oldEvents);
    assert.equal(old.at(-1).kind, 'agent_exited');
    assert.equal(old.at(-1).data.reason, 'shutdown');

    const session = await fresh.newSession({ cwd: CWD });
    const pid = fresh.pid;
    process.kill(pid, 'SIGKILL');
    const evs = await collectUntil(stream, (e) => e.kind === 'agent_restarted');
    assert.equal(evs.at(-1).agent, fresh.id);
    assert.deepEqual(evs.at(-1).data.recovered, [{ sessionId: session.id, via: 'resume' }]);
    assert.equal(ofKind(evs, 'agent_restarting').filter((e) => e.agent === agent.id).length, 0, 'the replaced agent is not restarted');
    assert.equal((await session.prompt('hi')).stopReason, 'end_turn');
  } finally {
    await host.close();
  }
});
