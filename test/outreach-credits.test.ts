import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { queryRows } from '../src/db/client.ts';
import { creditTransactions, outreachEnrollments, outreachMessages } from '../src/db/schema/index.ts';
import { createSequencer } from '../src/modules/outreach/sequencer/sequencer.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { seedCampaign, seedEnrollments, seedSmtpConnection } from './helpers/outreach-seed.ts';
import { type ScriptedSmtpServer, startScriptedSmtp } from './helpers/smtp.ts';

// README "Credits" and "Outreach": a mail is paid for when it is recorded, before the SMTP transaction, so concurrent
// sends (one-off or the sequencer's) never spend the same credits; what certainly did not go out is given back.
// Campaign analytics count as sent only what the server accepted, and show the mails whose answer was lost.
let ctx: TestContext;
let dns: TestDnsServer;
let smtp: ScriptedSmtpServer;
const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));

before(async () => {
  dns = await startTestDnsServer({ ...TEST_ZONES });
  // Recipients named refused… are refused at RCPT TO; lost… have their answer lost after the data went out.
  smtp = await startScriptedSmtp({ refuse: (r) => r.startsWith('refused'), drop: (r) => r.startsWith('lost') });
  ctx = await createTestContext({
    clock,
    workers: false,
    env: {
      DNS_SERVERS: dns.address,
      CREDITS_ENABLED: 'true',
      CREDITS_SIGNUP_GRANT: '10',
      OUTREACH_SEND_CONCURRENCY: '2',
    },
  });
});
after(async () => {
  await ctx?.close();
  await dns?.close();
  await smtp?.close();
});

async function mailboxOf(user: TestUser, name: string) {
  const { connection, mailboxes } = await seedSmtpConnection(ctx, user, [
    { email: `${name}@sender.test`, smtpUrl: `smtp://u:p@127.0.0.1:${smtp.port}` },
  ]);
  return { connection, mailbox: mailboxes[0]! };
}

const receivedFrom = (prefix: string) => smtp.received.filter((r) => r.startsWith(prefix));

/** The user's ledger: its sum, and what usage rows took. */
async function ledgerOf(userId: string) {
  const [row] = await queryRows<{ total: number; usage: number }>(
    ctx.deps.db,
    sql`SELECT coalesce(sum(amount), 0)::int AS total,
               coalesce(-sum(amount) FILTER (WHERE kind = 'usage'), 0)::int AS usage
        FROM credit_transactions WHERE user_id = ${userId}`,
  );
  return row!;
}

const mailsOf = (userId: string) =>
  ctx.deps.db
    .select()
    .from(outreachMessages)
    .where(and(eq(outreachMessages.userId, userId), eq(outreachMessages.direction, 'outbound')));

test('50 concurrent one-off mails on a balance of 10: ten are sent and paid, forty are 402 and never sent', async () => {
  const user = await ctx.signup();
  const { mailbox } = await mailboxOf(user, 'burst');
  assert.equal(await ctx.deps.credits.balance(ctx.deps.db, user.id), 10);
  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      ctx.call(user, 'POST', '/api/outreach/emails', {
        mailboxId: mailbox.id,
        to: `burst${i}@leads.test`,
        subject: 'Hello',
        body: 'One-off',
      }),
    ),
  );
  const statuses = answers.map((a) => a.statusCode);
  assert.equal(statuses.filter((s) => s === 201).length, 10, statuses.join(','));
  assert.equal(statuses.filter((s) => s === 402).length, 40, statuses.join(','));
  for (const a of answers.filter((x) => x.statusCode === 402))
    assert.equal(a.json().error.code, 'INSUFFICIENT_CREDITS');
  assert.equal(receivedFrom('burst').length, 10, 'exactly ten mails reached the server');
  assert.equal(await ctx.deps.credits.balance(ctx.deps.db, user.id), 0);
  assert.deepEqual(await ledgerOf(user.id), { total: 0, usage: 10 }, 'the grant of 10, ten usage rows of 1');
  const mails = await mailsOf(user.id);
  assert.equal(mails.length, 10, 'a refused send records nothing');
  assert.ok(mails.every((m) => m.status === 'SENT'));
});

test('the sequencer and one-off mails at once: never below zero, every mail that went out paid', async () => {
  const user = await ctx.signup();
  const { connection, mailbox } = await mailboxOf(user, 'mixed');
  const campaign = await seedCampaign(ctx, user, {
    connectionId: connection.id,
    mailboxIds: [mailbox.id],
    steps: [{ subject: 'Hi', body: 'one', delayDays: 0 }],
  });
  const leads = [];
  for (let i = 0; i < 20; i++) {
    const res = await ctx.call(user, 'POST', '/api/leads', {
      sourceUrl: 'https://example.com/c',
      email: `mixedseq${i}@leads.test`,
    });
    assert.equal(res.statusCode, 201, res.body);
    leads.push({ id: res.json().data.lead.id as string, email: `mixedseq${i}@leads.test` });
  }
  await seedEnrollments(ctx, user, campaign.id, leads);
  const [run, ...answers] = await Promise.all([
    createSequencer(ctx.deps).runDue({ claimBatch: 8 }),
    ...Array.from({ length: 20 }, (_, i) =>
      ctx.call(user, 'POST', '/api/outreach/emails', {
        mailboxId: mailbox.id,
        to: `mixedone${i}@leads.test`,
        subject: 'Hello',
        body: 'One-off',
      }),
    ),
  ]);
  const oneOffs = answers.filter((a) => a.statusCode === 201).length;
  assert.ok(
    answers.every((a) => a.statusCode === 201 || a.json().error.code === 'INSUFFICIENT_CREDITS'),
    answers.map((a) => a.statusCode).join(','),
  );
  const sent = receivedFrom('mixed');
  assert.equal(sent.length, 10, `the balance paid for 10; ${sent.length} went out`);
  assert.equal(run.sent + oneOffs, 10);
  assert.equal(await ctx.deps.credits.balance(ctx.deps.db, user.id), 0);
  assert.deepEqual(await ledgerOf(user.id), { total: 0, usage: 10 });
  const mails = await mailsOf(user.id);
  assert.deepEqual(
    mails.map((m) => m.status),
    Array(10).fill('SENT'),
    'a mail the balance did not pay for is not recorded',
  );
});

test('a mail refused for good is given back; one whose answer was lost stays charged and shows UNCONFIRMED', async () => {
  const user = await ctx.signup();
  const { mailbox } = await mailboxOf(user, 'refunds');
  const send = (to: string) =>
    ctx.call(user, 'POST', '/api/outreach/emails', { mailboxId: mailbox.id, to, subject: 'Hello', body: 'x' });
  const refused = await send('refused1@leads.test');
  assert.equal(refused.statusCode, 400, refused.body);
  assert.equal(refused.json().error.code, 'CONNECTION_FAILED');
  assert.equal(await ctx.deps.credits.balance(ctx.deps.db, user.id), 10, 'the charge was given back');
  const rows = await ctx.deps.db
    .select()
    .from(creditTransactions)
    .where(eq(creditTransactions.userId, user.id))
    .orderBy(creditTransactions.createdAt, creditTransactions.id);
  assert.deepEqual(
    rows.map((r) => [r.kind, r.amount, r.feature, r.units]),
    [
      ['grant', 10, null, null],
      ['usage', -1, 'emails_sent', 1],
      ['refund', 1, 'emails_sent', -1],
    ],
  );
  // The usage report nets the refund out: nothing was used.
  const usage = (await ctx.call(user, 'GET', '/api/credits/balance')).json().data.usageThisMonth;
  assert.equal(usage.credits, 0);
  assert.deepEqual(usage.byFeature, [{ feature: 'emails_sent', credits: 0, units: 0 }]);
  const lost = await send('lost1@leads.test');
  assert.equal(lost.statusCode, 400, lost.body);
  assert.equal(await ctx.deps.credits.balance(ctx.deps.db, user.id), 9, 'it may have gone out: charged');
  const [unconfirmed] = await mailsOf(user.id);
  assert.equal(unconfirmed?.status, 'UNCONFIRMED');
  // Someone answered it after all: the thread is in the inbox, the mail marked as unconfirmed.
  await ctx.deps.db.insert(outreachMessages).values({
    userId: user.id,
    mailboxId: mailbox.id,
    direction: 'inbound',
    kind: 'reply',
    status: 'RECEIVED',
    messageId: 'answer-1@leads.test',
    inReplyTo: unconfirmed!.messageId,
    threadId: unconfirmed!.threadId,
    fromEmail: 'lost1@leads.test',
    toEmail: 'refunds@sender.test',
    subject: 'Re: Hello',
    bodyText: 'Got it',
    receivedAt: clock.now(),
  });
  const inbox = (await ctx.call(user, 'GET', '/api/outreach/emails')).json().data;
  assert.deepEqual(
    inbox.threads[0].messages.map((m: { direction: string; status: string; unconfirmed: boolean }) => [
      m.direction,
      m.status,
      m.unconfirmed,
    ]),
    [
      ['outbound', 'UNCONFIRMED', true],
      ['inbound', 'RECEIVED', false],
    ],
  );
});

test('campaign analytics: sent counts what the server accepted; a lost answer is unconfirmed, per step too', async () => {
  const user = await ctx.signup();
  const { connection, mailbox } = await mailboxOf(user, 'figures');
  const campaign = await seedCampaign(ctx, user, {
    connectionId: connection.id,
    mailboxIds: [mailbox.id],
    steps: [{ subject: 'Hi', body: 'one', delayDays: 0 }],
  });
  const leads = [];
  // Four the server answers; the server dies on the other three after their data went out.
  for (const email of ['ok1', 'ok2', 'ok3', 'ok4', 'lost-a', 'lost-b', 'lost-c'].map((l) => `${l}@leads.test`)) {
    const res = await ctx.call(user, 'POST', '/api/leads', { sourceUrl: 'https://example.com/f', email });
    leads.push({ id: res.json().data.lead.id as string, email });
  }
  await seedEnrollments(ctx, user, campaign.id, leads);
  const before = smtp.received.length;
  const run = await createSequencer(ctx.deps).runDue();
  assert.equal(run.sent, 4);
  const arrived = smtp.received.slice(before);
  assert.equal(arrived.length, 7, 'every message’s data reached the server');
  const analytics = (await ctx.call(user, 'GET', `/api/outreach/campaigns/${campaign.id}/analytics`)).json().data;
  const confirmed = arrived.filter((r) => !r.startsWith('lost')).length;
  assert.deepEqual(
    { sent: analytics.totals.sent, unconfirmed: analytics.totals.unconfirmed },
    { sent: confirmed, unconfirmed: arrived.length - confirmed },
  );
  assert.deepEqual(
    analytics.perStep.map((s: { step: number; sent: number; unconfirmed: number }) => [s.step, s.sent, s.unconfirmed]),
    [[1, 4, 3]],
  );
  assert.deepEqual(
    analytics.perMailbox.map((s: { sent: number; unconfirmed: number }) => [s.sent, s.unconfirmed]),
    [[4, 3]],
  );
  // Lost answers stay charged (they may have arrived); the three are never sent again.
  assert.equal(await ctx.deps.credits.balance(ctx.deps.db, user.id), 10 - 7);
  clock.advance(20 * 60_000);
  assert.equal((await createSequencer(ctx.deps).runDue()).sent, 0);
  assert.equal(smtp.received.length, before + 7);
});

/** Leads of `user` with these addresses, enrolled in a one-step campaign of `mailbox`. */
async function enrolled(user: TestUser, mailbox: { id: string; connectionId: string }, emails: string[]) {
  const campaign = await seedCampaign(ctx, user, {
    connectionId: mailbox.connectionId,
    mailboxIds: [mailbox.id],
    steps: [{ subject: 'Hi', body: 'one', delayDays: 0 }],
  });
  const leads = [];
  for (const email of emails) {
    const res = await ctx.call(user, 'POST', '/api/leads', { sourceUrl: 'https://example.com/r', email });
    assert.equal(res.statusCode, 201, res.body);
    leads.push({ id: res.json().data.lead.id as string, email });
  }
  await seedEnrollments(ctx, user, campaign.id, leads);
  return campaign;
}

const ledgerRows = async (userId: string) =>
  (
    await ctx.deps.db
      .select()
      .from(creditTransactions)
      .where(eq(creditTransactions.userId, userId))
      .orderBy(creditTransactions.createdAt, creditTransactions.id)
  ).map((r) => [r.kind, r.amount, r.feature, r.units]);

test('the sequencer gives back a mail the server refused at RCPT TO; the one it took stays paid', async () => {
  const user = await ctx.signup();
  const { connection, mailbox } = await mailboxOf(user, 'seqrefund');
  await enrolled(user, { id: mailbox.id, connectionId: connection.id }, [
    'seqrefund-ok@leads.test',
    'refused-seq@leads.test',
  ]);
  const run = await createSequencer(ctx.deps).runDue();
  assert.deepEqual({ sent: run.sent, failed: run.failed }, { sent: 1, failed: 1 });
  assert.equal(await ctx.deps.credits.balance(ctx.deps.db, user.id), 9, 'the refused one was given back');
  assert.deepEqual(await ledgerRows(user.id), [
    ['grant', 10, null, null],
    ['usage', -2, 'emails_sent', 2],
    ['refund', 1, 'emails_sent', -1],
  ]);
  const refund = await ctx.deps.db
    .select()
    .from(creditTransactions)
    .where(and(eq(creditTransactions.userId, user.id), eq(creditTransactions.kind, 'refund')));
  assert.match(refund[0]!.reason ?? '', /refused/);
  assert.deepEqual((await mailsOf(user.id)).map((m) => m.status).sort(), ['FAILED', 'SENT']);
});

test('a mailbox whose SMTP login is refused: the sequencer records and charges nothing, run after run', async () => {
  const { startSmtpServer } = await import('./helpers/smtp.ts');
  const srv = await startSmtpServer({ auth: { user: 'locked@sender.test', pass: 'right' } });
  try {
    const user = await ctx.signup();
    const { connection, mailboxes } = await seedSmtpConnection(ctx, user, [
      {
        email: 'locked@sender.test',
        smtpUrl: `smtp://${encodeURIComponent('locked@sender.test')}:wrong@127.0.0.1:${srv.port}`,
      },
    ]);
    await enrolled(user, { id: mailboxes[0]!.id, connectionId: connection.id }, [
      'locked1@leads.test',
      'locked2@leads.test',
      'locked3@leads.test',
    ]);
    for (let i = 0; i < 2; i++) {
      const run = await createSequencer(ctx.deps).runDue();
      assert.deepEqual({ sent: run.sent, failed: run.failed }, { sent: 0, failed: 0 });
      clock.advance(20 * 60_000);
    }
    assert.deepEqual(await mailsOf(user.id), [], 'nothing recorded');
    assert.deepEqual(await ledgerRows(user.id), [['grant', 10, null, null]], 'nothing charged or given back');
    assert.equal(srv.messages.length, 0);
    const states = await ctx.deps.db.select().from(outreachEnrollments).where(eq(outreachEnrollments.userId, user.id));
    assert.deepEqual(
      states.map((e) => [e.status, e.nextStep]),
      states.map(() => ['ACTIVE', 0]),
      'the leads wait for the mailbox',
    );
  } finally {
    await srv.close();
  }
});

test('the mailbox is checked once per run, not per mail: its pooled connections carry the mails', async () => {
  const user = await ctx.signup();
  const { connection, mailbox } = await mailboxOf(user, 'pooled');
  await enrolled(
    user,
    { id: mailbox.id, connectionId: connection.id },
    Array.from({ length: 6 }, (_, i) => `pooled${i}@leads.test`),
  );
  const before = smtp.connections;
  const run = await createSequencer(ctx.deps).runDue();
  assert.equal(run.sent, 6);
  // One connection for the check, at most OUTREACH_SEND_CONCURRENCY (2) pooled ones for the mails.
  const opened = smtp.connections - before;
  assert.ok(opened <= 3, `${opened} connections for 6 mails`);
});
