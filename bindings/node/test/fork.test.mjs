// session/fork behind the `unstable` opt-in, and opt-in coalescing of tool_call_update bursts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';

import { acp, collectUntil, mock, ofKind } from './helpers.mjs';

const CWD = os.tmpdir();

test('forkSession without the unstable opt-in rejects unsupported and sends nothing', async () => {
  const host = new acp.Host({ wireEvents: true });
  try {
    const events = host.events();
    const agent = await host.spawn(mock());
    const session = await agent.newSession({ cwd: CWD });
    await assert.rejects(agent.forkSession(session.id, { cwd: CWD }), (e) => e instanceof acp.AcpError && e.code === 'unsupported' && /unstable/.test(e.message));
    await session.prompt('hello');
    const evs = await collectUntil(events, (e) => e.kind === 'turn_ended');
    const sent = ofKind(evs, 'wire').filter((e) => e.data.direction === 'out').map((e) => e.data.message.method);
    assert.ok(!sent.includes('session/fork'), `sent: ${sent}`);
  } finally {
    await host.close();
  }
});

test('forkSession with the opt-in opens a new session that takes prompts', async () => {
  const host = new acp.Host({ unstable: ['session/fork'] });
  try {
    const events = host.events();
    const agent = await host.spawn(mock());
    const original = await agent.newSession({ cwd: CWD });
    const fork = await agent.forkSession(original.id, { cwd: CWD });
    assert.notEqual(fork.id, original.id);
    const turn = await fork.prompt('hello');
    assert.equal(turn.stopReason, 'end_turn');
    const evs = await collectUntil(events, (e) => e.kind === 'turn_ended');
    const opened = ofKind(evs, 'session_opened');
    assert.deepEqual(opened.map((e) => e.data.origin), ['new', 'fork']);
    assert.equal(opened[1].session, fork.id);
  } finally {
    await host.close();
  }
});

test('coalesceToolCallUpdates: an unpulled burst of cumulative updates arrives as one event', async () => {
  const run = async (coalesce) => {
    const host = new acp.Host({ coalesceToolCallUpdates: coalesce });
    try {
      // A subscriber that takes one event and then nothing until the turn is over: the rest
      // waits in the host's queue (highWaterMark 1 stops the addon pulling).
      const events = host.events({ highWaterMark: 1 });
      const agent = await host.spawn(mock(null, ['--cumulative', '100']));
      const session = await agent.newSession({ cwd: CWD });
      await session.prompt('build');
      const evs = await collectUntil(events, (e) => e.kind === 'turn_ended');
      return evs.filter((e) => e.kind === 'session_update' && e.data.sessionUpdate === 'tool_call_update');
    } finally {
      await host.close();
    }
  };
  const off = await run(false);
  const on = await run(true);
  assert.equal(off.length, 101);
  assert.ok(on.length < off.length, `${on.length} events with coalescing`);
  const represented = on.reduce((n, e) => n + (e.data._meta?.acpHost?.coalesced ?? 1), 0);
  assert.equal(represented, 101, 'every update is accounted for');
  assert.equal(on.at(-1).data.status, 'completed');
  const lastContent = [...on].reverse().find((e) => e.data.content)?.data.content;
  assert.deepEqual(lastContent, off.at(-2).data.content, 'the newest output');
});
