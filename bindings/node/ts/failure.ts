/**
 * What a failing handler (`onPermission`, `onElicitation`) tells the core: the `reason` of the
 * `permission_resolved` / `elicitation_resolved` event (`decidedBy: 'invalid_answer'`) and of the
 * `warn` log record. It carries what was thrown with its stack, so the handler's bug can be found
 * from the event alone.
 */

/** `String(value)`, for any value (a null-prototype object or a throwing `toString` included). */
function text(value: unknown): string {
  try {
    return String(value);
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return '(a value that cannot be shown as text)';
    }
  }
}

/**
 * What `e` says: its `String()` (an error's `Name: message`; its message added when `String()`
 * lacks it, as for a plain object with a `message`), then its stack unless that already starts
 * with it (V8's does).
 */
export function thrownText(e: unknown): string {
  let stack: unknown;
  let message: unknown;
  if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
    try {
      stack = (e as { stack?: unknown }).stack;
      message = (e as { message?: unknown }).message;
    } catch {
      // A throwing getter: what String() gives is all there is.
    }
  }
  let head = text(e);
  if (typeof message === 'string' && message !== '' && !head.includes(message)) head = `${head}: ${message}`;
  if (typeof stack !== 'string' || stack === '') return head;
  return stack.startsWith(head) ? stack : `${head}\n${stack}`;
}

/**
 * The reason for a handler that threw or rejected with `e`:
 * `onPermission threw: TypeError: …\n    at …`, `onElicitation rejected: …`.
 */
export function handlerFailure(handler: string, how: 'threw' | 'rejected', e: unknown): string {
  return `${handler} ${how}: ${thrownText(e)}`;
}
