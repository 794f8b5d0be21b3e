// `host.connect(stream)`: ACP over a stream the embedder opened. The mock agent connects out to a
// loopback listener this test opens (`--connect`; the library never listens): a turn runs over
// the socket (as a Duplex and as `{ readable, writable }`), the peer going away mid-turn rejects
// the prompt at once with `agent_exited`, and a stream that errors is a typed error, not a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';

import { acp, MOCK, tmpdir, withTimeout, collectUntil } from './helpers.mjs';

/** The mock agent connected to a fresh loopback listener; the accepted socket and the child. */
async function agentOnASocket(args = []) {
  const server = net.createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  const accepted = new Promise((r) => server.once('connection', r));
  const child = spawn(MOCK, ['--connect', `127.0.0.1:${port}`, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const socket = await withTimeout(accepted, 20_000, 'the agent connecting');
  server.close();
  return { socket, child, exited };
}

test('a turn over a TCP socket (a Duplex), then shutdown ends the stream and the agent leaves', async () => {
  const { socket, exited } = await agentOnASocket();
  const host = new acp.Host();
  const events = host.events();
  try {
    const agent = await host.connect(socket);
    assert.equal(agent.info.agentInfo?.name, 'acp-mock-agent');
    assert.equal(agent.pid, null);
    const session = await agent.newSession({ cwd: tmpdir() });
    const turn = await session.prompt('hello');
    assert.equal(turn.stopReason, 'end_turn');
    assert.ok(turn.text.length > 0);
    const evs = await collectUntil(events, (e) => e.kind === 'turn_ended');
    assert.ok(evs.some((e) => e.kind === 'session_update'));
    await agent.shutdown();
    // Our end closed: the agent sees EOF and exits cleanly.
    assert.deepEqual(await withTimeout(exited, 20_000, 'the agent exiting'), { code: 0, signal: null });
  } finally {
    await host.close();
  }
});

test('{ readable, writable } works as well (a child process\'s stdio pair)', async () => {
  const { socket, exited } = await agentOnASocket();
  const host = new acp.Host();
  try {
    // Two separate streams, as a child's stdout and stdin are.
    const readable = new PassThrough();
    const writable = new PassThrough();
    socket.pipe(readable);
    writable.pipe(socket);
    const agent = await host.connect({ readable, writable });
    const session = await agent.newSession({ cwd: tmpdir() });
    assert.equal((await session.prompt('hello')).stopReason, 'end_turn');
  } finally {
    await host.close();
  }
  await withTimeout(exited, 20_000, 'the agent exiting after close');
});

test('the peer going away mid-turn rejects the prompt at once with agent_exited', async () => {
  const { socket, child } = await agentOnASocket(['--scenario', 'hang']);
  const host = new acp.Host();
  try {
    const agent = await host.connect(socket);
    const session = await agent.newSession({ cwd: tmpdir() });
    const prompt = session.prompt('hang');
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    child.kill('SIGKILL');
    await assert.rejects(withTimeout(prompt, 5_000, 'the prompt'), (e) => e instanceof acp.AcpError && e.code === 'agent_exited');
    assert.ok(Date.now() - t0 < 3_000, `rejected after ${Date.now() - t0} ms`);
    const exit = await withTimeout(agent.exited, 5_000, 'agent.exited');
    assert.equal(exit.exitCode, null);
  } finally {
    await host.close();
  }
});

test('a stream that errors fails the pending calls with a typed error, not a crash', async () => {
  const { socket, child } = await agentOnASocket(['--scenario', 'hang']);
  const host = new acp.Host();
  try {
    const agent = await host.connect(socket);
    const session = await agent.newSession({ cwd: tmpdir() });
    const prompt = session.prompt('hang');
    await new Promise((r) => setTimeout(r, 100));
    socket.destroy(new Error('link down'));
    await assert.rejects(withTimeout(prompt, 5_000, 'the prompt'), (e) => e instanceof acp.AcpError && e.code === 'agent_exited');
    await assert.rejects(agent.newSession({ cwd: tmpdir() }), (e) => e instanceof acp.AcpError);
  } finally {
    await host.close();
    child.kill('SIGKILL');
  }
});

test('a stream that is not one is invalid_argument; a peer that never speaks is abortable', async () => {
  const host = new acp.Host();
  try {
    await assert.rejects(host.connect({}), (e) => e.code === 'invalid_argument');
    await assert.rejects(host.connect(null), (e) => e.code === 'invalid_argument');
    const silent = new PassThrough();
    await assert.rejects(
      host.connect({ readable: silent, writable: new PassThrough() }, { signal: AbortSignal.timeout(200) }),
      (e) => e.code === 'cancelled',
    );
    // A peer that ends before the handshake answers.
    const gone = new PassThrough();
    const pending = host.connect({ readable: gone, writable: new PassThrough() });
    gone.end();
    await assert.rejects(withTimeout(pending, 5_000, 'connect'), (e) => e instanceof acp.AcpError && e.code === 'agent_exited');
  } finally {
    await host.close();
  }
});
