// The TypeScript types as a consumer sees them: generated from schema/events.schema.json and
// current (no drift), nothing of the schema lost on the way, a consumer that narrows on `kind` and
// `sessionUpdate` type-checks against the built package (dist/index.d.ts) while wrong uses fail,
// and the hand-written shapes (SessionState, TurnResult, ...) have exactly the runtime's fields.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

import { generate, OUTPUT_PATH, SCHEMA_PATH } from '../scripts/gen-types.mjs';
import { acp, PKG_DIR, mock, tmpdir, collectUntil, allowOnce } from './helpers.mjs';

const require = createRequire(import.meta.url);
const TSC = require.resolve('typescript/bin/tsc');
const TYPES_DIR = path.join(PKG_DIR, 'test', 'types');
const DIST_DTS = path.join(PKG_DIR, 'dist', 'index.d.ts');
const schema = JSON.parse(fs.readFileSync(SCHEMA_PATH, 'utf8'));
const generated = fs.readFileSync(OUTPUT_PATH, 'utf8');

/** `tsc -p <project>` (compiler output and exit code); started at once, the runs overlap. */
function tsc(project) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TSC, '-p', path.join(TYPES_DIR, project), '--pretty', 'false'], { cwd: PKG_DIR });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}
const built = fs.existsSync(DIST_DTS);
const consumerRun = built ? tsc('tsconfig.json') : null;
const negativeRun = built ? tsc('tsconfig.negative.json') : null;
const NOT_BUILT = `${DIST_DTS} is missing: run \`npm run build\` (or build:ts) in bindings/node first`;

test('ts/generated/events.ts is what the committed schema generates (no drift)', async () => {
  const fresh = await generate();
  assert.ok(
    fresh === generated,
    'bindings/node/ts/generated/events.ts differs from what schema/events.schema.json generates: run `scripts/gen-types` ' +
      '(or `node bindings/node/scripts/gen-types.mjs`) and commit the file',
  );
});

/** The source text of one generated type (`export interface X` / `export type X` up to the next export). */
function declaration(name) {
  const m = new RegExp(`\\nexport (?:interface|type) ${name}\\b[^]*?(?=\\nexport |$)`).exec(generated);
  assert.ok(m, `the generated types lack ${name}`);
  return m[0];
}

test('every kind, field and discriminator of the schema survives into the types', () => {
  const root = declaration('EventData');
  for (const kind of Object.keys(schema.properties)) assert.match(root, new RegExp(`\\n  ${kind}: `), `EventData.${kind}`);
  for (const [name, def] of Object.entries(schema.$defs)) {
    // Common fields plus tagged variants are split: the variants are `<Name>Variant`.
    const text = declaration(name) + (generated.includes(`export type ${name}Variant `) ? declaration(`${name}Variant`) : '');
    for (const prop of Object.keys(def.properties ?? {})) {
      assert.match(text, new RegExp(`\\n {2,8}'?${prop.replace('$', '\\$')}'?\\??: `), `${name}.${prop}`);
    }
    // Tagged variants (`{"$ref": ..., "properties": {"sessionUpdate": {"const": "tool_call"}}}`):
    // the literal is what narrowing works on.
    for (const variant of def.oneOf ?? def.anyOf ?? []) {
      for (const [prop, s] of Object.entries(variant.properties ?? {})) {
        if (s.const !== undefined) assert.ok(text.includes(`${prop}: '${s.const}'`), `${name}: ${prop} = '${s.const}'`);
      }
    }
  }
  // The tagged unions a consumer narrows on, spelled out.
  assert.match(declaration('SessionUpdate'), /\(ToolCall & \{\s*sessionUpdate: 'tool_call';\s*\}\)/);
  assert.match(declaration('ContentBlock'), /\(TextContent & \{\s*type: 'text';\s*\}\)/);
  assert.doesNotMatch(generated, /: any\b/, 'no `any` in the generated types');
});

test('a consumer that narrows on kind and sessionUpdate type-checks against dist/index.d.ts', { timeout: 120_000 }, async () => {
  assert.ok(built, NOT_BUILT);
  const { code, out } = await consumerRun;
  assert.equal(code, 0, `tsc -p test/types/tsconfig.json failed:\n${out}`);
});

test('wrong uses of the types fail to type-check, exactly where marked', { timeout: 120_000 }, async () => {
  assert.ok(built, NOT_BUILT);
  const { code, out } = await negativeRun;
  assert.notEqual(code, 0, 'tsc accepted test/types/negative.ts');
  const got = [...out.matchAll(/^test\/types\/(\w+\.ts)\((\d+),\d+\): error (TS\d+)/gm)].map((m) => `${m[1]}:${m[2]} ${m[3]}`);
  const want = fs
    .readFileSync(path.join(TYPES_DIR, 'negative.ts'), 'utf8')
    .split('\n')
    .flatMap((line, i) => {
      const m = /\/\/ error (TS\d+)$/.exec(line);
      return m ? [`negative.ts:${i + 1} ${m[1]}`] : [];
    });
  assert.ok(want.length >= 5);
  assert.deepEqual(got, want, `tsc output:\n${out}`);
});

/** The property names of an exported type of dist/index.d.ts, through the compiler API. */
function propertiesOf(names) {
  const ts = require('typescript');
  const program = ts.createProgram([DIST_DTS], { strict: true, noEmit: true, types: ['node'], skipLibCheck: true });
  const checker = program.getTypeChecker();
  const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(DIST_DTS)));
  return Object.fromEntries(
    names.map((name) => {
      const sym = exports.find((s) => s.name === name);
      assert.ok(sym, `acp-host exports no type ${name}`);
      const type = checker.getDeclaredTypeOfSymbol(sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym);
      return [name, checker.getPropertiesOfType(type).map((p) => p.name).sort()];
    }),
  );
}

test('the declared shapes are the runtime shapes (state, turn result, agent info, events)', async () => {
  assert.ok(built, NOT_BUILT);
  const props = propertiesOf(['SessionState', 'TurnResult', 'AgentInfo', 'PermissionRequest', 'SessionToolCall', 'PoolStats']);
  let request = null;
  const host = new acp.Host({
    onPermission: (req) => {
      request ??= { ...req };
      return allowOnce(req);
    },
  });
  const it = host.events();
  try {
    const agent = await host.spawn(mock('default'));
    const session = await agent.newSession({ cwd: tmpdir() });
    const turn = await session.prompt('hello');
    const evs = await collectUntil(it, (e) => e.kind === 'turn_ended');
    const keys = (o) => Object.keys(o).sort();
    assert.deepEqual(keys(session.state), props.SessionState, 'SessionState');
    const pool = host.pool({ ...mock('default'), pool: { warmSpares: 0 } });
    assert.deepEqual(keys(pool.stats()), props.PoolStats, 'PoolStats');
    await pool.shutdown();
    assert.deepEqual(keys(turn), props.TurnResult, 'TurnResult');
    assert.deepEqual(keys(agent.info), props.AgentInfo, 'AgentInfo');
    assert.ok(request, 'the mock asked for a permission');
    assert.deepEqual(keys(request), props.PermissionRequest, 'PermissionRequest');
    const call = session.state.toolCalls[0];
    for (const k of Object.keys(call)) assert.ok(props.SessionToolCall.includes(k), `SessionToolCall lacks ${k}`);
    // Every kind and update kind that arrived is one the types name.
    const updateKinds = schema.$defs.SessionUpdate.oneOf.map((v) => v.properties.sessionUpdate.const);
    for (const ev of evs) {
      assert.ok(ev.kind in schema.properties, `kind ${ev.kind}`);
      if (ev.kind === 'session_update') assert.ok(updateKinds.includes(ev.data.sessionUpdate), ev.data.sessionUpdate);
    }
  } finally {
    await host.close();
  }
});

test('ACP v2 update kinds arrive under the types that name them; an unknown kind still arrives, as sent', async () => {
  const unionKinds = new Map(schema.$defs.SessionUpdate.oneOf.map((v) => [v.properties.sessionUpdate.const, v.$ref]));
  const host = new acp.Host({ unstable: ['protocol/v2'], onPermission: allowOnce });
  const it = host.events();
  try {
    const agent = await host.spawn(mock('v2-updates'));
    const session = await agent.newSession({ cwd: tmpdir() });
    const turn = await session.prompt('all');
    assert.equal(turn.stopReason, 'end_turn');
    // msg_1's chunk, then its upsert: the turn's text is the upsert's.
    assert.equal(turn.text, 'Here: permission selected.');
    const updates = (await collectUntil(it, (e) => e.kind === 'turn_ended')).filter((e) => e.kind === 'session_update');
    const kinds = updates.map((e) => e.data.sessionUpdate);
    // Each v2-only kind is a variant of the union, with its own payload type.
    for (const [kind, ref] of [
      ['user_message', 'V2Message'], ['agent_message', 'V2Message'], ['agent_thought', 'V2Message'],
      ['tool_call_content_chunk', 'V2ToolCallContentChunk'], ['terminal_update', 'V2TerminalUpdate'],
      ['terminal_output_chunk', 'V2TerminalOutputChunk'], ['state_update', 'SessionStateUpdate'],
    ]) {
      assert.ok(kinds.includes(kind), `${kind} arrived`);
      assert.equal(unionKinds.get(kind), `#/$defs/${ref}`, kind);
    }
    for (const k of ['plan_update', 'plan_removed', 'notice', 'usage_update']) assert.ok(kinds.includes(k) && unionKinds.has(k), k);
    // The fields the types declare are there.
    const chunk = updates.find((e) => e.data.sessionUpdate === 'tool_call_content_chunk').data;
    assert.deepEqual([chunk.toolCallId, chunk.content.type], ['call_1', 'content']);
    const term = updates.find((e) => e.data.sessionUpdate === 'terminal_update').data;
    assert.deepEqual([term.terminalId, term.size], ['term_1', { cols: 80, rows: 24 }]);
    const msg = updates.findLast((e) => e.data.sessionUpdate === 'agent_message').data;
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Here: permission selected.' }]);
    // The lenient fallback: a kind no type names arrives with its data untouched.
    const future = updates.filter((e) => !unionKinds.has(e.data.sessionUpdate));
    assert.deepEqual(future.map((e) => e.data), [{ sessionUpdate: 'future_kind', somethingNew: { x: 1 } }]);
    // The session state took the upsert and the chunks in: the call the permission merged over.
    const call = session.state.toolCalls.find((c) => c.toolCallId === 'call_1');
    assert.equal(call.title, 'Run the tests');
    assert.equal(call.content.length, 2);
    assert.equal(session.state.plan.length, 2);
  } finally {
    await host.close();
  }
});
