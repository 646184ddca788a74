import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { webhookAttempts, webhookEndpoints } from '../src/db/schema/index.ts';
import { RETRY_DELAYS_MS, WEBHOOK_USER_AGENT } from '../src/modules/webhooks/webhooks.dispatcher.ts';
import { DAY_MS, ManualClock } from '../src/shared/clock.ts';
import { eventEnvelopeSchema } from '../src/shared/event-payloads.ts';
import { WEBHOOK_WAKE_CHANNEL } from '../src/shared/events.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { freePort } from './helpers/process.ts';
import {
  type ReceivedRequest,
  startWebhookReceiver,
  verifyWith,
  type WebhookReceiver,
} from './helpers/webhook-receiver.ts';

const clock = new ManualClock();
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
const receivers: WebhookReceiver[] = [];

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ clock, env: { WEBHOOK_TIMEOUT_MS: '1500' } }));
});
after(async () => {
  await ctx?.close();
  for (const r of receivers) await r.close();
});

const unknownId = '0190a8a0-0000-7000-8000-000000000000';

async function receiver(...args: Parameters<typeof startWebhookReceiver>) {
  const r = await startWebhookReceiver(...args);
  receivers.push(r);
  return r;
}

interface Created {
  id: string;
  secret: string;
  url: string;
}

async function createEndpoint(user: TestUser, url: string, eventTypes: string[] = ['webhook.test']): Promise<Created> {
  const res = await ctx.call(user, 'POST', '/api/webhooks', { url, eventTypes, description: 'test hook' });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.webhook;
}

async function sendTest(user: TestUser, id: string): Promise<{ eventId: string; deliveryId: string }> {
  const res = await ctx.call(user, 'POST', `/api/webhooks/${id}/test`);
  assert.equal(res.statusCode, 202, res.body);
  return res.json().data;
}

async function deliveries(user: TestUser, id: string): Promise<any[]> {
  const res = await ctx.call(user, 'GET', `/api/webhooks/${id}/deliveries`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data.deliveries;
}

/** The delivery once `done` holds for it (the worker records attempts in the background). */
async function deliveryWhen(user: TestUser, endpointId: string, deliveryId: string, done: (d: any) => boolean) {
  return eventually(async () => {
    const d = (await deliveries(user, endpointId)).find((x) => x.id === deliveryId);
    return d && done(d) ? d : undefined;
  });
}

async function listed(user: TestUser, id: string): Promise<any> {
  const res = await ctx.call(user, 'GET', '/api/webhooks');
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data.webhooks.find((w: { id: string }) => w.id === id);
}

/** Wakes the dispatchers as an event's commit does (after the test clock moved). */
const wake = () => ctx.deps.notifier.publish(WEBHOOK_WAKE_CHANNEL, 'test');

/** Checks a request as a receiver would: the signature, the payload's shape, and nothing sent but the event. */
function assertSignedEvent(request: ReceivedRequest, secret: string, type: string, eventId?: string) {
  const payload = verifyWith(secret, request);
  assert.equal(payload.type, type);
  eventEnvelopeSchema(type as never).parse(payload);
  if (eventId) assert.equal(request.headers['webhook-id'], eventId);
  assert.equal(request.method, 'POST');
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers['user-agent'], WEBHOOK_USER_AGENT);
  const names = new Set(request.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase()));
  const allowed = ['host', 'connection', 'content-length', 'content-type', 'user-agent'];
  allowed.push('webhook-id', 'webhook-timestamp', 'webhook-signature');
  for (const name of names) assert.ok(allowed.includes(name), `unexpected header ${name}`);
  return payload;
}

describe('endpoints: create, list, update, delete', () => {
  test('bad input is 400 naming the field', async () => {
    const url = 'http://127.0.0.1:9/hooks';
    const cases: Array<[unknown, string]> = [
      [{ eventTypes: ['job.completed'] }, 'url'],
      [{ url: 'not a url', eventTypes: ['job.completed'] }, 'url'],
      [{ url: 'ftp://example.com/x', eventTypes: ['job.completed'] }, 'url'],
      [{ url }, 'eventTypes'],
      [{ url, eventTypes: [] }, 'eventTypes'],
      [{ url, eventTypes: ['job.exploded'] }, 'eventTypes.0'],
      [{ url, eventTypes: 'job.completed' }, 'eventTypes'],
      [{ url, eventTypes: ['job.completed'], description: 'x'.repeat(501) }, 'description'],
    ];
    for (const [body, field] of cases) assertValidation(await ctx.call(alice, 'POST', '/api/webhooks', body), field);
    const hook = await createEndpoint(alice, url);
    assertValidation(await ctx.call(alice, 'PATCH', `/api/webhooks/${hook.id}`, { eventTypes: [] }), 'eventTypes');
    assertValidation(await ctx.call(alice, 'PATCH', `/api/webhooks/${hook.id}`, { enabled: 'yes' }), 'enabled');
    assertValidation(await ctx.call(alice, 'PATCH', `/api/webhooks/${hook.id}`, { url: 'x' }), 'url');
    assertError(await ctx.call(alice, 'PATCH', `/api/webhooks/${hook.id}`, {}), 400, 'VALIDATION_ERROR');
    const page = await ctx.call(alice, 'GET', '/api/webhooks?limit=0');
    assertValidation(page, 'limit');
    assertValidation(await ctx.call(alice, 'GET', `/api/webhooks/${hook.id}/deliveries?status=lost`), 'status');
    assertValidation(await ctx.call(alice, 'GET', '/api/webhooks?cursor=zzz'), 'cursor');
  });

  test('the secret is shown once, stored encrypted, and never listed', async () => {
    const hook = await createEndpoint(alice, 'http://127.0.0.1:9/once', ['job.completed', 'job.completed']);
    assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const [row] = await ctx.deps.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, hook.id));
    assert.ok(row!.secretEncrypted.startsWith('v1.'));
    assert.ok(!row!.secretEncrypted.includes(hook.secret.slice(6)), 'not stored in the clear');
    const list = await ctx.call(alice, 'GET', '/api/webhooks');
    assert.ok(!list.body.includes(hook.secret.slice(6)), 'the list never shows it');
    const shown = list.json().data.webhooks.find((w: { id: string }) => w.id === hook.id);
    assert.deepEqual(shown.eventTypes, ['job.completed'], 'event types once each');
    assert.equal(shown.secret, undefined);
    assert.deepEqual(shown.health, {
      successRate: null,
      recentAttempts: 0,
      lastSuccessAt: null,
      lastFailureAt: null,
      lastFailureReason: null,
      failingSince: null,
    });
    const patched = await ctx.call(alice, 'PATCH', `/api/webhooks/${hook.id}`, { description: 'renamed' });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(patched.json().data.webhook.description, 'renamed');
    assert.equal(patched.json().data.webhook.secret, undefined);
  });

  test("another user's endpoints and deliveries are 404; delete removes an endpoint", async () => {
    const r = await receiver();
    const hook = await createEndpoint(alice, r.url);
    const { deliveryId } = await sendTest(alice, hook.id);
    await r.waitFor(1);
    for (const [method, url, body] of [
      ['GET', `/api/webhooks/${hook.id}`, undefined],
      ['GET', `/api/webhooks/${unknownId}`, undefined],
      ['PATCH', `/api/webhooks/${hook.id}`, { enabled: false }],
      ['DELETE', `/api/webhooks/${hook.id}`, undefined],
      ['POST', `/api/webhooks/${hook.id}/test`, undefined],
      ['GET', `/api/webhooks/${hook.id}/deliveries`, undefined],
      ['POST', `/api/webhooks/deliveries/${deliveryId}/replay`, undefined],
      ['PATCH', `/api/webhooks/${unknownId}`, { enabled: false }],
      ['DELETE', '/api/webhooks/not-a-uuid', undefined],
      ['POST', '/api/webhooks/deliveries/not-a-uuid/replay', undefined],
    ] as const)
      assertError(await ctx.call(bob, method, url, body), 404, 'NOT_FOUND');
    assert.equal(await listed(bob, hook.id), undefined);
    const attemptsOf = () => ctx.deps.db.select().from(webhookAttempts).where(eq(webhookAttempts.endpointId, hook.id));
    await eventually(async () => (await attemptsOf()).length === 1);
    // The owner reads the endpoint alone as the list shows it.
    const one = await ctx.call(alice, 'GET', `/api/webhooks/${hook.id}`);
    assert.equal(one.statusCode, 200);
    assert.deepEqual(one.json().data.webhook, await listed(alice, hook.id));
    const types = await ctx.call(alice, 'GET', '/api/webhooks/event-types');
    assert.ok(types.json().data.eventTypes.includes('lead.created'));
    assert.ok(types.json().data.eventTypes.includes('webhook.test'));
    assert.equal((await ctx.call(alice, 'DELETE', `/api/webhooks/${hook.id}`)).statusCode, 200);
    assert.deepEqual(await attemptsOf(), [], 'its deliveries and their attempts go with it');
    assertError(await ctx.call(alice, 'GET', `/api/webhooks/${hook.id}/deliveries`), 404, 'NOT_FOUND');
    assertError(await ctx.call(alice, 'POST', `/api/webhooks/deliveries/${deliveryId}/replay`), 404, 'NOT_FOUND');
  });
});

describe('deliveries', () => {
  test('a test event arrives signed, with nothing but the event, and its attempt is recorded', async () => {
    const r = await receiver({ status: 200, body: `${'é'.repeat(600)}tail` });
    const hook = await createEndpoint(alice, r.url);
    const { eventId, deliveryId } = await sendTest(alice, hook.id);
    const [request] = await r.waitFor(1);
    const payload = assertSignedEvent(request!, hook.secret, 'webhook.test', eventId);
    assert.deepEqual(payload.data, { endpointId: hook.id, message: 'A test event sent from the Quarry API' });
    assert.equal(request!.headers['webhook-signature']!.toString().split(' ').length, 1);
    assert.throws(() => verifyWith(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, request!), /signature/i);
    const d = await deliveryWhen(alice, hook.id, deliveryId, (x) => x.status === 'succeeded');
    assert.equal(d.eventId, eventId);
    assert.equal(d.eventType, 'webhook.test');
    assert.equal(d.attemptCount, 1);
    assert.equal(d.nextAttemptAt, null);
    const [attempt] = d.attempts;
    assert.equal(attempt.attempt, 1);
    assert.equal(attempt.success, true);
    assert.equal(attempt.statusCode, 200);
    assert.equal(attempt.nextRetryAt, null);
    assert.ok(attempt.latencyMs >= 0 && attempt.latencyMs < 1500);
    assert.equal(Buffer.byteLength(attempt.responseBody), 1024, 'the first 1 KB of the answer');
    assert.ok(attempt.responseBody.startsWith('éé'));
    const health = (await listed(alice, hook.id)).health;
    assert.equal(health.successRate, 1);
    assert.equal(health.recentAttempts, 1);
    assert.ok(health.lastSuccessAt);
  });

  test('rotation: old and new secrets both verify for 24 hours, then only the new one', async () => {
    const r = await receiver();
    const hook = await createEndpoint(alice, r.url);
    const res = await ctx.call(alice, 'PATCH', `/api/webhooks/${hook.id}`, { rotateSecret: true });
    assert.equal(res.statusCode, 200, res.body);
    const rotated = res.json().data.webhook;
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, hook.secret);
    assert.equal(new Date(rotated.previousSecretExpiresAt).getTime(), clock.now().getTime() + DAY_MS);
    const { eventId } = await sendTest(alice, hook.id);
    const [during] = await r.waitFor(1);
    assert.equal(during!.headers['webhook-signature']!.toString().split(' ').length, 2, 'two v1 entries');
    assertSignedEvent(during!, hook.secret, 'webhook.test', eventId);
    assertSignedEvent(during!, rotated.secret, 'webhook.test', eventId);
    assert.equal((await listed(alice, hook.id)).secret, undefined);

    clock.advance(DAY_MS + 1000);
    await sendTest(alice, hook.id);
    const [, afterwards] = await r.waitFor(2);
    assert.equal(afterwards!.headers['webhook-signature']!.toString().split(' ').length, 1);
    assertSignedEvent(afterwards!, rotated.secret, 'webhook.test');
    assert.throws(() => verifyWith(hook.secret, afterwards!), /signature/i);
    assert.equal((await listed(alice, hook.id)).previousSecretExpiresAt, null);
  });

  test('replay sends the delivery again with the same webhook-id', async () => {
    const r = await receiver();
    const hook = await createEndpoint(alice, r.url);
    const { eventId, deliveryId } = await sendTest(alice, hook.id);
    await r.waitFor(1);
    await deliveryWhen(alice, hook.id, deliveryId, (d) => d.status === 'succeeded');
    const res = await ctx.call(alice, 'POST', `/api/webhooks/deliveries/${deliveryId}/replay`);
    assert.equal(res.statusCode, 202, res.body);
    assert.deepEqual(res.json().data, { deliveryId, eventId });
    const [first, second] = await r.waitFor(2);
    assertSignedEvent(second!, hook.secret, 'webhook.test', eventId);
    assert.equal(second!.body, first!.body, 'the same event');
    const d = await deliveryWhen(
      alice,
      hook.id,
      deliveryId,
      (x) => x.status === 'succeeded' && x.attempts.length === 2,
    );
    assert.deepEqual(
      d.attempts.map((a: { attempt: number; success: boolean }) => [a.attempt, a.success]),
      [
        [1, true],
        [1, true],
      ],
    );
    // A disabled endpoint's deliveries are not replayed.
    await ctx.call(alice, 'PATCH', `/api/webhooks/${hook.id}`, { enabled: false });
    assertError(await ctx.call(alice, 'POST', `/api/webhooks/deliveries/${deliveryId}/replay`), 409, 'CONFLICT');
    assertError(await ctx.call(alice, 'POST', `/api/webhooks/${hook.id}/test`), 409, 'CONFLICT');
  });

  test('failures are retried immediately, after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h', async () => {
    const r = await receiver({ status: 500, body: 'boom' });
    const hook = await createEndpoint(alice, r.url);
    const start = clock.now().getTime();
    const { eventId, deliveryId } = await sendTest(alice, hook.id);
    let d = await deliveryWhen(alice, hook.id, deliveryId, (x) => x.attemptCount === 1);
    for (let n = 1; n <= RETRY_DELAYS_MS.length; n++) {
      const last = d.attempts[d.attempts.length - 1];
      assert.equal(last.statusCode, 500);
      assert.equal(last.responseBody, 'boom');
      assert.equal(new Date(last.nextRetryAt).getTime() - new Date(last.at).getTime(), RETRY_DELAYS_MS[n - 1]);
      assert.equal(d.status, 'pending');
      // Not before it is due.
      clock.advance(RETRY_DELAYS_MS[n - 1]! - 1000);
      await wake();
      await new Promise((res) => setTimeout(res, 300));
      assert.equal(r.requests.length, n, `attempt ${n + 1} waits for its time`);
      clock.advance(1000);
      await wake();
      d = await deliveryWhen(alice, hook.id, deliveryId, (x) => x.attemptCount === n + 1);
    }
    assert.equal(d.status, 'failed');
    assert.equal(d.nextAttemptAt, null);
    assert.equal(d.attempts.length, 8);
    assert.equal(d.attempts[7].nextRetryAt, null);
    assert.equal(r.requests.length, 8, 'each attempt sent once');
    for (const request of r.requests) assertSignedEvent(request, hook.secret, 'webhook.test', eventId);
    const offsets = d.attempts.map((a: { at: string }) => new Date(a.at).getTime() - start);
    let expected = 0;
    assert.deepEqual(offsets, [0, ...RETRY_DELAYS_MS.map((ms) => (expected += ms))]);
    const health = (await listed(alice, hook.id)).health;
    assert.equal(health.successRate, 0);
    assert.equal(health.lastFailureReason, 'HTTP 500');
    assert.equal(new Date(health.failingSince).getTime(), start);
  });

  test('a refused connection and a timeout are failures retried like an error answer', async () => {
    // The hanging receiver listens first: a port picked free before it could be handed to it by the kernel.
    const slow = await receiver('hang');
    const hanging = await createEndpoint(alice, slow.url);
    const closed = await createEndpoint(alice, `http://127.0.0.1:${await freePort()}/gone`);
    const a = await sendTest(alice, closed.id);
    const b = await sendTest(alice, hanging.id);
    const refused = await deliveryWhen(alice, closed.id, a.deliveryId, (x) => x.attemptCount === 1);
    assert.equal(refused.attempts[0].statusCode, null);
    assert.equal(refused.attempts[0].error, 'the connection was refused');
    assert.ok(refused.attempts[0].nextRetryAt);
    const timedOut = await deliveryWhen(alice, hanging.id, b.deliveryId, (x) => x.attemptCount === 1);
    assert.equal(timedOut.attempts[0].error, 'no answer within 1.5 s');
    assert.ok(timedOut.attempts[0].latencyMs >= 1400);
    assert.equal(timedOut.status, 'pending');
    await ctx.call(alice, 'DELETE', `/api/webhooks/${closed.id}`);
    await ctx.call(alice, 'DELETE', `/api/webhooks/${hanging.id}`);
  });

  test('a redirect is not followed: it is a failure', async () => {
    const target = await receiver();
    const r = await receiver({ status: 302, body: '' });
    const hook = await createEndpoint(alice, r.url);
    const { deliveryId } = await sendTest(alice, hook.id);
    const d = await deliveryWhen(alice, hook.id, deliveryId, (x) => x.attemptCount === 1);
    assert.equal(d.attempts[0].statusCode, 302);
    assert.match(d.attempts[0].error, /redirects are not followed/);
    assert.equal(target.requests.length, 0);
    await ctx.call(alice, 'DELETE', `/api/webhooks/${hook.id}`);
  });

  test('410 Gone disables the endpoint at once; re-enabling it delivers again', async () => {
    const r = await receiver({ status: 410, body: 'unsubscribed' });
    const hook = await createEndpoint(alice, r.url);
    const { deliveryId } = await sendTest(alice, hook.id);
    const d = await deliveryWhen(alice, hook.id, deliveryId, (x) => x.status === 'failed');
    assert.equal(d.attempts.length, 1);
    assert.equal(d.attempts[0].statusCode, 410);
    assert.equal(d.attempts[0].nextRetryAt, null);
    const shown = await listed(alice, hook.id);
    assert.equal(shown.enabled, false);
    assert.equal(shown.disabledReason, 'The endpoint answered 410 Gone');
    assert.ok(shown.disabledAt);
    assertError(await ctx.call(alice, 'POST', `/api/webhooks/${hook.id}/test`), 409, 'CONFLICT');
    r.respond({ status: 204 });
    const enabled = await ctx.call(alice, 'PATCH', `/api/webhooks/${hook.id}`, { enabled: true });
    assert.equal(enabled.json().data.webhook.enabled, true);
    assert.equal(enabled.json().data.webhook.disabledReason, null);
    const again = await sendTest(alice, hook.id);
    await deliveryWhen(alice, hook.id, again.deliveryId, (x) => x.status === 'succeeded');
  });

  test('an endpoint failing for 5 days is disabled and its pending deliveries stop', async () => {
    const r = await receiver({ status: 503, body: 'down' });
    const hook = await createEndpoint(alice, r.url);
    const first = await sendTest(alice, hook.id);
    await deliveryWhen(alice, hook.id, first.deliveryId, (x) => x.attemptCount === 1);
    const failingSince = clock.now().getTime();
    // Keep it failing (each new event's first attempt fails) until 5 days have passed.
    for (let day = 1; day <= 5; day++) {
      clock.advance(DAY_MS);
      const next = await sendTest(alice, hook.id);
      await deliveryWhen(alice, hook.id, next.deliveryId, (x) => x.attemptCount >= 1);
    }
    const shown = await eventually(async () => {
      const w = await listed(alice, hook.id);
      return !w.enabled && w;
    });
    assert.equal(shown.disabledReason, 'Every attempt failed for 5 days');
    assert.equal(new Date(shown.health.failingSince).getTime(), failingSince);
    assert.equal(shown.health.successRate, 0);
    const all = await deliveries(alice, hook.id);
    assert.ok(all.length >= 6);
    assert.ok(
      all.every((x) => x.status === 'failed' && x.nextAttemptAt === null),
      'nothing more is sent',
    );
    const sent = r.requests.length;
    clock.advance(DAY_MS);
    await wake();
    await new Promise((res) => setTimeout(res, 500));
    assert.equal(r.requests.length, sent);
  });

  test('a success ends a failing run: the endpoint stays enabled', async () => {
    const r = await receiver({ status: 500 });
    const hook = await createEndpoint(alice, r.url);
    const a = await sendTest(alice, hook.id);
    await deliveryWhen(alice, hook.id, a.deliveryId, (x) => x.attemptCount === 1);
    assert.ok((await listed(alice, hook.id)).health.failingSince);
    r.respond({ status: 200 });
    clock.advance(5_000);
    await wake();
    await deliveryWhen(alice, hook.id, a.deliveryId, (x) => x.status === 'succeeded');
    const health = (await listed(alice, hook.id)).health;
    assert.equal(health.failingSince, null);
    assert.equal(health.successRate, 0.5);
    assert.equal(health.lastFailureReason, 'HTTP 500');
  });
});
