// Cross-face conformance: every case of fixtures/scenarios/conformance/cases.json through the Node
// face, compared event by event with the traces the Rust tests check (expected/<case>.json). Then
// the replays (docs/RECORDING.md, "Replaying"): every face's recording of the cases of
// fixtures/recordings/faces/cases.json played through this face in place of the mock agent gives
// the same trace with no divergence, and a changed permission answer is reported; with
// ACP_RECORDINGS_OUT=DIR this face's own recordings are written to DIR/node/ (scripts/gen-recordings).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { acp, ROOT, T, mock, collectUntil, matches, withTimeout, allowOnce, tmpdir } from './helpers.mjs';

const DIR = path.join(ROOT, 'fixtures/scenarios/conformance');
const doc = JSON.parse(fs.readFileSync(path.join(DIR, 'cases.json'), 'utf8'));
// The traces name the Unix cwd doc.cwd (/tmp/...), which is not an absolute path on Windows: the
// cases run in a directory of that name under the OS's temp directory, and the trace names it
// doc.cwd again (a path below it with '/' separators) before the comparison.
const CWD = path.join(os.tmpdir(), path.posix.basename(doc.cwd));
const escapeRe = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const localPath = new RegExp(`${escapeRe(CWD)}([\\\\/][^\\s"']*)?`, 'g');
function unlocalise(v) {
  if (CWD === doc.cwd) return v;
  if (typeof v === 'string') return v.replace(localPath, (_, rest) => doc.cwd + (rest ?? '').replaceAll('\\', '/'));
  if (Array.isArray(v)) return v.map(unlocalise);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unlocalise(x)]));
  return v;
}

/** Other faces' runs share the cases' directory (side by side in scripts/test): a file already
 *  right is left alone, another one replaced at once (a rename), never seen empty. */
function writeFixture(file, content) {
  try {
    if (fs.readFileSync(file, 'utf8') === content) return;
  } catch {}
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, content);
  fs.renameSync(tmp, file);
}

/** The normalised form of one event (fixtures/scenarios/conformance/README.md). */
function normalise(ev) {
  if (ev.kind === 'agent_stderr' || ev.kind === 'terminal_exited') return null;
  const data = structuredClone(ev.data);
  if (ev.kind === 'agent_ready') delete data.pid;
  if (ev.kind === 'agent_exited') delete data.stderrTail;
  return { kind: ev.kind, session: ev.session ?? null, turn: ev.turn ?? null, replay: ev.replay, data };
}

/** A call with a value: `expect` is `error:<kind>`, or the value `pick` takes from the result. */
async function expectValue(name, what, promise, expect, pick) {
  const isError = expect?.startsWith('error:');
  const v = await expectOutcome(name, what, promise, isError ? expect : undefined);
  if (expect !== undefined && !isError) assert.equal(pick(v), expect, `${name}: ${what}`);
  return v;
}

async function expectOutcome(name, what, promise, expect) {
  const kind = expect?.startsWith('error:') ? expect.slice(6) : null;
  try {
    const v = await promise;
    assert.equal(kind, null, `${name}: ${what}: expected error ${kind}, got ${JSON.stringify(v)}`);
    return v;
  } catch (e) {
    if (kind === null) throw new Error(`${name}: ${what} failed: ${e.message}`);
    assert.ok(e instanceof acp.AcpError, `${name}: ${what}: ${e}`);
    assert.equal(e.code, kind, `${name}: ${what}: ${e.message}`);
    return undefined;
  }
}

/** What plays the case's agent: the mock agent (`{}`), the mock agent recorded into `record`,
 *  or the recording `replay` (the `replay` agent spec) instead of it. */
async function runCase(c, cwd, source = {}) {
  const name = c.name;
  const options = {};
  if (source.record) options.record = { file: source.record };
  if (c.permission === 'allow') options.onPermission = allowOnce;
  if (c.permission === 'manual') options.permission = 'manual';
  if (c.maxLineBytes) options.maxLineBytes = c.maxLineBytes;
  if (c.cancelGraceMs) options.cancelGraceMs = c.cancelGraceMs;
  if (c.unstable) options.unstable = c.unstable;
  if (c.elicitation) {
    // Exactly the modes the case lists, each answered with its answer.
    const answers = c.elicitation;
    options.elicitationModes = ['form', 'url'].filter((m) => m in answers);
    options.onElicitation = (req) => answers[req.mode];
  }
  if (c.ext) {
    // Extension requests answered from the case's table (a method not in it: -32601).
    const table = c.ext;
    options.onExtRequest = (method) => {
      const entry = Object.hasOwn(table, method) ? table[method] : undefined;
      if (entry && 'result' in entry) return entry.result;
      if (entry?.error) throw new acp.ServiceError(entry.error.code ?? -32603, entry.error.message ?? 'error');
      throw new acp.ServiceError(-32601, 'method not found');
    };
  }
  if (c.terminalAuth) {
    // The "user" logs in: the login leaves the credentials file the mock agent looks for.
    options.onTerminalAuth = (cmd) => {
      fs.writeFileSync(cmd.env.ACP_MOCK_CREDENTIALS, 'logged-in\n');
      return 0;
    };
  }
  // The mock agent's credentials file: a fresh path per case (a terminal login creates it).
  const spec = source.replay
    ? { replay: source.replay }
    : { ...mock(c.scenario), env: { ACP_MOCK_CREDENTIALS: path.join(tmpdir(), 'credentials') } };
  const host = new acp.Host(options);
  try {
    const events = host.events();
    const trace = [];
    let agent = null;
    const untilExited = async () =>
      trace.push(...(await collectUntil(events, (e) => e.kind === 'agent_exited' && (agent === null || e.agent === agent.id))));
    if (c.spawnExpect) {
      await expectOutcome(name, 'spawn', host.spawn(spec), c.spawnExpect);
      await untilExited();
      return trace;
    }
    agent = await host.spawn(spec);
    let current = null;
    let exited = false;
    const opts = { cwd };
    for (const op of c.ops) {
      const what = op.op;
      switch (what) {
        case 'new_session':
        case 'load_session':
        case 'resume_session':
        case 'fork_session': {
          const p =
            what === 'new_session'
              ? agent.newSession(opts)
              : what === 'load_session'
                ? agent.loadSession(op.sessionId, opts)
                : what === 'fork_session'
                  ? agent.forkSession(op.sessionId, opts)
                  : agent.resumeSession(op.sessionId, opts);
          const s = await expectOutcome(name, what, p, op.expect);
          if (s) current = s;
          break;
        }
        case 'prompt': {
          const ac = new AbortController();
          const turn = current.prompt(op.content ?? op.text, { signal: ac.signal });
          turn.catch(() => {});
          if (op.steerOn) {
            trace.push(...(await collectUntil(events, (e) => matches(e, op.steerOn))));
            await expectValue(name, 'steer', current.steer(op.steer), op.steerExpect, (r) => r.outcome);
          }
          if (op.cancelOn) {
            trace.push(...(await collectUntil(events, (e) => matches(e, op.cancelOn))));
            await current.cancel();
          }
          // v2: cancel the tool call / terminal the matching update names; the call resolves
          // with the agent's acceptance (the confirming update follows in the trace).
          for (const [key, field] of [['cancelToolCallOn', 'toolCallId'], ['cancelTerminalOn', 'terminalId']]) {
            if (!op[key]) continue;
            const seen = await collectUntil(events, (e) => matches(e, op[key]));
            trace.push(...seen);
            const id = seen[seen.length - 1].data[field];
            const accepted = key === 'cancelToolCallOn' ? await current.cancelToolCall(id) : await current.cancelTerminal(id);
            assert.deepEqual(accepted, {}, `${name}: ${key}`);
          }
          if (op.abortOn) {
            trace.push(...(await collectUntil(events, (e) => matches(e, op.abortOn))));
            ac.abort();
          }
          try {
            const r = await withTimeout(turn, T, `${name}: prompt`);
            assert.equal(r.stopReason, op.expect, name);
          } catch (e) {
            if (!(e instanceof acp.AcpError)) throw e;
            assert.equal(`error:${e.code}`, op.expect, `${name}: ${e.message}`);
            if (e.code === 'agent_exited') exited = true;
          }
          // Let the turn's events land before the next op, so traces do not depend on timing (a
          // prompt refused locally, `unsupported`, has no turn).
          // `turns`: a queued steer is a turn of its own after the prompt's.
          if (op.expect !== 'error:unsupported') {
            for (let i = 0; i < (op.turns ?? 1); i++) trace.push(...(await collectUntil(events, (e) => e.kind === 'turn_ended')));
          }
          break;
        }
        case 'steer': {
          const r = await expectValue(name, what, current.steer(op.text), op.expect, (r) => r.outcome);
          if (r?.outcome === 'prompted') trace.push(...(await collectUntil(events, (e) => e.kind === 'turn_ended')));
          break;
        }
        case 'session_status':
          await expectValue(name, what, agent.sessionStatus(op.sessionId ?? current.id), op.expect, (r) => r.status);
          break;
        case 'set_title':
          await expectValue(name, what, agent.setSessionTitle(op.sessionId ?? current.id, op.title), op.expect, (t) => t);
          break;
        case 'archive_session':
          await expectOutcome(name, what, agent.archiveSession(op.sessionId ?? current.id), op.expect);
          break;
        case 'unarchive_session':
          await expectOutcome(name, what, agent.unarchiveSession(op.sessionId ?? current.id), op.expect);
          break;
        case 'session_options': {
          const o = op.sessionId === undefined ? opts : { ...opts, sessionId: op.sessionId };
          await expectValue(name, what, agent.sessionOptions(o), op.expect, (d) => d.modes?.currentModeId);
          break;
        }
        case 'set_mode':
          await expectOutcome(name, what, current.setMode(op.modeId), op.expect);
          break;
        case 'set_config_option':
          await expectOutcome(name, what, current.setConfigOption(op.configId, op.value), op.expect);
          break;
        case 'authenticate':
          await expectOutcome(name, what, agent.authenticate(op.methodId), op.expect);
          break;
        case 'logout':
          await expectOutcome(name, what, agent.logout(), op.expect);
          break;
        case 'terminal_auth': {
          const fresh = await expectOutcome(name, what, agent.terminalAuth(op.methodId), op.expect);
          if (fresh) {
            // The old agent's exit and the new one's agent_ready are in the trace.
            trace.push(...(await collectUntil(events, (e) => e.kind === 'agent_ready')));
            agent = fresh;
          }
          break;
        }
        case 'set_model':
          await expectOutcome(name, what, current.setModel(op.modelId), op.expect);
          break;
        case 'list_sessions':
          await expectOutcome(name, what, agent.listSessions(), op.expect);
          break;
        case 'close_session':
          await expectOutcome(name, what, current.close(), op.expect);
          break;
        case 'delete_session':
          await expectOutcome(name, what, agent.deleteSession(op.sessionId), op.expect);
          break;
        case 'shutdown':
          await agent.shutdown();
          exited = true;
          break;
        default:
          throw new Error(`${name}: unknown op ${what}`);
      }
    }
    assert.ok(exited, `${name}: a case ends with shutdown or an agent exit`);
    await untilExited();
    return trace;
  } finally {
    await host.close();
  }
}

// Cases whose scenario is Unix-bound (fixtures/scenarios, shared with the Rust and C faces).
const WIN32_SKIPS = {
  'default-allow': 'its terminal runs `echo`, a Unix program (Windows has it only as a cmd.exe builtin)',
  'every-request': 'its terminal runs `echo`, a Unix program (Windows has it only as a cmd.exe builtin)',
};

/** Case `c` in the cases' directory (its files written first), as its normalised trace. */
async function caseTrace(c, source) {
  fs.mkdirSync(CWD, { recursive: true });
  for (const [file, content] of Object.entries(doc.files)) writeFixture(path.join(CWD, file), content);
  return (await runCase(c, CWD, source)).map(normalise).filter((e) => e !== null).map(unlocalise);
}

function assertSameTrace(name, wantEvents, gotEvents) {
  const want = { case: name, events: wantEvents };
  const got = { case: name, events: gotEvents };
  const first = want.events.findIndex((w, i) => !isDeepStrictEqual(w, got.events[i]));
  assert.deepEqual(
    got,
    want,
    first >= 0
      ? `${name}: trace differs at event ${first}\n  want: ${JSON.stringify(want.events[first])}\n  got:  ${JSON.stringify(got.events[first])}`
      : `${name}: trace length differs`,
  );
}

const expected = (name) => JSON.parse(fs.readFileSync(path.join(DIR, 'expected', `${name}.json`), 'utf8')).events;

for (const c of doc.cases) {
  const skip = process.platform === 'win32' && WIN32_SKIPS[c.name];
  test(`conformance: ${c.name}`, { skip }, async () => {
    assertSameTrace(c.name, expected(c.name), await caseTrace(c));
  });
}

// ---- Replays (fixtures/recordings/faces) ----

const FACES_DIR = path.join(ROOT, 'fixtures/recordings/faces');
const faceCases = JSON.parse(fs.readFileSync(path.join(FACES_DIR, 'cases.json'), 'utf8'));
const FACES = ['c', 'kotlin', 'node', 'python', 'rust'];

function caseNamed(name) {
  const c = doc.cases.find((x) => x.name === name);
  assert.ok(c, `no conformance case ${name}`);
  return c;
}

/** A trace as a replay gives it: there is no process, so no exit code, signal or stderr tail (in
 *  `agent_exited` and in the error of a call the exit ended), nor the message of such an error. */
function withoutProcess(v) {
  if (Array.isArray(v)) return v.map(withoutProcess);
  if (!v || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'exitCode' || k === 'signal' || k === 'stderrTail') continue;
    if (k === 'message' && v.kind === 'agent_exited') continue;
    out[k] = withoutProcess(x);
  }
  return out;
}

/** Case `c` played from the recording `file` as fast as it goes; its trace and the replay's report. */
async function replayCase(c, file) {
  const report = path.join(tmpdir('acp-replay-'), 'report.json');
  const trace = await caseTrace(c, { replay: { file, pace: 'fast', report } });
  let text;
  try {
    text = fs.readFileSync(report, 'utf8');
  } catch (e) {
    assert.fail(`${c.name}: the replay wrote no report at ${report}: ${e.message}`);
  }
  return { trace, report: JSON.parse(text) };
}

/** Why a face's recordings are not played here: only the faces whose directory exists are. */
const missingFace = (face) =>
  !fs.existsSync(path.join(FACES_DIR, face)) &&
  `fixtures/recordings/faces/${face}/ does not exist (scripts/gen-recordings writes it)`;

test("conformance: this face's recordings (only with ACP_RECORDINGS_OUT)", {
  skip: !process.env.ACP_RECORDINGS_OUT && 'ACP_RECORDINGS_OUT is not set: nothing is recorded',
}, async () => {
  const out = path.join(process.env.ACP_RECORDINGS_OUT, 'node');
  fs.mkdirSync(out, { recursive: true });
  for (const name of faceCases.cases) {
    if (process.platform === 'win32' && WIN32_SKIPS[name]) continue;
    const file = path.join(out, `${name}.acprec.jsonl`);
    // A recording file is never written over: a new one each time.
    fs.rmSync(file, { force: true });
    assertSameTrace(name, expected(name), await caseTrace(caseNamed(name), { record: file }));
    assert.ok(fs.existsSync(file), `${name}: nothing recorded at ${file}`);
  }
});

for (const face of FACES) {
  for (const name of faceCases.cases) {
    const skip = missingFace(face) || (process.platform === 'win32' && WIN32_SKIPS[name]);
    test(`conformance replay: ${face}/${name} plays to the expected trace without divergence`, { skip }, async () => {
      const file = path.join(FACES_DIR, face, `${name}.acprec.jsonl`);
      assert.ok(fs.existsSync(file), `${face}/${name}: no recording at ${file} (scripts/gen-recordings)`);
      const { trace, report } = await replayCase(caseNamed(name), file);
      assert.equal(report.divergenceCount, 0, `${face}/${name}: ${JSON.stringify(report, null, 2)}`);
      assert.equal(report.complete, true, `${face}/${name}: ${JSON.stringify(report, null, 2)}`);
      assertSameTrace(name, withoutProcess(expected(name)), withoutProcess(trace));
    });
  }
}

for (const face of FACES) {
  const { case: name, permission } = faceCases.changed;
  const skip = missingFace(face) || (process.platform === 'win32' && WIN32_SKIPS[name]);
  test(`conformance replay: ${face}/${name} answered '${permission}' is an answer_differs divergence`, { skip }, async () => {
    const file = path.join(FACES_DIR, face, `${name}.acprec.jsonl`);
    assert.ok(fs.existsSync(file), `${face}/${name}: no recording at ${file} (scripts/gen-recordings)`);
    const { report } = await replayCase({ ...caseNamed(name), permission }, file);
    assert.ok(
      report.divergences.some((d) => d.kind === 'answer_differs' && d.method === 'session/request_permission'),
      `${face}: ${JSON.stringify(report, null, 2)}`,
    );
  });
}
