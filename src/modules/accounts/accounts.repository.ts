import { type SQL, sql } from 'drizzle-orm';
import { type Db, queryRows } from '../../db/client.ts';
import { type LeadStatus, leadStatuses } from '../../db/schema/index.ts';
import { newId } from '../../shared/ids.ts';
import { accountKeySql, describeAccountKey, freeDomainJoinSql } from './account-key.ts';
import { ACCOUNT_TITLES_SHOWN, type AccountSort } from './accounts.schemas.ts';

/** One computed account, as the aggregate query returns it. */
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

/**
 * The caller's leads with their account key, optionally only those of one key. Cheap necessary
 * conditions go first, so the company normalisation (regular expressions) runs only for candidates:
 * the email domain for a domain key; for a company key, each word of the normalized name, which is
 * a piece of the lower-cased company name (normalizing only turns punctuation into spaces and drops words).
 */
function keyedLeads(userId: string, key: string | undefined, columns: SQL): SQL {
  let only = sql``;
  if (key) {
    const { kind, value } = describeAccountKey(key);
    const words = [...new Set(value.split(' ').filter(Boolean))];
    only =
      kind === 'domain'
        ? sql` AND lower(split_part(l.email, '@', 2)) = ${value} AND ${accountKeySql()} = ${key}`
        : sql` AND l.company IS NOT NULL${sql.join(words.map((w) => sql` AND strpos(lower(l.company), ${w}) > 0`))} AND ${accountKeySql()} = ${key}`;
  }
  return sql`SELECT ${accountKeySql()} AS account_key, ${columns} FROM leads l ${freeDomainJoinSql()} WHERE l.user_id = ${userId}${only}`;
}

const ORDER: Record<AccountSort, SQL> = {
  leadCount: sql.raw(`lead_count DESC, account_key COLLATE "C" ASC`),
  lastActivity: sql.raw(`last_us DESC, account_key COLLATE "C" ASC`),
  name: sql.raw(`sort_name ASC, account_key COLLATE "C" ASC`),
};

function afterCursor(sort: AccountSort, cursor: AccountCursor): SQL {
  const key = sql`account_key COLLATE "C" > ${cursor.key}`;
  if (sort === 'leadCount')
    return sql`(lead_count < ${Number(cursor.value)} OR (lead_count = ${Number(cursor.value)} AND ${key}))`;
  if (sort === 'lastActivity')
    return sql`(last_us < ${String(cursor.value)}::bigint OR (last_us = ${String(cursor.value)}::bigint AND ${key}))`;
  return sql`(sort_name > ${String(cursor.value)} OR (sort_name = ${String(cursor.value)} AND ${key}))`;
}

export function accountRepository(db: Db) {
  /**
   * Accounts of the caller in one statement: the leads are keyed once (materialized), grouped, joined
   * with their metadata, filtered and sorted; the job titles are then counted for the page only.
   */
  async function query(
    userId: string,
    options: { key?: string; filters?: AccountFilters; sort: AccountSort; cursor?: AccountCursor; limit: number },
  ) {
    const { key, filters = {}, sort, cursor, limit } = options;
    const statusCounts = sql.raw(
      `ARRAY[${leadStatuses.map((s) => `count(*) FILTER (WHERE k.status = '${s}')`).join(', ')}]::int[]`,
    );
    const where: SQL[] = [];
    if (filters.q) {
      const pattern = likePattern(filters.q);
      where.push(sql`(name ILIKE ${pattern} OR substr(account_key, strpos(account_key, ':') + 1) ILIKE ${pattern})`);
    }
    if (filters.tag) where.push(sql`${filters.tag} = ANY(tags)`);
    if (filters.minLeads) where.push(sql`lead_count >= ${filters.minLeads}`);
    if (cursor) where.push(afterCursor(sort, cursor));
    const whereSql = where.length ? sql`WHERE ${sql.join(where, sql` AND `)}` : sql``;
    return queryRows<AccountRow>(
      db,
      sql`
      WITH keyed AS MATERIALIZED (
        ${keyedLeads(userId, key, sql`l.company, l.job_title, l.status, l.source_id, l.created_at, l.updated_at`)}
      ), grouped AS (
        SELECT k.account_key,
          coalesce(mode() WITHIN GROUP (ORDER BY nullif(btrim(k.company), '')), substr(k.account_key, strpos(k.account_key, ':') + 1)) AS name,
          count(*)::int AS lead_count,
          count(DISTINCT k.source_id)::int AS source_count,
          ${statusCounts} AS status_counts,
          max(k.updated_at) AS last_activity_at,
          min(k.created_at) AS first_seen_at,
          (extract(epoch FROM max(k.updated_at)) * 1000000)::bigint AS last_us
        FROM keyed k WHERE k.account_key IS NOT NULL GROUP BY k.account_key
      ), page AS (
        SELECT * FROM (
          SELECT g.*, lower(g.name) AS sort_name, m.notes, m.tags
          FROM grouped g LEFT JOIN account_metadata m ON m.user_id = ${userId} AND m.account_key = g.account_key
        ) a ${whereSql}
        ORDER BY ${ORDER[sort]} LIMIT ${limit}
      ), title_counts AS (
        SELECT account_key, btrim(job_title) AS title, count(*) AS n FROM keyed
        WHERE account_key IN (SELECT account_key FROM page) AND btrim(job_title) <> ''
        GROUP BY 1, 2
      ), top_titles AS (
        SELECT account_key, array_agg(title ORDER BY n DESC, title) AS titles FROM (
          SELECT *, row_number() OVER (PARTITION BY account_key ORDER BY n DESC, title) AS rank FROM title_counts
        ) t WHERE rank <= ${ACCOUNT_TITLES_SHOWN} GROUP BY account_key
      )
      SELECT account_key, p.name, p.lead_count, p.source_count, p.status_counts, coalesce(t.titles, '{}'::text[]) AS titles,
        p.last_activity_at, p.first_seen_at, p.last_us, p.last_us::text AS last_us_text, p.sort_name, p.notes, p.tags
      FROM page p LEFT JOIN top_titles t USING (account_key)
      ORDER BY ${ORDER[sort]}`,
    );
  }

  return {
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
      return queryRows<AccountLeadRow>(
        db,
        sql`
        WITH keyed AS (${keyedLeads(userId, key, sql`l.id, l.first_name, l.last_name, l.email, l.job_title, l.status, l.updated_at`)})
        SELECT id, first_name, last_name, email, job_title, status, updated_at FROM keyed
        ORDER BY updated_at DESC, id DESC LIMIT ${limit}`,
      );
    },

    /** The account's most recently updated leads, with the data of the profiles made from them. */
    sample(userId: string, key: string, limit: number): Promise<AccountSampleRow[]> {
      return queryRows<AccountSampleRow>(
        db,
        sql`
        WITH sample AS (
          SELECT * FROM (${keyedLeads(userId, key, sql`l.id, l.company, l.job_title, l.status, l.custom_fields, l.updated_at`)}) k
          ORDER BY updated_at DESC, id DESC LIMIT ${limit}
        )
        SELECT s.company, s.job_title, s.status, s.custom_fields,
          (SELECT jsonb_agg(p.data ORDER BY p.id) FROM profiles p WHERE p.user_id = ${userId} AND p.lead_id = s.id) AS profiles
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
        SELECT ${newId()}::uuid, ${userId}::uuid, ${key}, ${values.notes ?? null}, ${tags}, ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
        WHERE EXISTS (SELECT 1 FROM (${keyedLeads(userId, key, sql`l.id`)}) k)
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
