import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq, inArray } from 'drizzle-orm';
import { jobs, leads, sources } from '../src/db/schema/index.ts';
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
const LIST_KEYS = [
  'company',
  'createdAt',
  'email',
  'firstName',
  'id',
  'jobTitle',
  'lastName',
  'phone',
  'sourceUrl',
  'status',
  'tags',
];

async function createLead(user: TestUser, fields: Record<string, unknown> = {}) {
  const res = await ctx.inject({
    method: 'POST',
    url: '/api/leads',
    headers: user.headers,
    payload: { sourceUrl: 'https://example.org/people', ...fields },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.lead;
}

const get = (user: TestUser, url: string) => ctx.inject({ method: 'GET', url, headers: user.headers });
const patch = (user: TestUser, id: string, payload: unknown) =>
  ctx.inject({ method: 'PATCH', url: `/api/leads/${id}`, headers: user.headers, payload: payload as object });

async function makeSource(user: TestUser, name: string) {
  const [source] = await ctx.deps.db
    .insert(sources)
    .values({ userId: user.id, name, url: `https://${name}.example.org`, scrapeType: 'STATIC' })
    .returning();
  const [job] = await ctx.deps.db
    .insert(jobs)
    .values({ userId: user.id, sourceId: source!.id, name: `${name} run`, status: 'COMPLETED' })
    .returning();
  return { source: source!, job: job! };
}

describe('POST /api/leads', () => {
  test('201 with the full lead; NEW even with a well-formed email (only validation sets VALID)', async () => {
    const lead = await createLead(alice, {
      firstName: '  Ada ',
      lastName: 'Lovelace',
      email: 'ada@analytical.example',
      phone: '+44 20 1234',
      company: 'Engines Ltd',
      jobTitle: 'CTO',
    });
    assert.match(lead.id, /^[0-9a-f-]{36}$/);
    assert.equal(lead.firstName, 'Ada');
    assert.equal(lead.email, 'ada@analytical.example');
    assert.equal(lead.status, 'NEW');
    assert.deepEqual(lead.tags, []);
    assert.equal(lead.sourceUrl, 'https://example.org/people');
    assert.equal(lead.job, null);
    assert.equal(lead.source, null);
    assert.equal(lead.emailValidation, null);
    assert.ok(Date.parse(lead.createdAt));
    const [row] = await ctx.deps.db.select().from(leads).where(eq(leads.id, lead.id));
    assert.equal(row!.userId, alice.id);
    assert.equal(row!.company, 'Engines Ltd');
  });

  test('NEW without an email; empty strings are stored as null', async () => {
    const lead = await createLead(alice, { firstName: 'No', email: '', phone: '' });
    assert.equal(lead.status, 'NEW');
    assert.equal(lead.email, null);
    assert.equal(lead.phone, null);
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['missing sourceUrl', { firstName: 'x' }, 'sourceUrl'],
    ['sourceUrl not a URL', { sourceUrl: 'not a url' }, 'sourceUrl'],
    ['sourceUrl not http', { sourceUrl: 'javascript:alert(1)' }, 'sourceUrl'],
    ['bad email', { sourceUrl: 'https://e.org', email: 'not-an-email' }, 'email'],
    ['email without a TLD', { sourceUrl: 'https://e.org', email: 'a@localhost' }, 'email'],
    ['email with double dots', { sourceUrl: 'https://e.org', email: 'a..b@example.com' }, 'email'],
    [
      'email too long',
      {
        sourceUrl: 'https://e.org',
        email: `${'a'.repeat(60)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`,
      },
      'email',
    ],
    ['wrong type', { sourceUrl: 'https://e.org', company: 42 }, 'company'],
  ];
  for (const [name, payload, field] of invalid) {
    test(`400 naming the field: ${name}`, async () => {
      assertValidation(await ctx.inject({ method: 'POST', url: '/api/leads', headers: alice.headers, payload }), field);
    });
  }

  test('401 without a key', async () => {
    assert.equal(
      (await ctx.inject({ method: 'POST', url: '/api/leads', payload: { sourceUrl: 'https://e.org' } })).statusCode,
      401,
    );
  });
});

describe('GET /api/leads', () => {
  let user: TestUser;
  let ids: string[];
  let fixture: Awaited<ReturnType<typeof makeSource>>;
  before(async () => {
    user = await ctx.signup();
    fixture = await makeSource(user, 'acme');
    ids = [];
    for (let i = 0; i < 25; i++) {
      ids.push(
        (
          await createLead(user, {
            firstName: `P${i}`,
            company: i % 3 === 0 ? 'Acme Corp' : i % 3 === 1 ? 'ACME CORP' : 'Acme Corporation',
            email: i % 2 ? `p${i}@acme.example` : undefined,
          })
        ).id,
      );
    }
    await ctx.deps.db
      .update(leads)
      .set({ sourceId: fixture.source.id, jobId: fixture.job.id })
      .where(eq(leads.id, ids[3]!));
    await ctx.inject({
      method: 'PATCH',
      url: '/api/leads/bulk',
      headers: user.headers,
      payload: { leadIds: [ids[4], ids[5]], updates: { addTags: ['vip'] } },
    });
    await createLead(bob, { company: 'Acme Corp' });
  });

  test('newest first, the list fields only, nothing of other users', async () => {
    const res = await get(user, '/api/leads');
    assert.equal(res.statusCode, 200);
    const { leads: page, nextCursor } = res.json().data;
    assert.equal(page.length, 25);
    assert.equal(nextCursor, null);
    assert.deepEqual(
      page.map((l: { id: string }) => l.id),
      [...ids].reverse(),
    );
    assert.deepEqual(Object.keys(page[0]).sort(), LIST_KEYS);
  });

  test('pagination walk: every lead once, in order, nextCursor null at the end', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(user, `/api/leads?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.statusCode, 200);
      const data = res.json().data;
      assert.ok(data.leads.length <= 7);
      seen.push(...data.leads.map((l: { id: string }) => l.id));
      cursor = data.nextCursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 4);
    assert.equal(new Set(seen).size, 25);
    assert.deepEqual(seen, [...ids].reverse());
  });

  test('default limit 50, max 1000', async () => {
    assertValidation(await get(user, '/api/leads?limit=1001'), 'limit');
    assertValidation(await get(user, '/api/leads?limit=0'), 'limit');
    assert.equal((await get(user, '/api/leads?limit=1000')).statusCode, 200);
  });

  test('company: case-insensitive exact match', async () => {
    const res = await get(user, '/api/leads?company=acme%20corp');
    const found = res.json().data.leads.map((l: { id: string }) => l.id);
    assert.deepEqual(found, ids.filter((_, i) => i % 3 !== 2).reverse());
    assert.equal((await get(user, '/api/leads?company=Acme')).json().data.leads.length, 0);
  });

  test('company filter pages with the cursor too', async () => {
    const first = (await get(user, '/api/leads?company=ACME%20corporation&limit=5')).json().data;
    assert.equal(first.leads.length, 5);
    const second = (await get(user, `/api/leads?company=ACME%20corporation&limit=5&cursor=${first.nextCursor}`)).json()
      .data;
    assert.deepEqual(
      [...first.leads, ...second.leads].map((l: { id: string }) => l.id),
      ids.filter((_, i) => i % 3 === 2).reverse(),
    );
    assert.equal(second.nextCursor, null);
  });

  test('status, jobId, sourceId and tag filters', async () => {
    assert.deepEqual((await get(user, '/api/leads?status=VALID')).json().data.leads, [], 'every lead starts NEW');
    const valid = ids.filter((_, i) => i % 2);
    // VALID comes from email validation only (the API refuses it), so it is set here as validation would.
    await ctx.deps.db.update(leads).set({ status: 'VALID' }).where(inArray(leads.id, valid));
    const byStatus = (await get(user, '/api/leads?status=VALID')).json().data.leads;
    assert.deepEqual(
      byStatus.map((l: { id: string }) => l.id),
      ids.filter((_, i) => i % 2).reverse(),
    );
    assert.deepEqual(
      (await get(user, `/api/leads?jobId=${fixture.job.id}`)).json().data.leads.map((l: { id: string }) => l.id),
      [ids[3]],
    );
    assert.deepEqual(
      (await get(user, `/api/leads?sourceId=${fixture.source.id}`)).json().data.leads.map((l: { id: string }) => l.id),
      [ids[3]],
    );
    assert.deepEqual(
      (await get(user, '/api/leads?tag=vip')).json().data.leads.map((l: { id: string }) => l.id),
      [ids[5], ids[4]],
    );
    assert.deepEqual(
      (await get(user, `/api/leads?tag=vip&status=NEW`)).json().data.leads.map((l: { id: string }) => l.id),
      [ids[4]],
    );
    assert.equal((await get(alice, `/api/leads?jobId=${fixture.job.id}`)).json().data.leads.length, 0);
  });

  test('400 naming a malformed jobId, sourceId, status or cursor', async () => {
    assertValidation(await get(user, '/api/leads?jobId=123'), 'jobId');
    assertValidation(await get(user, '/api/leads?sourceId=abc'), 'sourceId');
    assertValidation(await get(user, '/api/leads?status=HOT'), 'status');
    assertValidation(await get(user, '/api/leads?cursor=not-a-cursor'), 'cursor');
  });
});

describe('GET /api/leads/{id}', () => {
  test('the lead with its job and source', async () => {
    const { source, job } = await makeSource(alice, 'linked');
    const lead = await createLead(alice, { email: 'x@linked.example' });
    await ctx.deps.db
      .update(leads)
      .set({ sourceId: source.id, jobId: job.id, notes: 'met at conf' })
      .where(eq(leads.id, lead.id));
    const res = await get(alice, `/api/leads/${lead.id}`);
    assert.equal(res.statusCode, 200);
    const view = res.json().data.lead;
    assert.deepEqual(view.job, { id: job.id, name: 'linked run', status: 'COMPLETED' });
    assert.deepEqual(view.source, { id: source.id, name: 'linked', url: 'https://linked.example.org' });
    assert.equal(view.notes, 'met at conf');
    assert.equal(view.sourceId, source.id);
  });

  test("404 for an unknown, malformed or another user's id", async () => {
    const bobs = await createLead(bob);
    for (const id of [UNKNOWN_ID, 'not-a-uuid', bobs.id]) {
      const res = await get(alice, `/api/leads/${id}`);
      assert.equal(res.statusCode, 404, id);
      assert.equal(res.json().error.code, 'NOT_FOUND');
    }
  });
});

describe('PATCH /api/leads/{id}', () => {
  test('updates fields; tags are trimmed and de-duplicated; null clears', async () => {
    const lead = await createLead(alice, { firstName: 'Old', company: 'Before' });
    const res = await patch(alice, lead.id, {
      firstName: 'New',
      company: null,
      status: 'CONTACTED',
      tags: [' hot ', 'hot', 'q3', 'q3 '],
      notes: 'call back',
    });
    assert.equal(res.statusCode, 200, res.body);
    const view = res.json().data.lead;
    assert.deepEqual(
      [view.firstName, view.company, view.status, view.tags, view.notes],
      ['New', null, 'CONTACTED', ['hot', 'q3'], 'call back'],
    );
    const [row] = await ctx.deps.db.select().from(leads).where(eq(leads.id, lead.id));
    assert.deepEqual(row!.tags, ['hot', 'q3']);
    assert.equal(row!.status, 'CONTACTED');
  });

  test('400 naming status for VALID, INVALID and RISKY: email validation sets those; the others are settable', async () => {
    const lead = await createLead(alice, { email: 'set@by.example' });
    for (const status of ['VALID', 'INVALID', 'RISKY']) {
      const res = await patch(alice, lead.id, { status, notes: 'not written' });
      assertValidation(res, 'status');
      assert.match(
        JSON.stringify(res.json().error.details),
        /set by email validation only: POST \/api\/leads\/\{id\}\/validate-email/,
      );
    }
    const [row] = await ctx.deps.db.select().from(leads).where(eq(leads.id, lead.id));
    assert.deepEqual([row!.status, row!.notes], ['NEW', null], 'nothing of a refused update is written');
    for (const status of ['CONTACTED', 'REPLIED', 'QUALIFIED', 'DISQUALIFIED', 'CONVERTED', 'UNSUBSCRIBED', 'NEW']) {
      const res = await patch(alice, lead.id, { status });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.lead.status, status);
    }
  });

  test('a new email drops the stored validation and starts the lead over as NEW', async () => {
    const lead = await createLead(alice, { email: 'a@one.example' });
    await ctx.deps.db
      .update(leads)
      .set({
        status: 'INVALID',
        validatedAt: new Date(),
        emailValidation: {
          status: 'invalid',
          tier: 'domain',
          errors: ['no_mx'],
          flags: [],
          checkedAt: new Date().toISOString(),
        },
      })
      .where(eq(leads.id, lead.id));
    const view = (await patch(alice, lead.id, { email: 'b@two.example' })).json().data.lead;
    assert.deepEqual(
      [view.email, view.status, view.emailValidation, view.validatedAt],
      ['b@two.example', 'NEW', null, null],
    );
    assert.equal((await patch(alice, lead.id, { email: null })).json().data.lead.status, 'NEW');
    await patch(alice, lead.id, { status: 'REPLIED' });
    assert.equal((await patch(alice, lead.id, { email: 'c@three.example' })).json().data.lead.status, 'REPLIED');
  });

  test(
    '400 naming the field: unknown status, bad email, 51 tags, empty tag; an empty body changes ' + 'nothing',
    async () => {
      const lead = await createLead(alice);
      assertValidation(await patch(alice, lead.id, { status: 'HOT' }), 'status');
      assertValidation(await patch(alice, lead.id, { email: 'nope@' }), 'email');
      assertValidation(await patch(alice, lead.id, { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }), 'tags');
      assertValidation(await patch(alice, lead.id, { tags: ['ok', '  '] }), 'tags.1');
      assertValidation(await patch(alice, lead.id, { tags: 'vip' }), 'tags');
      const empty = await patch(alice, lead.id, {});
      assert.equal(empty.statusCode, 200);
      assert.equal(empty.json().data.lead.updatedAt, lead.updatedAt, 'a no-op does not touch the lead');
      assert.equal(
        (await patch(alice, lead.id, { tags: Array.from({ length: 50 }, (_, i) => `t${i}`) })).statusCode,
        200,
      );
    },
  );

  test("404 for an unknown, malformed or another user's lead, which stays unchanged", async () => {
    const bobs = await createLead(bob, { firstName: 'Bob' });
    for (const id of [UNKNOWN_ID, 'xyz', bobs.id])
      assert.equal((await patch(alice, id, { firstName: 'Hacked' })).statusCode, 404, id);
    assert.equal((await get(bob, `/api/leads/${bobs.id}`)).json().data.lead.firstName, 'Bob');
  });
});

describe('DELETE /api/leads/{id}', () => {
  test("200 then 404; another user's lead is 404 and stays", async () => {
    const lead = await createLead(alice);
    const res = await ctx.inject({ method: 'DELETE', url: `/api/leads/${lead.id}`, headers: alice.headers });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().success, true);
    assert.equal((await get(alice, `/api/leads/${lead.id}`)).statusCode, 404);
    assert.equal(
      (await ctx.inject({ method: 'DELETE', url: `/api/leads/${lead.id}`, headers: alice.headers })).statusCode,
      404,
    );
    const bobs = await createLead(bob);
    assert.equal(
      (await ctx.inject({ method: 'DELETE', url: `/api/leads/${bobs.id}`, headers: alice.headers })).statusCode,
      404,
    );
    assert.equal(
      (await ctx.inject({ method: 'DELETE', url: '/api/leads/garbage', headers: alice.headers })).statusCode,
      404,
    );
    assert.equal((await get(bob, `/api/leads/${bobs.id}`)).statusCode, 200);
  });
});

describe('scopes', () => {
  test('a leads:read key lists and reads but cannot write (403 INSUFFICIENT_SCOPE)', async () => {
    const lead = await createLead(alice);
    const minted = await ctx.inject({
      method: 'POST',
      url: '/api/api-keys',
      headers: alice.headers,
      payload: { name: 'reader', scopes: ['leads:read'] },
    });
    assert.equal(minted.statusCode, 201, minted.body);
    const reader = { authorization: `Bearer ${minted.json().data.apiKey.key}` };
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/leads', headers: reader })).statusCode, 200);
    assert.equal((await ctx.inject({ method: 'GET', url: `/api/leads/${lead.id}`, headers: reader })).statusCode, 200);
    for (const [method, url, payload] of [
      ['POST', '/api/leads', { sourceUrl: 'https://e.org' }],
      ['PATCH', `/api/leads/${lead.id}`, { firstName: 'x' }],
      ['DELETE', `/api/leads/${lead.id}`, undefined],
      ['POST', '/api/leads/bulk', { leadIds: [lead.id] }],
      ['PATCH', '/api/leads/bulk', { leadIds: [lead.id], updates: { status: 'NEW' } }],
      ['POST', `/api/leads/${lead.id}/validate-email`, undefined],
      ['POST', '/api/leads/validate-bulk', { leadIds: [lead.id] }],
    ] as const) {
      const res = await ctx.inject({ method, url, headers: reader, ...(payload ? { payload } : {}) });
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.equal(res.json().error.code, 'INSUFFICIENT_SCOPE');
    }
    assert.equal((await get(alice, `/api/leads/${lead.id}`)).statusCode, 200);
  });
});

describe('de-duplication conflicts', () => {
  test('an edit that duplicates another lead of the same source is a 409 naming the field', async () => {
    const [source] = await ctx.deps.db
      .insert(sources)
      .values({ userId: alice.id, name: 's', url: 'https://example.com', scrapeType: 'STATIC' })
      .returning();
    const rows = await ctx.deps.db
      .insert(leads)
      .values([
        { userId: alice.id, sourceId: source!.id, email: 'a@example.com' },
        { userId: alice.id, sourceId: source!.id, email: 'b@example.com' },
        { userId: alice.id, sourceId: source!.id, firstName: 'Ann', lastName: 'Lee', company: 'Acme' },
        { userId: alice.id, sourceId: source!.id, firstName: 'Bob', lastName: 'Lee', company: 'Acme' },
      ])
      .returning();
    const byEmail = await ctx.inject({
      method: 'PATCH',
      url: `/api/leads/${rows[1]!.id}`,
      headers: alice.headers,
      payload: { email: 'A@example.com' },
    });
    assert.equal(byEmail.statusCode, 409, byEmail.body);
    assert.equal(byEmail.json().error.code, 'CONFLICT');
    assert.equal(byEmail.json().error.details[0].field, 'email');
    const byName = await ctx.inject({
      method: 'PATCH',
      url: `/api/leads/${rows[3]!.id}`,
      headers: alice.headers,
      payload: { firstName: 'ann' },
    });
    assert.equal(byName.statusCode, 409, byName.body);
    const unchanged = await ctx.inject({ method: 'GET', url: `/api/leads/${rows[1]!.id}`, headers: alice.headers });
    assert.equal(unchanged.json().data.lead.email, 'b@example.com');
  });
});
