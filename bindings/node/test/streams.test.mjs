// The per-agent and per-session streams: a session's stream starts at its beginning
// (session_opened, updates sent before the open response, a load replay) even when those were
// dispatched before the caller had the Session; agent.events(); Session and Agent as async
// disposables; per-call timeouts with AbortSignal.timeout. Ground truth is a host.events()
// subscriber made before the spawn: a session stream must equal its session's events in it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { acp, T, mock, tmpdir, collectUntil, drain, describe, withTimeout } from './helpers.mjs';

const dispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');

/** Everything the host emits, read in the background; `until(pred)` waits for a matching event. */
function record(host) {
  const evs = [];
  let wake = null;
  const it = host.events();
  const done = (async () => {
    for await (const ev of it) {
      evs.push(ev);
      wake?.();
    }
  })();
  return {
    evs,
    done,
    of: (session) => evs.filter((e) => e.session === session),
    async until(pred, ms = T) {
      const deadline = Date.now() + ms;
      while (!evs.some(pred)) {
        if (Date.now() > deadline) throw new Error(`timed out; got ${evs.map(describe).join(' ')}`);
        await new Promise((r) => {
          wake = r;
          setTimeout(r, 20);
        });
      }
      return evs.find(pred);
    },
    /** The host stream is read in the background, independently of a session stream: wait until
     *  it has reached `seq` before comparing the two. */
    async through(seq, ms = T) {
      await this.until((e) => e.seq >= seq, ms);
      return this;
    },
  };
}

/** A scenario file for this test (a path: the mock reads it as such). */
function scenario(obj) {
  const file = path.join(tmpdir('acp-scn-'), 'scenario.json');
  fs.writeFileSync(file, JSON.stringify({ description: 'node streams test', ...obj }));
  return file;
}

const seqs = (evs) => evs.map((e) => e.seq);
const EARLY = ['session_update:session_info_update', 'session_update:available_commands_update', 'session_update:current_mode_update'];

test('session.events() yields session_opened and the updates sent before session/new, then the turn, gap-free', async () => {
  const host = new acp.Host();
  const rec = record(host);
  try {
    const agent = await host.spawn(mock('early-updates'));
    const session = await agent.newSession({ cwd: tmpdir() });
    // Everything of the opening is dispatched before anyone subscribes to the session.
    await rec.until((e) => e.session === session.id && describe(e) === EARLY[2]);
    const stream = session.events();
    const turn = await session.prompt('hi');
    const got = await collectUntil(stream, (e) => e.kind === 'turn_ended');
    assert.deepEqual(got.slice(0, 4).map(describe), ['session_opened', ...EARLY]);
    assert.equal(got[0].data.origin, 'new');
    assert.equal(got[4].kind, 'turn_started');
    assert.equal(got.at(-1).turn, turn.turn);
    const truth = (await rec.through(got.at(-1).seq)).of(session.id).filter((e) => e.seq <= got.at(-1).seq);
    assert.deepEqual(seqs(got), seqs(truth), 'exactly the session\'s events, no gap, no duplicate');
    assert.deepEqual(got, truth, 'the same events as the host stream');
    assert.equal(got[0].dropped, undefined);
  } finally {
    await host.close();
  }
});

test('session.events() after loadSession yields the replay (replay: true) before the live events', async () => {
  const host = new acp.Host();
  const rec = record(host);
  try {
    const agent = await host.spawn(mock('load-replay'));
    const session = await agent.loadSession('sess_old', { cwd: tmpdir() });
    await rec.until((e) => e.session === 'sess_old' && e.replay && e.data.sessionUpdate === 'user_message_chunk' && e.data.messageId === 'u2');
    const stream = session.events();
    await session.prompt('continue');
    const got = await collectUntil(stream, (e) => e.kind === 'turn_ended');
    assert.equal(got[0].kind, 'session_opened');
    assert.equal(got[0].data.origin, 'load');
    const replay = got.slice(1, 9);
    assert.equal(replay.length, 8);
    assert.ok(replay.every((e) => e.replay && e.kind === 'session_update'));
    assert.deepEqual(replay.map((e) => e.data.sessionUpdate), [
      'user_message_chunk', 'agent_thought_chunk', 'agent_message_chunk', 'tool_call', 'tool_call_update', 'plan', 'agent_message_chunk', 'user_message_chunk',
    ]);
    assert.equal(got[9].kind, 'turn_started');
    assert.ok(got.slice(9).every((e) => !e.replay));
    assert.deepEqual(seqs(got), seqs((await rec.through(got.at(-1).seq)).of('sess_old').filter((e) => e.seq <= got.at(-1).seq)));
  } finally {
    await host.close();
  }
});

test('a stream made right after the open call (events still queued natively) is the same, without duplicates', async () => {
  const host = new acp.Host();
  const rec = record(host);
  try {
    const agent = await host.spawn(mock('early-updates'));
    const session = await agent.newSession({ cwd: tmpdir() });
    const stream = session.events(); // no waiting: part of the opening may still be on its way
    await session.prompt('hi');
    const got = await collectUntil(stream, (e) => e.kind === 'turn_ended');
    assert.deepEqual(got.slice(0, 4).map(describe), ['session_opened', ...EARLY]);
    assert.equal(new Set(seqs(got)).size, got.length);
    assert.deepEqual(seqs(got), seqs((await rec.through(got.at(-1).seq)).of(session.id).filter((e) => e.seq <= got.at(-1).seq)));
  } finally {
    await host.close();
  }
});

test('two sessions opening concurrently on one agent each get exactly their own opening', async () => {
  const host = new acp.Host();
  const rec = record(host);
  try {
    const agent = await host.spawn(mock('early-updates'));
    const other = await host.spawn(mock('load-replay'));
    const [a, b, c] = await Promise.all([
      agent.newSession({ cwd: tmpdir() }),
      agent.newSession({ cwd: tmpdir() }),
      other.loadSession('sess_old', { cwd: tmpdir() }),
    ]);
    assert.notEqual(a.id, b.id);
    for (const s of [a, b]) await rec.until((e) => e.session === s.id && describe(e) === EARLY[2]);
    await rec.until((e) => e.session === 'sess_old' && e.replay && e.data.messageId === 'u2');
    for (const s of [a, b]) {
      const got = await drain(s.events(), 100);
      assert.deepEqual(got.map(describe), ['session_opened', ...EARLY], `session ${s.id}`);
      assert.ok(got.every((e) => e.session === s.id && e.agent === agent.id));
      assert.deepEqual(seqs(got), seqs(rec.of(s.id)));
    }
    const loaded = await drain(c.events(), 100);
    assert.equal(loaded.length, 9);
    assert.ok(loaded.every((e) => e.agent === other.id));
  } finally {
    await host.close();
  }
});

test('a failing or aborted open call keeps nothing; the next one works', async () => {
  const hangs = scenario({ newSession: { before: [{ hang: true }] } });
  const host = new acp.Host();
  try {
    const agent = await host.spawn(mock('load-replay'));
    await assert.rejects(agent.loadSession('sess_missing', { cwd: tmpdir() }), (e) => e.code === 'agent_error');
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(agent.newSession({ cwd: tmpdir(), signal: ac.signal }), (e) => e.code === 'cancelled');
    const session = await agent.loadSession('sess_old', { cwd: tmpdir() });
    const got = await drain(session.events(), 200);
    assert.equal(got[0].kind, 'session_opened');
    assert.equal(got.length, 9);

    // Per-call timeout: the open call is never answered.
    const stuck = await host.spawn(mock(hangs));
    const started = Date.now();
    await assert.rejects(stuck.newSession({ cwd: tmpdir(), signal: AbortSignal.timeout(150) }), (e) => {
      assert.equal(e.code, 'cancelled');
      assert.equal(e.cause?.name, 'TimeoutError');
      return true;
    });
    assert.ok(Date.now() - started < 5000);
  } finally {
    await host.close();
  }
});

test('every session.events() call replays the session from its opening, before and after turns', async () => {
  const host = new acp.Host();
  const rec = record(host);
  try {
    const agent = await host.spawn(mock('early-updates'));
    const session = await agent.newSession({ cwd: tmpdir() });
    await rec.until((e) => e.session === session.id && describe(e) === EARLY[2]);
    const first = session.events();
    const second = session.events();
    const one = await session.prompt('one');
    const a = await collectUntil(first, (e) => e.kind === 'turn_ended');
    const b = await collectUntil(second, (e) => e.kind === 'turn_ended');
    assert.deepEqual(seqs(a), seqs(b));
    assert.equal(a[0].kind, 'session_opened');
    assert.deepEqual(seqs(a), seqs((await rec.through(a.at(-1).seq)).of(session.id)));
    const third = session.events();
    const two = await session.prompt('two');
    const c = await collectUntil(third, (e) => e.kind === 'turn_ended' && e.turn === two.turn);
    assert.equal(c[0].kind, 'session_opened', 'after a turn: still from the opening');
    assert.deepEqual(seqs(c), seqs((await rec.through(c.at(-1).seq)).of(session.id)));
    assert.ok(c.some((e) => e.kind === 'turn_ended' && e.turn === one.turn));
    await session[dispose]();
  } finally {
    await host.close();
  }
});

test('past the history bound the oldest events are dropped and the first event says how many', async () => {
  const host = new acp.Host({ earlyUpdateLimit: 4 });
  const rec = record(host);
  try {
    const agent = await host.spawn(mock('load-replay'));
    const session = await agent.loadSession('sess_old', { cwd: tmpdir() });
    await rec.until((e) => e.session === 'sess_old' && e.replay && e.data.messageId === 'u2');
    const got = await drain(session.events(), 100);
    const truth = rec.of('sess_old');
    assert.equal(truth.length, 9);
    assert.equal(got.length, 4);
    assert.equal(got[0].dropped, 5);
    assert.deepEqual(seqs(got), seqs(truth.slice(5)), 'the newest are kept, contiguous with what follows');
    assert.equal(truth[0].dropped, undefined, 'the host stream\'s event is not touched');
  } finally {
    await host.close();
  }
});

test('closing the session while iterating: the stream yields session_closed and ends; a later call yields the kept history and ends', async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn(mock('list-resume-close-delete'));
    const session = await agent.newSession({ cwd: tmpdir() });
    const stream = session.events();
    const reading = (async () => {
      const got = [];
      for await (const ev of stream) got.push(ev);
      return got;
    })();
    await session.close();
    const got = await withTimeout(reading, T, 'the session stream ends');
    assert.equal(got[0].kind, 'session_opened');
    assert.equal(got.at(-1).kind, 'session_closed');
    assert.equal(got.at(-1).data.reason, 'closed');
    // Opened after the close: the session's kept history, then the end.
    assert.deepEqual(seqs(await drain(session.events(), 100)), seqs(got));
    assert.equal(session.state.open, false);
  } finally {
    await host.close();
  }
});

test('agent.events(): only that agent, ending after its agent_exited; session streams end with it', async () => {
  const host = new acp.Host();
  try {
    const a = await host.spawn(mock('crash-mid-turn'));
    const b = await host.spawn(mock('default'));
    const aEvents = a.events();
    const bEvents = b.events({ highWaterMark: 4 });
    const session = await a.newSession({ cwd: tmpdir() });
    const sEvents = session.events();
    await assert.rejects(session.prompt('crash'), (e) => e.code === 'agent_exited');
    const bs = await b.newSession({ cwd: tmpdir() });
    await bs.prompt('hi');
    const gotA = await collectUntil(aEvents, () => false);
    assert.ok(gotA.every((e) => e.agent === a.id));
    assert.equal(gotA[0].kind, 'session_opened', 'from the subscription on');
    assert.equal(gotA.at(-1).kind, 'agent_exited');
    assert.equal(gotA.at(-1).data.exitCode, 3);
    const gotS = await collectUntil(sEvents, () => false);
    assert.equal(gotS.at(-1).kind, 'session_closed');
    assert.equal(gotS.at(-1).data.reason, 'agent_exited');
    assert.deepEqual(seqs(gotS), seqs(gotA.filter((e) => e.session === session.id)));
    // After the exit: an agent stream ends at once, a session stream yields the kept history and ends.
    assert.equal((await a.events().next()).done, true);
    assert.deepEqual(seqs(await drain(session.events(), 100)), seqs(gotS));
    const gotB = await collectUntil(bEvents, (e) => e.kind === 'turn_ended');
    assert.ok(gotB.length > 4 && gotB.every((e) => e.agent === b.id), 'a small highWaterMark only slows it down');
    const ac = new AbortController();
    const aborted = b.events({ signal: ac.signal });
    ac.abort();
    assert.equal((await aborted.next()).done, true);
  } finally {
    await host.close();
  }
});

test('agent.events() ends when the host closes', async () => {
  const host = new acp.Host({ shutdownGraceMs: 300 });
  const agent = await host.spawn(mock('default'));
  const stream = agent.events();
  const reading = (async () => {
    const got = [];
    for await (const ev of stream) got.push(ev);
    return got;
  })();
  await host.close();
  const got = await withTimeout(reading, T, 'the agent stream ends');
  assert.equal(got.at(-1).kind, 'agent_exited');
  assert.equal(got.at(-1).data.reason, 'shutdown');
});

test('Symbol.asyncDispose on a Session closes it; again, after the agent is gone, or without close support it does not throw', async () => {
  const noClose = scenario({ initialize: { agentCapabilities: { loadSession: true, sessionCapabilities: {} } } });
  const host = new acp.Host();
  const rec = record(host);
  try {
    const agent = await host.spawn(mock('list-resume-close-delete'));
    const session = await agent.newSession({ cwd: tmpdir() });
    assert.equal(typeof session[dispose], 'function');
    await session[dispose]();
    assert.equal(session.state.open, false);
    const closed = await rec.until((e) => e.kind === 'session_closed' && e.session === session.id);
    assert.equal(closed.data.reason, 'closed');
    await session[dispose](); // already closed: nothing sent, no throw

    const plain = await host.spawn(mock(noClose));
    const kept = await plain.newSession({ cwd: tmpdir() });
    await rec.until((e) => e.kind === 'session_opened' && e.session === kept.id && e.agent === plain.id);
    await kept[dispose](); // the agent cannot close sessions: nothing is sent
    assert.equal(kept.state.open, true, 'still open on the agent side');
    assert.equal(rec.evs.filter((e) => e.kind === 'session_closed' && e.agent === plain.id).length, 0);

    const gone = await agent.newSession({ cwd: tmpdir() });
    await agent.shutdown();
    await gone[dispose](); // the agent is gone
  } finally {
    await host.close();
  }
  assert.equal(host.agents.size, 0, 'nothing left to track');
});

test('Symbol.asyncDispose on an Agent shuts it down; twice or after host.close() it does not throw', async () => {
  const host = new acp.Host({ shutdownGraceMs: 300 });
  try {
    const agent = await host.spawn(mock('default'));
    assert.equal(typeof agent[dispose], 'function');
    await agent[dispose]();
    const exit = await withTimeout(agent.exited, T, 'agent.exited');
    assert.equal(exit.exitCode, 0);
    await agent[dispose]();
    const other = await host.spawn(mock('default'));
    await host.close();
    await other[dispose]();
    assert.ok(other.exitInfo);
  } finally {
    await host.close();
  }
});

test('every call taking CallOptions honours signal (AbortSignal.timeout is the per-call timeout)', async () => {
  const host = new acp.Host();
  const rec = record(host);
  try {
    const agent = await host.spawn(mock('list-resume-close-delete'));
    const session = await agent.newSession({ cwd: tmpdir() });
    const aborted = AbortSignal.abort(new Error('stop'));
    const calls = {
      authenticate: () => agent.authenticate('x', { signal: aborted }),
      logout: () => agent.logout({ signal: aborted }),
      newSession: () => agent.newSession({ signal: aborted }),
      loadSession: () => agent.loadSession('s', { signal: aborted }),
      resumeSession: () => agent.resumeSession('s', { signal: aborted }),
      forkSession: () => agent.forkSession('s', { signal: aborted }),
      listSessions: () => agent.listSessions({ signal: aborted }),
      closeSession: () => agent.closeSession('s', { signal: aborted }),
      deleteSession: () => agent.deleteSession('s', { signal: aborted }),
      extRequest: () => agent.extRequest('_x/y', {}, { signal: aborted }),
      setMode: () => session.setMode('code', { signal: aborted }),
      setConfigOption: () => session.setConfigOption('mode', 'code', { signal: aborted }),
      setModel: () => session.setModel('m', { signal: aborted }),
      close: () => session.close({ signal: aborted }),
      prompt: () => session.prompt('x', { signal: aborted }),
      spawn: () => host.spawn({ ...mock('default'), signal: aborted }),
    };
    for (const [name, f] of Object.entries(calls)) {
      await assert.rejects(f(), (e) => e instanceof acp.AcpError && e.code === 'cancelled' && e.cause?.message === 'stop', name);
    }
    assert.equal(session.state.open, true, 'nothing was sent');
    await rec.until((e) => e.kind === 'session_opened');
  } finally {
    await host.close();
  }
});

test('events: false: every stream ends at once, return values still work, nothing is retained', async () => {
  const host = new acp.Host({ events: false });
  try {
    const all = host.events();
    const agent = await host.spawn(mock('early-updates'));
    const session = await agent.newSession({ cwd: tmpdir() });
    const turn = await session.prompt('hi');
    assert.match(turn.text, /Hello from/);
    assert.equal(session.state.title, 'Early bird', 'the session view still applies early updates');
    for (const it of [all, host.events(), agent.events(), session.events()]) {
      assert.equal((await withTimeout(it.next(), T, 'a stream end')).done, true);
    }
  } finally {
    await host.close();
  }
});
