// session.steer() behind the `unstable` opt-in (docs/STEERING.md): injected into the running turn
// of an agent that advertises steering, queued then prompted as its own turn otherwise, rejected
// by a cancel; every step a `steer` event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';

import { acp, collectUntil, drain, mock, ofKind } from './helpers.mjs';

const CWD = os.tmpdir();
const OPT_IN = { unstable: ['_session/steering'] };

async function running(scenario, options = OPT_IN) {
  const host = new acp.Host(options);
  const events = host.events();
  const agent = await host.spawn(mock(scenario));
  const session = await agent.newSession({ cwd: CWD });
  const turn = session.prompt('go');
  const seen = await collectUntil(events, (e) => e.kind === 'turn_started');
  return { host, events, session, turn, started: seen.at(-1) };
}

test('steer without the opt-in rejects unsupported', async () => {
  const host = new acp.Host({});
  try {
    const agent = await host.spawn(mock('steering'));
    const session = await agent.newSession({ cwd: CWD });
    await assert.rejects(session.steer('hi'), (e) => e instanceof acp.AcpError && e.code === 'unsupported' && /_session\/steering/.test(e.message));
  } finally {
    await host.close();
  }
});

test('an agent that advertises steering takes the text into the running turn', async () => {
  const { host, events, session, turn, started } = await running('steering');
  try {
    const r = await session.steer('go left');
    assert.equal(r.outcome, 'injected');
    assert.equal(r.turn, started.turn);
    const result = await turn;
    assert.equal(result.text, 'workingsteered: go left done');
    const evs = await collectUntil(events, (e) => e.kind === 'turn_ended');
    const steers = ofKind(evs, 'steer');
    assert.deepEqual(steers.map((e) => [e.data.steer, e.data.outcome, e.turn]), [[r.steer, 'injected', started.turn]]);
    assert.equal(steers[0].data.prompt[0].text, 'go left');
  } finally {
    await host.close();
  }
});

test('without steering the text is queued, then prompted as its own turn', async () => {
  const { host, events, session, turn, started } = await running('no-steering');
  try {
    const r = await session.steer('next');
    assert.deepEqual([r.outcome, r.turn], ['queued', null]);
    const first = await turn;
    assert.equal(first.stopReason, 'end_turn');
    const evs = await collectUntil(events, (e) => e.kind === 'turn_ended' && e.turn === started.turn + 1);
    assert.deepEqual(
      ofKind(evs, 'steer').map((e) => [e.data.outcome, e.turn ?? null]),
      [['queued', null], ['prompted', started.turn + 1]],
    );
    const second = ofKind(evs, 'turn_started');
    assert.equal(second.length, 1);
    assert.equal(second[0].data.prompt[0].text, 'next');
  } finally {
    await host.close();
  }
});

test('a cancel rejects the queued steers and nothing more is prompted', async () => {
  const { host, events, session, turn } = await running('no-steering');
  try {
    const a = await session.steer('one');
    assert.equal(a.outcome, 'queued');
    await session.cancel();
    assert.equal((await turn).stopReason, 'cancelled');
    const evs = await collectUntil(events, (e) => e.kind === 'turn_ended');
    const rejected = ofKind(evs, 'steer').filter((e) => e.data.outcome === 'rejected');
    assert.deepEqual(rejected.map((e) => [e.data.steer, e.data.reason, e.data.prompt[0].text]), [[a.steer, 'cancelled', 'one']]);
    const after = await drain(events, 400);
    assert.equal(ofKind(after, 'turn_started').length, 0);
  } finally {
    await host.close();
  }
});

test('the agent refusing a steer rejects with its typed error', async () => {
  const { host, session, turn } = await running('steering');
  try {
    await assert.rejects(session.steer('!failed please'), (e) => e instanceof acp.AcpError && e.code === 'agent_error' && /the mock refuses/.test(e.message));
    await turn;
  } finally {
    await host.close();
  }
});
