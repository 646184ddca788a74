import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { queryRows } from '../src/db/client.ts';
import { creditCheckouts, inboundWebhookEvents } from '../src/db/schema/index.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { type StripeStub, startStripeStub } from './helpers/stripe-stub.ts';

const STRIPE_WEBHOOK_SECRET = 'whsec_test_stripe_0123456789';
const STANDARD_SECRET = `whsec_${randomBytes(24).toString('base64')}`;

let ctx: TestContext;
let bare: TestContext;
let stripe: StripeStub;
let alice: TestUser;
let bob: TestUser;

before(async () => {
  stripe = await startStripeStub();
  ctx = await createTestContext({
    workers: false,
    env: {
      CREDITS_SIGNUP_GRANT: '100',
      STRIPE_SECRET_KEY: stripe.secretKey,
      STRIPE_API_BASE: stripe.url,
      STRIPE_WEBHOOK_SECRET,
      INBOUND_WEBHOOK_SECRET: STANDARD_SECRET,
      PUBLIC_URL: 'https://quarry.example',
    },
  });
  bare = await createTestContext({ workers: false });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
});
after(async () => {
  await ctx?.close();
  await bare?.close();
  await stripe?.close();
});

const balanceOf = async (user: TestUser) =>
  (await ctx.call(user, 'GET', '/api/credits/balance')).json().data.balance as number;

/** A checkout through the API (and the Stripe stub): the Session as Stripe created it. */
async function checkout(user: TestUser, tierId = 'starter') {
  const res = await ctx.call(user, 'POST', '/api/credits/checkout', { tierId });
  assert.equal(res.statusCode, 201, res.body);
  return stripe.sessions.find((s) => s.id === res.json().data.sessionId)! as {
    id: string;
    metadata: Record<string, string>;
  };
}

/** A Stripe event about a Checkout Session, as Stripe sends it. */
function sessionEvent(
  session: { id: string; metadata: Record<string, string> },
  overrides: { id?: string; type?: string; paymentStatus?: string } = {},
) {
  return {
    id: overrides.id ?? `evt_${randomBytes(8).toString('hex')}`,
    object: 'event',
    api_version: '2025-01-01',
    created: Math.floor(Date.now() / 1000),
    type: overrides.type ?? 'checkout.session.completed',
    data: {
      object: {
        ...session,
        object: 'checkout.session',
        status: 'complete',
        payment_status: overrides.paymentStatus ?? 'paid',
      },
    },
  };
}

/** POSTs `payload` (sent byte for byte) with a Stripe-Signature made by the stripe package (`t` = `timestamp`). */
function deliverStripe(payload: string, secret = STRIPE_WEBHOOK_SECRET, c = ctx, timestamp?: number) {
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret, ...(timestamp ? { timestamp } : {}) });
  return c.inject({
    method: 'POST',
    url: '/api/webhooks/inbound/stripe',
    headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature },
    payload,
  });
}

const storedEvents = async (provider: string) =>
  (
    await queryRows<{ n: number }>(
      ctx.deps.db,
      sql`SELECT count(*)::int AS n FROM inbound_webhook_events WHERE provider = ${provider}`,
    )
  )[0]!.n;

describe('POST /api/webhooks/inbound/stripe', () => {
  test('a paid checkout.session.completed credits the purchase once; a replay is 200 and does nothing', async () => {
    const session = await checkout(alice);
    const before = await balanceOf(alice);
    const payload = JSON.stringify(sessionEvent(session));
    const first = await deliverStripe(payload);
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json(), { success: true, data: { received: true, duplicate: false } });
    assert.equal(await balanceOf(alice), before + 5000);
    assert.equal(await balanceOf(bob), 100, "another user's purchase credits only its buyer");
    const view = (await ctx.call(alice, 'GET', '/api/credits/balance')).json().data;
    assert.deepEqual(
      { kind: view.transactions[0].kind, amount: view.transactions[0].amount },
      { kind: 'purchase', amount: 5000 },
    );
    const [row] = await ctx.deps.db
      .select()
      .from(creditCheckouts)
      .where(eq(creditCheckouts.id, session.metadata.checkoutId!));
    assert.equal(row!.status, 'completed');

    const again = await deliverStripe(payload);
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().data.duplicate, true);
    // Another event about the same session (an asynchronous payment reported as well) credits nothing more.
    const other = await deliverStripe(
      JSON.stringify(sessionEvent(session, { type: 'checkout.session.async_payment_succeeded' })),
    );
    assert.equal(other.json().data.duplicate, false);
    assert.equal(await balanceOf(alice), before + 5000);
  });

  test('the same event delivered 10 times at once is credited once', async () => {
    const session = await checkout(bob, 'growth');
    const before = await balanceOf(bob);
    const payload = JSON.stringify(sessionEvent(session));
    const answers = await Promise.all(Array.from({ length: 10 }, () => deliverStripe(payload)));
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      Array(10).fill(200),
    );
    assert.equal(answers.filter((a) => a.json().data.duplicate === false).length, 1);
    assert.equal(await balanceOf(bob), before + 30_000);
    const [n] = await queryRows<{ n: number }>(
      ctx.deps.db,
      sql`SELECT count(*)::int AS n FROM credit_transactions WHERE user_id = ${bob.id} AND kind = 'purchase'`,
    );
    assert.equal(n!.n, 1);
  });

  test('an unpaid session is credited only when its asynchronous payment succeeds', async () => {
    const user = await ctx.signup();
    const session = await checkout(user);
    const pending = await deliverStripe(JSON.stringify(sessionEvent(session, { paymentStatus: 'unpaid' })));
    assert.equal(pending.statusCode, 200);
    assert.equal(await balanceOf(user), 100);
    await deliverStripe(JSON.stringify(sessionEvent(session, { type: 'checkout.session.async_payment_succeeded' })));
    assert.equal(await balanceOf(user), 5100);
  });

  test('charge.refunded takes back the refunded share of the credits, once per event, never below zero', async () => {
    const user = await ctx.signup();
    const session = await checkout(user); // starter: 5,000 credits for 10.00 USD
    const paymentIntent = `pi_${randomBytes(6).toString('hex')}`;
    await deliverStripe(JSON.stringify(sessionEvent({ ...session, payment_intent: paymentIntent } as never)));
    assert.equal(await balanceOf(user), 5100);
    const refund = (amountRefunded: number, intent = paymentIntent) =>
      JSON.stringify({
        id: `evt_${randomBytes(8).toString('hex')}`,
        object: 'event',
        type: 'charge.refunded',
        data: {
          object: {
            id: `ch_${intent}`,
            object: 'charge',
            amount: 1_000,
            amount_refunded: amountRefunded,
            refunded: amountRefunded === 1_000,
            payment_intent: intent,
          },
        },
      });
    const quarter = refund(250);
    assert.equal((await deliverStripe(quarter)).statusCode, 200);
    assert.equal(await balanceOf(user), 5100 - 1250, 'a quarter of the money: a quarter of the credits');
    assert.equal((await deliverStripe(quarter)).json().data.duplicate, true);
    await deliverStripe(refund(250)); // the same refund again under another event id
    assert.equal(await balanceOf(user), 3850, 'nothing taken twice');
    await deliverStripe(refund(400, `pi_${randomBytes(6).toString('hex')}`));
    assert.equal(await balanceOf(user), 3850, "another payment's refund takes nothing");

    await ctx.deps.credits.spend(ctx.deps.db, user.id, 'pages', 3800);
    await deliverStripe(refund(1_000));
    assert.equal(await balanceOf(user), 0, 'what was spent cannot be taken back: the balance stops at zero');
    const [row] = (await ctx.call(user, 'GET', '/api/credits/balance')).json().data.transactions;
    assert.equal(row.kind, 'refund');
    assert.equal(row.amount, -50);
    assert.match(row.reason, /3750 credits due back/);
    await deliverStripe(refund(800)); // an older event arriving late
    assert.equal(await balanceOf(user), 0);
  });

  test('the signature is checked on the raw bytes: JSON spelled unusually still verifies', async () => {
    const user = await ctx.signup();
    const session = await checkout(user);
    // Spacing and escapes that parsing and re-serialising would change.
    const payload = JSON.stringify(sessionEvent(session), null, 3).replace(
      '"object": "event"',
      '"object":"\\u0065vent"',
    );
    const res = await deliverStripe(payload);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await balanceOf(user), 5100);
  });

  test('a bad or missing signature is 400 INVALID_SIGNATURE and nothing is stored or credited', async () => {
    const user = await ctx.signup();
    const session = await checkout(user);
    const payload = JSON.stringify(sessionEvent(session));
    const storedBefore = await storedEvents('stripe');
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_WEBHOOK_SECRET });
    const tampered = await ctx.inject({
      method: 'POST',
      url: '/api/webhooks/inbound/stripe',
      headers: { 'content-type': 'application/json', 'stripe-signature': signature },
      payload: payload.replace('"paid"', '"paid" '),
    });
    assertError(tampered, 400, 'INVALID_SIGNATURE');
    assert.equal(tampered.json().error.details[0].field, 'stripe-signature');
    assertError(await deliverStripe(payload, 'whsec_someone_else'), 400, 'INVALID_SIGNATURE');
    const unsigned = await ctx.inject({
      method: 'POST',
      url: '/api/webhooks/inbound/stripe',
      headers: { 'content-type': 'application/json' },
      payload,
    });
    assertError(unsigned, 400, 'INVALID_SIGNATURE');
    const stale = Stripe.webhooks.generateTestHeaderString({
      payload,
      secret: STRIPE_WEBHOOK_SECRET,
      timestamp: Math.floor(Date.now() / 1000) - 3600,
    });
    assertError(
      await ctx.inject({
        method: 'POST',
        url: '/api/webhooks/inbound/stripe',
        headers: { 'content-type': 'application/json', 'stripe-signature': stale },
        payload,
      }),
      400,
      'INVALID_SIGNATURE',
    );
    assert.equal(await storedEvents('stripe'), storedBefore);
    assert.equal(await balanceOf(user), 100);
  });

  test('a signature dated more than 5 minutes ahead is 400 INVALID_SIGNATURE and credits nothing', async () => {
    const user = await ctx.signup();
    const session = await checkout(user);
    const payload = JSON.stringify(sessionEvent(session));
    const storedBefore = await storedEvents('stripe');
    const now = Math.floor(Date.now() / 1000);
    for (const ahead of [365 * 24 * 3600, 400]) {
      const res = await deliverStripe(payload, STRIPE_WEBHOOK_SECRET, ctx, now + ahead);
      assertError(res, 400, 'INVALID_SIGNATURE');
      assert.equal(res.json().error.details[0].field, 'stripe-signature');
    }
    assert.equal(await storedEvents('stripe'), storedBefore);
    assert.equal(await balanceOf(user), 100);
    // A sender's clock a little ahead of ours is within the window.
    const slightly = await deliverStripe(payload, STRIPE_WEBHOOK_SECRET, ctx, now + 10);
    assert.equal(slightly.statusCode, 200, slightly.body);
    assert.equal(await balanceOf(user), 5100);
  });

  test('a signed event that is not a well-formed event is 400 naming the field, nothing stored', async () => {
    const storedBefore = await storedEvents('stripe');
    assertValidation(await deliverStripe(JSON.stringify({ object: 'event', type: 'x', data: { object: {} } })), 'id');
    assertValidation(
      await deliverStripe(JSON.stringify({ id: 'evt_bad1', type: 'checkout.session.completed', data: { object: {} } })),
      'data.object.id',
    );
    assertValidation(await deliverStripe('not json'), 'body');
    assert.equal(await storedEvents('stripe'), storedBefore);
  });

  test("events about sessions that are not this service's are stored and credit nobody", async () => {
    const before = await balanceOf(alice);
    const foreign = { id: 'cs_test_elsewhere', metadata: { userId: alice.id, credits: '999999' } };
    const res = await deliverStripe(JSON.stringify(sessionEvent(foreign)));
    assert.equal(res.statusCode, 200);
    assert.equal(await balanceOf(alice), before);
    const other = await deliverStripe(JSON.stringify({ id: 'evt_other', type: 'invoice.paid', data: { object: {} } }));
    assert.equal(other.statusCode, 200);
  });

  test('without STRIPE_WEBHOOK_SECRET: 503 PAYMENTS_NOT_CONFIGURED, nothing stored', async () => {
    const payload = JSON.stringify({ id: 'evt_x', type: 'invoice.paid', data: { object: {} } });
    assertError(await deliverStripe(payload, STRIPE_WEBHOOK_SECRET, bare), 503, 'PAYMENTS_NOT_CONFIGURED');
    assert.deepEqual(await bare.deps.db.select().from(inboundWebhookEvents), []);
  });
});

describe('POST /api/webhooks/inbound/standard', () => {
  const signer = new Webhook(STANDARD_SECRET);
  const headersFor = (id: string, payload: string, at = new Date()) => ({
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signer.sign(id, at, payload),
  });
  const deliver = (headers: Record<string, string>, payload: string, c = ctx) =>
    c.inject({ method: 'POST', url: '/api/webhooks/inbound/standard', headers, payload });

  test('a Standard Webhooks delivery is verified and stored once per webhook-id', async () => {
    const payload = JSON.stringify({ type: 'email.replied', timestamp: new Date().toISOString(), data: { a: 1 } });
    const first = await deliver(headersFor('msg_1', payload), payload);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().data.duplicate, false);
    const [row] = await ctx.deps.db
      .select()
      .from(inboundWebhookEvents)
      .where(eq(inboundWebhookEvents.eventId, 'msg_1'));
    assert.equal(row!.provider, 'standard');
    assert.equal(row!.type, 'email.replied');
    assert.deepEqual((row!.payload as { data: unknown }).data, { a: 1 });
    const again = await deliver(headersFor('msg_1', payload), payload);
    assert.equal(again.json().data.duplicate, true);
  });

  test('bad signature, missing headers and bad fields are 400s; nothing is stored', async () => {
    const payload = JSON.stringify({ type: 'x', data: {} });
    const storedBefore = await storedEvents('standard');
    const signed = headersFor('msg_2', payload);
    assertError(await deliver(signed, payload.replace('"x"', '"y"')), 400, 'INVALID_SIGNATURE');
    const other = new Webhook(`whsec_${randomBytes(24).toString('base64')}`);
    const at = new Date();
    assertError(
      await deliver({ ...signed, 'webhook-signature': other.sign('msg_2', at, payload) }, payload),
      400,
      'INVALID_SIGNATURE',
    );
    const { 'webhook-id': _, ...noId } = signed;
    const missing = await deliver(noId, payload);
    assertError(missing, 400, 'INVALID_SIGNATURE');
    assert.equal(missing.json().error.details[0].field, 'webhook-id');
    // Timestamps more than 5 minutes away either way (standardwebhooks' own window).
    const year = 365 * 24 * 3600 * 1000;
    for (const at of [new Date(Date.now() + year), new Date(Date.now() + 400_000), new Date(Date.now() - 400_000)]) {
      const dated = await deliver(headersFor('msg_5', payload, at), payload);
      assertError(dated, 400, 'INVALID_SIGNATURE');
      assert.equal(dated.json().error.details[0].field, 'webhook-signature');
    }
    const badType = JSON.stringify({ type: 5 });
    assertValidation(await deliver(headersFor('msg_3', badType), badType), 'type');
    assertValidation(await deliver(headersFor('msg_4', 'nope'), 'nope'), 'body');
    assert.equal(await storedEvents('standard'), storedBefore);
  });

  test('unknown providers, and standard without INBOUND_WEBHOOK_SECRET, are 404', async () => {
    const payload = '{}';
    assertError(await deliver(headersFor('m', payload), payload, bare), 404, 'NOT_FOUND');
    assertError(
      await ctx.inject({
        method: 'POST',
        url: '/api/webhooks/inbound/paypal',
        payload,
        headers: headersFor('m', payload),
      }),
      404,
      'NOT_FOUND',
    );
  });
});
