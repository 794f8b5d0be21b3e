// The package as a user gets it: the tarballs `npm pack` makes (scripts/pack.mjs: the main
// package and this machine's platform package), installed offline into an empty project, then
// used from CommonJS, from ESM and from TypeScript, with no Rust toolchain on PATH, for a whole
// turn against the mock agent (which is not shipped: it stands for the user's agent).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { HOST_PLATFORM, MOCK, PKG_DIR, WIN32_SKIP, installOffline, mb, noRustEnv, packed, tarList, tmpdir, treeSize } from './packaging.mjs';
import { elfSections, napiTargets } from '../scripts/pack.mjs';

const pkg = JSON.parse(fs.readFileSync(path.join(PKG_DIR, 'package.json'), 'utf8'));
const NATIVE = `acp-host.${HOST_PLATFORM}.node`;

// One pack and one install for the whole file.
const tarballs = WIN32_SKIP ? null : packed();
const env = WIN32_SKIP ? null : noRustEnv();
const consumer = tmpdir('acp-host-consumer-');
fs.writeFileSync(path.join(consumer, 'package.json'), `${JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }, null, 2)}\n`);
let installed = null;
function install() {
  if (!installed) {
    installOffline(env, consumer, [tarballs.main, tarballs.platforms[HOST_PLATFORM]]);
    installed = JSON.parse(fs.readFileSync(path.join(consumer, 'package.json'), 'utf8'));
  }
  return installed;
}

// A user's script: a turn against the agent (the mock's default scenario asks to write notes.txt;
// the handler allows it once), then which files were loaded.
const TURN = `
  const host = new Host({ onPermission: (req) => req.options.find((o) => o.kind === 'allow_once')?.optionId ?? null });
  const agent = await host.spawn({ command: process.argv[2] });
  const session = await agent.newSession({ cwd: process.argv[3] });
  const result = await session.prompt('Take some notes');
  await host.close();
  let acpError = false;
  try { await host.spawn({ command: process.argv[2] }); } catch (e) { acpError = e instanceof AcpError && e.code === 'closed'; }
  const natives = Object.keys(require.cache).filter((f) => f.endsWith('.node'));
  console.log(JSON.stringify({ stopReason: result.stopReason, text: result.text, acpError, natives, info: agent.info.agentInfo }));
`;
const SCRIPTS = {
  'cjs.cjs': `const { Host, AcpError } = require('acp-host');
(async () => {${TURN}  console.log(JSON.stringify({ entry: require.resolve('acp-host') }));
})().catch((e) => { console.error(e); process.exit(1); });
`,
  'esm.mjs': `import { Host, AcpError, SESSION_HISTORY_LIMIT } from 'acp-host';
import acpHost from 'acp-host';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
const require = createRequire(import.meta.url);
${TURN}console.log(JSON.stringify({ entry: fileURLToPath(import.meta.resolve('acp-host')), sameInstance: acpHost.Host === Host && acpHost.SESSION_HISTORY_LIMIT === SESSION_HISTORY_LIMIT }));
`,
};

function run(script, cwd) {
  const r = spawnSync(process.execPath, [script, MOCK, cwd], { cwd: consumer, env, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, `node ${script}: ${r.stderr}`);
  return r.stdout.trim().split('\n').map((l) => JSON.parse(l)).reduce((a, b) => ({ ...a, ...b }), {});
}

test('npm pack: the main tarball ships the facade and the loader, no native file; the platform tarball only its binary', { skip: WIN32_SKIP }, async (t) => {
  const { targets, version } = await napiTargets();
  const main = tarList(tarballs.main);
  for (const f of ['package/package.json', 'package/README.md', 'package/binding.js', 'package/index.d.ts', 'package/dist/index.js', 'package/dist/index.mjs', 'package/dist/index.d.ts', 'package/dist/generated/events.d.ts']) {
    assert.ok(main.includes(f), `${f} in ${path.basename(tarballs.main)}`);
  }
  assert.deepEqual(main.filter((f) => /\.(node|debug|so|dylib|dll)$/.test(f) || /^package\/(ts|src|test|bench|npm|scripts)\//.test(f)), []);
  const plat = tarList(tarballs.platforms[HOST_PLATFORM]);
  assert.deepEqual(plat.sort(), ['package/README.md', `package/${NATIVE}`, 'package/package.json'].sort());

  // Every declared target is an optional dependency of the main package, at this version.
  const meta = JSON.parse(spawnSync('tar', ['-xzOf', tarballs.main, 'package/package.json'], { encoding: 'utf8' }).stdout);
  assert.deepEqual(meta.optionalDependencies, Object.fromEntries(targets.map((t) => [`acp-host-${t.platform}`, version])));
  assert.ok(targets.length >= 5, 'linux x64/arm64 (gnu), darwin arm64/x64, win32 x64');
  assert.equal(meta.dependencies, undefined, 'nothing else to download');
  assert.equal(meta.exports['.'].import, './dist/index.mjs');
  assert.equal(meta.exports['.'].require, './dist/index.js');
  const sizes = [tarballs.main, tarballs.platforms[HOST_PLATFORM]].map((f) => `${path.basename(f)} ${mb(fs.statSync(f).size)}`);
  t.diagnostic(`tarballs: ${sizes.join(', ')}`);
});

test('npm install <tarballs> into an empty project, offline, with no Rust toolchain on PATH', { skip: WIN32_SKIP }, (t) => {
  const manifest = install();
  assert.deepEqual(Object.keys(manifest.dependencies).sort(), ['acp-host', `acp-host-${HOST_PLATFORM}`]);
  const nm = path.join(consumer, 'node_modules');
  assert.deepEqual(fs.readdirSync(nm).filter((d) => d.startsWith('acp-host')).sort(), ['acp-host', `acp-host-${HOST_PLATFORM}`], 'no other platform package');
  const native = path.join(nm, `acp-host-${HOST_PLATFORM}`, NATIVE);
  const sections = elfSections(native);
  if (sections) {
    assert.deepEqual(sections.filter((s) => s.startsWith('.debug_')), [], 'the shipped binary is stripped');
    assert.ok(sections.includes('.gnu_debuglink'), 'it points at its split debug info');
  }
  // scripts/test-node packs a dev build (~29 MB stripped); a release one (scripts/release-artifacts) stays under 15 MB.
  const bound = tarballs.profile === 'release' ? 15e6 : 40e6;
  assert.ok(fs.statSync(native).size < bound, `${NATIVE} (${tarballs.profile} build) is ${mb(fs.statSync(native).size)}`);
  const main = treeSize(path.join(nm, 'acp-host'));
  const plat = treeSize(path.join(nm, `acp-host-${HOST_PLATFORM}`));
  t.diagnostic(`installed size: acp-host ${mb(main)} + acp-host-${HOST_PLATFORM} ${mb(plat)} = ${mb(main + plat)} (${NATIVE} ${mb(fs.statSync(native).size)})`);
});

test('require("acp-host") from CommonJS runs a turn with the installed platform binary', { skip: WIN32_SKIP }, () => {
  install();
  const cwd = tmpdir('acp-host-consumer-cwd-');
  fs.writeFileSync(path.join(consumer, 'cjs.cjs'), SCRIPTS['cjs.cjs']);
  const out = run('cjs.cjs', cwd);
  assert.equal(out.stopReason, 'end_turn');
  assert.match(out.text, /^Hello! I am the ACP mock agent\./);
  assert.equal(out.info.name, 'acp-mock-agent');
  assert.ok(fs.existsSync(path.join(cwd, 'notes.txt')), 'the allowed write happened');
  assert.equal(out.acpError, true, 'AcpError from the package');
  assert.equal(out.entry, path.join(consumer, 'node_modules/acp-host/dist/index.js'));
  assert.deepEqual(out.natives, [path.join(consumer, 'node_modules', `acp-host-${HOST_PLATFORM}`, NATIVE)]);
});

test('import { Host } from "acp-host" in ESM (Node 20) runs a turn; ESM and CJS share one instance', { skip: WIN32_SKIP }, () => {
  install();
  const cwd = tmpdir('acp-host-consumer-cwd-');
  fs.writeFileSync(path.join(consumer, 'esm.mjs'), SCRIPTS['esm.mjs']);
  const out = run('esm.mjs', cwd);
  assert.equal(out.stopReason, 'end_turn');
  assert.match(out.text, /^Hello! I am the ACP mock agent\./);
  assert.ok(fs.existsSync(path.join(cwd, 'notes.txt')));
  assert.equal(out.acpError, true);
  assert.equal(out.entry, path.join(consumer, 'node_modules/acp-host/dist/index.mjs'));
  assert.equal(out.sameInstance, true);
  assert.deepEqual(out.natives, [path.join(consumer, 'node_modules', `acp-host-${HOST_PLATFORM}`, NATIVE)]);
});

test('TypeScript resolves the installed package\'s types from .cts and .mts files (module nodenext)', { skip: WIN32_SKIP }, () => {
  install();
  const dir = path.join(consumer, 'ts');
  fs.mkdirSync(dir, { recursive: true });
  const body = `
const host: Host = new Host({ policy: 'read-only' });
export function kind(ev: AcpEvent): string { return ev.kind === 'session_update' ? ev.data.sessionUpdate : ev.kind; }
export const limit: number = SESSION_HISTORY_LIMIT;
// @ts-expect-error: not a policy preset
new Host({ policy: 'allow-everything' });
void host.close();
`;
  fs.writeFileSync(path.join(dir, 'a.mts'), `import { Host, SESSION_HISTORY_LIMIT, type AcpEvent } from 'acp-host';\n${body}`);
  fs.writeFileSync(path.join(dir, 'b.cts'), `import { Host, SESSION_HISTORY_LIMIT, type AcpEvent } from 'acp-host';\n${body}`);
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'esnext.disposable'], strict: true, noEmit: true, types: ['node'], typeRoots: [path.join(PKG_DIR, 'node_modules/@types')] },
    include: ['*.mts', '*.cts'],
  }));
  const r = spawnSync(process.execPath, [path.join(PKG_DIR, 'node_modules/typescript/bin/tsc'), '-p', dir], { env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('the ESM entry exports exactly what the CommonJS build exports', async () => {
  // By file URL: a Windows path is not an import specifier (Z:\... reads as a URL scheme).
  const cjs = Object.keys(await import(pathToFileURL(path.join(PKG_DIR, 'dist/index.js'))).then((m) => m.default)).sort();
  const esm = Object.keys(await import(pathToFileURL(path.join(PKG_DIR, 'dist/index.mjs')))).filter((k) => k !== 'default').sort();
  assert.deepEqual(esm, cjs, 'ts/index.mjs lists the runtime exports of ts/index.ts');
  assert.equal(pkg.exports['.'].types, './dist/index.d.ts');
});
