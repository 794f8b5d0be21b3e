// Interop: a real turn against the official TypeScript SDK's example agent
// (@agentclientprotocol/sdk 1.9.0, fixtures/interop/ts-agent, installed by scripts/setup),
// with an async permission handler allowing, and with the default policy denying.
import { describe as suite, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { acp, ROOT, collectUntil, ofKind, describe, waitGone, agentPid, withTimeout } from './helpers.mjs';

const AGENT = path.join(ROOT, 'fixtures/interop/ts-agent');
const MARKER = path.join(ROOT, 'fixtures/interop/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js');
const skip = process.env.ACP_SKIP_INTEROP ? 'ACP_SKIP_INTEROP is set' : false;

async function tsTurn(options) {
  assert.ok(fs.existsSync(MARKER), 'the TS SDK example agent is not installed: run scripts/setup (or set ACP_SKIP_INTEROP=1)');
  const host = new acp.Host(options);
  const events = host.events();
  try {
    const agent = await host.spawn({ command: AGENT });
    assert.equal(agent.info.protocolVersion, 1);
    const session = await agent.newSession({ cwd: os.tmpdir() });
    assert.match(session.id, /^[0-9a-f]{32}$/);
    const collecting = collectUntil(events, (e) => e.kind === 'turn_ended', 60_000);
    const turn = await withTimeout(session.prompt('hello'), 60_000, 'the TS agent turn');
    assert.equal(turn.stopReason, 'end_turn');
    const evs = await collecting;
    const state = session.state;
    const pid = agentPid(evs);
    await agent.shutdown();
    assert.ok(await waitGone(pid));
    return { evs, state };
  } finally {
    await host.close();
  }
}

const toolCall = (state, id) => state.toolCalls.find((t) => t.toolCallId === id);

// Each turn takes about 5 s of the agent's scripted sleeps: run both at once.
suite('interop with the TS SDK example agent', { concurrency: 2 }, () => {
  test('interop: TS SDK example agent, permission allowed by an async handler', { skip }, async () => {
    let asked = null;
    const { evs, state } = await tsTurn({
      onPermission: async (req) => {
        asked = req;
        await new Promise((r) => setTimeout(r, 10));
        return req.options.find((o) => o.kind === 'allow_once')?.optionId ?? null;
      },
    });
    assert.equal(asked.toolCall.toolCallId, 'call_2');
    assert.deepEqual(asked.options.map((o) => o.optionId), ['allow', 'reject']);
    const resolved = ofKind(evs, 'permission_resolved');
    assert.equal(resolved.length, 1);
    assert.deepEqual(resolved[0].data.outcome, { outcome: 'selected', optionId: 'allow' });
    assert.equal(resolved[0].data.decidedBy, 'host');
    assert.equal(toolCall(state, 'call_1').status, 'completed');
    assert.equal(toolCall(state, 'call_2').status, 'completed');
    assert.ok(evs.filter((e) => describe(e) === 'session_update:agent_message_chunk').length >= 2);
    for (let i = 1; i < evs.length; i++) assert.ok(evs[i].seq > evs[i - 1].seq);
  });

  test('interop: TS SDK example agent, denied by the default policy', { skip }, async () => {
    const { evs, state } = await tsTurn({});
    assert.equal(ofKind(evs, 'permission_requested').length, 1);
    const resolved = ofKind(evs, 'permission_resolved');
    assert.equal(resolved.length, 1);
    assert.deepEqual(resolved[0].data.outcome, { outcome: 'selected', optionId: 'reject' });
    assert.equal(resolved[0].data.decidedBy, 'rule');
    assert.equal(toolCall(state, 'call_2').status, 'pending', 'denied: the edit never completes');
    assert.equal(toolCall(state, 'call_1').status, 'completed');
  });
});
