import { and, eq } from 'drizzle-orm';
import type { Db } from '../../../db/client.ts';
import { newestFirstPage } from '../../../db/keyset.ts';
import { sourceTemplates } from '../../../db/schema/index.ts';

export type TemplateRow = typeof sourceTemplates.$inferSelect;
export type NewTemplate = typeof sourceTemplates.$inferInsert;

/** The only writer of `source_templates`; every query is scoped to the owner. */
export function templateRepository(db: Db) {
  const mine = (userId: string, id: string) => and(eq(sourceTemplates.userId, userId), eq(sourceTemplates.id, id));
  return {
    async insert(values: NewTemplate): Promise<TemplateRow> {
      const [row] = await db.insert(sourceTemplates).values(values).returning();
      return row!;
    },
    /** Newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    list: (userId: string, limit: number, before?: string): Promise<TemplateRow[]> =>
      newestFirstPage(db, sourceTemplates, userId, [], limit, before),
    async find(userId: string, id: string): Promise<TemplateRow | undefined> {
      const [row] = await db.select().from(sourceTemplates).where(mine(userId, id)).limit(1);
      return row;
    },
    async remove(userId: string, id: string): Promise<boolean> {
      const rows = await db.delete(sourceTemplates).where(mine(userId, id)).returning({ id: sourceTemplates.id });
      return rows.length > 0;
    },
  };
}
