import {
  failExhaustedRuns,
  requeueAllRunning,
  requeueStaleRuns,
  staleRunning,
  touchStalePending,
} from '../../db/heartbeat-runs.ts';
import { jobs } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { RECOVERY_MAX_ATTEMPTS, staleBefore, sweepLoop } from '../../shared/recovery-sweep.ts';
import { STALE_AFTER_MS } from './jobs.runner.ts';
import { emitJobEvent, type JobService, publishJobUpdate } from './jobs.service.ts';

const MAX_ATTEMPTS = RECOVERY_MAX_ATTEMPTS;
/** A PENDING job untouched this long may have lost its queue message (crash between commit and send): send again. */
const PENDING_RESEND_MS = 5 * 60_000;

/**
 * Crash recovery. A worker killed mid-crawl leaves its job RUNNING with a heartbeat that stops;
 * any live worker's sweep (src/shared/recovery-sweep.ts, every 10 s) finds it within STALE_AFTER_MS +
 * SWEEP_EVERY_MS and puts it back to PENDING (re-sent to the queue) or, after MAX_ATTEMPTS, fails it with a clear error.
 * The UPDATEs are atomic, so concurrent sweeps in several processes act once.
 */
export function createJobRecovery(
  deps: Pick<AppDeps, 'db' | 'clock' | 'notifier' | 'logger'>,
  jobsService: Pick<JobService, 'enqueue'>,
) {
  async function sweep(): Promise<{ requeued: string[]; failed: string[]; resent: string[] }> {
    const now = deps.clock.now();
    const stale = staleRunning(jobs, staleBefore(now, STALE_AFTER_MS));
    const opts = { now, maxAttempts: MAX_ATTEMPTS };
    const error = `The worker running this job stopped responding ${MAX_ATTEMPTS} times; it was not started again.`;
    const failed = await deps.db.transaction(async (tx) => {
      const rows = await failExhaustedRuns(tx, jobs, stale, { ...opts, failure: { error } });
      for (const row of rows) await emitJobEvent(tx, row);
      return rows;
    });
    const requeued = await requeueStaleRuns(deps.db, jobs, stale, opts);
    const resent = await touchStalePending(deps.db, jobs, new Date(now.getTime() - PENDING_RESEND_MS), now);
    for (const row of [...failed, ...requeued]) await publishJobUpdate(deps.notifier, row);
    for (const id of [...requeued.map((r) => r.id), ...resent]) await jobsService.enqueue(id);
    if (failed.length || requeued.length)
      deps.logger.warn(
        { requeued: requeued.map((r) => r.id), failed: failed.map((r) => r.id) },
        'recovered jobs of a dead worker',
      );
    return { requeued: requeued.map((r) => r.id), failed: failed.map((r) => r.id), resent };
  }

  return {
    sweep,
    /**
     * Embedded database only: the directory lock guarantees no other process is alive, so every
     * RUNNING job was orphaned by the previous run and goes back to the queue at once.
     */
    async recoverOrphans(): Promise<string[]> {
      const ids = await requeueAllRunning(deps.db, jobs, deps.clock.now());
      for (const id of ids) await jobsService.enqueue(id);
      return ids;
    },
    ...sweepLoop(deps.logger, 'job recovery sweep', sweep),
  };
}
