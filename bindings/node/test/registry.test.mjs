// acp-host's Registry: the core's registry through the Node face — resolution of each kind from
// the fixture, errors with their paths, an install from a local tar.gz (built here) followed by a
// turn through the installed binary, and a hostile archive refused. No network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import zlib from 'node:zlib';

import { acp, MOCK, ROOT, tmpdir } from './helpers.mjs';

const FIXTURE = path.join(ROOT, 'fixtures', 'registry', 'registry.json');
const PLATFORM = `${{ linux: 'linux', darwin: 'darwin', win32: 'windows' }[process.platform]}-${{ x64: 'x86_64', arm64: 'aarch64' }[process.arch]}`;

/** A .tar.gz of regular files (ustar headers), names taken as given. */
function tarGz(files, mode = 0o644) {
  const blocks = [];
  for (const [name, text] of Object.entries(files)) {
    const data = Buffer.from(text);
    const h = Buffer.alloc(512);
    h.write(name, 0, 100, 'utf8');
    h.write(mode.toString(8).padStart(7, '0') + '\0', 100, 8, 'ascii');
    h.write('0000000\0', 108, 8, 'ascii');
    h.write('0000000\0', 116, 8, 'ascii');
    h.write(data.length.toString(8).padStart(11, '0') + '\0', 124, 12, 'ascii');
    h.write('00000000000\0', 136, 12, 'ascii');
    h.write('        ', 148, 8, 'ascii');
    h.write('0', 156, 1, 'ascii');
    h.write('ustar\0' + '00', 257, 8, 'ascii');
    let sum = 0;
    for (const b of h) sum += b;
    h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return zlib.gzipSync(Buffer.concat(blocks));
}

function oneBinary(archive, sha256, cmd, args = [], env = {}) {
  const target = { archive, cmd, args, env };
  if (sha256) target.sha256 = sha256;
  return acp.Registry.fromJson(JSON.stringify({
    version: '1.0.0',
    agents: [{ id: 'tool', name: 'Tool', version: '0.1.0', description: 'from a local archive', distribution: { binary: { [PLATFORM]: target } } }],
  }));
}

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');
const isAcp = (code, path) => (e) => e instanceof acp.AcpError && e.code === code && (path === undefined || e.data?.path === path);

test('the fixture resolves to npx, uvx and binary commands', () => {
  const reg = acp.Registry.fromFile(FIXTURE);
  assert.equal(reg.version, '1.0.0');
  assert.deepEqual(reg.agents().map((a) => a.id), ['npx-agent', 'uvx-agent', 'cmd-agent', 'binary-agent', 'unverified-agent', 'mixed-agent', 'escape-agent']);
  assert.equal(reg.agent('npx-agent').distribution.npx.package, '@example/npx-agent@1.2.3');

  const npx = reg.resolve('npx-agent');
  assert.deepEqual([npx.kind, npx.agentId, npx.agentVersion, npx.needsInstall], ['npx', 'npx-agent', '1.2.3', false]);
  assert.deepEqual(npx.spec, { command: 'npx', args: ['-y', '@example/npx-agent@1.2.3', '--acp', '--verbose'], env: { NPX_AGENT_MODE: 'acp' } });
  const uvx = reg.resolve('uvx-agent', { uvxCommand: '/opt/uv/bin/uvx' });
  assert.deepEqual(uvx.spec, { command: '/opt/uv/bin/uvx', args: ['uvx-agent==0.4.0', 'acp'], env: { UVX_AGENT_LOG: 'debug' } });
  assert.deepEqual(reg.resolve('cmd-agent', { prefer: 'uvx' }).spec.args, ['--from', 'example-tools==2.0.0', 'tools-acp']);

  const cache = tmpdir('registry-cache');
  const bin = reg.resolve('binary-agent', { platform: 'linux-x86_64', cacheDir: cache });
  const dir = path.join(cache, 'binary-agent', '3.1.4', 'linux-x86_64');
  assert.deepEqual([bin.kind, bin.platform, bin.installDir, bin.needsInstall], ['binary', 'linux-x86_64', dir, true]);
  assert.deepEqual(bin.spec, { command: path.join(dir, 'binary-agent'), args: ['acp'], env: { BINARY_AGENT_PLATFORM: 'linux-x86_64' } });
  assert.equal(fs.existsSync(dir), false); // resolution never installs
  assert.equal(reg.resolve('mixed-agent', { prefer: ['binary', 'npx'], platform: 'linux-x86_64', cacheDir: cache }).kind, 'binary');
});

test('errors carry their codes and paths', () => {
  const reg = acp.Registry.fromFile(FIXTURE);
  assert.throws(() => reg.resolve('no-such-agent'), isAcp('not_found'));
  assert.throws(() => reg.agent('no-such-agent'), isAcp('not_found'));
  assert.throws(() => reg.resolve('npx-agent', { prefer: ['pip'] }), isAcp('invalid_argument'));
  assert.throws(() => reg.resolve('binary-agent', { platform: 'beos-m68k', cacheDir: '/tmp' }), isAcp('invalid_argument'));
  assert.throws(() => reg.resolve('escape-agent', { platform: 'linux-x86_64', cacheDir: '/tmp' }),
    isAcp('invalid_config', 'agents[6].distribution.binary.linux-x86_64.cmd'));
  const bad = { agents: [
    { id: 'a', name: 'A', version: '1.0.0', description: 'd', distribution: { npx: { package: 'a' } } },
    { id: 'b', name: 'B', version: '1.0.0', description: 'd', distribution: { npx: { args: [] } } },
  ] };
  assert.throws(() => acp.Registry.fromJson(JSON.stringify(bad)), isAcp('invalid_config', 'agents[1].distribution.npx.package'));
  assert.throws(() => acp.Registry.fromJson('{not json'), isAcp('invalid_config', '$'));
  assert.throws(() => acp.Registry.fromFile(path.join(tmpdir('registry'), 'missing.json')), isAcp('io'));
});

test('an installed binary runs a turn', async () => {
  const dir = tmpdir('registry-install');
  // The launcher checks the entry's env and args, then runs the mock: a shell script, or on
  // Windows a batch file (the host runs .cmd through cmd.exe).
  const win = process.platform === 'win32';
  const launcher = win ? 'run.cmd' : 'run.sh';
  const script = win
    ? `@echo off\r\nif not "%TOOL_FROM_REGISTRY%"=="1" exit /b 3\r\nif not "%~1"=="--from-registry" exit /b 4\r\n"${MOCK}"\r\nexit /b %ERRORLEVEL%\r\n`
    : `#!/bin/sh\n[ "$TOOL_FROM_REGISTRY" = 1 ] || exit 3\n[ "$1" = --from-registry ] || exit 4\nshift\nexec '${MOCK}' "$@"\n`;
  const bytes = tarGz({ [`agent/${launcher}`]: script }); // 0644: the install makes the cmd executable
  const archive = path.join(dir, 'agent.tar.gz');
  fs.writeFileSync(archive, bytes);
  const reg = oneBinary(pathToFileURL(archive).href, sha256(bytes), `./agent/${launcher}`, ['--from-registry'], { TOOL_FROM_REGISTRY: '1' });
  const cacheDir = path.join(dir, 'cache');
  assert.equal(reg.resolve('tool', { cacheDir }).needsInstall, true);

  const pending = reg.install('tool', { cacheDir });
  assert.ok(pending instanceof Promise);
  const installed = await pending;
  const installDir = path.join(cacheDir, 'tool', '0.1.0', PLATFORM);
  assert.deepEqual(installed, { dir: installDir, cmd: path.join(installDir, 'agent', launcher), alreadyInstalled: false });
  assert.equal((await reg.install('tool', { cacheDir })).alreadyInstalled, true);

  const resolved = reg.resolve('tool', { cacheDir });
  assert.deepEqual([resolved.kind, resolved.needsInstall, resolved.spec.command], ['binary', false, installed.cmd]);
  const host = new acp.Host();
  try {
    const agent = await host.spawn({ ...resolved.spec, cwd: dir });
    assert.equal(agent.info.agentInfo?.name, 'acp-mock-agent');
    const session = await agent.newSession({ cwd: dir });
    assert.equal((await session.prompt('hello')).stopReason, 'end_turn');
    assert.equal((await agent.shutdown()).exitCode, 0);
  } finally {
    await host.close();
  }
});

test('a hostile archive, an unverifiable entry and a remote URL install nothing', async () => {
  const dir = tmpdir('registry-hostile');
  const bytes = tarGz({ 'agent/run.sh': '#!/bin/sh\n', '../evil': 'pwned\n' });
  const archive = path.join(dir, 'hostile.tar.gz');
  fs.writeFileSync(archive, bytes);
  const cacheDir = path.join(dir, 'nest', 'cache');
  fs.mkdirSync(cacheDir, { recursive: true });
  await assert.rejects(oneBinary(archive, sha256(bytes), './agent/run.sh').install('tool', { cacheDir }),
    isAcp('invalid_config', `agents[0].distribution.binary.${PLATFORM}.archive`));
  assert.deepEqual(fs.readdirSync(cacheDir), []);
  assert.equal(fs.existsSync(path.join(dir, 'nest', 'evil')), false);

  await assert.rejects(oneBinary(archive, null, './agent/run.sh').install('tool', { cacheDir }),
    isAcp('invalid_config', `agents[0].distribution.binary.${PLATFORM}.sha256`));
  await assert.rejects(oneBinary('https://example.invalid/a.tar.gz', sha256(bytes), './agent/run.sh').install('tool', { cacheDir }),
    (e) => isAcp('unsupported')(e) && e.message.includes('file://'));
  await assert.rejects(oneBinary(archive, sha256(bytes), './agent/run.sh').install('tool', {}), isAcp('invalid_argument'));
  assert.deepEqual(fs.readdirSync(cacheDir), []);
});

test('a fetch hook serves https:// archives; file:// stays local', async () => {
  const dir = tmpdir('registry-fetch');
  const bytes = tarGz({ 'agent/run.sh': '#!/bin/sh\nexit 0\n' });
  const url = 'https://agents.example.invalid/tool/0.1.0/tool.tar.gz';
  const reg = oneBinary(url, sha256(bytes), './agent/run.sh');
  const asked = [];
  const cacheDir = path.join(dir, 'cache');
  const installDir = path.join(cacheDir, 'tool', '0.1.0', PLATFORM);
  const installed = await reg.install('tool', { cacheDir, fetch: async (u) => { asked.push(u); return new Uint8Array(bytes); } });
  assert.deepEqual(installed, { dir: installDir, cmd: path.join(installDir, 'agent', 'run.sh'), alreadyInstalled: false });
  assert.deepEqual(asked, [url]);
  assert.equal(fs.readFileSync(installed.cmd, 'utf8'), '#!/bin/sh\nexit 0\n');
  // Installed already: the hook is not asked again.
  assert.equal((await reg.install('tool', { cacheDir, fetch: (u) => { asked.push(u); return bytes; } })).alreadyInstalled, true);
  assert.deepEqual(asked, [url]);

  // A Buffer, an ArrayBuffer, a view into a larger buffer; sync or async.
  const padded = Buffer.concat([Buffer.from('xxxx'), bytes, Buffer.from('yy')]);
  const forms = {
    buffer: () => bytes,
    arrayBuffer: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    view: () => new Uint8Array(padded.buffer, padded.byteOffset + 4, bytes.length),
  };
  for (const [name, fetch] of Object.entries(forms)) {
    const c = path.join(dir, `cache-${name}`);
    assert.equal((await reg.install('tool', { cacheDir: c, fetch, platform: PLATFORM })).alreadyInstalled, false, name);
  }

  // file:// (and plain paths) are read locally even with a hook.
  const archive = path.join(dir, 'tool.tar.gz');
  fs.writeFileSync(archive, bytes);
  for (const local of [pathToFileURL(archive).href, archive]) {
    const c = tmpdir('registry-fetch-local');
    const never = () => { throw new Error('the hook was called for a local archive'); };
    assert.equal((await oneBinary(local, sha256(bytes), './agent/run.sh').install('tool', { cacheDir: c, fetch: never })).alreadyInstalled, false);
  }
});

test('a failing or misbehaving fetch hook installs nothing', async () => {
  const dir = tmpdir('registry-fetch-bad');
  const bytes = tarGz({ 'agent/run.sh': '#!/bin/sh\n' });
  const url = 'https://agents.example.invalid/tool.tar.gz';
  const reg = oneBinary(url, sha256(bytes), './agent/run.sh');
  const cacheDir = path.join(dir, 'cache');
  fs.mkdirSync(cacheDir);
  const empty = () => assert.deepEqual(fs.readdirSync(cacheDir), []);

  for (const fetch of [async () => { throw new Error('HTTP 503'); }, () => { throw new Error('HTTP 503'); }, () => Promise.reject(new Error('HTTP 503'))]) {
    await assert.rejects(reg.install('tool', { cacheDir, fetch }),
      (e) => isAcp('io')(e) && e.message.includes(url) && e.message.includes('HTTP 503'));
    empty();
  }
  await assert.rejects(reg.install('tool', { cacheDir, fetch: () => Promise.reject('plain reason') }),
    (e) => isAcp('io')(e) && e.message.includes('plain reason'));
  empty();

  // Other bytes than the registry's sha256 names.
  await assert.rejects(reg.install('tool', { cacheDir, fetch: () => tarGz({ 'agent/run.sh': '#!/bin/sh\nevil\n' }) }),
    (e) => isAcp('invalid_config', `agents[0].distribution.binary.${PLATFORM}.sha256`)(e) && e.message.includes('sha256'));
  empty();

  // Not bytes: a string, a Response-like object, nothing, an array of numbers.
  for (const [value, named] of [['archive', 'string'], [{ ok: true, arrayBuffer() {} }, 'Object'], [undefined, 'undefined'], [null, 'null'], [[1, 2], 'Array']]) {
    await assert.rejects(reg.install('tool', { cacheDir, fetch: async () => value }),
      (e) => isAcp('invalid_argument')(e) && e.message.includes(url) && e.message.includes(named));
    empty();
  }
  await assert.rejects(reg.install('tool', { cacheDir, fetch: 'https://proxy' }), isAcp('invalid_argument'));
  // Without a hook, https:// is still `unsupported`.
  await assert.rejects(reg.install('tool', { cacheDir }), (e) => isAcp('unsupported')(e) && e.message.includes('`fetch`'));
  empty();
});

test('onProgress gets the download and the extraction, in order, before the install settles', async () => {
  const dir = tmpdir('registry-progress');
  const bytes = tarGz({ 'agent/run.sh': '#!/bin/sh\nexit 0\n' });
  const archive = path.join(dir, 'tool.tar.gz');
  fs.writeFileSync(archive, bytes);
  const url = pathToFileURL(archive).href;
  const reg = oneBinary(url, sha256(bytes), './agent/run.sh');
  const cacheDir = path.join(dir, 'cache');
  const got = [];
  let settled = false;
  const install = reg.install('tool', { cacheDir, onProgress: (p) => got.push({ ...p, settled }) });
  await install.then(() => (settled = true));
  assert.deepEqual(got.map((p) => `${p.phase} ${p.stage}`), ['download started', 'download done', 'extract started', 'extract done']);
  assert.ok(got.every((p) => !p.settled && typeof p.elapsedMs === 'number' && p.elapsedMs >= 0), JSON.stringify(got));
  assert.equal(got[0].message, url, 'the download names its URL');
  assert.equal(got[1].bytes, bytes.length, 'the download says how many bytes it fetched');
  assert.deepEqual([got[2].bytes, got[2].message, got[3].message], [null, null, null]);

  // Installed already: nothing to report.
  const again = [];
  assert.equal((await reg.install('tool', { cacheDir, onProgress: (p) => again.push(p) })).alreadyInstalled, true);
  assert.deepEqual(again, []);
});

test('onProgress: a failed download is reported; a throwing hook changes nothing; a non-function is refused', async () => {
  const dir = tmpdir('registry-progress-bad');
  const bytes = tarGz({ 'agent/run.sh': '#!/bin/sh\n' });
  const url = 'https://agents.example.invalid/tool.tar.gz';
  const reg = oneBinary(url, sha256(bytes), './agent/run.sh');
  const cacheDir = path.join(dir, 'cache');
  const got = [];
  await assert.rejects(reg.install('tool', { cacheDir, fetch: () => { throw new Error('HTTP 503'); }, onProgress: (p) => got.push(p) }), isAcp('io'));
  assert.deepEqual(got.map((p) => `${p.phase} ${p.stage}`), ['download started', 'download failed']);
  assert.match(got[1].message, /HTTP 503/);

  // Other bytes than the sha256 names: the download fails saying so.
  got.length = 0;
  await assert.rejects(reg.install('tool', { cacheDir, fetch: () => tarGz({ 'x': 'y' }), onProgress: (p) => got.push(p) }), isAcp('invalid_config'));
  assert.deepEqual(got.map((p) => `${p.phase} ${p.stage}`), ['download started', 'download failed']);
  assert.match(got[1].message, /sha256/);

  const escaped = [];
  const onEscape = (e) => escaped.push(e);
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
  let calls = 0;
  const installed = await reg.install('tool', {
    cacheDir,
    fetch: () => bytes,
    onProgress: (p) => {
      calls++;
      if (p.stage === 'started') throw new Error('progress bar gone');
      return Promise.reject(new Error('async progress bar gone'));
    },
  });
  await new Promise((r) => setTimeout(r, 50));
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
  assert.equal(installed.alreadyInstalled, false);
  assert.equal(calls, 4);
  assert.deepEqual(escaped, []);

  await assert.rejects(reg.install('tool', { cacheDir: path.join(dir, 'other'), onProgress: 'bar' }), isAcp('invalid_argument'));
  assert.equal(fs.existsSync(path.join(dir, 'other')), false);
});
