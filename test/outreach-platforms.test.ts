/**
 * README "Outreach", Platforms: the same outreach endpoints on Instantly (API v2) and Smartlead, through the real
 * clients against loopback servers speaking each platform's wire format, and the platforms' webhooks arriving over
 * real HTTP at the inbound endpoint.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { inboundWebhookEvents, outreachEnrollments, outreachMessages, webhookEvents } from '../src/db/schema/index.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { type InstantlyStub, startInstantlyStub } from './helpers/instantly-stub.ts';
import { type SmartleadStub, startSmartleadStub } from './helpers/smartlead-stub.ts';

const KEY = 'platform-key-0123456789';
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let dns: TestDnsServer;
let instantly: InstantlyStub;
let smartlead: SmartleadStub;

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });

before(async () => {
  dns = await startTestDnsServer({
    ...TEST_ZONES,
    'prospects.test': { mx: [{ exchange: 'mx.prospects.test', priority: 10 }] },
  });
  instantly = await startInstantlyStub({
    apiKey: KEY,
    workspaceName: 'Acme Growth',
    accounts: [
      { email: 'Ann@Acme-Send.test', first_name: 'Ann', last_name: 'Seller', daily_limit: 40, warmup_status: 0 },
      {
        email: 'bo@acme-send.test',
        first_name: 'Bo',
        daily_limit: 30,
        warmup_status: 1,
        warmup: { sent: 120, landed_inbox: 110, landed_spam: 10, received: 95, health_score: 92 },
      },
    ],
  });
  smartlead = await startSmartleadStub({
    apiKey: KEY,
    accounts: [{ id: 501, from_email: 'cy@acme-send.test', from_name: 'Cy', message_per_day: 25 }],
  });
  // The service listens for real: the platforms' webhooks come over HTTP to PUBLIC_URL.
  const port = await freePort();
  ({ ctx, alice, bob } = await createTwoUserContext({
    workers: false,
    env: {
      DNS_SERVERS: dns.address,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      INSTANTLY_API_URL: instantly.url,
      SMARTLEAD_API_URL: smartlead.url,
    },
  }));
  await ctx.app.listen({ host: '127.0.0.1', port });
});
after(async () => {
  await ctx?.close();
  await instantly?.close();
  await smartlead?.close();
  await dns?.close();
});

const lead = async (user: TestUser, body: Record<string, unknown>) => {
  const res = await ctx.call(user, 'POST', '/api/leads', { sourceUrl: 'https://example.com/team', ...body });
  assert.equal(res.statusCode, 201, res.body);
  const id = res.json().data.lead.id as string;
  assert.equal((await ctx.call(user, 'POST', `/api/leads/${id}/validate-email`)).statusCode, 200);
  return id;
};
const leadStatus = async (id: string) => (await ctx.call(alice, 'GET', `/api/leads/${id}`)).json().data.lead.status;
const balance = async () => (await ctx.call(alice, 'GET', '/api/credits/balance')).json().data.balance as number;

const steps = [
  { subject: '{Quick|Short} question for {{company}}', body: 'Hi {{firstName|there}},\nare you hiring?', delayDays: 0 },
  { subject: '', body: 'Following up, {{firstName|there}}.', delayDays: 3 },
];

describe('Instantly', () => {
  let connection: { id: string; webhook: { url: string; registered: boolean } };
  let campaignId: string;
  const leads: Record<string, string> = {};

  test('a refused key is 400 CONNECTION_FAILED with the platform’s reason, and nothing is stored', async () => {
    const res = await ctx.call(alice, 'POST', '/api/outreach/connections', {
      provider: 'instantly',
      name: 'Acme',
      apiKey: 'wrong-key-0123456789',
    });
    assertError(res, 400, 'CONNECTION_FAILED');
    assert.equal(res.json().error.details[0].field, 'apiKey');
    assert.match(res.json().error.message, /instantly answered 401/);
    assert.doesNotMatch(res.body, /wrong-key/);
    assert.equal((await ctx.call(alice, 'GET', '/api/outreach/connections')).json().data.connections.length, 0);
  });

  test('connecting reads the workspace and its accounts, points the webhooks here, and masks the key', async () => {
    const res = await ctx.call(alice, 'POST', '/api/outreach/connections', {
      provider: 'instantly',
      name: 'Acme',
      apiKey: KEY,
    });
    assert.equal(res.statusCode, 201, res.body);
    connection = res.json().data.connection;
    const view = res.json().data.connection;
    assert.equal(view.accountLabel, 'Acme Growth');
    assert.equal(view.apiKey, '••••6789');
    assert.deepEqual(
      view.mailboxes.map((m: { email: string; dailyLimit: number; externalId: string }) => [m.email, m.dailyLimit]),
      [
        ['ann@acme-send.test', 40],
        ['bo@acme-send.test', 30],
      ],
    );
    assert.equal(view.webhook.registered, true);
    assert.match(view.webhook.url, new RegExp(`/api/webhooks/inbound/instantly\\?connection=${view.id}&token=`));
    assert.deepEqual(
      instantly.state.webhooks.map((w) => w.target_hook_url),
      [view.webhook.url],
    );
    const listed = (await ctx.call(alice, 'GET', '/api/outreach/connections')).json().data.connections[0];
    assert.equal(listed.webhook, null, 'the webhook address (it holds a secret) is shown once');
    assert.doesNotMatch(JSON.stringify(listed), new RegExp(KEY));
    assert.equal((await ctx.call(bob, 'GET', '/api/outreach/connections')).json().data.connections.length, 0);
  });

  test('a campaign is created on Instantly: schedule, limits, senders, and steps reading each lead’s own mails', async () => {
    const accounts = (await ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    const sender = accounts.find((a: { email: string }) => a.email === 'ann@acme-send.test');
    const base = {
      connectionId: connection.id,
      name: 'Hiring managers',
      steps,
      window: { timezone: 'Europe/Berlin', days: [1, 2, 3, 4, 5], startHour: 9, endHour: 17 },
      dailyLimit: 25,
      mailboxIds: [sender.id],
    };
    const bad = await ctx.call(alice, 'POST', '/api/outreach/campaigns', {
      ...base,
      steps: [{ subject: 'Hi', body: 'Best, {{senderName}}', delayDays: 0 }],
    });
    assertError(bad, 400, 'VALIDATION_ERROR');
    assert.equal(bad.json().error.details[0].field, 'steps.0.body');
    assert.equal(instantly.state.campaigns.size, 0);

    const res = await ctx.call(alice, 'POST', '/api/outreach/campaigns', base);
    assert.equal(res.statusCode, 201, res.body);
    campaignId = res.json().data.campaign.id;
    const remote = instantly.state.campaigns.get(res.json().data.campaign.externalId)!;
    assert.ok(remote, 'the campaign exists on the platform');
    // The platform's own spelling of its account (its id), not Quarry's normalized address.
    assert.deepEqual(remote.body.email_list, ['Ann@Acme-Send.test']);
    assert.equal(remote.body.daily_limit, 25);
    assert.equal(remote.body.stop_on_reply, true);
    const schedule = remote.body.campaign_schedule.schedules[0];
    assert.equal(schedule.timezone, 'Europe/Berlin');
    assert.deepEqual(schedule.timing, { from: '09:00', to: '17:00' });
    assert.deepEqual(
      Object.keys(schedule.days).filter((d) => schedule.days[d]),
      ['1', '2', '3', '4', '5'],
    );
    const variants = remote.body.sequences[0].steps.map((s: { variants: Array<{ subject: string }> }) => s.variants[0]);
    assert.deepEqual(variants, [
      { subject: '{{quarry_subject_1}}', body: '{{quarry_body_1}}' },
      { subject: '', body: '{{quarry_body_2}}' },
    ]);
  });

  test('leads go to Instantly behind the same gates, each with its mails rendered', async () => {
    leads.ada = await lead(alice, { email: 'ada@prospects.test', firstName: 'Ada', company: 'Engines' });
    leads.nameless = await lead(alice, { email: 'someone@prospects.test', company: 'Looms' });
    leads.grace = await lead(alice, { email: 'grace@prospects.test', firstName: 'Grace', company: 'Navy' });
    leads.blocked = await lead(alice, { email: 'blocked@prospects.test', firstName: 'Bl', company: 'X' });
    await ctx.call(alice, 'POST', '/api/suppressions', { items: [{ type: 'email', value: 'blocked@prospects.test' }] });
    const res = await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/leads`, {
      leadIds: [leads.ada, leads.nameless, leads.grace, leads.blocked],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.uploaded, 3);
    assert.deepEqual(res.json().data.skipped, { suppressed: 1 });
    const remote = [...instantly.state.campaigns.values()][0]!;
    const ada = remote.leads.find((l) => l.email === 'ada@prospects.test');
    assert.equal(ada.first_name, 'Ada');
    assert.match(ada.custom_variables.quarry_subject_1, /^(Quick|Short) question for Engines$/);
    assert.equal(ada.custom_variables.quarry_body_1, 'Hi Ada,<br>are you hiring?');
    const nameless = remote.leads.find((l) => l.email === 'someone@prospects.test');
    assert.equal(nameless.custom_variables.quarry_body_2, 'Following up, there.');
    assert.equal(nameless.custom_variables.quarry_subject_2, undefined, 'a follow-up stays in the thread');
    // The platform sends them: the built-in sequencer never picks them up.
    const rows = await ctx.deps.db
      .select()
      .from(outreachEnrollments)
      .where(eq(outreachEnrollments.campaignId, campaignId));
    assert.deepEqual(
      rows.map((r) => r.nextSendAt),
      [null, null, null],
    );
  });

  test('status moves on Instantly first; its figures are the campaign’s analytics', async () => {
    const active = await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/status`, { status: 'active' });
    assert.equal(active.statusCode, 200, active.body);
    const remote = [...instantly.state.campaigns.values()][0]!;
    assert.equal(remote.status, 1);
    remote.analytics = {
      ...remote.analytics,
      emails_sent_count: 40,
      open_count_unique: 18,
      reply_count: 4,
      bounced_count: 2,
      unsubscribed_count: 1,
    };
    const figures = (await ctx.call(alice, 'GET', `/api/outreach/campaigns/${campaignId}/analytics`)).json().data;
    assert.equal(figures.source, 'instantly');
    assert.deepEqual(
      { ...figures.totals, openRate: undefined, replyRate: undefined, bounceRate: undefined },
      {
        sent: 40,
        unconfirmed: 0,
        opened: 18,
        replied: 4,
        bounced: 2,
        unsubscribed: 1,
        openRate: undefined,
        replyRate: undefined,
        bounceRate: undefined,
      },
    );
    assert.equal(figures.totals.replyRate, 0.1);
    assert.equal(figures.enrolled, 3);
    // A platform that refuses is 502 PLATFORM_ERROR, and nothing changes here.
    instantly.state.campaigns.clear();
    const paused = await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/status`, { status: 'paused' });
    assertError(paused, 502, 'PLATFORM_ERROR');
    assert.equal(
      (await ctx.call(alice, 'GET', `/api/outreach/campaigns/${campaignId}`)).json().data.campaign.status,
      'ACTIVE',
    );
    instantly.state.campaigns.set(remote.id, remote);
  });

  test('webhooks: a send is metered and makes the lead CONTACTED; a reply, a bounce and an unsubscribe do what they must', async () => {
    const remote = [...instantly.state.campaigns.values()][0]!;
    const base = { campaign_id: remote.id, email_account: 'ann@acme-send.test' };
    const endpoint = await ctx.call(alice, 'POST', '/api/webhooks', {
      url: 'https://hooks.example.test/quarry',
      eventTypes: ['email.replied', 'email.bounced'],
    });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    const before = await balance();
    const sent = await instantly.deliverWebhook(connection.webhook.url, {
      ...base,
      event_type: 'email_sent',
      lead_email: 'ada@prospects.test',
      step: 1,
      email_id: 'em-ada-1',
    });
    assert.equal(sent.status, 200, sent.body);
    assert.equal(await leadStatus(leads.ada!), 'CONTACTED');
    assert.ok((await balance()) < before, 'the sent mail is charged');

    const reply = {
      ...base,
      event_type: 'reply_received',
      lead_email: 'ada@prospects.test',
      step: 1,
      email_id: 'em-ada-reply',
      reply_subject: 'Re: Quick question',
      reply_text: 'Yes, tell me more.',
      timestamp: '2026-11-25T10:00:00.000Z',
    };
    assert.equal((await instantly.deliverWebhook(connection.webhook.url, reply)).status, 200);
    const again = await instantly.deliverWebhook(connection.webhook.url, reply);
    assert.equal(JSON.parse(again.body).data.duplicate, true, 'a re-delivery does nothing');
    assert.equal(await leadStatus(leads.ada!), 'REPLIED');
    const inbox = (await ctx.call(alice, 'GET', `/api/outreach/emails?campaignId=${campaignId}`)).json().data;
    assert.equal(inbox.threads.length, 1);
    const received = inbox.threads[0].messages.filter((m: { direction: string }) => m.direction === 'inbound');
    assert.deepEqual(
      received.map((m: { text: string; from: string }) => [m.from, m.text]),
      [['ada@prospects.test', 'Yes, tell me more.']],
    );
    const replied = await ctx.deps.db.select().from(webhookEvents).where(eq(webhookEvents.type, 'email.replied'));
    assert.equal(replied.length, 1);

    await instantly.deliverWebhook(connection.webhook.url, {
      ...base,
      event_type: 'email_bounced',
      lead_email: 'grace@prospects.test',
      step: 1,
    });
    assert.equal(await leadStatus(leads.grace!), 'INVALID');
    const bounces = (await ctx.call(alice, 'GET', '/api/email-verification/bounces')).json().data;
    assert.equal(bounces.bounces[0].email, 'grace@prospects.test');
    assert.equal(bounces.bounces[0].type, 'hard');
    assert.equal(bounces.bounces[0].format, 'platform');

    await instantly.deliverWebhook(connection.webhook.url, {
      ...base,
      event_type: 'lead_unsubscribed',
      lead_email: 'someone@prospects.test',
    });
    assert.equal(await leadStatus(leads.nameless!), 'UNSUBSCRIBED');
    const statuses = await ctx.deps.db
      .select()
      .from(outreachEnrollments)
      .where(eq(outreachEnrollments.campaignId, campaignId));
    assert.deepEqual(statuses.map((r) => r.status).sort(), ['BOUNCED', 'REPLIED', 'UNSUBSCRIBED']);
    const suppressed = await ctx.call(alice, 'GET', '/api/suppressions?type=email');
    const values = suppressed.json().data.suppressions.map((s: { value: string }) => s.value);
    assert.ok(values.includes('grace@prospects.test') && values.includes('someone@prospects.test'), suppressed.body);

    // An address without this connection's token is refused before the body is read.
    const forged = await instantly.deliverWebhook(connection.webhook.url.replace(/token=[^&]+/, 'token=forged'), reply);
    assert.equal(forged.status, 400);
    assert.equal(JSON.parse(forged.body).error.code, 'INVALID_SIGNATURE');
    const stored = await ctx.deps.db
      .select()
      .from(inboundWebhookEvents)
      .where(eq(inboundWebhookEvents.provider, 'instantly'));
    assert.equal(stored.length, 4, 'sent, reply, bounce, unsubscribe; each once');
    assert.doesNotMatch(JSON.stringify(stored), /prospects\.test/, 'no address or reply is kept in the event log');
  });

  test('events of campaigns Quarry did not create change nothing; odd deliveries never fail with a 500', async () => {
    const remote = [...instantly.state.campaigns.values()][0]!;
    const before = await balance();
    const foreign = await instantly.deliverWebhook(connection.webhook.url, {
      event_type: 'email_sent',
      campaign_id: 'a-campaign-made-on-instantly',
      lead_email: 'ada@prospects.test',
      email_id: 'em-foreign',
    });
    assert.equal(foreign.status, 200, foreign.body);
    assert.equal(await balance(), before, 'not charged');
    const odd = await instantly.deliverWebhook(connection.webhook.url, {
      event_type: 'reply_received',
      campaign_id: remote.id,
      lead_email: 'ada@prospects.test',
      email_id: 'em-odd',
      step: 3_000_000_000,
      reply_text: 'a\u0000b',
      timestamp: '-200000-01-01T00:00:00Z',
    });
    assert.equal(odd.status, 200, odd.body);
    const inbox = (await ctx.call(alice, 'GET', `/api/outreach/emails?leadId=${leads.ada}`)).json().data;
    const texts = inbox.threads[0].messages.map((m: { text: string }) => m.text);
    assert.ok(texts.includes('ab'), JSON.stringify(texts));
    for (const body of ['[1, 2]', '{"lead_email": "ada@prospects.test"}', 'not json']) {
      const malformed = await fetch(connection.webhook.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      assert.equal(malformed.status, 400, body);
      assert.equal(((await malformed.json()) as { error: { code: string } }).error.code, 'VALIDATION_ERROR');
    }
  });

  test('a reply goes out through Instantly in the lead’s thread; a new mail there is a 400', async () => {
    const inbox = (await ctx.call(alice, 'GET', `/api/outreach/emails?leadId=${leads.ada}`)).json().data;
    const theirs = inbox.threads[0].messages.find((m: { direction: string }) => m.direction === 'inbound');
    const accounts = (await ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    const ann = accounts.find((a: { email: string }) => a.email === 'ann@acme-send.test');
    const res = await ctx.call(alice, 'POST', '/api/outreach/emails', {
      mailboxId: ann.id,
      inReplyTo: theirs.messageId,
      body: 'Great: here is a link to book a call.',
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(instantly.state.replies.length, 1);
    assert.equal(instantly.state.replies[0].reply_to_uuid, 'em-ada-reply');
    assert.equal(instantly.state.replies[0].eaccount, 'Ann@Acme-Send.test');
    assert.equal(res.json().data.email.threadId, theirs.threadId);

    const fresh = await ctx.call(alice, 'POST', '/api/outreach/emails', {
      mailboxId: ann.id,
      to: 'new@prospects.test',
      subject: 'Hello',
      body: 'A new mail',
    });
    assertError(fresh, 400, 'VALIDATION_ERROR');
    assert.equal(fresh.json().error.details[0].field, 'inReplyTo');
  });

  test('a reply through Instantly is charged once, whether the API or the platform’s `sent` event records it', async () => {
    const remote = [...instantly.state.campaigns.values()][0]!;
    const inbox = (await ctx.call(alice, 'GET', `/api/outreach/emails?leadId=${leads.ada}`)).json().data;
    const theirs = inbox.threads[0].messages.find((m: { direction: string }) => m.direction === 'inbound');
    const accounts = (await ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    const ann = accounts.find((a: { email: string }) => a.email === 'ann@acme-send.test');
    const reply = (subject: string) =>
      ctx.call(alice, 'POST', '/api/outreach/emails', {
        mailboxId: ann.id,
        inReplyTo: theirs.messageId,
        subject,
        body: 'x',
      });
    const sentEvent = (emailId: string) =>
      instantly.deliverWebhook(connection.webhook.url, {
        event_type: 'email_sent',
        campaign_id: remote.id,
        email_account: 'ann@acme-send.test',
        lead_email: 'ada@prospects.test',
        email_id: emailId,
      });
    const mailsTitled = (subject: string) =>
      ctx.deps.db
        .select()
        .from(outreachMessages)
        .where(and(eq(outreachMessages.userId, alice.id), eq(outreachMessages.subject, subject)));

    // Recorded by the API, then reported by the platform.
    let before = await balance();
    assert.equal((await reply('Re: recorded first')).statusCode, 201);
    const firstId = instantly.state.replies.at(-1).id as string;
    assert.equal((await sentEvent(firstId)).status, 200);
    assert.equal(await balance(), before - 1);
    assert.equal((await mailsTitled('Re: recorded first')).length, 1);

    // Instantly took the reply, then the process failed before marking it sent (here: the database refused the write).
    await ctx.deps.db.execute(
      sql.raw(`CREATE FUNCTION test_refuse_sent() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN RAISE EXCEPTION 'the process died here'; END $$`),
    );
    await ctx.deps.db.execute(
      sql.raw(`CREATE TRIGGER test_refuse_sent BEFORE INSERT OR UPDATE ON outreach_messages FOR EACH ROW
               WHEN (NEW.status = 'SENT' AND NEW.subject = 'Re: lost') EXECUTE FUNCTION test_refuse_sent()`),
    );
    before = await balance();
    try {
      assert.equal((await reply('Re: lost')).statusCode, 500);
    } finally {
      await ctx.deps.db.execute(sql.raw('DROP TRIGGER test_refuse_sent ON outreach_messages'));
      await ctx.deps.db.execute(sql.raw('DROP FUNCTION test_refuse_sent()'));
    }
    const lost = instantly.state.replies.at(-1);
    assert.equal(lost.subject, 'Re: lost', 'the platform took it');
    assert.equal(await balance(), before - 1, 'charged when recorded');
    // The platform's event finds the mail recorded before it was asked: SENT under the platform's id, charged once.
    assert.equal((await sentEvent(lost.id)).status, 200);
    assert.equal(await balance(), before - 1, 'not charged again');
    const rows = await mailsTitled('Re: lost');
    assert.deepEqual(
      rows.map((r) => [r.status, r.messageId, r.externalId]),
      [['SENT', `${lost.id}@instantly`, lost.id]],
    );

    // Refused by the platform: the recorded mail goes and its charge is given back.
    const account = instantly.state.accounts.get('Ann@Acme-Send.test')!;
    instantly.state.accounts.delete('Ann@Acme-Send.test');
    before = await balance();
    try {
      assertError(await reply('Re: refused'), 502, 'PLATFORM_ERROR');
    } finally {
      instantly.state.accounts.set('Ann@Acme-Send.test', account);
    }
    assert.equal(await balance(), before);
    assert.deepEqual(await mailsTitled('Re: refused'), []);
  });

  test('warmup of an Instantly account is Instantly’s: enabled there, its analytics answered', async () => {
    const accounts = (await ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    const bo = accounts.find((a: { email: string }) => a.email === 'bo@acme-send.test');
    const ann = accounts.find((a: { email: string }) => a.email === 'ann@acme-send.test');
    const state = (await ctx.call(alice, 'GET', `/api/outreach/accounts/${bo.id}/warmup`)).json().data;
    assert.equal(state.enabled, true);
    assert.deepEqual(
      { sent: state.platform.sent, inbox: state.platform.landedInbox, spam: state.platform.landedSpam },
      { sent: 120, inbox: 110, spam: 10 },
    );
    assert.equal(state.platform.healthScore, 92);
    const on = await ctx.call(alice, 'POST', `/api/outreach/accounts/${ann.id}/warmup`, { enabled: true });
    assert.equal(on.statusCode, 200, on.body);
    assert.equal(instantly.state.accounts.get('Ann@Acme-Send.test')!.warmup_status, 1);
    assert.equal(on.json().data.enabled, true);
    assertError(await ctx.call(bob, 'GET', `/api/outreach/accounts/${ann.id}/warmup`), 404, 'NOT_FOUND');
  });
});

describe('Smartlead', () => {
  test('connect, a campaign with its webhook, leads with rendered mails, a reply over the webhook and back', async () => {
    const conn = await ctx.call(alice, 'POST', '/api/outreach/connections', {
      provider: 'smartlead',
      name: 'SL',
      apiKey: KEY,
    });
    assert.equal(conn.statusCode, 201, conn.body);
    const connection = conn.json().data.connection;
    assert.equal(connection.webhook.registered, false, 'Smartlead’s webhooks belong to campaigns');
    const [cy] = connection.mailboxes;
    assert.equal(cy.externalId, '501');

    const created = await ctx.call(alice, 'POST', '/api/outreach/campaigns', {
      connectionId: connection.id,
      name: 'SL campaign',
      steps,
      window: { timezone: 'America/New_York', days: [1, 3, 5], startHour: 8, endHour: 12 },
      dailyLimit: 20,
    });
    assert.equal(created.statusCode, 201, created.body);
    const campaign = created.json().data.campaign;
    const remote = smartlead.state.campaigns.get(Number(campaign.externalId))!;
    assert.deepEqual(remote.emailAccountIds, [501]);
    assert.deepEqual(remote.schedule.days_of_the_week, [1, 3, 5]);
    assert.equal(remote.schedule.timezone, 'America/New_York');
    assert.deepEqual(
      remote.sequences!.map((s: { seq_number: number; subject: string; email_body: string }) => [
        s.seq_number,
        s.subject,
        s.email_body,
      ]),
      [
        [1, '{{quarry_subject_1}}', '{{quarry_body_1}}'],
        [2, '', '{{quarry_body_2}}'],
      ],
    );
    assert.equal(remote.webhooks.length, 1);
    const hookUrl = remote.webhooks[0].webhook_url as string;
    assert.match(hookUrl, new RegExp(`/api/webhooks/inbound/smartlead\\?connection=${connection.id}&token=`));

    const linus = await lead(alice, { email: 'linus@prospects.test', firstName: 'Linus', company: 'Kernel' });
    const enrolled = await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaign.id}/leads`, {
      leadIds: [linus],
    });
    assert.equal(enrolled.json().data.uploaded, 1, enrolled.body);
    assert.equal(remote.leads[0].custom_fields.quarry_body_1, 'Hi Linus,<br>are you hiring?');

    // Smartlead names a reply by the stats id of the mail it answers: the send and the reply are two mails.
    const sent = await smartlead.deliverWebhook(hookUrl, {
      event_type: 'EMAIL_SENT',
      campaign_id: remote.id,
      sl_lead_email: 'linus@prospects.test',
      from_email: 'cy@acme-send.test',
      stats_id: 'st-linus-1',
      sequence_number: 1,
      time_sent: '2026-11-25T09:00:00.000Z',
      subject: 'Quick question for Kernel',
    });
    assert.equal(sent.status, 200, sent.body);
    assert.equal(await leadStatus(linus), 'CONTACTED');
    const replyEvent = {
      event_type: 'EMAIL_REPLY',
      campaign_id: remote.id,
      sl_lead_email: 'linus@prospects.test',
      from_email: 'cy@acme-send.test',
      stats_id: 'st-linus-1',
      sequence_number: 1,
      subject: 'Re: Quick question for Kernel',
      reply_message: { text: 'Send me the details.' },
      time_replied: '2026-11-25T10:00:00.000Z',
    };
    const delivered = await smartlead.deliverWebhook(hookUrl, {
      ...replyEvent,
      event_timestamp: '2026-11-25T10:00:05Z',
    });
    assert.equal(delivered.status, 200, delivered.body);
    // Delivered again later (its delivery time differs): the same event, applied once.
    const again = await smartlead.deliverWebhook(hookUrl, { ...replyEvent, event_timestamp: '2026-11-25T10:30:00Z' });
    assert.equal(JSON.parse(again.body).data.duplicate, true);
    assert.equal(await leadStatus(linus), 'REPLIED');

    const inbox = (await ctx.call(alice, 'GET', `/api/outreach/emails?leadId=${linus}`)).json().data;
    assert.deepEqual(
      inbox.threads[0].messages.map((m: { direction: string }) => m.direction),
      ['outbound', 'inbound'],
    );
    const theirs = inbox.threads[0].messages[1];
    assert.equal(theirs.text, 'Send me the details.');
    const sentReply = await ctx.call(alice, 'POST', '/api/outreach/emails', {
      mailboxId: cy.id,
      inReplyTo: theirs.messageId,
      body: 'Here they are.',
    });
    assert.equal(sentReply.statusCode, 201, sentReply.body);
    assert.equal(remote.replies[0].email_stats_id, 'st-linus-1');
  });
});
