import type { AppDeps } from '../deps.ts';
import { pruneIdempotencyKeys } from '../shared/idempotency.ts';
import { pruneRateLimitEvents } from '../shared/rate-limit.ts';
import { createAccountDeletionService } from '../modules/account-deletion/account-deletion.service.ts';
import { createDataExportService, type DataExportJob } from '../modules/data-export/data-export.service.ts';
import { registerEmailValidationWorker } from '../modules/leads/lead-validation.service.ts';
import { QUEUES } from './queues.ts';

/** Registers every queue's handler on this process's pg-boss instance. */
export async function registerWorkers(deps: AppDeps): Promise<void> {
  const { boss } = deps;
  await boss.work(QUEUES.maintenance, async () => {
    await pruneRateLimitEvents(deps.db, deps.clock);
    await pruneIdempotencyKeys(deps.db, deps.clock);
  });
  const dataExports = createDataExportService(deps);
  // NOTIFY wakes a busy worker only once for a burst of sends: poll every 2 s so queued exports don't wait 30 s.
  const exportWork = { includeMetadata: true, localConcurrency: 2, notifyPollingIntervalSeconds: 2 } as const;
  await boss.work<DataExportJob, void, typeof exportWork>(QUEUES.dataExport, exportWork, async ([job]) => {
    if (job) await dataExports.generate(job.data, job);
  });
  const deletion = createAccountDeletionService(deps);
  await boss.work(QUEUES.accountPurge, async () => {
    await deletion.purgeDueAccounts();
  });
  await registerEmailValidationWorker(deps);
}

/** Cron schedules; pg-boss sends each once per period across all processes. */
export async function registerSchedules(deps: AppDeps): Promise<void> {
  await deps.boss.schedule(QUEUES.maintenance, '17 3 * * *', null, { tz: 'UTC' });
  await deps.boss.schedule(QUEUES.accountPurge, '7 * * * *', null, { tz: 'UTC' });
}
