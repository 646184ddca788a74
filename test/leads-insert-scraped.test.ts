/**
 * The scraped-lead INSERT (leadRepository.insertScraped, migration 0013): the account key it computes with the
 * inlined `account_key_from` is the one `account_key_of` (every other write) gives, it calls no SQL function
 * per row, and the `?tag=` filter still finds tagged leads through the partial GIN index. The embedded path
 * (PGlite's: parents checked once per batch, replica role, COPY) stores what the normal path stores, fails like it when
 * a parent is gone, and leaves the role as it found it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { type Database, queryRows } from '../src/db/client.ts';
import { type EmbeddedWrite, leadRepository, type ScrapedLead } from '../src/modules/leads/leads.repository.ts';
import { newId } from '../src/shared/ids.ts';
import { createTestDatabase, type TestDatabase, testDatabaseKind } from './helpers/db.ts';

let testDb: TestDatabase;
let owner: { userId: string; sourceId: string; jobId: string };

before(async () => {
  testDb = await createTestDatabase();
  const q = testDb.database.query.bind(testDb.database);
  owner = { userId: newId(), sourceId: newId(), jobId: newId() };
  await q(`INSERT INTO users (id, email, password_hash) VALUES ($1, 'owner@example.com', 'x')`, [owner.userId]);
  await q(`INSERT INTO sources (id, user_id, name, url, scrape_type) VALUES ($1, $2, 's', 'http://x', 'STATIC')`, [
    owner.sourceId,
    owner.userId,
  ]);
  await q(`INSERT INTO jobs (id, user_id, source_id, name) VALUES ($1, $2, $3, 'j')`, [
    owner.jobId,
    owner.userId,
    owner.sourceId,
  ]);
});
after(async () => {
  await testDb.database.close();
  await testDb.drop();
});

const lead = (email: string | null, company: string | null, firstName: string | null = null): ScrapedLead => ({
  id: newId(),
  firstName,
  lastName: null,
  email,
  phone: null,
  company,
  jobTitle: null,
  sourceUrl: 'http://x/page',
  status: 'NEW',
  customFields: {},
  provenance: { pageUrl: 'http://x/page' },
  createdAt: new Date(),
});

test('scraped leads get the account key account_key_of gives: business domain, free mail, company only, none', async () => {
  const rows = [
    lead('ann@acme.com', 'Acme Inc'), // business domain
    lead('bob@gmail.com', 'Globex GmbH'), // free mail: the company decides
    lead('cid@gmail.com', null), // free mail, no company: no account
    lead(null, 'Initech, L.L.C.', 'Dee'), // no email: the normalized company
    lead('not-an-email', 'Umbrella', 'Eve'), // no domain: the company
    lead(null, null, 'Fay'), // nothing to group by
  ];
  const ids = await testDb.database.db.transaction((tx) => leadRepository(tx).insertScraped(owner, rows));
  assert.equal(ids.length, rows.length);
  const stored = await testDb.database.query<{ email: string | null; account_key: string | null; expected: string }>(
    `SELECT email, account_key, account_key_of(email, company) AS expected FROM leads WHERE id = ANY($1::uuid[])
     ORDER BY id`,
    [`{${ids.join(',')}}`],
  );
  for (const row of stored) assert.equal(row.account_key, row.expected, `account key of ${row.email}`);
  assert.deepEqual(
    stored.map((r) => r.account_key),
    ['domain:acme.com', 'company:globex', null, 'company:initech', 'company:umbrella', null],
  );
});

test('free mail decided beside the row agrees with the table: case, reserved names, odd and non-ASCII domains', async () => {
  const emails = [
    'ann@GMail.com', // upper case in the domain (the writer lower-cases, insertScraped must not rely on it)
    'bob@example.com', // reserved for documentation: no provider's, so the domain groups the leads
    'cid@yahoo.co.uk',
    'dee@mail.acme.io',
    'eve@a@gmail.com', // split_part takes the text between the first and second @
    'fay@müller.de', // not ASCII: SQL decides
    'gus@GMAİL.com', // not ASCII either (dotted capital I)
    'hal@localhost', // no dot after @: the company decides
    '@gmail.com',
    'ivy@',
  ];
  const rows = emails.map((email, i) => lead(email, `Company ${i} GmbH`));
  const ids = await testDb.database.db.transaction((tx) => leadRepository(tx).insertScraped(owner, rows));
  assert.equal(ids.length, rows.length);
  const stored = await testDb.database.query<{ email: string; account_key: string | null; expected: string }>(
    `SELECT email, account_key, account_key_of(email, company) AS expected FROM leads WHERE id = ANY($1::uuid[])`,
    [`{${ids.join(',')}}`],
  );
  for (const row of stored) assert.equal(row.account_key, row.expected, `account key of ${row.email}`);
  const byEmail = new Map(stored.map((r) => [r.email, r.account_key]));
  assert.equal(byEmail.get('ann@GMail.com'), 'company:company 0');
  assert.equal(byEmail.get('bob@example.com'), 'domain:example.com');
  assert.equal(byEmail.get('dee@mail.acme.io'), 'domain:mail.acme.io');
});

test('the scraped-lead INSERT runs no SQL function call per row (account_key_of was one per lead)', async () => {
  const rows = Array.from({ length: 200 }, (_, i) => lead(`p${i}@example.org`, `Company ${i % 7} Inc`));
  const calls = await testDb.database.db.transaction(async (tx) => {
    // Counted for this transaction only (pg_stat_xact_user_functions); inlined SQL functions are not calls.
    await tx.execute(sql`SET LOCAL track_functions = 'all'`);
    await leadRepository(tx).insertScraped(owner, rows);
    return queryRows<{ funcname: string; calls: number }>(
      tx,
      sql`SELECT funcname, calls::int FROM pg_stat_xact_user_functions ORDER BY calls DESC`,
    );
  });
  const perRow = calls.filter((c) => c.calls >= rows.length);
  assert.deepEqual(perRow, [], `functions called once per row: ${JSON.stringify(perRow)}`);
});

test('?tag= finds tagged leads through the partial GIN index among many untagged ones', async () => {
  const rows = Array.from({ length: 300 }, (_, i) => lead(`t${i}@tagged.example`, null));
  const ids = await testDb.database.db.transaction((tx) => leadRepository(tx).insertScraped(owner, rows));
  const tagged = ids.slice(0, 3);
  await leadRepository(testDb.database.db).updateMany(owner.userId, tagged, { addTags: ['vip'] }, 10, new Date());
  await testDb.database.query('ANALYZE leads');
  const { found, scans } = await testDb.database.db.transaction(async (tx) => {
    // A table this small would be read whole; with plain scans off the planner picks the smallest bitmap,
    // and the partial index is a candidate only when the query implies its predicate (`tags <> '{}'`).
    await tx.execute(sql`SET LOCAL enable_seqscan = off`);
    await tx.execute(sql`SET LOCAL enable_indexscan = off`);
    const found = await leadRepository(tx).list(owner.userId, { tag: 'vip' }, undefined, 50);
    const [row] = await queryRows<{ scans: number }>(
      tx,
      sql`SELECT pg_stat_get_xact_numscans('leads_tags_idx'::regclass)::int AS scans`,
    );
    return { found, scans: row!.scans };
  });
  assert.deepEqual(found.map((r) => r.id).sort(), [...tagged].sort());
  assert.ok(scans > 0, 'the ?tag= query read leads_tags_idx');
});

test('the compacted parameter stores each lead exactly as given: columns, NULLs, custom fields, provenance', async () => {
  const at = new Date('2026-11-27T04:00:00.123Z');
  const shared = { email: '.email', company: '.company' };
  const rows: ScrapedLead[] = [
    {
      ...lead('gus@acme.com', 'Acme Inc', 'Gus'),
      lastName: 'Grant',
      phone: '+1 555 0100',
      jobTitle: 'CTO',
      customFields: { city: 'Paris', quote: 'say "hi" \\ bye' },
      provenance: { pageUrl: 'http://x/p1', selector: '.email', selectors: shared, visible: true },
      createdAt: at,
    },
    // The same selector map (sent once), a sourceUrl cut shorter than the page's URL, no selector.
    {
      ...lead('hal@acme.com', null),
      sourceUrl: 'http://x/p2',
      provenance: { pageUrl: 'http://x/p2?long', selectors: { ...shared }, visible: false },
      createdAt: at,
    },
    // Another map, other provenance keys kept; no selectors at all.
    { ...lead(null, 'Hooli', 'Ivy'), provenance: { pageUrl: 'http://x/page', selectors: { firstName: 'h2' } } },
    { ...lead(null, 'Hooli', 'Jo'), provenance: { pageUrl: 'http://x/page', extra: [1, 'two'] } },
  ];
  const ids = await testDb.database.db.transaction((tx) => leadRepository(tx).insertScraped(owner, rows));
  assert.equal(ids.length, rows.length);
  const stored = await testDb.database.query<Record<string, unknown>>(
    `SELECT id, first_name, last_name, email, phone, company, job_title, source_url, status, custom_fields,
       provenance, created_at, user_id, source_id, job_id FROM leads WHERE id = ANY($1::uuid[])`,
    [`{${ids.join(',')}}`],
  );
  const byId = new Map(stored.map((r) => [r.id, r]));
  for (const row of rows) {
    const got = byId.get(row.id)!;
    assert.deepEqual(
      {
        firstName: got.first_name,
        lastName: got.last_name,
        email: got.email,
        phone: got.phone,
        company: got.company,
        jobTitle: got.job_title,
        sourceUrl: got.source_url,
        status: got.status,
        customFields: got.custom_fields,
        provenance: got.provenance,
        createdAt: (got.created_at as Date).toISOString(),
        owner: [got.user_id, got.source_id, got.job_id],
      },
      {
        firstName: row.firstName,
        lastName: row.lastName,
        email: row.email,
        phone: row.phone,
        company: row.company,
        jobTitle: row.jobTitle,
        sourceUrl: row.sourceUrl,
        status: row.status,
        customFields: row.customFields,
        provenance: row.provenance,
        createdAt: row.createdAt.toISOString(),
        owner: [owner.userId, owner.sourceId, owner.jobId],
      },
    );
  }
});

test('the analytics trigger (grouped before its facts, migration 0025) counts what lead_stat_facts gives per lead', async () => {
  const source = newId();
  await testDb.database.query(
    `INSERT INTO sources (id, user_id, name, url, scrape_type) VALUES ($1, $2, 's2', 'http://y', 'STATIC')`,
    [source, owner.userId],
  );
  const days = [new Date('2026-11-20T23:59:59.999Z'), new Date('2026-11-21T00:00:00Z')];
  const rows = Array.from({ length: 40 }, (_, n) => ({
    ...lead(n % 3 ? `p${n}@acme.com` : null, 'Acme', `P${n}`),
    status: (n % 4 ? 'NEW' : 'CONTACTED') as ScrapedLead['status'],
    createdAt: days[n % 2]!,
  }));
  // A group of one: a lead alone on its day.
  rows.push({ ...lead('solo@acme.com', 'Acme', 'Solo'), createdAt: new Date('2026-11-23T12:00:00Z') });
  await testDb.database.db.transaction((tx) => leadRepository(tx).insertScraped({ ...owner, sourceId: source }, rows));
  // A validated lead as well (a write that is not a scrape: validation fields set).
  await testDb.database.query(
    `UPDATE leads SET email_validation = '{"status":"valid"}', validated_at = '2026-11-22T10:00:00Z', status = 'VALID'
     WHERE source_id = $1 AND email IS NOT NULL AND first_name IN ('P1', 'P2')`,
    [source],
  );
  const counted = await testDb.database.query<{ day: string; kind: string; value: string; n: number }>(
    `SELECT day::text, kind, value, sum(n)::int AS n FROM lead_stat_deltas WHERE source_id = $1
     GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`,
    [source],
  );
  const expected = await testDb.database.query<{ day: string; kind: string; value: string; n: number }>(
    `SELECT f.day::text, f.kind, f.value, count(*)::int AS n FROM leads l,
       LATERAL lead_stat_facts(l.created_at, l.status, l.email, l.email_validation, l.validated_at) f
     WHERE l.source_id = $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [source],
  );
  assert.ok(expected.length >= 6);
  assert.deepEqual(counted, expected);
});

// The embedded path (EmbeddedWrite: PGlite's, migration 0033): parents locked once, the replica role for the INSERT,
// rows through COPY (or the JSON parameter), PGlite in this thread or in its worker thread (PGLITE_WORKER: the proxy
// carries the COPY's blob, src/db/pglite-worker.ts). PostgreSQL keeps the normal path, and its triggers are not
// ALWAYS (migration 0033), so the path is PGlite's alone.
let workerDb: TestDatabase | undefined;
const embeddedCases: Array<{ name: string; mode: EmbeddedWrite; database(): Database }> =
  testDatabaseKind() === 'pglite'
    ? [
        { name: 'COPY', mode: { copy: true }, database: () => testDb.database },
        { name: 'JSON parameter', mode: { copy: false }, database: () => testDb.database },
        { name: 'COPY, PGlite in its worker thread', mode: { copy: true }, database: () => workerDb!.database },
      ]
    : [];
before(async () => {
  if (testDatabaseKind() === 'pglite') workerDb = await createTestDatabase({ pgliteWorker: true });
});
after(async () => {
  await workerDb?.database.close();
});

/** A user with a source and a job: the three parents of a batch. */
async function newOwner(database: Database): Promise<{ userId: string; sourceId: string; jobId: string }> {
  const o = { userId: newId(), sourceId: newId(), jobId: newId() };
  const q = database.query.bind(database);
  await q(`INSERT INTO users (id, email, password_hash) VALUES ($1, $2, 'x')`, [o.userId, `${o.userId}@example.com`]);
  await q(`INSERT INTO sources (id, user_id, name, url, scrape_type) VALUES ($1, $2, 's', 'http://x', 'STATIC')`, [
    o.sourceId,
    o.userId,
  ]);
  await q(`INSERT INTO jobs (id, user_id, source_id, name) VALUES ($1, $2, $3, 'j')`, [o.jobId, o.userId, o.sourceId]);
  return o;
}

/** Every shape a scraped lead takes, and the odd ones: one batch, fresh ids each call, the same content. */
function variedBatch(): ScrapedLead[] {
  const selectors = { firstName: '.name', email: '.email', company: '.company' };
  const day1 = new Date('2026-11-20T23:59:59.999Z');
  const day2 = new Date('2026-11-21T00:00:00.001Z');
  const usual = (n: number, email: string | null, company: string | null, at = day1): ScrapedLead => ({
    ...lead(email, company, `P${n}`),
    lastName: n % 2 ? `L${n}` : null,
    phone: n % 3 ? null : `+1 555 ${n}`,
    jobTitle: n % 4 ? 'Engineer' : null,
    sourceUrl: `http://x/dir/${n >> 2}`,
    provenance: { pageUrl: `http://x/dir/${n >> 2}`, selector: '.email', selectors, visible: n % 5 !== 0 },
    createdAt: at,
  });
  return [
    ...Array.from({ length: 30 }, (_, n) => usual(n, `p${n}@acme.com`, 'Acme Inc', n % 2 ? day1 : day2)),
    usual(30, 'free@gmail.com', 'Globex GmbH'),
    usual(31, null, 'Initech'),
    usual(32, 'fay@müller.de', 'Müller'), // not ASCII: SQL decides free mail
    usual(33, 'tabs@acme.com', 'Tab\tNew\nLine\rCR \\ back "quote"'),
    {
      ...usual(34, 'custom@acme.com', 'Custom'),
      customFields: { city: 'Paris', note: 'say "hi" \\ bye\tand\nmore', empty: '' },
    },
    // sourceUrl cut shorter than the page's URL; a provenance without selector; one with extra keys; none of `visible`.
    { ...usual(35, 'cut@acme.com', 'Cut'), sourceUrl: 'http://x/long' },
    { ...usual(36, 'nosel@acme.com', 'NoSel'), provenance: { pageUrl: 'http://x/p', selectors, visible: true } },
    { ...usual(37, 'extra@acme.com', 'Extra'), provenance: { pageUrl: 'http://x/p', extra: [1, 'two', null] } },
    { ...usual(38, 'novis@acme.com', 'NoVis'), provenance: { pageUrl: 'http://x/p', selector: '.a' } },
    { ...usual(39, 'other@acme.com', 'Other'), provenance: { ...usual(39, null, null).provenance, selectors: {} } },
    // Duplicates within the batch: the first wins (email, any case; name + company without email).
    usual(40, 'P1@ACME.com', 'Dup Inc'),
    usual(41, null, 'Initech'),
    { ...usual(42, null, 'INITECH'), firstName: 'p31' },
    { ...usual(43, 'unicode@acme.com', 'Zürich ✓ 日本'), status: 'CONTACTED' },
  ];
}

/** A batch's stored rows as text, in the batch's order (ids aside), and what its triggers wrote. */
async function storedAs(database: Database, owner: { userId: string; sourceId: string }, ids: string[]) {
  const rows = await database.query<Record<string, unknown>>(
    `SELECT ord, first_name, last_name, email, phone, company, job_title, source_url, status, tags::text,
       custom_fields::text AS custom_fields, pg_column_size(custom_fields) AS custom_size,
       provenance::text AS provenance, pg_column_size(provenance) AS provenance_size, created_at::text,
       updated_at::text, account_key, email_validation::text, validated_at::text, (job_id IS NOT NULL) AS has_job
     FROM leads JOIN unnest($1::uuid[]) WITH ORDINALITY AS b(id, ord) USING (id) ORDER BY ord`,
    [`{${ids.join(',')}}`],
  );
  const deltas = await database.query(
    `SELECT day::text, kind, value, sum(n)::int AS n FROM lead_stat_deltas WHERE user_id = $1 AND source_id = $2
     GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [owner.userId, owner.sourceId],
  );
  const marks = await database.query(
    `SELECT account_key, count(*)::int AS n FROM account_rollup_marks WHERE user_id = $1 GROUP BY 1 ORDER BY 1`,
    [owner.userId],
  );
  return { rows, deltas, marks };
}

const role = async (tx: Parameters<Parameters<typeof testDb.database.db.transaction>[0]>[0]) =>
  (await queryRows<{ r: string }>(tx, sql`SELECT current_setting('session_replication_role') AS r`))[0]!.r;

/**
 * Index scans of users, sources and jobs counted by this connection and not yet flushed to the statistics (read a
 * difference): the foreign keys' checks read one row each a lead.
 */
const parentReads = async (tx: Parameters<Parameters<typeof testDb.database.db.transaction>[0]>[0]) =>
  (
    await queryRows<{ n: number }>(
      tx,
      sql`SELECT coalesce(sum(idx_scan), 0)::int AS n FROM pg_stat_xact_user_tables
        WHERE relname IN ('users', 'sources', 'jobs')`,
    )
  )[0]!.n;

test('every trigger on leads and on the tables its triggers write fires whatever the role on PGlite (ENABLE ALWAYS), as it was on PostgreSQL', async () => {
  const triggers = await testDb.database.query<{ rel: string; tgname: string; tgenabled: string }>(
    `SELECT tgrelid::regclass::text AS rel, tgname, tgenabled FROM pg_trigger
     WHERE tgrelid IN ('leads'::regclass, 'lead_stat_deltas'::regclass, 'account_rollup_marks'::regclass)
       AND NOT tgisinternal ORDER BY 1, 2`,
  );
  assert.ok(triggers.length >= 8);
  // PostgreSQL keeps its triggers as they were: ALWAYS statement triggers would fire again on a logical
  // replication subscriber (migration 0033).
  const expected = testDatabaseKind() === 'pglite' ? 'A' : 'O';
  assert.deepEqual(
    triggers.filter((t) => t.tgenabled !== expected),
    [],
    'on PGlite, a trigger that is not ALWAYS is skipped by the embedded writer (migration 0033)',
  );
});

for (const { name: modeName, mode, database } of embeddedCases) {
  test(`embedded path (${modeName}): the same rows, analytics deltas and account marks as the normal path`, async () => {
    const normal = await newOwner(database());
    const embedded = await newOwner(database());
    // Two batches each: the second meets the first's rows (conflicts with stored leads), and new ones.
    const first = variedBatch();
    const second = [...variedBatch().slice(25), lead('late@acme.com', 'Late')];
    const copy = (rows: ScrapedLead[]) => rows.map((r) => ({ ...r, id: newId() }));
    const [firstE, secondE] = [copy(first), copy(second)];
    const idsN: string[][] = [];
    const idsE: string[][] = [];
    for (const [rowsN, rowsE] of [
      [first, firstE],
      [second, secondE],
    ] as const) {
      idsN.push(
        await database().db.transaction(async (tx) => {
          const reads = await parentReads(tx);
          const ids = await leadRepository(tx).insertScraped(normal, rowsN);
          assert.ok((await parentReads(tx)) - reads >= 3 * ids.length);
          return ids;
        }),
      );
      idsE.push(
        await database().db.transaction(async (tx) => {
          const reads = await parentReads(tx);
          const ids = await leadRepository(tx).insertScraped(embedded, rowsE, mode);
          assert.equal(await role(tx), 'origin', 'the role is back once the batch is in');
          // The parents were read once (the lock), not once per row by the foreign keys' checks.
          assert.equal((await parentReads(tx)) - reads, 3);
          return ids;
        }),
      );
    }
    // The same rows of each batch inserted (by position), in the same order.
    const position = (rows: ScrapedLead[], ids: string[]) => ids.map((id) => rows.findIndex((r) => r.id === id));
    assert.deepEqual(position(firstE, idsE[0]!), position(first, idsN[0]!));
    assert.deepEqual(position(secondE, idsE[1]!), position(second, idsN[1]!));
    assert.ok(idsN[0]!.length < first.length && idsN[1]!.length < second.length, 'some rows were duplicates');
    const storedN = await storedAs(database(), normal, idsN.flat());
    const storedE = await storedAs(database(), embedded, idsE.flat());
    assert.equal(storedE.rows.length, idsE.flat().length);
    assert.deepEqual(storedE.rows, storedN.rows);
    assert.ok(storedN.deltas.length >= 6);
    assert.deepEqual(storedE.deltas, storedN.deltas);
    assert.ok(storedN.marks.length >= 4);
    assert.deepEqual(storedE.marks, storedN.marks);
    const [temp] = await database().query<{ t: string | null }>(
      `SELECT to_regclass('pg_temp.scraped_lead_batch')::text AS t`,
    );
    if (mode.copy) assert.ok(temp!.t, 'the rows went through the COPY table');
  });

  test(`embedded path (${modeName}): a batch whose job or source was deleted fails like the foreign key`, async () => {
    for (const gone of ['job', 'source', 'user'] as const) {
      const errors: Array<{ code?: string; constraint?: string }> = [];
      for (const path of ['normal', 'embedded'] as const) {
        const o = await newOwner(database());
        const table = { job: 'jobs', source: 'sources', user: 'users' }[gone];
        const id = { job: o.jobId, source: o.sourceId, user: o.userId }[gone];
        await database().query(`DELETE FROM ${table} WHERE id = $1`, [id]);
        const err = await database()
          .db.transaction((tx) =>
            leadRepository(tx).insertScraped(o, variedBatch(), path === 'embedded' ? mode : undefined),
          )
          .then(
            () => assert.fail(`a batch of a deleted ${gone} was stored (${path})`),
            (e: { code?: string; constraint?: string; cause?: { code?: string; constraint?: string } }) => e.cause ?? e,
          );
        errors.push({ code: err.code, constraint: err.constraint });
        const [orphans] = await database().query<{ n: number }>(
          'SELECT count(*)::int AS n FROM leads WHERE user_id = $1 OR source_id = $2 OR job_id = $3',
          [o.userId, o.sourceId, o.jobId],
        );
        assert.equal(orphans!.n, 0, `no orphan rows (${gone} deleted, ${path})`);
      }
      assert.equal(errors[0]!.code, '23503');
      assert.deepEqual(errors[1], errors[0], `the same error as the normal path (${gone} deleted)`);
    }
  });

  test(`embedded path (${modeName}): the role is back after the batch, so a later foreign-key violation is caught`, async () => {
    const o = await newOwner(database());
    const bogus = { ...o, jobId: newId() };
    await database().db.transaction(async (tx) => {
      await leadRepository(tx).insertScraped(o, [lead('role1@acme.com', 'Role')], mode);
      assert.equal(await role(tx), 'origin');
      // In the same transaction (one connection): a row pointing at no job is refused.
      await assert.rejects(
        tx.transaction((sp) => leadRepository(sp).insertScraped(bogus, [lead('role2@acme.com', 'Role')])),
        (e: { code?: string; cause?: { code?: string } }) => (e.cause ?? e).code === '23503',
      );
      // A second batch in the same transaction (COPY: the temp table emptied first) stores only its own rows.
      const ids = await leadRepository(tx).insertScraped(o, [lead('role3@acme.com', 'Role')], mode);
      assert.equal(ids.length, 1);
    });
    // A batch inside a savepoint that is rolled back leaves the role as it was too.
    await database().db.transaction(async (tx) => {
      await tx
        .transaction(async (sp) => {
          await leadRepository(sp).insertScraped(o, [lead('role4@acme.com', 'Role')], mode);
          throw new Error('roll the savepoint back');
        })
        .catch(() => {});
      assert.equal(await role(tx), 'origin');
    });
    // After the transaction, on the same database (PGlite: the one connection), a plain INSERT is still checked.
    await assert.rejects(
      database().query(
        `INSERT INTO leads (id, user_id, source_id, job_id, email, status) VALUES ($1, $2, $3, $4, 'x@acme.com', 'NEW')`,
        [newId(), o.userId, o.sourceId, newId()],
      ),
      (e: { code?: string }) => e.code === '23503',
    );
    const [n] = await database().query<{ n: number }>(
      `SELECT count(*)::int AS n FROM leads WHERE job_id = $1 AND email LIKE 'role%'`,
      [o.jobId],
    );
    assert.equal(n!.n, 2, 'role1 and role3 stored once each; role4 rolled back');
    // Outside a transaction the embedded path makes its own.
    assert.equal((await leadRepository(database().db).insertScraped(o, [lead('role5@acme.com', 'R')], mode)).length, 1);
  });

  test(`embedded path (${modeName}): a trigger that fires in one role only sends the batch down the normal path`, async () => {
    const o = await newOwner(database());
    await database().query(`CREATE TABLE test_seen (email text)`);
    await database().query(
      `CREATE FUNCTION test_seen_lead() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN INSERT INTO test_seen VALUES (NEW.email); RETURN NEW; END $$`,
    );
    await database().query(
      'CREATE TRIGGER test_seen_lead BEFORE INSERT ON leads FOR EACH ROW EXECUTE FUNCTION test_seen_lead()',
    );
    try {
      await database().db.transaction((tx) =>
        leadRepository(tx).insertScraped(o, [lead('seen@acme.com', 'Seen')], mode),
      );
      const seen = await database().query<{ email: string }>('SELECT email FROM test_seen');
      assert.deepEqual(seen, [{ email: 'seen@acme.com' }]);
    } finally {
      await database().query('DROP TRIGGER test_seen_lead ON leads');
      await database().query('DROP FUNCTION test_seen_lead()');
      await database().query('DROP TABLE test_seen');
    }
  });
}
