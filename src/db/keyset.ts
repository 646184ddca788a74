import { and, desc, eq, lt, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from './client.ts';

/** A table whose rows belong to a user and are keyed by a time-ordered (UUIDv7) id. */
export type UserOwnedTable = PgTable & { id: PgColumn; userId: PgColumn };

/**
 * One keyset page of a user's rows, newest first (id DESC): those matching every one of `filters`
 * (an `undefined` entry is no condition, so `status ? eq(t.status, status) : undefined` reads as
 * an optional filter) with an id below `before`. `limit + 1` rows, so the caller can tell whether
 * another page exists (see `pageOf`).
 */
export function newestFirstPage<T extends UserOwnedTable>(
  db: Db,
  table: T,
  userId: string,
  filters: Array<SQL | undefined>,
  limit: number,
  before?: string,
): Promise<Array<T['$inferSelect']>> {
  // `select().from(T)` over a generic table does not resolve its row type; the caller's T does.
  return db
    .select()
    .from(table as PgTable)
    .where(and(eq(table.userId, userId), ...filters, before ? lt(table.id, before) : undefined))
    .orderBy(desc(table.id))
    .limit(limit + 1) as Promise<Array<T['$inferSelect']>>;
}
