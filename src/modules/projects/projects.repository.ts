import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { jobs, profiles, projects, sources } from '../../db/schema/index.ts';

export type ProjectRow = typeof projects.$inferSelect;

export function projectRepository(db: Db) {
  return {
    async insert(values: typeof projects.$inferInsert): Promise<ProjectRow> {
      const [row] = await db.insert(projects).values(values).returning();
      return row!;
    },
    /** Newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    list(userId: string, limit: number, before?: string): Promise<ProjectRow[]> {
      return newestFirstPage(db, projects, userId, [], limit, before);
    },
    /** By id whoever owns it: the service tells 403 (someone else's) from 404 (none). */
    async findAny(id: string): Promise<ProjectRow | undefined> {
      const [row] = await db.select().from(projects).where(eq(projects.id, id)).limit(1);
      return row;
    },
    async update(
      userId: string,
      id: string,
      values: Partial<typeof projects.$inferInsert>,
    ): Promise<ProjectRow | undefined> {
      const [row] = await db
        .update(projects)
        .set(values)
        .where(and(eq(projects.userId, userId), eq(projects.id, id)))
        .returning();
      return row;
    },
    /**
     * Deletes the project and everything under it in one transaction. Sources go by ON DELETE
     * CASCADE, and with them their jobs and leads; profiles only carry plain provenance ids, so the
     * ones found by the project's sources or their jobs are deleted explicitly first.
     */
    async deleteWithData(userId: string, id: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        const projectSources = sql`SELECT ${sources.id} FROM ${sources}
                                   WHERE ${sources.projectId} = ${id} AND ${sources.userId} = ${userId}`;
        await tx.delete(profiles).where(
          and(
            eq(profiles.userId, userId),
            sql`(${profiles.sourceId} IN (${projectSources})
                 OR ${profiles.jobId} IN (SELECT ${jobs.id} FROM ${jobs}
                                          WHERE ${jobs.sourceId} IN (${projectSources})))`,
          ),
        );
        const rows = await tx
          .delete(projects)
          .where(and(eq(projects.userId, userId), eq(projects.id, id)))
          .returning({ id: projects.id });
        return rows.length > 0;
      });
    },
  };
}
