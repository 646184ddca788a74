import { and, asc, desc, eq, gt, gte, is, lt, type SQL, sql } from 'drizzle-orm';
import { PgDialect, PgTransaction, type PgUpdateSetSource } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { type Database, type Db, queryRows } from '../../db/client.ts';
import { freeMailDomains } from '../../db/free-mail-domains.ts';
import {
  type EmailValidationResult,
  jobs,
  type LeadProvenance,
  type LeadStatus,
  leads,
  sources,
} from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';

export type LeadRow = typeof leads.$inferSelect;
/** What the service writes; the account key is the database's to keep. */
export type LeadInsert = Omit<typeof leads.$inferInsert, 'accountKey'>;
export interface LeadWithRelations {
  lead: LeadRow;
  job: { id: string; name: string; status: string } | null;
  source: { id: string; name: string; url: string } | null;
}

/**
 * Whether an email's domain (SQL: `split_part(email, '@', 2)`) is free mail, or null when only SQL may say: no
 * email, or a domain that is not plain ASCII (JavaScript's and PostgreSQL's lower-casing may differ there).
 */
function freeMailOf(email: string | null, free: ReadonlySet<string>): boolean | null {
  if (email === null) return false;
  const domain = email.split('@')[1] ?? '';
  return /^[\x20-\x7e]*$/.test(domain) ? free.has(domain.toLowerCase()) : null;
}

/**
 * The distinct selector maps of a batch, each sent once (a row holds its index): both parameter formats (the JSON
 * parameter and COPY) use it, and the statement reads them back as one JSON array.
 */
function selectorSets() {
  const texts: string[] = [];
  const index = new Map<string, number>();
  return {
    indexOf(selectors: unknown): number | undefined {
      if (selectors === undefined) return undefined;
      const text = JSON.stringify(selectors);
      let k = index.get(text);
      if (k === undefined) {
        k = texts.push(text) - 1;
        index.set(text, k);
      }
      return k;
    },
    json: () => `[${texts.join(',')}]`,
  };
}

/**
 * insertScraped's parameter: one-letter keys, NULL columns left out, `sourceUrl` only when it is not the
 * provenance's `pageUrl`, an empty `customFields` left out, and each distinct `provenance.selectors` map sent
 * once (`selectorSets`, the row holds its index `k`): a scraped lead's JSON goes from ~540 to ~250 bytes.
 * The statement rebuilds exactly what it was given (jsonb orders an object's keys itself).
 */
function compactRows(rows: readonly ScrapedLead[]): { rows: string; selectorSets: string } {
  const free = freeMailDomains();
  const sets = selectorSets();
  const compact = rows.map((row) => {
    const { selectors, ...provenance } = row.provenance;
    const k = sets.indexOf(selectors);
    return {
      i: row.id,
      f: row.firstName ?? undefined,
      l: row.lastName ?? undefined,
      e: row.email ?? undefined,
      p: row.phone ?? undefined,
      c: row.company ?? undefined,
      t: row.jobTitle ?? undefined,
      u: row.sourceUrl === provenance.pageUrl ? undefined : row.sourceUrl,
      s: row.status,
      x: Object.keys(row.customFields).length ? row.customFields : undefined,
      v: provenance,
      k,
      a: row.createdAt,
      m: freeMailOf(row.email, free) ?? undefined,
    };
  });
  return { rows: JSON.stringify(compact), selectorSets: sets.json() };
}

/**
 * How insertScraped writes on the embedded database (`embeddedWrite`); PostgreSQL keeps the normal path (it may not
 * run as a superuser, and its figure passes: bench/NOTES-ingest.md).
 * - always (PGlite runs as superuser, one connection): the batch's three parents (user, source, job: the same ids for every row) are
 *   locked FOR KEY SHARE once, as the foreign keys' checks would lock them, and the rows go in with
 *   `session_replication_role = replica`, so the per-row RI triggers (one query per row and key, a quarter of the
 *   INSERT) do not fire; every other trigger on leads is ENABLE ALWAYS (migration 0033) and fires as before. The
 *   role is set back within the statement's transaction right after the INSERT (SET LOCAL: an error or rollback
 *   restores it too). A parent gone: the normal INSERT runs and fails on its foreign key as it always did.
 * - `copy` (the service's choice, in the process or in the worker thread, whose proxy carries the blob): the rows
 *   travel as COPY text through PGlite's `/dev/blob` into a session temp table instead of a jsonb parameter, which
 *   PGlite parses for ~30 % of the statement; the INSERT reads that table, which the commit empties (`COPY_TABLE`).
 *   Without it (bench/lead-insert.ts, tests) the jsonb parameter.
 * Both parts together take PGlite's INSERT from ~60 to ~37 µs a lead (bench/lead-insert.ts, bench/NOTES-ingest.md).
 */
export interface EmbeddedWrite {
  copy: boolean;
}

/** The embedded database's write path for scraped leads, or undefined on PostgreSQL. */
export function embeddedWrite(database: Pick<Database, 'kind' | 'pglite'>): EmbeddedWrite | undefined {
  return database.kind === 'pglite' ? { copy: true } : undefined;
}

/** COPY text format: NULL is \N; backslash, tab, newline and carriage return escaped. */
const copyField = (value: string | null | undefined): string =>
  value === null || value === undefined
    ? '\\N'
    : /[\\\t\n\r]/.test(value)
      ? value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'))
      : value;

/**
 * The session's temp table a COPY fills (the columns of `copyRows`, in order). ON COMMIT DELETE ROWS empties it at
 * each commit of a transaction that used it (in place: no new file, no catalog change, unlike TRUNCATE).
 */
const COPY_TABLE = `CREATE TEMP TABLE IF NOT EXISTS scraped_lead_batch (i uuid, f text, l text, e text, p text, c text,
  t text, u text, s text, x jsonb, pu text, sel text, vis boolean, v jsonb, k int, a int, m boolean)
  ON COMMIT DELETE ROWS`;

/**
 * insertScraped's rows as COPY text (the embedded path): the columns of `compactRows`, except that a provenance of
 * the usual shape (exactly `pageUrl`, `selector`, `visible`, besides `selectors`) travels as three plain columns
 * the statement builds the object from (no JSON to parse), any other as `v` (jsonb); and each distinct `createdAt`
 * is sent once (`stamps`, the row holds its 1-based index `a`): parsing a timestamp per row costs more than the row's
 * other fields.
 */
function copyRows(rows: readonly ScrapedLead[]): { text: string; selectorSets: string; stamps: string } {
  const free = freeMailDomains();
  const sets = selectorSets();
  const stamps: string[] = [];
  const stampIndex = new Map<number, number>();
  let text = '';
  for (const row of rows) {
    const { selectors, ...provenance } = row.provenance;
    const k = sets.indexOf(selectors);
    const ms = row.createdAt.getTime();
    let a = stampIndex.get(ms);
    if (a === undefined) {
      a = stamps.push(row.createdAt.toISOString());
      stampIndex.set(ms, a);
    }
    const { pageUrl, selector, visible } = provenance;
    const usual =
      typeof pageUrl === 'string' &&
      typeof selector === 'string' &&
      typeof visible === 'boolean' &&
      Object.keys(provenance).length === 3;
    const m = freeMailOf(row.email, free);
    text +=
      `${row.id}\t${copyField(row.firstName)}\t${copyField(row.lastName)}\t${copyField(row.email)}\t` +
      `${copyField(row.phone)}\t${copyField(row.company)}\t${copyField(row.jobTitle)}\t` +
      `${copyField(row.sourceUrl === pageUrl ? null : row.sourceUrl)}\t${copyField(row.status)}\t` +
      `${copyField(Object.keys(row.customFields).length ? JSON.stringify(row.customFields) : null)}\t` +
      (usual
        ? `${copyField(pageUrl)}\t${copyField(selector)}\t${visible ? 't' : 'f'}\t\\N\t`
        : `\\N\t\\N\t\\N\t${copyField(JSON.stringify(provenance))}\t`) +
      `${k === undefined ? '\\N' : k}\t${a}\t${m === null ? '\\N' : m ? 't' : 'f'}\n`;
  }
  return { text, selectorSets: sets.json(), stamps: `{${stamps.join(',')}}` };
}

/** PGlite transactions (their driver clients) whose temp table a COPY has filled. */
const copiedIn = new WeakSet<object>();

/**
 * The driver's own client under a drizzle PGlite handle (a COPY from a blob needs it): PGlite or its transaction, in
 * the process or the worker thread's proxy (src/db/pglite-worker.ts).
 */
function pgliteClient(db: Db): { exec(text: string, options: { blob: Blob }): Promise<unknown> } {
  const client = (db as unknown as { session?: { client?: { exec?: unknown } } }).session?.client;
  if (typeof client?.exec !== 'function') throw new Error('insertScraped: no PGlite client under this handle');
  return client as never;
}

/** A lead found by a scrape job; `ScrapedLeadOwner` holds what all leads of one job share. */
export interface ScrapedLead {
  id: string;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  phone: string | null;
  company: string | null;
  jobTitle: string | null;
  sourceUrl: string;
  status: LeadStatus;
  customFields: Record<string, string>;
  provenance: LeadProvenance;
  createdAt: Date;
}
export interface ScrapedLeadOwner {
  userId: string;
  sourceId: string;
  jobId: string;
}

export interface LeadFilters {
  status?: LeadStatus;
  company?: string;
  jobId?: string;
  sourceId?: string;
  tag?: string;
  q?: string;
}

/** Statuses the email validation may move a lead out of; later pipeline states are kept. */
export const VALIDATION_STATUSES: readonly LeadStatus[] = ['NEW', 'VALID', 'INVALID', 'RISKY'];
const validationStatusList = sql.raw(VALIDATION_STATUSES.map((s) => `'${s}'`).join(', '));

const listColumns = {
  id: leads.id,
  firstName: leads.firstName,
  lastName: leads.lastName,
  email: leads.email,
  phone: leads.phone,
  company: leads.company,
  jobTitle: leads.jobTitle,
  status: leads.status,
  tags: leads.tags,
  sourceUrl: leads.sourceUrl,
  createdAt: leads.createdAt,
};
export type LeadListRow = { [K in keyof typeof listColumns]: LeadRow[K] };

const idIn = (ids: string[]) => sql`${leads.id} = ANY(${sql.param(ids)}::uuid[])`;

/**
 * The leads list's WHERE: every filter an equality on a column of one of the (user_id, …, id) indexes (or
 * (job_id, id)), so a newest-first scan stops after its limit; the company filter compares `lower(company)` to match
 * `leads_user_company_idx`. `v` renders each given value: a bind parameter by default, a literal for COPY.
 */
function listWhere(
  userId: string,
  filters: LeadFilters,
  cursor: string | undefined,
  v: (value: string) => string | SQL = (value) => value,
  floor?: string,
  ascending = false,
): SQL {
  const where: SQL[] = [eq(leads.userId, v(userId))];
  if (filters.company !== undefined) where.push(sql`lower(${leads.company}) = lower(${v(filters.company)})`);
  if (filters.status) where.push(eq(leads.status, v(filters.status) as LeadStatus | SQL));
  if (filters.jobId) where.push(eq(leads.jobId, v(filters.jobId)));
  if (filters.sourceId) where.push(eq(leads.sourceId, v(filters.sourceId)));
  // `<> '{}'` implies nothing new (a lead with the tag has tags) but lets the planner use the partial GIN index.
  if (filters.tag !== undefined)
    where.push(sql`${leads.tags} @> ARRAY[${v(filters.tag)}::text] AND ${leads.tags} <> '{}'::text[]`);
  if (filters.q !== undefined) {
    // A substring of the name, email, company or title, any case. No index serves it: the scan walks the caller's
    // leads newest first until the page is full, so it stays cheap when matches are common and other filters narrow.
    const pattern = `%${filters.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push(
      sql`concat_ws(' ', ${leads.firstName}, ${leads.lastName}, ${leads.email}, ${leads.company}, ${leads.jobTitle}) ILIKE ${v(pattern)}`,
    );
  }
  if (cursor) where.push(ascending ? gt(leads.id, v(cursor)) : lt(leads.id, v(cursor)));
  if (floor) where.push(gte(leads.id, v(floor)));
  return and(...where)!;
}

/**
 * The columns of a COPY-out of leads, in order (those of the leads list), with their types as `regtype` spells them:
 * a binary COPY is read back only into columns of exactly these types.
 */
export const LEAD_COPY_COLUMNS = [
  ['id', 'uuid'],
  ['first_name', 'text'],
  ['last_name', 'text'],
  ['email', 'text'],
  ['phone', 'text'],
  ['company', 'text'],
  ['job_title', 'text'],
  ['status', 'text'],
  ['tags', 'text[]'],
  ['source_url', 'text'],
  ['created_at', 'timestamp with time zone'],
] as const;
export type CopyFormat = 'csv' | 'binary';

/**
 * `COPY (SELECT …) TO STDOUT` of the leads of the list in [floor, before), newest first, as CSV or binary. COPY takes
 * no bind parameters, so every value is rendered as a literal by the pg driver's own escaping (`escapeLiteral`,
 * which also handles backslashes whatever standard_conforming_strings says); the ids are checked to be uuids first.
 */
export function leadsCopyOutStatement(
  userId: string,
  filters: LeadFilters,
  before: string,
  floor: string,
  format: CopyFormat,
): string {
  for (const [field, id] of Object.entries({ userId, before, floor, jobId: filters.jobId, sourceId: filters.sourceId }))
    if (id !== undefined && !isUuid(id)) throw new Error(`leadsCopyOutStatement: ${field} is not a uuid`);
  const where = listWhere(userId, filters, before, (x) => sql.raw(pg.escapeLiteral(x)), floor);
  // The casts change nothing but pin the types a binary COPY carries.
  const columns = sql.raw(LEAD_COPY_COLUMNS.map(([name, type]) => `${name}::${type} AS ${name}`).join(', '));
  const query = new PgDialect().sqlToQuery(
    sql`SELECT ${columns} FROM ${leads} WHERE ${where} ORDER BY ${leads.id} DESC`,
  );
  if (query.params.length) throw new Error('leadsCopyOutStatement: a value was left as a parameter');
  return `COPY (${query.sql}) TO STDOUT (FORMAT ${format === 'binary' ? 'binary' : 'csv'})`;
}

/** insertScraped's statement with the rows as one jsonb parameter (`compactRows`). */
function jsonInsert(owner: ScrapedLeadOwner, rows: readonly ScrapedLead[]): SQL {
  const { rows: compact, selectorSets } = compactRows(rows);
  return sql`
    INSERT INTO ${leads} (id, user_id, source_id, job_id, first_name, last_name, email, phone, company, job_title,
      source_url, status, custom_fields, provenance, created_at, updated_at, account_key)
    SELECT r.i, ${owner.userId}::uuid, ${owner.sourceId}::uuid, ${owner.jobId}::uuid, r.f, r.l, r.e, r.p, r.c, r.t,
      coalesce(r.u, r.v->>'pageUrl'), r.s, coalesce(r.x, '{}'),
      CASE WHEN r.k IS NULL THEN r.v ELSE r.v || jsonb_build_object('selectors', ${selectorSets}::jsonb -> r.k) END,
      r.a, r.a,
      account_key_from(r.e, r.c, coalesce(r.m,
        EXISTS (SELECT 1 FROM free_email_domains f WHERE f.domain = lower(split_part(r.e, '@', 2)))))
    FROM jsonb_to_recordset(${compact}::jsonb) AS r(i uuid, f text, l text, e text, p text, c text, t text,
      u text, s text, x jsonb, v jsonb, k int, a timestamptz, m boolean)
    ON CONFLICT DO NOTHING
    RETURNING id`;
}

/**
 * What makes the replica role skip nothing but the three checks the embedded path makes once per batch, read from the
 * catalog with each batch (two index lookups): every trigger of leads and of the tables its triggers write
 * (lead_stat_deltas, account_rollup_marks) fires in both roles or in none (ALWAYS or disabled: a trigger added later,
 * or a test's, that fires in one role only sends the batch down the normal path), and the only internal (RI)
 * triggers an INSERT into these tables fires are the checks of leads' three parents and of lead_stat_deltas' user
 * (one of the three locked).
 */
const replicaSkipsOnlyTheParentChecks = sql`NOT EXISTS (SELECT 1 FROM pg_trigger t LEFT JOIN pg_constraint c ON c.oid = t.tgconstraint
  WHERE t.tgrelid IN ('leads'::regclass, 'lead_stat_deltas'::regclass, 'account_rollup_marks'::regclass)
    AND CASE WHEN t.tgisinternal
      THEN (t.tgtype & 4) <> 0 AND coalesce(c.conname NOT IN ('leads_user_id_users_id_fk',
        'leads_source_id_sources_id_fk', 'leads_job_id_jobs_id_fk', 'lead_stat_deltas_user_id_users_id_fk'), true)
      ELSE t.tgenabled IN ('O', 'R') END)`;

/**
 * insertScraped on the embedded database (`EmbeddedWrite`), in the caller's transaction: the parents locked, the
 * role `replica` for the INSERT only, the rows through COPY when `copy`. Undefined (nothing done, the role untouched)
 * when a parent is gone or the catalog says replica would skip more (`replicaSkipsOnlyTheParentChecks`).
 */
async function insertScrapedReplica(
  tx: Db,
  owner: ScrapedLeadOwner,
  rows: readonly ScrapedLead[],
  embedded: EmbeddedWrite,
): Promise<string[] | undefined> {
  // Everything JavaScript does is done before the role changes: between the SET and the reset only SQL runs, and an
  // SQL error aborts the transaction, which takes the transaction-local role with it. A JavaScript error in that
  // window, caught inside the caller's transaction, would have left the foreign-key checks off for the rest of it.
  const copy = embedded.copy ? copyRows(rows) : undefined;
  const client = copy ? pgliteClient(tx) : undefined;
  const json = copy ? undefined : jsonInsert(owner, rows);
  // The role is set only once the three rows are locked (the sub-select's FOR KEY SHARE runs below set_config), and
  // only while `replicaSkipsOnlyTheParentChecks` holds.
  const [locked] = await queryRows<{ was: string }>(
    tx,
    sql`SELECT current_setting('session_replication_role') AS was,
      set_config('session_replication_role', 'replica', true) AS now
    FROM (SELECT 1 FROM users u, sources s, jobs j
      WHERE u.id = ${owner.userId}::uuid AND s.id = ${owner.sourceId}::uuid AND j.id = ${owner.jobId}::uuid
      FOR KEY SHARE OF u, s, j) parents
    WHERE ${replicaSkipsOnlyTheParentChecks}`,
  );
  if (!locked) return undefined;
  let ids: string[];
  if (copy && client) {
    const { text, selectorSets, stamps } = copy;
    // The table is empty at a transaction's start (ON COMMIT DELETE ROWS; an aborted COPY's rows are dead); a second
    // batch in the same transaction empties it first.
    const again = copiedIn.has(client);
    copiedIn.add(client);
    await client.exec(
      `${COPY_TABLE};${again ? ' TRUNCATE scraped_lead_batch;' : ''} COPY scraped_lead_batch FROM '/dev/blob'`,
      { blob: new Blob([text]) },
    );
    // Read in COPY order: of two rows of the batch that conflict, the first wins.
    const insert = sql`
      INSERT INTO ${leads} (id, user_id, source_id, job_id, first_name, last_name, email, phone, company, job_title,
        source_url, status, custom_fields, provenance, created_at, updated_at, account_key)
      SELECT r.i, ${owner.userId}::uuid, ${owner.sourceId}::uuid, ${owner.jobId}::uuid, r.f, r.l, r.e, r.p, r.c, r.t,
        coalesce(r.u, r.pu, r.v->>'pageUrl'), r.s, coalesce(r.x, '{}'),
        CASE
          WHEN r.v IS NOT NULL AND r.k IS NULL THEN r.v
          WHEN r.v IS NOT NULL THEN r.v || jsonb_build_object('selectors', ${selectorSets}::jsonb -> r.k)
          WHEN r.k IS NULL THEN jsonb_build_object('pageUrl', r.pu, 'selector', r.sel, 'visible', r.vis)
          ELSE jsonb_build_object('pageUrl', r.pu, 'selector', r.sel, 'visible', r.vis,
            'selectors', ${selectorSets}::jsonb -> r.k)
        END,
        (${stamps}::timestamptz[])[r.a], (${stamps}::timestamptz[])[r.a],
        account_key_from(r.e, r.c, coalesce(r.m,
          EXISTS (SELECT 1 FROM free_email_domains f WHERE f.domain = lower(split_part(r.e, '@', 2)))))
      FROM pg_temp.scraped_lead_batch r
      ON CONFLICT DO NOTHING
      RETURNING id`;
    // The new ids come back as one text (in insertion order), not one row each: PGlite builds and parses a message
    // per row in JavaScript.
    const [agg] = await queryRows<{ ids: string | null }>(
      tx,
      sql`WITH ins AS (${insert}) SELECT string_agg(id::text, ',') AS ids FROM ins`,
    );
    ids = agg?.ids ? agg.ids.split(',') : [];
  } else {
    ids = (await queryRows<{ id: string }>(tx, json!)).map((r) => r.id);
  }
  await tx.execute(sql`SELECT set_config('session_replication_role', ${locked.was}, true)`);
  return ids;
}

export function leadRepository(db: Db) {
  // GET /api/leads/{id} is the hot path: a named prepared statement skips query building here and
  // parsing and planning in PostgreSQL (the plan is the same for every id: primary key + joins).
  const findWithRelationsQuery = db
    .select({
      lead: leads,
      job: { id: jobs.id, name: jobs.name, status: jobs.status },
      source: { id: sources.id, name: sources.name, url: sources.url },
    })
    .from(leads)
    .leftJoin(jobs, eq(jobs.id, leads.jobId))
    .leftJoin(sources, eq(sources.id, leads.sourceId))
    .where(and(eq(leads.id, sql.placeholder('id')), eq(leads.userId, sql.placeholder('userId'))))
    .limit(1);
  const findWithRelations = findWithRelationsQuery.prepare('leads_find_with_relations');

  return {
    /**
     * One page, newest first: `id < cursor ORDER BY id DESC LIMIT n` (`listWhere` says why the scan stops there);
     * oldest first the same indexes are walked forwards (`id > cursor ORDER BY id`).
     */
    async list(
      userId: string,
      filters: LeadFilters,
      cursor: string | undefined,
      limit: number,
      order: 'newest' | 'oldest' = 'newest',
    ): Promise<LeadListRow[]> {
      const ascending = order === 'oldest';
      return db
        .select(listColumns)
        .from(leads)
        .where(listWhere(userId, filters, cursor, undefined, undefined, ascending))
        .orderBy(ascending ? asc(leads.id) : desc(leads.id))
        .limit(limit);
    },

    /** The caller's leads among `ids` (uuids), newest first, as the list shows them; others are simply absent. */
    listByIds(userId: string, ids: string[]): Promise<LeadListRow[]> {
      return db
        .select(listColumns)
        .from(leads)
        .where(and(eq(leads.userId, userId), idIn(ids)))
        .orderBy(desc(leads.id));
    },

    /**
     * A push batch's lower end: the smallest id of the next `size` leads of the list below `after` (one indexed
     * scan of ids), with how many there are; undefined when none is left.
     */
    async batchBoundary(
      userId: string,
      filters: LeadFilters,
      after: string,
      size: number,
    ): Promise<{ boundary: string; count: number } | undefined> {
      const page = db
        .select({ id: leads.id })
        .from(leads)
        .where(listWhere(userId, filters, after))
        .orderBy(desc(leads.id))
        .limit(size)
        .as('page');
      const [row] = await db
        .select({ boundary: page.id, count: sql<number>`count(*) OVER ()`.mapWith(Number) })
        .from(page)
        .orderBy(page.id)
        .limit(1);
      return row;
    },

    /** The lead with its job and source, in one statement (left joins), prepared once per connection. */
    async findWithRelations(userId: string, id: string): Promise<LeadWithRelations | undefined> {
      const [row] = await findWithRelations.execute({ id, userId });
      return row;
    },

    async findEmail(userId: string, id: string): Promise<{ id: string; email: string | null } | undefined> {
      const [row] = await db
        .select({ id: leads.id, email: leads.email })
        .from(leads)
        .where(and(eq(leads.id, id), eq(leads.userId, userId)))
        .limit(1);
      return row;
    },

    async findEmails(userId: string, ids: string[]): Promise<Array<{ id: string; email: string | null }>> {
      if (!ids.length) return [];
      return db
        .select({ id: leads.id, email: leads.email })
        .from(leads)
        .where(and(eq(leads.userId, userId), idIn(ids)));
    },

    /**
     * Scraped leads in one statement, however many: the rows travel as one JSON parameter (no
     * 65,535-parameter limit; read as jsonb, a third faster than json), compacted (`compactRows`) because parsing
     * it is a third of the statement's cost on PGlite. A row that meets a per-source
     * de-duplication index (email, else name + company), an earlier row of the same batch included,
     * is skipped (rows are inserted in the batch's order: the first one wins). The account key is computed
     * here (a row trigger would cost more) by `account_key_from`, which PostgreSQL inlines (account_key_of's
     * sub-select keeps it from being inlined: a function call per row). Whether the email's domain is free
     * mail comes with the row (`m`, from the set the `free_email_domains` table is seeded with) when the
     * domain is ASCII, so lower-casing cannot differ between JavaScript and SQL; otherwise the table is asked.
     * `embedded` (`embeddedWrite(database)`, PGlite only) takes the embedded path (`EmbeddedWrite`): the same rows,
     * without the per-row foreign-key checks and without the JSON parameter.
     * Answers the ids inserted.
     */
    async insertScraped(
      owner: ScrapedLeadOwner,
      rows: readonly ScrapedLead[],
      embedded?: EmbeddedWrite,
    ): Promise<string[]> {
      if (!rows.length) return [];
      if (embedded) {
        // SET LOCAL and the temp table's rows last as long as the transaction: outside one, make one.
        if (!is(db, PgTransaction))
          return db.transaction((tx) => leadRepository(tx).insertScraped(owner, rows, embedded));
        const ids = await insertScrapedReplica(db, owner, rows, embedded);
        if (ids) return ids;
        // A parent is gone (the normal INSERT fails on its foreign key, as it always did), or a trigger fires in one
        // role only.
      }
      const inserted = await queryRows<{ id: string }>(db, jsonInsert(owner, rows));
      return inserted.map((r) => r.id);
    },

    async insert(values: LeadInsert): Promise<LeadRow> {
      const [row] = await db.insert(leads).values(values).returning();
      return row!;
    },

    /**
     * Applies a patch. A new email clears the stored validation and, unless the patch sets a status
     * or the lead is past validation in the pipeline, resets the status to what a new lead with that
     * email would get (`emailStatus`).
     */
    async update(
      userId: string,
      id: string,
      patch: Partial<LeadInsert>,
      emailStatus: LeadStatus | undefined,
      now: Date,
    ): Promise<boolean> {
      const set: PgUpdateSetSource<typeof leads> = { ...patch, updatedAt: now };
      if (patch.email !== undefined) {
        const changed = sql`${leads.email} IS DISTINCT FROM ${patch.email}::text`;
        set.emailValidation = sql`CASE WHEN ${changed} THEN NULL ELSE ${leads.emailValidation} END`;
        set.validatedAt = sql`CASE WHEN ${changed} THEN NULL ELSE ${leads.validatedAt} END`;
        if (patch.status === undefined && emailStatus) {
          set.status = sql`CASE WHEN ${changed} AND ${leads.status} IN (${validationStatusList})
            THEN ${emailStatus}::text ELSE ${leads.status} END`;
        }
      }
      const rows = await db
        .update(leads)
        .set(set)
        .where(and(eq(leads.id, id), eq(leads.userId, userId)))
        .returning({ id: leads.id });
      return rows.length > 0;
    },

    async delete(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(leads)
        .where(and(eq(leads.id, id), eq(leads.userId, userId)))
        .returning({ id: leads.id });
      return rows.length > 0;
    },

    /** One DELETE for the whole list; answers the ids it removed. */
    async deleteMany(userId: string, ids: string[]): Promise<string[]> {
      if (!ids.length) return [];
      const rows = await db
        .delete(leads)
        .where(and(eq(leads.userId, userId), idIn(ids)))
        .returning({ id: leads.id });
      return rows.map((r) => r.id);
    },

    /**
     * One UPDATE for the whole list. Tags are computed in SQL from the row's current tags: append
     * `addTags`, keep the first occurrence of each, drop `removeTags`, order preserved. A lead whose
     * tags would exceed `maxTags` is left alone (`overLimit`; looked up only when some id was not updated).
     */
    async updateMany(
      userId: string,
      ids: string[],
      updates: { status?: LeadStatus; addTags?: string[]; removeTags?: string[] },
      maxTags: number,
      now: Date,
    ): Promise<{ updated: string[]; overLimit: string[] }> {
      if (!ids.length) return { updated: [], overLimit: [] };
      const add = updates.addTags ?? [];
      const remove = updates.removeTags ?? [];
      const set: PgUpdateSetSource<typeof leads> = { updatedAt: now };
      if (updates.status) set.status = updates.status;
      const where: SQL[] = [eq(leads.userId, userId), idIn(ids)];
      if (add.length || remove.length) {
        const newTags = sql`ARRAY(SELECT x.t
          FROM unnest(${leads.tags} || ${sql.param(add)}::text[]) WITH ORDINALITY AS x(t, n)
          WHERE x.t <> ALL(${sql.param(remove)}::text[]) GROUP BY x.t ORDER BY min(x.n))`;
        set.tags = newTags;
        // The cheap bound settles almost every row without computing the new tags a second time.
        if (add.length)
          where.push(
            sql`(cardinality(${leads.tags}) + ${add.length} <= ${maxTags} OR cardinality(${newTags}) <= ${maxTags})`,
          );
      }
      const rows = await db
        .update(leads)
        .set(set)
        .where(and(...where))
        .returning({ id: leads.id });
      const updated = rows.map((r) => r.id);
      if (!add.length || updated.length === ids.length) return { updated, overLimit: [] };
      const done = new Set(updated);
      const missing = ids.filter((id) => !done.has(id));
      const found = await db
        .select({ id: leads.id })
        .from(leads)
        .where(and(eq(leads.userId, userId), idIn(missing)));
      return { updated, overLimit: found.map((r) => r.id) };
    },

    /**
     * Stores a validation result and moves the status (`newStatus`; null keeps it) unless the lead is
     * past validation in the pipeline. Skipped (undefined) when the email changed since it was read; else the
     * lead's status after it.
     */
    async saveValidation(
      userId: string,
      id: string,
      email: string,
      result: EmailValidationResult,
      newStatus: LeadStatus | null,
      now: Date,
    ): Promise<LeadStatus | undefined> {
      const status = newStatus
        ? sql`CASE WHEN ${leads.status} IN (${validationStatusList}) THEN ${newStatus}::text ELSE ${leads.status} END`
        : sql`${leads.status}`;
      const rows = await db
        .update(leads)
        .set({ emailValidation: result, validatedAt: now, updatedAt: now, status })
        .where(and(eq(leads.id, id), eq(leads.userId, userId), eq(leads.email, email)))
        .returning({ status: leads.status });
      return rows[0]?.status;
    },
  };
}

export type LeadRepository = ReturnType<typeof leadRepository>;
