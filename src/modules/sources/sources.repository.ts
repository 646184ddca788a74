import { and, eq, inArray } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { profiles, profileTypes, projects, sources } from '../../db/schema/index.ts';

export type SourceRow = typeof sources.$inferSelect;
export type NewSource = typeof sources.$inferInsert;

/** Inserts sources in the caller's transaction, answering their ids and statuses. */
export async function insertSourceRows(tx: Tx, values: NewSource[]): Promise<Array<{ id: string; status: string }>> {
  if (!values.length) return [];
  return tx.insert(sources).values(values).returning({ id: sources.id, status: sources.status });
}

export function sourceRepository(db: Db) {
  return {
    async insertMany(values: NewSource[]): Promise<SourceRow[]> {
      return db.insert(sources).values(values).returning();
    },
    /** Newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    list(
      userId: string,
      filters: { status?: SourceRow['status']; projectId?: string },
      limit: number,
      before?: string,
    ): Promise<SourceRow[]> {
      const where = [
        filters.status ? eq(sources.status, filters.status) : undefined,
        filters.projectId ? eq(sources.projectId, filters.projectId) : undefined,
      ];
      return newestFirstPage(db, sources, userId, where, limit, before);
    },
    async find(userId: string, id: string): Promise<SourceRow | undefined> {
      const [row] = await db
        .select()
        .from(sources)
        .where(and(eq(sources.userId, userId), eq(sources.id, id)))
        .limit(1);
      return row;
    },
    /** With `expectedStatus`, only when the status is still that one (compare-and-set). */
    async update(
      userId: string,
      id: string,
      values: Partial<NewSource>,
      expectedStatus?: SourceRow['status'],
    ): Promise<SourceRow | undefined> {
      const [row] = await db
        .update(sources)
        .set(values)
        .where(
          and(
            eq(sources.userId, userId),
            eq(sources.id, id),
            expectedStatus ? eq(sources.status, expectedStatus) : undefined,
          ),
        )
        .returning();
      return row;
    },
    /** The source, its jobs and leads (ON DELETE CASCADE), and the profiles it produced, in one transaction. */
    async deleteWithData(userId: string, id: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        await tx.delete(profiles).where(and(eq(profiles.userId, userId), eq(profiles.sourceId, id)));
        const rows = await tx
          .delete(sources)
          .where(and(eq(sources.userId, userId), eq(sources.id, id)))
          .returning({ id: sources.id });
        return rows.length > 0;
      });
    },
    async projectExists(userId: string, projectId: string): Promise<boolean> {
      const rows = await db
        .select({ id: projects.id })
        .from(projects)
        .where(and(eq(projects.userId, userId), eq(projects.id, projectId)))
        .limit(1);
      return rows.length > 0;
    },
    async profileTypesOwned(userId: string, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = await db
        .select({ id: profileTypes.id })
        .from(profileTypes)
        .where(and(eq(profileTypes.userId, userId), inArray(profileTypes.id, ids)));
      return new Set(rows.map((r) => r.id));
    },
  };
}
