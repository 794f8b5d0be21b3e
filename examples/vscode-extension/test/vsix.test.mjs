// The extension as shipped: `vsce package --target <this machine's target>` (scripts/
// package-vsix.mjs) over the packed acp-host tarballs, with no Rust toolchain on PATH. The .vsix
// must carry exactly one native binary, the target's, and the unpacked extension must run a turn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { HOST_PLATFORM, MOCK, mb, noRustEnv, packed, tmpdir, zipList } from '../../../bindings/node/test/packaging.mjs';

const HERE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = path.join(HERE, 'scripts/package-vsix.mjs');
const { TARGETS } = await import(SCRIPT);
const target = Object.keys(TARGETS).find((t) => TARGETS[t].platform === HOST_PLATFORM);
const NATIVE = `extension/node_modules/acp-host-${HOST_PLATFORM}/acp-host.${HOST_PLATFORM}.node`;

let built = null;
function vsix() {
  if (!built) {
    const tarballs = packed();
    const out = tmpdir('acp-vsix-out-');
    const env = noRustEnv();
    const file = execFileSync(process.execPath, [SCRIPT, '--target', target, '--main', tarballs.main, '--platform-package', tarballs.platforms[HOST_PLATFORM], '--out', out], {
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 180_000,
    }).trim();
    built = { file, env, entries: zipList(file) };
  }
  return built;
}

test(`vsce package --target ${target}: the .vsix holds exactly one native binary, the target's`, { skip: !target && `no vsce target for ${HOST_PLATFORM}` }, (t) => {
  const { file, entries } = vsix();
  assert.equal(path.basename(file), `acp-host-vscode-example-${target}-0.1.0.vsix`);
  const native = entries.filter((e) => /\.(node|so|dylib|dll|exe|debug|pdb)$/.test(e));
  assert.deepEqual(native, [NATIVE]);
  for (const f of ['extension/package.json', 'extension/out/extension.js', 'extension/out/core.js', 'extension/node_modules/acp-host/dist/index.js', 'extension/node_modules/acp-host/dist/index.mjs', 'extension/node_modules/acp-host/binding.js', 'extension.vsixmanifest']) {
    assert.ok(entries.includes(f), `${f} in the .vsix`);
  }
  const leaked = entries.filter((e) => /^extension\/(src|test|scripts)\/|^extension\/node_modules\/(typescript|@types|@vscode|\.bin)\/|package-lock\.json$|\.ts$(?<!\.d\.ts$)/.test(e));
  assert.deepEqual(leaked, [], 'no sources, tests or build tools');
  const manifest = execFileSync('unzip', ['-p', file, 'extension.vsixmanifest'], { encoding: 'utf8' });
  assert.match(manifest, new RegExp(`TargetPlatform="${target}"`));
  const pkg = JSON.parse(execFileSync('unzip', ['-p', file, 'extension/package.json'], { encoding: 'utf8' }));
  assert.match(pkg.dependencies['acp-host'], /^\^\d+\.\d+\.\d+$/, 'the registry dependency, not a path');
  assert.equal(pkg.devDependencies, undefined);
  t.diagnostic(`${path.basename(file)}: ${mb(fs.statSync(file).size)}, ${entries.length} entries`);
});

test('the unpacked .vsix runs a turn: out/core.js with its node_modules, no Rust on PATH', { skip: !target && `no vsce target for ${HOST_PLATFORM}` }, () => {
  const { file, env } = vsix();
  const dir = tmpdir('acp-vsix-unpacked-');
  execFileSync('unzip', ['-q', file, '-d', dir]);
  const cwd = tmpdir('acp-vsix-cwd-');
  // The extension's logic (no `vscode` import) with a fake output channel and a quick pick that
  // allows once, as in test/core.test.mjs.
  const script = `
    const core = require(${JSON.stringify(path.join(dir, 'extension/out/core.js'))});
    let text = '';
    const output = { append: (t) => { text += t; }, appendLine: (l) => { text += l + '\\n'; } };
    const runner = new core.AgentRunner(() => ({ command: ${JSON.stringify(MOCK)}, args: [] }), {
      output,
      picker: async (items) => items.find((i) => i.optionId === 'allow-once'),
    });
    runner.prompt(${JSON.stringify(cwd)}, 'Take some notes')
      .then(async (turn) => {
        await runner.dispose();
        const natives = Object.keys(require.cache).filter((f) => f.endsWith('.node'));
        console.log(JSON.stringify({ stopReason: turn.stopReason, text, natives }));
      })
      .catch((e) => { console.error(e); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: dir, env, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.stopReason, 'end_turn');
  assert.match(out.text, /Hello! I am the ACP mock agent\./);
  assert.match(out.text, /■ end_turn/);
  assert.ok(fs.existsSync(path.join(cwd, 'notes.txt')), 'the allowed write happened');
  assert.deepEqual(out.natives, [path.join(dir, NATIVE)], 'the binary from the .vsix');
});
