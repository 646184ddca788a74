import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { leads, webhookEvents } from '../src/db/schema/index.ts';
import { eventEnvelopeSchema } from '../src/shared/event-payloads.ts';
import { type EventType, emitEvent } from '../src/shared/events.ts';
import { DIRECTORY_SELECTORS, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { seedProfiles, seedProfileType } from './helpers/seed.ts';
import {
  type ReceivedRequest,
  startWebhookReceiver,
  verifyWith,
  type WebhookReceiver,
} from './helpers/webhook-receiver.ts';

// Events written by the services in the transaction of their change, and what receivers get of them.
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let site: FixtureSite;
let dns: TestDnsServer;
const receivers: WebhookReceiver[] = [];

before(async () => {
  site = await startFixtureSite({ pages: 3, leadsPerPage: 4 });
  dns = await startTestDnsServer(TEST_ZONES);
  ({ ctx, alice, bob } = await createTwoUserContext({ env: { DNS_SERVERS: dns.address } }));
});
after(async () => {
  await ctx?.close();
  for (const r of receivers) await r.close();
  await site?.close();
  await dns?.close();
});

/** A receiver and an endpoint of `user` on it for `types`. */
async function subscribe(user: TestUser, types: EventType[]) {
  const receiver = await startWebhookReceiver();
  receivers.push(receiver);
  const res = await ctx.call(user, 'POST', '/api/webhooks', { url: receiver.url, eventTypes: types });
  assert.equal(res.statusCode, 201, res.body);
  const { id, secret } = res.json().data.webhook as { id: string; secret: string };
  /** Every event received so far, each verified as a receiver does and checked against its documented schema. */
  const events = () =>
    receiver.requests.map((request: ReceivedRequest) => {
      const payload = verifyWith(secret, request);
      eventEnvelopeSchema(payload.type as EventType).parse(payload);
      return { ...payload, id: String(request.headers['webhook-id']) };
    });
  return { id, receiver, events };
}

const ofType = (events: Array<{ type: string; data: any }>, type: string) => events.filter((e) => e.type === type);

describe('outbox', () => {
  test('an event whose transaction rolls back is never sent; a committed one is', async () => {
    const hook = await subscribe(alice, ['job.failed']);
    const data = (name: string) => ({
      jobId: '0190a8a0-0000-7000-8000-000000000001',
      sourceId: '0190a8a0-0000-7000-8000-000000000002',
      name,
      leadsFound: 0,
      pagesVisited: 0,
      pagesFailed: 0,
      error: 'x',
      finishedAt: new Date().toISOString(),
    });
    await assert.rejects(
      ctx.deps.db.transaction(async (tx) => {
        await emitEvent(tx, alice.id, 'job.failed', data('rolled back'));
        throw new Error('the change fails');
      }),
      /the change fails/,
    );
    await ctx.deps.db.transaction((tx) => emitEvent(tx, alice.id, 'job.failed', data('committed')));
    await hook.receiver.waitFor(1);
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(
      hook.events().map((e) => e.data.name),
      ['committed'],
    );
    const stored = await ctx.deps.db.select().from(webhookEvents).where(eq(webhookEvents.userId, alice.id));
    assert.ok(!stored.some((e) => (e.data as { name: string }).name === 'rolled back'));
  });

  test("events reach only subscribed endpoints of the event's own user", async () => {
    const jobsOnly = await subscribe(alice, ['job.completed']);
    const bobs = await subscribe(bob, ['lead.created']);
    const leadsHook = await subscribe(alice, ['lead.created']);
    const res = await ctx.call(alice, 'POST', '/api/leads', {
      sourceUrl: 'https://example.com/team',
      firstName: 'Ada',
      email: 'ada@example.com',
    });
    assert.equal(res.statusCode, 201, res.body);
    await leadsHook.receiver.waitFor(1);
    const [event] = leadsHook.events();
    assert.deepEqual(event!.data, { leadIds: [res.json().data.lead.id], count: 1, jobId: null, sourceId: null });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(jobsOnly.receiver.requests.length, 0);
    assert.equal(bobs.receiver.requests.length, 0);
  });
});

describe('events of the services', () => {
  test('a job run: job.started, lead.created per stored batch (with the ids), job.completed', async () => {
    const hook = await subscribe(alice, ['job.started', 'job.completed', 'job.failed', 'lead.created']);
    const source = await ctx.call(alice, 'POST', '/api/sources', {
      name: 'Directory',
      url: `${site.url}directory?page=1`,
      scrapeType: 'STATIC',
      selectors: DIRECTORY_SELECTORS,
    });
    assert.equal(source.statusCode, 201, source.body);
    const sourceId = source.json().data.source.id;
    assert.equal((await ctx.call(alice, 'POST', `/api/sources/${sourceId}/activate`)).statusCode, 200);
    const job = (await ctx.call(alice, 'POST', '/api/jobs', { name: 'Hooked', sourceId })).json().data.job;
    const completed = await eventually(async () => ofType(hook.events(), 'job.completed')[0], 30_000);
    const events = hook.events();
    const [started] = ofType(events, 'job.started');
    assert.deepEqual(started!.data, { jobId: job.id, sourceId, name: 'Hooked', attempt: 1 });
    const stored = await ctx.deps.db.select({ id: leads.id }).from(leads).where(eq(leads.jobId, job.id));
    assert.equal(stored.length, 12);
    const created = ofType(events, 'lead.created');
    assert.ok(created.length >= 1 && created.length < stored.length, 'one event per batch, not per lead');
    const announced = created.flatMap((e) => e.data.leadIds as string[]);
    assert.deepEqual([...announced].sort(), stored.map((l) => l.id).sort(), 'every stored lead, once');
    for (const e of created) {
      assert.equal(e.data.count, e.data.leadIds.length);
      assert.equal(e.data.jobId, job.id);
      assert.equal(e.data.sourceId, sourceId);
    }
    assert.equal(completed.data.jobId, job.id);
    assert.equal(completed.data.leadsFound, 12);
    assert.equal(completed.data.pagesVisited, 3);
    assert.equal(ofType(events, 'job.failed').length, 0);
    assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'a webhook-id per event');
  });

  test('a failing job: job.failed with its error', async () => {
    const hook = await subscribe(alice, ['job.failed']);
    const source = await ctx.call(alice, 'POST', '/api/sources', {
      name: 'Broken',
      url: `${site.url}fail`,
      scrapeType: 'STATIC',
      selectors: DIRECTORY_SELECTORS,
      options: { maxRetries: 0 },
    });
    const sourceId = source.json().data.source.id;
    await ctx.call(alice, 'POST', `/api/sources/${sourceId}/activate`);
    const job = (await ctx.call(alice, 'POST', '/api/jobs', { name: 'Doomed', sourceId })).json().data.job;
    const failed = await eventually(async () => ofType(hook.events(), 'job.failed')[0], 30_000);
    const row = (await ctx.call(alice, 'GET', `/api/jobs/${job.id}`)).json().data.job;
    assert.equal(row.status, 'FAILED');
    assert.equal(failed.data.jobId, job.id);
    assert.equal(failed.data.error, row.error);
  });

  test('lead.validated carries the result and the status it moved the lead to', async () => {
    const hook = await subscribe(alice, ['lead.validated']);
    const lead = (
      await ctx.call(alice, 'POST', '/api/leads', { sourceUrl: 'https://acme.test/', email: 'grace@acme.test' })
    ).json().data.lead;
    const res = await ctx.call(alice, 'POST', `/api/leads/${lead.id}/validate-email`);
    assert.equal(res.statusCode, 200, res.body);
    await hook.receiver.waitFor(1);
    const [event] = hook.events();
    const after = (await ctx.call(alice, 'GET', `/api/leads/${lead.id}`)).json().data.lead;
    assert.deepEqual(event!.data, {
      leadId: lead.id,
      email: 'grace@acme.test',
      result: res.json().data.status,
      leadStatus: after.status,
      checkedAt: after.emailValidation.checkedAt,
    });
    assert.equal(event!.data.result, after.emailValidation.status);
    assert.equal(event!.data.result, 'valid');
  });

  test('export.completed when a data export is ready', async () => {
    const hook = await subscribe(bob, ['export.completed']);
    const res = await ctx.call(bob, 'POST', '/api/users/export', { format: 'JSON' });
    assert.equal(res.statusCode, 200, res.body);
    await hook.receiver.waitFor(1, 30_000);
    const [event] = hook.events();
    const status = (await ctx.call(bob, 'GET', '/api/users/export/status')).json().data.exports[0];
    assert.equal(status.status, 'COMPLETED');
    assert.equal(event!.data.exportId, res.json().data.requestId);
    assert.equal(event!.data.format, 'JSON');
  });

  test('matching.run.completed with the run counts', async () => {
    const hook = await subscribe(alice, ['matching.run.completed']);
    const typeId = await seedProfileType(ctx.deps.db, alice.id, [{ name: 'state', type: 'string' }], 'Hooked');
    await seedProfiles(ctx.deps.db, alice.id, typeId, [
      { data: { state: 'CA' } },
      { data: { state: 'NY' } },
      { data: { state: 'CA' } },
    ]);
    const rule = (
      await ctx.call(alice, 'POST', '/api/matching/rules', {
        name: 'In CA',
        profileTypeId: typeId,
        type: 'FILTER',
        conditions: { operator: 'AND', conditions: [{ field: 'profile.state', operator: 'equals', value: 'CA' }] },
      })
    ).json().data.rule;
    assert.ok(rule?.id, 'rule created');
    const res = await ctx.call(alice, 'POST', '/api/matching/execute', { ruleId: rule.id });
    assert.equal(res.statusCode, 202, res.body);
    await hook.receiver.waitFor(1, 30_000);
    const [event] = hook.events();
    assert.equal(event!.data.ruleId, rule.id);
    assert.equal(event!.data.runId, res.json().data.run.id);
    assert.deepEqual([event!.data.total, event!.data.processed, event!.data.matched, event!.data.failed], [3, 3, 2, 0]);
  });
});

describe('credits.low', () => {
  test('reaches a subscribed endpoint once when a charge takes the balance below the threshold', async () => {
    const carol = await ctx.signup();
    const hook = await subscribe(carol, ['credits.low']);
    const threshold = ctx.deps.config.CREDITS_LOW_THRESHOLD;
    const balance = await ctx.deps.credits.balance(ctx.deps.db, carol.id);
    // Down to just above the threshold: nothing sent; then across it: one event; then below it: nothing more.
    await ctx.deps.db.transaction((tx) => ctx.deps.credits.spend(tx, carol.id, 'pages', balance - threshold - 5));
    await ctx.deps.db.transaction((tx) => ctx.deps.credits.spend(tx, carol.id, 'pages', 10));
    await ctx.deps.db.transaction((tx) => ctx.deps.credits.spend(tx, carol.id, 'pages', 10));
    await hook.receiver.waitFor(1);
    await new Promise((r) => setTimeout(r, 500));
    const events = hook.events();
    assert.equal(events.length, 1);
    assert.deepEqual(
      { type: events[0]!.type, ...events[0]!.data },
      { type: 'credits.low', balance: threshold - 5, threshold },
    );
  });
});
