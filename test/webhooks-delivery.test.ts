import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { queryRows } from '../src/db/client.ts';
import { emitEvent } from '../src/shared/events.ts';
import { newId } from '../src/shared/ids.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { type ServiceProcess, startService } from './helpers/process.ts';
import { startWebhookReceiver, verifyWith, type WebhookReceiver } from './helpers/webhook-receiver.ts';

// Two `npm run worker` processes on one PostgreSQL database, as on two machines; this process is the API.
const skip = process.env.TEST_DATABASE_URL ? false : 'needs PostgreSQL: run with TEST_DATABASE_URL=postgres://…';

describe('webhook deliveries across worker processes', { skip }, () => {
  const SECRET_KEY = 'webhooks-delivery-test-secret-key-0123456789';
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-webhooks-'));
  let ctx: TestContext;
  let alice: TestUser;
  let receiver: WebhookReceiver;
  const workers: ServiceProcess[] = [];

  before(async () => {
    receiver = await startWebhookReceiver();
    ctx = await createTestContext({ workers: false, env: { SECRET_KEY } });
    alice = await ctx.signup();
    const env = {
      DATABASE_URL: ctx.deps.config.DATABASE_URL!,
      DATA_DIR: dataDir,
      SECRET_KEY,
      ALLOW_PRIVATE_NETWORK: 'true',
      WEBHOOK_CONCURRENCY: '5',
      WEBHOOK_TIMEOUT_MS: '4000',
    };
    for (let i = 0; i < 2; i++) workers.push(startService(env, 'src/worker.ts'));
    const deadline = Date.now() + 120_000;
    while (!workers.every((w) => w.output().includes('quarry worker started'))) {
      if (Date.now() > deadline) throw new Error(workers.map((w) => w.output()).join('\n---\n'));
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await ctx?.close();
    await receiver?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  // More than one worker holds at once (8 rounds of 5), so both hold some when one dies.
  const EVENTS = 100;

  test('a worker killed -9 mid-send: the other sends its deliveries after the lease; each arrives once', async () => {
    const res = await ctx.call(alice, 'POST', '/api/webhooks', { url: receiver.url, eventTypes: ['lead.created'] });
    assert.equal(res.statusCode, 201, res.body);
    const { secret } = res.json().data.webhook;
    receiver.respond({ status: 200, body: 'ok', delayMs: 1500 });
    const eventIds = await ctx.deps.db.transaction(async (tx) => {
      for (let i = 0; i < EVENTS; i++) {
        const leadId = newId();
        await emitEvent(tx, alice.id, 'lead.created', { leadIds: [leadId], count: 1, jobId: null, sourceId: null });
      }
      return (await queryRows<{ id: string }>(tx, sql`SELECT id FROM webhook_events`)).map((r) => r.id);
    });
    assert.equal(eventIds.length, EVENTS);

    // Each worker sends 5 (its concurrency) while the receiver takes its time, and holds up to 35 more ready.
    await receiver.waitFor(10);
    const held = await queryRows<{ owner: string; events: string[] }>(
      ctx.deps.db,
      sql`SELECT lease_owner AS owner, array_agg(event_id::text) AS events FROM webhook_deliveries
        WHERE lease_owner IS NOT NULL GROUP BY lease_owner`,
    );
    assert.equal(held.length, 2, `both workers hold deliveries: ${JSON.stringify(held)}`);
    const victim = workers.find((w) => held[0]!.owner.includes(`:${w.child.pid}:`))!;
    assert.ok(victim);
    // What the victim had sent when it died: those are sent twice (once lost with it); what it had claimed
    // but not sent yet, and everything else, once.
    const sentBefore = new Set(receiver.requests.map((r) => String(r.headers['webhook-id'])));
    const lostInFlight = new Set(held[0]!.events.filter((id) => sentBefore.has(id)));
    assert.ok(lostInFlight.size > 0);
    victim.child.kill('SIGKILL');
    await victim.exited;
    receiver.respond({ status: 200, body: 'ok' });

    const deadline = Date.now() + 45_000;
    for (;;) {
      const [row] = await queryRows<{ done: number }>(
        ctx.deps.db,
        sql`SELECT count(*)::int AS done FROM webhook_deliveries WHERE status = 'succeeded'`,
      );
      if (row!.done === EVENTS) break;
      if (Date.now() > deadline) throw new Error(`${row!.done} of ${EVENTS} delivered; ${workers[1]?.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const answered = new Map<string, number>();
    const received = new Map<string, number>();
    for (const request of receiver.requests) {
      const id = String(request.headers['webhook-id']);
      verifyWith(secret, request);
      received.set(id, (received.get(id) ?? 0) + 1);
      if (request.answered) answered.set(id, (answered.get(id) ?? 0) + 1);
    }
    assert.deepEqual([...answered.keys()].sort(), [...eventIds].sort(), 'every event delivered');
    assert.ok(
      [...answered.values()].every((n) => n === 1),
      'each answered once',
    );
    for (const id of eventIds)
      assert.equal(received.get(id), lostInFlight.has(id) ? 2 : 1, 'sent again only when its sender died mid-send');
    const attempts = await queryRows<{ n: number }>(ctx.deps.db, sql`SELECT count(*)::int AS n FROM webhook_attempts`);
    assert.equal(attempts[0]!.n, EVENTS, 'one recorded attempt per delivery');
  });
});
