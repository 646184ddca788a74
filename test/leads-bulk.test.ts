import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq, inArray } from 'drizzle-orm';
import { leads } from '../src/db/schema/index.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ workers: false }));
});
after(async () => ctx?.close());

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

/** Inserts leads straight into the table (fast fixtures). */
async function seed(user: TestUser, count: number, values: Partial<typeof leads.$inferInsert> = {}): Promise<string[]> {
  const rows = await ctx.deps.db
    .insert(leads)
    .values(
      Array.from({ length: count }, (_, i) => ({
        userId: user.id,
        firstName: `L${i}`,
        sourceUrl: 'https://e.org',
        ...values,
      })),
    )
    .returning({ id: leads.id });
  return rows.map((r) => r.id);
}

async function rowsOf(ids: string[]) {
  const rows = await ctx.deps.db.select().from(leads).where(inArray(leads.id, ids));
  return new Map(rows.map((r) => [r.id, r]));
}

const bulkDelete = (user: TestUser, payload: unknown) =>
  ctx.inject({ method: 'POST', url: '/api/leads/bulk', headers: user.headers, payload: payload as object });
const bulkPatch = (user: TestUser, payload: unknown) =>
  ctx.inject({ method: 'PATCH', url: '/api/leads/bulk', headers: user.headers, payload: payload as object });

const sortById = <T extends { id: string }>(errors: T[]) => [...errors].sort((a, b) => a.id.localeCompare(b.id));

describe('POST /api/leads/bulk (delete)', () => {
  test("deletes the caller's leads; unknown, malformed and foreign ids fail, duplicates count once", async () => {
    const mine = await seed(alice, 3);
    const [foreign] = await seed(bob, 1);
    const res = await bulkDelete(alice, {
      leadIds: [mine[0], mine[1], mine[2]!.toUpperCase(), mine[0], foreign, UNKNOWN_ID, 'junk', 'junk'],
    });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.deleted, 3);
    assert.equal(data.failed, 3);
    assert.deepEqual(
      sortById(data.errors),
      sortById([
        { id: foreign!, error: 'not_found' },
        { id: UNKNOWN_ID, error: 'not_found' },
        { id: 'junk', error: 'not_found' },
      ]),
    );
    const left = await rowsOf([...mine, foreign!]);
    assert.deepEqual([...left.keys()], [foreign]);
  });

  test('400 for 0 ids, 1001 ids, a missing or wrong-typed list', async () => {
    assertValidation(await bulkDelete(alice, { leadIds: [] }), 'leadIds');
    assertValidation(await bulkDelete(alice, { leadIds: Array.from({ length: 1001 }, () => UNKNOWN_ID) }), 'leadIds');
    assertValidation(await bulkDelete(alice, {}), 'leadIds');
    assertValidation(await bulkDelete(alice, { leadIds: 'x' }), 'leadIds');
  });

  test('1000 ids in one request', async () => {
    const ids = await seed(alice, 1000);
    const data = (await bulkDelete(alice, { leadIds: ids })).json().data;
    assert.deepEqual([data.deleted, data.failed], [1000, 0]);
    assert.equal((await rowsOf(ids.slice(0, 50))).size, 0);
  });
});

describe('PATCH /api/leads/bulk', () => {
  test('sets the status; foreign, unknown and malformed ids fail and stay unchanged', async () => {
    const mine = await seed(alice, 2);
    const [foreign] = await seed(bob, 1);
    const res = await bulkPatch(alice, {
      leadIds: [...mine, foreign, UNKNOWN_ID, 'nope', mine[0]],
      updates: { status: 'QUALIFIED' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.updated, 2);
    assert.equal(data.failed, 3);
    assert.deepEqual(data.errors.map((e: { id: string }) => e.id).sort(), [foreign, UNKNOWN_ID, 'nope'].sort());
    const rows = await rowsOf([...mine, foreign!]);
    assert.equal(rows.get(mine[0]!)!.status, 'QUALIFIED');
    assert.equal(rows.get(mine[1]!)!.status, 'QUALIFIED');
    assert.equal(rows.get(foreign!)!.status, 'NEW');
  });

  test('tags: add, de-duplicate, remove, keeping the order; status untouched', async () => {
    const [a] = await seed(alice, 1, { tags: ['a', 'b', 'c'], status: 'CONTACTED' });
    const [b] = await seed(alice, 1, { tags: [] });
    const [c] = await seed(alice, 1, { tags: ['x', 'b'] });
    const res = await bulkPatch(alice, {
      leadIds: [a, b, c],
      updates: { addTags: ['d', ' a ', 'e', 'd'], removeTags: ['b', 'e', 'zzz'] },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().data, { updated: 3, failed: 0, errors: [] });
    const rows = await rowsOf([a!, b!, c!]);
    assert.deepEqual(rows.get(a!)!.tags, ['a', 'c', 'd']);
    assert.deepEqual(rows.get(b!)!.tags, ['d', 'a']);
    assert.deepEqual(rows.get(c!)!.tags, ['x', 'd', 'a']);
    assert.equal(rows.get(a!)!.status, 'CONTACTED');
  });

  test('removeTags alone, and status with tags together', async () => {
    const [a] = await seed(alice, 1, { tags: ['keep', 'drop', 'other'] });
    await bulkPatch(alice, { leadIds: [a], updates: { removeTags: ['drop'] } });
    assert.deepEqual((await rowsOf([a!])).get(a!)!.tags, ['keep', 'other']);
    await bulkPatch(alice, { leadIds: [a], updates: { status: 'REPLIED', addTags: ['replied'] } });
    const row = (await rowsOf([a!])).get(a!)!;
    assert.deepEqual([row.status, row.tags], ['REPLIED', ['keep', 'other', 'replied']]);
  });

  test('a lead that would pass 50 tags is left unchanged and reported', async () => {
    const [full] = await seed(alice, 1, { tags: Array.from({ length: 49 }, (_, i) => `t${i}`) });
    const [roomy] = await seed(alice, 1);
    const data = (await bulkPatch(alice, { leadIds: [full, roomy], updates: { addTags: ['n1', 'n2'] } })).json().data;
    assert.deepEqual(data, { updated: 1, failed: 1, errors: [{ id: full, error: 'too_many_tags' }] });
    const rows = await rowsOf([full!, roomy!]);
    assert.equal(rows.get(full!)!.tags.length, 49);
    assert.deepEqual(rows.get(roomy!)!.tags, ['n1', 'n2']);
  });

  test('400: empty updates, unknown status, bad tags, 0 or 1001 ids', async () => {
    const [id] = await seed(alice, 1);
    assertValidation(await bulkPatch(alice, { leadIds: [id], updates: {} }), 'updates');
    assertValidation(await bulkPatch(alice, { leadIds: [id], updates: { addTags: [], removeTags: [] } }), 'updates');
    assertValidation(await bulkPatch(alice, { leadIds: [id] }), 'updates');
    assertValidation(await bulkPatch(alice, { leadIds: [id], updates: { status: 'LOST' } }), 'updates.status');
    for (const status of ['VALID', 'INVALID', 'RISKY']) {
      const res = await bulkPatch(alice, { leadIds: [id], updates: { status, addTags: ['not-written'] } });
      assertValidation(res, 'updates.status');
      assert.match(JSON.stringify(res.json().error.details), /set by email validation only/);
    }
    const row = (await rowsOf([id!])).get(id!)!;
    assert.deepEqual([row.status, row.tags], ['NEW', []], 'a refused status writes nothing');
    assertValidation(await bulkPatch(alice, { leadIds: [id], updates: { addTags: [''] } }), 'updates.addTags.0');
    assertValidation(await bulkPatch(alice, { leadIds: [], updates: { status: 'NEW' } }), 'leadIds');
    assertValidation(
      await bulkPatch(alice, { leadIds: Array.from({ length: 1001 }, () => id), updates: { status: 'NEW' } }),
      'leadIds',
    );
  });

  test('1000 ids: one request, every lead updated', async () => {
    const ids = await seed(alice, 1000, { tags: ['seed'] });
    const timings: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      const res = await bulkPatch(alice, {
        leadIds: ids,
        updates: { status: i % 2 ? 'CONTACTED' : 'QUALIFIED', addTags: [`round${i}`], removeTags: ['seed'] },
      });
      timings.push(performance.now() - started);
      assert.equal(res.json().data.updated, 1000);
    }
    const row = (await ctx.deps.db.select().from(leads).where(eq(leads.id, ids[500]!)))[0]!;
    assert.deepEqual(row.tags, ['round0', 'round1', 'round2', 'round3', 'round4']);
    timings.sort((x, y) => x - y);
    console.log(
      `# bulk PATCH 1000 ids: median ${timings[2]!.toFixed(1)} ms (${timings.map((t) => t.toFixed(0)).join(', ')})`,
    );
  });
});

describe('bulk ids of any shape', () => {
  test('non-string entries count as failed, they do not refuse the request', async () => {
    const [lead] = await ctx.deps.db.insert(leads).values({ userId: alice.id, email: 'shape@example.com' }).returning();
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/leads/bulk',
      headers: alice.headers,
      payload: { leadIds: [lead!.id, 'abc', 123, null, { id: 1 }] },
    });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.deleted, 1);
    assert.equal(data.failed, 4);
    assert.deepEqual(data.errors.map((e: { id: string }) => e.id).sort(), ['123', 'abc', 'null', '{"id":1}'].sort());
    const upd = await ctx.inject({
      method: 'PATCH',
      url: '/api/leads/bulk',
      headers: alice.headers,
      payload: { leadIds: [42], updates: { status: 'QUALIFIED' } },
    });
    assert.equal(upd.statusCode, 200, upd.body);
    assert.deepEqual(upd.json().data, { updated: 0, failed: 1, errors: [{ id: '42', error: 'not_found' }] });
  });
});
