import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { sweepLoop } from '../../shared/recovery-sweep.ts';
import { matchingRepository } from './matching.repository.ts';
import type { MatchingJob } from './matching.service.ts';

/** A PENDING run untouched this long may have lost its queue message: send it again. */
const RESEND_AFTER_MS = 5 * 60_000;

/**
 * Crash recovery for matching runs. A worker renews its run's lease while it works; when a worker
 * dies the lease runs out and any live worker's sweep (src/shared/recovery-sweep.ts, every 10 s) sends the run to
 * the queue again, where the next worker claims it and resumes (profiles already written are skipped). The UPDATE
 * that picks stale runs is atomic, so concurrent sweeps in several processes send each run once.
 */
export function createMatchingRecovery(deps: Pick<AppDeps, 'db' | 'clock' | 'boss' | 'logger'>) {
  const repo = matchingRepository(deps.db);

  async function sweep(): Promise<string[]> {
    const ids = await repo.releaseStaleRuns(deps.clock.now(), RESEND_AFTER_MS);
    for (const runId of ids) await deps.boss.send(QUEUES.matching, { runId } satisfies MatchingJob);
    if (ids.length) deps.logger.warn({ runs: ids }, 'resuming matching runs of a dead worker');
    return ids;
  }

  return { sweep, ...sweepLoop(deps.logger, 'matching recovery sweep', sweep) };
}
