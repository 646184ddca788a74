import type { AppDeps } from '../deps.ts';
import { pruneRateLimitEvents } from '../shared/rate-limit.ts';
import { QUEUES } from './queues.ts';

/** Registers every queue's handler on this process's pg-boss instance. */
export async function registerWorkers(deps: AppDeps): Promise<void> {
  const { boss } = deps;
  await boss.work(QUEUES.maintenance, async () => {
    await pruneRateLimitEvents(deps.db, deps.clock);
  });
}

/** Cron schedules; pg-boss sends each once per period across all processes. */
export async function registerSchedules(deps: AppDeps): Promise<void> {
  await deps.boss.schedule(QUEUES.maintenance, '17 3 * * *', null, { tz: 'UTC' });
}
