import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { outreachCampaigns, outreachEnrollments, outreachMessages } from '../src/db/schema/index.ts';
import { createSequencer } from '../src/modules/outreach/sequencer/sequencer.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { seedCampaign, seedEnrollments, seedSmtpConnection } from './helpers/outreach-seed.ts';
import { startScriptedSmtp } from './helpers/smtp.ts';

// README "Outreach", The sequencer: what each failure of a mailbox, a connection or a mail does (exactly once,
// nothing lost, nothing blocked), and one sequencer at a time.
let ctx: TestContext;
let alice: TestUser;
let dns: TestDnsServer;
const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));

before(async () => {
  dns = await startTestDnsServer({ ...TEST_ZONES });
  ctx = await createTestContext({ clock, workers: false, env: { DNS_SERVERS: dns.address } });
  alice = await ctx.signup();
});
after(async () => {
  await ctx?.close();
  await dns?.close();
});

const lead = async (email: string) => {
  const res = await ctx.call(alice, 'POST', '/api/leads', {
    sourceUrl: 'https://example.com/t',
    email,
    firstName: 'A',
  });
  return { id: res.json().data.lead.id as string, email };
};

test('a connection dropped after the message data went out: UNCONFIRMED, never sent again', async () => {
  const srv = await startScriptedSmtp({ drop: () => true });
  try {
    const { connection, mailboxes } = await seedSmtpConnection(ctx, alice, [
      { email: 'drop@sender.test', smtpUrl: `smtp://u:p@127.0.0.1:${srv.port}` },
    ]);
    const campaign = await seedCampaign(ctx, alice, {
      connectionId: connection.id,
      mailboxIds: mailboxes.map((m) => m.id),
      steps: [{ subject: 'Hi', body: 'one', delayDays: 0 }],
    });
    await seedEnrollments(ctx, alice, campaign.id, [await lead('drop1@leads.test')]);
    const sequencer = createSequencer(ctx.deps);
    await sequencer.runDue();
    assert.equal(srv.received.length, 1, 'the server took the message once');
    clock.advance(20 * 60_000);
    await sequencer.runDue();
    assert.equal(srv.received.length, 1, `the same step went out ${srv.received.length} times`);
  } finally {
    await srv.close();
  }
});

test('a mailbox host that does not resolve: nothing is recorded and the step waits', async () => {
  const { connection, mailboxes } = await seedSmtpConnection(ctx, alice, [
    { email: 'nodns@sender.test', smtpUrl: 'smtp://u:p@no-such-host.test:2525' },
  ]);
  const campaign = await seedCampaign(ctx, alice, {
    connectionId: connection.id,
    mailboxIds: mailboxes.map((m) => m.id),
    steps: [
      { subject: 'Hi', body: 'one', delayDays: 0 },
      { subject: '', body: 'two', delayDays: 2 },
    ],
  });
  const [enrollment] = await seedEnrollments(ctx, alice, campaign.id, [await lead('nodns@leads.test')]);
  await createSequencer(ctx.deps).runDue();
  const [e] = await ctx.deps.db.select().from(outreachEnrollments).where(eq(outreachEnrollments.id, enrollment!.id));
  const msgs = await ctx.deps.db
    .select()
    .from(outreachMessages)
    .where(eq(outreachMessages.enrollmentId, enrollment!.id));
  assert.deepEqual(
    { nextStep: e!.nextStep, statuses: msgs.map((m) => m.status) },
    { nextStep: 0, statuses: [] },
    'nothing was ever handed to an SMTP server, yet the step counts as (maybe) sent and the sequence moved on',
  );
});

test('an SMTP URL with a stray "%" in the password is a 400 naming the field, not a 500', async () => {
  const res = await ctx.call(alice, 'POST', '/api/outreach/connections', {
    provider: 'smtp',
    name: 'Pct',
    mailboxes: [
      {
        email: 'pct@sender.test',
        smtpUrl: 'smtp://user:50%off@127.0.0.1:2525',
        imapUrl: 'imap://user:pw@127.0.0.1:1143',
      },
    ],
  });
  assert.equal(res.statusCode, 400, res.body);
});

test('a refused SMTP login is the mailbox’s problem: its leads wait, none is stopped', async () => {
  const { startSmtpServer } = await import('./helpers/smtp.ts');
  const srv = await startSmtpServer({ auth: { user: 'auth@sender.test', pass: 'right' } });
  try {
    const { connection, mailboxes } = await seedSmtpConnection(ctx, alice, [
      {
        email: 'auth@sender.test',
        smtpUrl: `smtp://${encodeURIComponent('auth@sender.test')}:wrong@127.0.0.1:${srv.port}`,
      },
    ]);
    const campaign = await seedCampaign(ctx, alice, {
      connectionId: connection.id,
      mailboxIds: mailboxes.map((m) => m.id),
      steps: [{ subject: 'Hi', body: 'one', delayDays: 0 }],
    });
    const enrolled = await seedEnrollments(ctx, alice, campaign.id, [
      await lead('auth1@leads.test'),
      await lead('auth2@leads.test'),
    ]);
    await createSequencer(ctx.deps).runDue();
    const rows = await ctx.deps.db
      .select()
      .from(outreachEnrollments)
      .where(eq(outreachEnrollments.campaignId, campaign.id));
    assert.equal(rows.length, enrolled.length);
    assert.deepEqual(
      rows.map((r) => r.status),
      rows.map(() => 'ACTIVE'),
      'a 535 on AUTH is the mailbox’s problem, not the leads’: they were STOPPED for good',
    );
  } finally {
    await srv.close();
  }
});

test('a claim that outlived its lease cannot pull the next step forward', async () => {
  const { sequencerRepository } = await import('../src/modules/outreach/sequencer/sequencer.repository.ts');
  const { connection, mailboxes } = await seedSmtpConnection(ctx, alice, [
    { email: 'lease@sender.test', smtpUrl: 'smtp://u:p@127.0.0.1:1' },
  ]);
  const campaign = await seedCampaign(ctx, alice, {
    connectionId: connection.id,
    mailboxIds: mailboxes.map((m) => m.id),
    steps: [
      { subject: 'Hi', body: 'one', delayDays: 0 },
      { subject: '', body: 'two', delayDays: 3 },
    ],
  });
  const [e] = await seedEnrollments(ctx, alice, campaign.id, [await lead('lease1@leads.test')]);
  const repo = sequencerRepository(ctx.deps.db);
  const lease = 600_000;
  const t0 = clock.now();
  // Worker A claims, records its intent, then its SMTP server is slow; the lease runs out.
  const [a] = await repo.claimDue(t0, new Date(t0.getTime() + lease), 10);
  assert.equal(a?.id, e!.id);
  const intent = {
    id: randomUUID(),
    enrollmentId: e!.id,
    mailboxId: mailboxes[0]!.id,
    step: 0,
    messageId: `lease-${e!.id}@x`,
    inReplyTo: null,
    references: [],
    threadId: `lease-${e!.id}@x`,
    fromEmail: 'lease@sender.test',
    subject: 'Hi',
    bodyText: 'one',
    createdAt: new Date(t0.getTime() + lease - 1000),
  };
  assert.equal((await repo.insertIntents([intent])).size, 1);
  const t1 = new Date(t0.getTime() + lease + 1000);
  // Worker B claims it again; its intent conflicts; reconcile sees a young PENDING intent and postpones.
  const [b] = await repo.claimDue(t1, new Date(t1.getTime() + lease), 10);
  assert.equal(b?.id, e!.id);
  // A's SMTP answers; A finalizes: SENT, step 1 due in 3 days.
  await repo.setMessages([intent.id], { status: 'SENT', sentAt: t1 });
  await repo.moveEnrollments(
    [
      {
        id: e!.id,
        nextStep: 1,
        nextSendAt: new Date(t1.getTime() + 3 * 86_400_000),
        status: 'ACTIVE',
        mailboxId: mailboxes[0]!.id,
      },
    ],
    t1,
  );
  // B's finalize writes its postpone afterwards.
  await repo.postpone([{ id: e!.id, step: 0, at: new Date(intent.createdAt.getTime() + lease) }]);
  const [row] = await ctx.deps.db.select().from(outreachEnrollments).where(eq(outreachEnrollments.id, e!.id));
  assert.equal(row!.nextStep, 1);
  assert.ok(
    row!.nextSendAt! >= new Date(t1.getTime() + 3 * 86_400_000 - 1000),
    `step 2 is now due at ${row!.nextSendAt!.toISOString()}, ~10 minutes after step 1 instead of 3 days`,
  );
});

test('a reply with a NUL character is stored (the inbox is never blocked by one mail)', async () => {
  const { createInboxService } = await import('../src/modules/outreach/inbox/inbox.service.ts');
  const { connection: _c, mailboxes } = await seedSmtpConnection(ctx, alice, [
    { email: 'nul@sender.test', smtpUrl: 'smtp://u:p@127.0.0.1:1', imapUrl: 'imap://u:p@127.0.0.1:1' },
  ]);
  await ctx.deps.db.insert(outreachMessages).values({
    userId: alice.id,
    mailboxId: mailboxes[0]!.id,
    direction: 'outbound',
    status: 'SENT',
    messageId: 'orig-nul@sender.test',
    threadId: 'orig-nul@sender.test',
    fromEmail: 'nul@sender.test',
    toEmail: 'x@leads.test',
    subject: 'Hi',
    bodyText: 'hi',
  });
  const raw = Buffer.from(
    'From: <x@leads.test>\r\nTo: <nul@sender.test>\r\nSubject: Re: Hi\r\nMessage-ID: <r-nul@leads.test>\r\n' +
      'In-Reply-To: <orig-nul@sender.test>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nyes\u0000please\r\n',
  );
  const outcome = await createInboxService(ctx.deps).process(mailboxes[0]!, raw, 'fallback@x');
  assert.equal(outcome, 'reply');
});

test('POST /api/outreach/emails to an unreachable server leaves no mail behind', async () => {
  const { mailboxes } = await seedSmtpConnection(ctx, alice, [
    { email: 'oneoff@sender.test', smtpUrl: 'smtp://u:p@no-such-host.test:2525' },
  ]);
  const res = await ctx.call(alice, 'POST', '/api/outreach/emails', {
    mailboxId: mailboxes[0]!.id,
    to: 'someone@leads.test',
    subject: 'Hello',
    body: 'One-off',
  });
  assert.equal(res.statusCode, 400, res.body);
  const rows = await ctx.deps.db
    .select()
    .from(outreachMessages)
    .where(eq(outreachMessages.mailboxId, mailboxes[0]!.id));
  assert.deepEqual(
    rows.map((r) => r.status),
    [],
    'a PENDING row stays (later UNCONFIRMED: counted as sent in daily limits and bounce rates)',
  );
});

test('one process runs the sequencer at a time: while another holds the lease nothing is sent; then it passes on', async () => {
  const { sequencerRepository } = await import('../src/modules/outreach/sequencer/sequencer.repository.ts');
  const { startSmtpServer } = await import('./helpers/smtp.ts');
  const srv = await startSmtpServer({ auth: { user: 'one@sender.test', pass: 'pw' } });
  try {
    const { connection, mailboxes } = await seedSmtpConnection(ctx, alice, [
      { email: 'one@sender.test', smtpUrl: `smtp://${encodeURIComponent('one@sender.test')}:pw@127.0.0.1:${srv.port}` },
    ]);
    const campaign = await seedCampaign(ctx, alice, {
      connectionId: connection.id,
      mailboxIds: mailboxes.map((m) => m.id),
      steps: [{ subject: 'Hi', body: 'one', delayDays: 0 }],
    });
    const leads = [];
    for (let i = 0; i < 3; i++) leads.push(await lead(`single${i}@leads.test`));
    await seedEnrollments(ctx, alice, campaign.id, leads);
    // Another process is running it (its lease holds for a minute).
    const repo = sequencerRepository(ctx.deps.db);
    const other = `other-${randomUUID()}`;
    assert.ok(await repo.takeRunLease(other, clock.now(), new Date(clock.now().getTime() + 60_000)));
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 0);
    assert.equal(srv.messages.length, 0);
    // It died: once its lease is over, this process takes over.
    clock.advance(61_000);
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 3);
    // Given back at the end of a run: the next run may start at once, and the other may take it again.
    assert.ok(await repo.takeRunLease(other, clock.now(), new Date(clock.now().getTime() + 60_000)));
    await repo.releaseRunLease(other);
    await seedEnrollments(ctx, alice, campaign.id, [await lead('single-late@leads.test')]);
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 1);
    assert.equal(srv.messages.length, 4);
  } finally {
    await srv.close();
  }
});

test('an intent is recorded only while its sequence is still active at that step and its campaign active', async () => {
  const { sequencerRepository } = await import('../src/modules/outreach/sequencer/sequencer.repository.ts');
  const { connection, mailboxes } = await seedSmtpConnection(ctx, alice, [
    { email: 'late@sender.test', smtpUrl: 'smtp://u:p@127.0.0.1:1' },
  ]);
  const campaign = await seedCampaign(ctx, alice, {
    connectionId: connection.id,
    mailboxIds: mailboxes.map((m) => m.id),
    steps: [
      { subject: 'Hi', body: 'one', delayDays: 0 },
      { subject: '', body: 'two', delayDays: 1 },
    ],
  });
  const [replied, paused, moved, fine] = await seedEnrollments(ctx, alice, campaign.id, [
    await lead('late-replied@leads.test'),
    await lead('late-paused@leads.test'),
    await lead('late-moved@leads.test'),
    await lead('late-fine@leads.test'),
  ]);
  await ctx.deps.db
    .update(outreachEnrollments)
    .set({ status: 'REPLIED' })
    .where(eq(outreachEnrollments.id, replied!.id));
  await ctx.deps.db.update(outreachEnrollments).set({ nextStep: 1 }).where(eq(outreachEnrollments.id, moved!.id));
  const intent = (e: { id: string }) => ({
    id: randomUUID(),
    enrollmentId: e.id,
    mailboxId: mailboxes[0]!.id,
    step: 0,
    messageId: `${randomUUID()}@sender.test`,
    inReplyTo: null,
    references: [],
    threadId: `${e.id}@sender.test`,
    fromEmail: 'late@sender.test',
    subject: 'Hi',
    bodyText: 'one',
    createdAt: clock.now(),
  });
  const repo = sequencerRepository(ctx.deps.db);
  const wanted = [replied!, moved!, fine!].map(intent);
  const recorded = await repo.insertIntents(wanted);
  assert.deepEqual([...recorded], [wanted[2]!.id], 'only the sequence still active at step 1 gets its mail');
  await ctx.deps.db.update(outreachCampaigns).set({ status: 'PAUSED' }).where(eq(outreachCampaigns.id, campaign.id));
  assert.equal((await repo.insertIntents([intent(paused!)])).size, 0, 'a paused campaign records nothing');
});
