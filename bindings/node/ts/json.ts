/**
 * JSON the host hands over, decoded as a typed error: text this process cannot decode is an
 * `AcpError` `protocol`, never a bare `SyntaxError`. (The host never hands over JSON nested deeper
 * than the core's limit, `MAX_JSON_DEPTH` in docs/ARCHITECTURE.md.)
 */

import { AcpError } from './errors';

/** Parse JSON text the host handed over; `what` names it in the error. */
export function parseHostJson<T = unknown>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new AcpError('protocol', `${what} is JSON this process cannot decode: ${(e as Error)?.message ?? e}`, null, {
      cause: e,
    });
  }
}
