// Hostile JSON and working directories. What an agent nests 100,000 levels deep never reaches
// `ev.data` (the core refuses it: `protocol_error` `too_deep`), so no event makes
// `JSON.stringify` run out of stack; JSON the host hands over that cannot be parsed is an
// `AcpError` `protocol`; JSON we pass that would nest a message too deep is an `AcpError`
// `invalid_argument` (the core's limit; napi's own, 128, for what is deeper or refers to itself);
// a `cwd` that is not an existing directory is a typed error naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

import { acp, mock, tmpdir, collectUntil, ofKind, PKG_DIR, T } from './helpers.mjs';

const require = createRequire(import.meta.url);
const LIMIT = 100; // docs/ARCHITECTURE.md, "One nesting limit"

// A hand-written agent: on a prompt, an update nested 100,000 levels deep, one nested exactly at
// the limit, a request nested 100,000 levels deep, a plain update, the answer. Its extension
// methods answer deep results or echo their params. The host's answers to its own requests go
// to stderr.
const AGENT = String.raw`
const N = 100000;
const DEEP = '['.repeat(N) + '0' + ']'.repeat(N);
const AT_LIMIT = '['.repeat(97) + '0' + ']'.repeat(97); // message, params, update: 100 levels
const send = (line) => process.stdout.write(line + '\n');
const update = (text, meta) =>
  '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":' +
  '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"' + text + '"},"_meta":' + meta + '}}}';
require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  const { method, id } = msg;
  if (method === undefined) {
    process.stderr.write('answer ' + JSON.stringify(id) + ' ' + JSON.stringify(msg.error ? msg.error.code : null) + '\n');
  } else if (method === 'initialize') {
    send(JSON.stringify({ jsonrpc: '2.0', id, result: { protocolVersion: 1 } }));
  } else if (method === 'session/new') {
    send(JSON.stringify({ jsonrpc: '2.0', id, result: { sessionId: 's1' } }));
  } else if (method === 'session/prompt') {
    send(update('deep', DEEP));
    send(update('at-limit', AT_LIMIT));
    send('{"jsonrpc":"2.0","id":"d1","method":"_test/deep","params":{"x":' + DEEP + '}}');
    send(update('after', '{}'));
    send(JSON.stringify({ jsonrpc: '2.0', id, result: { stopReason: 'end_turn' } }));
  } else if (method === '_test/deep_result') {
    send('{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":{"x":' + DEEP + '}}');
  } else if (id !== undefined) {
    send(JSON.stringify({ jsonrpc: '2.0', id, result: msg.params === undefined ? null : msg.params }));
  }
});
`;

const agentSpec = () => ({ command: process.execPath, args: ['-e', AGENT] });

function nested(levels) {
  let v = 0;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

const textOf = (ev) => (ev.kind === 'session_update' ? ev.data.content?.text : undefined);

test('a deep update and a deep request never reach ev.data; the turn goes on', async () => {
  const host = new acp.Host();
  const events = host.events();
  try {
    const agent = await host.spawn(agentSpec());
    const session = await agent.newSession({ cwd: tmpdir() });
    const result = await session.prompt('go');
    assert.equal(result.stopReason, 'end_turn');
    assert.equal(result.text, 'at-limitafter');
    const evs = await collectUntil(events, (e) => e.kind === 'agent_stderr' && e.data.line.startsWith('answer'));
    const updates = ofKind(evs, 'session_update');
    assert.deepEqual(updates.map(textOf), ['at-limit', 'after'], 'the deep update is not an event');
    assert.deepEqual(updates[0].data._meta, nested(97), 'within the limit: forwarded whole');
    for (const ev of evs) {
      // A 100,000-deep payload would throw RangeError here.
      assert.ok(JSON.stringify(ev).length < 20_000, `nothing deep is forwarded: ${ev.kind}`);
    }
    const reports = ofKind(evs, 'protocol_error')
      .map((e) => e.data)
      .filter((d) => d.reason === 'too_deep');
    assert.deepEqual(
      reports.map((d) => [d.method, d.id ?? null, d.limit]),
      [
        ['session/update', null, LIMIT],
        ['_test/deep', 'd1', LIMIT],
      ],
    );
    const answers = ofKind(evs, 'agent_stderr').map((e) => e.data.line).filter((l) => l.startsWith('answer'));
    assert.deepEqual(answers, ['answer "d1" -32600'], 'the deep request was answered');
  } finally {
    await host.close();
  }
});

test('a deep result fails its call with AcpError protocol; the connection goes on', async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn(agentSpec());
    await assert.rejects(agent.extRequest('_test/deep_result'), (e) => {
      assert.ok(e instanceof acp.AcpError, String(e));
      assert.equal(e.code, 'protocol');
      assert.match(e.message, /deeper than/);
      return true;
    });
    assert.deepEqual(await agent.extRequest('_test/echo', { a: 1 }), { a: 1 });
  } finally {
    await host.close();
  }
});

test('JSON we pass that would nest a message too deep is invalid_argument, never a crash', async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn(agentSpec());
    // Params are level 2 of the request (and the echoed result of the answer): 99 more levels
    // fit, 100 do not.
    assert.deepEqual(await agent.extRequest('_test/echo', nested(LIMIT - 1)), nested(LIMIT - 1));
    const cyclic = { a: 1 };
    cyclic.self = cyclic;
    for (const params of [nested(LIMIT), nested(100_000), cyclic]) {
      await assert.rejects(agent.extRequest('_test/echo', params), (e) => {
        assert.ok(e instanceof acp.AcpError, String(e));
        assert.equal(e.code, 'invalid_argument');
        return true;
      });
    }
    const session = await agent.newSession({ cwd: tmpdir() });
    const deepBlock = { type: 'text', text: 'x', _meta: nested(100_000) };
    await assert.rejects(session.prompt(deepBlock), (e) => e instanceof acp.AcpError && e.code === 'invalid_argument');
    await assert.rejects(
      agent.newSession({ cwd: tmpdir(), mcpServers: [nested(100_000)] }),
      (e) => e instanceof acp.AcpError && e.code === 'invalid_argument',
    );
    assert.deepEqual(await agent.extRequest('_test/echo'), {}, 'the agent is still there');
  } finally {
    await host.close();
  }
});

test('JSON from the host that cannot be parsed is an AcpError protocol (the decoding path)', () => {
  const { parseHostJson } = require(path.join(PKG_DIR, 'dist', 'json.js'));
  const { decodeBatch } = require(path.join(PKG_DIR, 'dist', 'streams.js'));
  for (const decode of [(t) => parseHostJson(t, 'the text'), decodeBatch]) {
    assert.throws(
      () => decode('{"seq":1,"envs":[[1'),
      (e) => {
        assert.ok(e instanceof acp.AcpError, String(e));
        assert.equal(e.code, 'protocol');
        assert.ok(e.cause instanceof SyntaxError, 'JSON.parse\'s error is the cause');
        return true;
      },
    );
  }
  assert.deepEqual(parseHostJson('{"a":[1]}', 'x'), { a: [1] });
});

test('a cwd that is not an existing directory is a typed error naming it', { timeout: T * 2 }, async () => {
  const dir = tmpdir();
  const missing = path.join(dir, 'no-such-dir');
  const file = path.join(dir, 'a-file');
  fs.writeFileSync(file, 'x');
  const host = new acp.Host();
  try {
    for (const [cwd, why] of [
      [missing, 'does not exist'],
      [file, 'is not a directory'],
    ]) {
      await assert.rejects(host.spawn({ ...mock(), cwd }), (e) => {
        assert.ok(e instanceof acp.AcpError, String(e));
        assert.equal(e.code, 'invalid_config');
        assert.deepEqual(e.data, { path: 'cwd' });
        assert.ok(e.message.includes(cwd) && e.message.includes(why), e.message);
        assert.ok(!e.message.includes('could not start agent'), e.message);
        return true;
      });
    }
    const agent = await host.spawn({ ...mock(), cwd: dir });
    await assert.rejects(agent.newSession({ cwd: missing }), (e) => {
      assert.equal(e.code, 'invalid_config');
      assert.deepEqual(e.data, { path: 'cwd' });
      assert.ok(e.message.includes(missing), e.message);
      return true;
    });
    assert.ok((await agent.newSession({ cwd: dir })).id);
  } finally {
    await host.close();
  }
});
