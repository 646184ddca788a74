import { and, desc, eq, gte, lt, type SQL, sql } from 'drizzle-orm';
import { PgDialect, type PgUpdateSetSource } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { type Db, queryRows } from '../../db/client.ts';
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
 * insertScraped's parameter: one-letter keys, NULL columns left out, `sourceUrl` only when it is not the
 * provenance's `pageUrl`, an empty `customFields` left out, and each distinct `provenance.selectors` map sent
 * once (`selectorSets`, the row holds its index `k`): a scraped lead's JSON goes from ~540 to ~250 bytes.
 * The statement rebuilds exactly what it was given (jsonb orders an object's keys itself).
 */
function compactRows(rows: readonly ScrapedLead[]): { rows: string; selectorSets: string } {
  const free = freeMailDomains();
  const sets: unknown[] = [];
  const setIndex = new Map<string, number>();
  const compact = rows.map((row) => {
    const { selectors, ...provenance } = row.provenance;
    let k: number | undefined;
    if (selectors !== undefined) {
      const key = JSON.stringify(selectors);
      k = setIndex.get(key);
      if (k === undefined) {
        k = sets.push(selectors) - 1;
        setIndex.set(key, k);
      }
    }
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
  return { rows: JSON.stringify(compact), selectorSets: JSON.stringify(sets) };
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
  if (cursor) where.push(lt(leads.id, v(cursor)));
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
     * One page, newest first: `id < cursor ORDER BY id DESC LIMIT n` (`listWhere` says why the scan stops there).
     */
    async list(
      userId: string,
      filters: LeadFilters,
      cursor: string | undefined,
      limit: number,
    ): Promise<LeadListRow[]> {
      return db
        .select(listColumns)
        .from(leads)
        .where(listWhere(userId, filters, cursor))
        .orderBy(desc(leads.id))
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
     * Answers the ids inserted.
     */
    async insertScraped(owner: ScrapedLeadOwner, rows: readonly ScrapedLead[]): Promise<string[]> {
      if (!rows.length) return [];
      const { rows: compact, selectorSets } = compactRows(rows);
      const inserted = await queryRows<{ id: string }>(
        db,
        sql`
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
        RETURNING id`,
      );
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
