// The example extension's logic (src/core.ts, compiled to out/ by scripts/test-node) without VS
// Code: a fake output channel and a fake quick pick drive the mock agent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../../..');
const core = require(path.join(HERE, '../out/core.js'));
const MOCK = process.env.ACP_MOCK_AGENT ?? path.join(ROOT, 'target/debug/acp-mock-agent');

class Channel {
  text = '';
  append(t) {
    this.text += t;
  }
  appendLine(l) {
    this.text += `${l}\n`;
  }
}

const tmp = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acp-vscode-')));
const mockAgent = (scenario) => () => ({ command: MOCK, args: ['--scenario', scenario] });

test('a turn is streamed into the output channel; the quick pick allows the edit', async () => {
  const cwd = tmp();
  fs.writeFileSync(path.join(cwd, 'README.md'), '# project\n');
  const out = new Channel();
  const shown = [];
  const runner = new core.AgentRunner(mockAgent('default'), {
    output: out,
    picker: async (items, opts) => {
      shown.push({ items, title: opts.title });
      return items.find((i) => i.description === 'allow once');
    },
  });
  try {
    const turn = await runner.prompt(cwd, 'Take some notes');
    assert.equal(turn.stopReason, 'end_turn');
  } finally {
    await runner.dispose();
  }
  assert.equal(shown.length, 1);
  assert.match(shown[0].title, /Write notes\.txt \[edit\]/);
  assert.deepEqual(shown[0].items.map((i) => i.optionId), ['allow-once', 'allow-always', 'reject-once', null]);
  assert.ok(fs.existsSync(path.join(cwd, 'notes.txt')), 'the allowed write happened');
  assert.match(out.text, /● agent ready: ACP Mock Agent/);
  assert.match(out.text, /Hello! I am the ACP mock agent\. /, 'chunks are appended as one text');
  assert.match(out.text, /\? → allow-once \(decided by host\)/);
  assert.match(out.text, /■ end_turn/);
  assert.match(out.text, /● agent exited \(shutdown/);
});

test('dismissing the quick pick denies', async () => {
  const cwd = tmp();
  const out = new Channel();
  const runner = new core.AgentRunner(mockAgent('permission-write'), { output: out, picker: async () => undefined });
  try {
    assert.equal((await runner.prompt(cwd, 'write')).stopReason, 'end_turn');
  } finally {
    await runner.dispose();
  }
  assert.equal(fs.existsSync(path.join(cwd, 'hello.txt')), false);
  assert.match(out.text, /\? → reject-once \(decided by host\)/);
});

test('a quick pick left open is closed when the request times out (denied)', async () => {
  const cwd = tmp();
  const out = new Channel();
  let closedByHost = false;
  const runner = new core.AgentRunner(mockAgent('permission-write'), {
    output: out,
    host: { permissionTimeoutMs: 200 },
    picker: (items, { signal }) =>
      new Promise((resolve) => {
        signal.addEventListener('abort', () => {
          closedByHost = true;
          resolve(items[0]); // too late: the request was settled
        });
      }),
  });
  try {
    await runner.prompt(cwd, 'write');
  } finally {
    await runner.dispose();
  }
  assert.equal(closedByHost, true);
  assert.equal(fs.existsSync(path.join(cwd, 'hello.txt')), false);
  assert.match(out.text, /decided by timeout/);
});

test('cancelling the progress notification cancels the turn', async () => {
  const out = new Channel();
  const runner = new core.AgentRunner(mockAgent('wait-for-cancel'), { output: out, picker: async () => undefined });
  try {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    assert.equal((await runner.prompt(tmp(), 'wait', ac.signal)).stopReason, 'cancelled');
  } finally {
    await runner.dispose();
  }
  assert.match(out.text, /■ cancelled/);
});

test('the agent reads unsaved editor buffers through the fs hooks', async () => {
  const cwd = tmp();
  fs.writeFileSync(path.join(cwd, 'input.txt'), 'saved text\n');
  const out = new Channel();
  const runner = new core.AgentRunner(mockAgent('fs-read-write'), {
    output: out,
    picker: async () => undefined,
    openText: (p) => (p === path.join(cwd, 'input.txt') ? 'unsaved first\nunsaved second\n' : undefined),
  });
  try {
    await runner.prompt(cwd, 'read');
  } finally {
    await runner.dispose();
  }
  assert.match(out.text, /input\.txt: unsaved first/);
  assert.match(out.text, /line 2: unsaved second/);
  assert.equal(fs.readFileSync(path.join(cwd, 'output.txt'), 'utf8').startsWith('written by acp-mock-agent'), true, 'ask preset: writes land');
});

test('a missing agent command is reported in the channel; the runner stays usable', async () => {
  const out = new Channel();
  let cfg = { command: '/nonexistent/agent' };
  const runner = new core.AgentRunner(() => cfg, { output: out, picker: async () => undefined });
  try {
    await assert.rejects(runner.prompt(tmp(), 'x'), (e) => e.code === 'spawn_failed');
    assert.match(out.text, /✖ spawn_failed/);
    cfg = { command: MOCK, args: ['--scenario', 'minimal'] };
    assert.equal((await runner.prompt(tmp(), 'hi')).stopReason, 'end_turn');
    await runner.stop();
  } finally {
    await runner.dispose();
  }
  await assert.rejects(runner.prompt(tmp(), 'x'), (e) => e.code === 'closed');
});

test('formatEvent and permissionItems', () => {
  assert.equal(core.formatEvent({ kind: 'agent_stderr', data: { line: 'x' } }), null);
  assert.equal(core.formatEvent({ kind: 'some_future_kind', data: {} }), null);
  assert.deepEqual(core.formatEvent({ kind: 'session_update', data: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Hi' } } }), { text: 'Hi' });
  assert.equal(core.formatEvent({ kind: 'turn_ended', data: { stopReason: null, error: { kind: 'agent_exited', message: 'boom' } } }), '■ turn failed: agent_exited: boom');
  const items = core.permissionItems({
    options: [
      { optionId: 'r', name: 'Reject', kind: 'reject_once' },
      { optionId: 'a', name: 'Allow', kind: 'allow_once' },
    ],
  });
  assert.deepEqual(items.map((i) => i.optionId), ['a', 'r', null]);
});
