import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { and, eq, isNotNull } from 'drizzle-orm';
import { leads } from '../src/db/schema/index.ts';
import { createLeadValidationService, type EmailValidationJob } from '../src/modules/leads/lead-validation.service.ts';
import { QUEUES } from '../src/queue/queues.ts';
import { createTestContext, type TestContext } from './helpers/app.ts';
import { startTestDnsServer, type TestDnsServer } from './helpers/dns.ts';

// README "Credits": a bulk validation checks the balance for all its leads when it is asked for, but the balance
// may be spent before the worker stores the results; then the results it still pays for are stored and the rest
// of the batch fails saying so. Workers are off here so the test decides when the batch runs.
let ctx: TestContext;
let dns: TestDnsServer;
before(async () => {
  dns = await startTestDnsServer();
  ctx = await createTestContext({ workers: false, env: { DNS_SERVERS: dns.address } });
});
after(async () => {
  await ctx?.close();
  await dns?.close();
});

test('a batch whose balance ran out part-way stores what is paid for and fails the rest', async () => {
  const user = await ctx.signup();
  const ids: string[] = [];
  for (const name of ['a', 'b', 'c']) {
    const res = await ctx.call(user, 'POST', '/api/leads', {
      sourceUrl: 'https://example.com/team',
      email: `${name}@acme.test`,
    });
    ids.push(res.json().data.lead.id);
  }
  const { credits, db } = ctx.deps;
  await credits.adjust(db, user.id, 3 - (await credits.balance(db, user.id)), 'test', 'test');
  const queued = await ctx.call(user, 'POST', '/api/leads/validate-bulk', { leadIds: ids });
  assert.equal(queued.statusCode, 200, queued.body);
  assert.equal(queued.json().data.totalQueued, 3);
  // Spent elsewhere before the worker ran: the balance now pays for two of the three.
  await credits.adjust(db, user.id, -1, 'spent elsewhere', 'test');
  const jobs = await ctx.deps.boss.fetch<EmailValidationJob>(QUEUES.emailValidation, { batchSize: 10 });
  assert.equal(jobs.length, 3);
  const outcomes = await createLeadValidationService(ctx.deps).runJobs(jobs);
  const completed = outcomes.filter((o) => o.status === 'completed');
  const failed = outcomes.filter((o) => o.status === 'failed');
  assert.equal(completed.length, 2);
  assert.equal(failed.length, 1);
  assert.match(JSON.stringify(failed[0]), /Out of credits/);
  assert.equal(await credits.balance(db, user.id), 0);
  const validated = await db
    .select({ id: leads.id })
    .from(leads)
    .where(and(eq(leads.userId, user.id), isNotNull(leads.validatedAt)));
  assert.equal(validated.length, 2, 'only the paid results are stored');
});
