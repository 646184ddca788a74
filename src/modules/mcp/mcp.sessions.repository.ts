import { and, desc, eq, lt, notInArray, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { mcpSessions } from '../../db/schema/index.ts';

export type McpSessionRow = typeof mcpSessions.$inferSelect;

/** Subscriptions one session may hold: a client following more jobs than this opens another session. */
export const MAX_SUBSCRIPTIONS = 100;

export function mcpSessionsRepository(db: Db) {
  return {
    async insert(values: { id: string; userId: string; keyId: string; clientName: string | null }): Promise<void> {
      await db.insert(mcpSessions).values(values);
    },
    async find(id: string): Promise<McpSessionRow | undefined> {
      const [row] = await db.select().from(mcpSessions).where(eq(mcpSessions.id, id));
      return row;
    },
    /** Marks the session used, at most once a minute (a write per request would cost more than the request). */
    async touch(id: string, now: Date): Promise<void> {
      await db
        .update(mcpSessions)
        .set({ lastSeenAt: now })
        .where(and(eq(mcpSessions.id, id), lt(mcpSessions.lastSeenAt, new Date(now.getTime() - 60_000))));
    },
    async delete(id: string): Promise<void> {
      await db.delete(mcpSessions).where(eq(mcpSessions.id, id));
    },
    /** Forgets a key's sessions idle since `before` (run when the key opens a new one). */
    async deleteIdle(keyId: string, before: Date): Promise<void> {
      await db.delete(mcpSessions).where(and(eq(mcpSessions.keyId, keyId), lt(mcpSessions.lastSeenAt, before)));
    },
    /** Deletes the key's sessions beyond the `keep` most recently used; answers their ids. */
    async trim(keyId: string, keep: number): Promise<string[]> {
      const kept = db
        .select({ id: mcpSessions.id })
        .from(mcpSessions)
        .where(eq(mcpSessions.keyId, keyId))
        .orderBy(desc(mcpSessions.lastSeenAt), desc(mcpSessions.id))
        .limit(keep);
      const rows = await db
        .delete(mcpSessions)
        .where(and(eq(mcpSessions.keyId, keyId), notInArray(mcpSessions.id, kept)))
        .returning({ id: mcpSessions.id });
      return rows.map((r) => r.id);
    },
    /** False when the session already holds MAX_SUBSCRIPTIONS others. */
    async subscribe(id: string, uri: string): Promise<boolean> {
      const rows = await db
        .update(mcpSessions)
        .set({
          subscriptions: sql`CASE WHEN ${uri} = ANY(${mcpSessions.subscriptions}) THEN ${mcpSessions.subscriptions}
                                  ELSE array_append(${mcpSessions.subscriptions}, ${uri}::text) END`,
        })
        .where(
          and(
            eq(mcpSessions.id, id),
            sql`(${uri} = ANY(${mcpSessions.subscriptions}) OR cardinality(${mcpSessions.subscriptions}) < ${MAX_SUBSCRIPTIONS})`,
          ),
        )
        .returning({ id: mcpSessions.id });
      return rows.length > 0;
    },
    async unsubscribe(id: string, uri: string): Promise<void> {
      await db
        .update(mcpSessions)
        .set({ subscriptions: sql`array_remove(${mcpSessions.subscriptions}, ${uri}::text)` })
        .where(eq(mcpSessions.id, id));
    },
  };
}
