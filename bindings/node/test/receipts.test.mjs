// Delivery receipts (docs/EVENTS.md, "Delivery receipts"): `respondPermission` and
// `respondElicitation` resolve with the answer's receipt, a rejection carries the `rejected`
// receipt in `AcpError.data.receipt`, and the resolution event carries the same receipt.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { acp, mock, tmpdir, collectUntil } from './helpers.mjs';

/** A manual host, the agent of `scenario` and its first turn; `during` answers. */
async function withTurn(scenario, during) {
  const host = new acp.Host({ permission: 'manual', elicitation: 'manual' });
  const stream = host.events();
  try {
    const agent = await host.spawn(mock(scenario));
    const session = await agent.newSession({ cwd: tmpdir() });
    const turn = session.prompt('x');
    turn.catch(() => {});
    return await during({ host, stream, turn });
  } finally {
    await host.close();
  }
}

const next = async (stream, kind) => (await collectUntil(stream, (e) => e.kind === kind)).at(-1).data;

test('a permission answer is delivered; a second one is rejected with the request unavailable', async () => {
  await withTurn('permission-write', async ({ host, stream, turn }) => {
    const req = await next(stream, 'permission_requested');
    const receipt = await host.respondPermission(req.requestId, 'allow-once');
    assert.deepEqual(receipt, { status: 'delivered' });
    const resolved = await next(stream, 'permission_resolved');
    assert.deepEqual(resolved.receipt, receipt);
    assert.equal((await turn).stopReason, 'end_turn');
    await assert.rejects(host.respondPermission(req.requestId, null), (e) => {
      assert.ok(e instanceof acp.AcpError);
      assert.equal(e.code, 'already_resolved');
      assert.equal(e.data.receipt.status, 'rejected');
      assert.equal(e.data.receipt.state, 'unavailable');
      assert.equal(e.data.receipt.code, 'already_resolved');
      return true;
    });
    await assert.rejects(host.respondPermission(req.requestId + 1000, null), (e) => e.code === 'not_found' && e.data.receipt.state === 'unavailable');
  });
});

test('an option that was not offered is rejected; the deny sent in its place is delivered', async () => {
  await withTurn('permission-write', async ({ host, stream }) => {
    const req = await next(stream, 'permission_requested');
    await assert.rejects(host.respondPermission(req.requestId, 'yolo'), (e) => e.code === 'invalid_argument' && e.data.receipt.status === 'rejected');
    const resolved = await next(stream, 'permission_resolved');
    assert.equal(resolved.decidedBy, 'invalid_answer');
    assert.equal(resolved.receipt.status, 'delivered');
  });
});

test('a large elicitation answer whose pipe fails mid-write is uncertain', async () => {
  await withTurn('receipt-broken-pipe', async ({ host, stream }) => {
    const req = await next(stream, 'elicitation_requested');
    const receipt = await host.respondElicitation(req.requestId, { action: 'accept', content: { note: 'n'.repeat(1 << 20) } });
    assert.equal(receipt.status, 'uncertain', JSON.stringify(receipt));
    assert.equal(receipt.code, 'io');
    const resolved = await next(stream, 'elicitation_resolved');
    assert.deepEqual(resolved.receipt, receipt);
  });
});
