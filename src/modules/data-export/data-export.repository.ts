import { and, desc, eq, inArray, lt, sql } from 'drizzle-orm';
import { type Db, queryRows } from '../../db/client.ts';
import { dataExports } from '../../db/schema/index.ts';
import type { ExportFormat } from './data-export.schemas.ts';

export type DataExportRow = typeof dataExports.$inferSelect;

/** Everything but the file itself. */
const metaColumns = {
  id: dataExports.id,
  userId: dataExports.userId,
  format: dataExports.format,
  status: dataExports.status,
  createdAt: dataExports.createdAt,
  completedAt: dataExports.completedAt,
  downloadExpiry: dataExports.downloadExpiry,
};
export type DataExportMeta = { [K in keyof typeof metaColumns]: DataExportRow[K] };

export function dataExportRepository(db: Db) {
  return {
    /**
     * Inserts a PENDING export unless the user already has `limit` accepted ones since `since`.
     * Serialised per user by an advisory lock, so concurrent requests cannot exceed the limit.
     */
    async createWithinLimit(input: { userId: string; format: ExportFormat; now: Date; since: Date; limit: number }) {
      return db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`export:${input.userId}`}))`);
        const [counted] = await queryRows<{ count: number; oldest: Date | string | null }>(
          tx,
          sql`
          SELECT count(*)::int AS count, min(created_at) AS oldest FROM ${dataExports}
          WHERE user_id = ${input.userId} AND created_at > ${input.since.toISOString()}`,
        );
        if (Number(counted!.count) >= input.limit) {
          return { ok: false as const, oldest: new Date(counted!.oldest ?? input.now) };
        }
        const [row] = await tx
          .insert(dataExports)
          .values({ userId: input.userId, format: input.format, status: 'PENDING', createdAt: input.now })
          .returning(metaColumns);
        return { ok: true as const, row: row! };
      });
    },
    listForUser(userId: string, beforeId: string | undefined, limit: number): Promise<DataExportMeta[]> {
      return db
        .select(metaColumns)
        .from(dataExports)
        .where(and(eq(dataExports.userId, userId), beforeId ? lt(dataExports.id, beforeId) : undefined))
        .orderBy(desc(dataExports.id))
        .limit(limit);
    },
    async findMeta(id: string): Promise<DataExportMeta | undefined> {
      const [row] = await db.select(metaColumns).from(dataExports).where(eq(dataExports.id, id)).limit(1);
      return row;
    },
    async findForUser(userId: string, id: string): Promise<DataExportRow | undefined> {
      const [row] = await db
        .select()
        .from(dataExports)
        .where(and(eq(dataExports.id, id), eq(dataExports.userId, userId)))
        .limit(1);
      return row;
    },
    /** PENDING (or a PROCESSING attempt that is being retried) → PROCESSING; false when the row is gone or done. */
    async claim(id: string): Promise<boolean> {
      const rows = await db
        .update(dataExports)
        .set({ status: 'PROCESSING' })
        .where(and(eq(dataExports.id, id), inArray(dataExports.status, ['PENDING', 'PROCESSING'])))
        .returning({ id: dataExports.id });
      return rows.length > 0;
    },
    async complete(
      id: string,
      file: { content: Buffer; contentType: string; fileName: string },
      at: Date,
      expiry: Date,
    ) {
      await db
        .update(dataExports)
        .set({
          ...file,
          sizeBytes: file.content.length,
          status: 'COMPLETED',
          error: null,
          completedAt: at,
          downloadExpiry: expiry,
        })
        .where(eq(dataExports.id, id));
    },
    async fail(id: string, error: string, final: boolean) {
      await db
        .update(dataExports)
        .set(final ? { status: 'FAILED', error } : { error })
        .where(eq(dataExports.id, id));
    },
    async remove(id: string) {
      await db.delete(dataExports).where(eq(dataExports.id, id));
    },
  };
}
