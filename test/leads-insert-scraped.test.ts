/**
 * The scraped-lead INSERT (leadRepository.insertScraped, migration 0013): the account key it computes with the
 * inlined `account_key_from` is the one `account_key_of` (every other write) gives, it calls no SQL function
 * per row, and the `?tag=` filter still finds tagged leads through the partial GIN index.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { queryRows } from '../src/db/client.ts';
import { leadRepository, type ScrapedLead } from '../src/modules/leads/leads.repository.ts';
import { newId } from '../src/shared/ids.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

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
