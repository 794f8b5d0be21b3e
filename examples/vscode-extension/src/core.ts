/**
 * The extension's logic, free of `vscode` imports so it runs (and is tested) in plain Node:
 * one acp-host `Host` for the extension's lifetime, an agent spawned on first use, a session per
 * workspace, each turn streamed into an output sink, permission requests shown as a pick list,
 * and the agent's `fs/*` served from the editor's (possibly unsaved) buffers.
 */
import { promises as fsp } from 'node:fs';

import { AcpError, Host } from 'acp-host';
import type { AcpEvent, Agent, FsHooks, FsReadRequest, HostOptions, PermissionRequest, Session, ToolCall, ToolCallUpdate, TurnResult } from 'acp-host';

/** Where the transcript goes (a VS Code `OutputChannel` satisfies it). */
export interface OutputSink {
  append(text: string): void;
  appendLine(line: string): void;
}

/** One entry of the permission pick list; `optionId: null` denies. */
export interface PickItem {
  label: string;
  description?: string;
  optionId: string | null;
}

/**
 * Shows the pick list (VS Code: `window.showQuickPick`). `signal` aborts when the request was
 * settled elsewhere (timeout, cancel, agent exit): the list should close. `undefined` = dismissed.
 */
export type Picker = (items: PickItem[], options: { title: string; placeHolder: string; signal: AbortSignal }) => Promise<PickItem | undefined>;

export interface AgentConfig {
  command: string;
  args?: string[];
  /** Permission preset (default `ask`: every tool call no rule decided goes to the pick list). */
  policy?: 'ask' | 'read-only' | 'deny-all';
}

/** Text of an open editor document, or `undefined` when the file is not open. */
export type OpenDocumentText = (path: string) => string | undefined;

/** A one-line summary of a tool call, for pick list titles and the transcript. */
export function describeToolCall(toolCall: ToolCall | ToolCallUpdate): string {
  // Agents send JSON, not types: fields are checked before use.
  const title = typeof toolCall.title === 'string' ? toolCall.title : String(toolCall.toolCallId ?? 'tool call');
  const kind = typeof toolCall.kind === 'string' ? toolCall.kind : 'other';
  const locations: unknown[] = Array.isArray(toolCall.locations) ? toolCall.locations : [];
  const paths = locations.map((l) => (typeof (l as { path?: unknown })?.path === 'string' ? (l as { path: string }).path : '')).filter(Boolean);
  return `${title} [${kind}]${paths.length ? ` ${paths.join(', ')}` : ''}`;
}

/** The pick list for a permission request: the agent's options (allow first), then "Deny". */
export function permissionItems(req: PermissionRequest): PickItem[] {
  const rank = (kind: string) => ['allow_once', 'allow_always', 'reject_once', 'reject_always'].indexOf(kind) >>> 0;
  const items: PickItem[] = [...req.options]
    .sort((a, b) => rank(a.kind) - rank(b.kind))
    .map((o) => ({ label: o.name || o.optionId, description: o.kind.replace('_', ' '), optionId: o.optionId }));
  items.push({ label: 'Deny', description: 'answer nothing the agent offered', optionId: null });
  return items;
}

/**
 * One transcript line for an event, or `null` for events that are not shown. Message chunks are
 * returned as `{ text }` to be appended without a line break.
 */
export function formatEvent(ev: AcpEvent): string | { text: string } | null {
  // `ev.data` is typed per `ev.kind` (and per `sessionUpdate`): narrow on the event, then read.
  switch (ev.kind) {
    case 'agent_ready': {
      const info = ev.data.agentInfo;
      return `● agent ready: ${info?.title ?? info?.name ?? 'agent'}${info?.version ? ` ${info.version}` : ''} (pid ${ev.data.pid ?? '?'})`;
    }
    case 'session_opened':
      return `● session ${ev.data.sessionId} (${ev.data.origin}) in ${ev.data.cwd}`;
    case 'turn_started':
      return `\n▶ ${(ev.data.prompt ?? []).map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join(' ')}`;
    case 'turn_ended': {
      const d = ev.data;
      return d.error ? `■ turn failed: ${d.error.kind}: ${d.error.message}` : `■ ${d.stopReason}`;
    }
    case 'session_update': {
      const d = ev.data;
      switch (d.sessionUpdate) {
        case 'agent_message_chunk':
          return d.content?.type === 'text' ? { text: d.content.text } : { text: `[${d.content?.type}]` };
        case 'agent_thought_chunk':
          return null;
        case 'tool_call':
          return `  ⚙ ${describeToolCall(d)} — ${d.status ?? 'pending'}`;
        case 'tool_call_update':
          return d.status ? `  ⚙ ${d.toolCallId} — ${d.status}` : null;
        case 'plan':
          return `  ☰ plan: ${(d.entries ?? []).map((e) => `${e.status === 'completed' ? '✓' : '·'} ${e.content}`).join('; ')}`;
        case 'current_mode_update':
          // Some agents send the docs example's `modeId` instead of the schema's `currentModeId`.
          return `  mode: ${d.currentModeId ?? (d as { modeId?: string }).modeId}`;
        default:
          return null;
      }
    }
    case 'permission_requested':
      return `  ? permission: ${describeToolCall(ev.data.toolCall)}`;
    case 'permission_resolved': {
      const d = ev.data;
      const o = d.outcome ?? null;
      const answer = o === null ? 'nothing (disconnected)' : o.outcome === 'selected' ? o.optionId : 'cancelled';
      return `  ? → ${answer} (decided by ${d.decidedBy}${d.rule ? `: ${d.rule}` : ''})`;
    }
    case 'fs_read':
    case 'fs_write': {
      const d = ev.data;
      return `  ${ev.kind === 'fs_read' ? 'read' : 'write'} ${d.path}: ${d.outcome}${d.rule ? ` (${d.rule})` : ''}`;
    }
    case 'terminal_created':
      return `  $ ${[ev.data.command, ...(ev.data.args ?? [])].join(' ')}: ${ev.data.outcome}`;
    case 'protocol_error':
      return `  ! protocol: ${ev.data.reason}: ${ev.data.message ?? ''}`;
    case 'agent_exited': {
      const d = ev.data;
      return `● agent exited (${d.reason}${d.exitCode != null ? `, code ${d.exitCode}` : ''}${d.signal ? `, ${d.signal}` : ''})${d.error ? `: ${d.error.message}` : ''}`;
    }
    default:
      return null; // agent_stderr, protocol_noise, unknown future kinds
  }
}

/**
 * `fs/*` served from the editor: an open (maybe unsaved) document wins over the disk. The host
 * has already confined the path to the session's roots and applied the hard-deny rules.
 */
export function editorFsHooks(openText: OpenDocumentText): FsHooks {
  return {
    async readTextFile(req: FsReadRequest): Promise<string> {
      const text = openText(req.path) ?? (await fsp.readFile(req.path, 'utf8'));
      if (req.line == null && req.limit == null) return text;
      const lines = text.split('\n');
      const from = Math.max(0, (req.line ?? 1) - 1);
      return lines.slice(from, req.limit == null ? undefined : from + req.limit).join('\n');
    },
    async writeTextFile(req): Promise<void> {
      await fsp.writeFile(req.path, req.content, 'utf8');
    },
  };
}

export interface RunnerOptions {
  output: OutputSink;
  picker: Picker;
  openText?: OpenDocumentText;
  /** Extra host options (tests shorten timeouts). */
  host?: Partial<HostOptions>;
}

/** The extension's state: one host, one agent, one session per working directory. */
export class AgentRunner {
  private readonly host: Host;
  private agent: Agent | null = null;
  private agentKey = '';
  private readonly sessions = new Map<string, Session>();
  private readonly pump: Promise<void>;
  private disposed = false;

  constructor(
    private readonly config: () => AgentConfig,
    private readonly options: RunnerOptions,
  ) {
    const cfg = config();
    this.host = new Host({
      policy: cfg.policy ?? 'ask',
      onPermission: (req) => this.askUser(req),
      fs: options.openText ? editorFsHooks(options.openText) : undefined,
      ...options.host,
    });
    this.pump = this.showEvents();
  }

  private async showEvents(): Promise<void> {
    const out = this.options.output;
    let midLine = false;
    for await (const ev of this.host.events()) {
      const line = formatEvent(ev);
      if (line === null) continue;
      if (typeof line === 'object') {
        out.append(line.text);
        midLine = !line.text.endsWith('\n');
      } else {
        if (midLine) out.append('\n');
        midLine = false;
        out.appendLine(line);
      }
    }
  }

  private async askUser(req: PermissionRequest): Promise<string | null> {
    const picked = await this.options.picker(permissionItems(req), {
      title: `The agent asks: ${describeToolCall(req.toolCall)}`,
      placeHolder: 'Allow this tool call?',
      signal: req.signal,
    });
    return picked?.optionId ?? null;
  }

  private async ensureAgent(): Promise<Agent> {
    const cfg = this.config();
    const key = JSON.stringify([cfg.command, cfg.args ?? []]);
    if (this.agent && this.agentKey === key && this.agent.exitInfo === null) return this.agent;
    if (this.agent) await this.agent.shutdown();
    this.sessions.clear();
    this.agent = await this.host.spawn({ command: cfg.command, args: cfg.args ?? [] });
    this.agentKey = key;
    return this.agent;
  }

  /** Send `prompt` in the session of `cwd`; `signal` (the progress notification's Cancel) cancels the turn. */
  async prompt(cwd: string, prompt: string, signal?: AbortSignal): Promise<TurnResult> {
    if (this.disposed) throw new AcpError('closed', 'the extension was deactivated');
    try {
      const agent = await this.ensureAgent();
      let session = this.sessions.get(cwd);
      if (!session || !session.state.open) {
        session = await agent.newSession({ cwd, signal });
        this.sessions.set(cwd, session);
      }
      return await session.prompt(prompt, { signal });
    } catch (e) {
      const msg = e instanceof AcpError ? `${e.code}: ${e.message}` : String(e);
      this.options.output.appendLine(`✖ ${msg}`);
      throw e;
    }
  }

  /** Stop the agent (its whole process group); the next prompt starts a new one. */
  async stop(): Promise<void> {
    const agent = this.agent;
    this.agent = null;
    this.sessions.clear();
    if (agent) await agent.shutdown();
  }

  /** Deactivation: close the host; nothing stays behind. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.host.close();
    await this.pump;
  }
}
