/**
 * The embedded database's path for scraped leads (`EmbeddedWrite`): parents locked once, the replica role for the
 * INSERT, the rows through COPY; interactively (`insertScrapedReplica`, leadRepository.insertScraped) or as steps of a
 * pipelined transaction (`scrapedInsertSteps`, src/db/pipeline.ts).
 */
import { sql } from 'drizzle-orm';
import { type Database, type Db, pipelineStep, queryRows } from '../../db/client.ts';
import { freeMailDomains } from '../../db/free-mail-domains.ts';
import type { PipelineStep } from '../../db/pipeline.ts';
import { leads } from '../../db/schema/index.ts';
import { freeMailOf, jsonInsert, type ScrapedLead, type ScrapedLeadOwner, selectorSets } from './leads.scraped-rows.ts';

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
 * Locks the batch's three parents (FOR KEY SHARE, as the foreign keys' checks would) and then sets the role `replica`
 * for the transaction, keeping the role it had (`ROLE_BACK`); answers no row (nothing done) when a parent is gone or
 * `replicaSkipsOnlyTheParentChecks` does not hold. The sub-select's lock runs below set_config.
 */
const lockParents = (owner: ScrapedLeadOwner) => sql`SELECT
    set_config('quarry.replication_role_was', current_setting('session_replication_role'), true) AS was,
    set_config('session_replication_role', 'replica', true) AS now
  FROM (SELECT 1 FROM users u, sources s, jobs j
    WHERE u.id = ${owner.userId}::uuid AND s.id = ${owner.sourceId}::uuid AND j.id = ${owner.jobId}::uuid
    FOR KEY SHARE OF u, s, j) parents
  WHERE ${replicaSkipsOnlyTheParentChecks}`;

/** Sets the role back to what it was before `lockParents`, within the transaction. */
const ROLE_BACK = sql`SELECT set_config('session_replication_role', current_setting('quarry.replication_role_was'), true)`;

/** Fills the temp table from the COPY text (the blob); it is empty at a transaction's start (ON COMMIT DELETE ROWS). */
const COPY_IN = `${COPY_TABLE}; COPY scraped_lead_batch FROM '/dev/blob'`;

/**
 * The INSERT from the temp table, in COPY order (of two rows of the batch that conflict, the first wins); the new ids
 * come back as one text (in insertion order), not one row each: PGlite builds and parses a message per row in JS.
 */
function copiedInsert(owner: ScrapedLeadOwner, { selectorSets, stamps }: { selectorSets: string; stamps: string }) {
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
  return sql`WITH ins AS (${insert}) SELECT string_agg(id::text, ',') AS ids FROM ins`;
}

const idsOf = (agg: { ids?: string | null } | undefined) => (agg?.ids ? agg.ids.split(',') : []);

/**
 * insertScraped on the embedded database (`EmbeddedWrite`), in the caller's transaction: the parents locked, the
 * role `replica` for the INSERT only, the rows through COPY when `copy`. Undefined (nothing done, the role untouched)
 * when a parent is gone or the catalog says replica would skip more (`replicaSkipsOnlyTheParentChecks`).
 */
export async function insertScrapedReplica(
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
  if (!(await queryRows(tx, lockParents(owner))).length) return undefined;
  let ids: string[];
  if (copy && client) {
    // A second batch in the same transaction empties the table first.
    const again = copiedIn.has(client);
    copiedIn.add(client);
    await client.exec(again ? COPY_IN.replace('; COPY', '; TRUNCATE scraped_lead_batch; COPY') : COPY_IN, {
      blob: new Blob([copy.text]),
    });
    ids = idsOf((await queryRows<{ ids: string | null }>(tx, copiedInsert(owner, copy)))[0]);
  } else {
    ids = (await queryRows<{ id: string }>(tx, json!)).map((r) => r.id);
  }
  await tx.execute(ROLE_BACK);
  return ids;
}

/**
 * The embedded path of insertScraped as steps of a pipelined transaction (src/db/pipeline.ts) of its own: it stops
 * (the caller takes insertScraped instead) where insertScrapedReplica would take the normal INSERT. `ids` reads the
 * new ids from the pipeline's results, `at` being the index of the first of these steps.
 */
export function scrapedInsertSteps(
  owner: ScrapedLeadOwner,
  rows: readonly ScrapedLead[],
): { steps: PipelineStep[]; ids(results: Array<{ rows: unknown[] }>, at: number): string[] } {
  if (!rows.length) return { steps: [], ids: () => [] };
  const copy = copyRows(rows);
  return {
    steps: [
      pipelineStep(lockParents(owner), 'rows'),
      { sql: COPY_IN, exec: true, blob: new Blob([copy.text]) },
      pipelineStep(copiedInsert(owner, copy)),
      pipelineStep(ROLE_BACK),
    ],
    ids: (results, at) => idsOf(results[at + 2]?.rows[0] as { ids?: string | null } | undefined),
  };
}
