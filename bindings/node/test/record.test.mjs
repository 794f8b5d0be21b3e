// Recording a connection through the Node face (`new Host({ record })`, docs/RECORDING.md): the
// file holds the header, the wire both ways and the events, whole when shutdown returns; a bad
// `record` document is the core's `invalid_config` at its path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { acp, mock, tmpdir } from './helpers.mjs';

test('a recorded connection is in its file when shutdown returns', async () => {
  const dir = tmpdir('acp-record-');
  const file = path.join(dir, 'node.acprec.jsonl');
  const host = new acp.Host({ record: { file } });
  try {
    const agent = await host.spawn(mock('default'));
    const session = await agent.newSession({ cwd: dir });
    assert.equal((await session.prompt('hello')).stopReason, 'end_turn');
    await agent.shutdown();
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines[0].acpRecording, 3);
    assert.equal(lines[0].protocolVersion, 1);
    const methods = new Set(lines.filter((l) => l.msg).map((l) => l.msg.method));
    for (const m of ['initialize', 'session/new', 'session/prompt', 'session/update']) assert.ok(methods.has(m), m);
    // An update's event is folded into the agent's line it was made from (format 3).
    const kinds = lines.filter((l) => l.event).map((l) => (l.msg ? 'session_update' : l.event.kind));
    assert.ok(kinds.includes('session_update'), kinds);
    assert.equal(kinds.at(-1), 'agent_exited');
    assert.equal(lines.at(-1).end.droppedLines, 0);
  } finally {
    await host.close();
  }
});

test('a bad record document is invalid_config at its path', () => {
  // An absolute path as the OS spells one (`/x` is relative on Windows).
  const file = path.join(tmpdir('acp-record-'), 'x.jsonl');
  for (const [record, where] of [
    [{}, 'record'],
    [{ dir: 'relative' }, 'record.dir'],
    [{ file, maxBytes: 1 }, 'record.maxBytes'],
  ]) {
    assert.throws(
      () => new acp.Host({ record }),
      (e) => e.code === 'invalid_config' && e.data?.path === where,
      JSON.stringify(record),
    );
  }
});
