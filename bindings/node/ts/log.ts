/**
 * The log handler (`new Host({ onLog, logLevel })`): what the host does and why — spawns,
 * handshakes, handler failures, transport and protocol trouble, agent exits — as typed records.
 * Off by default; the library never prints.
 *
 * The addon queues each record for the JS thread without ever making the host wait (src/log.rs);
 * this module hands them to the handler, in order. A handler that falls 1024 records behind
 * loses the newer ones: they are counted (`host.droppedLogRecords()`) and the handler is then
 * given one `warn` record with target `log` saying how many. What it throws (or rejects with)
 * loses that record only.
 */

import type { HostOptionsDocument } from './generated/options';

/** How much a record matters (`error` is the most severe); `logLevel` names the least severe one the handler gets. */
export type LogLevel = NonNullable<HostOptionsDocument['logLevel']>;

/** One log record: the core's `LogRecord::to_json`, the shape every face hands its log hook. */
export interface LogRecord {
  level: LogLevel;
  /**
   * The part of the host it comes from: `spawn`, `handshake`, `permission`, `elicitation`,
   * `transport`, `protocol`, `pool`, `auth`, and `log` for the notice of dropped records.
   */
  target: string;
  message: string;
  /** The host's id of the agent it is about, if any (the events' `agent`). */
  agent?: number;
  /** The session it is about, if any. */
  session?: string;
  /** When it was made (RFC 3339, UTC, milliseconds, as an event's `at`). */
  at: string;
}

/**
 * Gets the host's log records, in order, on the JS thread. It may be slow (the host never waits
 * for it), but past 1024 records waiting the newer ones are dropped. What it returns is ignored:
 * what it throws, and a returned promise's rejection, lose that record only.
 */
export type LogHandler = (record: LogRecord) => void;

/** Records waiting for the handler at most (src/log.rs `LOG_QUEUE`). */
const LOG_QUEUE = 1024;

function call(handler: LogHandler, record: LogRecord): void {
  try {
    const r = handler(record) as unknown;
    if (r !== null && typeof r === 'object' && typeof (r as PromiseLike<void>).then === 'function') {
      // A rejection loses this record only; it must not become an unhandled rejection.
      (r as PromiseLike<void>).then(undefined, () => {});
    }
  } catch {
    // Loses this record only.
  }
}

/**
 * @internal The delivery function the addon calls with each record's JSON (`null`: none, the
 * close's flush) and how many were dropped since the last call. Never throws: an exception here
 * would be the process's uncaught exception.
 */
export function logDelivery(handler: LogHandler): (recordJson: string | null, lost: number) => void {
  return (recordJson, lost) => {
    if (recordJson !== null) {
      let record: LogRecord | undefined;
      try {
        record = JSON.parse(recordJson) as LogRecord;
      } catch {
        record = undefined; // never made by the addon; nothing to hand over
      }
      if (record) call(handler, record);
    }
    if (lost > 0) {
      call(handler, {
        level: 'warn',
        target: 'log',
        message: `${lost} log records dropped: the log handler fell ${LOG_QUEUE} records behind`,
        at: new Date().toISOString(),
      });
    }
  };
}
