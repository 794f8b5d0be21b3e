// The fail-closed permission matrix through the Node face: every way a permission request can end
// without a valid "allow" denies, resolves exactly once, reaches the agent, and the tool effect
// (the agent writing hello.txt through fs/write_text_file) does not happen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { acp, T, mock, tmpdir, collectUntil, drain, ofKind, withTimeout, allowOnce } from './helpers.mjs';

/** Drive `permission-write` with `options`; `during` runs once the permission was requested. */
async function permissionWrite(options, during = async () => {}) {
  const dir = tmpdir();
  const host = new acp.Host(options);
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('permission-write'));
    const session = await agent.newSession({ cwd: dir });
    const turn = session.prompt('write');
    turn.catch(() => {});
    const events = await collectUntil(stream, (e) => e.kind === 'permission_requested');
    const req = events.at(-1).data;
    await during({ host, session, agent, id: req.requestId });
    const result = await withTimeout(turn.then((r) => r, (e) => e), T, 'the turn must end');
    await agent.shutdown();
    events.push(...(await collectUntil(stream, (e) => e.kind === 'agent_exited')));
    const resolutions = ofKind(events, 'permission_resolved').map((e) => e.data);
    const statuses = events.filter((e) => e.data?.sessionUpdate === 'tool_call_update').map((e) => e.data.status);
    return { events, resolutions, result, written: fs.existsSync(path.join(dir, 'hello.txt')), toolStatus: statuses.at(-1) };
  } finally {
    await host.close();
  }
}

function assertDenied(run, decidedBy) {
  assert.equal(run.resolutions.length, 1, `exactly one resolution: ${JSON.stringify(run.resolutions)}`);
  assert.equal(run.resolutions[0].decidedBy, decidedBy, JSON.stringify(run.resolutions));
  assert.equal(run.written, false, `the file was written although the request was denied (${decidedBy})`);
}

test('allowed by the handler, the write happens (control case)', async () => {
  let seen;
  const run = await permissionWrite({
    onPermission: (req) => {
      seen = req;
      return allowOnce(req);
    },
  });
  assert.equal(run.resolutions[0].decidedBy, 'host');
  assert.equal(run.written, true);
  assert.equal(run.toolStatus, 'completed');
  assert.equal(ofKind(run.events, 'fs_write')[0].data.outcome, 'ok');
  // The request the handler saw: id, session, the tool call merged with the known one, options.
  assert.equal(typeof seen.requestId, 'number');
  assert.equal(seen.requestId, run.resolutions[0].requestId);
  assert.match(seen.sessionId, /^sess_/);
  assert.equal(seen.toolCall.title, 'Edit hello.txt', 'merged over the tool_call the session knows');
  assert.equal(seen.toolCall.kind, 'edit');
  assert.deepEqual(seen.options.map((o) => o.kind), ['allow_once', 'allow_always', 'reject_once', 'reject_always']);
  assert.ok(seen.signal instanceof AbortSignal);
});

test('an async handler resolving later is awaited', async () => {
  const run = await permissionWrite({
    onPermission: async (req) => {
      await new Promise((r) => setTimeout(r, 100));
      return allowOnce(req);
    },
  });
  assert.equal(run.resolutions[0].decidedBy, 'host');
  assert.equal(run.written, true);
});

test('no handler: the default deny-all policy denies', async () => {
  const run = await permissionWrite({});
  assertDenied(run, 'rule');
  assert.deepEqual(run.resolutions[0].outcome, { outcome: 'selected', optionId: 'reject-once' });
  assert.equal(run.toolStatus, 'failed', 'the agent saw the denial');
});

test('a handler returning null denies (decided by the host)', async () => {
  const run = await permissionWrite({ onPermission: () => null });
  assertDenied(run, 'host');
  assert.deepEqual(run.resolutions[0].outcome, { outcome: 'selected', optionId: 'reject-once' });
});

test('a throwing handler denies', async () => {
  const run = await permissionWrite({
    onPermission: () => {
      throw new Error('UI unavailable');
    },
  });
  assertDenied(run, 'invalid_answer');
  assert.equal(run.toolStatus, 'failed');
});

test('a rejecting handler denies', async () => {
  const run = await permissionWrite({ onPermission: async () => Promise.reject(new Error('nope')) });
  assertDenied(run, 'invalid_answer');
});

test('an option that was not offered denies', async () => {
  const run = await permissionWrite({ onPermission: () => 'allow-everything-forever' });
  assertDenied(run, 'invalid_answer');
});

test('a malformed answer (not a string) denies', async () => {
  const run = await permissionWrite({ onPermission: () => 42 });
  assertDenied(run, 'invalid_answer');
});

// The reason in `permission_resolved` (and the `warn` log record): what the handler threw, with
// its stack, so a handler's bug can be found from the event alone.
const HERE = /fail-closed\.test\.mjs:\d+/;

function reasonOf(run) {
  assertDenied(run, 'invalid_answer');
  return run.resolutions[0].reason;
}

test('a throwing handler: the reason carries its message and stack, and a warn log record says it', async () => {
  const records = [];
  const run = await permissionWrite({
    onLog: (r) => records.push(r),
    onPermission: function pickerThatBreaks() {
      throw new TypeError('UI unavailable');
    },
  });
  const reason = reasonOf(run);
  assert.ok(reason.startsWith('the permission handler failed: onPermission threw: TypeError: UI unavailable\n'), reason);
  assert.match(reason, /at pickerThatBreaks/);
  assert.match(reason, HERE, 'the stack names the handler\'s file and line');
  const session = ofKind(run.events, 'permission_requested')[0].session;
  const r = records.find((x) => x.target === 'permission');
  assert.equal(r?.level, 'warn', JSON.stringify(records));
  assert.equal(r.session, session);
  assert.ok(r.message.includes('UI unavailable') && HERE.test(r.message), r.message);
});

test('a rejecting handler: the reason says so, with the rejection\'s stack', async () => {
  const run = await permissionWrite({ onPermission: async () => Promise.reject(new Error('picker crashed')) });
  const reason = reasonOf(run);
  assert.ok(reason.startsWith('the permission handler failed: onPermission rejected: Error: picker crashed\n'), reason);
  assert.match(reason, HERE);
});

test('a handler throwing something that is not an Error: the reason shows it', async () => {
  for (const [thrown, want] of [
    ['plain text', 'onPermission threw: plain text'],
    [Object.create(null), 'onPermission threw: [object Object]'],
    [{ message: 'hand-made', stack: 'at somewhere' }, 'onPermission threw: [object Object]: hand-made\nat somewhere'],
  ]) {
    const run = await permissionWrite({
      onPermission: () => {
        throw thrown;
      },
    });
    assert.equal(reasonOf(run), `the permission handler failed: ${want}`);
  }
});

test('an option\'s name instead of its id: the reason says which ids were offered', async () => {
  const records = [];
  const run = await permissionWrite({
    onLog: (r) => records.push(r),
    onPermission: (req) => req.options.find((o) => o.kind === 'allow_once').name,
  });
  const reason = reasonOf(run);
  assert.match(reason, /is not one of the offered option ids \(allow-once, allow-always, reject-once, reject-always\)/);
  assert.match(reason, /id is expected, not its name/);
  assert.match(records.find((x) => x.target === 'permission')?.message ?? '', /not its name/);
  assert.match(reasonOf(await permissionWrite({ onPermission: () => 42 })), /onPermission must return an option id or null, got number/);
});

test('a handler that never answers is denied by the timeout, and its signal fires', async () => {
  let signal;
  const run = await permissionWrite({
    permissionTimeoutMs: 200,
    onPermission: (req) => {
      signal = req.signal;
      return new Promise(() => {});
    },
  });
  assertDenied(run, 'timeout');
  assert.equal(run.toolStatus, 'failed');
  assert.equal(signal.aborted, true, 'the handler is told the request was settled');
});

test('a request kept and read only after it was settled: its signal is already aborted, its tool call whole', async () => {
  // The signal and the tool call are made on first read: reading them late must see the same.
  let req;
  const run = await permissionWrite({
    permissionTimeoutMs: 200,
    onPermission: (r) => {
      req = r;
      return new Promise(() => {});
    },
  });
  assertDenied(run, 'timeout');
  assert.equal(req.signal.aborted, true, 'made after the timeout, the signal is aborted');
  assert.equal(req.signal.reason.code, 'already_resolved');
  assert.equal(req.toolCall.title, 'Edit hello.txt');
  const copy = { ...req };
  assert.deepEqual(Object.keys(copy).sort(), ['agent', 'options', 'requestId', 'sessionId', 'signal', 'toolCall', 'turn']);
  assert.equal(copy.toolCall, req.toolCall, 'parsed once');
  assert.equal(JSON.parse(JSON.stringify(req)).toolCall.kind, 'edit');
});

test('manual mode: unknown, stale and duplicate answers change nothing', async () => {
  const run = await permissionWrite({ permission: 'manual' }, async ({ host, id }) => {
    await assert.rejects(host.respondPermission(id + 1000, 'allow-once'), (e) => e instanceof acp.AcpError && e.code === 'not_found');
    await host.respondPermission(id, null);
    await assert.rejects(host.respondPermission(id, 'allow-once'), (e) => e.code === 'already_resolved');
  });
  assertDenied(run, 'host');
});

test('manual mode without an answer is denied by the timeout', async () => {
  const run = await permissionWrite({ permission: 'manual', permissionTimeoutMs: 200 });
  assertDenied(run, 'timeout');
});

test('respondPermission answers while the handler is still pending; the handler is told', async () => {
  let signal;
  const run = await permissionWrite(
    {
      onPermission: (req) => {
        signal = req.signal;
        return new Promise(() => {}); // a UI prompt somewhere else answers
      },
    },
    async ({ host, id }) => {
      await host.respondPermission(id, 'allow-once');
    },
  );
  assert.equal(run.resolutions.length, 1);
  assert.equal(run.resolutions[0].decidedBy, 'host');
  assert.equal(run.written, true);
  assert.equal(signal.aborted, true);
});

test('session.cancel() while pending answers cancelled', async () => {
  const run = await permissionWrite({ permission: 'manual' }, async ({ session }) => session.cancel());
  assertDenied(run, 'cancelled');
  assert.deepEqual(run.resolutions[0].outcome, { outcome: 'cancelled' });
});

test('host.close() while pending resolves it as disconnected', async () => {
  const run = await permissionWrite({ permission: 'manual', shutdownGraceMs: 300 }, async ({ host }) => {
    // Close in the background and keep reading: the remaining events are still delivered.
    void host.close();
  }).catch((e) => e);
  // The run's own shutdown after close is a no-op; the events were read to agent_exited.
  assertDenied(run, 'disconnected');
  assert.equal(run.resolutions[0].outcome, null);
  assert.ok(run.result instanceof acp.AcpError && run.result.code === 'closed', `the prompt fails with closed: ${run.result}`);
});

test('a hard deny rule beats a handler that allows', async () => {
  const run = await permissionWrite({
    policy: { preset: 'ask', rules: [{ action: 'deny', paths: ['**/hello.txt'] }] },
    onPermission: allowOnce,
  });
  assertDenied(run, 'rule');
  assert.match(run.resolutions[0].rule, /hello\.txt/);
});

test('the read-only preset denies an edit without asking', async () => {
  let asked = 0;
  const run = await permissionWrite({
    policy: 'read-only',
    onPermission: (req) => {
      asked++;
      return allowOnce(req);
    },
  });
  assertDenied(run, 'rule');
  assert.equal(asked, 0);
});

test('allow_always grants the session and nothing else', async () => {
  let asked = 0;
  const dir = tmpdir();
  const host = new acp.Host({
    onPermission: (req) => {
      asked++;
      return req.options.find((o) => o.kind === 'allow_always').optionId;
    },
  });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('permission-write'));
    const s1 = await agent.newSession({ cwd: dir });
    await s1.prompt('1');
    await s1.prompt('2');
    const s2 = await agent.newSession({ cwd: dir });
    await s2.prompt('3');
    const evs = await drain(stream, 300);
    assert.deepEqual(ofKind(evs, 'permission_resolved').map((e) => e.data.decidedBy), ['host', 'grant', 'host']);
    assert.equal(asked, 2);
  } finally {
    await host.close();
  }
});

test('an invalid policy is an invalid_config error at construction, with its path', () => {
  assert.throws(() => new acp.Host({ policy: 'yolo' }), (e) => e instanceof acp.AcpError && e.code === 'invalid_config' && /yolo/.test(e.message) && e.data.path.startsWith('policy'));
  assert.throws(() => new acp.Host({ policy: { rulez: [] } }), (e) => e.code === 'invalid_config' && /rulez/.test(e.message));
  assert.throws(() => new acp.Host({ roots: ['relative/dir'] }), (e) => e.code === 'invalid_config' && e.data.path === 'roots[0]');
  assert.throws(() => new acp.Host({ unstable: ['session/forks'] }), (e) => e.code === 'invalid_config' && e.data.path === 'unstable[0]' && /session\/forks/.test(e.message));
});
