// The event stream as a Node user sees it: the exact envelope of docs/EVENTS.md, one total order,
// independent subscribers, per-session streams, the EventEmitter convenience, materialised state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { acp, mock, tmpdir, collectUntil, drain, ofKind, describe, allowOnce } from './helpers.mjs';

const ENVELOPE_KEYS = ['seq', 'at', 'agent', 'session', 'turn', 'kind', 'replay', 'data'];

test('events have exactly the documented envelope, in one gapless order', async () => {
  const dir = tmpdir();
  fs.writeFileSync(path.join(dir, 'README.md'), '# hi\n');
  const host = new acp.Host({ onPermission: allowOnce });
  const a = host.events();
  const b = host.events();
  try {
    const agent = await host.spawn(mock('default'));
    const session = await agent.newSession({ cwd: dir });
    const turnP = session.prompt('hello');
    const evs = await collectUntil(a, (e) => e.kind === 'turn_ended');
    const turn = await turnP;
    assert.deepEqual(evs.map((e) => e.seq), evs.map((_, i) => i + 1), 'seq from 1 without gaps');
    for (const ev of evs) {
      for (const k of Object.keys(ev)) assert.ok(ENVELOPE_KEYS.includes(k), `unexpected key ${k}`);
      assert.match(ev.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(new Date(ev.at).toISOString(), ev.at, 'RFC 3339, UTC, milliseconds');
      assert.ok(Math.abs(Date.parse(ev.at) - Date.now()) < 60_000, `${ev.at} is now`);
      assert.equal(ev.agent, agent.id);
      assert.equal(typeof ev.replay, 'boolean');
      assert.equal(typeof ev.data, 'object');
    }
    const ready = evs[0];
    assert.equal(ready.kind, 'agent_ready');
    assert.equal(ready.session, undefined);
    assert.equal(ready.data.agentInfo.name, 'acp-mock-agent');
    assert.equal(typeof ready.data.pid, 'number');
    const updates = ofKind(evs, 'session_update');
    assert.ok(updates.every((e) => e.session === session.id && e.turn === turn.turn));
    assert.deepEqual(updates[0].data, { sessionUpdate: 'agent_message_chunk', messageId: 'msg_1', content: { type: 'text', text: 'Hello! ' } }, 'ACP JSON verbatim');
    assert.equal(evs.at(-1).data.stopReason, 'end_turn');
    assert.deepEqual(turn.usage, null);
    // A second subscriber sees the same events.
    const evsB = await collectUntil(b, (e) => e.kind === 'turn_ended');
    assert.deepEqual(evsB, evs);
    // The agent's negotiated info.
    assert.equal(agent.info.protocolVersion, 1);
    assert.equal(agent.info.agentInfo.name, 'acp-mock-agent');
    assert.equal(agent.info.agentCapabilities.loadSession, true);
    assert.deepEqual(agent.info.authMethods, []);
    // The materialised state.
    const st = session.state;
    assert.equal(st.sessionId, session.id);
    assert.equal(st.open, true);
    assert.equal(st.cwd, dir);
    assert.equal(st.toolCalls.length, 1);
    assert.equal(st.toolCalls[0].status, 'completed');
    assert.equal(st.plan.length, 3);
    assert.equal(st.usage.used, 1234);
    assert.equal(st.currentModeId, 'ask');
    assert.equal(st.activeTurn, null);
    assert.equal(st.lastStopReason, 'end_turn');
  } finally {
    await host.close();
  }
});

test('session.events() carries only its session; break unsubscribes', async () => {
  const host = new acp.Host();
  const all = host.events();
  try {
    const agent = await host.spawn(mock('default'));
    const s1 = await agent.newSession({ cwd: tmpdir() });
    const s2 = await agent.newSession({ cwd: tmpdir() });
    const e1 = s1.events();
    const e2 = s2.events();
    await s2.prompt('two');
    await s1.prompt('one');
    const got1 = await collectUntil(e1, (e) => e.kind === 'turn_ended');
    const got2 = await collectUntil(e2, (e) => e.kind === 'turn_ended');
    assert.ok(got1.length > 5 && got1.every((e) => e.session === s1.id));
    assert.ok(got2.length > 5 && got2.every((e) => e.session === s2.id));
    // Each stream starts at its session's beginning (session_opened), then its turn.
    assert.equal(got1[0].kind, 'session_opened');
    assert.equal(got2[0].kind, 'session_opened');
    assert.ok(got1[0].seq < got2[0].seq, 's1 was opened first');
    const turn2 = got2.find((e) => e.kind === 'turn_started');
    const turn1 = got1.find((e) => e.kind === 'turn_started');
    assert.ok(turn2.seq < turn1.seq, 's2 was prompted first');
    let n = 0;
    for await (const ev of all) {
      if (++n === 3) break;
      assert.ok(ev);
    }
    const r = await all.next();
    assert.equal(r.done, true, 'a broken-out iterator is finished');
  } finally {
    await host.close();
  }
});

test('EventEmitter convenience: "event" and per-kind events', async () => {
  const host = new acp.Host();
  const all = [];
  const updates = [];
  host.on('event', (ev) => all.push(ev));
  host.on('session_update', (ev) => updates.push(describe(ev)));
  try {
    const agent = await host.spawn(mock('default'));
    const session = await agent.newSession({ cwd: tmpdir() });
    await session.prompt('hello');
    await host.close();
    assert.ok(all.length > 10);
    assert.equal(all.at(-1).kind, 'agent_exited');
    assert.equal(updates.filter((u) => u === 'session_update:plan').length, 2);
    assert.deepEqual(all.map((e) => e.seq), all.map((_, i) => i + 1));
  } finally {
    await host.close();
  }
});

test('an iterator made with an aborted or later-aborted signal ends', async () => {
  const host = new acp.Host();
  try {
    const ac = new AbortController();
    const it = host.events({ signal: ac.signal });
    const pending = it.next();
    await host.spawn(mock('default'));
    const first = await pending;
    assert.equal(first.value.kind, 'agent_ready');
    ac.abort();
    assert.equal((await it.next()).done, true);
  } finally {
    await host.close();
  }
});

test('load replays are tagged replay', async () => {
  const host = new acp.Host();
  const events = host.events();
  try {
    const agent = await host.spawn(mock('load-replay'));
    const session = await agent.loadSession('sess_old', { cwd: tmpdir() });
    const evs = await collectUntil(events, (e) => e.kind === 'session_opened');
    assert.equal(evs.at(-1).data.origin, 'load');
    const replayed = [...evs, ...(await drain(events, 200))].filter((e) => e.replay);
    assert.ok(replayed.length > 0 && replayed.every((e) => e.kind === 'session_update' && e.session === 'sess_old'));
    assert.equal(session.id, 'sess_old');
  } finally {
    await host.close();
  }
});

test('modes and config options through the session', async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn(mock('modes-config'));
    const session = await agent.newSession({ cwd: tmpdir() });
    await session.setMode('code');
    assert.equal(session.state.currentModeId, 'code');
    const opts = await session.setConfigOption('mode', 'architect');
    assert.ok(Array.isArray(opts));
    await assert.rejects(session.setMode('nope'), (e) => e.code === 'invalid_argument');
    await assert.rejects(session.setConfigOption('nope', 'x'), (e) => e.code === 'invalid_argument');
    await assert.rejects(session.prompt([{ type: 'audio', data: '', mimeType: 'audio/wav' }]), (e) => e.code === 'unsupported');
  } finally {
    await host.close();
  }
});

test('list, resume, close, delete and authenticate', async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn(mock('list-resume-close-delete'));
    const page = await agent.listSessions();
    assert.ok(Array.isArray(page.sessions) && page.sessions.length > 0);
    const s = await agent.resumeSession('sess_a', { cwd: tmpdir() });
    await s.close();
    assert.equal(s.state.open, false);
    await agent.deleteSession('sess_b');
    const auth = await host.spawn(mock('auth-required'));
    await assert.rejects(auth.newSession({ cwd: tmpdir() }), (e) => e.code === 'auth_required');
    await auth.authenticate('mock-login');
    const ok = await auth.newSession({ cwd: tmpdir() });
    assert.equal((await ok.prompt('hi')).stopReason, 'end_turn');
    await assert.rejects(auth.authenticate('nope'), (e) => e.code === 'invalid_argument');
  } finally {
    await host.close();
  }
});

test('extension requests: an agent error carries the JSON-RPC code; non-extension names are refused', async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn(mock('minimal'));
    for (let i = 0; i < 2; i++) {
      await assert.rejects(agent.extRequest('_acp_host_test/ping', { n: i }), (e) => e instanceof acp.AcpError && e.code === 'agent_error' && e.data.code === -32601);
    }
    await assert.rejects(agent.extRequest('session/new', {}), (e) => e.code === 'invalid_argument');
  } finally {
    await host.close();
  }
});
