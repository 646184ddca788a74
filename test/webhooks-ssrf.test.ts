import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { webhookEndpoints } from '../src/db/schema/index.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.ts';

// Webhook URLs through the SSRF guard: at creation, on update, and again at each delivery.
let receiver: WebhookReceiver;
before(async () => {
  receiver = await startWebhookReceiver();
});
after(async () => {
  await receiver?.close();
});

describe('SSRF guard (ALLOW_PRIVATE_NETWORK off)', () => {
  let guarded: TestContext;
  let carol: TestUser;
  before(async () => {
    guarded = await createTestContext({ env: { ALLOW_PRIVATE_NETWORK: 'false' } });
    carol = await guarded.signup();
  });
  after(async () => {
    await guarded?.close();
  });

  test('private webhook URLs are refused at creation and on update (400 naming url)', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://localhost/hook',
      'http://10.1.2.3/hook',
      'http://192.168.0.10/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      // IPv4-compatible (::/96), NAT64 and 6to4 forms of loopback, metadata and private addresses.
      `http://[::127.0.0.1]:${new URL(receiver.url).port}/`,
      'http://[::a9fe:a9fe]/latest/meta-data',
      'http://[::10.0.0.1]/hook',
      'http://[64:ff9b::7f00:1]/hook',
      'http://[2002:a9fe:a9fe::1]/hook',
    ]) {
      const res = await guarded.call(carol, 'POST', '/api/webhooks', { url, eventTypes: ['job.completed'] });
      assertValidation(res, 'url');
      assert.match(res.json().error.message, /Refused to connect/);
    }
    const res = await guarded.call(carol, 'POST', '/api/webhooks', {
      url: 'http://93.184.215.14/hook',
      eventTypes: ['webhook.test'],
    });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json().data.webhook.id;
    assertValidation(await guarded.call(carol, 'PATCH', `/api/webhooks/${id}`, { url: 'http://127.0.0.1/x' }), 'url');
  });

  test('each delivery is checked again: an address that became private is refused', async () => {
    const res = await guarded.call(carol, 'POST', '/api/webhooks', {
      url: 'http://93.184.215.14/hook',
      eventTypes: ['webhook.test'],
    });
    const id = res.json().data.webhook.id;
    // As if its DNS name now resolved to loopback.
    await guarded.deps.db.update(webhookEndpoints).set({ url: receiver.url }).where(eq(webhookEndpoints.id, id));
    const sent = await guarded.call(carol, 'POST', `/api/webhooks/${id}/test`);
    assert.equal(sent.statusCode, 202);
    const d = await eventually(async () => {
      const list = (await guarded.call(carol, 'GET', `/api/webhooks/${id}/deliveries`)).json().data.deliveries;
      return list[0]?.attemptCount === 1 && list[0];
    });
    assert.match(d.attempts[0].error, /Refused to connect to 127\.0\.0\.1/);
    assert.equal(receiver.requests.length, 0);
  });

  test('a delivery to an IPv4-compatible form of loopback is refused, and never arrives', async () => {
    const res = await guarded.call(carol, 'POST', '/api/webhooks', {
      url: 'http://93.184.215.14/hook',
      eventTypes: ['webhook.test'],
    });
    const id = res.json().data.webhook.id;
    // As if it had been stored before the guard knew this form.
    const url = `http://[::127.0.0.1]:${new URL(receiver.url).port}/`;
    await guarded.deps.db.update(webhookEndpoints).set({ url }).where(eq(webhookEndpoints.id, id));
    assert.equal((await guarded.call(carol, 'POST', `/api/webhooks/${id}/test`)).statusCode, 202);
    const d = await eventually(async () => {
      const list = (await guarded.call(carol, 'GET', `/api/webhooks/${id}/deliveries`)).json().data.deliveries;
      return list[0]?.attemptCount === 1 && list[0];
    });
    assert.match(d.attempts[0].error, /Refused to connect to ::7f00:1.*loopback/);
    assert.equal(receiver.requests.length, 0);
  });
});
