import { and, eq, gte, inArray, lt } from 'drizzle-orm';
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
    const stale = and(eq(jobs.status, 'RUNNING'), lt(jobs.heartbeatAt, staleBefore(now, STALE_AFTER_MS)));
    const failed = await deps.db.transaction(async (tx) => {
      const rows = await tx
        .update(jobs)
        .set({
          status: 'FAILED',
          error: `The worker running this job stopped responding ${MAX_ATTEMPTS} times; it was not started again.`,
          finishedAt: now,
          workerId: null,
          updatedAt: now,
        })
        .where(and(stale, gte(jobs.attempts, MAX_ATTEMPTS)))
        .returning();
      for (const row of rows) await emitJobEvent(tx, row);
      return rows;
    });
    const requeued = await deps.db
      .update(jobs)
      .set({ status: 'PENDING', workerId: null, heartbeatAt: null, updatedAt: now })
      .where(and(stale, lt(jobs.attempts, MAX_ATTEMPTS)))
      .returning();
    const resent = await deps.db
      .update(jobs)
      .set({ updatedAt: now })
      .where(and(eq(jobs.status, 'PENDING'), lt(jobs.updatedAt, new Date(now.getTime() - PENDING_RESEND_MS))))
      .returning({ id: jobs.id });
    for (const row of [...failed, ...requeued]) await publishJobUpdate(deps.notifier, row);
    for (const row of [...requeued, ...resent]) await jobsService.enqueue(row.id);
    if (failed.length || requeued.length)
      deps.logger.warn(
        { requeued: requeued.map((r) => r.id), failed: failed.map((r) => r.id) },
        'recovered jobs of a dead worker',
      );
    return { requeued: requeued.map((r) => r.id), failed: failed.map((r) => r.id), resent: resent.map((r) => r.id) };
  }

  return {
    sweep,
    /**
     * Embedded database only: the directory lock guarantees no other process is alive, so every
     * RUNNING job was orphaned by the previous run and goes back to the queue at once.
     */
    async recoverOrphans(): Promise<string[]> {
      const now = deps.clock.now();
      const rows = await deps.db
        .update(jobs)
        .set({ status: 'PENDING', workerId: null, heartbeatAt: null, updatedAt: now })
        .where(inArray(jobs.status, ['RUNNING']))
        .returning({ id: jobs.id });
      for (const row of rows) await jobsService.enqueue(row.id);
      return rows.map((r) => r.id);
    },
    ...sweepLoop(deps.logger, 'job', sweep),
  };
}
