#!/usr/bin/env node
// Packages this extension into a platform-specific .vsix with @vscode/vsce, the way an extension
// author ships one that depends on the npm package acp-host:
//   1. tsc (src/ → out/)
//   2. a staging copy (package.json, README.md, .vscodeignore, out/) whose dependency is
//      `"acp-host": "^<version>"`, as in an extension that installs it from the registry (this
//      example's own dependency is the repository's bindings/node)
//   3. `npm install --omit=dev --os <os> --cpu <cpu> [--libc <libc>]` of the acp-host tarball and
//      the target's platform package tarball, offline: node_modules then holds acp-host and
//      exactly one native binary, the target's (npm installs only the optional platform package
//      matching --os/--cpu/--libc)
//   4. `vsce package --target <target>`: the .vsix carries node_modules (acp-host and its platform
//      package; no bundler), out/, package.json and README.md
//
// Usage: node scripts/package-vsix.mjs --target <vsce target> --main <acp-host-X.tgz>
//          --platform-package <acp-host-<platform>-X.tgz> --out <dir>
//   vsce targets and their acp-host platform packages: linux-x64 (linux-x64-gnu), linux-arm64
//   (linux-arm64-gnu), alpine-x64 (linux-x64-musl), darwin-arm64, darwin-x64, win32-x64
//   (win32-x64-msvc).
// Prints the .vsix path to stdout.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** vsce target → the acp-host platform package and npm's --os/--cpu/--libc for it. */
export const TARGETS = {
  'linux-x64': { platform: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' },
  'linux-arm64': { platform: 'linux-arm64-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc' },
  'alpine-x64': { platform: 'linux-x64-musl', os: 'linux', cpu: 'x64', libc: 'musl' },
  'darwin-arm64': { platform: 'darwin-arm64', os: 'darwin', cpu: 'arm64' },
  'darwin-x64': { platform: 'darwin-x64', os: 'darwin', cpu: 'x64' },
  'win32-x64': { platform: 'win32-x64-msvc', os: 'win32', cpu: 'x64' },
};

const log = (msg) => process.stderr.write(`package-vsix: ${msg}\n`);

function run(cmd, args, cwd) {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new Error(`${path.basename(cmd)} ${args.join(' ')} failed in ${cwd}:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

export function packageVsix({ target, main, platformPackage, out }) {
  const t = TARGETS[target];
  if (!t) throw new Error(`unknown target ${target} (one of ${Object.keys(TARGETS).join(', ')})`);
  if (!path.basename(platformPackage).startsWith(`acp-host-${t.platform}-`)) {
    throw new Error(`${target} needs the acp-host-${t.platform} package, not ${path.basename(platformPackage)}`);
  }
  const npm = process.env.npm_execpath && fs.existsSync(process.env.npm_execpath) ? [process.execPath, process.env.npm_execpath] : ['npm'];
  const node = (script, args, cwd) => run(process.execPath, [script, ...args], cwd);

  log('tsc');
  node(path.join(HERE, 'node_modules/typescript/bin/tsc'), ['-p', 'tsconfig.json'], HERE);

  const stage = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'acp-vsix-')));
  try {
    for (const f of ['package.json', 'README.md', '.vscodeignore']) fs.copyFileSync(path.join(HERE, f), path.join(stage, f));
    fs.cpSync(path.join(HERE, 'out'), path.join(stage, 'out'), { recursive: true });
    const manifestPath = path.join(stage, 'package.json');
    const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
    delete manifest.devDependencies; // build tools (tsc, vsce, @types): never in the .vsix
    delete manifest.dependencies;
    fs.writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);

    log(`npm install (offline, --os ${t.os} --cpu ${t.cpu}${t.libc ? ` --libc ${t.libc}` : ''})`);
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-vsix-npm-cache-'));
    try {
      const platformFlags = ['--os', t.os, '--cpu', t.cpu, ...(t.libc ? ['--libc', t.libc] : [])];
      run(npm[0], [...npm.slice(1), 'install', '--offline', '--cache', cache, '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error', ...platformFlags, path.resolve(main), path.resolve(platformPackage)], stage);
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
    // The manifest as an extension that installs acp-host from the registry has it: the platform
    // package is acp-host's optional dependency, not the extension's.
    const installed = JSON.parse(fs.readFileSync(path.join(stage, 'node_modules/acp-host/package.json'), 'utf8'));
    manifest.dependencies = { 'acp-host': `^${installed.version}` };
    fs.writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    fs.rmSync(path.join(stage, 'package-lock.json'), { force: true });

    fs.mkdirSync(out, { recursive: true });
    const vsix = path.join(path.resolve(out), `${manifest.name}-${target}-${manifest.version}.vsix`);
    log(`vsce package --target ${target}`);
    const vsce = fs.realpathSync(path.join(HERE, 'node_modules/.bin/vsce'));
    node(vsce, ['package', '--target', target, '--out', vsix, '--allow-missing-repository', '--skip-license'], stage);
    return vsix;
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opts = {};
  const names = { '--target': 'target', '--main': 'main', '--platform-package': 'platformPackage', '--out': 'out' };
  for (let i = 0; i < args.length; i += 2) {
    if (!names[args[i]] || args[i + 1] === undefined) {
      log(`usage: node scripts/package-vsix.mjs --target <t> --main <tgz> --platform-package <tgz> --out <dir>`);
      process.exit(2);
    }
    opts[names[args[i]]] = args[i + 1];
  }
  try {
    process.stdout.write(`${packageVsix(opts)}\n`);
  } catch (e) {
    log(`ERROR: ${e.message}`);
    process.exit(1);
  }
}
