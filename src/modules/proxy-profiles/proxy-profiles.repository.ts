import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { browserSessions, markdownExports, proxyProfiles, sources } from '../../db/schema/index.ts';

export type ProxyProfileRow = typeof proxyProfiles.$inferSelect;

/** What still uses a profile, by kind, for the 409 of a delete. */
export interface ProxyProfileUsers {
  sources: string[];
  markdownExports: string[];
  browserSessions: string[];
}

/** The only writer of `proxy_profiles`; it reads the tables that name a profile for the in-use check. */
export function proxyProfileRepository(db: Db) {
  const own = (userId: string, id: string) => and(eq(proxyProfiles.userId, userId), eq(proxyProfiles.id, id));

  return {
    async insert(values: typeof proxyProfiles.$inferInsert): Promise<ProxyProfileRow> {
      const [row] = await db.insert(proxyProfiles).values(values).returning();
      return row!;
    },

    list: (userId: string, before: string | undefined, limit: number): Promise<ProxyProfileRow[]> =>
      newestFirstPage(db, proxyProfiles, userId, [], limit, before),

    async find(userId: string, id: string): Promise<ProxyProfileRow | undefined> {
      const [row] = await db.select().from(proxyProfiles).where(own(userId, id)).limit(1);
      return row;
    },

    /**
     * Sources naming the profile, and exports and browser sessions that run with it now (finished ones keep the
     * id as history). Sources also hold a foreign key (ON DELETE RESTRICT), so a race still cannot detach one.
     */
    async users(userId: string, id: string): Promise<ProxyProfileUsers> {
      const [src, exports, sessions] = await Promise.all([
        db
          .select({ id: sources.id })
          .from(sources)
          .where(and(eq(sources.userId, userId), eq(sources.proxyProfileId, id)))
          .limit(20),
        db
          .select({ id: markdownExports.id })
          .from(markdownExports)
          .where(
            and(
              eq(markdownExports.userId, userId),
              eq(markdownExports.proxyProfileId, id),
              inArray(markdownExports.status, ['PENDING', 'RUNNING']),
            ),
          )
          .limit(20),
        db
          .select({ id: browserSessions.id })
          .from(browserSessions)
          .where(
            and(
              eq(browserSessions.userId, userId),
              sql`lower(${browserSessions.proxyProfileId}) = ${id}`,
              inArray(browserSessions.status, ['STARTING', 'LIVE', 'SLEEPING']),
            ),
          )
          .limit(20),
      ]);
      return {
        sources: src.map((r) => r.id),
        markdownExports: exports.map((r) => r.id),
        browserSessions: sessions.map((r) => r.id),
      };
    },

    async delete(userId: string, id: string): Promise<boolean> {
      const rows = await db.delete(proxyProfiles).where(own(userId, id)).returning({ id: proxyProfiles.id });
      return rows.length > 0;
    },
  };
}
