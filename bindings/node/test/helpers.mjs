// Shared helpers for the node:test suites: the package (loaded from its directory, as a user
// would), the mock agent, event collection and process-table checks.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
export const PKG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = path.resolve(PKG_DIR, '../..');
/** The package, required by its directory (`require('./bindings/node')`). */
export const acp = require(PKG_DIR);

/** The mock agent binary (ACP_MOCK_AGENT, else target/debug/acp-mock-agent, built if missing). */
export const MOCK = (() => {
  if (process.env.ACP_MOCK_AGENT) return process.env.ACP_MOCK_AGENT;
  const target = process.env.CARGO_TARGET_DIR ?? path.join(ROOT, 'target');
  const bin = path.join(target, 'debug', process.platform === 'win32' ? 'acp-mock-agent.exe' : 'acp-mock-agent');
  if (!fs.existsSync(bin)) {
    execFileSync('cargo', ['build', '-q', '-p', 'acp-mock-agent'], { cwd: ROOT, stdio: 'inherit' });
  }
  return bin;
})();

export const T = 20_000;

export function mock(scenario, extra = []) {
  return { command: MOCK, args: [...(scenario ? ['--scenario', scenario] : []), ...extra] };
}

/** A fresh, canonical temporary directory. */
export function tmpdir(prefix = 'acp-host-node-') {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
}

export function withTimeout(promise, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

/** `kind` or `kind:sessionUpdate` for messages and matching. */
export function describe(ev) {
  return ev.kind === 'session_update' ? `${ev.kind}:${ev.data?.sessionUpdate}` : ev.kind;
}

export function matches(ev, spec) {
  return spec.includes(':') ? describe(ev) === spec : ev.kind === spec;
}

/** Pull from an event iterator until `stop(ev)` (inclusive); fail after `ms`. */
export async function collectUntil(it, stop, ms = T) {
  const got = [];
  const deadline = Date.now() + ms;
  for (;;) {
    const left = deadline - Date.now();
    let r;
    try {
      r = await withTimeout(it.next(), Math.max(1, left), 'an event');
    } catch (e) {
      throw new Error(`${e.message}; got: ${got.map(describe).join(' ')}`);
    }
    if (r.done) return got;
    got.push(r.value);
    if (stop(r.value)) return got;
  }
}

/** Whatever arrives within `settle` ms of quiet. */
export async function drain(it, settle = 300) {
  const got = [];
  for (;;) {
    const r = await Promise.race([it.next(), new Promise((res) => setTimeout(() => res(null), settle))]);
    if (r === null || r.done) return got;
    got.push(r.value);
  }
}

export const ofKind = (evs, kind) => evs.filter((e) => e.kind === kind);

/** Whether a process exists and is not a zombie (on Windows: has not exited). */
export function alive(pid) {
  if (process.platform === 'win32') {
    // Signal 0 only asks whether the process is there (libuv: OpenProcess + its exit code).
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      return e.code === 'EPERM';
    }
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export async function waitGone(pid, ms = 5000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !alive(pid);
}

export function agentPid(evs) {
  const ready = evs.find((e) => e.kind === 'agent_ready');
  if (!ready) throw new Error('no agent_ready event');
  return ready.data.pid;
}

/** Live processes whose command line mentions the mock agent and whose parent is `ppid`. */
export function mockChildrenOf(ppid) {
  if (process.platform === 'win32') {
    return windowsProcesses()
      .filter((p) => p.ppid === ppid && p.name.toLowerCase().startsWith('acp-mock-agent') && alive(p.pid))
      .map((p) => p.pid);
  }
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (!cmd.includes('acp-mock-agent')) continue;
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid && alive(Number(d))) out.push(Number(d));
    } catch {
      // raced with an exiting process
    }
  }
  return out;
}

/**
 * Windows' process table, `{ name, ppid, pid }` each (Win32_Process): through wmic (Wine has it),
 * else PowerShell (Windows 11 24H2 drops wmic). Each line reads `Name ParentProcessId ProcessId`.
 */
function windowsProcesses() {
  let raw;
  try {
    raw = execFileSync('wmic', ['process', 'get', 'Name,ParentProcessId,ProcessId'], { stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
    const ps = 'Get-CimInstance Win32_Process | ForEach-Object { "$($_.Name) $($_.ParentProcessId) $($_.ProcessId)" }';
    raw = execFileSync('powershell', ['-NoProfile', '-Command', ps], { stdio: ['ignore', 'pipe', 'ignore'] });
  }
  // wmic writes UTF-16 with a byte order mark when piped.
  const text = raw[0] === 0xff && raw[1] === 0xfe ? raw.subarray(2).toString('utf16le') : raw.toString('utf8');
  const out = [];
  for (const line of text.split(/\r?\n/)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 3 || !/^\d+$/.test(f.at(-1)) || !/^\d+$/.test(f.at(-2))) continue;
    out.push({ name: f.slice(0, -2).join(' '), ppid: Number(f.at(-2)), pid: Number(f.at(-1)) });
  }
  return out;
}

/** Allow with the first `allow_once` option (the conformance "allow" decider). */
export const allowOnce = (req) => req.options.find((o) => o.kind === 'allow_once')?.optionId ?? null;

/**
 * The Windows stand-in for the tests' /bin/sh wrapper (pool, supervisor): a node script (run with
 * `node -e`, arguments DIR PROGRAM ARGS...) that counts its starts in DIR/starts, records its pid and
 * its child's (a line per start) in DIR/pids, and runs that start's instruction (DIR/start.N.json, else
 * start.rest.json: `{ args, stderr, exit }`) — print to stderr, exit with a code, or run PROGRAM
 * with `args` instead of ARGS — as a child sharing its stdio, whose exit code it exits with.
 * Windows has no exec: the host's pid is the wrapper's, and the host's job object holds both.
 */
export const NODE_WRAPPER = `
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const [dir, program, ...args] = process.argv.slice(1);
let n = 1;
try { n = Number(fs.readFileSync(path.join(dir, 'starts'), 'utf8').trim()) + 1; } catch {}
fs.writeFileSync(path.join(dir, 'starts'), n + '\\n');
let step = {};
for (const name of ['start.' + n + '.json', 'start.rest.json']) {
  try { step = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')); break; } catch {}
}
if (step.stderr) process.stderr.write(step.stderr + '\\n');
if (step.exit !== undefined) process.exit(step.exit);
const child = spawn(program, step.args ?? args, { stdio: 'inherit' });
fs.appendFileSync(path.join(dir, 'pids'), process.pid + ' ' + child.pid + '\\n');
child.on('exit', (code) => process.exit(code ?? 1));
`;

/**
 * The live agents the Windows wrapper started in `dir`: per start, the wrapper's pid (the host's
 * agent pid) while it runs, else its child's if that outlived it (a leak the tests must see).
 */
export function wrapperProcesses(dir) {
  let text = '';
  try {
    text = fs.readFileSync(path.join(dir, 'pids'), 'utf8');
  } catch {
    return [];
  }
  const out = [];
  for (const line of text.split('\n').filter(Boolean)) {
    const [wrapper, child] = line.split(' ').map(Number);
    if (alive(wrapper)) out.push(wrapper);
    else if (alive(child)) out.push(child);
  }
  return out;
}
