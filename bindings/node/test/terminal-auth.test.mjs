// Terminal login: onTerminalAuth runs the agent's login; agent.terminalAuth relaunches the agent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { acp, mock, tmpdir } from './helpers.mjs';

const CWD = os.tmpdir();

/** Runs the login as a child process (no terminal in a test) and records what it was asked. */
function recorder() {
  const seen = [];
  const run = (cmd) => {
    seen.push(cmd);
    const env = { ...process.env };
    for (const [k, v] of Object.entries(cmd.env)) {
      if (v === null) delete env[k];
      else env[k] = v;
    }
    return spawnSync(cmd.command, cmd.args, { env, stdio: 'ignore' }).status;
  };
  return { seen, run };
}

function spec(creds, extra = {}) {
  const s = mock('auth-required');
  s.env = { ACP_MOCK_CREDENTIALS: creds, ...extra };
  return s;
}

test('a terminal login relaunches the agent; the failed session/new then succeeds', async () => {
  const creds = path.join(tmpdir(), 'creds');
  const r = recorder();
  const host = new acp.Host({ onTerminalAuth: r.run });
  try {
    const agent = await host.spawn(spec(creds));
    assert.deepEqual(agent.authMethods.map((m) => [m.id, m.kind]), [['mock-login', 'agent'], ['mock-terminal', 'terminal']]);
    await assert.rejects(agent.newSession({ cwd: CWD }), (e) => e.code === 'auth_required');
    const fresh = await agent.terminalAuth('mock-terminal');
    assert.notEqual(fresh.id, agent.id);
    assert.equal(r.seen.length, 1);
    assert.deepEqual(r.seen[0].args.slice(-1), ['--login']);
    assert.equal(r.seen[0].env.MOCK_LOGIN, '1');
    assert.ok(fs.existsSync(creds));
    const session = await fresh.newSession({ cwd: CWD });
    assert.equal((await session.prompt('hi')).stopReason, 'end_turn');
    await agent.exited; // the old agent was shut down
  } finally {
    await host.close();
  }
});

test('a failed login rejects auth_required and leaves the agent; no runner is unsupported', async () => {
  const creds = path.join(tmpdir(), 'creds');
  const host = new acp.Host({ onTerminalAuth: recorder().run });
  try {
    const agent = await host.spawn(spec(creds, { ACP_MOCK_LOGIN_FAIL: '1' }));
    await assert.rejects(agent.terminalAuth('mock-terminal'), (e) => e.code === 'auth_required' && /status 3/.test(e.message));
    await assert.rejects(agent.terminalAuth('mock-login'), (e) => e.code === 'invalid_argument');
    await agent.authenticate('mock-login');
    await agent.newSession({ cwd: CWD });
  } finally {
    await host.close();
  }
  const plain = new acp.Host();
  try {
    const agent = await plain.spawn(spec(creds));
    await assert.rejects(agent.terminalAuth('mock-terminal'), (e) => e.code === 'unsupported');
  } finally {
    await plain.close();
  }
  // A handler that throws: the login could not run.
  const broken = new acp.Host({ onTerminalAuth: () => { throw new Error('no terminal'); } });
  try {
    const agent = await broken.spawn(spec(creds));
    await assert.rejects(agent.terminalAuth('mock-terminal'), (e) => e.code === 'auth_required' && /no terminal/.test(e.message));
  } finally {
    await broken.close();
  }
  assert.throws(() => new acp.Host({ onTerminalAuth: 'yes' }), (e) => e.code === 'invalid_config' && e.data.path === 'onTerminalAuth');
});
