/**
 * `host.connect`: an agent over a stream the embedder opened.
 */
import type { NativeConnection } from './native';
import { AcpError } from './errors';

export type ConnectStream =
  | (NodeJS.ReadableStream & NodeJS.WritableStream)
  | { readable: NodeJS.ReadableStream; writable: NodeJS.WritableStream };

export function streamPair(stream: ConnectStream): { readable: NodeJS.ReadableStream; writable: NodeJS.WritableStream } {
  const s = stream as { readable?: unknown; writable?: unknown; on?: unknown; write?: unknown; pause?: unknown };
  const isReadable = (v: unknown) => v !== null && typeof v === 'object' && typeof (v as { on?: unknown }).on === 'function' && typeof (v as { pause?: unknown }).pause === 'function';
  const isWritable = (v: unknown) => v !== null && typeof v === 'object' && typeof (v as { write?: unknown }).write === 'function' && typeof (v as { end?: unknown }).end === 'function';
  if (s && isReadable(s.readable) && isWritable(s.writable)) {
    return { readable: s.readable as NodeJS.ReadableStream, writable: s.writable as NodeJS.WritableStream };
  }
  if (isReadable(s) && isWritable(s)) return { readable: stream as NodeJS.ReadableStream, writable: stream as NodeJS.WritableStream };
  throw new AcpError('invalid_argument', 'connect needs a Duplex stream or { readable, writable }');
}

/**
 * Pump the embedder's stream through the addon's pipe: one chunk in flight inward (the stream is
 * paused until the pipe took it), one read outward at a time and none while the writable is
 * full. The stream's end is the agent's EOF; an error (or a close without end) drops the
 * connection, so the agent is gone at once either way. Never throws: an `error` event is handled
 * here (it would crash the process otherwise).
 */
export function pumpConnection(conn: NativeConnection, readable: NodeJS.ReadableStream, writable: NodeJS.WritableStream): void {
  let inputDone = false;
  let outputDone = false;
  const stopInput = () => {
    if (inputDone) return;
    inputDone = true;
    readable.removeListener('data', onData);
    readable.removeListener('end', onEnd);
    readable.removeListener('close', onClose);
  };
  const onData = (chunk: Buffer | string) => {
    readable.pause();
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    conn.push(bytes).then(
      (more) => (more && !inputDone ? readable.resume() : stopInput()),
      () => stopInput(),
    );
  };
  const onEnd = () => {
    stopInput();
    void conn.end();
  };
  // Closed without an end (destroyed): the peer is gone.
  const onClose = () => {
    stopInput();
    conn.close();
  };
  const onError = () => {
    stopInput();
    outputDone = true;
    conn.close();
  };
  readable.on('data', onData);
  readable.on('end', onEnd);
  readable.on('close', onClose);
  readable.on('error', onError);
  if (writable !== (readable as unknown)) writable.on('error', onError);
  writable.on('close', () => {
    if (!outputDone) onError();
  });
  void (async () => {
    for (;;) {
      const bytes = await conn.read();
      if (bytes === null || outputDone) break;
      if (!writable.write(bytes)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            writable.removeListener('drain', done);
            writable.removeListener('close', done);
            resolve();
          };
          writable.on('drain', done);
          writable.on('close', done);
        });
      }
    }
    if (outputDone) return;
    outputDone = true;
    // The agent's side closed (shut down, host closed, the agent gone): end the stream, and stop
    // reading it once what was written is flushed (nothing reads it any more).
    writable.end(() => {
      stopInput();
      const r = readable as NodeJS.ReadableStream & { destroy?: () => void };
      r.destroy?.();
    });
  })();
}

