// Shared by the packaging tests (test/install.test.mjs here, examples/vscode-extension/test/
// vsix.test.mjs): the packed tarballs, an environment without a Rust toolchain, offline installs.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PKG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = path.resolve(PKG_DIR, '../..');
export const MOCK = process.env.ACP_MOCK_AGENT ?? path.join(process.env.CARGO_TARGET_DIR ?? path.join(ROOT, 'target'), 'debug', 'acp-mock-agent');

/** This machine's napi platform name (`linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`, ...). */
export const HOST_PLATFORM = (() => {
  const { platform, arch } = process;
  if (platform === 'linux') {
    const musl = !process.report?.getReport?.().header?.glibcVersionRuntime;
    return `linux-${arch}-${musl ? 'musl' : 'gnu'}`;
  }
  return platform === 'win32' ? `win32-${arch}-msvc` : `${platform}-${arch}`;
})();

/**
 * Why the packaging tests are skipped on Windows (false elsewhere): they pack and install with npm
 * and tar, which the Wine prefix does not have, and scripts/pack.mjs is a Unix release step;
 * what they check (the tarballs' contents, npm's choice of platform package) is the same on every
 * host and runs on Linux (scripts/test-node, scripts/release-artifacts).
 */
export const WIN32_SKIP = process.platform === 'win32' && 'packing and installing with npm and tar is a Unix release step (no npm or tar in the Wine prefix); checked on Linux';

const made = [];
process.on('exit', () => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});
/** A fresh temporary directory, removed when the process exits. */
export function tmpdir(prefix) {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  made.push(d);
  return d;
}

/**
 * The tarballs, `{ main, platforms: { [platform]: path } }`: those scripts/test-node packed once
 * (ACP_NODE_PACKED: the JSON file `scripts/pack.mjs` printed), else packed now into a temporary
 * directory from the addon built in bindings/node.
 */
export function packed() {
  if (process.env.ACP_NODE_PACKED) return JSON.parse(fs.readFileSync(process.env.ACP_NODE_PACKED, 'utf8'));
  const out = tmpdir('acp-host-tarballs-');
  const json = execFileSync(process.execPath, [path.join(PKG_DIR, 'scripts/pack.mjs'), '--out', out], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(json);
}

function which(cmd, pathVar) {
  for (const dir of pathVar.split(path.delimiter)) {
    const f = path.join(dir, cmd);
    try {
      fs.accessSync(f, fs.constants.X_OK);
      return f;
    } catch {}
  }
  return null;
}

/**
 * An environment whose PATH has node and npm but no Rust toolchain: a directory with `node` and
 * `npm` links, then /usr/bin and /bin. Throws if `cargo` or `rustc` is still found there.
 */
export function noRustEnv() {
  const bin = tmpdir('acp-host-bin-');
  fs.symlinkSync(process.execPath, path.join(bin, 'node'));
  const npm = which('npm', process.env.PATH ?? '');
  if (!npm) throw new Error('npm not found on PATH');
  fs.symlinkSync(fs.realpathSync(npm), path.join(bin, 'npm'));
  const PATH = [bin, '/usr/bin', '/bin'].join(path.delimiter);
  for (const tool of ['cargo', 'rustc', 'rustup']) {
    const found = which(tool, PATH);
    if (found) throw new Error(`${tool} is on the stripped PATH (${found}): this test needs a machine without Rust in /usr/bin`);
  }
  const env = { ...process.env, PATH };
  for (const k of Object.keys(env)) if (/^(CARGO|RUSTUP|RUSTC|npm_)/i.test(k)) delete env[k];
  return env;
}

/** `npm` with the given environment and arguments, in `cwd`; returns stdout. */
export function npm(env, cwd, args) {
  const r = spawnSync(path.join(env.PATH.split(path.delimiter)[0], 'npm'), args, { cwd, env, encoding: 'utf8', timeout: 180_000 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/**
 * Installs tarballs into `dir` as a user would, offline: `npm install --offline` with an empty
 * cache of its own, so nothing can come from the registry (the platform package is installed from
 * its tarball; the other targets' optional packages are skipped).
 */
export function installOffline(env, dir, tarballs, extra = []) {
  const cache = path.join(tmpdir('acp-host-npm-cache-'), 'cache');
  return npm(env, dir, ['install', '--offline', '--cache', cache, '--no-audit', '--no-fund', '--loglevel=error', ...extra, ...tarballs]);
}

/** Total size of the files under `p` (bytes). */
export function treeSize(p) {
  const st = fs.lstatSync(p);
  if (!st.isDirectory()) return st.size;
  return fs.readdirSync(p).reduce((n, e) => n + treeSize(path.join(p, e)), 0);
}

export const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;

/** The file names in a tarball / zip archive. */
export const tarList = (file) => execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).split('\n').filter(Boolean);
export const zipList = (file) => execFileSync('unzip', ['-Z1', file], { encoding: 'utf8' }).split('\n').filter(Boolean);
