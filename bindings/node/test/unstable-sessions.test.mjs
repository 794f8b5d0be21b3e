// The unstable session methods besides fork (agent.sessionStatus, setSessionTitle,
// archiveSession, unarchiveSession, sessionOptions): opt-in, gated on the agent's capabilities,
// typed results, the agent's errors and malformed answers as AcpError codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';

import { acp, collectUntil, drain, mock, ofKind } from './helpers.mjs';

const CWD = os.tmpdir();
const ALL = ['session/status', 'session/set_title', 'session/archive', 'session/unarchive', 'session/options'];
const code = (c) => (e) => e instanceof acp.AcpError && e.code === c;

/** Each call once on `sid`: the settled outcome (`ok` or the error code). */
async function allFive(agent, sid) {
  const calls = [
    agent.sessionStatus(sid),
    agent.setSessionTitle(sid, 't'),
    agent.archiveSession(sid),
    agent.unarchiveSession(sid),
    agent.sessionOptions({ cwd: CWD, sessionId: sid }),
  ];
  return (await Promise.allSettled(calls)).map((r) => (r.status === 'fulfilled' ? 'ok' : r.reason.code));
}

test('without the opt-in, or when the agent does not advertise them: unsupported, nothing sent', async () => {
  const host = new acp.Host({ wireEvents: true });
  const opted = new acp.Host({ wireEvents: true, unstable: ALL });
  try {
    const events = host.events();
    const events2 = opted.events();
    const agent = await host.spawn(mock('unstable-sessions'));
    assert.deepEqual(await allFive(agent, 'sess_stored'), Array(5).fill('unsupported'));
    await assert.rejects(agent.sessionStatus('sess_stored'), (e) => code('unsupported')(e) && /unstable: \["session\/status"\]/.test(e.message));
    const plain = await opted.spawn(mock());
    assert.deepEqual(await allFive(plain, 'sess_1'), Array(5).fill('unsupported'));
    await assert.rejects(plain.setSessionTitle('sess_1', 'x'), (e) => code('unsupported')(e) && /sessionCapabilities\.title/.test(e.message));
    const sent = [...(await drain(events, 200)), ...(await drain(events2, 200))]
      .filter((e) => e.kind === 'wire' && e.data.direction === 'out')
      .map((e) => e.data.message.method);
    for (const m of ALL) assert.ok(!sent.includes(m), `${m} was sent`);
    assert.throws(() => new acp.Host({ unstable: ['session/titles'] }), code('invalid_config'));
  } finally {
    await host.close();
    await opted.close();
  }
});

test('status, title, archive and options against the mock', async () => {
  const host = new acp.Host({ unstable: ALL });
  try {
    const events = host.events();
    const agent = await host.spawn(mock('unstable-sessions'));
    const session = await agent.newSession({ cwd: CWD });
    assert.deepEqual(await agent.sessionStatus(session.id), { status: 'open', reported: 'open' });
    assert.deepEqual(await agent.sessionStatus('sess_stored'), { status: 'saved', reported: 'saved' });
    assert.deepEqual(await agent.sessionStatus('_mock_custom_status'), { status: 'saved', reported: '_hibernating' });

    assert.equal(await agent.setSessionTitle(session.id, '  Release notes  '), 'Release notes');
    assert.equal(session.state.title, 'Release notes');

    const defaults = await agent.sessionOptions({ cwd: CWD });
    assert.equal(defaults.modes.currentModeId, 'ask');
    assert.ok(defaults.configOptions.length > 0);
    const ofSession = await agent.sessionOptions({ cwd: CWD, sessionId: session.id });
    assert.deepEqual(ofSession.modes, session.state.modes);

    await agent.archiveSession(session.id);
    const evs = await collectUntil(events, (e) => e.kind === 'session_closed');
    assert.equal(evs.at(-1).data.reason, 'archived');
    assert.equal(session.state.open, false);
    assert.ok(!(await agent.listSessions()).sessions.some((s) => s.sessionId === session.id));
    await agent.unarchiveSession(session.id);
    const listed = (await agent.listSessions()).sessions.find((s) => s.sessionId === session.id);
    assert.equal(listed.archived, false);
    assert.equal(ofKind(evs, 'session_opened').length, 1, 'options and unarchive open nothing');
  } finally {
    await host.close();
  }
});

test("the agent's errors and malformed answers reject with their codes", async () => {
  const host = new acp.Host({ unstable: ALL });
  try {
    const agent = await host.spawn(mock('unstable-sessions'));
    assert.deepEqual(await allFive(agent, 'sess_nope'), Array(5).fill('agent_error'));
    await assert.rejects(agent.sessionStatus('sess_nope'), (e) => code('agent_error')(e) && e.data.code === -32002);
    await assert.rejects(agent.setSessionTitle('sess_stored', '  '), (e) => code('agent_error')(e) && e.data.code === -32602);
    await assert.rejects(agent.sessionStatus('_mock_malformed'), code('protocol'));
    await assert.rejects(agent.setSessionTitle('_mock_malformed', 'x'), code('protocol'));
    await assert.rejects(agent.sessionOptions({ cwd: CWD, sessionId: '_mock_malformed' }), code('protocol'));
    await assert.rejects(agent.sessionOptions({ cwd: 'relative' }), (e) => e instanceof acp.AcpError && e.data?.path === 'cwd');
  } finally {
    await host.close();
  }
});
