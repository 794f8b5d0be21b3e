// fs/terminal routing hooks: an editor serves the agent's fs/* from its buffers and terminal/*
// from its own panel; the roots and the hard-deny rules apply before a hook is asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { acp, mock, tmpdir, collectUntil, ofKind } from './helpers.mjs';

async function turn(options, scenario, cwd) {
  const host = new acp.Host(options);
  const events = host.events();
  try {
    const agent = await host.spawn(mock(scenario));
    const session = await agent.newSession({ cwd });
    const collecting = collectUntil(events, (e) => e.kind === 'turn_ended');
    const result = await session.prompt('go');
    const evs = await collecting;
    const text = evs.filter((e) => e.data?.sessionUpdate === 'agent_message_chunk').map((e) => e.data.content.text);
    return { result, evs, text, caps: host.clientCapabilities };
  } finally {
    await host.close();
  }
}

/** A file as the mock agent names it: its cwd, '/', the name (hooks get the agent's spelling). */
const agentPath = (dir, name) => `${dir}/${name}`;

test('fs hooks serve unsaved buffers and capture writes; nothing touches the disk', async () => {
  const dir = tmpdir();
  fs.writeFileSync(path.join(dir, 'input.txt'), 'on disk\n');
  const buffers = new Map([[agentPath(dir, 'input.txt'), 'unsaved line one\nunsaved line two\n']]);
  const calls = [];
  const { text, evs, caps } = await turn(
    {
      policy: 'ask', // deny-all (the default without a handler) refuses fs writes
      fs: {
        readTextFile: async (req) => {
          calls.push(['read', req.path, req.line, req.limit]);
          const all = buffers.get(req.path);
          if (all === undefined) throw new acp.ServiceError(-32002, `not found: ${req.path}`);
          if (req.line == null) return all;
          return all.split('\n').slice(req.line - 1, req.line - 1 + (req.limit ?? Infinity)).join('\n');
        },
        writeTextFile: (req) => {
          calls.push(['write', req.path]);
          buffers.set(req.path, req.content);
        },
      },
    },
    'fs-read-write',
    dir,
  );
  assert.deepEqual(caps, { readTextFile: true, writeTextFile: true, terminal: true, elicitation: { form: false, url: false } });
  assert.deepEqual(calls, [
    ['read', agentPath(dir, 'input.txt'), null, null],
    ['read', agentPath(dir, 'input.txt'), 2, 1],
    ['write', agentPath(dir, 'output.txt')],
  ]);
  assert.equal(text[0], 'input.txt: unsaved line one\nunsaved line two\n');
  assert.equal(text[1], 'line 2: unsaved line two');
  assert.equal(text[2], 'wrote output.txt');
  assert.match(buffers.get(agentPath(dir, 'output.txt')), /written by acp-mock-agent/);
  assert.equal(fs.existsSync(path.join(dir, 'output.txt')), false, 'the write went to the editor, not the disk');
  assert.deepEqual(ofKind(evs, 'fs_read').map((e) => e.data.outcome), ['ok', 'ok']);
});

test('a hook error is the agent\'s error; hard-deny rules apply before the hook is asked', async () => {
  const dir = tmpdir();
  const calls = [];
  const { text, evs } = await turn(
    {
      policy: { preset: 'ask', hardDeny: { paths: ['**/output.txt'] } },
      fs: {
        readTextFile: (req) => {
          calls.push(req.path);
          throw new acp.ServiceError(-32002, 'Resource not found');
        },
        writeTextFile: () => {
          calls.push('write');
        },
      },
    },
    'fs-read-write',
    dir,
  );
  assert.deepEqual(calls, [agentPath(dir, 'input.txt'), agentPath(dir, 'input.txt')]);
  assert.equal(text[0], 'cannot read input.txt: -32002 Resource not found');
  const write = ofKind(evs, 'fs_write')[0].data;
  assert.equal(write.outcome, 'denied');
  assert.match(write.rule, /output\.txt/);
});

test('fs: disabled is not advertised and not served', async () => {
  const dir = tmpdir();
  fs.writeFileSync(path.join(dir, 'input.txt'), 'x\n');
  const { text, caps } = await turn({ fs: 'disabled', terminal: 'disabled' }, 'fs-read-write', dir);
  assert.deepEqual(caps, { readTextFile: false, writeTextFile: false, terminal: false, elicitation: { form: false, url: false } });
  assert.match(text[0], /cannot read input.txt: -32601/);
  assert.equal(fs.existsSync(path.join(dir, 'output.txt')), false);
});

test('terminal hooks receive every terminal/* call after the policy allowed the command', async () => {
  const dir = tmpdir();
  const calls = [];
  let n = 0;
  const { result, evs } = await turn(
    {
      policy: 'ask',
      terminal: {
        create: (p) => {
          calls.push(['create', p.command, p.args]);
          return { terminalId: `ide_${++n}` };
        },
        output: (p) => {
          calls.push(['output', p.terminalId]);
          return { output: 'hello\n', truncated: false };
        },
        waitForExit: (p) => {
          calls.push(['waitForExit', p.terminalId]);
          return { exitCode: 0, signal: null };
        },
        kill: (p) => {
          calls.push(['kill', p.terminalId]);
        },
        release: (p) => {
          calls.push(['release', p.terminalId]);
        },
      },
    },
    'terminal',
    dir,
  );
  assert.equal(result.stopReason, 'end_turn');
  assert.deepEqual(calls[0], ['create', 'echo', ['hello']]);
  assert.ok(calls.some((c) => c[0] === 'kill' && c[1] === 'ide_2'));
  assert.deepEqual(calls.at(-1), ['release', 'ide_2']);
  assert.deepEqual(ofKind(evs, 'terminal_created').map((e) => [e.data.outcome, e.data.terminalId]), [
    ['ok', 'ide_1'],
    ['ok', 'ide_2'],
  ]);
});
