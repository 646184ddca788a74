import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { suppressions } from '../src/db/schema/index.ts';
import { suppressionOf } from '../src/modules/suppressions/suppressions.service.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext());
});
after(async () => {
  await ctx?.close();
});

const add = (user: TestUser, items: unknown[]) => ctx.call(user, 'POST', '/api/suppressions', { items });
const check = (user: TestUser, value: string) =>
  ctx.call(user, 'GET', `/api/suppressions?value=${encodeURIComponent(value)}`);
const count = async (user: TestUser) =>
  (await ctx.deps.db.select().from(suppressions).where(eq(suppressions.userId, user.id))).length;

describe('POST /api/suppressions', () => {
  test('values are normalized: case, whitespace, IDN domains in punycode; duplicates merge', async () => {
    const res = await add(alice, [
      { type: 'email', value: '  John.Doe@Example.COM ', reason: 'asked' },
      { type: 'email', value: 'john.doe@example.com', reason: 'asked twice' },
      { type: 'domain', value: ' Bücher.Example ' },
      { type: 'email', value: 'Anna@Bücher.example' },
    ]);
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.added, 3);
    assert.equal(data.merged, 1);
    const values = data.suppressions.map((s: { value: string }) => s.value).sort();
    assert.deepEqual(values, ['anna@xn--bcher-kva.example', 'john.doe@example.com', 'xn--bcher-kva.example']);
    const john = data.suppressions.find((s: { value: string }) => s.value === 'john.doe@example.com');
    assert.equal(john.reason, 'asked twice');
    assert.equal(john.source, 'manual');

    const again = await add(alice, [{ type: 'email', value: 'JOHN.DOE@example.com' }]);
    assert.equal(again.json().data.added, 0);
    assert.equal(again.json().data.merged, 1);
    assert.equal(again.json().data.suppressions[0].reason, 'asked twice', 'a merge without reason keeps the old one');
    assert.equal(await count(alice), 3);
  });

  test('a malformed value is a 400 naming its index, and nothing is stored', async () => {
    const before = await count(alice);
    const res = await add(alice, [
      { type: 'email', value: 'ok@valid.example' },
      { type: 'domain', value: 'fine.example' },
      { type: 'email', value: 'still@fine.example' },
      { type: 'email', value: 'not-an-address' },
    ]);
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().error.code, 'VALIDATION_ERROR');
    assert.equal(res.json().error.details[0].field, 'items.3.value');
    const bad = await add(alice, [{ type: 'domain', value: 'no spaces.example' }]);
    assert.equal(bad.json().error.details[0].field, 'items.0.value');
    const badType = await add(alice, [{ type: 'phone', value: 'x' }]);
    assert.equal(badType.statusCode, 400);
    assert.equal(badType.json().error.details[0].field, 'items.0.type');
    assert.equal(await count(alice), before);
  });

  test('1001 items is a 400 naming items; 1000 are taken', async () => {
    const items = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ type: 'email', value: `bulk${i}@bulk.example` }));
    const tooMany = await add(bob, items(1001));
    assert.equal(tooMany.statusCode, 400);
    assert.equal(tooMany.json().error.details[0].field, 'items');
    assert.equal(await count(bob), 0);
    const res = await add(bob, items(1000));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.added, 1000);
    assert.equal(await count(bob), 1000);
  });
});

describe('GET /api/suppressions', () => {
  test('?value= matches an address by its own entry, its domain, or a parent domain', async () => {
    await add(alice, [
      { type: 'domain', value: 'corp.example', reason: 'competitor' },
      { type: 'email', value: 'ceo@sub.corp.example', reason: 'vip' },
    ]);
    const own = (await check(alice, ' CEO@Sub.Corp.Example ')).json().data;
    assert.equal(own.match.value, 'ceo@sub.corp.example');
    const parent = (await check(alice, 'someone@deep.sub.corp.example')).json().data;
    assert.equal(parent.match.value, 'corp.example');
    assert.equal(parent.match.type, 'domain');
    const domain = (await check(alice, 'Sub.CORP.example')).json().data;
    assert.equal(domain.match.value, 'corp.example');
    const idn = (await check(alice, 'anna@BÜCHER.example')).json().data;
    assert.equal(idn.match.value, 'anna@xn--bcher-kva.example');
    const none = (await check(alice, 'someone@corp.example.org')).json().data;
    assert.equal(none.match, null);
    assert.deepEqual(none.suppressions, []);
    const bad = await check(alice, 'not a value');
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.details[0].field, 'value');
  });

  test('search, filters and pagination', async () => {
    const first = await ctx.call(alice, 'GET', '/api/suppressions?limit=2');
    assert.equal(first.statusCode, 200);
    const page1 = first.json().data;
    assert.equal(page1.suppressions.length, 2);
    assert.ok(page1.nextCursor);
    const page2 = (await ctx.call(alice, 'GET', `/api/suppressions?limit=2&cursor=${page1.nextCursor}`)).json().data;
    const ids = new Set([...page1.suppressions, ...page2.suppressions].map((s: { id: string }) => s.id));
    assert.equal(ids.size, page1.suppressions.length + page2.suppressions.length);
    const found = (await ctx.call(alice, 'GET', '/api/suppressions?q=CORP&type=domain')).json().data;
    assert.deepEqual(
      found.suppressions.map((s: { value: string }) => s.value),
      ['corp.example'],
    );
    const bad = await ctx.call(alice, 'GET', '/api/suppressions?cursor=nope');
    assert.equal(bad.statusCode, 400);
  });

  test('suppressionOf checks many addresses in one call', async () => {
    const found = await suppressionOf(ctx.deps.db, alice.id, [
      'CEO@sub.corp.example',
      'x@other.corp.example',
      'free@nowhere.example',
      'broken',
    ]);
    assert.deepEqual([...found.keys()].sort(), ['ceo@sub.corp.example', 'x@other.corp.example']);
    assert.equal(found.get('x@other.corp.example')?.value, 'corp.example');
  });
});

describe('isolation and DELETE', () => {
  test("another user's entries are invisible, and deleting them is a 404", async () => {
    const mine = (await add(alice, [{ type: 'email', value: 'private@alice.example' }])).json().data.suppressions[0];
    assert.equal((await check(bob, 'private@alice.example')).json().data.match, null);
    const listed = (await ctx.call(bob, 'GET', '/api/suppressions?q=alice')).json().data;
    assert.deepEqual(listed.suppressions, []);
    assert.equal((await ctx.call(bob, 'DELETE', `/api/suppressions/${mine.id}`)).statusCode, 404);
    assert.equal((await ctx.call(alice, 'DELETE', '/api/suppressions/not-a-uuid')).statusCode, 404);
    const del = await ctx.call(alice, 'DELETE', `/api/suppressions/${mine.id}`);
    assert.equal(del.statusCode, 200, del.body);
    assert.equal((await check(alice, 'private@alice.example')).json().data.match, null);
    assert.equal((await ctx.call(alice, 'DELETE', `/api/suppressions/${mine.id}`)).statusCode, 404);
  });

  test('validation answers suppressed for an address suppressed by a parent domain', async () => {
    const lead = await ctx.call(alice, 'POST', '/api/leads', {
      sourceUrl: 'https://example.com/team',
      email: 'cto@corp.example',
    });
    assert.equal(lead.statusCode, 201, lead.body);
    const res = await ctx.call(alice, 'POST', `/api/leads/${lead.json().data.lead.id}/validate-email`);
    assert.ok(res.json().data.errors.includes('suppressed'), res.body);
  });
});
