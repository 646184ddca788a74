import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { emailBounces, leads } from '../src/db/schema/index.ts';
import { hardBouncedOf } from '../src/modules/email-verification/email-verification.service.ts';
import { eventEnvelopeSchema } from '../src/shared/event-payloads.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { startWebhookReceiver, verifyWith, type WebhookReceiver } from './helpers/webhook-receiver.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let dns: TestDnsServer;
let receiver: WebhookReceiver;
let secret: string;

const fixture = (name: string) => fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'dsn', name));

before(async () => {
  dns = await startTestDnsServer({
    ...TEST_ZONES,
    'fresh.test': { mx: [{ exchange: 'mx.fresh.test', priority: 10 }] },
    'spamtrap.test': { mx: [{ exchange: 'mx.spamtrap.test', priority: 10 }] },
  });
  ({ ctx, alice, bob } = await createTwoUserContext({ env: { DNS_SERVERS: dns.address } }));
  receiver = await startWebhookReceiver();
  const hook = await ctx.call(alice, 'POST', '/api/webhooks', { url: receiver.url, eventTypes: ['email.bounced'] });
  assert.equal(hook.statusCode, 201, hook.body);
  secret = hook.json().data.webhook.secret;
});
after(async () => {
  await ctx?.close();
  await receiver?.close();
  await dns?.close();
});

const postDsn = (user: TestUser, body: Buffer | string, contentType = 'message/rfc822', query = '') =>
  ctx.inject({
    method: 'POST',
    url: `/api/email-verification/bounces${query}`,
    headers: { ...user.headers, 'content-type': contentType },
    payload: body,
  });
const postJson = (user: TestUser, body: unknown) => ctx.call(user, 'POST', '/api/email-verification/bounces', body);
const createLead = async (user: TestUser, email: string) => {
  const res = await ctx.call(user, 'POST', '/api/leads', { sourceUrl: 'https://example.com/team', email });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.lead.id as string;
};
const getLead = async (user: TestUser, id: string) =>
  (await ctx.call(user, 'GET', `/api/leads/${id}`)).json().data.lead;
const bounceCount = async (user: TestUser) =>
  (await ctx.deps.db.select().from(emailBounces).where(eq(emailBounces.userId, user.id))).length;
const events = () =>
  receiver.requests.map((r) => {
    const payload = verifyWith(secret, r);
    eventEnvelopeSchema('email.bounced').parse(payload);
    return payload;
  });

describe('classification', () => {
  const table: Array<[string | undefined, number | undefined, string | null, 'hard' | 'soft' | 'block']> = [
    ['5.1.1', 550, 'Recipient address rejected', 'hard'],
    ['5.1.10', 550, null, 'hard'],
    ['5.0.0', 550, 'User unknown in local recipient table', 'hard'],
    ['5.0.0', 550, 'Message rejected as spam', 'block'],
    ['5.0.0', 550, 'Requested action not taken', 'soft'],
    ['4.2.2', 452, 'Mailbox full, try later', 'soft'],
    ['4.7.1', 451, 'Greylisted, please retry', 'soft'],
    ['5.2.2', 552, 'Mailbox full', 'soft'],
    ['5.7.1', 550, 'Service unavailable', 'block'],
    ['5.7.26', 550, 'Unauthenticated email is not accepted (DMARC)', 'block'],
    ['5.5.0', 554, 'Rejected by policy', 'block'],
    [undefined, 550, 'No such user here', 'hard'],
    // The sender refused, not the recipient; a block list named beside "rejected".
    ['5.1.8', 550, 'Access denied, bad outbound sender', 'block'],
    ['5.0.0', 550, 'Recipient address rejected: blocked using zen.spamhaus.org', 'block'],
  ];
  for (const [enhancedStatus, smtpCode, diagnostic, expected] of table) {
    test(`${enhancedStatus ?? smtpCode} "${diagnostic}" → ${expected}`, async () => {
      const email = `c${table.findIndex((r) => r[0] === enhancedStatus && r[2] === diagnostic)}@acme.test`;
      const res = await postJson(bob, { email, enhancedStatus, smtpCode, diagnostic });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.bounces[0].type, expected);
    });
  }

  test('unknown or malformed codes and addresses are a 400 naming the field, nothing stored', async () => {
    const before = await bounceCount(bob);
    const cases: Array<[unknown, string]> = [
      [{ email: 'a@acme.test', enhancedStatus: '5.9.1' }, 'enhancedStatus'],
      [{ email: 'a@acme.test', enhancedStatus: '5.1.99' }, 'enhancedStatus'],
      [{ email: 'a@acme.test', enhancedStatus: '2.0.0' }, 'enhancedStatus'],
      [{ email: 'a@acme.test', enhancedStatus: 'oops' }, 'enhancedStatus'],
      [{ email: 'a@acme.test' }, 'enhancedStatus'],
      [{ email: 'a@acme.test', smtpCode: 700 }, 'smtpCode'],
      [{ email: 'not-an-address', enhancedStatus: '5.1.1' }, 'email'],
      [{ email: 'a@acme.test', enhancedStatus: '5.1.1', campaignId: 'nope' }, 'campaignId'],
    ];
    for (const [body, field] of cases) {
      const res = await postJson(bob, body);
      assert.ok([400, 404].includes(res.statusCode), `${JSON.stringify(body)}: ${res.body}`);
      assert.equal(res.json().error.details[0].field, field, JSON.stringify(body));
    }
    const bad = await postDsn(bob, 'Subject: hello\r\n\r\nnot a report\r\n');
    assert.equal(bad.statusCode, 400, bad.body);
    assert.equal(bad.json().error.details[0].field, 'body');
    const unknownStatus = fixture('postfix-user-unknown.eml').toString().replace('Status: 5.1.1', 'Status: 5.9.9');
    const badStatus = await postDsn(bob, unknownStatus);
    assert.equal(badStatus.statusCode, 400, badStatus.body);
    assert.equal(badStatus.json().error.details[0].field, 'body.recipients.0.status');
    assert.equal(await bounceCount(bob), before);
  });
});

describe('DSN ingestion', () => {
  test('Postfix 5.1.1: hard; every lead with the address INVALID with hard_bounced; suppressed; once', async () => {
    const contacted = await createLead(alice, 'Ghost@Acme.test');
    await ctx.call(alice, 'PATCH', `/api/leads/${contacted}`, { status: 'CONTACTED' });
    const fresh = await createLead(alice, 'ghost@acme.test');
    const bobs = await createLead(bob, 'ghost@acme.test');

    const res = await postDsn(alice, fixture('postfix-user-unknown.eml'));
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.deepEqual([data.received, data.recorded, data.duplicates], [1, 1, 0]);
    const [bounce] = data.bounces;
    assert.equal(bounce.type, 'hard');
    assert.equal(bounce.email, 'ghost@acme.test');
    assert.equal(bounce.status, '5.1.1');
    assert.equal(bounce.smtpCode, 550);
    assert.equal(bounce.reportingMta, 'mail.sender.test');
    assert.equal(bounce.senderDomain, 'sender.test');

    for (const id of [contacted, fresh]) {
      const lead = await getLead(alice, id);
      assert.equal(lead.status, 'INVALID');
      assert.ok(lead.emailValidation.errors.includes('hard_bounced'));
      assert.equal(lead.emailValidation.status, 'invalid');
    }
    const bobsLead = await getLead(bob, bobs);
    assert.notEqual(bobsLead.status, 'INVALID', "another user's lead is untouched");
    assert.ok(!bobsLead.emailValidation?.errors.includes('hard_bounced'));
    const check = await ctx.call(alice, 'GET', '/api/suppressions?value=ghost@acme.test');
    assert.equal(check.json().data.match.source, 'hard_bounce');
    assert.equal((await ctx.call(bob, 'GET', '/api/suppressions?value=ghost@acme.test')).json().data.match, null);
    // Validated again, the address keeps hard_bounced and is suppressed: the checks validation shares.
    const revalidated = await ctx.call(alice, 'POST', `/api/leads/${fresh}/validate-email`);
    assert.equal(revalidated.statusCode, 200, revalidated.body);
    const validation = revalidated.json().data;
    assert.deepEqual([validation.status, validation.errors.includes('hard_bounced')], ['invalid', true]);
    assert.ok(validation.errors.includes('suppressed'));

    assert.deepEqual(
      [...(await hardBouncedOf(ctx.deps.db, alice.id, ['GHOST@acme.test', 'x@acme.test']))],
      ['ghost@acme.test'],
    );
    assert.equal((await hardBouncedOf(ctx.deps.db, bob.id, ['ghost@acme.test'])).size, 0);
    const again = await postDsn(alice, fixture('postfix-user-unknown.eml'));
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual([again.json().data.recorded, again.json().data.duplicates], [0, 1]);
    assert.equal(again.json().data.bounces[0].duplicate, true);
    assert.equal(again.json().data.bounces[0].id, bounce.id);
    const list = (await ctx.call(alice, 'GET', '/api/email-verification/bounces?type=hard')).json().data;
    assert.equal(list.bounces.filter((b: { email: string }) => b.email === 'ghost@acme.test').length, 1);

    const delivered = await eventually(async () => {
      const got = events().filter((e) => e.data.email === 'ghost@acme.test');
      return got.length ? got : undefined;
    });
    assert.equal(delivered.length, 1);
    assert.equal(delivered[0]!.data.bounceType, 'hard');
    assert.ok([contacted, fresh].includes(delivered[0]!.data.leadId));
    // The duplicate sent nothing: wait for a later event to arrive, then count again.
    await postJson(alice, { email: 'later@acme.test', enhancedStatus: '4.4.1' });
    await eventually(async () => events().some((e) => e.data.email === 'later@acme.test'));
    assert.equal(events().filter((e) => e.data.email === 'ghost@acme.test').length, 1);
  });

  test('Exchange 5.7.1 as a multipart/report body: block, against the sender, not suppressed', async () => {
    const lead = await createLead(alice, 'buyer@acme.test');
    const raw = fixture('exchange-blocked.eml').toString();
    const split = raw.indexOf('\r\n\r\n');
    const contentType = /Content-Type: (multipart\/report;[^\r\n]*(?:\r\n[ \t][^\r\n]*)*)/i
      .exec(raw.slice(0, split))![1]!
      .replace(/\r\n[ \t]+/g, ' ');
    const res = await postDsn(alice, raw.slice(split + 4), contentType);
    assert.equal(res.statusCode, 200, res.body);
    const [bounce] = res.json().data.bounces;
    assert.equal(bounce.type, 'block');
    assert.equal(bounce.senderDomain, 'sender.test');
    assert.match(bounce.diagnostic, /Spamhaus/);
    assert.notEqual((await getLead(alice, lead)).status, 'INVALID');
    assert.equal((await ctx.call(alice, 'GET', '/api/suppressions?value=buyer@acme.test')).json().data.match, null);
    const rates = (await ctx.call(alice, 'GET', '/api/email-verification/bounces')).json().data.rates;
    assert.deepEqual(rates.blocksBySender, [{ senderDomain: 'sender.test', blocks: 1 }]);
  });

  test('Gmail 5.2.2 and a Postfix delay: soft, nothing suppressed, delivered recipients skipped', async () => {
    const gmail = await postDsn(alice, fixture('gmail-mailbox-full.eml'));
    assert.equal(gmail.statusCode, 200, gmail.body);
    assert.equal(gmail.json().data.bounces[0].type, 'soft');
    assert.equal(gmail.json().data.bounces[0].status, '5.2.2');
    const delayed = await postDsn(alice, fixture('postfix-deferred.eml'));
    assert.equal(delayed.statusCode, 200, delayed.body);
    assert.deepEqual(
      delayed.json().data.bounces.map((b: { email: string; type: string }) => [b.email, b.type]),
      [['slow@acme.test', 'soft']],
    );
    assert.equal((await ctx.call(alice, 'GET', '/api/suppressions?value=full.box@gmail.com')).json().data.match, null);
  });
});

describe('GET /api/email-verification/bounces', () => {
  test('filters by type, domain, campaign and date; counts by domain and campaign; 404 for others', async () => {
    const campaign = await ctx.call(alice, 'POST', '/api/campaigns', { name: 'Q4 push' });
    assert.equal(campaign.statusCode, 201, campaign.body);
    const campaignId = campaign.json().data.campaign.id;
    for (const email of ['a1@fresh.test', 'a2@fresh.test']) {
      const res = await postJson(alice, { email, enhancedStatus: '5.1.1', campaignId });
      assert.equal(res.statusCode, 200, res.body);
    }
    const byCampaign = (await ctx.call(alice, 'GET', `/api/email-verification/bounces?campaignId=${campaignId}`)).json()
      .data;
    assert.equal(byCampaign.bounces.length, 2);
    assert.deepEqual(byCampaign.rates.byCampaign, [
      { campaignId, hard: 2, soft: 0, block: 0, total: 2, sends: null, rate: null },
    ]);
    const byDomain = (await ctx.call(alice, 'GET', '/api/email-verification/bounces?domain=FRESH.test')).json().data;
    assert.deepEqual(
      byDomain.bounces.map((b: { email: string }) => b.email),
      ['a2@fresh.test', 'a1@fresh.test'],
    );
    const all = (await ctx.call(alice, 'GET', '/api/email-verification/bounces')).json().data;
    const acme = all.rates.byDomain.find((r: { domain: string }) => r.domain === 'acme.test');
    assert.ok(acme.hard >= 1 && acme.block === 1 && acme.soft >= 1, JSON.stringify(acme));
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const none = (await ctx.call(alice, 'GET', `/api/email-verification/bounces?from=${future}`)).json().data;
    assert.deepEqual(none.bounces, []);
    const page = (await ctx.call(alice, 'GET', '/api/email-verification/bounces?limit=1')).json().data;
    assert.equal(page.bounces.length, 1);
    assert.ok(page.nextCursor);

    const other = await ctx.call(bob, 'GET', `/api/email-verification/bounces?campaignId=${campaignId}`);
    assert.equal(other.statusCode, 404);
    const bobJson = await postJson(bob, { email: 'x@acme.test', enhancedStatus: '5.1.1', campaignId });
    assert.equal(bobJson.statusCode, 404);
    assert.equal(bobJson.json().error.details[0].field, 'campaignId');
    const bobs = (await ctx.call(bob, 'GET', '/api/email-verification/bounces?domain=fresh.test')).json().data;
    assert.deepEqual(bobs.bounces, []);
  });
});

describe('POST /api/email-verification/spam-traps/check', () => {
  const trapCheck = (user: TestUser, body: unknown) =>
    ctx.call(user, 'POST', '/api/email-verification/spam-traps/check', body);

  test('each signal is a named reason, scored into a risk', async () => {
    const oldLead = await createLead(alice, 'old@acme.test');
    await ctx.deps.db.update(leads).set({ createdAt: sql`now() - interval '60 days'` }).where(eq(leads.id, oldLead));
    const hidden = await createLead(alice, 'hidden@acme.test');
    await ctx.deps.db
      .update(leads)
      .set({ provenance: { pageUrl: 'https://example.com', visible: false } })
      .where(eq(leads.id, hidden));
    await ctx.call(alice, 'POST', '/api/suppressions', { items: [{ type: 'domain', value: 'blocked.acme.test' }] });
    await createLead(alice, 'new@fresh.test');

    const emails = [
      'spamtrap@acme.test',
      'info@acme.test',
      'x@mailinator.com',
      'someone@gmial.com',
      'x@nullmx.test',
      'x@nomail.test',
      'x@nowhere-at-all.test',
      'ghost@acme.test',
      'who@blocked.acme.test',
      'hidden@acme.test',
      'new@fresh.test',
      'OLD@acme.test',
      'jane@spamtrap.test',
      'Honeypot+42@acme.test',
    ];
    const res = await trapCheck(alice, { emails });
    assert.equal(res.statusCode, 200, res.body);
    const by = new Map(res.json().data.results.map((r: { email: string }) => [r.email, r]));
    const expect = (email: string, reasons: string[], risk: string) => {
      const r = by.get(email) as { reasons: string[]; risk: string } | undefined;
      assert.ok(r, email);
      assert.deepEqual([...r.reasons].sort(), [...reasons].sort(), email);
      assert.equal(r.risk, risk, email);
    };
    expect('spamtrap@acme.test', ['known_trap_pattern'], 'high');
    expect('jane@spamtrap.test', ['known_trap_pattern'], 'high');
    expect('honeypot+42@acme.test', ['known_trap_pattern'], 'high');
    expect('info@acme.test', ['role_account'], 'low');
    expect('x@mailinator.com', ['disposable_domain'], 'low');
    // gmial.com is a typo domain and, in the disposable list, a known catcher of mistyped mail.
    expect('someone@gmial.com', ['typo_domain', 'disposable_domain'], 'high');
    expect('x@nullmx.test', ['null_mx'], 'medium');
    expect('x@nomail.test', ['no_mx'], 'medium');
    expect('x@nowhere-at-all.test', ['domain_not_found'], 'medium');
    expect('ghost@acme.test', ['hard_bounced', 'suppressed'], 'high');
    expect('who@blocked.acme.test', ['suppressed', 'domain_not_found'], 'high');
    expect('hidden@acme.test', ['invisible_element'], 'medium');
    expect('new@fresh.test', ['recently_seen_domain'], 'low');
    expect('old@acme.test', [], 'none');
  });

  test('lead ids: yours are checked, others skipped; limits and malformed input are 400s', async () => {
    const mine = await createLead(alice, 'info@acme.test');
    const hers = await createLead(bob, 'spamtrap@acme.test');
    const res = await trapCheck(alice, { leadIds: [mine, hers, 'not-a-uuid'] });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.results.length, 1);
    assert.deepEqual(data.results[0].leadIds, [mine]);
    assert.deepEqual(data.results[0].reasons, ['role_account']);
    assert.deepEqual(
      data.skipped.map((s: { leadId: string; reason: string }) => [s.leadId, s.reason]),
      [
        [hers, 'not_found'],
        ['not-a-uuid', 'not_found'],
      ],
    );
    const many = Array.from({ length: 1001 }, (_, i) => `u${i}@acme.test`);
    const tooMany = await trapCheck(alice, { emails: many });
    assert.equal(tooMany.statusCode, 400);
    assert.equal(tooMany.json().error.details[0].field, 'emails');
    const together = await trapCheck(alice, { emails: many.slice(0, 600), leadIds: many.slice(0, 401) });
    assert.equal(together.statusCode, 400);
    assert.equal(together.json().error.details[0].field, 'leadIds');
    const malformed = await trapCheck(alice, { emails: ['ok@acme.test', 'broken'] });
    assert.equal(malformed.statusCode, 400);
    assert.equal(malformed.json().error.details[0].field, 'emails.1');
    const empty = await trapCheck(alice, {});
    assert.equal(empty.statusCode, 400);
    const bobView = (await trapCheck(bob, { emails: ['ghost@acme.test'] })).json().data.results[0];
    assert.deepEqual(bobView.reasons, [], "alice's bounces and suppressions say nothing about bob's check");
  });
});
