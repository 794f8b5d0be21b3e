// Elicitation through the Node face (`onElicitation`, `elicitationModes`, `elicitation: 'manual'`,
// `respondElicitation`) against the mock agent's `elicitation` scenario: per turn, a form for a
// tool call, then a URL consent followed by `elicitation/complete`. The agent echoes what it got
// back as a message chunk ("form accept {...}", "url decline", "form error -32601"), so every
// test checks what the agent actually received, not only what the host reported.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { acp, T, mock, tmpdir, collectUntil, drain, ofKind, withTimeout } from './helpers.mjs';

const GOOD_FORM = { target: 'staging', replicas: 2 };
/** The valid answer to the scenario's form, and consent to its URL. */
const good = (req) => (req.mode === 'form' ? { action: 'accept', content: GOOD_FORM } : { action: 'accept' });

const texts = (evs) =>
  evs.filter((e) => e.kind === 'session_update' && e.data.sessionUpdate === 'agent_message_chunk').map((e) => e.data.content.text);

/** What the agent received for its form: `{action, content}` parsed from its echo. */
function formEcho(t) {
  const line = t.find((x) => x.startsWith('form '));
  assert.ok(line, `the agent echoed its form answer: ${JSON.stringify(t)}`);
  const [, action, rest] = line.match(/^form (\S+) ?(.*)$/);
  let content = null;
  try {
    content = JSON.parse(rest);
  } catch {
    // `$form.content` left unexpanded: no content was sent
  }
  return { action, content, line };
}

const urlEcho = (t) => t.find((x) => x.startsWith('url '));

/** `clientCapabilities` the host sent in `initialize` (needs `wireEvents`). */
function initializeCaps(evs) {
  const init = evs.find((e) => e.kind === 'wire' && e.data.message?.method === 'initialize');
  assert.ok(init, 'initialize on the wire');
  return init.data.message.params.clientCapabilities;
}

/**
 * One host, one agent running the `elicitation` scenario, `turns` prompts. `during(ctx)` runs
 * after each prompt was sent and may read events from `ctx.stream` into `ctx.events`; the rest of
 * the turn's events are collected up to `turn_ended`.
 */
async function deploy(options, { during, turns = 1, scenario = 'elicitation' } = {}) {
  const host = new acp.Host({ wireEvents: true, ...options });
  const stream = host.events();
  const events = [];
  const results = [];
  try {
    const agent = await host.spawn(mock(scenario));
    const session = await agent.newSession({ cwd: tmpdir() });
    for (let turn = 1; turn <= turns; turn++) {
      const prompt = session.prompt('deploy');
      prompt.catch(() => {});
      if (during) await during({ host, session, stream, events, turn });
      results.push(await withTimeout(prompt.then((r) => r, (e) => e), T, 'the turn must end'));
      events.push(...(await collectUntil(stream, (e) => e.kind === 'turn_ended')));
    }
    events.push(...(await drain(stream, 100)));
    const caps = host.clientCapabilities;
    await agent.shutdown();
    return { events, results, result: results[0], caps, texts: texts(events), resolved: ofKind(events, 'elicitation_resolved').map((e) => e.data) };
  } finally {
    await host.close();
  }
}

/** A handler that never answers by itself; `next()` resolves with each request it is handed. */
function handlerQueue() {
  const reqs = [];
  const waiters = [];
  return {
    handler: (req) => {
      const w = waiters.shift();
      if (w) w(req);
      else reqs.push(req);
      return new Promise(() => {});
    },
    next: () => withTimeout(reqs.length ? Promise.resolve(reqs.shift()) : new Promise((r) => waiters.push(r)), T, 'the handler is asked'),
  };
}

const aborted = (signal) => (signal.aborted ? Promise.resolve() : new Promise((r) => signal.addEventListener('abort', r, { once: true })));

/** Read events until one of `kind` arrives; returns it. */
async function next(ctx, kind) {
  const got = await collectUntil(ctx.stream, (e) => e.kind === kind);
  ctx.events.push(...got);
  return got.at(-1);
}

test('not configured: not advertised, and the agent gets method not found', async () => {
  const run = await deploy({});
  assert.equal(run.result.stopReason, 'end_turn');
  assert.equal(initializeCaps(run.events).elicitation, undefined, 'nothing advertised');
  assert.deepEqual(run.caps.elicitation, { form: false, url: false });
  assert.ok(run.texts.includes('form error -32601'), JSON.stringify(run.texts));
  assert.ok(run.texts.includes('url error -32601'), JSON.stringify(run.texts));
  assert.equal(run.events.filter((e) => e.kind.startsWith('elicitation')).length, 0);
});

test('elicitationModes alone (nobody answers) advertises nothing', async () => {
  const run = await deploy({ elicitationModes: ['form', 'url'] });
  assert.equal(initializeCaps(run.events).elicitation, undefined);
  assert.ok(run.texts.includes('form error -32601'), JSON.stringify(run.texts));
});

test('a handler answers a form and URL consent; the events tell the story', async () => {
  const seen = [];
  const run = await deploy({
    onElicitation: async (req) => {
      seen.push(req);
      if (req.mode === 'url') await new Promise((r) => setTimeout(r, 50)); // a Promise is awaited
      return good(req);
    },
  });
  assert.equal(run.result.stopReason, 'end_turn');
  assert.deepEqual(initializeCaps(run.events).elicitation, { form: {}, url: {} });
  assert.deepEqual(run.caps.elicitation, { form: true, url: true });
  // What the agent received.
  const form = formEcho(run.texts);
  assert.equal(form.action, 'accept', form.line);
  assert.deepEqual(form.content, GOOD_FORM, form.line);
  assert.equal(urlEcho(run.texts), 'url accept');
  // What the handler saw.
  assert.deepEqual(seen.map((r) => r.mode), ['form', 'url']);
  const [f, u] = seen;
  assert.equal(f.message, 'Where should I deploy?');
  assert.equal(f.toolCallId, 'call_1');
  assert.match(f.sessionId, /^sess_/);
  assert.equal(f.turn, 1);
  assert.equal(typeof f.agent, 'number');
  assert.equal(f.scopeRequestId, null);
  assert.equal(f.scopeKnown, true);
  assert.deepEqual(f.requestedSchema.required, ['target']);
  assert.deepEqual(f.requestedSchema.properties.target.enum, ['staging', 'production']);
  assert.equal('token' in f, false, 'no internal field leaks');
  assert.equal(u.url, 'https://example.invalid/login?turn=1');
  assert.equal(u.elicitationId, 'el_1');
  assert.equal(u.requestedSchema, undefined);
  for (const r of seen) {
    assert.ok(r.signal instanceof AbortSignal);
    assert.equal(r.signal.aborted, false, 'answered by the handler itself: not aborted');
  }
  // The events.
  const requested = ofKind(run.events, 'elicitation_requested').map((e) => e.data);
  assert.deepEqual(requested.map((r) => r.mode), ['form', 'url']);
  assert.deepEqual(requested.map((r) => r.requestId), seen.map((r) => r.requestId));
  assert.equal(run.resolved.length, 2, JSON.stringify(run.resolved));
  assert.deepEqual(run.resolved.map((r) => [r.requestId, r.action, r.decidedBy]), [
    [f.requestId, 'accept', 'host'],
    [u.requestId, 'accept', 'host'],
  ]);
  assert.deepEqual(run.resolved[0].fields, ['replicas', 'target']);
  assert.equal(run.resolved[0].content, undefined, 'the values stay with the embedder');
  assert.deepEqual(ofKind(run.events, 'elicitation_completed').map((e) => e.data), [{ elicitationId: 'el_1' }], 'only the known URL id completes');
});

test('decline is passed on as decline', async () => {
  const run = await deploy({ onElicitation: () => ({ action: 'decline' }) });
  assert.equal(formEcho(run.texts).action, 'decline');
  assert.equal(urlEcho(run.texts), 'url decline');
  assert.deepEqual(run.resolved.map((r) => [r.action, r.decidedBy]), [['decline', 'host'], ['decline', 'host']]);
});

test('form-only modes: the URL request is refused with -32602 and nobody is asked', async () => {
  const modes = [];
  const run = await deploy({
    elicitationModes: ['form'],
    onElicitation: (req) => {
      modes.push(req.mode);
      return good(req);
    },
  });
  assert.equal(run.result.stopReason, 'end_turn');
  assert.deepEqual(initializeCaps(run.events).elicitation, { form: {} });
  assert.deepEqual(run.caps.elicitation, { form: true, url: false });
  assert.equal(formEcho(run.texts).action, 'accept');
  assert.ok(run.texts.includes('url error -32602'), JSON.stringify(run.texts));
  assert.deepEqual(modes, ['form']);
  assert.equal(ofKind(run.events, 'elicitation_requested').length, 1);
  assert.equal(ofKind(run.events, 'elicitation_completed').length, 0);
  assert.ok(ofKind(run.events, 'protocol_error').some((e) => /url elicitation/.test(e.data.message)));
});

test('url-only modes: the form is refused with -32602', async () => {
  const run = await deploy({ elicitationModes: ['url'], onElicitation: good });
  assert.deepEqual(initializeCaps(run.events).elicitation, { url: {} });
  assert.ok(run.texts.includes('form error -32602'), JSON.stringify(run.texts));
  assert.equal(urlEcho(run.texts), 'url accept');
});

/** Every elicitation answered `cancel`, decided as `invalid_answer`, and the turn goes on. */
function assertCancelledAsInvalid(run, reason) {
  assert.equal(run.result.stopReason, 'end_turn', 'the connection survives');
  assert.equal(formEcho(run.texts).action, 'cancel', JSON.stringify(run.texts));
  assert.equal(urlEcho(run.texts), 'url cancel');
  assert.equal(run.resolved.length, 2, JSON.stringify(run.resolved));
  for (const r of run.resolved) {
    assert.equal(r.action, 'cancel');
    assert.equal(r.decidedBy, 'invalid_answer');
    assert.match(r.reason, reason);
  }
}

test('a throwing handler answers cancel', async () => {
  const run = await deploy({
    onElicitation: () => {
      throw new Error('no UI here');
    },
  });
  assertCancelledAsInvalid(run, /no UI here/);
});

test('a throwing handler\'s reason carries its message and stack; a warn log record says it', async () => {
  const records = [];
  const run = await deploy({
    onLog: (r) => records.push(r),
    onElicitation: function formThatBreaks() {
      throw new RangeError('form UI gone');
    },
  });
  assertCancelledAsInvalid(run, /^onElicitation threw: RangeError: form UI gone\n/);
  for (const r of run.resolved) {
    assert.match(r.reason, /at formThatBreaks/);
    assert.match(r.reason, /elicitation\.test\.mjs:\d+/);
  }
  const logged = records.filter((r) => r.target === 'elicitation');
  assert.equal(logged.length, 2, JSON.stringify(records));
  assert.ok(logged.every((r) => r.level === 'warn' && r.message.includes('form UI gone') && /elicitation\.test\.mjs/.test(r.message)));
});

test('a rejecting handler answers cancel', async () => {
  const run = await deploy({ onElicitation: async () => Promise.reject(new Error('form crashed')) });
  assertCancelledAsInvalid(run, /^onElicitation rejected: Error: form crashed\n {4}at /);
});

test('a handler returning something that is not an answer answers cancel', async () => {
  for (const [bad, reason] of [
    [undefined, /onElicitation must return/],
    [null, /onElicitation must return/],
    ['accept', /onElicitation must return/],
    [{ action: 'maybe' }, /unknown action/],
    [{ content: { target: 'staging' } }, /action/],
    [{ action: 'accept', content: 'staging' }, /content/],
  ]) {
    const run = await deploy({ onElicitation: () => bad });
    assertCancelledAsInvalid(run, reason);
  }
});

test('content that does not match the requested schema answers cancel', async () => {
  for (const [content, reason] of [
    [{ target: 'moon' }, /target/], // not an allowed value
    [{ replicas: 2 }, /required/], // required field missing
    [{ target: 'staging', replicas: 99 }, /replicas/], // out of range
    [{ target: 'staging', password: 'hunter2' }, /password/], // a field nobody asked for
  ]) {
    const run = await deploy({
      onElicitation: (req) => (req.mode === 'form' ? { action: 'accept', content } : { action: 'decline' }),
    });
    const form = formEcho(run.texts);
    assert.equal(form.action, 'cancel', `${JSON.stringify(content)}: ${form.line}`);
    assert.equal(form.content, null, 'no content reached the agent');
    assert.equal(urlEcho(run.texts), 'url decline');
    assert.equal(run.resolved[0].action, 'cancel');
    assert.equal(run.resolved[0].decidedBy, 'invalid_answer');
    assert.match(run.resolved[0].reason, reason);
  }
});

test('a handler that never answers is cancelled by the timeout, and its signal fires', async () => {
  const signals = [];
  const run = await deploy({
    elicitationTimeoutMs: 150,
    onElicitation: (req) => {
      signals.push(req.signal);
      return new Promise(() => {});
    },
  });
  assert.equal(formEcho(run.texts).action, 'cancel');
  assert.equal(urlEcho(run.texts), 'url cancel');
  assert.deepEqual(run.resolved.map((r) => [r.action, r.decidedBy]), [['cancel', 'timeout'], ['cancel', 'timeout']]);
  assert.equal(signals.length, 2);
  for (const s of signals) {
    assert.equal(s.aborted, true, 'the handler is told the request was settled');
    assert.ok(s.reason instanceof acp.AcpError && s.reason.code === 'already_resolved', String(s.reason));
  }
});

test('req.signal aborts when session.cancel() settles a pending request', async () => {
  let signal;
  const asked = handlerQueue(); // the form stays open in some UI
  const run = await deploy(
    { onElicitation: asked.handler },
    {
      during: async (ctx) => {
        ({ signal } = await asked.next());
        assert.equal(signal.aborted, false);
        await ctx.session.cancel();
        await withTimeout(aborted(signal), T, 'the signal aborts');
      },
    },
  );
  assert.equal(run.result.stopReason, 'cancelled');
  assert.equal(run.resolved.length, 1);
  assert.equal(run.resolved[0].action, 'cancel');
  assert.equal(run.resolved[0].decidedBy, 'cancelled');
  // The agent got `cancel` for its form (it ends the turn without echoing it).
  const answers = run.events.filter((e) => e.kind === 'wire' && e.data.direction === 'out' && e.data.message.result?.action);
  assert.deepEqual(answers.map((e) => e.data.message.result), [{ action: 'cancel' }]);
  assert.equal(signal.aborted, true);
});

test('respondElicitation answers while the handler is pending; the handler is told', async () => {
  const asked = handlerQueue();
  const run = await deploy(
    { onElicitation: asked.handler },
    {
      during: async (ctx) => {
        // A UI somewhere else answers while the handler's own prompt is still open.
        const form = await asked.next();
        assert.equal(form.mode, 'form');
        await ctx.host.respondElicitation(form.requestId, { action: 'accept', content: { target: 'production' } });
        await withTimeout(aborted(form.signal), T, 'the form handler is told');
        const url = await asked.next();
        assert.equal(url.mode, 'url');
        await ctx.host.respondElicitation(url.requestId, { action: 'decline' });
        await withTimeout(aborted(url.signal), T, 'the URL handler is told');
      },
    },
  );
  assert.deepEqual(formEcho(run.texts).content, { target: 'production' });
  assert.equal(urlEcho(run.texts), 'url decline');
  assert.deepEqual(run.resolved.map((r) => [r.action, r.decidedBy]), [['accept', 'host'], ['decline', 'host']]);
});

test('manual mode: answers are checked and count once', async () => {
  const run = await deploy(
    { elicitation: 'manual' },
    {
      turns: 2,
      during: async (ctx) => {
        const { host } = ctx;
        const form = (await next(ctx, 'elicitation_requested')).data;
        assert.equal(form.mode, 'form');
        if (ctx.turn === 1) {
          await assert.rejects(host.respondElicitation(form.requestId + 1000, { action: 'decline' }), (e) => e instanceof acp.AcpError && e.code === 'not_found');
          // Content that does not match: an error for the caller, and the agent gets `cancel`.
          await assert.rejects(
            host.respondElicitation(form.requestId, { action: 'accept', content: { target: 7 } }),
            (e) => e instanceof acp.AcpError && e.code === 'invalid_argument' && /target/.test(e.message),
          );
          await assert.rejects(
            host.respondElicitation(form.requestId, { action: 'accept', content: GOOD_FORM }),
            (e) => e instanceof acp.AcpError && e.code === 'already_resolved',
          );
          const url = (await next(ctx, 'elicitation_requested')).data;
          assert.equal(url.mode, 'url');
          await host.respondElicitation(url.requestId, { action: 'accept' });
          await assert.rejects(host.respondElicitation(url.requestId, { action: 'decline' }), (e) => e.code === 'already_resolved');
        } else {
          // A malformed answer is refused and, like invalid content, cancels (fail-closed).
          await assert.rejects(host.respondElicitation(form.requestId, { action: 'yes' }), (e) => e instanceof acp.AcpError && e.code === 'invalid_argument');
          await assert.rejects(host.respondElicitation(form.requestId, { action: 'decline' }), (e) => e.code === 'already_resolved');
          const url = (await next(ctx, 'elicitation_requested')).data;
          await host.respondElicitation(url.requestId, { action: 'decline' });
        }
      },
    },
  );
  assert.deepEqual(initializeCaps(run.events).elicitation, { form: {}, url: {} });
  assert.deepEqual(run.results.map((r) => r.stopReason), ['end_turn', 'end_turn']);
  const formLines = run.texts.filter((t) => t.startsWith('form '));
  assert.equal(formLines.length, 2);
  assert.ok(formLines.every((t) => t.startsWith('form cancel')), JSON.stringify(formLines));
  assert.deepEqual(run.texts.filter((t) => t.startsWith('url ')), ['url accept', 'url decline']);
  assert.deepEqual(run.resolved.map((r) => [r.action, r.decidedBy]), [
    ['cancel', 'invalid_answer'],
    ['accept', 'host'],
    ['cancel', 'invalid_answer'], // the malformed answer (core `reject_elicitation`)
    ['decline', 'host'],
  ]);
});

test('manual mode honours elicitationModes, and unanswered requests time out as cancel', async () => {
  const run = await deploy({ elicitation: 'manual', elicitationModes: ['form'], elicitationTimeoutMs: 150 });
  assert.deepEqual(initializeCaps(run.events).elicitation, { form: {} });
  assert.equal(formEcho(run.texts).action, 'cancel');
  assert.ok(run.texts.includes('url error -32602'), JSON.stringify(run.texts));
  assert.deepEqual(run.resolved.map((r) => [r.action, r.decidedBy]), [['cancel', 'timeout']]);
});

test('host.close() aborts a pending handler\'s signal', async () => {
  const asked = handlerQueue();
  const host = new acp.Host({ shutdownGraceMs: 300, onElicitation: asked.handler });
  const stream = host.events();
  const agent = await host.spawn(mock('elicitation'));
  const session = await agent.newSession({ cwd: tmpdir() });
  session.prompt('deploy').catch(() => {});
  const { signal } = await asked.next();
  assert.equal(signal.aborted, false);
  await host.close();
  assert.equal(signal.aborted, true);
  const evs = await drain(stream, 100);
  assert.deepEqual(ofKind(evs, 'elicitation_resolved').map((e) => e.data.decidedBy), ['disconnected']);
});

test('invalid elicitation options are invalid_config errors at construction', () => {
  assert.throws(() => new acp.Host({ onElicitation: 'yes' }), (e) => e instanceof acp.AcpError && e.code === 'invalid_config' && e.data.path === 'onElicitation');
  assert.throws(() => new acp.Host({ onElicitation: good, elicitationModes: ['form', 'yes'] }), (e) => e.code === 'invalid_config' && e.data.path === 'elicitationModes[1]');
  assert.throws(() => new acp.Host({ onElicitation: good, elicitationModes: 'form' }), (e) => e.code === 'invalid_config' && e.data.path === 'elicitationModes');
  // A handler that would never be called (manual mode asks nobody) is an error, not ignored.
  assert.throws(() => new acp.Host({ onElicitation: good, elicitation: 'manual' }), (e) => e.code === 'invalid_config' && e.data.path === 'elicitation');
});

test('respondElicitation on a host without elicitation: not_found', async () => {
  const host = new acp.Host();
  try {
    await assert.rejects(host.respondElicitation(1, { action: 'decline' }), (e) => e instanceof acp.AcpError && e.code === 'not_found');
    await assert.rejects(host.respondElicitation(-1, { action: 'decline' }), (e) => e.code === 'invalid_argument');
  } finally {
    await host.close();
  }
});

test('request-scoped elicitations naming no request of the host are asked, marked scopeKnown: false', async () => {
  const seen = [];
  const run = await deploy(
    {
      elicitationModes: ['form', 'url'],
      onElicitation: (req) => {
        seen.push(req);
        return req.mode === 'form' ? { action: 'accept', content: { name: 'ws' } } : { action: 'decline' };
      },
    },
    { scenario: 'elicitation-unknown-request' },
  );
  assert.equal(run.result.stopReason, 'end_turn');
  assert.deepEqual(run.texts, ['form accept {"name":"ws"}', 'url decline']);
  assert.deepEqual(
    seen.map((r) => [r.mode, r.scopeRequestId, r.scopeKnown, r.sessionId]),
    [['form', 'agent-req-1', false, null], ['url', 9999, false, null]],
  );
  const asked = ofKind(run.events, 'elicitation_requested');
  assert.deepEqual(asked.map((e) => e.data.scopeKnown), [false, false]);
  // The same fail-closed rules: content off the schema cancels.
  const bad = await deploy(
    { elicitationModes: ['form', 'url'], onElicitation: (req) => (req.mode === 'form' ? { action: 'accept', content: { name: '' } } : { action: 'accept' }) },
    { scenario: 'elicitation-unknown-request' },
  );
  assert.ok(bad.texts[0].startsWith('form cancel'), JSON.stringify(bad.texts));
  assert.equal(bad.resolved[0].decidedBy, 'invalid_answer');
});
