import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { emitEvent } from '../src/shared/events.ts';
import { newId } from '../src/shared/ids.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { startWebhookReceiver, verifyWith, type WebhookReceiver } from './helpers/webhook-receiver.ts';

// The attempts of a batch are written as one array parameter per column: answers holding what array literals
// give meaning to (quotes, backslashes, commas, braces, the word NULL, line breaks) must come back as sent.
const ANSWERS = [
  { status: 200, body: 'NULL' },
  { status: 500, body: '{"error":"a, b","path":"C:\\\\tmp"}' },
  { status: 200, body: 'say "hi"\nthen {leave}' },
  { status: 503, body: '' },
  { status: 200, body: 'ünïcode ✓ \\"' },
];

let ctx: TestContext;
let alice: TestUser;
let receiver: WebhookReceiver;

before(async () => {
  receiver = await startWebhookReceiver();
  ctx = await createTestContext();
  alice = await ctx.signup();
});
after(async () => {
  await ctx?.close();
  await receiver?.close();
});

test('a batch of attempts is recorded exactly: answers with quotes, commas, braces, NULL, empty', async () => {
  const expected = new Map<string, (typeof ANSWERS)[number]>();
  receiver.respond((request, i) => {
    const answer = ANSWERS[i % ANSWERS.length]!;
    const id = String(request.headers['webhook-id']);
    if (!expected.has(id)) expected.set(id, answer);
    return answer;
  });
  const res = await ctx.call(alice, 'POST', '/api/webhooks', { url: receiver.url, eventTypes: ['lead.created'] });
  assert.equal(res.statusCode, 201, res.body);
  const { id: endpointId, secret } = res.json().data.webhook;
  const EVENTS = 10;
  await ctx.deps.db.transaction(async (tx) => {
    for (let i = 0; i < EVENTS; i++)
      await emitEvent(tx, alice.id, 'lead.created', { leadIds: [newId()], count: 1, jobId: null, sourceId: null });
  });

  const deliveries = await eventually(async () => {
    const list = await ctx.call(alice, 'GET', `/api/webhooks/${endpointId}/deliveries`);
    assert.equal(list.statusCode, 200, list.body);
    const rows = list.json().data.deliveries as any[];
    return rows.length === EVENTS && rows.every((d) => d.attempts.length >= 1) ? rows : undefined;
  });
  for (const request of receiver.requests) verifyWith(secret, request);
  for (const d of deliveries) {
    const answer = expected.get(d.eventId);
    assert.ok(answer, `delivery of ${d.eventId} was sent`);
    const [first] = d.attempts;
    assert.equal(first.statusCode, answer.status);
    assert.equal(first.success, answer.status === 200);
    assert.equal(first.responseBody, answer.body === '' ? null : answer.body);
    if (answer.status === 200) assert.equal(d.status, 'succeeded');
    else assert.ok(first.nextRetryAt, 'a failed first attempt has its retry scheduled');
  }
});
