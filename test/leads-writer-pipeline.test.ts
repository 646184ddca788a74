/**
 * The lead writer's write on the embedded database as one pipelined transaction (src/db/pipeline.ts): the usual
 * batch (pages paid in full, no profiles, no endpoint for `lead.created`) goes as one message; the others stop it and
 * take the interactive transaction, with the same outcome. On PostgreSQL (no pipeline) every write is interactive and
 * the outcomes below hold as well.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { queryRows } from '../src/db/client.ts';
import { jobs, sources } from '../src/db/schema/index.ts';
import { createLeadWriter } from '../src/modules/leads/leads.writer.ts';
import type { CrawledPage } from '../src/modules/scraping/scraping.types.ts';
import { newId } from '../src/shared/ids.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';

describe('the lead writer on a pipelined transaction', () => {
  let ctx: TestContext;
  let pipelines: Array<'committed' | 'stopped'>;
  before(async () => {
    ctx = await createTestContext({ workers: false });
    const database = ctx.deps.database;
    const run = database.pipeline;
    pipelines = [];
    // Counts what the real pipeline did (the database is not replaced).
    if (run)
      database.pipeline = async (steps) => {
        const outcome = await run(steps);
        pipelines.push('stoppedAt' in outcome ? 'stopped' : 'committed');
        return outcome;
      };
  });
  after(() => ctx.close());

  const page = (n: number, count = 3): CrawledPage => ({
    url: `https://example.com/p${n}`,
    items: Array.from({ length: count }, (_, i) => ({
      fields: { email: `p${n}-${i}@acme.com`, firstName: `F${i}`, company: 'Acme' },
      matchedSelectors: { email: '.e', firstName: '.f', company: '.c' },
      visible: true,
    })),
  });

  async function job(user: TestUser) {
    const sourceId = newId();
    await ctx.deps.db
      .insert(sources)
      .values({ id: sourceId, userId: user.id, name: 's', url: 'https://example.com', scrapeType: 'STATIC' });
    const [row] = await ctx.deps.db.insert(jobs).values({ userId: user.id, sourceId, name: 'j' }).returning();
    return { userId: user.id, sourceId, jobId: row!.id };
  }

  const state = async (userId: string, jobId: string) => {
    const [row] = await queryRows<{ leads: number; spent: number; events: number }>(
      ctx.deps.db,
      sql`SELECT (SELECT count(*)::int FROM leads WHERE job_id = ${jobId}) AS leads,
        (SELECT coalesce(-sum(amount), 0)::int FROM credit_transactions WHERE user_id = ${userId} AND kind = 'usage') AS spent,
        (SELECT count(*)::int FROM webhook_events WHERE user_id = ${userId} AND type = 'lead.created') AS events`,
    );
    return row!;
  };
  const embedded = () => ctx.deps.database.kind === 'pglite';

  test('the usual batch is one message: leads stored, pages paid, duplicates skipped', async () => {
    const user = await ctx.signup();
    const owner = await job(user);
    let stored = 0;
    const writer = createLeadWriter(ctx.deps, owner, { onStored: (n) => (stored += n) });
    pipelines.length = 0;
    await writer.add(page(1));
    await writer.add(page(2));
    await writer.add(page(1)); // its leads are duplicates: the page is paid for, nothing stored
    await writer.close();
    assert.deepEqual(await state(user.id, owner.jobId), { leads: 6, spent: 3, events: 0 });
    assert.equal(stored, 6);
    // One write, or more should the flush timer fire between the pages.
    if (embedded()) assert.ok(pipelines.length && pipelines.every((p) => p === 'committed'), String(pipelines));
  });

  test('an endpoint subscribed to lead.created stops it: the interactive write records the event with its leads', async () => {
    const user = await ctx.signup();
    const hook = await ctx.call(user, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['lead.created'],
    });
    assert.equal(hook.statusCode, 201, hook.body);
    const owner = await job(user);
    const writer = createLeadWriter(ctx.deps, owner);
    pipelines.length = 0;
    await writer.add(page(1));
    await writer.close();
    assert.deepEqual(await state(user.id, owner.jobId), { leads: 3, spent: 1, events: 1 });
    if (embedded()) assert.ok(pipelines.length && pipelines.every((p) => p === 'stopped'), String(pipelines));
  });

  test('a balance short of the pages stops it: the interactive write stores the leads of the pages it paid', async () => {
    const user = await ctx.signup();
    const owner = await job(user);
    const balance = await ctx.deps.credits.balance(ctx.deps.db, user.id);
    await ctx.deps.credits.spend(ctx.deps.db, user.id, 'pages', balance - 2); // two pages left
    let outOfCredits = false;
    const writer = createLeadWriter(ctx.deps, owner, { onOutOfCredits: () => (outOfCredits = true) });
    pipelines.length = 0;
    for (let n = 1; n <= 4; n++) await writer.add(page(n));
    await writer.close();
    assert.deepEqual(await state(user.id, owner.jobId), { leads: 6, spent: balance, events: 0 });
    assert.ok(outOfCredits);
    if (embedded()) assert.ok(pipelines.includes('stopped'), String(pipelines));
  });

  test('a low-balance alert due stops it: the interactive write charges the pages and records credits.low with them', async () => {
    const user = await ctx.signup();
    const hook = await ctx.call(user, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['credits.low'],
    });
    assert.equal(hook.statusCode, 201, hook.body);
    const owner = await job(user);
    const balance = await ctx.deps.credits.balance(ctx.deps.db, user.id);
    // 102 left: the 4 pages below take it under CREDITS_LOW_THRESHOLD (100), which `spend` must decide on.
    await ctx.deps.credits.spend(ctx.deps.db, user.id, 'pages', balance - 102);
    const writer = createLeadWriter(ctx.deps, owner);
    pipelines.length = 0;
    for (let n = 1; n <= 4; n++) await writer.add(page(n));
    await writer.close();
    assert.deepEqual(await state(user.id, owner.jobId), { leads: 12, spent: balance - 98, events: 0 });
    const [alerts] = await queryRows<{ n: number }>(
      ctx.deps.db,
      sql`SELECT count(*)::int AS n FROM webhook_events WHERE user_id = ${user.id} AND type = 'credits.low'`,
    );
    assert.equal(alerts!.n, 1);
    if (embedded()) assert.ok(pipelines.includes('stopped'), String(pipelines));
  });

  test('on the embedded database a write takes whole pages up to 2,000 rows (the lock is held for one such write); a short balance drops whole pages', async () => {
    const user = await ctx.signup();
    const owner = await job(user);
    const writes: number[] = [];
    const writer = createLeadWriter(ctx.deps, owner, { onStored: (n) => writes.push(n) });
    // 7 pages of 900 rows: 4,000 and more rows wait at once only if the writes did not keep up, in any case no
    // write takes more than the 2,000th row's page (2,700 rows) and the pages are never split.
    for (let n = 1; n <= 7; n++) await writer.add(page(n, 900));
    await writer.close();
    assert.equal((await state(user.id, owner.jobId)).leads, 6_300);
    assert.equal(
      writes.reduce((a, b) => a + b, 0),
      6_300,
    );
    // PostgreSQL's reads wait for no writer: there a write takes the whole buffer.
    for (const n of writes) assert.ok(n % 900 === 0, `writes of ${writes.join(', ')} rows`);
    if (embedded()) {
      assert.ok(writes.length >= 3, `writes of ${writes.join(', ')} rows`);
      for (const n of writes) assert.ok(n <= 2_700, `writes of ${writes.join(', ')} rows`);
    }

    // Three pages left to pay for: exactly three pages' leads are stored, not part of a fourth.
    const poorer = await ctx.signup();
    const second = await job(poorer);
    const balance = await ctx.deps.credits.balance(ctx.deps.db, poorer.id);
    await ctx.deps.credits.spend(ctx.deps.db, poorer.id, 'pages', balance - 3);
    const short = createLeadWriter(ctx.deps, second);
    for (let n = 1; n <= 6; n++) await short.add(page(n, 900));
    await short.close();
    assert.deepEqual(await state(poorer.id, second.jobId), { leads: 2_700, spent: balance, events: 0 });
  });

  test('pages wait while 10,000 rows are buffered: a crawl faster than its writes holds at most that and a round of pages', async () => {
    const user = await ctx.signup();
    const owner = await job(user);
    // Every write (pipelined or interactive) starts 30 ms late, so the pages below come far faster than they go.
    const late =
      <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
      async (...a: A): Promise<R> => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        return f(...a);
      };
    const { db, database } = ctx.deps;
    const slowDb = new Proxy(db, {
      get: (target, key) => (key === 'transaction' ? late(target.transaction.bind(target)) : Reflect.get(target, key)),
    });
    const slowDatabase = { ...database, ...(database.pipeline ? { pipeline: late(database.pipeline) } : {}) };
    let stored = 0;
    const writer = createLeadWriter({ ...ctx.deps, db: slowDb, database: slowDatabase }, owner, {
      onStored: (n) => (stored += n),
    });
    // 8 crawl slots, 60 pages of 1,000 rows each: a round of pages brings 8,000 rows, a write takes 2,000.
    let added = 0;
    let next = 1;
    let mostWaiting = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next <= 60) {
          const adding = writer.add(page(next++, 1_000));
          added += 1_000;
          mostWaiting = Math.max(mostWaiting, added - stored);
          await adding;
        }
      }),
    );
    await writer.close();
    assert.equal((await state(user.id, owner.jobId)).leads, 60_000);
    // The buffer's 10,000, the 8 pages that found it full, and the write under way: whole pages up to 2,000 rows on the
    // embedded database, the whole buffer (up to 18,000) on PostgreSQL.
    const underWay = embedded() ? 2_000 : 18_000;
    assert.ok(mostWaiting <= 10_000 + 8 * 1_000 + underWay, `${mostWaiting} rows waited at once`);
  });
});
