// What the console's leads pages read from the leads list and a lead: the `sort` of GET /api/leads (oldest first,
// its cursor continuing in that order, filters kept) and a scraped lead's provenance on GET /api/leads/{id}.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { leads } from '../src/db/schema/index.ts';
import { newId } from '../src/shared/ids.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';
import { seedLeads } from './helpers/seed.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let ids: string[];

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ workers: false }));
  ids = await seedLeads(
    ctx.deps.db,
    alice.id,
    Array.from({ length: 7 }, (_, i) => ({
      firstName: `P${i}`,
      company: i % 2 ? 'Odd Co' : 'Even Co',
      tags: i % 3 === 0 ? ['vip'] : [],
    })),
  );
  await seedLeads(ctx.deps.db, bob.id, [{ firstName: 'Bob lead', company: 'Odd Co' }]);
});
after(async () => ctx?.close());

async function pages(user: TestUser, query: string): Promise<string[][]> {
  const out: string[][] = [];
  let cursor: string | null = null;
  do {
    const res = await ctx.call(user, 'GET', `/api/leads?${query}${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    out.push(data.leads.map((l: { id: string }) => l.id));
    cursor = data.nextCursor;
  } while (cursor);
  return out;
}

test('sort=oldest walks the list forwards, page by page; newest stays the default', async () => {
  assert.deepEqual(await pages(alice, 'limit=3&sort=oldest'), [ids.slice(0, 3), ids.slice(3, 6), ids.slice(6)]);
  const reversed = [...ids].reverse();
  assert.deepEqual(await pages(alice, 'limit=3'), [reversed.slice(0, 3), reversed.slice(3, 6), reversed.slice(6)]);
  assert.deepEqual(await pages(alice, 'limit=3&sort=newest'), await pages(alice, 'limit=3'));
});

test('sort keeps the filters and the owner', async () => {
  assert.deepEqual(await pages(alice, 'limit=2&sort=oldest&company=odd%20co'), [[ids[1], ids[3]], [ids[5]]]);
  assert.deepEqual(await pages(alice, 'limit=5&sort=oldest&tag=vip'), [[ids[0], ids[3], ids[6]]]);
  assert.deepEqual(await pages(bob, 'sort=oldest&company=Odd%20Co').then((p) => p.flat().length), 1);
});

test('an unknown sort is a 400 naming it', async () => {
  const res = await ctx.call(alice, 'GET', '/api/leads?sort=largest');
  assertValidation(res, 'sort');
});

test("a lead's provenance: the page it was found on and the selectors; null for a lead added by hand", async () => {
  const id = newId();
  await ctx.deps.db.insert(leads).values({
    id,
    userId: alice.id,
    firstName: 'Ada',
    email: 'ada@example.org',
    sourceUrl: 'https://directory.example.org/people?page=2',
    provenance: {
      pageUrl: 'https://directory.example.org/people?page=2',
      selector: '.email',
      selectors: { email: '.email', firstName: '.name', ignored: 3 },
      visible: true,
      other: 'left out',
    },
  });
  const res = await ctx.call(alice, 'GET', `/api/leads/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json().data.lead.provenance, {
    pageUrl: 'https://directory.example.org/people?page=2',
    selector: '.email',
    selectors: { email: '.email', firstName: '.name' },
    visible: true,
  });
  const byHand = await ctx.call(alice, 'POST', '/api/leads', { sourceUrl: 'https://example.org/x', firstName: 'Hand' });
  assert.equal(byHand.statusCode, 201, byHand.body);
  assert.equal(byHand.json().data.lead.provenance, null);
});

test('POST /api/leads/export: the selected leads, or every lead the filters find, as CSV', async () => {
  const csv = async (body: unknown) => {
    const res = await ctx.call(alice, 'POST', '/api/leads/export', body);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/csv/);
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="leads-\d{4}-\d\d-\d\d\.csv"$/);
    return res.body.trimEnd().split('\r\n');
  };
  const header = 'id,firstName,lastName,email,phone,company,jobTitle,status,tags,sourceUrl,createdAt';
  const selected = await csv({ leadIds: [ids[2], ids[0], ids[2], 'nope', '01900000-0000-7000-8000-000000000000'] });
  assert.equal(selected[0], header);
  assert.deepEqual(
    selected.slice(1).map((l) => l.split(',').slice(0, 2)),
    [
      [ids[2], 'P2'],
      [ids[0], 'P0'],
    ],
  );
  assert.equal(selected[2]!.split(',')[8], 'vip');
  // Filters as the list's, newest first; pages of the export follow each other (1000 a page: one page here).
  const odd = await csv({ filter: { company: 'odd co' } });
  assert.deepEqual(
    odd.slice(1).map((l) => l.split(',')[0]),
    [ids[5], ids[3], ids[1]],
  );
  const all = await csv({});
  assert.ok(all.length >= 1 + 7, 'every lead of the caller');
  assert.ok(!all.join('\n').includes('Bob lead'));
  // A value a spreadsheet would run is neutralised.
  await ctx.call(alice, 'PATCH', `/api/leads/${ids[4]}`, { company: '=HYPERLINK("x")' });
  const formula = await csv({ leadIds: [ids[4]] });
  assert.equal(formula[1]!.split(',"')[1]?.startsWith("'=HYPERLINK"), true, formula[1]);
  assertValidation(await ctx.call(alice, 'POST', '/api/leads/export', { leadIds: [ids[0]], filter: {} }), 'filter');
  assertValidation(await ctx.call(alice, 'POST', '/api/leads/export', { filter: { limit: 5 } }), 'filter');
});
