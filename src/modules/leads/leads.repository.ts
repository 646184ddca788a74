import { and, asc, desc, eq, gt, gte, is, lt, type SQL, sql } from 'drizzle-orm';
import { PgDialect, PgTransaction, type PgUpdateSetSource } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { type Db, queryRows } from '../../db/client.ts';
import { type EmailValidationResult, jobs, type LeadStatus, leads, sources } from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';
import { type EmbeddedWrite, insertScrapedReplica } from './leads.embedded.ts';
import { jsonInsert, type ScrapedLead, type ScrapedLeadOwner } from './leads.scraped-rows.ts';

export { type EmbeddedWrite, embeddedWrite } from './leads.embedded.ts';
export type { ScrapedLead, ScrapedLeadOwner } from './leads.scraped-rows.ts';

export type LeadRow = typeof leads.$inferSelect;
/** What the service writes; the account key is the database's to keep. */
export type LeadInsert = Omit<typeof leads.$inferInsert, 'accountKey'>;
export interface LeadWithRelations {
  lead: LeadRow;
  job: { id: string; name: string; status: string } | null;
  source: { id: string; name: string; url: string } | null;
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
