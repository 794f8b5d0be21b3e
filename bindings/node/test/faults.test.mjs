// Faults through the Node face: the agent crashes, hangs, lies, floods or pollutes stdout. No hang,
// a typed AcpError, every event delivered, and no process left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { acp, T, mock, tmpdir, collectUntil, drain, ofKind, describe, withTimeout, alive, waitGone, agentPid } from './helpers.mjs';

const CWD = os.tmpdir();

/** One turn of `scenario`; returns the events up to turn_ended, the result (or error) and the pid. */
async function runTurn(scenario, options = {}, extra = []) {
  const host = new acp.Host(options);
  const stream = host.events();
  try {
    const agent = await host.spawn(mock(scenario, extra));
    const session = await agent.newSession({ cwd: CWD });
    // Pull while the turn runs: the event queues are bounded, an unread stream stalls the agent.
    const collecting = collectUntil(stream, (e) => e.kind === 'turn_ended');
    const result = await withTimeout(session.prompt('go').then((r) => r, (e) => e), T, 'prompt must not hang');
    const evs = await collecting;
    return { evs, result, pid: agentPid(evs), agent, session, host, stream };
  } catch (e) {
    await host.close();
    throw e;
  }
}

test('crash mid-turn: the prompt fails with agent_exited, exit status and stderr', async () => {
  const { evs, result, pid, agent, session, host, stream } = await runTurn('crash-mid-turn');
  try {
    assert.ok(result instanceof acp.AcpError, String(result));
    assert.equal(result.code, 'agent_exited');
    assert.equal(result.data.exitCode, 3);
    assert.match(result.data.stderrTail, /fatal: mock crash/);
    assert.match(result.message, /exit code 3/);
    const rest = await collectUntil(stream, (e) => e.kind === 'agent_exited');
    const all = [...evs, ...rest];
    assert.equal(all.filter((e) => describe(e) === 'session_update:agent_message_chunk').length, 2, 'updates before the crash are delivered');
    assert.equal(ofKind(all, 'turn_ended')[0].data.error.kind, 'agent_exited');
    const exited = all.at(-1);
    assert.equal(exited.kind, 'agent_exited');
    assert.equal(exited.data.exitCode, 3);
    const kinds = all.map((e) => e.kind);
    assert.ok(kinds.indexOf('turn_ended') < kinds.indexOf('session_closed'));
    assert.equal(alive(pid), false);
    assert.deepEqual(await agent.exited, exited.data);
    // Later calls fail at once with the same typed error.
    await assert.rejects(session.prompt('again'), (e) => e.code === 'agent_exited');
    await assert.rejects(agent.newSession({ cwd: CWD }), (e) => e.code === 'agent_exited');
  } finally {
    await host.close();
  }
});

test('hanging agent: shutdown fails the pending prompt with closed and the process is gone', async () => {
  const host = new acp.Host({ shutdownGraceMs: 300 });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('hang'));
    const session = await agent.newSession({ cwd: CWD });
    const turn = session.prompt('go');
    turn.catch(() => {});
    const evs = await collectUntil(stream, (e) => e.kind === 'turn_started');
    await new Promise((r) => setTimeout(r, 200));
    await agent.shutdown();
    await assert.rejects(withTimeout(turn, T, 'prompt'), (e) => e.code === 'closed');
    assert.ok(await waitGone(agentPid(evs)));
  } finally {
    await host.close();
  }
});

test('agent ignoring stdin EOF is terminated by the shutdown ladder', async () => {
  const host = new acp.Host({ shutdownGraceMs: 300 });
  const stream = host.events();
  try {
    await host.spawn(mock('ignore-stdin-eof'));
    const evs = await collectUntil(stream, (e) => e.kind === 'agent_ready');
    const started = Date.now();
    await host.close();
    assert.ok(Date.now() - started < 5000);
    assert.ok(await waitGone(agentPid(evs)), 'agent survived the ladder');
  } finally {
    await host.close();
  }
});

test('non-JSON stdout is reported as protocol_noise and the turn completes', async () => {
  const { evs, result, host } = await runTurn('garbage-stdout');
  await host.close();
  assert.equal(result.stopReason, 'end_turn');
  const counts = ofKind(evs, 'protocol_noise').map((e) => e.data.count);
  assert.ok(counts.length > 0);
  assert.deepEqual(counts, counts.map((_, i) => i + 1));
  assert.ok(ofKind(evs, 'session_update').length >= 2);
});

test('an over-long line is skipped and reported; the connection survives', async () => {
  let r = await runTurn('huge-line', { maxLineBytes: 1024 * 1024 });
  await r.host.close();
  assert.equal(r.result.stopReason, 'end_turn');
  const errors = ofKind(r.evs, 'protocol_error');
  assert.equal(errors.length, 1);
  assert.equal(errors[0].data.reason, 'line_too_long');
  assert.ok(errors[0].data.bytes > 2_000_000);
  // With the default 64 MiB bound the same line is accepted and crosses to JS intact.
  r = await runTurn('huge-line');
  await r.host.close();
  assert.equal(r.result.stopReason, 'end_turn');
  assert.equal(ofKind(r.evs, 'protocol_error').length, 0);
  assert.ok(r.evs.some((e) => JSON.stringify(e.data).length > 2_000_000));
});

test('invalid UTF-8 is decoded lossily and reported', async () => {
  const { evs, result, host } = await runTurn('invalid-utf8');
  await host.close();
  assert.equal(result.stopReason, 'end_turn');
  const errors = ofKind(evs, 'protocol_error');
  assert.equal(errors.length, 1);
  assert.equal(errors[0].data.reason, 'invalid_utf8');
  assert.ok(evs.some((e) => e.kind === 'session_update' && JSON.stringify(e.data).includes('\uFFFD')));
});

test('unknown and duplicate responses are reported and ignored', async () => {
  let r = await runTurn('unknown-response-id');
  await r.host.close();
  assert.equal(r.result.stopReason, 'end_turn');
  const reasons = ofKind(r.evs, 'protocol_error').map((e) => e.data.reason);
  assert.ok(reasons.length > 0 && reasons.every((x) => x === 'unknown_response_id'), reasons.join());

  r = await runTurn('duplicate-response');
  try {
    const more = await collectUntil(r.stream, (e) => e.kind === 'protocol_error');
    assert.equal(more.at(-1).data.reason, 'duplicate_response');
    assert.equal((await r.session.prompt('2')).stopReason, 'end_turn', 'still usable');
  } finally {
    await r.host.close();
  }
});

test('an agent ignoring cancel keeps streaming and ends its way', async () => {
  const host = new acp.Host();
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('ignore-cancel'));
    const session = await agent.newSession({ cwd: CWD });
    const ac = new AbortController();
    const turn = session.prompt('go', { signal: ac.signal });
    await collectUntil(stream, (e) => e.kind === 'session_update');
    ac.abort();
    assert.equal((await withTimeout(turn, T, 'turn')).stopReason, 'end_turn');
    const evs = await collectUntil(stream, (e) => e.kind === 'turn_ended');
    assert.ok(ofKind(evs, 'session_update').length > 0, 'updates after cancel still delivered');
  } finally {
    await host.close();
  }
});

test('a stderr flood is drained, reported line by line, and the tail is bounded', async () => {
  const { evs, result, agent, stream, host } = await runTurn('stderr-flood', { stderrTailBytes: 4096 });
  try {
    assert.equal(result.stopReason, 'end_turn');
    const info = await agent.shutdown();
    const rest = await collectUntil(stream, (e) => e.kind === 'agent_exited');
    const lines = ofKind(evs, 'agent_stderr').length + ofKind(rest, 'agent_stderr').length;
    assert.ok(lines >= 20_000, `every stderr line is reported: ${lines}`);
    assert.ok(info.stderrTail.length <= 4096);
  } finally {
    await host.close();
  }
});

test('version mismatch: spawn rejects with version_unsupported and the agent is shut down', async () => {
  const host = new acp.Host();
  const stream = host.events();
  try {
    await assert.rejects(host.spawn(mock('version-mismatch')), (e) => {
      assert.ok(e instanceof acp.AcpError);
      assert.equal(e.code, 'version_unsupported');
      assert.equal(e.data.agentVersion, 2);
      return true;
    });
    const evs = await collectUntil(stream, (e) => e.kind === 'agent_exited');
    assert.equal(ofKind(evs, 'agent_ready').length, 0);
    assert.equal(evs.at(-1).data.reason, 'shutdown');
    assert.equal(evs.at(-1).data.error.kind, 'version_unsupported');
  } finally {
    await host.close();
  }
});

test('a missing agent command is spawn_failed; an empty one invalid_config at command', async () => {
  const host = new acp.Host();
  try {
    await assert.rejects(host.spawn({ command: '/nonexistent/agent-binary' }), (e) => e.code === 'spawn_failed' && e.message.includes('/nonexistent/agent-binary'));
    await assert.rejects(host.spawn({ command: '' }), (e) => e.code === 'invalid_config' && e.data.path === 'command');
  } finally {
    await host.close();
  }
});

test('a slow-reading agent still completes (with a permission round trip)', async () => {
  const { result, host } = await runTurn('slow-read');
  await host.close();
  assert.equal(result.stopReason, 'end_turn');
});

test('a stalled consumer applies backpressure and loses nothing', async () => {
  const host = new acp.Host({ eventCapacity: 64 });
  const stream = host.events({ highWaterMark: 256 });
  try {
    const agent = await host.spawn(mock(null, ['--flood', '50000']));
    const session = await agent.newSession({ cwd: CWD });
    let finished = false;
    const turn = session.prompt('flood').then((r) => ((finished = true), r));
    // Do not pull for a while: the turn cannot finish; the queues hold at most their bounds.
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(finished, false, 'the turn finished although nobody pulled 50k events');
    let updates = 0;
    let last = 0;
    for await (const ev of stream) {
      assert.ok(ev.seq === last + 1 || last === 0, `seq without gaps: ${last} then ${ev.seq}`);
      last = ev.seq;
      if (ev.kind === 'session_update') updates++;
      if (ev.kind === 'turn_ended') break;
    }
    assert.equal(updates, 50_000, 'every update delivered');
    assert.equal((await turn).stopReason, 'end_turn');
  } finally {
    await host.close();
  }
});

test('a control request timeout is a typed timeout error', async () => {
  const dir = tmpdir();
  const scenario = path.join(dir, 'new-session-hangs.json');
  fs.writeFileSync(scenario, JSON.stringify({ description: 'session/new is never answered', newSession: { before: [{ hang: true }] } }));
  // The timeout covers `initialize` too: long enough for a spawn on a loaded machine (the suite runs
  // the faces side by side), short enough for the test.
  const host = new acp.Host({ requestTimeoutMs: 1500, wireEvents: true });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock(scenario));
    await assert.rejects(agent.newSession({ cwd: CWD }), (e) => e.code === 'timeout' && e.data.afterMs === 1500);
    const evs = await drain(stream, 300);
    const sent = evs.filter((e) => e.kind === 'wire' && e.data.direction === 'out').map((e) => e.data.message.method);
    assert.ok(sent.includes('$/cancel_request'), sent.join());
  } finally {
    await host.close();
  }
});

test('a prompt timeout fails the turn with timeout and cancels it', async () => {
  const host = new acp.Host({ promptTimeoutMs: 300, wireEvents: true });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock('hang'));
    const session = await agent.newSession({ cwd: CWD });
    await assert.rejects(withTimeout(session.prompt('go'), T, 'prompt'), (e) => e.code === 'timeout');
    const evs = await collectUntil(stream, (e) => e.kind === 'turn_ended');
    assert.equal(evs.at(-1).data.error.kind, 'timeout');
    const more = await drain(stream, 200);
    const sent = more.filter((e) => e.kind === 'wire' && e.data.direction === 'out').map((e) => e.data.message.method);
    assert.ok(sent.includes('session/cancel'), sent.join());
    assert.equal(session.state.activeTurn, null);
  } finally {
    await host.close();
  }
});
