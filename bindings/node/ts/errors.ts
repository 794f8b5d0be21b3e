/**
 * The package's errors (`AcpError`), the addon's errors turned into them, option documents and
 * abortable calls.
 */
import { native } from './native';

const ERR_PREFIX = '\u0001acp-host:';

/**
 * The stable error codes: the every-face kinds of docs/ERRORS.md (the one table for all faces;
 * a test keeps this list equal to it). Unknown future codes may appear.
 */
export type AcpErrorCode =
  | 'agent_exited'
  | 'timeout'
  | 'unsupported'
  | 'protocol'
  | 'agent_error'
  | 'auth_required'
  | 'version_unsupported'
  | 'invalid_argument'
  | 'invalid_config'
  | 'spawn_failed'
  | 'io'
  | 'closed'
  | 'cancelled'
  | 'busy'
  | 'not_found'
  | 'already_resolved'
  | 'events_stalled';

/** A host option that cannot be used: `invalid_config` with `data.path`, as in every face. */
export function configError(path: string, message: string): AcpError {
  return new AcpError('invalid_config', `invalid config: ${path}: ${message}`, { path });
}

/** How deep JSON may nest (docs/ARCHITECTURE.md, "One nesting limit"). */
const NESTING_LIMIT = 100;

/**
 * An option document as JSON text for the core, which checks it (docs/OPTIONS.md: the same rules
 * and `data.path` in every face). `undefined` is "not given", as the table says. What JSON cannot
 * carry is refused at its path rather than silently changed (`JSON.stringify` would make `NaN`
 * a `null`, which for some options means "none"): a non-finite number, a BigInt, a function, a
 * symbol.
 */
export function optionDocument(doc: unknown, prefix = ''): string {
  const check = (v: unknown, path: string, depth = 0): void => {
    const at = path === '' ? '$' : path;
    // The one nesting limit (docs/ARCHITECTURE.md) for JSON we pass; a cycle never ends.
    if (depth > NESTING_LIMIT) throw new AcpError('invalid_argument', `${at}: nested deeper than ${NESTING_LIMIT} levels (or a cycle)`);
    if (typeof v === 'number' && !Number.isFinite(v)) throw configError(at, `expected a finite number, got ${v}`);
    if (typeof v === 'bigint' || typeof v === 'function' || typeof v === 'symbol') throw configError(at, `a ${typeof v} is not an option value`);
    if (Array.isArray(v)) v.forEach((x, i) => check(x, `${path}[${i}]`, depth + 1));
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) if (x !== undefined) check(x, path === '' ? k : `${path}.${k}`, depth + 1);
    }
  };
  check(doc, prefix);
  try {
    return JSON.stringify(doc ?? {});
  } catch (e) {
    throw configError(prefix === '' ? '$' : prefix, `not JSON: ${errorMessage(e)}`);
  }
}

/**
 * Every failure of this package. `code` is stable (match on it, not on `message`); `data` holds
 * structured details: for `agent_error` `{code, data}` (the JSON-RPC error), for `agent_exited`
 * `{exitCode, signal, stderrTail}`, for `timeout` `{what, afterMs}`, for `version_unsupported`
 * `{agentVersion, hostVersion}`, else `null`.
 */
export class AcpError extends Error {
  readonly code: AcpErrorCode | (string & {});
  readonly data: unknown;

  constructor(code: AcpErrorCode | (string & {}), message: string, data: unknown = null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AcpError';
    this.code = code;
    this.data = data;
  }
}

/** Turn an error thrown by the addon into an `AcpError` (other errors are returned unchanged). */
export function toAcpError(e: unknown): unknown {
  if (e instanceof AcpError) return e;
  if (e instanceof Error) {
    const at = e.message.indexOf(ERR_PREFIX);
    if (at >= 0) {
      try {
        const j = JSON.parse(e.message.slice(at + ERR_PREFIX.length)) as { kind: string; message: string; data: unknown };
        return new AcpError(j.kind, j.message, j.data ?? null);
      } catch {
        return new AcpError('protocol', e.message);
      }
    }
    // napi-rs argument conversion errors (a wrong type passed to a call).
    const code = (e as { code?: unknown }).code;
    if (code === 'InvalidArg' || code === 'NumberExpected' || code === 'StringExpected' || code === 'ObjectExpected') {
      return new AcpError('invalid_argument', e.message);
    }
  }
  return e;
}

export async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw toAcpError(e);
  }
}

export function callSync<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw toAcpError(e);
  }
}

function abortedError(signal: AbortSignal): AcpError {
  return new AcpError('cancelled', 'aborted by the caller', null, { cause: signal.reason });
}

/**
 * Run a native call that accepts an abort handle: when `signal` fires, the native future is
 * dropped (the agent is told with `$/cancel_request`) and the call rejects with `cancelled`. A
 * native prompt instead sends `session/cancel` and settles within the host's cancel grace.
 */
export async function abortable<T>(signal: AbortSignal | undefined, f: (abort: number | undefined) => Promise<T>): Promise<T> {
  if (!signal) return call(() => f(undefined));
  if (signal.aborted) throw abortedError(signal);
  const id = native.abortCreate();
  const onAbort = () => native.abortFire(id);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await f(id);
  } catch (e) {
    const err = toAcpError(e);
    if (signal.aborted && err instanceof AcpError && err.code === 'cancelled') throw abortedError(signal);
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
    native.abortRelease(id);
  }
}


export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

