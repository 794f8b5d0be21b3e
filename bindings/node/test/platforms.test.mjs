// Which platform package npm installs for each released target: the packed main package (its
// `optionalDependencies` name every platform package) installed offline into an empty project
// with `--os`/`--cpu`/`--libc` set to one target must bring exactly that target's package.
//
// The main tarball is the one scripts/test-node packed (ACP_NODE_PACKED; else packed now from the
// addon built in bindings/node). Platform tarballs come from the same pack.json where it has them
// (scripts/test-node: this machine's target; scripts/release-artifacts: all five, real binaries).
// The others are PLACEHOLDERS: the committed npm/<platform>/package.json with a stand-in text file
// as the binary, packed here, so the test needs no release build of other targets. npm chooses by
// the manifests alone, so a placeholder decides the same as the real package; the tests say which
// tarballs were placeholders. The consumer's `overrides` point every platform package at its local
// tarball: no registry is asked (--offline).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { PKG_DIR, WIN32_SKIP, packed, tmpdir } from './packaging.mjs';
import { napiTargets } from '../scripts/pack.mjs';

const run = promisify(execFile);

// What each target is to npm, written out here rather than read from the packages: a platform
// package.json with the wrong `os`/`cpu`/`libc` must fail this test. The Windows package carries
// the napi name the loader (binding.js) asks for on the official, MSVC-built Node.
const TARGETS = {
  'linux-x64-gnu': { os: 'linux', cpu: 'x64', libc: 'glibc' },
  'linux-arm64-gnu': { os: 'linux', cpu: 'arm64', libc: 'glibc' },
  'darwin-arm64': { os: 'darwin', cpu: 'arm64' },
  'darwin-x64': { os: 'darwin', cpu: 'x64' },
  'win32-x64-msvc': { os: 'win32', cpu: 'x64' },
};

const tarballs = WIN32_SKIP ? null : packed();
const work = tmpdir('acp-host-platforms-');

/** The platform tarballs: real where packed, else a placeholder packed from the committed manifest. */
let made = null;
async function platformTarballs(targets) {
  made ??= makeTarballs(targets);
  return made;
}
async function makeTarballs(targets) {
  const out = {};
  const placeholders = [];
  for (const { platform } of targets) {
    if (tarballs.platforms[platform]) {
      out[platform] = tarballs.platforms[platform];
      continue;
    }
    const dir = path.join(work, 'placeholder', platform);
    fs.mkdirSync(dir, { recursive: true });
    const manifest = JSON.parse(fs.readFileSync(path.join(PKG_DIR, 'npm', platform, 'package.json'), 'utf8'));
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
    fs.writeFileSync(path.join(dir, manifest.main), `placeholder for ${platform}: not a binary\n`);
    const { stdout } = await run('npm', ['pack', '--json', '--loglevel=error', '--pack-destination', work], { cwd: dir });
    out[platform] = path.join(work, JSON.parse(stdout)[0].filename);
    placeholders.push(platform);
  }
  return { tgz: out, placeholders };
}

/** `npm install --offline` of the main tarball into a fresh project for one os/cpu/libc; the acp-host* packages installed. */
async function installFor(name, { os, cpu, libc }, tgz) {
  const consumer = path.join(work, `consumer-${name}`);
  fs.mkdirSync(consumer);
  const overrides = Object.fromEntries(Object.entries(tgz).map(([p, f]) => [`acp-host-${p}`, `file:${f}`]));
  fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, overrides }, null, 2));
  const args = ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', `--os=${os}`, `--cpu=${cpu}`];
  if (libc) args.push(`--libc=${libc}`);
  await run('npm', [...args, tarballs.main], { cwd: consumer, env: { ...process.env, npm_config_cache: path.join(work, 'npm-cache') } });
  const nm = path.join(consumer, 'node_modules');
  return { nm, names: fs.readdirSync(nm).filter((d) => d.startsWith('acp-host')).sort() };
}

test('the main package names the five released platform packages as optional dependencies', { skip: WIN32_SKIP }, async () => {
  const { targets, version } = await napiTargets();
  assert.deepEqual(targets.map((t) => t.platform).sort(), Object.keys(TARGETS).sort());
  const meta = JSON.parse((await run('tar', ['-xzOf', tarballs.main, 'package/package.json'])).stdout);
  assert.deepEqual(meta.optionalDependencies, Object.fromEntries(Object.keys(TARGETS).map((p) => [`acp-host-${p}`, version])));
  for (const [platform, want] of Object.entries(TARGETS)) {
    const m = JSON.parse(fs.readFileSync(path.join(PKG_DIR, 'npm', platform, 'package.json'), 'utf8'));
    assert.deepEqual({ os: m.os, cpu: m.cpu, libc: m.libc }, { os: [want.os], cpu: [want.cpu], libc: want.libc ? [want.libc] : undefined }, platform);
  }
});

test('npm install --os/--cpu/--libc of each target installs exactly that target\'s platform package', { skip: WIN32_SKIP }, async (t) => {
  const { targets } = await napiTargets();
  const { tgz, placeholders } = await platformTarballs(targets);
  t.diagnostic(`real tarballs: ${Object.keys(tgz).filter((p) => !placeholders.includes(p)).join(', ') || 'none'}; placeholders (manifest + stand-in binary): ${placeholders.join(', ') || 'none'}`);
  const results = await Promise.all(Object.entries(TARGETS).map(async ([platform, want]) => [platform, await installFor(platform, want, tgz)]));
  for (const [platform, { nm, names }] of results) {
    assert.deepEqual(names, ['acp-host', `acp-host-${platform}`], `--os=${TARGETS[platform].os} --cpu=${TARGETS[platform].cpu}`);
    const installed = JSON.parse(fs.readFileSync(path.join(nm, `acp-host-${platform}`, 'package.json'), 'utf8'));
    const binary = path.join(nm, `acp-host-${platform}`, installed.main);
    assert.equal(installed.main, `acp-host.${platform}.node`);
    assert.ok(fs.statSync(binary).size > 0, `${binary} installed`);
    if (!placeholders.includes(platform)) {
      // A real package: the installed binary is the packed one, so its size is the addon's.
      assert.ok(fs.statSync(binary).size > 1e6, `${platform}: ${binary} is the addon`);
    }
  }
});

test('a target with no platform package (linux x64 musl, linux ia32) installs only the main package', { skip: WIN32_SKIP }, async () => {
  const { targets } = await napiTargets();
  const { tgz } = await platformTarballs(targets);
  for (const [name, want] of [['musl', { os: 'linux', cpu: 'x64', libc: 'musl' }], ['ia32', { os: 'linux', cpu: 'ia32', libc: 'glibc' }]]) {
    const { names } = await installFor(`none-${name}`, want, tgz);
    assert.deepEqual(names, ['acp-host'], name);
  }
});
