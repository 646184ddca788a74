import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { emailBounces, outreachEnrollments, webhookEvents } from '../src/db/schema/index.ts';
import { createInboxReader } from '../src/modules/outreach/inbox/inbox.reader.ts';
import { createSequencer } from '../src/modules/outreach/sequencer/sequencer.ts';
import { DAY_MS, ManualClock } from '../src/shared/clock.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { startImapServer, type TestImapServer } from './helpers/imap-server.ts';
import { headerOf, type ReceivedMail, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

// The whole journey (README "Outreach"): a 3-step sequence to 20 leads; 3 reply, 2 hard-bounce (DSNs in the
// mailbox's IMAP inbox), 1 unsubscribes through the link, 1 sends an out-of-office; exactly the right mails go out.
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let imap: TestImapServer;
const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));
const SENDER = 'team@outreach-sender.test';

before(async () => {
  dns = await startTestDnsServer({
    ...TEST_ZONES,
    'leads.test': { mx: [{ exchange: 'mx.leads.test', priority: 10 }] },
  });
  smtp = await startSmtpServer({ auth: { user: SENDER, pass: 'pw-smtp' } });
  imap = await startImapServer({ users: [{ user: SENDER, pass: 'pw-imap' }] });
  ({ ctx, alice, bob } = await createTwoUserContext({
    clock,
    workers: false,
    env: { DNS_SERVERS: dns.address, PUBLIC_URL: 'https://q.example' },
  }));
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
  await imap?.close();
  await dns?.close();
});

const header = (mail: ReceivedMail, name: string) => headerOf(mail.raw, name);
/** The team mailbox connected for `user` (both logins checked by the API). */
const connect = (user: TestUser) =>
  ctx.call(user, 'POST', '/api/outreach/connections', {
    provider: 'smtp',
    name: 'Team',
    mailboxes: [
      {
        email: SENDER,
        smtpUrl: `smtp://${encodeURIComponent(SENDER)}:pw-smtp@127.0.0.1:${smtp.port}`,
        imapUrl: imap.url(SENDER),
        dailyLimit: 500,
      },
    ],
  });
const mailsTo = (to: string) => smtp.messages.filter((m) => m.to.includes(to));

const reply = (from: string, original: ReceivedMail, extra = '') =>
  [
    `From: <${from}>`,
    `To: <${SENDER}>`,
    `Subject: Re: ${original.subject}`,
    `Message-ID: <reply-${from}-${Math.random().toString(36).slice(2)}@leads.test>`,
    `In-Reply-To: ${header(original, 'Message-ID')}`,
    `References: ${header(original, 'Message-ID')}`,
    'Date: Mon, 02 Mar 2026 12:00:00 +0000',
    extra,
    '',
    'Sounds interesting, tell me more.',
    '',
  ]
    .filter((l, i) => l !== '' || i > 6)
    .join('\r\n');

const hardBounce = (to: string, original: ReceivedMail) =>
  `From: MAILER-DAEMON@mx.leads.test (Mail Delivery System)
Subject: Undelivered Mail Returned to Sender
To: ${SENDER}
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B0UND"
Message-ID: <dsn-${to}@mx.leads.test>

--B0UND
Content-Type: text/plain

The mail system could not deliver your message.

--B0UND
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.leads.test

Final-Recipient: rfc822; ${to}
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <${to}>: Recipient address rejected: User unknown

--B0UND
Content-Type: text/rfc822-headers

From: ${SENDER}
To: ${to}
Subject: ${original.subject}
Message-ID: ${header(original, 'Message-ID')}

--B0UND--
`.replace(/\n/g, '\r\n');

test('20 leads, 3 steps: replies, hard bounces, an unsubscribe and an out-of-office each do what they must', async () => {
  const hook = await ctx.call(alice, 'POST', '/api/webhooks', {
    url: 'https://hooks.example/quarry',
    eventTypes: ['email.replied', 'email.bounced'],
  });
  assert.equal(hook.statusCode, 201, hook.body);
  const connection = await connect(alice);
  assert.equal(connection.statusCode, 201, connection.body);
  const campaign = await ctx.call(alice, 'POST', '/api/outreach/campaigns', {
    connectionId: connection.json().data.connection.id,
    name: 'Twenty',
    steps: [
      { subject: 'Hello {{firstName}}', body: 'Hi {{firstName}}, first note.' },
      { subject: '', body: 'Hi {{firstName}}, second note.', delayDays: 2 },
      { subject: '', body: 'Hi {{firstName}}, last note.', delayDays: 2 },
    ],
    window: { timezone: 'Europe/Berlin', days: [1, 2, 3, 4, 5], startHour: 8, endHour: 18 },
    minGapSeconds: 0,
    maxGapSeconds: 0,
  });
  assert.equal(campaign.statusCode, 201, campaign.body);
  const campaignId = campaign.json().data.campaign.id as string;
  const people = Array.from({ length: 20 }, (_, i) => `p${i}@leads.test`);
  const ids: string[] = [];
  for (const [i, email] of people.entries()) {
    const res = await ctx.call(alice, 'POST', '/api/leads', {
      sourceUrl: 'https://example.com/team',
      email,
      firstName: `P${i}`,
    });
    ids.push(res.json().data.lead.id);
    await ctx.call(alice, 'POST', `/api/leads/${res.json().data.lead.id}/validate-email`);
  }
  const enroll = await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/leads`, { leadIds: ids });
  assert.equal(enroll.json().data.uploaded, 20, enroll.body);
  await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/status`, { status: 'active' });
  const sequencer = createSequencer(ctx.deps);
  const reader = createInboxReader(ctx.deps);

  // Step 1 to everyone.
  assert.equal((await sequencer.runDue()).sent, 20);
  assert.deepEqual(
    people.map((p) => mailsTo(p).length),
    people.map(() => 1),
  );
  // p0–p2 reply, p3 and p4 hard-bounce, p5 unsubscribes, p6 is out of office.
  for (const p of people.slice(0, 3)) await imap.append(SENDER, reply(p, mailsTo(p)[0]!));
  for (const p of people.slice(3, 5)) await imap.append(SENDER, hardBounce(p, mailsTo(p)[0]!));
  await imap.append(
    SENDER,
    reply(people[6]!, mailsTo(people[6]!)[0]!, 'Auto-Submitted: auto-replied').replace(
      /Subject: .*/,
      'Subject: Out of Office: back on Monday',
    ),
  );
  await imap.append(SENDER, 'From: <stranger@else.test>\r\nSubject: hello\r\nMessage-ID: <x@else.test>\r\n\r\nhi\r\n');
  const unsubscribe = new URL(header(mailsTo(people[5]!)[0]!, 'List-Unsubscribe')!.slice(1, -1));
  assert.equal(
    (
      await ctx.inject({
        method: 'POST',
        url: unsubscribe.pathname,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'List-Unsubscribe=One-Click',
      })
    ).statusCode,
    200,
  );
  const read = await reader.runDue({ force: true });
  assert.deepEqual(
    { reply: read.reply, bounce: read.bounce, auto: read.auto_reply, unmatched: read.unmatched, failed: read.failed },
    { reply: 3, bounce: 2, auto: 1, unmatched: 1, failed: 0 },
  );
  const again = await reader.runDue({ force: true });
  assert.equal(again.reply + again.bounce + again.auto_reply, 0, 'read again: nothing new');

  // Steps 2 and 3 go to the 14 others only (the out-of-office one included).
  clock.advance(2 * DAY_MS);
  assert.equal((await sequencer.runDue()).sent, 14);
  clock.advance(2 * DAY_MS);
  assert.equal((await sequencer.runDue()).sent, 14);
  clock.advance(3 * DAY_MS);
  assert.equal((await sequencer.runDue()).sent, 0);
  for (const [i, p] of people.entries()) assert.equal(mailsTo(p).length, i < 6 ? 1 : 3, p);
  assert.equal(smtp.messages.length, 48);

  const status = async (i: number) => (await ctx.call(alice, 'GET', `/api/leads/${ids[i]}`)).json().data.lead.status;
  assert.deepEqual(await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(status)), [
    'REPLIED',
    'REPLIED',
    'REPLIED',
    'INVALID',
    'INVALID',
    'UNSUBSCRIBED',
    'CONTACTED',
    'CONTACTED',
  ]);
  const enrollments = await ctx.deps.db
    .select()
    .from(outreachEnrollments)
    .where(eq(outreachEnrollments.campaignId, campaignId));
  const byStatus: Record<string, number> = {};
  for (const e of enrollments) byStatus[e.status] = (byStatus[e.status] ?? 0) + 1;
  assert.deepEqual(byStatus, { REPLIED: 3, BOUNCED: 2, UNSUBSCRIBED: 1, COMPLETED: 14 });
  const suppressed = await ctx.call(alice, 'GET', `/api/suppressions?value=${people[3]}`);
  assert.match(suppressed.body, /hard_bounce/);
  const linked = await ctx.deps.db
    .select()
    .from(emailBounces)
    .where(and(eq(emailBounces.userId, alice.id), eq(emailBounces.outreachCampaignId, campaignId)));
  assert.equal(linked.length, 2);

  const analytics = (await ctx.call(alice, 'GET', `/api/outreach/campaigns/${campaignId}/analytics`)).json().data;
  assert.deepEqual(
    {
      sent: analytics.totals.sent,
      replied: analytics.totals.replied,
      bounced: analytics.totals.bounced,
      unsubscribed: analytics.totals.unsubscribed,
    },
    { sent: 48, replied: 3, bounced: 2, unsubscribed: 1 },
  );
  assert.deepEqual(
    analytics.perStep.map((s: { step: number; sent: number; replied: number }) => [s.step, s.sent, s.replied]),
    [
      [1, 20, 3],
      [2, 14, 0],
      [3, 14, 0],
    ],
  );

  // Bounce rates now have sends to divide by (README, Email verification).
  const rates = (await ctx.call(alice, 'GET', `/api/email-verification/bounces?campaignId=${campaignId}`)).json().data
    .rates;
  assert.deepEqual(rates.byCampaign, [{ campaignId, hard: 2, soft: 0, block: 0, total: 2, sends: 48, rate: 2 / 48 }]);
  assert.deepEqual(rates.byDomain, [
    { domain: 'leads.test', hard: 2, soft: 0, block: 0, total: 2, sends: 48, rate: 2 / 48 },
  ]);
  // The bounces that rates count under the campaign show its id (README "Email verification").
  const listed = (await ctx.call(alice, 'GET', `/api/email-verification/bounces?campaignId=${campaignId}`)).json().data
    .bounces;
  assert.deepEqual(
    listed.map((b: { campaignId: string | null }) => b.campaignId),
    [campaignId, campaignId],
  );
  const inbox = (await ctx.call(alice, 'GET', `/api/outreach/emails?campaignId=${campaignId}`)).json().data;
  assert.equal(inbox.threads.length, 4, 'three replies and the out-of-office');
  const thread = inbox.threads.find((t: { leadId: string }) => t.leadId === ids[0]);
  assert.deepEqual(
    thread.messages.map((m: { direction: string; kind: string | null }) => [m.direction, m.kind]),
    [
      ['outbound', null],
      ['inbound', 'reply'],
    ],
  );
  const replied = await ctx.deps.db
    .select()
    .from(webhookEvents)
    .where(and(eq(webhookEvents.userId, alice.id), eq(webhookEvents.type, 'email.replied')));
  assert.equal(replied.length, 3);
  assert.deepEqual((await ctx.call(bob, 'GET', '/api/outreach/emails')).json().data.threads, []);

  // A reply in the thread, through the API.
  const answer = await ctx.call(alice, 'POST', '/api/outreach/emails', {
    mailboxId: thread.mailboxId,
    inReplyTo: thread.messages[1].messageId,
    body: 'Happy to. Here is more.',
  });
  assert.equal(answer.statusCode, 201, answer.body);
  const sentReply = mailsTo(people[0]!).at(-1)!;
  assert.equal(header(sentReply, 'In-Reply-To'), `<${thread.messages[1].messageId}>`);
  assert.match(sentReply.subject, /^Re: Hello P0$/);
  const refused = await ctx.call(alice, 'POST', '/api/outreach/emails', {
    mailboxId: thread.mailboxId,
    to: people[3],
    subject: 'Hi',
    body: 'Still there?',
  });
  // A valid request to a suppressed recipient: 422 SUPPRESSED naming the list entry; nothing is sent.
  assert.equal(refused.statusCode, 422, refused.body);
  assert.equal(refused.json().error.code, 'SUPPRESSED');
  assert.equal(refused.json().error.details[0].field, 'to');
  assert.match(refused.json().error.details[0].message, new RegExp(`email entry ${people[3]} \\(hard_bounce`));
  assert.equal(mailsTo(people[3]!).length, 1, 'nothing more was sent');
  assert.equal(
    (
      await ctx.call(bob, 'POST', '/api/outreach/emails', {
        mailboxId: thread.mailboxId,
        to: people[9],
        subject: 'x',
        body: 'x',
      })
    ).statusCode,
    404,
  );
  // A bounce report naming the outreach campaign shows it, in the answer and in the list.
  const posted = await ctx.call(alice, 'POST', '/api/email-verification/bounces', {
    email: 'late@elsewhere.test',
    enhancedStatus: '5.1.1',
    campaignId,
  });
  assert.equal(posted.statusCode, 200, posted.body);
  assert.equal(posted.json().data.bounces[0].campaignId, campaignId);
  const all = (await ctx.call(alice, 'GET', '/api/email-verification/bounces?domain=elsewhere.test')).json().data;
  assert.deepEqual(
    all.bounces.map((b: { campaignId: string | null }) => b.campaignId),
    [campaignId],
  );
});

test('a wrong IMAP password is shown on the account and stops nothing else', async () => {
  const user = await ctx.signup();
  const connection = await connect(user);
  assert.equal(connection.statusCode, 201, connection.body);
  // The password changed at the mail provider after the connection was made.
  const mailboxId = connection.json().data.connection.mailboxes[0].id;
  const { outreachMailboxes } = await import('../src/db/schema/index.ts');
  const { createSecretBox, secretKeyMaterial } = await import('../src/shared/crypto.ts');
  const box = createSecretBox(secretKeyMaterial(ctx.config));
  await ctx.deps.db
    .update(outreachMailboxes)
    .set({ imapUrlEncrypted: box.seal(imap.url(SENDER).replace('pw-imap', 'changed')) })
    .where(eq(outreachMailboxes.id, mailboxId));
  const run = await createInboxReader(ctx.deps).runDue({ force: true, mailboxIds: [mailboxId] });
  assert.equal(run.failed, 1);
  const account = (await ctx.call(user, 'GET', '/api/outreach/accounts')).json().data.accounts[0];
  assert.match(account.imap.error, /Authentication failed|AUTHENTICATIONFAILED|Command failed/i);
});
