import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { profileTypes } from '../../db/schema/index.ts';

export type ProfileTypeRow = typeof profileTypes.$inferSelect;

export function profileTypeRepository(db: Db) {
  return {
    async insert(values: typeof profileTypes.$inferInsert): Promise<ProfileTypeRow> {
      const [row] = await db.insert(profileTypes).values(values).returning();
      return row!;
    },
    /** Newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    list(userId: string, limit: number, before?: string): Promise<ProfileTypeRow[]> {
      return newestFirstPage(db, profileTypes, userId, [], limit, before);
    },
    /** Every type of the user, oldest first (export columns, stats). */
    all(userId: string): Promise<ProfileTypeRow[]> {
      return db.select().from(profileTypes).where(eq(profileTypes.userId, userId)).orderBy(profileTypes.id);
    },
    async find(userId: string, id: string): Promise<ProfileTypeRow | undefined> {
      const [row] = await db
        .select()
        .from(profileTypes)
        .where(and(eq(profileTypes.userId, userId), eq(profileTypes.id, id)))
        .limit(1);
      return row;
    },
    async update(
      userId: string,
      id: string,
      values: Partial<typeof profileTypes.$inferInsert>,
    ): Promise<ProfileTypeRow | undefined> {
      const [row] = await db
        .update(profileTypes)
        .set(values)
        .where(and(eq(profileTypes.userId, userId), eq(profileTypes.id, id)))
        .returning();
      return row;
    },
    /** Deletes the type; its profiles go with it (ON DELETE CASCADE), sources keep running untyped. */
    async delete(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(profileTypes)
        .where(and(eq(profileTypes.userId, userId), eq(profileTypes.id, id)))
        .returning({ id: profileTypes.id });
      return rows.length > 0;
    },
  };
}
