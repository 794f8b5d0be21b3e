// The ordering contract (issue 26): every event of a turn is queued in `session.events()` and
// `host.events()` before the turn's `prompt()` settles — even for a consumer slower than the
// agent — and a session stream opened at any time after `session_opened` starts there (or says
// exactly how many events it missed, `dropped` on its first event).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { acp, MOCK, tmpdir, collectUntil } from './helpers.mjs';

const CHUNKS = 200;
const RUNS = 20;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Whether `p` is already settled (its `then` runs before one queued after it). */
async function settled(p) {
  return Promise.race([p.then(() => true, () => true), Promise.resolve().then(() => false)]);
}

/**
 * A consumer that sleeps after each event. Once `settle()` was called (the prompt settled), every
 * `next()` it makes must be answered at once until the turn's `turn_ended`: those events were
 * already queued. Returns what it read and the `next()` calls that had to wait.
 */
function slowConsumer(it, isLast) {
  const got = [];
  const late = [];
  let promptSettled = false;
  const done = (async () => {
    for (;;) {
      const p = it.next();
      if (promptSettled && !(await settled(p))) late.push(got.length);
      const r = await p;
      if (r.done) return;
      got.push(r.value);
      if (isLast(r.value)) break;
      // Slow until the prompt settled; from then on it reads without yielding to the event loop,
      // so only what was queued at that moment can answer it.
      if (!promptSettled) await sleep(1);
    }
    await it.return();
  })();
  return { got, late, done, settle: () => (promptSettled = true) };
}

function checkTurn(evs, turn, what) {
  const mine = evs.filter((e) => e.turn === turn.turn);
  const seqs = mine.map((e) => e.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `${what}: seq order`);
  assert.equal(new Set(seqs).size, seqs.length, `${what}: no duplicate`);
  const chunks = mine.filter((e) => e.kind === 'session_update' && e.data.sessionUpdate === 'agent_message_chunk');
  assert.equal(chunks.length, CHUNKS, `${what}: every chunk`);
  assert.equal(mine.at(-1).kind, 'turn_ended', `${what}: ends with turn_ended`);
}

test(`a slow consumer has every event of the turn queued when prompt() settles (${RUNS} runs)`, async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn({ command: MOCK, args: ['--flood', String(CHUNKS)] });
    for (let run = 0; run < RUNS; run++) {
      const session = await agent.newSession({ cwd: tmpdir() });
      const ended = (e) => e.kind === 'turn_ended' && e.session === session.id;
      // A small high-water mark: the pump is held back by this consumer the whole turn.
      const mine = slowConsumer(session.events({ highWaterMark: 8 }), ended);
      const all = slowConsumer(host.events(), ended);
      const turn = await session.prompt('flood');
      mine.settle();
      all.settle();
      await Promise.all([mine.done, all.done]);
      assert.deepEqual(mine.late, [], `run ${run}: session.events() had to wait after prompt() settled`);
      assert.deepEqual(all.late, [], `run ${run}: host.events() had to wait after prompt() settled`);
      checkTurn(mine.got, turn, `run ${run} session.events()`);
      checkTurn(all.got.filter((e) => e.session === session.id), turn, `run ${run} host.events()`);
    }
  } finally {
    await host.close();
  }
});

test('a pooled prompt settles after its events are queued too', async () => {
  const host = new acp.Host();
  try {
    const pool = host.pool({ command: MOCK, args: ['--flood', String(CHUNKS)], pool: { warmSpares: 0, maxAgents: 1 } });
    const s = await pool.openSession({ cwd: tmpdir() });
    for (let run = 0; run < 5; run++) {
      // The stream starts at session_opened: this run's turn_ended is the (run + 1)th.
      let ends = 0;
      const c = slowConsumer(s.events({ highWaterMark: 8 }), (e) => e.kind === 'turn_ended' && ++ends === run + 1);
      const turn = await s.prompt('flood');
      c.settle();
      await c.done;
      assert.deepEqual(c.late, [], `run ${run}`);
      checkTurn(c.got, turn, `run ${run}`);
      assert.deepEqual(Object.keys(turn).sort(), ['raw', 'stopReason', 'text', 'textTruncated', 'thought', 'turn', 'usage']);
    }
  } finally {
    await host.close();
  }
});

test('a session stream opened late starts at session_opened: before a turn, mid-turn, after it', async () => {
  const host = new acp.Host();
  const truth = host.events();
  try {
    const agent = await host.spawn({ command: MOCK, args: ['--flood', String(CHUNKS)] });
    const session = await agent.newSession({ cwd: tmpdir() });
    const before = session.events();
    const prompt = session.prompt('flood');
    // Mid-turn: once some of its chunks were dispatched.
    const seen = await collectUntil(truth, (e) => e.kind === 'session_update' && e.data.sessionUpdate === 'agent_message_chunk');
    const mid = session.events();
    const turn = await prompt;
    const after = session.events();
    const second = await session.prompt('flood');
    const afterTwo = session.events();
    const rest = await collectUntil(truth, (e) => e.kind === 'turn_ended' && e.turn === second.turn);
    const want = [...seen, ...rest].filter((e) => e.session === session.id).map((e) => e.seq);
    assert.equal(want.length > 2 * CHUNKS, true);
    for (const [name, it] of [['before', before], ['mid', mid], ['after', after], ['afterTwo', afterTwo]]) {
      const got = await collectUntil(it, (e) => e.kind === 'turn_ended' && e.turn === second.turn);
      assert.equal(got[0].kind, 'session_opened', name);
      assert.equal(got[0].dropped, undefined, name);
      assert.deepEqual(got.map((e) => e.seq), want, `${name}: everything of the session, in order`);
      it.return();
    }
    assert.ok(turn.turn < second.turn);
  } finally {
    await host.close();
  }
});

test('past the history bound a late stream says exactly how many events it missed', async () => {
  const host = new acp.Host({ earlyUpdateLimit: 50 });
  const truth = host.events();
  try {
    const agent = await host.spawn({ command: MOCK, args: ['--flood', String(CHUNKS)] });
    const session = await agent.newSession({ cwd: tmpdir() });
    const turn = await session.prompt('flood');
    const all = (await collectUntil(truth, (e) => e.kind === 'turn_ended' && e.turn === turn.turn)).filter((e) => e.session === session.id);
    const got = await collectUntil(session.events(), (e) => e.kind === 'turn_ended');
    assert.equal(got.length, 50);
    assert.equal(got[0].dropped, all.length - got.length, 'the exact count of missing events');
    // What is kept is the tail (the hub's history): contiguous with the live events.
    assert.deepEqual(got.map((e) => e.seq), all.slice(-50).map((e) => e.seq));
  } finally {
    await host.close();
  }
});
