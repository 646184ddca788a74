/**
 * Micro-bench of the scraped-lead INSERT (leads.writer.ts → leadRepository.insertScraped), the statement a
 * STATIC job spends most of its database time in (bench/NOTES-pglite-worker.md). On a fresh migrated PGlite
 * and a fresh PostgreSQL database it inserts BATCHES batches of 2,000 scraped leads per variant, each variant
 * in one transaction that first drops an index / trigger / constraint and is rolled back afterwards (then
 * VACUUM), so variants share one database; rounds interleave the variants to cancel machine noise.
 * Reports CPU µs per row (the database's CPU: this thread for PGlite, the backend process for PostgreSQL), median
 * over rounds.
 *   node bench/lead-insert.ts            (LEAD_BENCH_ROUNDS=3 LEAD_BENCH_BATCHES=5 LEAD_BENCH_DB=pglite,postgres
 *                                         LEAD_BENCH_VARIANTS=base,unnest,… to pick some)
 * `base` is the normal statement (PostgreSQL's; the index/trigger/FK variants change it), `embedded` what the service
 * runs on PGlite (`embeddedWrite`: parents locked once, replica role, rows through COPY).
 * Also `npm run bench -- lead-insert`: base, embedded (PGlite) and the statement before migration 0013, µs/row, no
 * target.
 */
import fs from 'node:fs';
import { type SQL, sql } from 'drizzle-orm';
import { arrayLiteral } from '../src/db/array-literal.ts';
import { type Database, type Db, openDatabase, queryRows } from '../src/db/client.ts';
import { freeMailDomains } from '../src/db/free-mail-domains.ts';
import { migrate } from '../src/db/migrate.ts';
import { leadRepository, type ScrapedLead } from '../src/modules/leads/leads.repository.ts';
import { newId } from '../src/shared/ids.ts';
import { freshBenchDatabase, median, percentile, type Row } from './lib.ts';

const BATCH_ROWS = 2_000;
const COMPANIES = ['Acme Inc', 'Globex LLC', 'Initech', 'Umbrella Corp', 'Hooli'];

/** A variant: DDL run in the transaction before the batches, and optionally its own INSERT. */
interface Variant {
  name: string;
  /** Runs on this database only. */
  only?: 'pglite' | 'postgres';
  ddl?: string[];
  insert?: (tx: Db, owner: Owner, rows: ScrapedLead[]) => Promise<unknown>;
}
type Owner = { userId: string; sourceId: string; jobId: string };

const dropIndex = (name: string): Variant => ({ name: `-${name}`, ddl: [`DROP INDEX ${name}`] });
const dropTrigger = (name: string): Variant => ({ name: `-${name}`, ddl: [`DROP TRIGGER ${name} ON leads`] });

const INDEXES = [
  'leads_user_id_idx',
  'leads_user_company_idx',
  'leads_user_status_idx',
  'leads_job_idx',
  'leads_user_account_idx',
  'leads_user_source_idx',
  'leads_tags_idx',
  'leads_source_email_key',
  'leads_source_name_company_key',
];
const TRIGGERS = ['leads_mark_accounts_on_insert', 'leads_stats_on_insert', 'leads_account_key_on_insert'];
const FKS = ['leads_user_id_users_id_fk', 'leads_source_id_sources_id_fk', 'leads_job_id_jobs_id_fk'];

/**
 * insertScraped's INSERT with another account-key expression: the one before migration 0013
 * (`account_key_of`, a function call per row) or a constant (what computing the key costs at all).
 */
async function insertWithKey(tx: Db, owner: Owner, rows: ScrapedLead[], key: SQL, returning = sql`RETURNING id`) {
  await tx.execute(sql`
    INSERT INTO leads (id, user_id, source_id, job_id, first_name, last_name, email, phone, company, job_title,
      source_url, status, custom_fields, provenance, created_at, updated_at, account_key)
    SELECT r.id, ${owner.userId}::uuid, ${owner.sourceId}::uuid, ${owner.jobId}::uuid, r."firstName", r."lastName",
      r.email, r.phone, r.company, r."jobTitle", r."sourceUrl", r.status, r."customFields", r.provenance,
      r."createdAt", r."createdAt", ${key}
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id uuid, "firstName" text, "lastName" text,
      email text, phone text, company text, "jobTitle" text, "sourceUrl" text, status text, "customFields" jsonb,
      provenance jsonb, "createdAt" timestamptz)
    ON CONFLICT DO NOTHING ${returning}`);
}
const OLD_KEY = sql`account_key_of(r.email, r.company)`;
const NEW_KEY = sql`account_key_from(r.email, r.company,
  EXISTS (SELECT 1 FROM free_email_domains f WHERE f.domain = lower(split_part(r.email, '@', 2))))`;
/** The indexes as they were before migration 0013. */
const OLD_INDEXES = [
  'DROP INDEX leads_job_idx',
  'CREATE INDEX leads_job_idx ON leads (job_id)',
  'CREATE INDEX leads_user_job_idx ON leads (user_id, job_id, id)',
  'DROP INDEX leads_tags_idx',
  'CREATE INDEX leads_tags_idx ON leads USING gin (tags)',
];

/** Typed arrays, one per column, through unnest instead of one jsonb document through jsonb_to_recordset. */
async function insertUnnest(tx: Db, owner: Owner, rows: ScrapedLead[], key = NEW_KEY) {
  const col = (pick: (r: ScrapedLead) => string | null) => arrayLiteral(rows.map(pick));
  const at = rows.map((r) => r.createdAt.toISOString());
  await tx.execute(sql`
    INSERT INTO leads (id, user_id, source_id, job_id, first_name, last_name, email, phone, company, job_title,
      source_url, status, custom_fields, provenance, created_at, updated_at, account_key)
    SELECT r.id, ${owner.userId}::uuid, ${owner.sourceId}::uuid, ${owner.jobId}::uuid, r.first_name, r.last_name,
      r.email, r.phone, r.company, r.job_title, r.source_url, r.status, r.custom_fields, r.provenance,
      r.created_at, r.created_at, ${key}
    FROM unnest(${col((r) => r.id)}::uuid[], ${col((r) => r.firstName)}::text[], ${col((r) => r.lastName)}::text[],
      ${col((r) => r.email)}::text[], ${col((r) => r.phone)}::text[], ${col((r) => r.company)}::text[],
      ${col((r) => r.jobTitle)}::text[], ${col((r) => r.sourceUrl)}::text[], ${col((r) => r.status)}::text[],
      ${col((r) => JSON.stringify(r.customFields))}::jsonb[], ${col((r) => JSON.stringify(r.provenance))}::jsonb[],
      ${arrayLiteral(at)}::timestamptz[])
      AS r(id, first_name, last_name, email, phone, company, job_title, source_url, status, custom_fields, provenance,
        created_at)
    ON CONFLICT DO NOTHING RETURNING id`);
}

/** insertScraped before its parameter was compacted: every row a full JSON object (~540 bytes). */
async function insertFullRows(tx: Db, owner: Owner, rows: ScrapedLead[]) {
  const free = freeMailDomains();
  const param = rows.map((row) => ({
    ...row,
    freeMail: row.email === null ? false : free.has(row.email.split('@')[1]!.toLowerCase()),
  }));
  await tx.execute(sql`
    INSERT INTO leads (id, user_id, source_id, job_id, first_name, last_name, email, phone, company, job_title,
      source_url, status, custom_fields, provenance, created_at, updated_at, account_key)
    SELECT r.id, ${owner.userId}::uuid, ${owner.sourceId}::uuid, ${owner.jobId}::uuid, r."firstName", r."lastName",
      r.email, r.phone, r.company, r."jobTitle", r."sourceUrl", r.status, r."customFields", r.provenance,
      r."createdAt", r."createdAt",
      account_key_from(r.email, r.company, coalesce(r."freeMail",
        EXISTS (SELECT 1 FROM free_email_domains f WHERE f.domain = lower(split_part(r.email, '@', 2)))))
    FROM jsonb_to_recordset(${JSON.stringify(param)}::jsonb) AS r(id uuid, "firstName" text, "lastName" text,
      email text, phone text, company text, "jobTitle" text, "sourceUrl" text, status text, "customFields" jsonb,
      provenance jsonb, "createdAt" timestamptz, "freeMail" boolean)
    ON CONFLICT DO NOTHING RETURNING id`);
}

/** The analytics trigger as migration 0006 wrote it (facts per lead, before 0025 grouped the leads first). */
const STATS_PER_LEAD = (() => {
  const text = fs.readFileSync(new URL('../src/db/migrations/0006_analytics_admin.sql', import.meta.url), 'utf8');
  const start = text.indexOf('CREATE FUNCTION "lead_stats_record"');
  return text.slice(start, text.indexOf('END $$;', start) + 'END $$;'.length).replace('CREATE', 'CREATE OR REPLACE');
})();

/** The parse alone: the recordset selected, nothing inserted. */
async function parseOnly(tx: Db, _owner: Owner, rows: ScrapedLead[]) {
  await tx.execute(sql`
    SELECT count(*) FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id uuid, "firstName" text,
      "lastName" text, email text, phone text, company text, "jobTitle" text, "sourceUrl" text, status text,
      "customFields" jsonb, provenance jsonb, "createdAt" timestamptz)`);
}

function variants(): Variant[] {
  const all: Variant[] = [
    { name: 'base' },
    ...INDEXES.map(dropIndex),
    ...TRIGGERS.map(dropTrigger),
    { name: '-fks', ddl: FKS.map((fk) => `ALTER TABLE leads DROP CONSTRAINT ${fk}`) },
    { name: 'before-0013', ddl: OLD_INDEXES, insert: (tx, o, r) => insertWithKey(tx, o, r, OLD_KEY) },
    { name: 'old-key', insert: (tx, o, r) => insertWithKey(tx, o, r, OLD_KEY) },
    { name: 'old-indexes', ddl: OLD_INDEXES },
    { name: 'const-key', insert: (tx, o, r) => insertWithKey(tx, o, r, sql`'domain:example.com'`) },
    { name: 'parse-only', insert: parseOnly },
    { name: 'unnest', insert: (tx, o, r) => insertUnnest(tx, o, r) },
    { name: 'full-rows', insert: insertFullRows },
    { name: 'stats-per-lead', ddl: [STATS_PER_LEAD] },
    { name: 'full-rows+stats-per-lead', ddl: [STATS_PER_LEAD], insert: insertFullRows },
    { name: 'no-returning', insert: (tx, o, r) => insertWithKey(tx, o, r, NEW_KEY, sql``) },
    {
      name: 'small-provenance',
      insert: (tx, o, r) =>
        leadRepository(tx).insertScraped(
          o,
          r.map((l) => ({ ...l, provenance: { pageUrl: l.provenance?.pageUrl } })),
        ),
    },
    // What the service runs on PGlite (`embeddedWrite`): parents locked once + replica role, rows through COPY.
    { name: 'embedded', only: 'pglite', insert: (tx, o, r) => leadRepository(tx).insertScraped(o, r, { copy: true }) },
    // The same without COPY (the JSON parameter): what PGLITE_WORKER=true ran before its proxy carried the blob;
    // on PostgreSQL only informative.
    { name: 'replica-json', insert: (tx, o, r) => leadRepository(tx).insertScraped(o, r, { copy: false }) },
    {
      name: 'status-partial',
      ddl: [
        'DROP INDEX leads_user_status_idx',
        `CREATE INDEX leads_user_status_idx ON leads (user_id, status, id) WHERE status <> 'NEW'`,
      ],
    },
    {
      name: '-all-indexes-triggers-fks',
      ddl: [
        ...INDEXES.map((i) => `DROP INDEX ${i}`),
        ...TRIGGERS.map((t) => `DROP TRIGGER ${t} ON leads`),
        ...FKS.map((fk) => `ALTER TABLE leads DROP CONSTRAINT ${fk}`),
      ],
    },
  ];
  const picked = process.env.LEAD_BENCH_VARIANTS?.split(',');
  return picked ? all.filter((v) => picked.includes(v.name)) : all;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const quartile = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    25,
  );

let serial = 0;
/** Leads shaped as leads.writer.ts's scrapedLead makes them from the directory fixture site. */
function batch(): ScrapedLead[] {
  const now = new Date();
  return Array.from({ length: BATCH_ROWS }, () => {
    const n = ++serial;
    const page = Math.floor(n / 10);
    const pageUrl = `http://127.0.0.1:40000/directory/${page}`;
    return {
      id: newId(),
      firstName: `First${n}`,
      lastName: `Last${n}`,
      email: `person${page}.${n}@example.com`,
      phone: `+1555${String(n).padStart(7, '0')}`,
      company: COMPANIES[n % COMPANIES.length]!,
      jobTitle: 'Engineer',
      sourceUrl: pageUrl,
      status: 'NEW',
      customFields: {},
      provenance: {
        pageUrl,
        selector: '.email',
        selectors: { firstName: '.name', email: '.email', company: '.company', jobTitle: '.title', phone: 'a.phone' },
        visible: true,
      },
      createdAt: now,
    };
  });
}

async function seedOwner(database: Database): Promise<Owner> {
  const [userId, sourceId, jobId] = [newId(), newId(), newId()];
  await database.query(`INSERT INTO users (id, email, password_hash) VALUES ($1, $2, 'x')`, [
    userId,
    `${userId}@bench.test`,
  ]);
  await database.query(
    `INSERT INTO sources (id, user_id, name, url, scrape_type) VALUES ($1, $2, 's', 'http://x', 'STATIC')`,
    [sourceId, userId],
  );
  await database.query(`INSERT INTO jobs (id, user_id, source_id, name) VALUES ($1, $2, $3, 'j')`, [
    jobId,
    userId,
    sourceId,
  ]);
  return { userId, sourceId, jobId };
}

class Rollback extends Error {}

/**
 * CPU that inserting costs, in µs: PGlite's statements run in this thread (its CPU time), a PostgreSQL
 * statement in its backend process (its CPU time from /proc, 10 ms ticks). CPU time, unlike wall time, hardly
 * moves when other processes compete for the cores (this machine is shared).
 */
async function cpuClock(database: Database, tx: Db): Promise<() => number> {
  if (database.kind === 'pglite') return () => process.threadCpuUsage().user + process.threadCpuUsage().system;
  const [row] = await queryRows<{ pid: number }>(tx, sql`SELECT pg_backend_pid() AS pid`);
  const tick = 1e6 / 100; // USER_HZ
  return () => {
    const fields = fs.readFileSync(`/proc/${row!.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * tick;
  };
}

/** µs per row (CPU) of each of `batches` batches under `variant`, rolled back. */
async function runVariant(database: Database, owner: Owner, variant: Variant, batches: number): Promise<number[]> {
  const data = Array.from({ length: batches }, batch);
  const perRow: number[] = [];
  await database.db
    .transaction(async (tx) => {
      for (const statement of variant.ddl ?? []) await tx.execute(sql.raw(statement));
      const cpu = await cpuClock(database, tx as unknown as Db);
      for (const rows of data) {
        const started = cpu();
        if (variant.insert) await variant.insert(tx as unknown as Db, owner, rows);
        else await leadRepository(tx).insertScraped(owner, rows);
        perRow.push((cpu() - started) / rows.length);
      }
      throw new Rollback();
    })
    .catch((e) => {
      if (!(e instanceof Rollback)) throw e;
    });
  await database.query('VACUUM leads, account_rollup_marks, lead_stat_deltas');
  return perRow;
}

async function measure(database: Database, label: string, rounds: number, batches: number) {
  const owner = await seedOwner(database);
  const list = variants().filter((v) => !v.only || v.only === database.kind);
  const results = new Map<string, number[]>(list.map((v) => [v.name, []]));
  // One warm-up batch (plans, caches) before the rounds.
  await runVariant(database, owner, { name: 'warm-up' }, 1);
  for (let round = 0; round < rounds; round++) {
    // Alternate the order each round so no variant always runs right after the same neighbour.
    const order = round % 2 ? [...list].reverse() : list;
    for (const v of order) results.get(v.name)!.push(...(await runVariant(database, owner, v, batches)));
  }
  // Median of every batch of every round: a batch slowed by another process's burst weighs one sample.
  return [...results].map(([name, us]) => ({ label, name, us: median(us), p25: quartile(us), all: us }));
}

async function onDatabases(rounds: number, batches: number, kinds: string[]) {
  const out: Array<{ label: string; name: string; us: number; p25: number; all: number[] }> = [];
  if (kinds.includes('pglite')) {
    const database = await openDatabase({});
    try {
      await migrate(database);
      out.push(...(await measure(database, 'PGlite', rounds, batches)));
    } finally {
      await database.close();
    }
  }
  if (kinds.includes('postgres')) {
    const fresh = await freshBenchDatabase('quarry_lead_insert');
    const database = await openDatabase({ databaseUrl: fresh.url, poolSize: 2 });
    try {
      await migrate(database);
      out.push(...(await measure(database, 'PostgreSQL', rounds, batches)));
    } finally {
      await database.close();
      await fresh.drop();
    }
  }
  return out;
}

/** `npm run bench -- lead-insert`: the current statement only. */
export async function benchLeadInsert(): Promise<Row[]> {
  process.env.LEAD_BENCH_VARIANTS ??= 'base,embedded,before-0013';
  const results = await onDatabases(3, 5, ['pglite', 'postgres']);
  return results.map((r) => ({
    name: `scraped-lead INSERT on ${r.label} (${r.name}), µs/row, median of 3 × 10,000 rows`,
    value: r.us.toFixed(1),
    target: '(none: informative)',
    pass: null,
  }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rounds = Number(process.env.LEAD_BENCH_ROUNDS ?? 3);
  const batches = Number(process.env.LEAD_BENCH_BATCHES ?? 5);
  const kinds = (process.env.LEAD_BENCH_DB ?? 'pglite,postgres').split(',');
  const results = await onDatabases(rounds, batches, kinds);
  for (const label of new Set(results.map((r) => r.label))) {
    const mine = results.filter((r) => r.label === label);
    const base = mine.find((r) => r.name === 'base');
    console.log(
      `\n${label}: CPU µs/row, ${rounds} rounds × ${batches} batches of ${BATCH_ROWS} rows: median (Δ), p25 (Δ) [min max] ` +
        'mean (Δ) (PostgreSQL CPU comes in 10 ms ticks, 5 µs a batch: read its means)',
    );
    for (const r of mine) {
      const delta = base === undefined || r.name === 'base' ? '' : `  (${(r.us - base.us).toFixed(1)} vs base)`;
      const delta25 = base === undefined || r.name === 'base' ? '' : ` (${(r.p25 - base.p25).toFixed(1)})`;
      console.log(
        `  ${r.name.padEnd(30)} ${r.us.toFixed(1).padStart(6)}${delta.padEnd(18)} p25 ${r.p25.toFixed(1)}${delta25.padEnd(9)}` +
          ` [${Math.min(...r.all).toFixed(0)} ${Math.max(...r.all).toFixed(0)}] mean ${mean(r.all).toFixed(1)}` +
          (base === undefined || r.name === 'base' ? '' : ` (${(mean(r.all) - mean(base.all)).toFixed(1)})`),
      );
    }
  }
}
