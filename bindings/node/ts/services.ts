/**
 * The fs, terminal, extension and terminal-login requests the agent sends, served by the
 * embedder's hooks.
 */
import { parseHostJson } from './json';

/**
 * An error a fs/terminal hook or `onExtRequest` may throw to answer the agent with a specific
 * JSON-RPC error.
 */
export class ServiceError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

/** `fs/read_text_file` as handed to a hook (path already checked against the roots and policy). */
export interface FsReadRequest {
  sessionId: string;
  path: string;
  line: number | null;
  limit: number | null;
}

/** `fs/write_text_file` as handed to a hook (path already checked against the roots and policy). */
export interface FsWriteRequest {
  sessionId: string;
  path: string;
  content: string;
}

/**
 * Serve the agent's `fs/*` calls yourself (an editor with unsaved buffers). The sandbox roots and
 * the policy's hard-deny rules are applied before a hook is called. A hook that throws answers
 * the agent with an error (a `ServiceError` chooses the JSON-RPC code; `-32603` otherwise).
 */
export interface FsHooks {
  readTextFile(req: FsReadRequest): string | Promise<string>;
  /** Without it, writes are answered with an error. */
  writeTextFile?(req: FsWriteRequest): void | Promise<void>;
}

/**
 * Serve the agent's `terminal/*` calls yourself (an IDE terminal panel). `create` is called only
 * after the command and cwd passed the roots and the policy. Params and results are ACP JSON.
 */
export interface TerminalHooks {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  create(params: any): { terminalId: string } | Promise<{ terminalId: string }>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  output(params: any): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  waitForExit(params: any): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  kill?(params: any): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  release?(params: any): unknown;
}

/**
 * Serves the agent's extension requests (JSON-RPC requests whose method starts with `_`, e.g.
 * `_zed.dev/workspace/buffers`). `params` is the request's params (`null` when absent). The
 * return value (awaited) is the result sent to the agent (`undefined`: `null`); throwing or
 * rejecting with a `ServiceError` answers with that JSON-RPC error, anything else with `-32603`.
 */
export type ExtRequestHandler = (method: string, params: unknown) => unknown | Promise<unknown>;

/** A terminal login to run (the agent's own command with the auth method's args, or the legacy `_meta["terminal-auth"]` command). */
export interface TerminalAuthCommand {
  methodId: string;
  /** What to show the user. */
  label: string;
  command: string;
  args: string[];
  /** Overlaid on the inherited environment; `null` removes a variable. */
  env: Record<string, string | null>;
  cwd: string | null;
}

/**
 * Runs a terminal login where the user sees it (an integrated terminal) and resolves with its exit
 * code (0 = logged in). A throw means the login could not run.
 */
export type TerminalAuthHandler = (command: TerminalAuthCommand) => number | Promise<number>;

/** One of the agent's `authMethods`: `agent` methods use `authenticate`, terminal ones `terminalAuth`. */
export interface AuthMethodInfo {
  id: string;
  name: string;
  description: string | null;
  kind: 'agent' | 'terminal' | 'legacy_terminal';
}


export async function serve(
  fs: FsHooks | undefined,
  terminal: TerminalHooks | undefined,
  ext: ExtRequestHandler | undefined,
  login: TerminalAuthHandler | undefined,
  json: string,
): Promise<string> {
  const { method, params } = parseHostJson<{ method: string; params: Record<string, unknown> }>(json, 'an agent request');
  try {
    let result: unknown;
    if (method === 'acph/terminal_auth' && login) {
      const code = await login(params as unknown as TerminalAuthCommand);
      if (!Number.isInteger(code)) throw new TypeError('onTerminalAuth must return an exit code (an integer)');
      result = { exitCode: code };
    } else if (method.startsWith('_') && ext) {
      result = await ext(method, params);
    } else if (method === 'fs/read_text_file' && fs) {
      const text = await fs.readTextFile(params as unknown as FsReadRequest);
      if (typeof text !== 'string') throw new TypeError('readTextFile must return a string');
      result = { content: text };
    } else if (method === 'fs/write_text_file' && fs) {
      if (!fs.writeTextFile) throw new ServiceError(-32601, 'writing files is not supported by this editor');
      await fs.writeTextFile(params as unknown as FsWriteRequest);
      result = null;
    } else if (method.startsWith('terminal/') && terminal) {
      const name = ({
        'terminal/create': 'create',
        'terminal/output': 'output',
        'terminal/wait_for_exit': 'waitForExit',
        'terminal/kill': 'kill',
        'terminal/release': 'release',
      } as const)[method];
      const hook = name ? terminal[name] : undefined;
      if (!hook) throw new ServiceError(-32601, `method not found: ${method}`);
      result = await hook.call(terminal, params);
      if (result === undefined) result = {};
    } else {
      throw new ServiceError(-32601, `method not found: ${method}`);
    }
    return JSON.stringify({ result: result ?? null });
  } catch (e) {
    const err = e as { code?: unknown; message?: unknown; data?: unknown };
    return JSON.stringify({
      error: {
        code: e instanceof ServiceError && typeof err.code === 'number' ? err.code : -32603,
        message: typeof err?.message === 'string' ? err.message : String(e),
        data: e instanceof ServiceError ? (err.data ?? null) : null,
      },
    });
  }
}
