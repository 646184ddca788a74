import { type SQL, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import { type LeadStatus, leadStatuses } from '../../db/schema/index.ts';
import { pgErrorCode } from '../../shared/db-errors.ts';
import { AppError } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { ACCOUNT_TITLES_SHOWN, type AccountSort } from './accounts.schemas.ts';

/** One account, as its rollup row holds it. */
export interface AccountRow {
  account_key: string;
  name: string;
  lead_count: number;
  source_count: number;
  /** Counts in `leadStatuses` order. */
  status_counts: number[];
  titles: string[];
  last_activity_at: Date | string;
  first_seen_at: Date | string;
  /** max(updated_at) in microseconds, as text: exact, for the lastActivity cursor (a JS Date keeps only ms). */
  last_us_text: string;
  sort_name: string;
  notes: string | null;
  tags: string[] | null;
}

export interface AccountFilters {
  q?: string;
  tag?: string;
  minLeads?: number;
}

/** Where the previous page ended: the sort value and the key of its last account. */
export interface AccountCursor {
  value: string | number;
  key: string;
}

export interface AccountLeadRow {
  id: string;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  job_title: string | null;
  status: LeadStatus;
  updated_at: Date | string;
}

/** What the commonalities prompt is built from: a sample of the account's leads with their profiles' data. */
export interface AccountSampleRow {
  company: string | null;
  job_title: string | null;
  status: LeadStatus;
  custom_fields: Record<string, unknown> | null;
  profiles: Array<Record<string, unknown>> | null;
}

const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const ORDER: Record<AccountSort, SQL> = {
  // NULLS LAST as the indexes are built (the columns are NOT NULL): else the planner sorts every rollup.
  leadCount: sql.raw(`r.lead_count DESC NULLS LAST, r.account_key COLLATE "C" ASC`),
  lastActivity: sql.raw(`r.last_activity_us DESC NULLS LAST, r.account_key COLLATE "C" ASC`),
  name: sql.raw(`r.sort_name ASC, r.account_key COLLATE "C" ASC`),
};

function afterCursor(sort: AccountSort, cursor: AccountCursor): SQL {
  const key = sql`r.account_key COLLATE "C" > ${cursor.key}`;
  if (sort === 'leadCount') {
    const n = Number(cursor.value);
    return sql`(r.lead_count < ${n} OR (r.lead_count = ${n} AND ${key}))`;
  }
  if (sort === 'lastActivity') {
    const us = sql`${String(cursor.value)}::bigint`;
    return sql`(r.last_activity_us < ${us} OR (r.last_activity_us = ${us} AND ${key}))`;
  }
  return sql`(r.sort_name > ${String(cursor.value)} OR (r.sort_name = ${String(cursor.value)} AND ${key}))`;
}

const statusCounts = sql.raw(
  `ARRAY[${leadStatuses.map((s) => `count(*) FILTER (WHERE l.status = '${s}')`).join(', ')}]::int[]`,
);

/** How long a read waits for another refresh of the same user's accounts before answering 503. */
const REFRESH_WAIT_SECONDS = 10;

/** Serializes one user's rollup refreshes (the marks a refresh deletes are the ones it recomputes). */
const refreshLock = (userId: string) => sql`SELECT pg_advisory_xact_lock(hashtextextended(${`accounts:${userId}`}, 0))`;

/**
 * Recomputes the rollups of the accounts marked since the last refresh, in one statement: the marks it
 * can see are deleted and their accounts regrouped from the leads, all in the same snapshot, so a mark
 * written by a transaction still open survives for the next refresh. Accounts left without leads go.
 */
const refreshStatement = (userId: string) => sql`
  WITH marked AS (
    DELETE FROM account_rollup_marks WHERE user_id = ${userId} RETURNING account_key
  ), keys AS (
    SELECT DISTINCT account_key FROM marked
  ), fresh AS (
    SELECT l.account_key,
      coalesce(mode() WITHIN GROUP (ORDER BY nullif(btrim(l.company), '')),
        substr(l.account_key, strpos(l.account_key, ':') + 1)) AS name,
      count(*)::int AS lead_count,
      count(DISTINCT l.source_id)::int AS source_count,
      ${statusCounts} AS status_counts,
      max(l.updated_at) AS last_activity_at,
      min(l.created_at) AS first_seen_at
    FROM leads l
    WHERE l.user_id = ${userId} AND l.account_key IN (SELECT account_key FROM keys)
    GROUP BY l.account_key
  ), title_counts AS (
    SELECT l.account_key, btrim(l.job_title) AS title, count(*) AS n FROM leads l
    WHERE l.user_id = ${userId} AND l.account_key IN (SELECT account_key FROM keys) AND btrim(l.job_title) <> ''
    GROUP BY 1, 2
  ), top_titles AS (
    SELECT account_key, array_agg(title ORDER BY n DESC, title) AS titles FROM (
      SELECT *, row_number() OVER (PARTITION BY account_key ORDER BY n DESC, title) AS rank FROM title_counts
    ) t WHERE rank <= ${ACCOUNT_TITLES_SHOWN} GROUP BY account_key
  ), saved AS (
    INSERT INTO account_rollups (user_id, account_key, name, sort_name, lead_count, source_count, status_counts,
      titles, last_activity_at, last_activity_us, first_seen_at)
    SELECT ${userId}::uuid, f.account_key, f.name, lower(f.name), f.lead_count, f.source_count, f.status_counts,
      coalesce(t.titles, '{}'::text[]), f.last_activity_at,
      (extract(epoch FROM f.last_activity_at) * 1000000)::bigint, f.first_seen_at
    FROM fresh f LEFT JOIN top_titles t USING (account_key)
    ON CONFLICT (user_id, account_key) DO UPDATE SET name = EXCLUDED.name, sort_name = EXCLUDED.sort_name,
      lead_count = EXCLUDED.lead_count, source_count = EXCLUDED.source_count,
      status_counts = EXCLUDED.status_counts, titles = EXCLUDED.titles,
      last_activity_at = EXCLUDED.last_activity_at, last_activity_us = EXCLUDED.last_activity_us,
      first_seen_at = EXCLUDED.first_seen_at
    RETURNING 1
  ), gone AS (
    DELETE FROM account_rollups r
    WHERE r.user_id = ${userId} AND r.account_key IN (SELECT account_key FROM keys)
      AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.account_key = r.account_key)
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM keys)::int AS accounts`;

/**
 * Holds the user's account rollups for the rest of the transaction (a refresh waits): the purge of a
 * user takes it first, so a refresh cannot deadlock with the cascade or insert a rollup for a user gone.
 */
export async function lockAccountRollups(tx: Db | Tx, userId: string): Promise<void> {
  await tx.execute(refreshLock(userId));
}

export function accountRepository(db: Db) {
  /** Brings the caller's rollups up to date with their leads; one cheap read when nothing changed. */
  async function refresh(userId: string): Promise<number> {
    const [pending] = await queryRows<{ any: boolean }>(
      db,
      sql`SELECT EXISTS (SELECT 1 FROM account_rollup_marks WHERE user_id = ${userId}) AS any`,
    );
    if (!pending?.any) return 0;
    return db.transaction(async (tx) => {
      // Waiting behind another refresh of the same user (a large import) holds a connection: bounded.
      await tx.execute(sql.raw(`SET LOCAL lock_timeout = '${REFRESH_WAIT_SECONDS}s'`));
      try {
        await tx.execute(refreshLock(userId));
      } catch (err) {
        if (pgErrorCode(err) !== '55P03') throw err;
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          'Your accounts are being recomputed after a large change; retry shortly',
          {
            headers: { 'retry-after': String(REFRESH_WAIT_SECONDS) },
          },
        );
      }
      const [row] = await queryRows<{ accounts: number }>(tx, refreshStatement(userId));
      return row?.accounts ?? 0;
    });
  }

  /** Accounts of the caller from their rollups (refreshed first), with their metadata, filtered and sorted. */
  async function query(
    userId: string,
    options: { key?: string; filters?: AccountFilters; sort: AccountSort; cursor?: AccountCursor; limit: number },
  ) {
    const { key, filters = {}, sort, cursor, limit } = options;
    await refresh(userId);
    const where: SQL[] = [sql`r.user_id = ${userId}`];
    if (key) where.push(sql`r.account_key = ${key}`);
    if (filters.q) {
      const pattern = likePattern(filters.q);
      where.push(
        sql`(r.name ILIKE ${pattern} OR substr(r.account_key, strpos(r.account_key, ':') + 1) ILIKE ${pattern})`,
      );
    }
    if (filters.tag) where.push(sql`${filters.tag} = ANY(m.tags)`);
    if (filters.minLeads) where.push(sql`r.lead_count >= ${filters.minLeads}`);
    if (cursor) where.push(afterCursor(sort, cursor));
    return queryRows<AccountRow>(
      db,
      sql`
      SELECT r.account_key, r.name, r.lead_count, r.source_count, r.status_counts, r.titles, r.last_activity_at,
        r.first_seen_at, r.last_activity_us::text AS last_us_text, r.sort_name, m.notes, m.tags
      FROM account_rollups r
      LEFT JOIN account_metadata m ON m.user_id = r.user_id AND m.account_key = r.account_key
      WHERE ${sql.join(where, sql` AND `)}
      ORDER BY ${ORDER[sort]} LIMIT ${limit}`,
    );
  }

  /** The caller's leads of one account (the `leads_user_account_idx` index), with `columns`. */
  const accountLeads = (userId: string, key: string, columns: SQL) =>
    sql`SELECT ${columns} FROM leads l WHERE l.user_id = ${userId} AND l.account_key = ${key}`;

  return {
    refresh,

    /** Users with accounts waiting to be recomputed (for the periodic refresh). */
    async usersWithMarks(limit: number): Promise<string[]> {
      const rows = await queryRows<{ user_id: string }>(
        db,
        sql`SELECT DISTINCT user_id FROM account_rollup_marks LIMIT ${limit}`,
      );
      return rows.map((r) => r.user_id);
    },

    /** One page of accounts (`limit + 1` rows so the caller can tell whether another page exists). */
    list(
      userId: string,
      filters: AccountFilters,
      sort: AccountSort,
      limit: number,
      cursor?: AccountCursor,
    ): Promise<AccountRow[]> {
      return query(userId, { filters, sort, cursor, limit: limit + 1 });
    },

    /** The account of `key`, or undefined when none of the caller's leads has that key. */
    async find(userId: string, key: string): Promise<AccountRow | undefined> {
      const [row] = await query(userId, { key, sort: 'leadCount', limit: 1 });
      return row;
    },

    /** The account's most recently updated leads. */
    leads(userId: string, key: string, limit: number): Promise<AccountLeadRow[]> {
      const columns = sql`l.id, l.first_name, l.last_name, l.email, l.job_title, l.status, l.updated_at`;
      return queryRows<AccountLeadRow>(
        db,
        sql`${accountLeads(userId, key, columns)} ORDER BY l.updated_at DESC, l.id DESC LIMIT ${limit}`,
      );
    },

    /** The account's most recently updated leads, with the data of the profiles made from them. */
    sample(userId: string, key: string, limit: number): Promise<AccountSampleRow[]> {
      const columns = sql`l.id, l.company, l.job_title, l.status, l.custom_fields, l.updated_at`;
      return queryRows<AccountSampleRow>(
        db,
        sql`
        WITH sample AS (
          ${accountLeads(userId, key, columns)} ORDER BY l.updated_at DESC, l.id DESC LIMIT ${limit}
        )
        SELECT s.company, s.job_title, s.status, s.custom_fields,
          (SELECT jsonb_agg(p.data ORDER BY p.id) FROM profiles p WHERE p.user_id = ${userId} AND p.lead_id = s.id)
            AS profiles
        FROM sample s ORDER BY s.updated_at DESC, s.id DESC`,
      );
    },

    /**
     * Stores notes and/or tags of the account in one statement, only while the caller still has a
     * lead with that key (no metadata for an account that does not exist). False when there is none.
     */
    async upsertMetadata(
      userId: string,
      key: string,
      values: { notes?: string | null; tags?: string[] },
      now: Date,
    ): Promise<boolean> {
      const setNotes = values.notes !== undefined;
      const setTags = values.tags !== undefined;
      const tags = sql`${sql.param(values.tags ?? [])}::text[]`;
      const rows = await queryRows<{ id: string }>(
        db,
        sql`
        INSERT INTO account_metadata (id, user_id, account_key, notes, tags, created_at, updated_at)
        SELECT ${newId()}::uuid, ${userId}::uuid, ${key}, ${values.notes ?? null}, ${tags},
          ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
        WHERE EXISTS (${accountLeads(userId, key, sql`1`)})
        ON CONFLICT (user_id, account_key) DO UPDATE SET
          notes = ${setNotes ? sql`EXCLUDED.notes` : sql`account_metadata.notes`},
          tags = ${setTags ? sql`EXCLUDED.tags` : sql`account_metadata.tags`},
          updated_at = EXCLUDED.updated_at
        RETURNING id`,
      );
      return rows.length > 0;
    },
  };
}
