// Replaying a recording through the Node face (`host.spawn({ replay })`, docs/RECORDING.md
// "Replaying"): a session recorded through this face replays with the host's changes reported
// (in the report and as the agent's stderr), and a spec that cannot be a replay is the core's
// `invalid_config` at its path. The conformance replays are in conformance.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { acp, mock, tmpdir, collectUntil } from './helpers.mjs';

/** One session of the mock agent's default scenario, prompted with `text`, from `spec` on a host
 *  with `options`; the turn's text and the agent's stderr lines, once the agent has exited. */
async function session(spec, text, options = {}) {
  const host = new acp.Host(options);
  try {
    const events = host.events();
    const agent = await host.spawn(spec);
    const s = await agent.newSession({ cwd: tmpdir('acp-replay-cwd-') });
    const turn = await s.prompt(text);
    await agent.shutdown();
    const evs = await collectUntil(events, (e) => e.kind === 'agent_exited');
    const stderr = evs.filter((e) => e.kind === 'agent_stderr').map((e) => e.data.line);
    return { stopReason: turn.stopReason, text: turn.text, stderr };
  } finally {
    await host.close();
  }
}

test('a session recorded through this face replays; another prompt is a params_differ divergence', async () => {
  const dir = tmpdir('acp-replay-');
  const file = path.join(dir, 'node.acprec.jsonl');
  const recorded = await session(mock('default'), 'hello', { record: { file } });
  assert.equal(recorded.stopReason, 'end_turn');
  assert.ok(recorded.text.length > 0, 'the mock agent answered');

  // The same prompt: nothing to report.
  const same = path.join(dir, 'same.json');
  const again = await session({ replay: { file, pace: 'fast', report: same } }, 'hello');
  const quiet = JSON.parse(fs.readFileSync(same, 'utf8'));
  assert.equal(quiet.divergenceCount, 0, JSON.stringify(quiet, null, 2));
  assert.equal(quiet.complete, true);
  assert.equal(again.text, recorded.text, 'the replayed turn shows what the recorded one did');

  // Other words: the replay still plays the recorded agent, and says where the host differs.
  const report = path.join(dir, 'report.json');
  const changed = await session({ replay: { file, pace: 'fast', report } }, 'something else');
  assert.equal(changed.stopReason, 'end_turn');
  assert.equal(changed.text, recorded.text);
  const r = JSON.parse(fs.readFileSync(report, 'utf8'));
  const prompt = r.divergences.find((d) => d.kind === 'params_differ');
  assert.ok(prompt, JSON.stringify(r, null, 2));
  assert.equal(prompt.method, 'session/prompt');
  assert.deepEqual(
    prompt.differences.find((d) => d.path === 'params.prompt[0].text'),
    { path: 'params.prompt[0].text', recorded: 'hello', live: 'something else' },
    JSON.stringify(prompt, null, 2),
  );
  // The same divergence, readable, as the agent's stderr.
  assert.ok(
    changed.stderr.some((l) => l.startsWith('replay: divergence 1 (params_differ)')),
    JSON.stringify(changed.stderr),
  );
});

/** `host.spawn(spec)` rejects with `invalid_config` at `where`, its message the core's. */
async function refused(spec, where, words) {
  const host = new acp.Host();
  try {
    await assert.rejects(host.spawn(spec), (e) => {
      assert.ok(e instanceof acp.AcpError, String(e));
      assert.equal(e.code, 'invalid_config', e.message);
      assert.equal(e.data?.path, where, e.message);
      if (words) assert.ok(e.message.includes(words), e.message);
      return true;
    });
  } finally {
    await host.close();
  }
}

test('a spec that cannot be a replay is invalid_config at the core path', async () => {
  const dir = tmpdir('acp-replay-');
  // Paths as the OS spells an absolute one (`/x` is relative on Windows).
  const notRecording = path.join(dir, 'notes.txt');
  fs.writeFileSync(notRecording, 'hello\n');
  const empty = path.join(dir, 'empty.acprec.jsonl');
  fs.writeFileSync(empty, '');
  await refused({ replay: {} }, 'replay.file', 'missing');
  await refused({ replay: { file: path.join(dir, 'nope.acprec.jsonl') } }, 'replay.file');
  await refused({ replay: { file: notRecording } }, 'replay.file', 'line 1: not JSON');
  await refused({ replay: { file: empty } }, 'replay.file', 'empty');
  await refused({ replay: { file: 'relative.acprec.jsonl' } }, 'replay.file');
  await refused({ replay: { file: notRecording, pace: 'slow' } }, 'replay.pace');
  // A replay starts no program: `command` (or anything of a process) with it is refused.
  await refused({ command: mock('default').command, replay: { file: notRecording } }, 'command', 'not with `replay`');
  await refused({ replay: { file: notRecording }, cwd: dir }, 'cwd', 'not with `replay`');
});
