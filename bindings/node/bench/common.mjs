// Helpers shared by the Node benchmark runners (flood.mjs, compare.mjs): loading the addon and the
// official TypeScript SDK, one SDK client connection over a spawned agent, the flood readers of
// both, and this process's RSS.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
export const PKG = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_SDK_DIR = path.resolve(PKG, '../../fixtures/interop/node_modules/acp-sdk-2');

/** The acp-host Node face (the built addon + TypeScript facade in bindings/node). */
export const loadHost = () => require(PKG);

/** The official TS SDK 2.x (acp-sdk-2 = @agentclientprotocol/sdk 2.x, installed by scripts/setup). */
export const loadSdk = (dir = DEFAULT_SDK_DIR) =>
  import(pathToFileURL(path.join(dir, 'dist/v1/acp.js')).href).catch(() => import('acp-sdk-2'));

/** `VmRSS` / `VmHWM` (peak) of this process in KiB, from /proc/self/status (0 where there is none). */
export function procStatusKib(field) {
  try {
    const m = fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * One SDK client connection to `agent args…` for the lifetime of `body(ctx, acp)`: `handlers(c)`
 * registers the client's handlers on the `acp.client()` builder; `initialize` is sent with
 * `clientCapabilities`. The agent is killed afterwards and its exit awaited (nothing left running).
 * `stderr`: the agent's stderr (`'inherit'`: ours, `'ignore'`).
 */
export async function sdkConnect({ agent, args = [], env, sdk, clientCapabilities = {}, handlers = (c) => c, body, stderr = 'inherit' }) {
  const acp = sdk ?? (await loadSdk());
  const child = spawn(agent, args, { stdio: ['pipe', 'pipe', stderr], env: env ? { ...process.env, ...env } : process.env });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const spawned = new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  try {
    await spawned;
    const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
    const c = handlers(acp.client({ name: 'bench', version: '0' }));
    return await c.connectWith(stream, async (ctx) => {
      await ctx.request('initialize', { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities });
      return body(ctx, acp);
    });
  } finally {
    if (child.pid !== undefined) {
      // (a process that never started has no exit to wait for)
      if (child.exitCode === null && child.signalCode === null) child.kill();
      await exited;
    }
  }
}

/**
 * acp-host reading a flood of `n` updates (`acp-mock-agent --flood N`): `for await` over
 * `host.events()` (or drained a batch at a time with `takeBuffered`), counting session_update.
 */
export async function hostFlood({ agent, n, cwd, batch = false, Host = loadHost().Host }) {
  const host = new Host();
  try {
    const events = host.events();
    const a = await host.spawn({ command: agent, args: ['--flood', String(n)] });
    const session = await a.newSession({ cwd });
    let updates = 0;
    const t0 = process.hrtime.bigint();
    const turn = session.prompt('flood');
    if (batch) {
      outer: for (;;) {
        const first = await events.next();
        if (first.done) break;
        for (const ev of [first.value, ...events.takeBuffered()]) {
          if (ev.kind === 'session_update') updates++;
          else if (ev.kind === 'turn_ended') break outer;
        }
      }
    } else {
      for await (const ev of events) {
        if (ev.kind === 'session_update') updates++;
        else if (ev.kind === 'turn_ended') break;
      }
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const { stopReason } = await turn;
    return { updates, seconds, updates_per_sec: updates / seconds, stopReason };
  } finally {
    await host.close();
  }
}

/** The TS SDK reading the same flood: an onNotification('session/update') handler (its fastest API). */
export async function sdkFlood({ agent, n, cwd, sdk }) {
  let updates = 0;
  let seconds = 0;
  const r = await sdkConnect({
    agent,
    args: ['--flood', String(n)],
    sdk,
    handlers: (c) => c.onNotification('session/update', () => void updates++),
    body: async (ctx) => {
      const { sessionId } = await ctx.request('session/new', { cwd, mcpServers: [] });
      const t0 = process.hrtime.bigint();
      const res = await ctx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'flood' }] });
      seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      return res;
    },
  });
  return { updates, seconds, updates_per_sec: updates / seconds, stopReason: r.stopReason };
}

/** The TS SDK's other reader: `session.nextUpdate()` on a built session. */
export async function sdkSessionFlood({ agent, n, cwd, sdk }) {
  let updates = 0;
  let seconds = 0;
  const r = await sdkConnect({
    agent,
    args: ['--flood', String(n)],
    sdk,
    body: async (ctx) =>
      ctx.buildSession(cwd).withSession(async (session) => {
        const t0 = process.hrtime.bigint();
        session.prompt('flood');
        for (;;) {
          const m = await session.nextUpdate();
          if (m.kind === 'stop') {
            seconds = Number(process.hrtime.bigint() - t0) / 1e9;
            return m.response;
          }
          updates++;
        }
      }),
  });
  return { updates, seconds, updates_per_sec: updates / seconds, stopReason: r.stopReason };
}
