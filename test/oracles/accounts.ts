/**
 * Reference accounts for tests: a user's leads grouped from scratch, with the key computed now by
 * `account_key_of(email, company)` (not read from `leads.account_key`), as accounts were computed before
 * they had rollups. What GET /api/accounts answers must equal it after any sequence of writes.
 */
import { sql } from 'drizzle-orm';
import { type Db, queryRows } from '../../src/db/client.ts';
import { leadStatuses } from '../../src/db/schema/index.ts';
import { accountIdOf } from '../../src/modules/accounts/account-key.ts';

export interface OracleAccount {
  id: string;
  name: string;
  leadCount: number;
  sourceCount: number;
  titles: string[];
  statuses: Record<string, number>;
  lastActivityAt: string;
  firstSeenAt: string;
}

export async function oracleAccounts(db: Db, userId: string): Promise<OracleAccount[]> {
  const rows = await queryRows<{
    account_key: string;
    name: string;
    lead_count: number;
    source_count: number;
    statuses: string[];
    titles: string[] | null;
    last: Date;
    first: Date;
  }>(
    db,
    sql`
    WITH keyed AS (
      SELECT account_key_of(l.email, l.company) AS account_key, l.company, l.source_id, l.status, l.job_title,
        l.created_at, l.updated_at
      FROM leads l WHERE l.user_id = ${userId}
    )
    SELECT k.account_key,
      coalesce(mode() WITHIN GROUP (ORDER BY nullif(btrim(k.company), '')),
        substr(k.account_key, strpos(k.account_key, ':') + 1)) AS name,
      count(*)::int AS lead_count, count(DISTINCT k.source_id)::int AS source_count,
      array_agg(k.status) AS statuses,
      (SELECT array_agg(t.title ORDER BY t.n DESC, t.title) FROM (
          SELECT btrim(x.job_title) AS title, count(*)::int AS n FROM keyed x
          WHERE x.account_key = k.account_key AND btrim(x.job_title) <> '' GROUP BY 1
          ORDER BY n DESC, title LIMIT 10) t) AS titles,
      max(k.updated_at) AS last, min(k.created_at) AS first
    FROM keyed k WHERE k.account_key IS NOT NULL GROUP BY k.account_key`,
  );
  return rows
    .map((r) => ({
      id: accountIdOf(r.account_key),
      name: r.name,
      leadCount: r.lead_count,
      sourceCount: r.source_count,
      // Most frequent first, ties by title in the database's collation, as the service orders them.
      titles: r.titles ?? [],
      statuses: Object.fromEntries(leadStatuses.map((s) => [s, r.statuses.filter((x) => x === s).length])),
      lastActivityAt: new Date(r.last).toISOString(),
      firstSeenAt: new Date(r.first).toISOString(),
    }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));
}
