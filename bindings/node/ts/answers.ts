/**
 * The requests the embedder's handlers answer: permission requests (`onPermission`) and
 * elicitations (`onElicitation`).
 */
import type { PermissionOption, ToolCallUpdate } from './types';
import { native } from './native';
import { AcpError, errorMessage } from './errors';
import { parseHostJson } from './json';
import { handlerFailure } from './failure';

/** A permission request as the `onPermission` handler sees it. */
export interface PermissionRequest {
  /** The host's id; `host.respondPermission(requestId, optionId)` answers it from elsewhere. */
  requestId: number;
  /** The host's id of the agent asking. */
  agent: number;
  sessionId: string;
  /** The turn in flight when the request arrived, if any. */
  turn: number | null;
  /** The request's `toolCall`, merged over the tool call the session already knows. */
  toolCall: ToolCallUpdate;
  /** The options the agent offered (answer with one's `optionId`). */
  options: PermissionOption[];
  /**
   * Aborted when the request was settled by anyone else (timeout, `session/cancel`, agent exit,
   * `respondPermission`, host close): a UI can dismiss its prompt.
   */
  signal: AbortSignal;
}

/** A request's fields as the addon hands them over (the tool call follows as text). */
interface HandedPermission extends Omit<PermissionRequest, 'toolCall' | 'signal'> {
  token: number;
}

/**
 * The request an `onPermission` handler gets. Its tool call is parsed, and its signal made, the
 * first time they are read: a handler that answers from the options alone (a policy in code)
 * pays for neither (an `AbortController` alone costs more than the rest of the request). Both
 * are own enumerable properties, so `{ ...req }` and `JSON.stringify(req)` see them as before.
 */
class PendingPermission implements PermissionRequest {
  readonly requestId: number;
  readonly agent: number;
  readonly sessionId: string;
  readonly turn: number | null;
  readonly options: PermissionOption[];
  declare readonly toolCall: ToolCallUpdate;
  declare readonly signal: AbortSignal;
  #toolCallText: string;
  #toolCall: ToolCallUpdate | undefined;
  #controller: AbortController | undefined;
  #settledWith: { reason: unknown } | undefined;

  constructor(fields: HandedPermission, toolCall: string) {
    this.requestId = fields.requestId;
    this.agent = fields.agent;
    this.sessionId = fields.sessionId;
    this.turn = fields.turn;
    this.options = fields.options;
    this.#toolCallText = toolCall;
    Object.defineProperties(this, LAZY_PERMISSION_FIELDS);
  }

  static toolCallOf(req: PendingPermission): ToolCallUpdate {
    return (req.#toolCall ??= parseHostJson<ToolCallUpdate>(req.#toolCallText, 'the permission request\'s toolCall'));
  }

  static signalOf(req: PendingPermission): AbortSignal {
    if (req.#controller === undefined) {
      req.#controller = new AbortController();
      if (req.#settledWith) req.#controller.abort(req.#settledWith.reason);
    }
    return req.#controller.signal;
  }

  /** @internal The request was settled by anyone else: abort the signal (now, or when made). */
  settle(reason: unknown): void {
    if (this.#settledWith) return;
    this.#settledWith = { reason };
    this.#controller?.abort(reason);
  }
}

/** Shared by every request (one descriptor object, not one per request). */
const LAZY_PERMISSION_FIELDS: PropertyDescriptorMap = {
  toolCall: {
    get(this: PendingPermission) {
      return PendingPermission.toolCallOf(this);
    },
    enumerable: true,
    configurable: true,
  },
  signal: {
    get(this: PendingPermission) {
      return PendingPermission.signalOf(this);
    },
    enumerable: true,
    configurable: true,
  },
};

/**
 * Answers a permission request no rule decided: the chosen option id, or `null` to deny.
 * Throwing, rejecting, returning an option that was not offered, or not answering within
 * `permissionTimeoutMs` denies.
 */
export type PermissionHandler = (req: PermissionRequest) => string | null | undefined | Promise<string | null | undefined>;

/**
 * Call `handler(req)` and hand its value (awaited when it is a thenable) to `done`, or what it
 * threw (`how`: `'threw'`) or rejected with (`'rejected'`) to `failed`.
 */
function invoke<R>(handler: (req: R) => unknown, req: R, done: (v: unknown) => void, failed: (e: unknown, how: 'threw' | 'rejected') => void): void {
  let result: unknown;
  try {
    result = handler(req);
  } catch (e) {
    failed(e, 'threw');
    return;
  }
  if (result !== null && typeof result === 'object' && typeof (result as PromiseLike<unknown>).then === 'function') {
    (result as PromiseLike<unknown>).then(done, (e) => failed(e, 'rejected'));
  } else done(result);
}


// ---------------------------------------------------------------------------------------- elicitation

/**
 * The form an agent asks to be filled in (`requestedSchema`): a flat JSON Schema object of
 * primitive properties (`string` with `enum`/`oneOf`/`minLength`/`maxLength`/`format`, `number`
 * and `integer` with `minimum`/`maximum`, `boolean`, and `array` of enum strings).
 */
export interface ElicitationSchema {
  type: 'object';
  title?: string;
  description?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  properties: Record<string, { type: string; title?: string; description?: string; [k: string]: any }>;
  required?: string[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [k: string]: any;
}

interface ElicitationRequestBase {
  /** The host's id; `host.respondElicitation(requestId, answer)` answers it from elsewhere. */
  requestId: number;
  /** The host's id of the agent asking (show which agent asks). */
  agent: number;
  /** Session scope: the session (and tool call) it belongs to; `null` for request scope. */
  sessionId: string | null;
  toolCallId: string | null;
  /** Request scope: the id of the host's request in flight it belongs to (e.g. `authenticate`). */
  scopeRequestId: string | number | null;
  /**
   * `false` when `scopeRequestId` names none of the host's requests in flight (the agent chose
   * the id; the spec's reference agent does so during a prompt): still asked, under the same
   * fail-closed rules, but it cannot be tied to a call of yours. `true` for session scope.
   */
  scopeKnown: boolean;
  /** The turn in flight when the request arrived, if any. */
  turn: number | null;
  /** What the agent says it needs. */
  message: string;
  /**
   * Aborted when the request was settled by anyone else (timeout, `session/cancel`, the agent
   * withdrawing it or exiting, `respondElicitation`, host close): a UI can close its form.
   */
  signal: AbortSignal;
}

/** Form mode: render `requestedSchema` and send back the values (never secrets: the spec forbids it). */
export interface FormElicitationRequest extends ElicitationRequestBase {
  mode: 'form';
  requestedSchema: ElicitationSchema;
}

/**
 * URL mode: show the full `url` and ask for consent to open it (the host never opens or fetches
 * it). `accept` only means consent; the agent may later send `elicitation/complete`
 * (an `elicitation_completed` event with this `elicitationId`).
 */
export interface UrlElicitationRequest extends ElicitationRequestBase {
  mode: 'url';
  elicitationId: string;
  url: string;
}

/** An `elicitation/create` request as the `onElicitation` handler sees it (discriminated on `mode`). */
export type ElicitationRequest = FormElicitationRequest | UrlElicitationRequest;

/** A value of an accepted form's field. */
export type ElicitationValue = string | number | boolean | string[];

/**
 * The answer, in the ACP response shape. `content` (form mode) must match the requested schema:
 * every required field, no other field, the declared types, enum values, lengths and ranges.
 */
export type ElicitationAnswer =
  | { action: 'accept'; content?: Record<string, ElicitationValue> }
  | { action: 'decline' }
  | { action: 'cancel' };

/**
 * Answers an elicitation request. Throwing, rejecting, returning anything but a valid
 * `ElicitationAnswer`, content that does not match the schema, or not answering within
 * `elicitationTimeoutMs` answers `cancel` (fail-closed).
 */
export type ElicitationHandler = (req: ElicitationRequest) => ElicitationAnswer | Promise<ElicitationAnswer>;

/** The elicitation modes the embedder can render: only these are advertised and served. */
export interface ElicitationModes {
  form?: boolean;
  url?: boolean;
}


/** What a request handed to a handler is told when it was settled by anyone else. */
interface Handed {
  settle(reason: unknown): void;
}

/**
 * @internal The requests handed to the embedder's handlers (`onPermission`, `onElicitation`),
 * one mechanism for both (as in the addon, src/answers.rs): a request is pending from the
 * addon's message until the handler answers (`permissionDecision` / `elicitationDecision` by its
 * token), or until the addon's `{"settled": requestId}` notice, or the host's close, settles it:
 * that aborts its `signal`. The addon sends a request and its notice through one function, so
 * the request always comes first.
 */
export class Answers {
  readonly #pending = { permission: new Map<number, Handed>(), elicitation: new Map<number, Handed>() };

  /**
   * A message of the permission dispatcher: a request no rule decided (the request's JSON, a
   * newline, its tool call's JSON), or `{"settled": requestId}` (no newline).
   */
  permissionMessage(handler: PermissionHandler, message: string): void {
    const cut = message.indexOf('\n');
    if (cut < 0) {
      const notice = parseHostJson<{ settled?: number }>(message, 'a permission notice');
      if (typeof notice.settled === 'number') this.#settled('permission', notice.settled);
      return;
    }
    const fields = parseHostJson<HandedPermission>(message.slice(0, cut), 'a permission request');
    const req = new PendingPermission(fields, message.slice(cut + 1));
    this.#hand('permission', req.requestId, req, handler, (answer, finish) => {
      if (answer === null || answer === undefined) finish(null);
      else if (typeof answer === 'string') finish(answer);
      else finish(null, `onPermission must return an option id or null, got ${typeof answer}`);
    }, (answer, error) => native.permissionDecision(fields.token, answer, error));
  }

  /** A message of the elicitation dispatcher: a request (its JSON), or `{"settled": requestId}`. */
  elicitationMessage(handler: ElicitationHandler, json: string): void {
    const msg = parseHostJson<(ElicitationRequest & { token?: number }) | { settled: number }>(json, 'an elicitation request');
    if ('settled' in msg) {
      this.#settled('elicitation', msg.settled);
      return;
    }
    const req = msg;
    const token = req.token as number;
    delete req.token;
    const ac = new AbortController();
    req.signal = ac.signal;
    const handed = { settle: (reason: unknown) => ac.abort(reason) };
    this.#hand('elicitation', req.requestId, req, handler, (answer, finish) => {
      if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) {
        finish(null, `onElicitation must return { action: 'accept' | 'decline' | 'cancel', content? }, got ${answer === null ? 'null' : Array.isArray(answer) ? 'an array' : typeof answer}`);
        return;
      }
      let text: string;
      try {
        text = JSON.stringify(answer);
      } catch (e) {
        finish(null, `the answer of onElicitation is not JSON: ${errorMessage(e)}`);
        return;
      }
      finish(text);
    }, (answer, error) => native.elicitationDecision(token, answer, error), handed);
  }

  /** The host closed: every request still pending was settled. */
  settleAll(): void {
    for (const kind of ['permission', 'elicitation'] as const) {
      for (const [id] of this.#pending[kind]) this.#settled(kind, id);
    }
  }

  /**
   * Hand `req` to `handler`; `accept` checks what it gave and calls `finish`, which hands the
   * answer (or the handler's failure) to the addon by `decide`.
   */
  #hand<R extends object>(
    kind: 'permission' | 'elicitation',
    id: number,
    req: R,
    handler: (req: R) => unknown,
    accept: (answer: unknown, finish: (answer: string | null, error?: string) => void) => void,
    decide: (answer: string | null, error?: string) => void,
    handed: Handed = req as Handed,
  ): void {
    this.#pending[kind].set(id, handed);
    const finish = (answer: string | null, error?: string) => {
      // Answered (or failed): the addon will not report this request as settled.
      this.#pending[kind].delete(id);
      decide(answer, error);
    };
    const name = kind === 'permission' ? 'onPermission' : 'onElicitation';
    invoke(handler, req, (answer) => accept(answer, finish), (e, how) => finish(null, handlerFailure(name, how, e)));
  }

  #settled(kind: 'permission' | 'elicitation', id: number): void {
    const req = this.#pending[kind].get(id);
    this.#pending[kind].delete(id);
    req?.settle(new AcpError('already_resolved', `${kind} request ${id} was settled`));
  }
}
