import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { jobs, leads } from '../../db/schema/index.ts';

export type JobRow = typeof jobs.$inferSelect;
export type JobStatus = JobRow['status'];
export const ACTIVE_STATUSES: JobStatus[] = ['PENDING', 'RUNNING'];

export function jobRepository(db: Db) {
  return {
    async insert(values: typeof jobs.$inferInsert): Promise<JobRow> {
      const [row] = await db.insert(jobs).values(values).returning();
      return row!;
    },
    /** Newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    list(
      userId: string,
      filters: { status?: JobStatus; sourceId?: string },
      limit: number,
      before?: string,
    ): Promise<JobRow[]> {
      const where = [
        filters.status ? eq(jobs.status, filters.status) : undefined,
        filters.sourceId ? eq(jobs.sourceId, filters.sourceId) : undefined,
      ];
      return newestFirstPage(db, jobs, userId, where, limit, before);
    },
    async find(userId: string, id: string): Promise<JobRow | undefined> {
      const [row] = await db
        .select()
        .from(jobs)
        .where(and(eq(jobs.userId, userId), eq(jobs.id, id)))
        .limit(1);
      return row;
    },
    async findById(id: string): Promise<JobRow | undefined> {
      const [row] = await db.select().from(jobs).where(eq(jobs.id, id)).limit(1);
      return row;
    },
    /** PENDING/RUNNING → CANCELLED; undefined when the job was not active (any more). */
    async cancel(userId: string, id: string, now: Date): Promise<JobRow | undefined> {
      const [row] = await db
        .update(jobs)
        .set({ status: 'CANCELLED', finishedAt: now, updatedAt: now })
        .where(and(eq(jobs.userId, userId), eq(jobs.id, id), inArray(jobs.status, ACTIVE_STATUSES)))
        .returning();
      return row;
    },
    /** Deletes a finished job; its leads stay (the FK sets their job_id to null). */
    async deleteFinished(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(jobs)
        .where(
          and(eq(jobs.userId, userId), eq(jobs.id, id), inArray(jobs.status, ['COMPLETED', 'FAILED', 'CANCELLED'])),
        )
        .returning({ id: jobs.id });
      return rows.length > 0;
    },
    /** FAILED → PENDING for another run; undefined when the job had not failed. */
    async resetFailed(userId: string, id: string, now: Date): Promise<JobRow | undefined> {
      const [row] = await db
        .update(jobs)
        .set({
          status: 'PENDING',
          trigger: 'retry',
          error: null,
          progress: 0,
          finishedAt: null,
          workerId: null,
          updatedAt: now,
        })
        .where(and(eq(jobs.userId, userId), eq(jobs.id, id), eq(jobs.status, 'FAILED')))
        .returning();
      return row;
    },

    // ---- the worker's side ----

    /**
     * Takes the job for this worker: PENDING, or RUNNING under a worker whose heartbeat stopped
     * before `staleBefore`. Atomic, so a re-delivered message or a second worker gets nothing.
     */
    async claim(id: string, workerId: string, now: Date, staleBefore: Date): Promise<JobRow | undefined> {
      const [row] = await db
        .update(jobs)
        .set({
          status: 'RUNNING',
          workerId,
          attempts: sql`${jobs.attempts} + 1`,
          startedAt: sql`coalesce(${jobs.startedAt}, ${now})`,
          heartbeatAt: now,
          updatedAt: now,
        })
        .where(
          and(
            eq(jobs.id, id),
            sql`(${jobs.status} = 'PENDING' OR (${jobs.status} = 'RUNNING' AND ${jobs.heartbeatAt} < ${staleBefore}))`,
          ),
        )
        .returning();
      return row;
    },
    /** Progress and heartbeat; false when the job is no longer this worker's (cancelled, deleted, taken over). */
    async heartbeat(
      id: string,
      workerId: string,
      now: Date,
      progress?: { progress: number; pagesVisited: number; pagesFailed: number; leadsFound: number },
    ): Promise<JobRow | undefined> {
      const [row] = await db
        .update(jobs)
        .set({ heartbeatAt: now, ...(progress ?? {}) })
        .where(and(eq(jobs.id, id), eq(jobs.workerId, workerId), eq(jobs.status, 'RUNNING')))
        .returning();
      return row;
    },
    /** Leads this job has stored so far (a job picked up again after a crash starts from here). */
    async countLeads(id: string): Promise<number> {
      const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(leads).where(eq(leads.jobId, id));
      return Number(row?.n ?? 0);
    },
    /** Final count of a job this worker stopped (cancelled, or still its own); never one another worker took over. */
    async setLeadsFound(id: string, workerId: string, leadsFound: number): Promise<void> {
      await db
        .update(jobs)
        .set({ leadsFound })
        .where(and(eq(jobs.id, id), eq(jobs.workerId, workerId)));
    },
    /** RUNNING → PENDING when this worker gives the job up (shutdown). */
    async release(id: string, workerId: string, now: Date): Promise<JobRow | undefined> {
      const [row] = await db
        .update(jobs)
        .set({ status: 'PENDING', workerId: null, heartbeatAt: null, updatedAt: now })
        .where(and(eq(jobs.id, id), eq(jobs.workerId, workerId), eq(jobs.status, 'RUNNING')))
        .returning();
      return row;
    },
    async finish(
      id: string,
      workerId: string,
      now: Date,
      values: {
        status: 'COMPLETED' | 'FAILED';
        error?: string | null;
        progress?: number;
        pagesVisited: number;
        pagesFailed: number;
        leadsFound: number;
      },
    ): Promise<JobRow | undefined> {
      const [row] = await db
        .update(jobs)
        // workerId stays: which worker ran the job (logs, scale-out checks).
        .set({ ...values, error: values.error ?? null, finishedAt: now, heartbeatAt: now, updatedAt: now })
        .where(and(eq(jobs.id, id), eq(jobs.workerId, workerId), eq(jobs.status, 'RUNNING')))
        .returning();
      return row;
    },
  };
}
