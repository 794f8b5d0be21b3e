/**
 * A session: prompts, modes, config options, models and its events.
 */
import type {
  AcpEvent,
  AvailableCommand,
  ContentBlock,
  LegacySessionModels,
  PlanEntry,
  PromptResponse,
  SessionConfigOption,
  SessionModeState,
  SessionToolCall,
  StopReason,
  TurnUsage,
  UsageUpdate,
} from './types';
import type { EventsOptions } from './streams';
import { asyncDispose, type NativeSession } from './native';
import { AcpError, abortable, call, callSync } from './errors';
import { GONE, type Agent, type CallOptions } from './agent';

export interface TurnResult {
  /** `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`, `cancelled` (or a future value). */
  stopReason: StopReason | (string & {});
  /** `usage` of the prompt response, when the agent sent it. */
  usage: TurnUsage | null;
  /** The host's turn id (the `turn` field of this turn's events). */
  turn: number;
  /** The whole prompt response. */
  raw: PromptResponse;
  /**
   * The agent's message text of this turn, assembled from its `agent_message_chunk` text blocks
   * (under ACP v2 also its `agent_message` upserts, each replacing its message's text) (print the
   * answer without reading events).
   */
  text: string;
  /** The agent's thought text of this turn (`agent_thought_chunk`), kept apart from `text`. */
  thought: string;
  /** `text` or `thought` reached 4 MiB and was cut there. */
  textTruncated: boolean;
}

/** What `session.steer()` did with the text (its later fate is in `steer` events). */
export interface SteerResult {
  /** The host's id for the steer (the `steer` field of its events). */
  steer: number;
  /**
   * `injected` (into the running turn), `started_new_turn` (the agent began a turn of its own),
   * `queued` (waits for the running turn to end; `prompted` or `rejected` follow as events) or
   * `prompted` (sent as the next prompt at once: `turn` is its turn).
   */
  outcome: 'injected' | 'started_new_turn' | 'queued' | 'prompted';
  /** `injected`: the turn it joined; `prompted`: its own turn; else `null`. */
  turn: number | null;
}

/** One model the agent offers. */
export interface ModelInfo {
  id: string;
  name: string;
  description: string | null;
}

/** The models of a session (`session.models()`). */
export interface SessionModels {
  /** The current model id, when the agent said. */
  current: string | null;
  available: ModelInfo[];
  /**
   * How `setModel` switches: through the session's config option of category `model` (ACP v1),
   * or the legacy `session/set_model` (agents that only return `models`).
   */
  via: { kind: 'config_option'; configId: string } | { kind: 'legacy' };
}

/** The materialised session state: what a UI needs without re-deriving it from the events. */
export interface SessionState {
  sessionId: string;
  cwd: string | null;
  additionalDirectories: string[];
  /** False once the session was closed, deleted, or its agent exited. */
  open: boolean;
  /** The legacy `modes` state, kept current by `current_mode_update` and `setMode`. */
  modes: SessionModeState | null;
  currentModeId: string | null;
  /** The complete list of config options, in the agent's order. */
  configOptions: SessionConfigOption[] | null;
  /** The legacy `models` of the open response (agents without a `model` config option). */
  models: LegacySessionModels | null;
  /**
   * Tool calls merged from `tool_call` + `tool_call_update` (+ ACP v2's `tool_call_content_chunk`),
   * in order of first appearance.
   * Bounded (1,024 calls): past it, finished calls are dropped first, then the oldest.
   */
  toolCalls: SessionToolCall[];
  /** How many tool calls were dropped from `toolCalls` by the bound. */
  toolCallsDropped: number;
  /**
   * The current plan entries (each `plan` update replaces them; under ACP v2, the `items` plan
   * of the latest `plan_update`, cleared by its `plan_removed`).
   */
  plan: PlanEntry[] | null;
  availableCommands: AvailableCommand[] | null;
  /** The latest `usage_update` (`{used, size, cost?}`). */
  usage: UsageUpdate | null;
  title: string | null;
  updatedAt: string | null;
  activeTurn: number | null;
  lastStopReason: StopReason | (string & {}) | null;
}

export interface PromptOptions {
  /**
   * Aborting sends `session/cancel` (pending permission requests of the session are answered
   * `cancelled` at once). The promise settles with the agent's answer (normally stop reason
   * `cancelled`) if it comes within the host's `cancelGraceMs`, otherwise it rejects with
   * `AcpError` code `cancelled` — it always settles, even when the agent ignores the cancel.
   * Aborting after the promise settled does nothing.
   */
  signal?: AbortSignal;
}

/** A prompt's input as content blocks (strings are text blocks). */
export function promptContent(input: string | ContentBlock | (string | ContentBlock)[]): ContentBlock[] {
  const block = (b: string | ContentBlock): ContentBlock => (typeof b === 'string' ? { type: 'text', text: b } : b);
  return Array.isArray(input) ? input.map(block) : [block(input)];
}

/** An open session. */
export class Session {
  readonly id: string;

  /** @internal */
  constructor(
    readonly agent: Agent,
    /** @internal */ readonly native: NativeSession,
  ) {
    this.id = native.id;
  }

  /** A snapshot of the materialised state (tool calls, plan, modes, config options, usage, title). */
  get state(): SessionState {
    return this.native.state() as SessionState;
  }

  /**
   * Send a prompt (a string, one content block or an array of strings and blocks; strings are text
   * blocks) and wait for the turn to end.
   * Blocks the agent did not advertise (image, audio, embedded resources) are refused locally.
   */
  async prompt(
    input: string | ContentBlock | (string | ContentBlock)[],
    options: PromptOptions = {},
  ): Promise<TurnResult> {
    // Settles after the turn's events reached every stream of the session (the ordering contract).
    const content = promptContent(input);
    return this.agent.host.hub.prompt(this.agent.id, this.id, () => abortable(options.signal, (a) => this.native.prompt(content, a)) as Promise<TurnResult>);
  }

  /**
   * Steer (unstable: needs `unstable: ['_session/steering']` in the host's options): add text
   * (a string, a block or an array, as for `prompt`) while a turn runs. An agent that advertises
   * steering takes it into the running turn (`injected`); otherwise it waits as the session's
   * next prompt (`queued`) and is sent as its own turn when the running turn ends (`prompted`;
   * at once when no turn runs). A cancel, a close or the agent ending reject queued steers.
   * Every step is a `steer` event (docs/STEERING.md). Rejects with `AcpError` `unsupported`
   * (not opted in), `busy` (16 steers wait), `agent_error`/`protocol` (the agent did not take it).
   */
  steer(input: string | ContentBlock | (string | ContentBlock)[]): Promise<SteerResult> {
    const content = promptContent(input);
    return call(() => this.native.steer(content)) as Promise<SteerResult>;
  }

  /**
   * `session/cancel`: the agent should end the turn with `cancelled`; pending permission requests
   * are answered `cancelled` and pending elicitations `cancel`.
   */
  cancel(): Promise<void> {
    return call(() => this.native.cancel());
  }

  /**
   * ACP v2 `tool_call/cancel`: ask the agent to stop one tool call, while its latest
   * `tool_call_update` advertises `capabilities.cancel`. Resolves when the agent *accepted*,
   * with its answer (`{}`, maybe `_meta`); the completion is a later `session_update` event (a
   * `tool_call_update` with a final `status`). Rejects with `AcpError` `unsupported` (a v1
   * connection, or cancel not advertised; nothing sent), `invalid_argument` (an id no update
   * named), `agent_error` (the agent refused).
   */
  cancelToolCall(toolCallId: string, options: CallOptions = {}): Promise<Record<string, unknown>> {
    return abortable(options.signal, (a) => this.native.cancelToolCall(toolCallId, a));
  }

  /**
   * ACP v2 `terminal/cancel`: as `cancelToolCall` for one of the agent's terminals; the
   * completion is a later `terminal_update` with `exitStatus`.
   */
  cancelTerminal(terminalId: string, options: CallOptions = {}): Promise<Record<string, unknown>> {
    return abortable(options.signal, (a) => this.native.cancelTerminal(terminalId, a));
  }

  /** `session/set_mode` (a mode the agent returned). */
  setMode(modeId: string, options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.setMode(modeId, a));
  }

  /** `session/set_config_option`; resolves with the complete updated option list. */
  setConfigOption(configId: string, value: string | boolean, options: CallOptions = {}): Promise<SessionConfigOption[]> {
    return abortable(options.signal, (a) => this.native.setConfigOption(configId, value, a));
  }

  /**
   * The models the agent offers for this session and the current one (from its config option of
   * category `model`, else the legacy `models` of the session/new, load or resume response), or
   * `null` when the agent offers no model choice.
   */
  models(): SessionModels | null {
    return callSync(() => this.native.models()) as SessionModels | null;
  }

  /**
   * Switch the session's model (one of `models().available`): through the `model` config option,
   * else the legacy `session/set_model`. An unknown id rejects with `invalid_argument`, no model
   * choice with `unsupported` (nothing sent).
   */
  setModel(modelId: string, options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.setModel(modelId, a));
  }

  /**
   * `session/close` (needs `sessionCapabilities.close`; otherwise rejects with `unsupported` and
   * nothing is sent). The session's streams end after its `session_closed`.
   */
  close(options: CallOptions = {}): Promise<void> {
    return abortable(options.signal, (a) => this.native.close(a));
  }

  /**
   * This session's events (a session reader of the core's hub, docs/EVENTS.md "The one
   * session-stream rule"): whenever it is opened — before the first prompt, mid-turn, between
   * turns, after the session closed — it starts at the oldest event the session's history holds
   * (its `session_opened`, the updates sent before the open response, a load replay), then the
   * live events, in `seq` order, without a gap or a duplicate. The history holds at most
   * `earlyUpdateLimit` events (default `SESSION_HISTORY_LIMIT`) / `eventQueueBytes` bytes; a
   * stream opened after it overflowed yields `dropped: N` (how many it left out) on a copy of its
   * first event. A turn's `prompt()` settles only after every open stream of the session has
   * handed on the turn's `turn_ended` (`events_stalled` after `eventStallTimeoutMs` when one
   * stops moving). Ends after the session's last event: its `session_closed` (unless it carries
   * `restart: true`: a supervised agent's crash, the session is reopened), its `session_lost`,
   * or its agent's last event. Same options and backpressure as `host.events()`.
   */
  events(options: EventsOptions = {}): AsyncIterableIterator<AcpEvent> {
    return this.agent.host.hub.subscribeSession(this.agent.id, this.id, options);
  }

  /**
   * `await using session = await agent.newSession(...)`: at the end of the scope the session is
   * closed (`session/close`) if it is open and the agent supports closing; otherwise nothing is
   * sent. Never throws for a session that is already
   * closed, an agent that is gone or a closed host; other failures of `session/close` (an agent
   * error, a timeout) are thrown.
   */
  async [asyncDispose](): Promise<void> {
    let open = false;
    try {
      open = (this.native.state() as SessionState).open === true;
    } catch {
      // No state (agent gone): nothing to close.
    }
    if (!open) return;
    try {
      await this.close();
    } catch (e) {
      if (!(e instanceof AcpError && GONE.has(e.code))) throw e;
    }
  }
}

