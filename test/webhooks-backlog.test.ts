import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { queryRows } from '../src/db/client.ts';
import { emitEvent } from '../src/shared/events.ts';
import { newId } from '../src/shared/ids.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { startWebhookReceiver, verifyWith, type WebhookReceiver } from './helpers/webhook-receiver.ts';

// One send at a time, 2 s timeout: a claim holds 8 deliveries (8 rounds) under a 9 s lease (2 × timeout + 5 s), and
// each takes 1.5 s to answer, so the 8th would start 10.5 s after its claim, past its lease.
let ctx: TestContext;
let alice: TestUser;
let receiver: WebhookReceiver;

before(async () => {
  receiver = await startWebhookReceiver({ status: 200, body: 'ok', delayMs: 1500 });
  ctx = await createTestContext({ env: { WEBHOOK_CONCURRENCY: '1', WEBHOOK_TIMEOUT_MS: '2000' } });
  alice = await ctx.signup();
});
after(async () => {
  await ctx?.close();
  await receiver?.close();
});

test('a delivery that waits past its lease behind a slow endpoint is given back, not sent twice', async () => {
  const res = await ctx.call(alice, 'POST', '/api/webhooks', { url: receiver.url, eventTypes: ['lead.created'] });
  assert.equal(res.statusCode, 201, res.body);
  const { secret } = res.json().data.webhook;
  const EVENTS = 10;
  await ctx.deps.db.transaction(async (tx) => {
    for (let i = 0; i < EVENTS; i++)
      await emitEvent(tx, alice.id, 'lead.created', { leadIds: [newId()], count: 1, jobId: null, sourceId: null });
  });

  await eventually(async () => {
    const [row] = await queryRows<{ done: number }>(
      ctx.deps.db,
      sql`SELECT count(*)::int AS done FROM webhook_deliveries WHERE status = 'succeeded'`,
    );
    return row!.done === EVENTS || undefined;
  }, 40_000);
  const sent = new Map<string, number>();
  for (const request of receiver.requests) {
    verifyWith(secret, request);
    const id = String(request.headers['webhook-id']);
    sent.set(id, (sent.get(id) ?? 0) + 1);
  }
  assert.equal(sent.size, EVENTS, 'every event arrived');
  assert.deepEqual(
    [...sent].filter(([, n]) => n > 1),
    [],
    'none twice',
  );
  const [attempts] = await queryRows<{ n: number }>(ctx.deps.db, sql`SELECT count(*)::int AS n FROM webhook_attempts`);
  assert.equal(attempts!.n, EVENTS, 'one attempt each');
});
