// Prompt content from files: image/audio blocks with their MIME type, embedded text resources;
// what the agent does not accept is refused locally (nothing is sent).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { acp, mock, tmpdir } from './helpers.mjs';

test('files become content blocks and the agent\'s prompt capabilities gate them', async () => {
  const dir = tmpdir('content');
  const png = path.join(dir, 'pic.png');
  fs.writeFileSync(png, Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  const image = acp.contentFromFile(png);
  assert.deepEqual([image.type, image.mimeType, image.data], ['image', 'image/png', 'iVBORw==']);
  const notes = path.join(dir, 'notes.md');
  fs.writeFileSync(notes, '# notes\n');
  const resource = acp.contentFromFile(notes);
  assert.equal(resource.type, 'resource');
  assert.equal(resource.resource.text, '# notes\n');
  const wav = path.join(dir, 'voice.wav');
  fs.writeFileSync(wav, 'RIFF');
  const audio = acp.contentFromFile(wav);
  assert.equal(audio.mimeType, 'audio/wav');
  assert.throws(() => acp.contentFromFile('relative.png'), (e) => e instanceof acp.AcpError && e.code === 'invalid_argument');
  assert.deepEqual(acp.resourceLink('file:///x', 'x'), { type: 'resource_link', uri: 'file:///x', name: 'x' });

  const host = new acp.Host({ wireEvents: true });
  try {
    const agent = await host.spawn(mock('all-updates'));
    const session = await agent.newSession({ cwd: dir });
    // The mock accepts images and embedded context, not audio.
    const r = await session.prompt(['look', image, resource, acp.resourceLink('file:///x', 'x')]);
    assert.equal(r.stopReason, 'end_turn');
    await assert.rejects(session.prompt([audio]), (e) => e instanceof acp.AcpError && e.code === 'unsupported');
  } finally {
    await host.close();
  }
});
