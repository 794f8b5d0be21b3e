// Deliberately wrong uses of the typed API: test/types.test.mjs type-checks this file and expects
// tsc to fail with exactly the errors marked `// error TSxxxx` (so the type check can fail, and
// fails for these reasons only). Never run.
import { Host } from 'acp-host';
import type { AcpEvent, SessionUpdate, SessionState, TurnResult } from 'acp-host';

export async function wrong(ev: AcpEvent, u: SessionUpdate, host: Host, st: SessionState, r: TurnResult): Promise<void> {
  if (ev.kind === 'agent_ready') console.log(ev.data.sessionUpdate); // error TS2339
  if (u.sessionUpdate === 'agent_message_chunk') console.log(u.toolCallId); // error TS2339
  console.log(ev.data.toolCallId); // error TS2339
  if (ev.kind === 'turn_ended') console.log(ev.data.stopReason === 'finished'); // error TS2367
  host.on('turn_ended', (e) => console.log(e.data.protocolVersion)); // error TS2339
  const n: number = st.toolCalls[0].title; // error TS2322
  const s: string = r.usage; // error TS2322
  await host.respondPermission('7', null); // error TS2345
  console.log(n, s);
}
