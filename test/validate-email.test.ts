import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { leads, suppressions } from '../src/db/schema/index.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';

let ctx: TestContext;
let dns: TestDnsServer;
let alice: TestUser;
let bob: TestUser;

before(async () => {
  dns = await startTestDnsServer({ ...TEST_ZONES, 'bulk.test': { mx: [{ exchange: 'mx.bulk.test', priority: 10 }] } });
  ({ ctx, alice, bob } = await createTwoUserContext({ env: { DNS_SERVERS: dns.address } }));
});
after(async () => {
  await ctx?.close();
  await dns?.close();
});

async function createLead(user: TestUser, email?: string): Promise<string> {
  const res = await ctx.inject({
    method: 'POST',
    url: '/api/leads',
    headers: user.headers,
    payload: { sourceUrl: 'https://example.org/team', firstName: 'Jane', ...(email ? { email } : {}) },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.lead.id;
}

const validate = (user: TestUser, id: string) =>
  ctx.inject({ method: 'POST', url: `/api/leads/${id}/validate-email`, headers: user.headers });

async function leadRow(id: string) {
  const [row] = await ctx.deps.db.select().from(leads).where(eq(leads.id, id));
  return row!;
}

describe('POST /api/leads/{id}/validate-email: the validation vocabulary', () => {
  const cases: Array<{
    email: string;
    status: string;
    tier: string;
    errors: string[];
    flags: string[];
    leadStatus: string;
    suggestion?: string;
  }> = [
    {
      email: 'jane.doe@acme.test',
      status: 'valid',
      tier: 'domain',
      errors: [],
      flags: ['smtp_unverified'],
      leadStatus: 'VALID',
    },
    {
      email: 'jane@a-only.test',
      status: 'valid',
      tier: 'domain',
      errors: [],
      flags: ['smtp_unverified'],
      leadStatus: 'VALID',
    },
    {
      email: 'jane@aaaa-only.test',
      status: 'valid',
      tier: 'domain',
      errors: [],
      flags: ['smtp_unverified'],
      leadStatus: 'VALID',
    },
    {
      email: 'jane@nullmx.test',
      status: 'invalid',
      tier: 'domain',
      errors: ['null_mx'],
      flags: ['smtp_unverified'],
      leadStatus: 'INVALID',
    },
    {
      email: 'jane@nomail.test',
      status: 'invalid',
      tier: 'domain',
      errors: ['no_mx'],
      flags: ['smtp_unverified'],
      leadStatus: 'INVALID',
    },
    {
      email: 'jane@no-such-domain.test',
      status: 'invalid',
      tier: 'domain',
      errors: ['domain_not_found'],
      flags: ['smtp_unverified'],
      leadStatus: 'INVALID',
    },
    // An unknown result changes no status: the lead stays as it started (NEW).
    { email: 'jane@servfail.test', status: 'unknown', tier: 'syntax', errors: [], flags: [], leadStatus: 'NEW' },
    {
      email: 'info@acme.test',
      status: 'risky',
      tier: 'domain',
      errors: [],
      flags: ['role_account', 'smtp_unverified'],
      leadStatus: 'RISKY',
    },
    {
      email: 'jane@mailinator.com',
      status: 'risky',
      tier: 'domain',
      errors: [],
      flags: ['disposable', 'free_provider', 'smtp_unverified'],
      leadStatus: 'RISKY',
    },
    {
      email: 'jane@gmail.com',
      status: 'valid',
      tier: 'domain',
      errors: [],
      flags: ['free_provider', 'smtp_unverified'],
      leadStatus: 'VALID',
    },
    {
      email: 'jane@outlok.com',
      status: 'risky',
      tier: 'domain',
      errors: [],
      flags: ['possible_typo', 'smtp_unverified'],
      leadStatus: 'RISKY',
      suggestion: 'jane@outlook.com',
    },
    {
      email: 'jane@gmial.com',
      status: 'risky',
      tier: 'domain',
      errors: [],
      flags: ['disposable', 'free_provider', 'possible_typo', 'smtp_unverified'],
      leadStatus: 'RISKY',
      suggestion: 'jane@gmail.com',
    },
  ];
  for (const c of cases) {
    test(`${c.email} → ${c.status} ${JSON.stringify(c.errors)} ${JSON.stringify(c.flags)}`, async () => {
      const id = await createLead(alice, c.email);
      const res = await validate(alice, id);
      assert.equal(res.statusCode, 200, res.body);
      const data = res.json().data;
      assert.equal(data.status, c.status);
      assert.equal(data.tier, c.tier);
      assert.deepEqual(data.errors, c.errors);
      assert.deepEqual([...data.flags].sort(), [...c.flags].sort());
      assert.equal(data.suggestion, c.suggestion);
      const row = await leadRow(id);
      assert.equal(row.status, c.leadStatus);
      assert.equal(row.emailValidation?.status, c.status);
      assert.deepEqual(row.emailValidation?.errors, c.errors);
      assert.ok(row.validatedAt instanceof Date);
      const view = (await ctx.inject({ method: 'GET', url: `/api/leads/${id}`, headers: alice.headers })).json().data
        .lead;
      assert.equal(view.emailValidation.status, c.status);
      assert.equal(view.validatedAt, row.validatedAt!.toISOString());
    });
  }

  test('a DNS timeout is unknown (tier syntax) and leaves the status alone', async () => {
    const id = await createLead(alice, 'jane@hang.test');
    // As an earlier validation left it (the API sets RISKY only by validating).
    await ctx.deps.db.update(leads).set({ status: 'RISKY' }).where(eq(leads.id, id));
    const res = await validate(alice, id);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(
      { ...res.json().data, checkedAt: undefined },
      { status: 'unknown', tier: 'syntax', errors: [], flags: [], checkedAt: undefined },
    );
    assert.equal((await leadRow(id)).status, 'RISKY');
  });

  test('syntax_invalid for a stored address that fails the syntax check (tier syntax)', async () => {
    const [row] = await ctx.deps.db
      .insert(leads)
      .values({ userId: alice.id, email: 'jane..doe@acme.test', status: 'NEW' })
      .returning();
    const res = await validate(alice, row!.id);
    assert.equal(res.statusCode, 200);
    const data = res.json().data;
    assert.deepEqual([data.status, data.tier, data.errors, data.flags], ['invalid', 'syntax', ['syntax_invalid'], []]);
    assert.equal((await leadRow(row!.id)).status, 'INVALID');
  });

  test("suppressed: the user's suppression list by address or domain, not another user's", async () => {
    await ctx.deps.db.insert(suppressions).values([
      { userId: alice.id, type: 'email', value: 'blocked@acme.test', reason: 'unsubscribed' },
      { userId: alice.id, type: 'domain', value: 'a-only.test' },
    ]);
    for (const email of ['Blocked@acme.test', 'someone@a-only.test']) {
      const data = (await validate(alice, await createLead(alice, email))).json().data;
      assert.equal(data.status, 'invalid', email);
      assert.deepEqual(data.errors, ['suppressed'], email);
      assert.equal(data.tier, 'domain');
    }
    const other = (await validate(bob, await createLead(bob, 'blocked@acme.test'))).json().data;
    assert.equal(other.status, 'valid');
  });

  test('a lead further down the pipeline keeps its status; the result is still stored', async () => {
    for (const status of ['CONTACTED', 'REPLIED', 'QUALIFIED', 'CONVERTED', 'UNSUBSCRIBED', 'DISQUALIFIED']) {
      const id = await createLead(alice, 'jane@nullmx.test');
      await ctx.inject({ method: 'PATCH', url: `/api/leads/${id}`, headers: alice.headers, payload: { status } });
      assert.equal((await validate(alice, id)).json().data.status, 'invalid');
      const row = await leadRow(id);
      assert.equal(row.status, status);
      assert.deepEqual(row.emailValidation?.errors, ['null_mx']);
    }
  });

  test('400 NO_EMAIL for a lead without an email', async () => {
    const res = await validate(alice, await createLead(alice));
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.code, 'NO_EMAIL');
  });

  test("404 for an unknown, malformed or another user's lead; 401 without a key", async () => {
    const bobs = await createLead(bob, 'jane@acme.test');
    for (const id of [bobs, '01900000-0000-7000-8000-000000000000', 'nope']) {
      const res = await validate(alice, id);
      assert.equal(res.statusCode, 404, id);
      assert.equal(res.json().error.code, 'NOT_FOUND');
    }
    assert.equal((await leadRow(bobs)).validatedAt, null);
    assert.equal((await ctx.inject({ method: 'POST', url: `/api/leads/${bobs}/validate-email` })).statusCode, 401);
  });
});

describe('POST /api/leads/validate-bulk', () => {
  test('queues leads with an email, skips the rest, and the worker moves their statuses', async () => {
    const valid = await createLead(alice, 'ann@acme.test');
    const invalid = await createLead(alice, 'ann@nullmx.test');
    const risky = await createLead(alice, 'sales@acme.test');
    const noEmail = await createLead(alice);
    const foreign = await createLead(bob, 'ann@acme.test');
    const unknown = '01900000-0000-7000-8000-0000000000ff';
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/leads/validate-bulk',
      headers: alice.headers,
      payload: { leadIds: [valid, invalid, risky, noEmail, foreign, unknown, 'garbage', valid.toUpperCase()] },
    });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.totalRequested, 7);
    assert.equal(data.totalQueued, 3);
    assert.deepEqual(
      [...data.skipped].sort((a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id)),
      [
        { id: noEmail, reason: 'no_email' },
        { id: foreign, reason: 'not_found' },
        { id: unknown, reason: 'not_found' },
        { id: 'garbage', reason: 'not_found' },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    await eventually(async () => {
      const rows = await Promise.all([valid, invalid, risky].map(leadRow));
      return rows.every((r) => r.validatedAt) && rows;
    });
    assert.equal((await leadRow(valid)).status, 'VALID');
    assert.equal((await leadRow(invalid)).status, 'INVALID');
    assert.deepEqual((await leadRow(invalid)).emailValidation?.errors, ['null_mx']);
    assert.equal((await leadRow(risky)).status, 'RISKY');
    assert.equal((await leadRow(noEmail)).validatedAt, null);
    assert.equal((await leadRow(foreign)).validatedAt, null);
  });

  test('one domain is looked up once for a whole bulk run (per-process DNS cache)', async () => {
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => createLead(alice, `person${i}@bulk.test`)));
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/leads/validate-bulk',
      headers: alice.headers,
      payload: { leadIds: ids },
    });
    assert.equal(res.json().data.totalQueued, 40);
    await eventually(
      async () => (await Promise.all(ids.map(leadRow))).every((r) => r.status === 'VALID' && r.validatedAt),
      30_000,
    );
    // One lookup for 40 leads; the resolver may send its query twice when a loaded machine answers the first late
    // (its retry), which the server counts too. Without the cache it would be 40.
    const queries = dns.queries.get('bulk.test') ?? 0;
    assert.ok(queries >= 1 && queries <= 2, `${queries} queries for one domain`);
  });

  test('400 for an empty list, more than 1000 ids or a missing list', async () => {
    for (const payload of [{ leadIds: [] }, { leadIds: Array.from({ length: 1001 }, (_, i) => `id-${i}`) }, {}]) {
      const res = await ctx.inject({
        method: 'POST',
        url: '/api/leads/validate-bulk',
        headers: alice.headers,
        payload,
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error.code, 'VALIDATION_ERROR');
      assert.ok(
        res.json().error.details.some((d: { field: string }) => d.field === 'leadIds'),
        res.body,
      );
    }
  });
});
