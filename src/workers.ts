import type { AppDeps } from './deps.ts';
import { createAccountDeletionService } from './modules/account-deletion/index.ts';
import { createAccountService } from './modules/accounts/index.ts';
import { createAnalyticsService } from './modules/analytics/index.ts';
import { sweepSnapshots } from './modules/browser/index.ts';
import { createDataExportService, type DataExportJob } from './modules/data-export/index.ts';
import {
  createDestinationPushRecovery,
  createDestinationPushRunner,
  createDestinationService,
  type DestinationPushMessage,
} from './modules/destinations/index.ts';
import {
  createJobRecovery,
  createJobRunner,
  createJobService,
  dispatchDueSources,
  type JobMessage,
} from './modules/jobs/index.ts';
import { createLeadValidationService, type EmailValidationJob } from './modules/leads/index.ts';
import {
  createMarkdownExportRecovery,
  createMarkdownExportRunner,
  createMarkdownExportService,
  type MarkdownExportMessage,
} from './modules/markdown-exports/index.ts';
import type { MatchingJob } from './modules/matching/index.ts';
import { createMatchingRecovery, createMatchingRunner } from './modules/matching/index.ts';
import { createInboxReader, createInboxWatcher, createSequencer } from './modules/outreach/index.ts';
import {
  createEnricher,
  createEnrichRecovery,
  type NetworkEnrichMessage,
} from './modules/professional-network/index.ts';
import type { RunCrawl } from './modules/scraping/index.ts';
import { createWarmupSender } from './modules/warmup/index.ts';
import { createWebhookDispatcher, pruneWebhookHistory } from './modules/webhooks/index.ts';
import { QUEUES } from './queue/queues.ts';
import { pruneIdempotencyKeys } from './shared/idempotency.ts';
import { pruneRateLimitEvents } from './shared/rate-limit.ts';

/** A read of one outreach mailbox, queued when its IMAP watch hears of new mail. */
interface InboxReadJob {
  mailboxId: string;
}

export interface Workers {
  /** Stops the crawls running here (their jobs go back to PENDING) and the recovery sweep. */
  stop(): Promise<void>;
}

/** Registers every queue's handler on this process's pg-boss instance. */
export async function registerWorkers(
  deps: AppDeps,
  options: { runCrawl?: RunCrawl; hostsBrowsers?: boolean } = {},
): Promise<Workers> {
  const { boss } = deps;
  await boss.work(QUEUES.maintenance, async () => {
    await pruneRateLimitEvents(deps.db, deps.clock);
    await pruneIdempotencyKeys(deps.db, deps.clock);
    await pruneWebhookHistory(deps);
    await sweepSnapshots(deps);
    await deps.apiKeys.purgeEndedConsoleSessions();
  });
  const accounts = createAccountService(deps);
  await boss.work(QUEUES.accountRollups, async () => {
    await accounts.refreshPending();
  });
  const analytics = createAnalyticsService(deps);
  await boss.work(QUEUES.leadStats, async () => {
    await analytics.compactLeadStats();
  });
  // One run at a time per process (a run sends batch after batch until nothing is due); other processes claim
  // other enrollments (docs/outreach.md "Outreach", Sequencer).
  const sequencer = createSequencer(deps);
  await boss.work(QUEUES.outreachSend, { batchSize: 100 }, async () => {
    await sequencer.runDue();
  });
  // The schedule's jobs (no data) read the mailboxes whose turn it is; a watcher's job names the mailbox where mail
  // just arrived, read at once (docs/outreach.md "Outreach", Replies and bounces).
  const inboxReader = createInboxReader(deps);
  await boss.work<InboxReadJob | null>(QUEUES.outreachInbox, { batchSize: 100 }, async (jobs) => {
    const woken = [...new Set(jobs.flatMap((j) => (j.data?.mailboxId ? [j.data.mailboxId] : [])))];
    if (woken.length) await inboxReader.runDue({ force: true, mailboxIds: woken });
    if (jobs.some((j) => !j.data?.mailboxId)) await inboxReader.runDue();
  });
  const warmup = createWarmupSender(deps);
  await boss.work(QUEUES.warmup, async () => {
    await warmup.runDue();
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
  // Validation jobs are small: take them 25 at a time, each with its own result; 4 batches at once, so a
  // batch waiting on slow mail exchangers (SMTP probing) does not hold the rest of the queue back.
  const validation = createLeadValidationService(deps);
  await boss.work<EmailValidationJob>(
    QUEUES.emailValidation,
    { batchSize: 25, localConcurrency: 4, perJobResults: true, burstWhenBatchFull: true, pollingIntervalSeconds: 1 },
    (jobs) => validation.runJobs(jobs),
  );
  // Matching runs: a few at once (each is one SQL statement at a time, or bounded by AI_CONCURRENCY).
  const matchingRunner = createMatchingRunner(deps);
  const matchingWork = { localConcurrency: 2, notifyPollingIntervalSeconds: 2 } as const;
  await boss.work<MatchingJob, void, typeof matchingWork>(QUEUES.matching, matchingWork, async ([job]) => {
    if (job) await matchingRunner.run(job.data.runId);
  });
  const matchingRecovery = createMatchingRecovery(deps);
  matchingRecovery.start();

  // Professional-network enrichment runs in a cloud-browser session, so only where this process hosts them (default
  // RUN_BROWSERS; the runtime says whether its API, which starts the sessions service, runs here too).
  let enrichRecovery: ReturnType<typeof createEnrichRecovery> | undefined;
  let enricher: ReturnType<typeof createEnricher> | undefined;
  if (options.hostsBrowsers ?? deps.config.RUN_BROWSERS) {
    const enrich = createEnricher(deps);
    enricher = enrich;
    const enrichWork = { localConcurrency: 2, notifyPollingIntervalSeconds: 2 } as const;
    await boss.work<NetworkEnrichMessage, void, typeof enrichWork>(QUEUES.networkEnrich, enrichWork, async ([job]) => {
      if (job) await enrich.run(job.data.jobId);
    });
    // Crash recovery by heartbeats, like scrape jobs and markdown exports (below); swept only where jobs can run.
    enrichRecovery = createEnrichRecovery(deps);
    // Embedded: this process is the only one, so RUNNING jobs are orphans of the last run.
    if (deps.database.pglite) await enrichRecovery.recoverOrphans();
    enrichRecovery.start();
  }

  const jobService = createJobService(deps);
  const runner = createJobRunner(deps, options);
  await runner.start();
  const scrapeWork = { localConcurrency: deps.config.JOB_CONCURRENCY, notifyPollingIntervalSeconds: 2 } as const;
  await boss.work<JobMessage, void, typeof scrapeWork>(QUEUES.scrape, scrapeWork, async ([job]) => {
    if (job) await runner.run(job.data.jobId);
  });
  await boss.work(QUEUES.sourceScheduler, async () => {
    await dispatchDueSources(deps, jobService);
  });
  // Markdown exports: crawls like scrape jobs (docs/scraping.md "Markdown exports"), with their own rows and recovery.
  const markdownRunner = createMarkdownExportRunner(deps, options);
  await markdownRunner.start();
  await boss.work<MarkdownExportMessage, void, typeof scrapeWork>(QUEUES.markdownExport, scrapeWork, async ([job]) => {
    if (job) await markdownRunner.run(job.data.exportId);
  });
  const markdownRecovery = createMarkdownExportRecovery(deps, createMarkdownExportService(deps));
  if (deps.database.pglite) await markdownRecovery.recoverOrphans();
  markdownRecovery.start();
  // Destination pushes: batches of leads to a webhook, a PostgreSQL table or S3 (docs/destinations.md), resumable.
  const pushRunner = createDestinationPushRunner(deps);
  const pushWork = { localConcurrency: 2, notifyPollingIntervalSeconds: 2 } as const;
  await boss.work<DestinationPushMessage, void, typeof pushWork>(QUEUES.destinationPush, pushWork, async ([job]) => {
    if (job) await pushRunner.run(job.data.pushId);
  });
  const pushRecovery = createDestinationPushRecovery(deps, createDestinationService(deps));
  if (deps.database.pglite) await pushRecovery.recoverOrphans();
  pushRecovery.start();
  const recovery = createJobRecovery(deps, jobService);
  // Embedded: this process is the only one (directory lock), so RUNNING jobs are orphans of the last run.
  if (deps.database.pglite) await recovery.recoverOrphans();
  recovery.start();

  // Outbound webhooks: deliveries claimed from their table under a lease, woken by NOTIFY at each event's commit.
  const webhooks = createWebhookDispatcher(deps);
  await webhooks.start();

  // IMAP IDLE: this process watches every mailbox's INBOX (each process its own connection), following additions and
  // removals every minute. Started last, so a failure above leaves no connection open.
  const inboxWatcher = deps.config.OUTREACH_IMAP_IDLE
    ? createInboxWatcher(deps, async (mailboxId) => {
        // One read per mailbox and few seconds, however many processes heard of the mail (each watches it).
        await boss.send(QUEUES.outreachInbox, { mailboxId } satisfies InboxReadJob, {
          singletonKey: `watch-${mailboxId}`,
          singletonSeconds: 5,
        });
      })
    : undefined;
  const syncWatches = () =>
    inboxWatcher?.sync().catch((err) => deps.logger.warn({ err }, 'outreach inbox watches not synced'));
  void syncWatches();
  const watchSync = setInterval(syncWatches, 60_000);
  watchSync.unref();

  return {
    async stop() {
      clearInterval(watchSync);
      inboxWatcher?.close();
      recovery.stop();
      matchingRecovery.stop();
      markdownRecovery.stop();
      pushRecovery.stop();
      enrichRecovery?.stop();
      await Promise.all([runner.stop(), markdownRunner.stop(), pushRunner.stop(), enricher?.stop(), webhooks.stop()]);
    },
  };
}

/** Cron schedules; pg-boss sends each once per period across all processes. */
export async function registerSchedules(deps: AppDeps): Promise<void> {
  await deps.boss.schedule(QUEUES.maintenance, '17 3 * * *', null, { tz: 'UTC' });
  await deps.boss.schedule(QUEUES.accountPurge, '7 * * * *', null, { tz: 'UTC' });
  // Every minute: account rollups catch up with lead changes, so a read after a big import finds them done.
  await deps.boss.schedule(QUEUES.accountRollups, '* * * * *', null, { tz: 'UTC' });
  // Every minute: the analytics lead counts fold what was appended since (docs/qualification.md "Analytics").
  await deps.boss.schedule(QUEUES.leadStats, '* * * * *', null, { tz: 'UTC' });
  // Hourly: each WARMING domain sends its schedule day once (a day is claimed per domain), so a domain started
  // today or a process that was down at midnight still sends today's volume.
  await deps.boss.schedule(QUEUES.warmup, '23 * * * *', null, { tz: 'UTC' });
  // Every minute: the outreach sequencer sends what is due (activation and enrollment also wake it).
  await deps.boss.schedule(QUEUES.outreachSend, '* * * * *', null, { tz: 'UTC' });
  // Every minute: outreach mailboxes whose turn it is (OUTREACH_IMAP_INTERVAL_SECONDS) are read for replies.
  await deps.boss.schedule(QUEUES.outreachInbox, '* * * * *', null, { tz: 'UTC' });
  // Every minute: the runs of HOURLY, DAILY and WEEKLY sources that are due.
  await deps.boss.schedule(QUEUES.sourceScheduler, '* * * * *', null, { tz: 'UTC' });
}
