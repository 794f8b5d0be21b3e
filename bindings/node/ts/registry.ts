/**
 * The ACP registry: agents to resolve and install.
 */
import { native, type NativeRegistry, type NativeResolveOptions } from './native';
import { progressDelivery, type ProgressHandler } from './progress';
import { AcpError, call, callSync, errorMessage } from './errors';

/** A distribution of an agent, as the ACP registry names it. */
export type DistributionKind = 'binary' | 'npx' | 'uvx';

/** A platform key of the registry's `binary` distribution. */
export type RegistryPlatform =
  | 'linux-x86_64'
  | 'linux-aarch64'
  | 'darwin-aarch64'
  | 'darwin-x86_64'
  | 'windows-x86_64'
  | 'windows-aarch64';

/** An `npx` or `uvx` distribution of a registry entry. */
export interface RegistryPackageDistribution {
  package: string;
  cmd?: string;
  args?: string[];
  env?: Record<string, string>;
}

/** A `binary` distribution of a registry entry, for one platform. */
export interface RegistryBinaryTarget {
  archive: string;
  cmd: string;
  args?: string[];
  env?: Record<string, string>;
  sha256?: string;
}

/** One agent entry of the registry (fields the format adds later are not kept). */
export interface RegistryAgent {
  id: string;
  name: string;
  version: string;
  description: string;
  repository?: string;
  website?: string;
  authors?: string[];
  license?: string;
  icon?: string;
  distribution: {
    npx?: RegistryPackageDistribution;
    uvx?: RegistryPackageDistribution;
    /** By platform key; keys this version does not know are kept (and never chosen). */
    binary?: Record<string, RegistryBinaryTarget>;
  };
}

/** How `Registry.resolve` chooses. */
export interface ResolveOptions {
  /**
   * The kinds to try, in order. Default: a binary already installed under `cacheDir`, then
   * `npx`, then `uvx`, then a binary that needs installing. A binary listed here is chosen
   * whether installed or not.
   */
  prefer?: DistributionKind | DistributionKind[];
  /** The platform of binary distributions (default: this machine's). */
  platform?: RegistryPlatform | (string & {});
  /** The install cache of binaries (`<cacheDir>/<id>/<version>/<platform>/`). */
  cacheDir?: string;
  /** The program run for npx distributions (default `npx`; on Windows maybe `npx.cmd`). */
  npxCommand?: string;
  /** The program run for uvx distributions (default `uvx`). */
  uvxCommand?: string;
}

/** A command to start an agent with: it fits `host.spawn({ ...spec, cwd })`. */
export interface AgentCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** What `Registry.resolve` chose. */
export interface ResolvedAgent {
  agentId: string;
  agentVersion: string;
  kind: DistributionKind;
  /** What to spawn; for a binary that `needsInstall`, it names the file the install will create. */
  spec: AgentCommand;
  /** For a binary: the platform chosen. */
  platform: string | null;
  /** For a binary: `<cacheDir>/<id>/<version>/<platform>`. */
  installDir: string | null;
  /** A binary that is not installed yet: `install` it first (nothing was downloaded). */
  needsInstall: boolean;
}

/** Options of `Registry.install`. */
export interface InstallOptions {
  /** The install cache (the same `cacheDir` as `resolve`'s). */
  cacheDir: string;
  /** Default: this machine's. */
  platform?: RegistryPlatform | (string & {});
  /**
   * Gets the archive of a URL that is not `file://` or a local path (those are always read
   * locally), with your own HTTP client: acp-host opens no connection itself. Called on the JS
   * thread, only when an install needs the download; resolve with the archive's bytes. The sha256
   * of the registry entry is checked on them, and the core's archive limit applies. A rejection
   * (or throw) fails the install with `io`; anything but bytes with `invalid_argument`. Without
   * it, such URLs reject with `unsupported`.
   *
   * ```ts
   * fetch: async (url) => {
   *   const r = await globalThis.fetch(url);
   *   if (!r.ok) throw new Error(`HTTP ${r.status}`);
   *   return new Uint8Array(await r.arrayBuffer());
   * }
   * ```
   */
  fetch?: (url: string) => ArchiveBytes | PromiseLike<ArchiveBytes>;
  /**
   * Gets the install's progress, in order, each before the install settles: the download
   * (`started` with its URL as `message`, then `done` with `bytes`, or `failed` with why) and the
   * extraction (`started`, `done` or `failed`). Nothing for an install that is already there.
   * What it throws is ignored.
   */
  onProgress?: ProgressHandler;
}

/** The bytes of an archive, as `InstallOptions.fetch` gives them (a `Buffer` is a `Uint8Array`). */
export type ArchiveBytes = Uint8Array | ArrayBuffer;

/** The result of `Registry.install`. */
export interface InstalledAgent {
  /** `<cacheDir>/<id>/<version>/<platform>` */
  dir: string;
  /** The entry's `cmd` inside it. */
  cmd: string;
  /** It was installed already: nothing was fetched. */
  alreadyInstalled: boolean;
}

/**
 * Wrap an embedder's `fetch` hook for the addon: the promise resolves with a `Buffer` (a view of
 * the bytes, not a copy), or with `{kind, message}` as JSON when the hook failed (`io`) or gave
 * something other than bytes (`invalid_argument`); it never rejects.
 */
function archiveFetcher(hook: NonNullable<InstallOptions['fetch']>): (url: string) => Promise<Buffer | string> {
  return async (url) => {
    let got: unknown;
    try {
      got = await hook(url);
    } catch (e) {
      return JSON.stringify({ kind: 'io', message: errorMessage(e) });
    }
    if (Buffer.isBuffer(got)) return got;
    if (got instanceof Uint8Array) return Buffer.from(got.buffer, got.byteOffset, got.byteLength);
    if (got instanceof ArrayBuffer) return Buffer.from(got);
    const what = got === null || got === undefined ? String(got)
      : typeof got !== 'object' ? `a ${typeof got}`
      : `an object (${(got as object).constructor?.name ?? 'no prototype'})`;
    return JSON.stringify({ kind: 'invalid_argument', message: `returned ${what}` });
  };
}

/**
 * The ACP registry (docs/REGISTRY.md), read from a document you supply: acp-host never fetches
 * it. `resolve` turns an agent id into a spawnable command (npx, uvx or an installed binary) and
 * never downloads; `install` installs a binary distribution, only when asked, from a `file://`
 * URL or a local path (or any URL through your `fetch` hook), verified by its sha256. Parsing, resolution and installs are the Rust
 * core's. A document that cannot be used throws `invalid_config` with `data.path` naming the
 * field; an unknown id `not_found`.
 *
 * ```ts
 * const registry = Registry.fromFile('/abs/registry.json');
 * let resolved = registry.resolve('my-agent', { cacheDir });
 * if (resolved.needsInstall) {
 *   await registry.install('my-agent', { cacheDir });
 *   resolved = registry.resolve('my-agent', { cacheDir });
 * }
 * const agent = await host.spawn({ ...resolved.spec, cwd: project });
 * ```
 */
export class Registry {
  private readonly native: NativeRegistry;

  private constructor(n: NativeRegistry) {
    this.native = n;
  }

  /** Read and parse a registry file (at most 16 MiB; `io` when it cannot be read). */
  static fromFile(path: string): Registry {
    return new Registry(callSync(() => native.NativeRegistry.fromFile(path)));
  }

  /** Parse a registry document (`{version, agents}`) or one agent manifest (`agent.json`). */
  static fromJson(text: string): Registry {
    return new Registry(callSync(() => native.NativeRegistry.fromJson(text)));
  }

  /** The document's `version`, when it has one. */
  get version(): string | null {
    return this.native.version() ?? null;
  }

  /** Every agent, in document order. */
  agents(): RegistryAgent[] {
    return this.native.agents() as RegistryAgent[];
  }

  /** The entry of `id` (`not_found` when the registry does not list it). */
  agent(id: string): RegistryAgent {
    return callSync(() => this.native.agent(id)) as RegistryAgent;
  }

  /**
   * Choose a distribution of `id` and build its command. Never downloads or installs. Nothing
   * usable throws `not_found`; a binary without `cacheDir` `invalid_argument`.
   */
  resolve(id: string, options: ResolveOptions = {}): ResolvedAgent {
    const o: NativeResolveOptions = {};
    if (options.prefer !== undefined) o.prefer = typeof options.prefer === 'string' ? [options.prefer] : [...options.prefer];
    if (options.platform !== undefined) o.platform = options.platform;
    if (options.cacheDir !== undefined) o.cacheDir = options.cacheDir;
    if (options.npxCommand !== undefined) o.npxCommand = options.npxCommand;
    if (options.uvxCommand !== undefined) o.uvxCommand = options.uvxCommand;
    const r = callSync(() => this.native.resolve(id, o)) as ResolvedAgent & { spec: { env: Record<string, string | null> } };
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(r.spec.env)) if (typeof v === 'string') env[k] = v;
    return { ...r, spec: { command: r.spec.command, args: r.spec.args, env } };
  }

  /**
   * Install `id`'s binary under `cacheDir`: the archive is read from a `file://` URL or a local
   * path, any other URL through `options.fetch` (without it, `unsupported`), its sha256 checked, extracted safely (no
   * links, nothing outside the install directory, bounded) and renamed into place. An existing
   * install fetches nothing. The work runs off the JS thread. No `sha256`, a digest mismatch or a
   * refused archive reject with `invalid_config` (`data.path` names the entry's field), and
   * nothing is installed.
   */
  install(id: string, options: InstallOptions): Promise<InstalledAgent> {
    if (!options || typeof options.cacheDir !== 'string') {
      return Promise.reject(new AcpError('invalid_argument', 'install needs a cacheDir'));
    }
    const hook = options.fetch;
    if (hook !== undefined && hook !== null && typeof hook !== 'function') {
      return Promise.reject(new AcpError('invalid_argument', 'install: fetch must be a function (url) => bytes'));
    }
    const onProgress = options.onProgress;
    if (onProgress !== undefined && onProgress !== null && typeof onProgress !== 'function') {
      return Promise.reject(new AcpError('invalid_argument', 'install: onProgress must be a function (progress) => void'));
    }
    const progress = onProgress ? progressDelivery(onProgress) : null;
    return call(() => this.native.install(id, options.cacheDir, options.platform ?? null, hook ? archiveFetcher(hook) : null, progress)) as Promise<InstalledAgent>;
  }
}

