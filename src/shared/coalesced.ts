/**
 * A write of the latest state (a job's heartbeat and progress), run one at a time: asked for while one runs, at most
 * one more waits (later asks join it), and it reads the state when it starts, not when it was asked for. While the
 * database is busy, every crawled page would otherwise queue one more UPDATE + NOTIFY (~90 a job on PGlite, not ~13).
 */
export interface Coalesced {
  /** Asks for a run; never rejects (a failed run goes to `onError`, and later runs go on). */
  run(): void;
  /** Resolves once every run asked for so far has ended. */
  settled(): Promise<void>;
}

export function coalesced(task: () => Promise<unknown>, onError: (err: unknown) => void): Coalesced {
  let tail: Promise<void> = Promise.resolve();
  let queued = false;
  return {
    run() {
      if (queued) return;
      queued = true;
      // Caught here: a rejected chain would skip every later run (and leave `queued` set).
      tail = tail
        .then(async () => {
          queued = false;
          await task();
        })
        .catch((err) => {
          try {
            onError(err);
          } catch {
            // A failing error handler must not stop the runs either.
          }
        });
    },
    settled: () => tail,
  };
}
