import { fromPglite, PgBoss } from 'pg-boss';
import type { Database } from '../db/client.ts';

/** Every background queue of the service. */
export const QUEUES = {
  dataExport: 'data-export',
  emailValidation: 'email-validation',
  accountPurge: 'account-purge',
  maintenance: 'maintenance',
  scrape: 'scrape',
  sourceScheduler: 'source-scheduler',
  matching: 'matching',
  accountRollups: 'account-rollups',
  leadStats: 'lead-stats',
  warmup: 'warmup',
  outreachSend: 'outreach-send',
  outreachInbox: 'outreach-inbox',
  networkEnrich: 'network-enrich',
  markdownExport: 'markdown-export',
  destinationPush: 'destination-push',
} as const;

/** pg-boss on the service's own database: PGlite in-process, or PostgreSQL shared by any number of processes. */
export async function startBoss(
  database: Database,
  options: { databaseUrl?: string; poolSize?: number; schedule?: boolean },
): Promise<PgBoss> {
  const common = {
    schema: 'pgboss',
    schedule: options.schedule ?? true,
    useListenNotify: true,
    monitorIntervalSeconds: 60,
  };
  const boss = database.pglite
    ? new PgBoss({ ...common, db: fromPglite(database.pglite), backend: 'pglite' })
    : new PgBoss({
        ...common,
        connectionString: options.databaseUrl!,
        max: Math.max(2, Math.min(options.poolSize ?? 4, 10)),
      });
  await boss.start();
  await Promise.all([
    boss.createQueue(QUEUES.dataExport, {
      retryLimit: 2,
      retryDelay: 10,
      retryBackoff: true,
      expireInSeconds: 900,
      notify: true,
    }),
    boss.createQueue(QUEUES.emailValidation, {
      retryLimit: 2,
      retryDelay: 5,
      retryBackoff: true,
      expireInSeconds: 300,
      notify: true,
    }),
    boss.createQueue(QUEUES.accountPurge, { retryLimit: 3, retryDelay: 60, expireInSeconds: 900 }),
    boss.createQueue(QUEUES.maintenance, { retryLimit: 1, expireInSeconds: 600 }),
    boss.createQueue(QUEUES.accountRollups, { retryLimit: 0, expireInSeconds: 300 }),
    boss.createQueue(QUEUES.leadStats, { retryLimit: 0, expireInSeconds: 300 }),
    // A day is claimed before it is sent, so a retry or a second process never sends it twice.
    boss.createQueue(QUEUES.warmup, { retryLimit: 0, expireInSeconds: 3600 }),
    // The sequencer leases what it claims and records each mail before sending it, so a message lost with its
    // process is not retried by pg-boss: the next run (every minute, or woken) takes over.
    boss.createQueue(QUEUES.outreachSend, { retryLimit: 0, expireInSeconds: 3600, notify: true }),
    boss.createQueue(QUEUES.outreachInbox, { retryLimit: 0, expireInSeconds: 900, notify: true }),
    // A crawl's own retries are per request; a crashed worker's job is recovered from the jobs
    // table (heartbeats), so pg-boss does not retry or expire scrape messages early.
    boss.createQueue(QUEUES.scrape, { retryLimit: 0, expireInSeconds: 86_400, notify: true }),
    // Like scrape: an enrichment job's run is recovered from its row (heartbeats; it resumes after its last recorded
    // lead), not retried by pg-boss. Its expiry only ends the message's record: the row says who runs the job, and a
    // job paced over hours keeps running past it.
    boss.createQueue(QUEUES.networkEnrich, { retryLimit: 0, expireInSeconds: 3600, notify: true }),
    // Like scrape: an export's run is recovered from its row (heartbeats), not retried by pg-boss.
    boss.createQueue(QUEUES.markdownExport, { retryLimit: 0, expireInSeconds: 86_400, notify: true }),
    // Like markdown exports: a push's run is recovered from its row (heartbeats, its cursor), not retried by pg-boss.
    boss.createQueue(QUEUES.destinationPush, { retryLimit: 0, expireInSeconds: 86_400, notify: true }),
    boss.createQueue(QUEUES.sourceScheduler, { retryLimit: 0, expireInSeconds: 300 }),
    // A rule execution resumes from its stored results when a message is delivered again; a run's
    // lease (not the message's expiry) decides who executes it, and the recovery sweep resends runs
    // of dead workers, so a long AI run is never cut off and picked up twice by expiry.
    boss.createQueue(QUEUES.matching, {
      retryLimit: 2,
      retryDelay: 5,
      retryBackoff: true,
      expireInSeconds: 86_400,
      notify: true,
    }),
  ]);
  return boss;
}
