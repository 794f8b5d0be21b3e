// The package as shipped: the generated declarations are committed and current, the facade's
// public surface is what the README documents, and the addon loads from the package directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';

import { acp, PKG_DIR, MOCK } from './helpers.mjs';

/** The committed text of `file`, or `{ skip }` saying why there is none to compare with. */
function committed(file) {
  try {
    const rel = path.relative(execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: PKG_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(), path.join(PKG_DIR, file));
    return execFileSync('git', ['show', `HEAD:${rel}`], { cwd: PKG_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (e) {
    // No git at all (the Wine prefix has none): the files are the same ones the Linux run checks.
    return { skip: e.code === 'ENOENT' ? 'no git on PATH (the Wine prefix has none); the Linux run checks the same files' : 'not a git checkout' };
  }
}

for (const file of ['index.d.ts', 'binding.js']) {
  test(`the generated ${file} is committed and matches the build (no drift)`, (t) => {
    const want = committed(file);
    if (typeof want !== 'string') return t.skip(want.skip);
    const got = fs.readFileSync(path.join(PKG_DIR, file), 'utf8');
    assert.ok(
      got === want,
      `${file} differs from the committed one: the napi layer changed; run \`npm run build\` in bindings/node and commit ${file}`,
    );
  });
}

test('the public API', () => {
  for (const name of ['Host', 'Agent', 'Session', 'Pool', 'PooledSession', 'AcpError', 'ServiceError']) assert.equal(typeof acp[name], 'function', name);
  assert.ok(new acp.AcpError('timeout', 'x') instanceof Error);
  const e = new acp.AcpError('agent_error', 'boom', { code: -32603 });
  assert.equal(e.name, 'AcpError');
  assert.equal(e.code, 'agent_error');
  assert.deepEqual(e.data, { code: -32603 });
  const pkg = JSON.parse(fs.readFileSync(path.join(PKG_DIR, 'package.json'), 'utf8'));
  assert.equal(pkg.name, 'acp-host');
  assert.equal(pkg.devDependencies['@napi-rs/cli'], '3.10.12', 'pinned exactly');
  for (const [name, v] of Object.entries(pkg.devDependencies)) assert.match(v, /^\d+\.\d+\.\d+$/, `${name} is pinned exactly`);
  assert.ok(fs.existsSync(path.join(PKG_DIR, 'package-lock.json')));
});

test('methods() is the method table of docs/PROTOCOL.md, with this face\'s calls', () => {
  const list = acp.methods();
  const byName = new Map(list.map((m) => [m.name, m]));
  const prompt = byName.get('session/prompt');
  assert.equal(prompt.direction, 'client_to_agent');
  assert.equal(prompt.faces.node, 'session.prompt');
  assert.equal(byName.get('session/list').gate, 'agentCapabilities.sessionCapabilities.list');
  // Every call this face claims exists on the facade's classes.
  const classes = { host: acp.Host, agent: acp.Agent, session: acp.Session };
  for (const m of list) {
    const [owner, call] = m.faces.node.split('.');
    if (!(owner in classes) || m.faces.node.includes(' ')) continue;
    assert.equal(typeof classes[owner].prototype[call], 'function', `${m.name}: ${m.faces.node}`);
  }
  const doc = fs.readFileSync(path.join(PKG_DIR, '..', '..', 'docs', 'PROTOCOL.md'), 'utf8');
  for (const m of list) assert.ok(doc.includes(`| \`${m.name}\` |`), m.name);
});

test('the library never prints', () => {
  // A whole session (spawn, turn, permission, fs, terminal, errors, close) in a child process.
  const script = `
    const { Host } = require(${JSON.stringify(PKG_DIR)});
    (async () => {
      const host = new Host({ onPermission: (r) => r.options[0].optionId });
      await host.spawn({ command: '/nonexistent' }).catch(() => {});
      const agent = await host.spawn({ command: ${JSON.stringify(MOCK)}, args: ['--scenario', 'stderr-flood'] });
      const s = await agent.newSession({ cwd: ${JSON.stringify(os.tmpdir())} });
      await s.prompt('go');
      await host.close();
    })();`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, '', 'not even the agent\'s stderr: it becomes events');
});
