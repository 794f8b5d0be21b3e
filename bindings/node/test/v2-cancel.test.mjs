// ACP v2 tool_call/cancel and terminal/cancel (session.cancelToolCall, cancelTerminal): the
// acceptance resolves the call, the completion is a later session_update; the failures are the
// core's (unsupported on v1 or without capabilities.cancel, invalid_argument for an unknown id,
// agent_error when the agent refuses).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';

import { acp, collectUntil, mock } from './helpers.mjs';

const CWD = os.tmpdir();
const code = (c) => (e) => e instanceof acp.AcpError && e.code === c;

/** Prompt a turn that waits for the cancel of `id`; cancel it once the host knows it. */
async function runCancelling(session, id, cancel) {
  const turn = session.prompt('go');
  for (let i = 0; ; i++) {
    try {
      assert.deepEqual(await cancel(id), {});
      break;
    } catch (e) {
      if (!code('invalid_argument')(e) || i > 1000) throw e;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  assert.equal((await turn).stopReason, 'end_turn');
}

test('a cancellable tool call and terminal: accepted, then confirmed by their updates', async () => {
  const host = new acp.Host({ unstable: ['protocol/v2'] });
  try {
    const events = host.events();
    const agent = await host.spawn(mock('v2-cancel'));
    const session = await agent.newSession({ cwd: CWD });
    await assert.rejects(session.cancelToolCall('call_1'), code('invalid_argument'));
    await runCancelling(session, 'call_1', (id) => session.cancelToolCall(id));
    const evs = await collectUntil(events, (e) => e.kind === 'turn_ended');
    assert.ok(evs.some((e) => e.kind === 'session_update' && e.data.toolCallId === 'call_1' && e.data.status === 'cancelled'));
    await assert.rejects(session.cancelToolCall('call_1'), code('unsupported'));
    await assert.rejects(session.cancelTerminal('call_1'), code('invalid_argument'));
    await runCancelling(session, 'term_2', (id) => session.cancelTerminal(id));
    await assert.rejects(session.cancelTerminal('term_2'), code('unsupported'));
    await session.prompt('three');
    await assert.rejects(session.cancelToolCall('call_3'), code('unsupported'));
    await assert.rejects(session.cancelTerminal('term_3'), code('unsupported'));
    await assert.rejects(session.cancelToolCall('refused_3'), code('agent_error'));
  } finally {
    await host.close();
  }
});

test('on a v1 connection the cancels are unsupported', async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn(mock('v2-cancel'));
    const session = await agent.newSession({ cwd: CWD });
    await assert.rejects(session.cancelToolCall('call_1'), code('unsupported'));
    await assert.rejects(session.cancelTerminal('term_1'), code('unsupported'));
  } finally {
    await host.close();
  }
});
