import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { findSource } from '../sources/index.ts';
import { type JobRow, jobRepository } from './jobs.repository.ts';
import type { CreateJobInput, JobView, ListJobsQuery } from './jobs.schemas.ts';

/** NOTIFY channels: a cancel reaches the process running the job; updates feed the SSE streams. */
export const JOB_CANCEL_CHANNEL = 'quarry_job_cancel';
export const JOB_UPDATE_CHANNEL = 'quarry_job_update';

export interface JobMessage {
  jobId: string;
}

export const toJobView = (r: JobRow): JobView => ({
  id: r.id,
  name: r.name,
  sourceId: r.sourceId,
  status: r.status,
  progress: r.progress,
  leadsFound: r.leadsFound,
  pagesVisited: r.pagesVisited,
  pagesFailed: r.pagesFailed,
  error: r.error,
  trigger: r.trigger,
  attempts: r.attempts,
  startedAt: r.startedAt?.toISOString() ?? null,
  finishedAt: r.finishedAt?.toISOString() ?? null,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/** What an SSE subscriber receives on every change. */
export const jobUpdatePayload = (
  r: Pick<JobRow, 'id' | 'status' | 'progress' | 'leadsFound' | 'pagesVisited' | 'error'>,
) =>
  JSON.stringify({
    id: r.id,
    status: r.status,
    progress: r.progress,
    leadsFound: r.leadsFound,
    pagesVisited: r.pagesVisited,
    error: r.error,
  });

/** Tells every SSE stream (in any process) that a job changed; a lost notification is caught by their poll. */
export const publishJobUpdate = (notifier: AppDeps['notifier'], row: JobRow) =>
  notifier.publish(JOB_UPDATE_CHANNEL, jobUpdatePayload(row)).catch(() => {});

/**
 * The webhook event of a job that started, completed or failed (README, Webhooks), written in the transaction
 * of the change.
 */
export function emitJobEvent(tx: Db | Tx, row: JobRow): Promise<void> {
  const base = { jobId: row.id, sourceId: row.sourceId, name: row.name };
  const counts = { leadsFound: row.leadsFound, pagesVisited: row.pagesVisited, pagesFailed: row.pagesFailed };
  const finishedAt = (row.finishedAt ?? row.updatedAt).toISOString();
  switch (row.status) {
    case 'RUNNING':
      return emitEvent(tx, row.userId, 'job.started', { ...base, attempt: row.attempts });
    case 'COMPLETED':
      return emitEvent(tx, row.userId, 'job.completed', {
        ...base,
        ...counts,
        startedAt: row.startedAt?.toISOString() ?? null,
        finishedAt,
      });
    case 'FAILED':
      return emitEvent(tx, row.userId, 'job.failed', { ...base, ...counts, error: row.error ?? '', finishedAt });
    default:
      return Promise.resolve();
  }
}

export type JobService = ReturnType<typeof createJobService>;

export function createJobService(deps: Pick<AppDeps, 'db' | 'clock' | 'boss' | 'notifier' | 'logger' | 'credits'>) {
  const repo = jobRepository(deps.db);

  const publish = (row: JobRow) => publishJobUpdate(deps.notifier, row);

  async function enqueue(jobId: string): Promise<void> {
    await deps.boss.send(QUEUES.scrape, { jobId } satisfies JobMessage);
  }

  async function owned(userId: string, id: string): Promise<JobRow> {
    return findOwned(id, 'Job', (key) => repo.find(userId, key));
  }

  /**
   * Cancels the job if it is still PENDING or RUNNING (one conditional UPDATE) and signals its
   * worker; the cancelled job, or undefined when it is not active (any more).
   */
  async function cancel(userId: string, id: string): Promise<JobView | undefined> {
    const current = await owned(userId, id);
    const cancelled = await repo.cancel(userId, current.id, deps.clock.now());
    if (!cancelled) return undefined;
    await deps.notifier.publish(JOB_CANCEL_CHANNEL, cancelled.id);
    await publish(cancelled);
    return toJobView(cancelled);
  }

  return {
    enqueue,

    async list(userId: string, query: ListJobsQuery) {
      const rows = await repo.list(
        userId,
        { status: query.status, sourceId: query.sourceId?.toLowerCase() },
        query.limit,
        decodeCursor(query.cursor),
      );
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { jobs: items.map(toJobView), nextCursor };
    },

    get: async (userId: string, id: string) => toJobView(await owned(userId, id)),
    owned,

    /**
     * A PENDING job for an ACTIVE source of the caller's, handed to the workers; 402 when the balance
     * cannot pay for a first page (nothing is created).
     */
    async create(userId: string, input: CreateJobInput, trigger: JobRow['trigger'] = 'manual'): Promise<JobView> {
      const source = await findSource(deps.db, userId, input.sourceId.toLowerCase());
      if (!source) throw notFound('Source', 'sourceId');
      if (source.status !== 'ACTIVE')
        throw new AppError('SOURCE_NOT_ACTIVE', `Source is ${source.status}; activate it first`, {
          details: [{ field: 'sourceId', message: 'source is not ACTIVE' }],
        });
      await deps.credits.assert(deps.db, userId, 'pages', 1);
      const now = deps.clock.now();
      const row = await repo.insert({
        userId,
        sourceId: source.id,
        name: input.name,
        trigger,
        createdAt: now,
        updatedAt: now,
      });
      await enqueue(row.id);
      return toJobView(row);
    },

    /**
     * A PENDING or RUNNING job is cancelled (kept, status CANCELLED) and its crawl stopped through
     * NOTIFY; a finished one is deleted, its leads kept.
     */
    cancel,

    async cancelOrDelete(userId: string, id: string): Promise<'cancelled' | 'deleted'> {
      if (await cancel(userId, id)) return 'cancelled';
      // Not active (any more, if it finished meanwhile): a finished job is deleted.
      if (await repo.deleteFinished(userId, id.toLowerCase())) return 'deleted';
      throw notFound('Job');
    },

    /** FAILED → PENDING and back to the workers (402 without credits); any other state is 400 INVALID_STATUS. */
    async retry(userId: string, id: string): Promise<JobView> {
      const current = await owned(userId, id);
      if (current.status === 'FAILED') await deps.credits.assert(deps.db, userId, 'pages', 1);
      const row = await repo.resetFailed(userId, current.id, deps.clock.now());
      if (!row) throw new AppError('INVALID_STATUS', `Only a FAILED job can be retried; this one is ${current.status}`);
      await enqueue(row.id);
      await publish(row);
      return toJobView(row);
    },
  };
}
