/**
 * Crash recovery of enrichment jobs (the sweep of src/shared/recovery-sweep.ts): a RUNNING job whose worker stopped
 * beating for LINKEDIN_JOB_STALE_MS goes back to PENDING and to the queue, where a live worker claims it and resumes
 * after its last recorded lead; after RECOVERY_MAX_ATTEMPTS runs it fails instead. A PENDING job whose queue message
 * may have been lost is sent again. The embedded database's single process requeues every RUNNING job at start.
 */
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { RECOVERY_MAX_ATTEMPTS, SWEEP_EVERY_MS, staleBefore, sweepLoop } from '../../shared/recovery-sweep.ts';
import type { NetworkEnrichMessage } from './enrich.ts';
import { networkRepository } from './network.repository.ts';

/** A PENDING job untouched this long may have lost its queue message (a crash between insert and send). */
const PENDING_RESEND_MS = 5 * 60_000;

export function createEnrichRecovery(deps: Pick<AppDeps, 'db' | 'clock' | 'boss' | 'logger' | 'config'>) {
  const repo = networkRepository(deps.db);
  const staleAfterMs = deps.config.LINKEDIN_JOB_STALE_MS;
  const send = (jobId: string) => deps.boss.send(QUEUES.networkEnrich, { jobId } satisfies NetworkEnrichMessage);

  async function sweep() {
    const now = deps.clock.now();
    const resendBefore = new Date(now.getTime() - Math.max(PENDING_RESEND_MS, staleAfterMs));
    const found = await repo.recoverStale(staleBefore(now, staleAfterMs), resendBefore, now, RECOVERY_MAX_ATTEMPTS);
    for (const id of [...found.requeued, ...found.resent]) await send(id);
    if (found.requeued.length || found.failed.length)
      deps.logger.warn(
        { requeued: found.requeued, failed: found.failed },
        'recovered enrichment jobs of a dead worker',
      );
    return found;
  }

  return {
    sweep,
    /** Embedded database only: the directory lock says no other process is alive, so RUNNING jobs are orphans. */
    async recoverOrphans(): Promise<string[]> {
      const ids = await repo.requeueAllRunning(deps.clock.now());
      for (const id of ids) await send(id);
      return ids;
    },
    // A short stale time (tests) is swept more often, so a job is taken over within about twice that time.
    ...sweepLoop(
      deps.logger,
      'enrichment job recovery sweep',
      sweep,
      Math.min(SWEEP_EVERY_MS, Math.ceil(staleAfterMs / 3)),
    ),
  };
}
