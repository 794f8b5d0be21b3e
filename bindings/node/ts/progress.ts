/**
 * Progress of the slow steps a user waits on (core/src/progress.rs): the host's own (spawning an
 * agent, its `initialize` handshake, a terminal login) are `progress` events when the host option
 * `progressEvents` is on; a registry install's (the download, the extraction) go to
 * `registry.install(id, { onProgress })`.
 */

/** Which step: the host's `spawn`, `handshake`, `login`; a registry install's `download`, `extract`. */
export type ProgressPhase = 'spawn' | 'handshake' | 'login' | 'download' | 'extract';

/** Where the step is: `waiting` is repeated every 5 s while it has not ended. */
export type ProgressStage = 'started' | 'waiting' | 'done' | 'failed';

/** One report: a `progress` event's `data`, and what `onProgress` gets (`Progress::to_json`). */
export interface Progress {
  /** Newer hosts may add phases. */
  phase: ProgressPhase | (string & {});
  stage: ProgressStage | (string & {});
  /** Since the step started. */
  elapsedMs: number;
  /** Bytes done (a download's size once fetched), else `null`. */
  bytes: number | null;
  /** What failed, or what is being waited for (a download's URL), else `null`. */
  message: string | null;
}

/** Gets a registry install's progress, in order, on the JS thread; what it throws is ignored. */
export type ProgressHandler = (progress: Progress) => void;

/**
 * @internal Wrap an `onProgress` hook for the addon: it gets each report's JSON; the hook's
 * failure (a throw, a rejection) is its own and the install goes on.
 */
export function progressDelivery(hook: ProgressHandler): (json: string) => void {
  return (json) => {
    try {
      const r = hook(JSON.parse(json) as Progress) as unknown;
      if (r !== null && typeof r === 'object' && typeof (r as PromiseLike<void>).then === 'function') {
        (r as PromiseLike<void>).then(undefined, () => {});
      }
    } catch {
      // Ignored: progress is for the user's eyes, the install does not depend on it.
    }
  };
}
