import { and, asc, count, eq, inArray, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.ts';
import { failExhaustedRuns, requeueAllRunning, requeueStaleRuns, staleRunning } from '../../db/heartbeat-runs.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { markdownExportPages, markdownExports } from '../../db/schema/index.ts';

export type MarkdownExportRow = typeof markdownExports.$inferSelect;
export type MarkdownPageRow = typeof markdownExportPages.$inferSelect;
type NewExport = typeof markdownExports.$inferInsert;

const ACTIVE = ['PENDING', 'RUNNING'] as const;
const FINISHED = ['COMPLETED', 'FAILED', 'CANCELLED'] as const;

export interface StoredPage {
  url: string;
  title: string | null;
  markdown: string;
  depth: number;
}

/** The only writer of `markdown_exports` and `markdown_export_pages`. */
export function markdownExportRepository(db: Db | Tx) {
  const byId = (id: string) => eq(markdownExports.id, id);
  const mine = (userId: string, id: string) => and(byId(id), eq(markdownExports.userId, userId));
  const held = (id: string, workerId: string) =>
    and(byId(id), eq(markdownExports.status, 'RUNNING'), eq(markdownExports.workerId, workerId));

  return {
    async insert(row: NewExport): Promise<MarkdownExportRow> {
      const [created] = await db.insert(markdownExports).values(row).returning();
      return created!;
    },
    async find(userId: string, id: string): Promise<MarkdownExportRow | undefined> {
      const [row] = await db.select().from(markdownExports).where(mine(userId, id)).limit(1);
      return row;
    },
    async findById(id: string): Promise<MarkdownExportRow | undefined> {
      const [row] = await db.select().from(markdownExports).where(byId(id)).limit(1);
      return row;
    },
    list(userId: string, limit: number, beforeId?: string): Promise<MarkdownExportRow[]> {
      return newestFirstPage(db, markdownExports, userId, [], limit, beforeId);
    },
    /** PENDING (or RUNNING with a stale heartbeat) → RUNNING for this worker; undefined when not ours to run. */
    async claim(id: string, workerId: string, now: Date): Promise<MarkdownExportRow | undefined> {
      const [row] = await db
        .update(markdownExports)
        .set({
          status: 'RUNNING',
          workerId,
          heartbeatAt: now,
          startedAt: sql`coalesce(${markdownExports.startedAt}, ${now.toISOString()}::timestamptz)`,
          attempts: sql`${markdownExports.attempts} + 1`,
          error: null,
          updatedAt: now,
        })
        .where(and(byId(id), eq(markdownExports.status, 'PENDING')))
        .returning();
      return row;
    },
    async heartbeat(
      id: string,
      workerId: string,
      now: Date,
      progress: Pick<MarkdownExportRow, 'progress' | 'pagesDone' | 'pagesFailed'>,
    ): Promise<MarkdownExportRow | undefined> {
      const [row] = await db
        .update(markdownExports)
        .set({ ...progress, heartbeatAt: now, updatedAt: now })
        .where(held(id, workerId))
        .returning();
      return row;
    },
    async finish(
      id: string,
      workerId: string,
      now: Date,
      fields: Partial<Pick<MarkdownExportRow, 'status' | 'progress' | 'pagesDone' | 'pagesFailed' | 'error'>>,
    ): Promise<MarkdownExportRow | undefined> {
      const [row] = await db
        .update(markdownExports)
        .set({ ...fields, finishedAt: now, workerId: null, heartbeatAt: null, updatedAt: now })
        .where(held(id, workerId))
        .returning();
      return row;
    },
    /** A run stopped by shutdown goes back to PENDING. */
    async release(id: string, workerId: string, now: Date): Promise<MarkdownExportRow | undefined> {
      const [row] = await db
        .update(markdownExports)
        .set({ status: 'PENDING', workerId: null, heartbeatAt: null, updatedAt: now })
        .where(held(id, workerId))
        .returning();
      return row;
    },
    async cancel(userId: string, id: string, now: Date): Promise<MarkdownExportRow | undefined> {
      const [row] = await db
        .update(markdownExports)
        .set({ status: 'CANCELLED', finishedAt: now, workerId: null, heartbeatAt: null, updatedAt: now })
        .where(and(mine(userId, id), inArray(markdownExports.status, [...ACTIVE])))
        .returning();
      return row;
    },
    async deleteFinished(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(markdownExports)
        .where(and(mine(userId, id), inArray(markdownExports.status, [...FINISHED])))
        .returning({ id: markdownExports.id });
      return rows.length > 0;
    },
    /** A finished export → PENDING again (`retryFailedOnly`: fetch its FAILED pages only). */
    async requeue(userId: string, id: string, retryFailedOnly: boolean, now: Date) {
      const [row] = await db
        .update(markdownExports)
        .set({ status: 'PENDING', retryFailedOnly, error: null, finishedAt: null, attempts: 0, updatedAt: now })
        .where(and(mine(userId, id), inArray(markdownExports.status, [...FINISHED])))
        .returning();
      return row;
    },

    /** Stores pages (a FAILED one is replaced); the URLs stored now that were not exported before. */
    async storePages(exportId: string, userId: string, pages: StoredPage[], now: Date): Promise<string[]> {
      if (!pages.length) return [];
      const rows = await db
        .insert(markdownExportPages)
        .values(pages.map((p) => ({ ...p, exportId, userId, status: 'OK' as const, error: null, fetchedAt: now })))
        .onConflictDoUpdate({
          target: [markdownExportPages.exportId, markdownExportPages.url],
          set: {
            status: 'OK',
            title: sql`excluded.title`,
            markdown: sql`excluded.markdown`,
            depth: sql`excluded.depth`,
            error: null,
            fetchedAt: sql`excluded.fetched_at`,
          },
          setWhere: eq(markdownExportPages.status, 'FAILED'),
        })
        .returning({ url: markdownExportPages.url });
      return rows.map((r) => r.url);
    },
    /** Records a page that failed for good (an exported page stays as it is). */
    async storeFailure(exportId: string, userId: string, url: string, error: string, now: Date): Promise<void> {
      await db
        .insert(markdownExportPages)
        .values({ exportId, userId, url, status: 'FAILED', error, fetchedAt: now })
        .onConflictDoUpdate({
          target: [markdownExportPages.exportId, markdownExportPages.url],
          set: { error, fetchedAt: now },
          setWhere: eq(markdownExportPages.status, 'FAILED'),
        });
    },
    async pageCounts(exportId: string): Promise<{ done: number; failed: number }> {
      const rows = await db
        .select({ status: markdownExportPages.status, n: count() })
        .from(markdownExportPages)
        .where(eq(markdownExportPages.exportId, exportId))
        .groupBy(markdownExportPages.status);
      const of = (s: string) => Number(rows.find((r) => r.status === s)?.n ?? 0);
      return { done: of('OK'), failed: of('FAILED') };
    },
    async failedUrls(exportId: string): Promise<string[]> {
      const rows = await db
        .select({ url: markdownExportPages.url })
        .from(markdownExportPages)
        .where(and(eq(markdownExportPages.exportId, exportId), eq(markdownExportPages.status, 'FAILED')))
        .orderBy(asc(markdownExportPages.id));
      return rows.map((r) => r.url);
    },
    listPages(exportId: string, limit: number, afterId?: string, status?: 'OK' | 'FAILED') {
      return db
        .select()
        .from(markdownExportPages)
        .where(
          and(
            eq(markdownExportPages.exportId, exportId),
            afterId ? sql`${markdownExportPages.id} > ${afterId}` : undefined,
            status ? eq(markdownExportPages.status, status) : undefined,
          ),
        )
        .orderBy(asc(markdownExportPages.id))
        .limit(limit + 1);
    },
    /** Exported pages in the order they were stored, `batch` at a time after `afterId`. */
    okPages(exportId: string, batch: number, afterId?: string): Promise<MarkdownPageRow[]> {
      return db
        .select()
        .from(markdownExportPages)
        .where(
          and(
            eq(markdownExportPages.exportId, exportId),
            eq(markdownExportPages.status, 'OK'),
            afterId ? sql`${markdownExportPages.id} > ${afterId}` : undefined,
          ),
        )
        .orderBy(asc(markdownExportPages.id))
        .limit(batch);
    },

    /** Crash recovery: RUNNING exports whose heartbeat stopped go back to PENDING, or fail after `maxAttempts`. */
    async recoverStale(staleBefore: Date, now: Date, maxAttempts: number) {
      const stale = staleRunning(markdownExports, staleBefore);
      const error = `The worker running this export stopped responding ${maxAttempts} times; it was not started again.`;
      const failed = await failExhaustedRuns(db, markdownExports, stale, { now, maxAttempts, failure: { error } });
      const requeued = await requeueStaleRuns(db, markdownExports, stale, { now, maxAttempts });
      return { failed, requeued };
    },
    /** Embedded database only: every RUNNING export is an orphan of the previous process. */
    requeueAllRunning: (now: Date): Promise<string[]> => requeueAllRunning(db, markdownExports, now),
  };
}
