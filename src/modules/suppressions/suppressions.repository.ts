import { and, desc, eq, getTableColumns, ilike, lt, or, type SQL, sql } from 'drizzle-orm';
import { equalsAny } from '../../db/array-literal.ts';
import type { Db, Tx } from '../../db/client.ts';
import { type SuppressionSource, type SuppressionType, suppressions } from '../../db/schema/index.ts';

export type SuppressionRow = typeof suppressions.$inferSelect;

export interface SuppressionEntry {
  type: SuppressionType;
  /** Already normalized (src/shared/mail/address.ts). */
  value: string;
  reason?: string | null;
  source?: SuppressionSource;
}

export interface SuppressionFilters {
  q?: string;
  type?: SuppressionType;
  source?: SuppressionSource;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export function suppressionRepository(db: Db | Tx) {
  return {
    async list(userId: string, filters: SuppressionFilters, limit: number, after?: string) {
      const where: SQL[] = [eq(suppressions.userId, userId)];
      if (filters.q) where.push(ilike(suppressions.value, `%${escapeLike(filters.q.toLowerCase())}%`));
      if (filters.type) where.push(eq(suppressions.type, filters.type));
      if (filters.source) where.push(eq(suppressions.source, filters.source));
      if (after) where.push(lt(suppressions.id, after));
      return db
        .select()
        .from(suppressions)
        .where(and(...where))
        .orderBy(desc(suppressions.id))
        .limit(limit + 1);
    },

    /** Entries matching any of the addresses (by themselves) or domains (given with their parents). */
    async matching(userId: string, emails: string[], domains: string[]): Promise<SuppressionRow[]> {
      const clauses: SQL[] = [];
      if (emails.length)
        clauses.push(and(eq(suppressions.type, 'email'), equalsAny(suppressions.value, emails, 'text'))!);
      if (domains.length)
        clauses.push(and(eq(suppressions.type, 'domain'), equalsAny(suppressions.value, domains, 'text'))!);
      if (!clauses.length) return [];
      return db
        .select()
        .from(suppressions)
        .where(and(eq(suppressions.userId, userId), or(...clauses)));
    },

    /**
     * Inserts the entries, merging each into an existing one of the same type and value (its reason and
     * source are replaced when given). `inserted` tells new rows from merged ones.
     */
    async upsert(userId: string, entries: SuppressionEntry[], now: Date) {
      if (!entries.length) return [];
      return db
        .insert(suppressions)
        .values(
          entries.map((e) => ({
            userId,
            type: e.type,
            value: e.value,
            reason: e.reason ?? null,
            source: e.source ?? 'manual',
            createdAt: now,
            updatedAt: now,
          })),
        )
        .onConflictDoUpdate({
          target: [suppressions.userId, suppressions.type, suppressions.value],
          set: {
            reason: sql`coalesce(excluded.reason, ${suppressions.reason})`,
            source: sql`excluded.source`,
            updatedAt: now,
          },
        })
        .returning({ ...getTableColumns(suppressions), inserted: sql<boolean>`(xmax = 0)` });
    },

    async find(userId: string, id: string) {
      const rows = await db
        .select()
        .from(suppressions)
        .where(and(eq(suppressions.userId, userId), eq(suppressions.id, id)));
      return rows[0];
    },

    async remove(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(suppressions)
        .where(and(eq(suppressions.userId, userId), eq(suppressions.id, id)))
        .returning({ id: suppressions.id });
      return rows.length > 0;
    },
  };
}
