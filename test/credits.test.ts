import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { loadConfig } from '../src/config.ts';
import { queryRows } from '../src/db/client.ts';
import { creditCheckouts, creditTransactions, leads } from '../src/db/schema/index.ts';
import { createCredits, creditsMode } from '../src/modules/credits/index.ts';
import { systemClock } from '../src/shared/clock.ts';
import { AppError } from '../src/shared/errors.ts';
import { DIRECTORY_SELECTORS, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { type OpenAiStub, startOpenAiStub } from './helpers/openai-stub.ts';
import { type StripeStub, startStripeStub } from './helpers/stripe-stub.ts';

const TIERS = [
  { id: 'small', name: 'Small pack', credits: 500, amount: 900, currency: 'eur' },
  { id: 'large', credits: 5000, amount: 4900, currency: 'eur' },
];

let ctx: TestContext;
let off: TestContext;
let unpaid: TestContext;
let site: FixtureSite;
let dns: TestDnsServer;
let ai: OpenAiStub;
let stripe: StripeStub;
let alice: TestUser;
let bob: TestUser;

before(async () => {
  [site, dns, ai, stripe] = await Promise.all([
    startFixtureSite({ pages: 3, leadsPerPage: 5 }),
    startTestDnsServer(TEST_ZONES),
    startOpenAiStub(),
    startStripeStub(),
  ]);
  ctx = await createTestContext({
    env: {
      CREDITS_SIGNUP_GRANT: '50',
      CREDITS_LOW_THRESHOLD: '10',
      CREDITS_TIERS: JSON.stringify(TIERS),
      DNS_SERVERS: dns.address,
      SCRAPER_CONCURRENCY: '2',
      SCRAPER_MAX_RETRIES: '0',
      AI_BASE_URL: ai.baseURL,
      AI_MODEL: 'stub-model',
      AI_MAX_RETRIES: '0',
      STRIPE_SECRET_KEY: stripe.secretKey,
      STRIPE_API_BASE: stripe.url,
    },
  });
  off = await createTestContext({
    env: { CREDITS_ENABLED: 'false', CREDITS_SIGNUP_GRANT: '0', DNS_SERVERS: dns.address },
  });
  // The default of a new install: no payment provider and CREDITS_ENABLED unset ('' is unset).
  unpaid = await createTestContext({ env: { CREDITS_ENABLED: '', CREDITS_SIGNUP_GRANT: '2' } });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
});
after(async () => {
  await ctx?.close();
  await off?.close();
  await unpaid?.close();
  await Promise.all([site?.close(), dns?.close(), ai?.close(), stripe?.close()]);
});

const balanceView = async (c: TestContext, user: TestUser, query = '') => {
  const res = await c.call(user, 'GET', `/api/credits/balance${query}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data;
};
const balanceOf = async (user: TestUser, c = ctx) => (await balanceView(c, user)).balance as number;

/** Moves the user's balance to `target` with an adjustment (as an admin would). */
async function setBalance(user: TestUser, target: number) {
  const current = await ctx.deps.credits.balance(ctx.deps.db, user.id);
  if (current !== target) await ctx.deps.credits.adjust(ctx.deps.db, user.id, target - current, 'test', 'test');
}

async function createLead(user: TestUser, email: string, c = ctx): Promise<string> {
  const res = await c.call(user, 'POST', '/api/leads', {
    sourceUrl: 'https://example.org/team',
    firstName: 'Jo',
    email,
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.lead.id;
}

async function activeSource(user: TestUser, body: Record<string, unknown>, c = ctx) {
  const res = await c.call(user, 'POST', '/api/sources', { name: 'Fixture', scrapeType: 'STATIC', ...body });
  assert.equal(res.statusCode, 201, res.body);
  const source = res.json().data.source as { id: string };
  assert.equal((await c.call(user, 'POST', `/api/sources/${source.id}/activate`)).statusCode, 200);
  return source;
}

async function finishedJob(user: TestUser, id: string, c = ctx) {
  return eventually(async () => {
    const job = (await c.call(user, 'GET', `/api/jobs/${id}`)).json().data.job;
    return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(job.status) ? job : undefined;
  }, 60_000);
}

const usageRows = (userId: string, feature: string) =>
  ctx.deps.db
    .select()
    .from(creditTransactions)
    .where(
      and(
        eq(creditTransactions.userId, userId),
        eq(creditTransactions.kind, 'usage'),
        eq(creditTransactions.feature, feature),
      ),
    );

const queuedCount = async (queue: string, userId: string) =>
  (
    await queryRows<{ n: number }>(
      ctx.deps.db,
      sql`SELECT count(*)::int AS n FROM pgboss.job WHERE name = ${queue} AND data->>'userId' = ${userId}`,
    )
  )[0]!.n;

describe('balance and signup grant', () => {
  test('a new account starts with CREDITS_SIGNUP_GRANT, shown as a grant in its ledger', async () => {
    const user = await ctx.signup();
    const view = await balanceView(ctx, user);
    assert.equal(view.balance, 50);
    assert.equal(view.enabled, true);
    assert.equal(view.lowThreshold, 10);
    assert.deepEqual(view.usageThisMonth.byFeature, []);
    assert.equal(view.usageThisMonth.credits, 0);
    assert.equal(new Date(view.usageThisMonth.since).getUTCDate(), 1);
    assert.equal(view.transactions.length, 1);
    assert.deepEqual(
      { ...view.transactions[0], id: undefined, createdAt: undefined },
      {
        id: undefined,
        createdAt: undefined,
        kind: 'grant',
        amount: 50,
        balanceAfter: 50,
        feature: null,
        units: null,
        reason: 'signup grant',
      },
    );
    assert.equal(view.nextCursor, null);
  });

  test('the ledger pages newest first; bad query is 400 naming the field; no key is 401', async () => {
    const user = await ctx.signup();
    await ctx.deps.credits.spend(ctx.deps.db, user.id, 'pages', 2, { reason: 'job x' });
    await ctx.deps.credits.spend(ctx.deps.db, user.id, 'email_validations', 1);
    const first = await balanceView(ctx, user, '?limit=2');
    assert.deepEqual(
      first.transactions.map((t: { amount: number; balanceAfter: number }) => [t.amount, t.balanceAfter]),
      [
        [-1, 47],
        [-2, 48],
      ],
    );
    assert.equal(first.transactions[1].reason, 'job x');
    assert.ok(first.nextCursor);
    const second = await balanceView(ctx, user, `?limit=2&cursor=${first.nextCursor}`);
    assert.deepEqual(
      second.transactions.map((t: { kind: string }) => t.kind),
      ['grant'],
    );
    assert.equal(second.nextCursor, null);
    assert.deepEqual(first.usageThisMonth, {
      since: first.usageThisMonth.since,
      credits: 3,
      byFeature: [
        { feature: 'email_validations', credits: 1, units: 1 },
        { feature: 'pages', credits: 2, units: 2 },
      ],
    });
    assertValidation(await ctx.call(user, 'GET', '/api/credits/balance?limit=0'), 'limit');
    assertValidation(await ctx.call(user, 'GET', '/api/credits/balance?cursor=%25%25'), 'cursor');
    assertError(await ctx.call(undefined, 'GET', '/api/credits/balance'), 401, 'UNAUTHORIZED');
  });

  test("one user's spending never shows in another's balance or ledger", async () => {
    const [carol, dave] = await Promise.all([ctx.signup(), ctx.signup()]);
    await ctx.deps.credits.spend(ctx.deps.db, carol.id, 'pages', 5);
    assert.equal(await balanceOf(carol), 45);
    const view = await balanceView(ctx, dave);
    assert.equal(view.balance, 50);
    assert.deepEqual(
      view.transactions.map((t: { kind: string }) => t.kind),
      ['grant'],
    );
  });
});

describe('GET /api/credits/pricing', () => {
  test('answers the configured tiers and the price of each metered action', async () => {
    const res = await ctx.call(alice, 'GET', '/api/credits/pricing');
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.enabled, true);
    assert.equal(data.signupGrant, 50);
    assert.deepEqual(data.tiers, [TIERS[0], { ...TIERS[1], name: 'large' }]);
    assert.deepEqual(
      data.prices.map((p: { feature: string; credits: number }) => [p.feature, p.credits]),
      [
        ['pages', 1],
        ['email_validations', 1],
        ['ai_tokens', 1],
        ['emails_sent', 1],
        ['browser_minutes', 1],
        ['markdown_pages', 1],
      ],
    );
    assert.match(data.prices[2].unit, /1,000 AI tokens/);
    assertError(await ctx.call(undefined, 'GET', '/api/credits/pricing'), 401, 'UNAUTHORIZED');
  });
});

describe('the ledger', () => {
  test('50 concurrent spends: exactly what the balance pays for succeeds, never below zero', async () => {
    const user = await ctx.signup();
    await setBalance(user, 30);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        ctx.deps.credits.spend(ctx.deps.db, user.id, 'pages', 1, { reason: `spend ${i}` }),
      ),
    );
    const refused = results.filter((r) => r.status === 'rejected');
    assert.equal(results.length - refused.length, 30);
    for (const r of refused) {
      assert.ok(r.reason instanceof AppError && r.reason.code === 'INSUFFICIENT_CREDITS', String(r.reason));
    }
    assert.equal(await balanceOf(user), 0);
    const usage = await usageRows(user.id, 'pages');
    assert.equal(usage.length, 30);
    assert.deepEqual(
      usage.map((r) => r.balanceAfter).sort((a, b) => a - b),
      Array.from({ length: 30 }, (_, i) => i),
      'each spend saw the balance the previous one left',
    );
    const [sum] = await queryRows<{ total: number; lowest: number }>(
      ctx.deps.db,
      sql`SELECT sum(amount)::int AS total, min(balance_after)::int AS lowest FROM credit_transactions
           WHERE user_id = ${user.id}`,
    );
    assert.deepEqual(sum, { total: 0, lowest: 0 }, 'the ledger adds up to the balance');
  });

  test('50 concurrent email validations over HTTP with 20 credits: 20 validated, 30 refused with 402', async () => {
    const user = await ctx.signup();
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await createLead(user, `person${i}@acme.test`));
    await setBalance(user, 20);
    const answers = await Promise.all(ids.map((id) => ctx.call(user, 'POST', `/api/leads/${id}/validate-email`)));
    const statuses = answers.map((a) => a.statusCode);
    assert.equal(statuses.filter((s) => s === 200).length, 20, JSON.stringify(statuses));
    for (const a of answers.filter((x) => x.statusCode !== 200)) assertError(a, 402, 'INSUFFICIENT_CREDITS');
    assert.equal(await balanceOf(user), 0);
    const validated = await ctx.deps.db
      .select({ id: leads.id })
      .from(leads)
      .where(and(eq(leads.userId, user.id), sql`${leads.validatedAt} IS NOT NULL`));
    assert.equal(validated.length, 20, 'a refused validation stores nothing');
    assert.equal((await usageRows(user.id, 'email_validations')).length, 20);
  });

  test('ledger rows cannot be changed, and the balance cannot go negative even by hand', async () => {
    // drizzle wraps the database's error: its message is the cause's.
    const failsWith = (pattern: RegExp) => (e: unknown) => pattern.test(String((e as Error).cause ?? e));
    await assert.rejects(
      ctx.deps.db.execute(sql`UPDATE credit_transactions SET amount = 1000 WHERE user_id = ${alice.id}`),
      failsWith(/append-only/),
    );
    await assert.rejects(
      ctx.deps.db.execute(sql`UPDATE credit_balances SET balance = -1 WHERE user_id = ${alice.id}`),
      failsWith(/credit_balances_not_negative/),
    );
    assert.equal(await balanceOf(alice), 50);
  });

  test('credits.low is emitted once per crossing of CREDITS_LOW_THRESHOLD, in the spending transaction', async () => {
    const emitted: Array<{ userId: string; type: string; data: Record<string, unknown> }> = [];
    const credits = createCredits(ctx.deps.config, systemClock, async (_tx, userId, type, data) => {
      emitted.push({ userId, type, data });
    });
    const user = await ctx.signup();
    await Promise.allSettled(Array.from({ length: 20 }, () => credits.spend(ctx.deps.db, user.id, 'pages', 3)));
    assert.equal(await balanceOf(user), 2);
    assert.equal(emitted.length, 1, JSON.stringify(emitted));
    assert.deepEqual(emitted[0], { userId: user.id, type: 'credits.low', data: { balance: 8, threshold: 10 } });
    await credits.spend(ctx.deps.db, user.id, 'pages', 1);
    assert.equal(emitted.length, 1, 'below the threshold already: no second event');
    await credits.adjust(ctx.deps.db, user.id, 30, 'top-up', 'test');
    await credits.spend(ctx.deps.db, user.id, 'pages', 25);
    assert.equal(emitted.length, 2, 'a new crossing after a top-up');
    assert.deepEqual(emitted[1]!.data, { balance: 6, threshold: 10 });
    const refused = credits.spend(ctx.deps.db, user.id, 'pages', 7);
    await assert.rejects(refused, (e: unknown) => e instanceof AppError && e.code === 'INSUFFICIENT_CREDITS');
    await assert.rejects(
      credits.adjust(ctx.deps.db, user.id, -7, 'too much', 'test'),
      (e: unknown) => e instanceof AppError && e.code === 'VALIDATION_ERROR' && e.details?.[0]?.field === 'amount',
    );
    assert.equal(await balanceOf(user), 6);
  });

  test('credits.low does not flap when charged work is given back: only money re-arms it', async () => {
    const emitted: Array<Record<string, unknown>> = [];
    const credits = createCredits(ctx.deps.config, systemClock, async (_tx, _userId, type, data) => {
      emitted.push({ type, ...data });
    });
    const user = await ctx.signup();
    // 50 (the grant) down to 11: one above the threshold of 10.
    await credits.adjust(ctx.deps.db, user.id, -39, 'to the edge', 'test');
    assert.equal(await balanceOf(user), 11);
    // Mails charged when recorded, refused by their server and given back: the balance hovers at the threshold.
    for (let i = 0; i < 3; i++) {
      await credits.spend(ctx.deps.db, user.id, 'emails_sent', 2);
      await credits.giveBack(ctx.deps.db, user.id, 'emails_sent', 2, 'the mail server refused it');
    }
    await credits.spend(ctx.deps.db, user.id, 'emails_sent', 2);
    assert.equal(await balanceOf(user), 9);
    assert.deepEqual(emitted, [{ type: 'credits.low', balance: 9, threshold: 10 }], 'one event, not one per cycle');
    // Money lifts it back: the next crossing is a new one.
    await credits.adjust(ctx.deps.db, user.id, 5, 'top-up', 'test');
    await credits.spend(ctx.deps.db, user.id, 'emails_sent', 5);
    assert.equal(emitted.length, 2, JSON.stringify(emitted));
    assert.deepEqual(emitted[1], { type: 'credits.low', balance: 9, threshold: 10 });
  });
});

describe('402 INSUFFICIENT_CREDITS before any work', () => {
  test('a job is neither created nor queued', async () => {
    const user = await ctx.signup();
    const source = await activeSource(user, {
      url: `${site.url}directory?page=1&who=nobalance`,
      selectors: DIRECTORY_SELECTORS,
    });
    await setBalance(user, 0);
    const scrapesBefore = await queuedCount('scrape', user.id);
    assertError(
      await ctx.call(user, 'POST', '/api/jobs', { name: 'Run', sourceId: source.id }),
      402,
      'INSUFFICIENT_CREDITS',
    );
    assert.deepEqual((await ctx.call(user, 'GET', '/api/jobs')).json().data.jobs, []);
    assert.equal(await queuedCount('scrape', user.id), scrapesBefore);
    assert.equal(site.requests.filter((r) => r.path.includes('who=nobalance')).length, 0);
  });

  test('a bulk validation the balance cannot pay for queues nothing; one it can runs and is paid', async () => {
    const user = await ctx.signup();
    const ids = await Promise.all(['a', 'b', 'c'].map((n) => createLead(user, `${n}@acme.test`)));
    await setBalance(user, 2);
    assertError(
      await ctx.call(user, 'POST', '/api/leads/validate-bulk', { leadIds: ids }),
      402,
      'INSUFFICIENT_CREDITS',
    );
    assert.equal(await queuedCount('email-validation', user.id), 0);
    assert.equal(await balanceOf(user), 2);
    const res = await ctx.call(user, 'POST', '/api/leads/validate-bulk', { leadIds: ids.slice(0, 2) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.totalQueued, 2);
    // Paid per batch of validations: the units of the usage rows add up to the leads validated.
    await eventually(
      async () => (await usageRows(user.id, 'email_validations')).reduce((n, r) => n + (r.units ?? 0), 0) === 2,
    );
    assert.equal(await balanceOf(user), 0);
    assertError(await ctx.call(user, 'POST', `/api/leads/${ids[2]}/validate-email`), 402, 'INSUFFICIENT_CREDITS');
    const [row] = await ctx.deps.db.select().from(leads).where(eq(leads.id, ids[2]!));
    assert.equal(row!.validatedAt, null);
  });

  test('an AI call is refused before the provider is asked; a call made is charged per 1,000 tokens', async () => {
    const user = await ctx.signup();
    await setBalance(user, 0);
    const asked = ai.requests.length;
    const refused = await ctx.call(user, 'POST', '/api/sources/discover', { query: 'dentists in Austin' });
    assertError(refused, 402, 'INSUFFICIENT_CREDITS');
    assert.equal(ai.requests.length, asked, 'the model was not called');
    await setBalance(user, 10);
    ai.enqueue({ json: { sources: [] }, usage: { prompt_tokens: 2000, completion_tokens: 500 } });
    const res = await ctx.call(user, 'POST', '/api/sources/discover', { query: 'dentists in Austin' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await balanceOf(user), 7, '2,500 tokens cost 3 credits');
    const [row] = await usageRows(user.id, 'ai_tokens');
    assert.equal(row!.units, 2500);
    assert.equal(row!.reason, 'sources.discover');
  });
});

describe('a crawl that runs out of credits part-way', () => {
  test('stops as FAILED saying so, keeps the leads of the pages it paid for, and cannot be retried at 0', async () => {
    const user = await ctx.signup();
    const source = await activeSource(user, {
      url: `${site.url}slow?ms=60&n=1`,
      selectors: DIRECTORY_SELECTORS,
      maxPages: 300,
    });
    await setBalance(user, 7);
    const started = await ctx.call(user, 'POST', '/api/jobs', { name: 'Run', sourceId: source.id });
    assert.equal(started.statusCode, 201, started.body);
    const job = await finishedJob(user, started.json().data.job.id);
    assert.equal(job.status, 'FAILED');
    assert.match(job.error, /^Out of credits after \d+ pages: the leads found so far are kept/);
    assert.equal(await balanceOf(user), 0);
    const paid = (await usageRows(user.id, 'pages')).reduce((sum, r) => sum + r.units!, 0);
    assert.equal(paid, 7);
    const stored = await ctx.deps.db.select().from(leads).where(eq(leads.jobId, job.id));
    assert.ok(stored.length > 0 && stored.length <= 7, `${stored.length} leads`);
    assert.equal(job.leadsFound, stored.length);
    assert.ok(new Set(stored.map((l) => l.sourceUrl)).size <= 7, 'only leads of paid pages');
    assert.ok(site.requestsTo('/slow').length < 300, 'the crawl stopped');
    assertError(await ctx.call(user, 'POST', `/api/jobs/${job.id}/retry`), 402, 'INSUFFICIENT_CREDITS');
    assert.equal((await ctx.call(user, 'GET', `/api/jobs/${job.id}`)).json().data.job.status, 'FAILED');
  });

  test('a crawl the balance covers completes and pays one credit per page', async () => {
    const user = await ctx.signup();
    const source = await activeSource(user, { url: `${site.url}directory`, selectors: DIRECTORY_SELECTORS });
    const started = await ctx.call(user, 'POST', '/api/jobs', { name: 'Run', sourceId: source.id });
    const job = await finishedJob(user, started.json().data.job.id);
    assert.equal(job.status, 'COMPLETED');
    assert.equal(job.leadsFound, 15);
    assert.equal(await balanceOf(user), 50 - job.pagesVisited);
    assert.equal(job.pagesVisited, 3);
  });
});

describe('CREDITS_ENABLED=false', () => {
  test('nothing is metered: jobs and validations run at a zero balance, the ledger stays empty', async () => {
    const user = await off.signup();
    const view = await balanceView(off, user);
    assert.equal(view.balance, 0);
    assert.equal(view.enabled, false);
    assert.deepEqual(view.transactions, []);
    const source = await activeSource(user, { url: `${site.url}directory`, selectors: DIRECTORY_SELECTORS }, off);
    const started = await off.call(user, 'POST', '/api/jobs', { name: 'Run', sourceId: source.id });
    assert.equal(started.statusCode, 201, started.body);
    const job = await finishedJob(user, started.json().data.job.id, off);
    assert.equal(job.status, 'COMPLETED');
    assert.equal(job.leadsFound, 15);
    const id = await createLead(user, 'zed@acme.test', off);
    assert.equal((await off.call(user, 'POST', `/api/leads/${id}/validate-email`)).statusCode, 200);
    const after = await balanceView(off, user);
    assert.equal(after.balance, 0);
    assert.deepEqual(after.transactions, []);
    assert.equal((await off.call(user, 'GET', '/api/credits/pricing')).json().data.enabled, false);
  });
});

describe('CREDITS_ENABLED unset', () => {
  test('meters exactly when payments are configured; an explicit setting wins', () => {
    const cases: Array<[Record<string, string>, boolean]> = [
      [{}, false],
      [{ STRIPE_SECRET_KEY: 'sk_test_x' }, true],
      [{ CREDITS_ENABLED: 'true' }, true],
      [{ CREDITS_ENABLED: 'false', STRIPE_SECRET_KEY: 'sk_test_x' }, false],
      [{ CREDITS_ENABLED: '', STRIPE_SECRET_KEY: 'sk_test_x' }, true],
    ];
    for (const [env, metered] of cases) {
      const config = loadConfig(env);
      assert.equal(config.CREDITS_ENABLED, metered, JSON.stringify(env));
      assert.match(creditsMode(config), metered ? /^credits: metered/ : /^credits: off.*nothing is charged or refused/);
    }
    assert.match(creditsMode(loadConfig({})), /set STRIPE_SECRET_KEY or CREDITS_ENABLED=true to meter/);
  });

  test('without payments a crawl past the signup grant is not stopped, and nothing is charged', async () => {
    const user = await unpaid.signup();
    const source = await activeSource(user, { url: `${site.url}directory`, selectors: DIRECTORY_SELECTORS }, unpaid);
    const started = await unpaid.call(user, 'POST', '/api/jobs', { name: 'Run', sourceId: source.id });
    assert.equal(started.statusCode, 201, started.body);
    const job = await finishedJob(user, started.json().data.job.id, unpaid);
    assert.equal(job.status, 'COMPLETED', JSON.stringify(job));
    assert.equal(job.pagesVisited, 3, 'more pages than the grant of 2 pays for');
    assert.equal(job.leadsFound, 15);
    const view = await balanceView(unpaid, user);
    assert.equal(view.enabled, false);
    assert.ok(
      view.transactions.every((t: { kind: string }) => t.kind !== 'usage'),
      JSON.stringify(view.transactions),
    );
    const pricing = await unpaid.call(user, 'GET', '/api/credits/pricing');
    assert.equal(pricing.statusCode, 200);
    assert.equal(pricing.json().data.enabled, false);
  });
});

describe('POST /api/credits/checkout', () => {
  const urls = { successUrl: 'https://app.example/paid', cancelUrl: 'https://app.example/cancelled' };

  test('creates a Stripe Checkout Session for the tier and answers its url', async () => {
    const sent = stripe.requests.length;
    const res = await ctx.call(alice, 'POST', '/api/credits/checkout', { tierId: 'small', ...urls });
    assert.equal(res.statusCode, 201, res.body);
    const data = res.json().data;
    const session = stripe.sessions.at(-1)!;
    assert.equal(data.url, session.url);
    assert.equal(data.sessionId, session.id);
    assert.deepEqual(data.tier, TIERS[0]);
    assert.equal(stripe.requests.length, sent + 1);
    const request = stripe.requests.at(-1)!;
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/v1/checkout/sessions');
    assert.match(String(request.headers['content-type']), /^application\/x-www-form-urlencoded/);
    const { form } = request;
    assert.equal(form.mode, 'payment');
    assert.equal(form['line_items[0][quantity]'], '1');
    assert.equal(form['line_items[0][price_data][currency]'], 'eur');
    assert.equal(form['line_items[0][price_data][unit_amount]'], '900');
    assert.equal(form['line_items[0][price_data][product_data][name]'], 'Small pack: 500 credits');
    assert.equal(form['metadata[userId]'], alice.id);
    assert.equal(form['metadata[tierId]'], 'small');
    assert.equal(form['metadata[credits]'], '500');
    assert.equal(form.client_reference_id, alice.id);
    assert.equal(form.success_url, urls.successUrl);
    assert.equal(form.cancel_url, urls.cancelUrl);
    const [checkout] = await ctx.deps.db
      .select()
      .from(creditCheckouts)
      .where(eq(creditCheckouts.id, form['metadata[checkoutId]']!));
    assert.equal(checkout!.userId, alice.id);
    assert.equal(checkout!.sessionId, session.id);
    assert.equal(checkout!.status, 'open');
    assert.equal(await balanceOf(alice), 50, 'nothing is credited before Stripe reports the payment');
  });

  test('bad input is 400 naming the field, before Stripe is called', async () => {
    const sent = stripe.requests.length;
    assertValidation(await ctx.call(alice, 'POST', '/api/credits/checkout', { tierId: 'huge', ...urls }), 'tierId');
    assertValidation(await ctx.call(alice, 'POST', '/api/credits/checkout', { ...urls }), 'tierId');
    assertValidation(
      await ctx.call(alice, 'POST', '/api/credits/checkout', { ...urls, tierId: 'small', successUrl: 'ftp://x' }),
      'successUrl',
    );
    // Without PUBLIC_URL there is nowhere to send the buyer back by default.
    assertValidation(await ctx.call(alice, 'POST', '/api/credits/checkout', { tierId: 'small' }), 'successUrl');
    assertValidation(
      await ctx.call(alice, 'POST', '/api/credits/checkout', { tierId: 'small', successUrl: urls.successUrl }),
      'cancelUrl',
    );
    assert.equal(stripe.requests.length, sent);
  });

  test('Stripe failing is 502 PAYMENT_PROVIDER_ERROR and leaves no checkout behind', async () => {
    stripe.fail(400);
    const res = await ctx.call(bob, 'POST', '/api/credits/checkout', { tierId: 'large', ...urls });
    assertError(res, 502, 'PAYMENT_PROVIDER_ERROR');
    assert.doesNotMatch(res.body, /stub/);
    assert.deepEqual(await ctx.deps.db.select().from(creditCheckouts).where(eq(creditCheckouts.userId, bob.id)), []);
  });

  test('without STRIPE_SECRET_KEY: 503 PAYMENTS_NOT_CONFIGURED', async () => {
    const user = await off.signup();
    assertError(
      await off.call(user, 'POST', '/api/credits/checkout', { tierId: 'starter', ...urls }),
      503,
      'PAYMENTS_NOT_CONFIGURED',
    );
  });
});
