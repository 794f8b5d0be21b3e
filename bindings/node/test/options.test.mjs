// Every case of tests/options/cases.json through the Node face, the way its users call it: a
// host case is `new Host(doc)`, an agent case `host.spawn(doc)` (ok cases really spawn the mock),
// a session case `agent.newSession(doc)` on a spawned mock, a pool case `host.pool({ ...mock,
// pool: doc })`. Each must give the core's outcome: ok, or `AcpError` `invalid_config` with
// exactly the core's `data.path`. Also: the generated option types are current, and the Node-only
// spellings of before are refused with a path that names them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { acp, ROOT, PKG_DIR, MOCK, tmpdir } from './helpers.mjs';

const cases = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests', 'options', 'cases.json'), 'utf8')).cases;

const dir = tmpdir('acp-options-');
const file = path.join(dir, 'file.txt');
fs.writeFileSync(file, 'x');
const policy = path.join(dir, 'policy.json');
fs.writeFileSync(policy, JSON.stringify({ preset: 'read-only' }));
const subst = {
  $DIR: dir,
  $MISSING: path.join(dir, 'missing'),
  $FILE: file,
  $MOCK: MOCK,
  $POLICY: policy,
};

/** The document with its placeholders replaced. */
function fill(v) {
  if (typeof v === 'string') {
    for (const [k, r] of Object.entries(subst)) v = v.split(k).join(r);
    return v;
  }
  if (Array.isArray(v)) return v.map(fill);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]));
  return v;
}

/** Run one case through the face; resolves with `'ok'` or the `AcpError` it threw. */
async function run(c) {
  const doc = fill(c.doc);
  try {
    switch (c.document) {
      case 'host': {
        const host = new acp.Host(doc);
        await host.close();
        return 'ok';
      }
      case 'agent': {
        const host = new acp.Host();
        try {
          const agent = await host.spawn(doc);
          assert.equal(agent.info.agentInfo?.name, 'acp-mock-agent');
        } finally {
          await host.close();
        }
        return 'ok';
      }
      case 'session': {
        const host = new acp.Host();
        try {
          const agent = await host.spawn({ command: MOCK });
          const session = await agent.newSession(doc);
          assert.equal(typeof session.id, 'string');
        } finally {
          await host.close();
        }
        return 'ok';
      }
      case 'pool': {
        const host = new acp.Host();
        try {
          const pool = host.pool({ command: MOCK, pool: doc });
          await pool.ready();
          const s = await pool.openSession({ cwd: dir });
          await s.release();
        } finally {
          await host.close();
        }
        return 'ok';
      }
      default:
        throw new Error(`unknown document ${c.document}`);
    }
  } catch (e) {
    if (e instanceof acp.AcpError) return e;
    throw e;
  }
}

for (const c of cases) {
  const except = c.expect === 'ok' ? [] : (c.expect.except ?? []);
  const expect = except.includes('node') ? 'ok' : c.expect;
  test(`options case (${c.document}): ${c.name}`, async () => {
    // `except`: the faces where the document is ok (an option only they take).
    const got = await run(c);
    if (expect === 'ok') {
      assert.equal(got === 'ok' ? 'ok' : `${got.code} at ${got.data?.path}: ${got.message}`, 'ok');
    } else {
      assert.ok(got instanceof acp.AcpError, `expected ${expect.kind} at ${expect.path}, got ok`);
      assert.equal(got.code, expect.kind, got.message);
      assert.equal(got.data?.path, expect.path, got.message);
    }
  });
}

test('every case of cases.json ran (the file has some of each document)', () => {
  const kinds = new Set(cases.map((c) => c.document));
  assert.deepEqual([...kinds].sort(), ['agent', 'host', 'pool', 'session']);
  assert.ok(cases.length >= 60, `${cases.length} cases`);
});

test('the spellings only the Node face had are refused at their own path', () => {
  for (const [doc, at] of [
    [{ manualPermissions: true }, 'manualPermissions'],
    [{ manualElicitations: true }, 'manualElicitations'],
    [{ fs: false }, 'fs'],
    [{ terminal: false }, 'terminal'],
    [{ elicitationModes: { form: true } }, 'elicitationModes'],
    [{ maxLineBytes: NaN }, 'maxLineBytes'],
    [{ fsLimits: { maxReadBytes: Infinity } }, 'fsLimits.maxReadBytes'],
    [{ onPermission: 'yes' }, 'onPermission'],
  ]) {
    assert.throws(
      () => new acp.Host(doc),
      (e) => e instanceof acp.AcpError && e.code === 'invalid_config' && e.data?.path === at,
      JSON.stringify(doc),
    );
  }
});

test('a handler given while its option names another answerer is the core error at that option', () => {
  const cases = [
    [{ permission: 'manual', onPermission: () => null }, 'permission'],
    [{ elicitation: 'none', onElicitation: () => ({ action: 'cancel' }) }, 'elicitation'],
    [{ fs: 'embedder' }, 'fs'],
    [{ ext: 'none', onExtRequest: () => null }, 'ext'],
    [{ terminalAuth: 'embedder' }, 'terminalAuth'],
  ];
  for (const [doc, at] of cases) {
    assert.throws(
      () => new acp.Host(doc),
      (e) => e instanceof acp.AcpError && e.code === 'invalid_config' && e.data?.path === at,
      at,
    );
  }
  // The canonical names with their handlers work.
  return Promise.all(
    [
      new acp.Host({ permission: 'handler', onPermission: () => null }),
      new acp.Host({ fs: { readTextFile: () => '' }, terminal: 'disabled' }),
      new acp.Host({ permission: 'manual', elicitation: 'manual', elicitationModes: ['form'] }),
    ].map((h) => h.close()),
  );
});

test('a session needs its cwd: no default from the Node process', async () => {
  const host = new acp.Host();
  try {
    const agent = await host.spawn({ command: MOCK });
    await assert.rejects(agent.newSession(), (e) => e.code === 'invalid_config' && e.data?.path === 'cwd');
    await assert.rejects(agent.newSession({ cwd: 'rel' }), (e) => e.code === 'invalid_config' && e.data?.path === 'cwd');
  } finally {
    await host.close();
  }
});

test('ts/generated/options.ts is what the core option table generates (no drift)', async () => {
  // A file URL: import() of a bare absolute path fails on Windows (`C:` is read as a URL scheme).
  const { generate, addonTable, OUTPUT_PATH } = await import(pathToFileURL(path.join(PKG_DIR, 'scripts', 'gen-options.mjs')).href);
  const fresh = generate(addonTable());
  assert.ok(fresh === fs.readFileSync(OUTPUT_PATH, 'utf8'), 'ts/generated/options.ts is stale: run `npm run gen-options` in bindings/node');
  // Every option of the table is in it (C-only ones excepted).
  for (const row of addonTable()) {
    if (row.face && row.face !== 'Node') continue;
    const name = row.path.split('.').pop();
    assert.ok(fresh.includes(`  ${name}${row.default === 'required' ? '' : '?'}: `), `${row.document} ${row.path} missing`);
  }
});
