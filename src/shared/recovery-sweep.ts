/**
 * The recovery sweep of work rows run under heartbeats (scrape jobs, markdown exports, destination pushes, network
 * enrichment jobs): a worker killed mid-run leaves its row RUNNING with a heartbeat that stops; every worker process
 * sweeps now and then and puts such rows back to PENDING (and to the queue) or, after RECOVERY_MAX_ATTEMPTS claims,
 * fails them (the statements: src/db/heartbeat-runs.ts). The sweeps' UPDATEs are conditional, so concurrent sweeps in
 * several processes act once.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';

/** How often each worker process sweeps (a little jitter is added, so processes do not sweep in step). */
export const SWEEP_EVERY_MS = 10_000;
/** A run whose worker died this many times is failed rather than started again. */
export const RECOVERY_MAX_ATTEMPTS = 3;

/** A worker's id in the rows it runs: its host and process (logs, scale-out checks), unique per runner. */
export const newWorkerId = (): string => `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

/** The moment before which a heartbeat means a dead worker. */
export const staleBefore = (now: Date, staleAfterMs: number): Date => new Date(now.getTime() - staleAfterMs);

export interface SweepLoop {
  start(): void;
  stop(): void;
}

/**
 * Runs `sweep` every `everyMs` (plus up to 2 s of jitter; the first within 1–3 s), one at a time; a failed sweep is
 * logged ("`what` failed") and the next one runs as usual. Recovery sweeps use it, and other periodic checks too.
 */
export function sweepLoop(logger: Logger, what: string, sweep: () => Promise<unknown>, everyMs = SWEEP_EVERY_MS) {
  let timer: NodeJS.Timeout | undefined;
  const jitter = () => Math.random() * Math.min(2000, everyMs);
  return {
    start(): void {
      const tick = () => {
        sweep()
          .catch((err) => logger.error({ err }, `${what} failed`))
          .finally(() => {
            if (timer) timer = setTimeout(tick, everyMs + jitter()).unref();
          });
      };
      timer = setTimeout(tick, Math.min(1000, everyMs) + jitter()).unref();
    },
    stop(): void {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  } satisfies SweepLoop;
}
