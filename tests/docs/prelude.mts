// What the docs' TypeScript blocks assume exists (tests/docs/run.py puts this before each block,
// whose own code runs in a nested scope so that it may rebind these names).
import { Host as __Host, Registry as __Registry } from 'acp-host';
import type { AcpEvent as __Ev } from 'acp-host';
// (run.py adds `import { Host, Registry, AcpError } from 'acp-host'`, `net` and `once` for the
// names the block does not import itself.)
const host = new __Host();
const project = process.cwd();
const cwd = project;
const cacheDir = `${project}/cache`;
// An agent serving ACP on a loopback port (tests/docs/run.py bridges each connection to a mock).
const port = Number(process.env.ACP_DOC_AGENT_PORT);
const agent = await host.spawn({ command: 'acp-mock-agent', cwd: project });
const session = await agent.newSession({ cwd: project });
const id = session.id;
const registry = __Registry.fromFile(`${project}/registry.json`);
// The UI the docs' handlers call: a picker that takes the first option, a form that is cancelled.
async function showPicker(_toolCall: unknown, options: { optionId: string }[], _signal?: AbortSignal) {
  return options[0];
}
async function askToOpen(_url: string, _signal?: AbortSignal) { return false; }
async function showForm(_message: string, _schema: unknown, _signal?: AbortSignal) { return null; }
function render(_ev: __Ev) {}
function show(_ev: __Ev) {}
function write(text: string) { process.stdout.write(text); }
async function __done() { await host.close(); }
