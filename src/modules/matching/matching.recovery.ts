import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { matchingRepository } from './matching.repository.ts';
import type { MatchingJob } from './matching.service.ts';

/** How often each worker process looks for runs whose worker died. */
export const MATCHING_SWEEP_EVERY_MS = 10_000;
/** A PENDING run untouched this long may have lost its queue message: send it again. */
const RESEND_AFTER_MS = 5 * 60_000;

/**
 * Crash recovery for matching runs. A worker renews its run's lease while it works; when a worker
 * dies the lease runs out and any live worker's sweep sends the run to the queue again, where the
 * next worker claims it and resumes (profiles already written are skipped). The UPDATE that picks
 * stale runs is atomic, so concurrent sweeps in several processes send each run once.
 */
export function createMatchingRecovery(deps: Pick<AppDeps, 'db' | 'clock' | 'boss' | 'logger'>) {
  const repo = matchingRepository(deps.db);
  let timer: NodeJS.Timeout | undefined;

  async function sweep(): Promise<string[]> {
    const ids = await repo.releaseStaleRuns(deps.clock.now(), RESEND_AFTER_MS);
    for (const runId of ids) await deps.boss.send(QUEUES.matching, { runId } satisfies MatchingJob);
    if (ids.length) deps.logger.warn({ runs: ids }, 'resuming matching runs of a dead worker');
    return ids;
  }

  return {
    sweep,
    start() {
      timer = setInterval(
        () => void sweep().catch((err: unknown) => deps.logger.error({ err }, 'matching recovery sweep failed')),
        MATCHING_SWEEP_EVERY_MS,
      );
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
