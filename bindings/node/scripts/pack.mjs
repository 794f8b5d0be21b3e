#!/usr/bin/env node
// Packs the npm packages of the Node face (the napi-rs multi-package layout) into tarballs:
//   - one platform package per built target, from npm/<platform>/ (committed manifests, created by
//     `napi create-npm-dirs`): `acp-host-<platform>-<version>.tgz`, holding only
//     `acp-host.<platform>.node`;
//   - the main package `acp-host-<version>.tgz`: `npm pack` here (its `prepack` compiles the
//     TypeScript facade into dist/), with `optionalDependencies` naming every target of
//     `napi.targets` at this version, as `napi pre-publish` writes them before a publish (they are
//     not committed: the platform packages are not on the registry until the first release, and
//     `npm ci` here would fail on them).
//
// A target is built when `acp-host.<platform>.node` is in this directory (`napi build --platform`)
// or already in npm/<platform>/ (`napi artifacts`, in CI). An ELF binary that still carries debug
// info is split first: the debug info goes to `<file>.debug` next to it (never packed) and the
// binary keeps a .gnu_debuglink to it (objcopy). A packed ELF binary with a .debug_* section is an
// error. Mach-O and PE binaries are packed as they are (CI strips them: see
// .github/workflows/node-packages.yml).
//
// Usage: node scripts/pack.mjs --out DIR [--all] [--from DIR]
//   --out DIR   where the tarballs go (created; existing tarballs of these packages are replaced)
//   --all       every target of napi.targets must be built (the release assembly); default: pack
//               the built ones, at least one
//   --from DIR  take the binaries from DIR/acp-host.<platform>.node only (scripts/release-artifacts:
//               cross-built and stripped there); each platform package is assembled in a temporary
//               copy of npm/<platform>/, so the source tree is not written
// Prints one JSON line to stdout: {"main": path, "platforms": {"linux-x64-gnu": path, ...},
// "profile": "dev"|"release"|"unknown"} (the cargo profile of the packed addon: a dev build is
// twice the size of a release one).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PKG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (msg) => process.stderr.write(`pack: ${msg}\n`);
const die = (msg) => {
  log(`ERROR: ${msg}`);
  process.exit(1);
};

/** The configured targets as napi names them (platformArchABI: `linux-x64-gnu`, ...). */
export async function napiTargets() {
  const { readNapiConfig } = await import(path.join(PKG_DIR, 'node_modules/@napi-rs/cli/dist/index.js'));
  const config = await readNapiConfig(path.join(PKG_DIR, 'package.json'));
  return {
    packageName: config.packageName,
    binaryName: config.binaryName,
    version: config.packageJson.version,
    targets: config.targets.map((t) => ({ triple: t.triple, platform: t.platformArchABI })),
  };
}

/** The names of an ELF file's sections (null when the file is not ELF). */
export function elfSections(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 64 || buf.readUInt32BE(0) !== 0x7f454c46) return null;
  const is64 = buf[4] === 2;
  const le = buf[5] === 1;
  const u16 = (o) => (le ? buf.readUInt16LE(o) : buf.readUInt16BE(o));
  const u32 = (o) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const uw = (o) => (is64 ? Number(le ? buf.readBigUInt64LE(o) : buf.readBigUInt64BE(o)) : u32(o));
  const shoff = uw(is64 ? 0x28 : 0x20);
  const shentsize = u16(is64 ? 0x3a : 0x2e);
  const shnum = u16(is64 ? 0x3c : 0x30);
  const shstrndx = u16(is64 ? 0x3e : 0x32);
  const header = (i) => shoff + i * shentsize;
  const strtab = uw(header(shstrndx) + (is64 ? 0x18 : 0x10));
  const names = [];
  for (let i = 0; i < shnum; i++) {
    const start = strtab + u32(header(i));
    names.push(buf.toString('latin1', start, buf.indexOf(0, start)));
  }
  return names;
}

const hasDebugInfo = (file) => (elfSections(file) ?? []).some((s) => s.startsWith('.debug_'));

/** Moves an ELF binary's debug info to `<file>.debug` (objcopy), keeping a debuglink to it. */
export function splitDebugInfo(file) {
  if (!hasDebugInfo(file)) return false;
  const debug = `${file}.debug`;
  const before = fs.statSync(file).size;
  execFileSync('objcopy', ['--only-keep-debug', file, debug]);
  execFileSync('objcopy', ['--strip-debug', '--strip-unneeded', `--add-gnu-debuglink=${debug}`, file]);
  log(`${path.basename(file)}: ${mb(before)} → ${mb(fs.statSync(file).size)} (debug info: ${path.basename(debug)}, ${mb(fs.statSync(debug).size)}, not packed)`);
  return true;
}

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

/** `npm pack` of `dir` into `out`; returns the tarball's path. */
function npmPack(dir, out, extra = []) {
  let json;
  try {
    json = execFileSync('npm', ['pack', '--json', '--loglevel=error', '--pack-destination', out, ...extra], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    die(`npm pack in ${dir} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
  const [info] = JSON.parse(json.slice(json.indexOf('\n[') + 1 || 0));
  return path.join(out, info.filename);
}

/**
 * The cargo profile `napi build` copied `file` from (`dev`, `release`), or null: it is a copy of
 * target/<triple>/<debug|release>/libacp_host_node.so (napi names the triple explicitly).
 */
function cargoProfileOf(file) {
  const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(PKG_DIR, '../../target');
  const size = fs.statSync(file).size;
  const triples = fs.existsSync(targetDir) ? fs.readdirSync(targetDir) : [];
  for (const [dir, profile] of [['debug', 'dev'], ['release', 'release']]) {
    for (const triple of triples) {
      const lib = path.join(targetDir, triple, dir, 'libacp_host_node.so');
      if (fs.existsSync(lib) && fs.statSync(lib).size === size && fs.readFileSync(lib).equals(fs.readFileSync(file))) return profile;
    }
  }
  return null;
}

async function main() {
  const args = process.argv.slice(2);
  let out = null;
  let all = false;
  let from = null;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--out') out = args[++i];
    else if (args[i] === '--all') all = true;
    else if (args[i] === '--from') from = path.resolve(args[++i]);
    else die(`unknown argument: ${args[i]} (usage: node scripts/pack.mjs --out DIR [--all] [--from DIR])`);
  }
  if (!out) die('--out DIR is required');
  out = path.resolve(out);
  fs.mkdirSync(out, { recursive: true });

  const { packageName, binaryName, version, targets } = await napiTargets();
  const platforms = {};
  // What the install test's size bound applies to: --from binaries are release builds.
  let profile = from ? 'release' : 'unknown';
  const staging = from ? fs.mkdtempSync(path.join(os.tmpdir(), 'acp-host-platforms-')) : null;
  for (const { platform } of targets) {
    const file = `${binaryName}.${platform}.node`;
    let npmDir = path.join(PKG_DIR, 'npm', platform);
    const built = path.join(from ?? PKG_DIR, file);
    if (from && fs.existsSync(built)) {
      const copy = path.join(staging, platform);
      fs.cpSync(npmDir, copy, { recursive: true, filter: (f) => !/\.node(\.debug)?$/.test(f) });
      npmDir = copy;
    }
    const inNpmDir = path.join(npmDir, file);
    if (fs.existsSync(built)) {
      if (!from) profile = cargoProfileOf(built) ?? profile;
      splitDebugInfo(built);
      fs.copyFileSync(built, inNpmDir);
    } else if (!from && fs.existsSync(inNpmDir)) {
      splitDebugInfo(inNpmDir);
    } else {
      if (all) die(`${platform}: ${file} was not built`);
      continue;
    }
    if (hasDebugInfo(inNpmDir)) die(`${inNpmDir} still carries debug info`);
    const pkg = JSON.parse(fs.readFileSync(path.join(npmDir, 'package.json'), 'utf8'));
    if (pkg.name !== `${packageName}-${platform}` || pkg.version !== version) {
      die(`${npmDir}/package.json is ${pkg.name}@${pkg.version}, expected ${packageName}-${platform}@${version} (napi version / napi create-npm-dirs)`);
    }
    platforms[platform] = npmPack(npmDir, out);
    log(`${path.basename(platforms[platform])}: ${mb(fs.statSync(platforms[platform]).size)}`);
  }
  if (staging) fs.rmSync(staging, { recursive: true, force: true });
  if (Object.keys(platforms).length === 0) die(`no target built (npm run build:release first): looked for ${binaryName}.<platform>.node`);

  // The main package: npm pack here (prepack: tsc), then the same files again with the
  // optionalDependencies that a publish adds.
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-host-pack-'));
  try {
    const first = npmPack(PKG_DIR, stage);
    execFileSync('tar', ['-xzf', first, '-C', stage]);
    const dir = path.join(stage, 'package');
    const manifestPath = path.join(dir, 'package.json');
    const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
    const shipped = execFileSync('find', ['.', '-type', 'f'], { cwd: dir, encoding: 'utf8' }).split('\n').filter(Boolean);
    const native = shipped.filter((f) => /\.(node|debug|so|dylib|dll)$/.test(f));
    if (native.length) die(`the main package would ship native files: ${native.join(', ')}`);
    manifest.optionalDependencies = Object.fromEntries(targets.map(({ platform }) => [`${packageName}-${platform}`, version]));
    fs.writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    const main = npmPack(dir, out, ['--ignore-scripts']);
    log(`${path.basename(main)}: ${mb(fs.statSync(main).size)} (${shipped.length} files)`);
    process.stdout.write(`${JSON.stringify({ main, platforms, profile })}\n`);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => die(e.stack ?? String(e)));
}
