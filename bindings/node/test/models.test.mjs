// The turn's assembled text on the prompt result, model selection (session.models/setModel) and
// logout (gated on agentCapabilities.auth.logout).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { acp, mock, tmpdir } from './helpers.mjs';

const CWD = os.tmpdir();

/** A scenario file in a fresh temp dir (mock(path) takes it). */
function scenario(body) {
  const file = path.join(tmpdir(), 'scenario.json');
  fs.writeFileSync(file, JSON.stringify({ description: 'written by models.test.mjs', ...body }));
  return file;
}

/**
 * A host, the mock agent and one session. `sent(action)` runs `action` and returns the methods the
 * host sent meanwhile (every event is collected in the background; earlier traffic is skipped).
 */
async function withSession(scenarioName, fn, hostOptions = {}) {
  const host = new acp.Host(hostOptions);
  const log = [];
  const collecting = (async () => {
    for await (const ev of host.events()) log.push(ev);
  })();
  const quiet = async () => {
    for (let n = -1; n !== log.length; ) {
      n = log.length;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const sent = async (action) => {
    await quiet();
    const from = log.length;
    await action();
    await quiet();
    return log
      .slice(from)
      .filter((e) => e.kind === 'wire' && e.data.direction === 'out')
      .map((e) => e.data.message.method);
  };
  try {
    const agent = await host.spawn(mock(scenarioName));
    const session = await agent.newSession({ cwd: CWD });
    return await fn({ host, agent, session, sent });
  } finally {
    await host.close();
    await collecting;
  }
}

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof acp.AcpError, `an AcpError: ${e}`);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

test('prompt resolves with the turn\'s assembled message text and thought text', async () => {
  await withSession('all-updates', async ({ session }) => {
    const r = await session.prompt('go');
    assert.equal(r.stopReason, 'end_turn');
    assert.equal(r.text, 'Here comes every update kind. Done.');
    assert.equal(r.thought, 'Let me think about every update kind.');
    assert.equal(r.textTruncated, false);
    assert.equal(typeof r.turn, 'number');
    assert.deepEqual(Object.keys(r).sort(), ['raw', 'stopReason', 'text', 'textTruncated', 'thought', 'turn', 'usage']);
  });
});

test('a turn without message chunks has empty text and thought', async () => {
  await withSession(scenario({ prompts: [[]] }), async ({ session }) => {
    const r = await session.prompt('go');
    assert.equal(r.text, '');
    assert.equal(r.thought, '');
    assert.equal(r.textTruncated, false);
  });
});

test('session.models() reads the model config option; setModel switches it', async () => {
  await withSession(
    undefined,
    async ({ session, sent }) => {
      const m = session.models();
      assert.deepEqual(m.via, { kind: 'config_option', configId: 'model' });
      assert.equal(m.current, 'mock-small');
      assert.deepEqual(m.available, [
        { id: 'mock-small', name: 'Mock Small', description: 'Fast and cheap' },
        { id: 'mock-large', name: 'Mock Large', description: 'Slow and thorough' },
      ]);
      assert.deepEqual(await sent(() => session.setModel('mock-large')), ['session/set_config_option']);
      assert.equal(session.models().current, 'mock-large');
      const model = session.state.configOptions.find((o) => o.id === 'model');
      assert.equal(model.currentValue, 'mock-large');
    },
    { wireEvents: true },
  );
});

test('setModel with an unknown id rejects invalid_argument and sends nothing', async () => {
  await withSession(
    undefined,
    async ({ session, sent }) => {
      assert.deepEqual(await sent(() => rejectsWith(session.setModel('mock-huge'), 'invalid_argument')), []);
      assert.equal(session.models().current, 'mock-small');
    },
    { wireEvents: true },
  );
});

test('setModel takes an AbortSignal; an already-aborted one sends nothing', async () => {
  await withSession(undefined, async ({ session }) => {
    const ac = new AbortController();
    ac.abort(new Error('changed my mind'));
    await assert.rejects(session.setModel('mock-large', { signal: ac.signal }), (e) => {
      assert.equal(e.code, 'cancelled');
      assert.equal(e.cause?.message, 'changed my mind');
      return true;
    });
    assert.equal(session.models().current, 'mock-small');
    // A live signal that never fires does not get in the way.
    await session.setModel('mock-large', { signal: new AbortController().signal });
    assert.equal(session.models().current, 'mock-large');
  });
});

test('models() is null when the agent offers no model choice; setModel rejects unsupported', async () => {
  await withSession(scenario({ newSession: { configOptions: null } }), async ({ session }) => {
    assert.equal(session.models(), null);
    await rejectsWith(session.setModel('mock-small'), 'unsupported');
  });
});

test('logout without agentCapabilities.auth.logout rejects unsupported and sends nothing', async () => {
  await withSession(
    undefined,
    async ({ agent, sent }) => {
      assert.equal(agent.info.agentCapabilities.auth?.logout, undefined);
      assert.deepEqual(await sent(() => rejectsWith(agent.logout(), 'unsupported')), []);
    },
    { wireEvents: true },
  );
});

test('logout resolves when the agent advertises auth.logout', async () => {
  const file = scenario({ initialize: { agentCapabilities: { auth: { logout: {} } } } });
  await withSession(
    file,
    async ({ agent, sent }) => {
      assert.deepEqual(agent.info.agentCapabilities.auth, { logout: {} });
      assert.deepEqual(await sent(() => agent.logout()), ['logout']);
      // Aborted before it starts: nothing is sent.
      const ac = new AbortController();
      ac.abort();
      assert.deepEqual(await sent(() => rejectsWith(agent.logout({ signal: ac.signal }), 'cancelled')), []);
    },
    { wireEvents: true },
  );
});
