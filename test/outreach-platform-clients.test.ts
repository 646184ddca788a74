/**
 * The Instantly and Smartlead clients against loopback stubs of each platform's wire format (one file for both:
 * the same contract, PlatformClient, checked call by call on each).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { platformClient, platformWebhookParser } from '../src/modules/outreach/providers/index.ts';
import { createInstantlyClient, parseInstantlyWebhook } from '../src/modules/outreach/providers/instantly.ts';
import {
  type PlatformCampaignInput,
  PlatformError,
  type PlatformLead,
} from '../src/modules/outreach/providers/platform.ts';
import { createSmartleadClient, parseSmartleadWebhook } from '../src/modules/outreach/providers/smartlead.ts';
import { type InstantlyStub, startInstantlyStub } from './helpers/instantly-stub.ts';
import { type SmartleadStub, startSmartleadStub } from './helpers/smartlead-stub.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.ts';

const KEY = 'key-right-0123456789';

const campaignInput = (senders: PlatformCampaignInput['senders']): PlatformCampaignInput => ({
  name: 'Q4 outreach',
  steps: [
    { subject: '{{quarry_subject_1}}', body: '{{quarry_body_1}}', delayDays: 0 },
    { subject: '{{quarry_subject_2}}', body: '{{quarry_body_2}}', delayDays: 2 },
    { subject: '{{quarry_subject_3}}', body: '{{quarry_body_3}}', delayDays: 4 },
  ],
  // Monday, Wednesday, Friday and Sunday.
  window: { timezone: 'Europe/Berlin', days: [1, 3, 5, 7], startHour: 9, endHour: 17 },
  dailyLimit: 40,
  senders,
  stopOnReply: true,
  trackOpens: false,
  minGapMinutes: 12,
});

const leads: PlatformLead[] = [
  {
    email: 'ada@example.com',
    firstName: 'Ada',
    lastName: 'Lovelace',
    company: 'Analytical Engines',
    customFields: { quarry_subject_1: 'Hi Ada', quarry_body_1: 'Hello from London' },
  },
  {
    email: 'alan@example.com',
    firstName: null,
    lastName: null,
    company: null,
    customFields: { quarry_subject_1: 'Hi' },
  },
];

async function rejectsWith(p: Promise<unknown>, status: number | undefined, reason?: RegExp): Promise<PlatformError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof PlatformError, `expected a PlatformError, got ${String(err)}`);
    assert.equal(err.status, status);
    if (reason) assert.match(err.message, reason);
    return err;
  }
  assert.fail('expected a rejection');
}

/** Delivers one event through the stub to a real receiver and parses what arrived. */
async function delivered<T>(
  stub: { deliverWebhook(url: string, e: Record<string, unknown>): Promise<{ status: number }> },
  receiver: WebhookReceiver,
  event: Record<string, unknown>,
  parse: (payload: unknown) => T,
): Promise<T> {
  const n = receiver.requests.length;
  const res = await stub.deliverWebhook(receiver.url, event);
  assert.equal(res.status, 200);
  await receiver.waitFor(n + 1);
  const req = receiver.requests[n];
  assert.ok(req);
  assert.equal(req.headers['content-type'], 'application/json');
  return parse(JSON.parse(req.body));
}

describe('Instantly client', () => {
  let stub: InstantlyStub;
  let receiver: WebhookReceiver;
  const accounts = Array.from({ length: 130 }, (_, i) => ({
    email: `sender${String(i).padStart(3, '0')}@mail.example.com`,
    first_name: 'Sam',
    last_name: `Sender ${i}`,
    daily_limit: 30 + (i % 5),
    warmup_status: i % 2,
  }));
  const client = () => createInstantlyClient({ baseUrl: stub.url, apiKey: KEY });

  before(async () => {
    stub = await startInstantlyStub({ apiKey: KEY, accounts, workspaceName: 'Acme outbound' });
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await stub.close();
    await receiver.close();
  });

  test('verify answers the workspace; a wrong key is a 401 PlatformError with the reason', async () => {
    assert.deepEqual(await client().verify(), { accountLabel: 'Acme outbound' });
    assert.equal(stub.requests.at(-1)?.headers.authorization, `Bearer ${KEY}`);
    const wrong = createInstantlyClient({ baseUrl: stub.url, apiKey: 'nope' });
    await rejectsWith(wrong.verify(), 401, /^Invalid API key$/);
  });

  test('listAccounts follows next_starting_after over pages of at most 100', async () => {
    const before = stub.requests.length;
    const list = await client().listAccounts();
    assert.equal(list.length, 130);
    assert.equal(new Set(list.map((a) => a.email)).size, 130);
    const pages = stub.requests.slice(before);
    assert.equal(pages.length, 2);
    assert.equal(pages[0]?.query.limit, '100');
    assert.equal(pages[0]?.query.starting_after, undefined);
    assert.equal(pages[1]?.query.starting_after, 'sender099@mail.example.com');
    const first = list.find((a) => a.email === 'sender001@mail.example.com');
    assert.deepEqual(first, {
      externalId: 'sender001@mail.example.com',
      email: 'sender001@mail.example.com',
      fromName: 'Sam Sender 1',
      dailyLimit: 31,
      warmupEnabled: true,
    });
    assert.equal(list.find((a) => a.email === 'sender000@mail.example.com')?.warmupEnabled, false);
  });

  test('createCampaign sends the sequence, schedule, limits and senders in Instantly’s shape', async () => {
    const senders = [accounts[0], accounts[1]].map((a) => ({ externalId: a!.email, email: a!.email }));
    const { externalId } = await client().createCampaign(campaignInput(senders));
    const c = stub.state.campaigns.get(externalId);
    assert.ok(c);
    assert.equal(c.status, 0);
    const schedule = c.body.campaign_schedule.schedules[0];
    assert.deepEqual(schedule.timing, { from: '09:00', to: '17:00' });
    assert.equal(schedule.timezone, 'Europe/Berlin');
    // "0" is Sunday on Instantly.
    assert.deepEqual(schedule.days, { 0: true, 1: true, 2: false, 3: true, 4: false, 5: true, 6: false });
    const steps = c.body.sequences[0].steps;
    assert.deepEqual(
      steps.map((s: any) => s.delay),
      [2, 4, 0],
    );
    assert.deepEqual(steps[1].variants, [{ subject: '{{quarry_subject_2}}', body: '{{quarry_body_2}}' }]);
    assert.deepEqual(
      c.body.email_list,
      senders.map((s) => s.email),
    );
    assert.equal(c.body.daily_limit, 40);
    assert.equal(c.body.stop_on_reply, true);
    assert.equal(c.body.open_tracking, false);
    assert.equal(c.body.email_gap, 12);
  });

  test('a campaign the platform refuses is a PlatformError with its reason and status', async () => {
    const input = campaignInput([]);
    await rejectsWith(client().createCampaign({ ...input, name: '' }), 400, /required property 'name'/);
    await rejectsWith(client().setCampaignStatus('00000000-0000-0000-0000-000000000000', 'active'), 404, /not found/);
  });

  test('setCampaignStatus activates and pauses', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    await client().setCampaignStatus(externalId, 'active');
    assert.equal(stub.state.campaigns.get(externalId)?.status, 1);
    assert.equal(stub.requests.at(-1)?.path, `/api/v2/campaigns/${externalId}/activate`);
    await client().setCampaignStatus(externalId, 'paused');
    assert.equal(stub.state.campaigns.get(externalId)?.status, 2);
  });

  test('addLeads uploads leads with their custom variables', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    assert.deepEqual(await client().addLeads(externalId, leads), { uploaded: 2 });
    const stored = stub.state.campaigns.get(externalId)?.leads ?? [];
    assert.deepEqual(stored[0], {
      email: 'ada@example.com',
      first_name: 'Ada',
      last_name: 'Lovelace',
      company_name: 'Analytical Engines',
      custom_variables: { quarry_subject_1: 'Hi Ada', quarry_body_1: 'Hello from London' },
    });
    assert.deepEqual(stored[1], { email: 'alan@example.com', custom_variables: { quarry_subject_1: 'Hi' } });
    // Already in the campaign: nothing new uploaded.
    assert.deepEqual(await client().addLeads(externalId, leads.slice(0, 1)), { uploaded: 0 });
  });

  test('campaignAnalytics reads totals and sums the variants of each step', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    const c = stub.state.campaigns.get(externalId)!;
    c.analytics = {
      emails_sent_count: 120,
      open_count: 80,
      open_count_unique: 60,
      reply_count: 9,
      bounced_count: 3,
      unsubscribed_count: 2,
    };
    c.stepAnalytics = [
      { step: '0', variant: '0', sent: 70, opened: 50, unique_opened: 40, replies: 6, unique_replies: 5 },
      { step: '0', variant: '1', sent: 20, opened: 10, unique_opened: 8, replies: 1, unique_replies: 1 },
      { step: '1', variant: '0', sent: 30, opened: 20, unique_opened: 12, replies: 3, unique_replies: 3 },
      { step: null, variant: null, sent: 5, opened: 0, unique_opened: 0, replies: 0, unique_replies: 0 },
    ];
    assert.deepEqual(await client().campaignAnalytics(externalId), {
      sent: 120,
      opened: 60,
      replied: 9,
      bounced: 3,
      unsubscribed: 2,
      steps: [
        { step: 0, sent: 90, opened: 48, replied: 6 },
        { step: 1, sent: 30, opened: 12, replied: 3 },
      ],
    });
  });

  test('setWarmup and warmupAnalytics', async () => {
    const a = accounts[10]!;
    const ref = { externalId: a.email, email: a.email };
    stub.state.accounts.get(a.email)!.warmup = {
      sent: 50,
      landed_inbox: 45,
      landed_spam: 5,
      received: 48,
      health_score: 90,
    };
    await client().setWarmup(ref, true);
    assert.equal(stub.state.accounts.get(a.email)?.warmup_status, 1);
    assert.deepEqual(stub.requests.at(-1)?.body, { emails: [a.email] });
    assert.deepEqual(await client().warmupAnalytics(ref), {
      email: a.email,
      enabled: true,
      sent: 50,
      landedInbox: 45,
      landedSpam: 5,
      received: 48,
      healthScore: 90,
    });
    await client().setWarmup(ref, false);
    assert.equal(stub.state.accounts.get(a.email)?.warmup_status, 0);
    assert.equal((await client().warmupAnalytics(ref)).enabled, false);
  });

  test('replyToEmail replies in the thread from the account', async () => {
    const from = { externalId: accounts[3]!.email, email: accounts[3]!.email };
    const res = await client().replyToEmail({
      from,
      replyToExternalId: 'email-uuid-1',
      campaignExternalId: null,
      subject: 'Re: Hello',
      bodyText: 'Thanks, Ada',
    });
    const sent = stub.state.replies.at(-1);
    assert.equal(res.externalId, sent.id);
    assert.equal(sent.eaccount, from.email);
    assert.equal(sent.reply_to_uuid, 'email-uuid-1');
    assert.equal(sent.subject, 'Re: Hello');
    assert.deepEqual(sent.body, { text: 'Thanks, Ada' });
    const stranger = { externalId: 'x@nowhere.example', email: 'x@nowhere.example' };
    await rejectsWith(
      client().replyToEmail({
        from: stranger,
        replyToExternalId: 'e',
        campaignExternalId: null,
        subject: 's',
        bodyText: 'b',
      }),
      400,
      /not found/,
    );
  });

  test('registerWebhook points all events at the url, for one campaign when named', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    const res = await client().registerWebhook({
      url: `${receiver.url}/hook?secret=s1`,
      campaignExternalId: externalId,
    });
    const hook = stub.state.webhooks.at(-1);
    assert.equal(res.externalId, hook.id);
    assert.equal(hook.target_hook_url, `${receiver.url}/hook?secret=s1`);
    assert.equal(hook.event_type, 'all_events');
    assert.equal(hook.campaign, externalId);
    await client().registerWebhook({ url: `${receiver.url}/all` });
    assert.equal(stub.state.webhooks.at(-1).campaign, undefined);
  });

  test('webhook deliveries of each kind parse', async () => {
    const base = { campaign_id: 'c-1', lead_email: 'ada@example.com', email_account: 'sender001@mail.example.com' };
    const sent = await delivered(
      stub,
      receiver,
      {
        ...base,
        event_type: 'email_sent',
        step: 2,
        variant: 1,
        email_id: 'em-1',
        email_subject: 'Hi Ada',
        email_text: 'Hello',
        timestamp: '2026-01-05T09:00:00.000Z',
      },
      parseInstantlyWebhook,
    );
    assert.equal(sent.kind, 'sent');
    assert.equal(sent.platformType, 'email_sent');
    assert.equal(sent.step, 1);
    assert.equal(sent.leadEmail, 'ada@example.com');
    assert.equal(sent.campaignExternalId, 'c-1');
    assert.equal(sent.accountEmail, 'sender001@mail.example.com');
    assert.equal(sent.subject, 'Hi Ada');
    assert.equal(sent.bodyText, 'Hello');
    assert.equal(sent.emailExternalId, 'em-1');
    assert.equal(sent.occurredAt, '2026-01-05T09:00:00.000Z');
    assert.match(sent.eventId, /^instantly:[0-9a-f]{64}$/);

    const replied = await delivered(
      stub,
      receiver,
      {
        ...base,
        event_type: 'reply_received',
        step: 1,
        email_id: 'em-1',
        reply_subject: 'Re: Hi Ada',
        reply_text: 'Sounds good',
        reply_text_snippet: 'Sounds',
        timestamp: '2026-01-06T10:00:00.000Z',
      },
      parseInstantlyWebhook,
    );
    assert.equal(replied.kind, 'replied');
    assert.equal(replied.step, 0);
    assert.equal(replied.subject, 'Re: Hi Ada');
    assert.equal(replied.bodyText, 'Sounds good');
    assert.notEqual(replied.eventId, sent.eventId);

    const kinds: Array<[string, string]> = [
      ['email_opened', 'opened'],
      ['email_bounced', 'bounced'],
      ['lead_unsubscribed', 'unsubscribed'],
      ['lead_interested', 'other'],
    ];
    for (const [type, kind] of kinds) {
      const e = await delivered(stub, receiver, { ...base, event_type: type }, platformWebhookParser('instantly'));
      assert.equal(e.kind, kind, type);
      assert.equal(e.platformType, type);
      assert.ok(e.occurredAt, 'the stub stamps deliveries like the platform does');
    }
    // A re-delivery of the same event digests the same.
    const payload = { ...base, event_type: 'email_opened', email_id: 'em-1', timestamp: '2026-01-05T11:00:00Z' };
    assert.equal(parseInstantlyWebhook(payload).eventId, parseInstantlyWebhook({ ...payload }).eventId);
    assert.throws(() => parseInstantlyWebhook([]), PlatformError);
    assert.throws(() => parseInstantlyWebhook({ lead_email: 'a@b.c' }), PlatformError);
  });
});

describe('Smartlead client', () => {
  let stub: SmartleadStub;
  let receiver: WebhookReceiver;
  const accounts = Array.from({ length: 120 }, (_, i) => ({
    id: 5000 + i,
    from_email: `box${i}@send.example.com`,
    from_name: `Box ${i}`,
    message_per_day: 25,
    warmup_enabled: i % 3 === 0,
  }));
  const client = () => createSmartleadClient({ baseUrl: stub.url, apiKey: KEY });
  const refOf = (a: (typeof accounts)[number]) => ({ externalId: String(a.id), email: a.from_email });

  before(async () => {
    stub = await startSmartleadStub({ apiKey: KEY, accounts });
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await stub.close();
    await receiver.close();
  });

  test('verify ok; a wrong key is a 401 PlatformError with the reason, never the key', async () => {
    assert.deepEqual(await client().verify(), { accountLabel: null });
    const req = stub.requests.at(-1);
    assert.equal(req?.query.api_key, KEY);
    assert.equal(req?.headers.authorization, undefined);
    const wrongKey = 'wrong-key-abcdef';
    const err = await rejectsWith(
      createSmartleadClient({ baseUrl: stub.url, apiKey: wrongKey }).verify(),
      401,
      /^Invalid API Key$/,
    );
    assert.ok(!err.message.includes(wrongKey));
  });

  test('a network failure is a PlatformError without a status, and without the key', async () => {
    const dead = await startSmartleadStub({ apiKey: KEY });
    const url = dead.url;
    await dead.close();
    const err = await rejectsWith(createSmartleadClient({ baseUrl: url, apiKey: KEY }).verify(), undefined);
    assert.ok(!err.message.includes(KEY));
  });

  test('listAccounts pages with offset and limit', async () => {
    const before = stub.requests.length;
    const list = await client().listAccounts();
    assert.equal(list.length, 120);
    const pages = stub.requests.slice(before);
    assert.deepEqual(
      pages.map((p) => [p.query.offset, p.query.limit]),
      [
        ['0', '100'],
        ['100', '100'],
      ],
    );
    assert.deepEqual(list[3], {
      externalId: '5003',
      email: 'box3@send.example.com',
      fromName: 'Box 3',
      dailyLimit: 25,
      warmupEnabled: true,
    });
    assert.equal(list[4]?.warmupEnabled, false);
  });

  test('createCampaign sends the sequence, schedule, settings and senders in Smartlead’s shape', async () => {
    const senders = [refOf(accounts[0]!), refOf(accounts[7]!)];
    const { externalId } = await client().createCampaign(campaignInput(senders));
    const c = stub.state.campaigns.get(Number(externalId));
    assert.ok(c);
    assert.equal(c.name, 'Q4 outreach');
    assert.equal(c.status, 'DRAFTED');
    assert.deepEqual(
      c.sequences?.map((s) => [s.seq_number, s.seq_delay_details.delay_in_days, s.subject, s.email_body]),
      [
        [1, 0, '{{quarry_subject_1}}', '{{quarry_body_1}}'],
        [2, 2, '{{quarry_subject_2}}', '{{quarry_body_2}}'],
        [3, 4, '{{quarry_subject_3}}', '{{quarry_body_3}}'],
      ],
    );
    // 0 is Sunday on Smartlead.
    assert.deepEqual(c.schedule, {
      timezone: 'Europe/Berlin',
      days_of_the_week: [0, 1, 3, 5],
      start_hour: '09:00',
      end_hour: '17:00',
      min_time_btw_emails: 12,
      max_new_leads_per_day: 80,
    });
    assert.deepEqual(c.settings, {
      track_settings: ['DONT_TRACK_EMAIL_OPEN'],
      stop_lead_settings: 'REPLY_TO_AN_EMAIL',
    });
    assert.deepEqual(c.emailAccountIds, [5000, 5007]);
  });

  test('setCampaignStatus starts and pauses; an unknown campaign is a 404 PlatformError', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    await client().setCampaignStatus(externalId, 'active');
    assert.equal(stub.state.campaigns.get(Number(externalId))?.status, 'ACTIVE');
    assert.deepEqual(stub.requests.at(-1)?.body, { status: 'START' });
    await client().setCampaignStatus(externalId, 'paused');
    assert.equal(stub.state.campaigns.get(Number(externalId))?.status, 'PAUSED');
    await rejectsWith(client().setCampaignStatus('999999', 'active'), 404, /Campaign not found/);
  });

  test('addLeads sends custom fields, in requests of at most 100 leads', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    assert.deepEqual(await client().addLeads(externalId, leads), { uploaded: 2 });
    const stored = stub.state.campaigns.get(Number(externalId))?.leads ?? [];
    assert.deepEqual(stored[0], {
      email: 'ada@example.com',
      first_name: 'Ada',
      last_name: 'Lovelace',
      company_name: 'Analytical Engines',
      custom_fields: { quarry_subject_1: 'Hi Ada', quarry_body_1: 'Hello from London' },
    });
    const many = Array.from({ length: 250 }, (_, i) => ({
      email: `lead${i}@example.org`,
      firstName: null,
      lastName: null,
      company: null,
      customFields: { n: String(i) },
    }));
    const before = stub.requests.length;
    assert.deepEqual(await client().addLeads(externalId, many), { uploaded: 250 });
    assert.deepEqual(
      stub.requests.slice(before).map((r) => r.body.lead_list.length),
      [100, 100, 50],
    );
  });

  test('campaignAnalytics reads the string figures', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    stub.state.campaigns.get(Number(externalId))!.analytics = {
      sent_count: 200,
      open_count: 150,
      unique_open_count: 90,
      reply_count: 12,
      bounce_count: 4,
      unsubscribed_count: 1,
    };
    assert.deepEqual(await client().campaignAnalytics(externalId), {
      sent: 200,
      opened: 90,
      replied: 12,
      bounced: 4,
      unsubscribed: 1,
      steps: null,
    });
  });

  test('setWarmup and warmupAnalytics', async () => {
    const a = accounts[1]!;
    stub.state.accounts.get(a.id)!.warmup = {
      sent_count: 40,
      inbox_count: 38,
      spam_count: 2,
      warmup_email_received_count: 35,
    };
    stub.state.accounts.get(a.id)!.warmup_reputation = '95%';
    await client().setWarmup(refOf(a), true);
    assert.equal(stub.state.accounts.get(a.id)?.warmup_enabled, true);
    assert.deepEqual(stub.requests.at(-1)?.body, { warmup_enabled: true });
    assert.deepEqual(await client().warmupAnalytics(refOf(a)), {
      email: a.from_email,
      enabled: true,
      sent: 40,
      landedInbox: 38,
      landedSpam: 2,
      received: 35,
      healthScore: 95,
    });
    await client().setWarmup(refOf(a), false);
    assert.equal((await client().warmupAnalytics(refOf(a))).enabled, false);
  });

  test('replyToEmail replies in the campaign thread of the mail', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    const input = {
      from: refOf(accounts[0]!),
      replyToExternalId: 'stats-77',
      campaignExternalId: externalId,
      subject: 'Re: Hello',
      bodyText: 'Thanks, Ada',
    };
    await client().replyToEmail(input);
    const reply = stub.state.campaigns.get(Number(externalId))?.replies.at(-1);
    assert.equal(reply.email_stats_id, 'stats-77');
    assert.equal(reply.email_body, 'Thanks, Ada');
    await rejectsWith(client().replyToEmail({ ...input, campaignExternalId: null }), undefined, /campaign/);
  });

  test('registerWebhook registers the campaign’s webhook for the events Quarry acts on', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    const res = await client().registerWebhook({ url: `${receiver.url}/sl?secret=s2`, campaignExternalId: externalId });
    const hook = stub.state.campaigns.get(Number(externalId))?.webhooks.at(-1);
    assert.equal(res.externalId, String(hook.id));
    assert.equal(hook.webhook_url, `${receiver.url}/sl?secret=s2`);
    assert.deepEqual(
      [...hook.event_types].sort(),
      ['EMAIL_BOUNCE', 'EMAIL_OPEN', 'EMAIL_REPLY', 'EMAIL_SENT', 'LEAD_UNSUBSCRIBED'].sort(),
    );
    await rejectsWith(client().registerWebhook({ url: receiver.url }), undefined, /campaign/);
  });

  test('webhook deliveries of each kind parse', async () => {
    const { externalId } = await client().createCampaign(campaignInput([]));
    const base = {
      campaign_id: Number(externalId),
      from_email: 'box0@send.example.com',
      to_email: 'ada@example.com',
      to_name: 'Ada Lovelace',
      sl_lead_email: 'ada@example.com',
      sl_email_lead_id: 42,
      stats_id: 'stats-1',
      sequence_number: 2,
      subject: 'Hi Ada',
    };
    const sent = await delivered(
      stub,
      receiver,
      {
        ...base,
        event_type: 'EMAIL_SENT',
        time_sent: '2026-01-05T09:00:00Z',
        event_timestamp: '2026-01-05T09:00:00Z',
        sent_message: { message_id: '<m1@send.example.com>', html: '<p>Hello</p>', text: 'Hello', time: '' },
      },
      parseSmartleadWebhook,
    );
    assert.deepEqual(
      { ...sent, eventId: undefined },
      {
        eventId: undefined,
        kind: 'sent',
        platformType: 'EMAIL_SENT',
        leadEmail: 'ada@example.com',
        campaignExternalId: externalId,
        accountEmail: 'box0@send.example.com',
        step: 1,
        subject: 'Hi Ada',
        bodyText: 'Hello',
        emailExternalId: 'stats-1',
        occurredAt: '2026-01-05T09:00:00Z',
      },
    );
    assert.match(sent.eventId, /^smartlead:[0-9a-f]{64}$/);

    const replied = await delivered(
      stub,
      receiver,
      {
        ...base,
        event_type: 'EMAIL_REPLY',
        subject: 'Re: Hi Ada',
        event_timestamp: '2026-01-06T10:00:00Z',
        reply_message: { message_id: '<r1@example.com>', html: '<p>Sounds good</p>', text: 'Sounds good', time: '' },
        preview_text: 'Sounds good',
      },
      platformWebhookParser('smartlead'),
    );
    assert.equal(replied.kind, 'replied');
    assert.equal(replied.subject, 'Re: Hi Ada');
    assert.equal(replied.bodyText, 'Sounds good');
    assert.notEqual(replied.eventId, sent.eventId);

    const kinds: Array<[string, string]> = [
      ['EMAIL_OPEN', 'opened'],
      ['EMAIL_BOUNCE', 'bounced'],
      ['LEAD_UNSUBSCRIBED', 'unsubscribed'],
      ['EMAIL_LINK_CLICK', 'other'],
    ];
    for (const [type, kind] of kinds) {
      const e = await delivered(stub, receiver, { ...base, event_type: type }, parseSmartleadWebhook);
      assert.equal(e.kind, kind, type);
      assert.equal(e.leadEmail, 'ada@example.com');
    }
    assert.throws(() => parseSmartleadWebhook('x'), PlatformError);
    assert.throws(() => parseSmartleadWebhook({ to_email: 'a@b.c' }), PlatformError);
  });
});

describe('platformClient', () => {
  test('goes through the SSRF guard: loopback only when private networks are allowed', async () => {
    const stub = await startInstantlyStub({ apiKey: KEY, workspaceName: 'Guarded' });
    try {
      const config = { INSTANTLY_API_URL: stub.url, SMARTLEAD_API_URL: stub.url, ALLOW_PRIVATE_NETWORK: true };
      assert.deepEqual(await platformClient('instantly', KEY, { config }).verify(), { accountLabel: 'Guarded' });
      const blocked = platformClient('instantly', KEY, { config: { ...config, ALLOW_PRIVATE_NETWORK: false } });
      await rejectsWith(blocked.verify(), undefined);
    } finally {
      await stub.close();
    }
  });
});
