import { sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import { leadStatDeltas } from '../../db/schema/index.ts';
import { int } from './analytics.repository.ts';

/**
 * The upkeep of the lead counts (`lead_stat_deltas`, docs/qualification.md "Analytics") and the totals other sections
 * read from them; the triggers of migration 0005 append, this folds.
 */
export function leadStatsRepository(db: Db | Tx) {
  return {
    /** Users with rows appended since their last compaction. */
    async usersToCompact(limit: number): Promise<string[]> {
      const rows = await queryRows<{ user_id: string }>(
        db,
        sql`SELECT DISTINCT user_id FROM ${leadStatDeltas} WHERE NOT compacted LIMIT ${limit}`,
      );
      return rows.map((r) => r.user_id);
    },

    /**
     * Folds the user's rows of every group that has new rows into one row per group (dropping groups that
     * sum to 0). One statement, one snapshot: rows appended meanwhile are left for the next pass. The
     * caller holds the user's lock (`lockUser`).
     */
    async compact(userId: string): Promise<number> {
      const rows = await queryRows<{ n: number }>(
        db,
        sql`
        WITH pending AS (
          SELECT DISTINCT source_id, day, kind, value FROM ${leadStatDeltas}
          WHERE user_id = ${userId} AND NOT compacted
        ), gone AS (
          DELETE FROM ${leadStatDeltas} d USING pending p
          WHERE d.user_id = ${userId} AND d.kind = p.kind AND d.day = p.day AND d.value = p.value
            AND d.source_id IS NOT DISTINCT FROM p.source_id
          RETURNING d.source_id, d.day, d.kind, d.value, d.n
        ), kept AS (
          INSERT INTO ${leadStatDeltas} (user_id, source_id, day, kind, value, n, compacted)
          SELECT ${userId}::uuid, source_id, day, kind, value, sum(n)::int, true FROM gone
          GROUP BY source_id, day, kind, value HAVING sum(n) <> 0
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM gone)::int AS n`,
      );
      return int(rows[0]?.n);
    },

    /**
     * Serialises compactions of one user and keeps the user from being deleted meanwhile (which would
     * break the foreign key of the rows written back); false when the user is gone.
     */
    async lockUser(userId: string): Promise<boolean> {
      await db.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`lead-stats:${userId}`}, 0))`);
      const rows = await queryRows(db, sql`SELECT 1 FROM users WHERE id = ${userId} FOR KEY SHARE`);
      return rows.length > 0;
    },

    /** Leads of every user now stored, and those created since `since` (a UTC day). */
    async platformLeadTotals(since: string) {
      const [r] = await queryRows<{ total: number; recent: number }>(
        db,
        sql`SELECT coalesce(sum(n), 0)::int AS total,
                   coalesce(sum(n) FILTER (WHERE day >= ${since}::date), 0)::int AS recent
            FROM ${leadStatDeltas} WHERE kind = 'status'`,
      );
      return { total: int(r?.total), createdLast7Days: int(r?.recent) };
    },

    /** Leads now stored per user, and those created since `since` (a UTC day). */
    async leadTotals(userIds: string[], since: string) {
      const ids = sql.join(
        userIds.map((id) => sql`${id}::uuid`),
        sql`, `,
      );
      const rows = await queryRows<{ user_id: string; total: number; recent: number }>(
        db,
        sql`SELECT user_id, sum(n)::int AS total,
                   coalesce(sum(n) FILTER (WHERE day >= ${since}::date), 0)::int AS recent
            FROM ${leadStatDeltas} WHERE kind = 'status' AND user_id IN (${ids})
            GROUP BY user_id`,
      );
      return new Map(rows.map((r) => [r.user_id, { total: int(r.total), recent: int(r.recent) }]));
    },
  };
}
