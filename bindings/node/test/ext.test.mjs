// The agent's extension requests (`_vendor/method`) served by `onExtRequest`: its value is the
// result, a ServiceError the JSON-RPC error, anything else -32603; without it the agent gets -32601.
// The mock agent's `ext-request` scenario echoes what it got as the turn's message text.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { acp, mock, tmpdir, collectUntil, ofKind } from './helpers.mjs';

async function turn(options) {
  const host = new acp.Host(options);
  const events = host.events();
  try {
    const agent = await host.spawn(mock('ext-request'));
    const session = await agent.newSession({ cwd: tmpdir() });
    const collecting = collectUntil(events, (e) => e.kind === 'turn_ended');
    const result = await session.prompt('ext');
    const evs = await collecting;
    return { text: result.text, evs, session: session.id };
  } finally {
    await host.close();
  }
}

test('without onExtRequest the agent gets -32601 and nothing is reported', async () => {
  const { text, evs } = await turn({});
  assert.equal(text, 'ext error -32601 ping error -32601');
  assert.deepEqual(ofKind(evs, 'ext_request'), []);
});

test('the handler\'s value is the result, a ServiceError the error; each is an ext_request event', async () => {
  const calls = [];
  const { text, evs, session } = await turn({
    onExtRequest: (method, params) => {
      calls.push([method, params]);
      if (method === '_acp_host_test/buffers') return { text: 'unsaved' };
      throw new acp.ServiceError(-32042, 'no pings', { why: 'test' });
    },
  });
  assert.equal(text, 'ext ok unsaved ping error -32042');
  assert.equal(calls.length, 2);
  assert.equal(calls[0][0], '_acp_host_test/buffers');
  assert.equal(calls[0][1].sessionId, session, 'the handler gets the params');
  assert.match(calls[0][1].uri, /^file:\/\/.*\/a\.rs$/);
  assert.deepEqual(calls[1], ['_acp_host_test/ping', { n: 1 }]);
  const reported = ofKind(evs, 'ext_request');
  assert.deepEqual(
    reported.map((e) => [e.data.method, e.data.outcome, e.session ?? null]),
    [
      ['_acp_host_test/buffers', 'ok', session],
      ['_acp_host_test/ping', 'error', null],
    ],
  );
  assert.equal(reported[1].data.error.code, -32042);
  assert.equal(reported[1].data.error.message, 'no pings');
});

test('an async handler: its resolved value is the result, a rejected ServiceError the error', async () => {
  const { text } = await turn({
    onExtRequest: async (method, params) => {
      await new Promise((r) => setTimeout(r, 20));
      if (method === '_acp_host_test/ping') return { n: params.n + 41 };
      throw new acp.ServiceError(-32001, 'no buffers');
    },
  });
  assert.equal(text, 'ext error -32001 ping ok 42');
});

test('a plain Error (thrown or rejected) answers -32603 with its message', async () => {
  const { text, evs } = await turn({
    onExtRequest: (method) => {
      if (method === '_acp_host_test/ping') return Promise.reject(new Error('async boom'));
      throw new Error('boom');
    },
  });
  assert.equal(text, 'ext error -32603 ping error -32603');
  assert.deepEqual(
    ofKind(evs, 'ext_request').map((e) => [e.data.outcome, e.data.error?.code, e.data.error?.message]),
    [
      ['error', -32603, 'boom'],
      ['error', -32603, 'async boom'],
    ],
  );
});

test('undefined is a null result; onExtRequest must be a function', async () => {
  const { text } = await turn({ onExtRequest: () => undefined });
  // A null result is still a success (the mock echoes no field of it).
  assert.match(text, /^ext ok\b/);
  assert.match(text, / ping ok\b/);
  assert.throws(() => new acp.Host({ onExtRequest: 'nope' }), (e) => e instanceof acp.AcpError && e.code === 'invalid_config');
});
