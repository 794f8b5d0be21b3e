// AbortSignal on long calls: a prompt's signal sends session/cancel (the turn ends as the agent
// says, or rejects `cancelled` after cancelGraceMs when the agent ignores it); other calls are
// dropped (the agent is told with $/cancel_request) and reject `cancelled`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { acp, T, mock, tmpdir, collectUntil, drain, ofKind, withTimeout, describe, waitGone } from './helpers.mjs';

const CWD = os.tmpdir();

test('aborting a prompt cancels the turn: it ends with stopReason cancelled', async () => {
  const host = new acp.Host({ wireEvents: true });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('wait-for-cancel'));
    const session = await agent.newSession({ cwd: CWD });
    const ac = new AbortController();
    const turn = session.prompt('wait', { signal: ac.signal });
    await collectUntil(stream, (e) => describe(e) === 'session_update:tool_call');
    ac.abort();
    const r = await withTimeout(turn, T, 'the cancelled turn');
    assert.equal(r.stopReason, 'cancelled');
    const evs = await collectUntil(stream, (e) => e.kind === 'turn_ended');
    const sent = evs.filter((e) => e.kind === 'wire' && e.data.direction === 'out').map((e) => e.data.message.method);
    assert.ok(sent.includes('session/cancel'), sent.join());
    assert.equal(evs.at(-1).data.stopReason, 'cancelled');
    // The session is usable afterwards.
    assert.equal(session.state.activeTurn, null);
  } finally {
    await host.close();
  }
});

test('aborting a prompt answers its pending permission request cancelled', async () => {
  let signal;
  const host = new acp.Host({
    onPermission: (req) => {
      signal = req.signal;
      return new Promise(() => {});
    },
  });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('cancel-pending-permission'));
    const session = await agent.newSession({ cwd: CWD });
    const ac = new AbortController();
    const turn = session.prompt('ask', { signal: ac.signal });
    await collectUntil(stream, (e) => e.kind === 'permission_requested');
    ac.abort(new Error('user pressed stop'));
    assert.equal((await withTimeout(turn, T, 'turn')).stopReason, 'cancelled');
    const evs = await collectUntil(stream, (e) => e.kind === 'turn_ended');
    const res = ofKind(evs, 'permission_resolved');
    assert.equal(res.length, 1);
    assert.equal(res[0].data.decidedBy, 'cancelled');
    assert.equal(signal.aborted, true);
  } finally {
    await host.close();
  }
});

test('an already aborted signal rejects at once and sends nothing', async () => {
  const host = new acp.Host();
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('default'));
    const session = await agent.newSession({ cwd: CWD });
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(session.prompt('hello', { signal: ac.signal }), (e) => e instanceof acp.AcpError && e.code === 'cancelled');
    await assert.rejects(agent.newSession({ cwd: CWD, signal: ac.signal }), (e) => e.code === 'cancelled');
    const evs = await drain(stream, 200);
    assert.equal(ofKind(evs, 'turn_started').length, 0);
    assert.equal(ofKind(evs, 'session_opened').length, 1, 'only the first session was opened');
  } finally {
    await host.close();
  }
});

test('aborting a control call drops it: rejects cancelled, the agent gets $/cancel_request', async () => {
  const dir = tmpdir();
  const scenario = path.join(dir, 'new-session-hangs.json');
  fs.writeFileSync(scenario, JSON.stringify({ description: 'session/new is never answered', newSession: { before: [{ hang: true }] } }));
  const host = new acp.Host({ wireEvents: true });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock(scenario));
    const ac = new AbortController();
    const opening = agent.newSession({ cwd: CWD, signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    const started = Date.now();
    await assert.rejects(opening, (e) => e instanceof acp.AcpError && e.code === 'cancelled' && e.cause === ac.signal.reason);
    assert.ok(Date.now() - started < 5000);
    const evs = await drain(stream, 300);
    const sent = evs.filter((e) => e.kind === 'wire' && e.data.direction === 'out').map((e) => e.data.message.method);
    assert.ok(sent.includes('$/cancel_request'), sent.join());
  } finally {
    await host.close();
  }
});

test('aborting a spawn during the handshake takes the agent down', async () => {
  const host = new acp.Host();
  const stream = host.events();
  try {
    const ac = new AbortController();
    // The mock sleeping before it reads anything never answers initialize.
    const spawning = host.spawn({ ...mock(null, ['--sleep', '30000']), signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(spawning, (e) => e.code === 'cancelled');
    const evs = await collectUntil(stream, (e) => e.kind === 'agent_exited');
    assert.equal(evs.at(-1).kind, 'agent_exited');
  } finally {
    await host.close();
  }
});

test('aborting a prompt the agent never answers settles within cancelGraceMs; close() leaves nothing', async () => {
  const host = new acp.Host({ cancelGraceMs: 300, wireEvents: true });
  const stream = host.events();
  let pid;
  try {
    const agent = await host.spawn(mock('hang'));
    const session = await agent.newSession({ cwd: CWD });
    const ac = new AbortController();
    const turn = session.prompt('wait', { signal: ac.signal });
    turn.catch(() => {});
    const first = await collectUntil(stream, (e) => e.kind === 'session_update');
    pid = first.find((e) => e.kind === 'agent_ready').data.pid;
    const turnId = first.at(-1).turn;
    const started = Date.now();
    ac.abort();
    await assert.rejects(withTimeout(turn, T, 'the aborted turn'), (e) => e instanceof acp.AcpError && e.code === 'cancelled');
    const took = Date.now() - started;
    assert.ok(took >= 250 && took < 3000, `settled after ${took} ms`);
    const evs = await collectUntil(stream, (e) => e.kind === 'turn_ended');
    assert.equal(evs.at(-1).turn, turnId);
    assert.equal(evs.at(-1).data.error.kind, 'cancelled');
    const cancels = evs.filter((e) => e.kind === 'wire' && e.data.direction === 'out' && e.data.message.method === 'session/cancel');
    assert.equal(cancels.length, 1);
    // Aborting again after the promise settled changes nothing.
    ac.abort();
    const later = await drain(stream, 200);
    assert.equal(later.filter((e) => e.kind === 'wire' && e.data.direction === 'out').length, 0);
    assert.equal(session.state.activeTurn, null);
  } finally {
    const started = Date.now();
    await host.close();
    assert.ok(Date.now() - started < 10_000, 'close() within the shutdown ladder');
  }
  assert.ok(await waitGone(pid), `agent ${pid} left behind`);
});

test('aborting a settled prompt is a no-op', async () => {
  const host = new acp.Host({ wireEvents: true });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('default'));
    const session = await agent.newSession({ cwd: CWD });
    const ac = new AbortController();
    const r = await session.prompt('hello', { signal: ac.signal });
    assert.equal(r.stopReason, 'end_turn');
    await collectUntil(stream, (e) => e.kind === 'turn_ended');
    ac.abort();
    const later = await drain(stream, 200);
    assert.deepEqual(later.filter((e) => e.kind === 'wire' && e.data.direction === 'out').map((e) => e.data.message.method), []);
  } finally {
    await host.close();
  }
});
