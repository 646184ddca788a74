import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { SMTPServer } from 'smtp-server';
import { outreachEnrollments, outreachMessages } from '../src/db/schema/index.ts';
import { boundedPipeline } from '../src/modules/outreach/sequencer/sequencer.pipeline.ts';
import { sequencerRepository } from '../src/modules/outreach/sequencer/sequencer.repository.ts';
import { createSequencer } from '../src/modules/outreach/sequencer/sequencer.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { seedCampaign, seedEnrollments, seedSmtpConnection } from './helpers/outreach-seed.ts';
import { listenOnLoopback } from './helpers/smtp.ts';

// README "Outreach", The sequencer: a run is a pipeline of batches. Each batch records its intents a chunk at a time
// while the chunk before sends; the next batch is claimed and read while the second half of this one sends. These
// tests run batches of 8 with one SMTP connection (chunks of 4) so every boundary is crossed.
let ctx: TestContext;
let dns: TestDnsServer;
const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));
/** Called with each mail's number as the server takes it (a test moves the clock: a slow server, in run time). */
let onMail: ((n: number) => void) | undefined;
const received: string[] = [];
let smtpPort = 0;
let smtp: SMTPServer;

before(async () => {
  dns = await startTestDnsServer({ ...TEST_ZONES });
  ctx = await createTestContext({
    clock,
    workers: false,
    env: { DNS_SERVERS: dns.address, OUTREACH_SEND_CONCURRENCY: '1' },
  });
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        received.push(session.envelope.rcptTo.map((r) => r.address).join(','));
        onMail?.(received.length);
        callback();
      });
    },
  });
  smtpPort = await listenOnLoopback(smtp);
});
after(async () => {
  await ctx?.close();
  await dns?.close();
  await new Promise<void>((r) => smtp?.close(() => r()));
});

/** A campaign of two steps to `count` new leads, due one second apart (so batches take them in order). */
async function campaignOf(user: TestUser, prefix: string, count: number) {
  const { connection, mailboxes } = await seedSmtpConnection(ctx, user, [
    { email: `${prefix}@sender.test`, smtpUrl: `smtp://u:p@127.0.0.1:${smtpPort}` },
  ]);
  const campaign = await seedCampaign(ctx, user, {
    connectionId: connection.id,
    mailboxIds: mailboxes.map((m) => m.id),
    steps: [
      { subject: 'Hi {{firstName}}', body: 'one', delayDays: 0 },
      { subject: '', body: 'two', delayDays: 3 },
    ],
  });
  const enrollments = [];
  for (let i = 0; i < count; i++) {
    const res = await ctx.call(user, 'POST', '/api/leads', {
      sourceUrl: 'https://example.com/b',
      email: `${prefix}${i}@leads.test`,
      firstName: `L${i}`,
    });
    const lead = { id: res.json().data.lead.id as string, email: `${prefix}${i}@leads.test` };
    enrollments.push(
      ...(await seedEnrollments(ctx, user, campaign.id, [lead], new Date(clock.now().getTime() - 100_000 + i * 1000))),
    );
  }
  return { campaign, enrollments };
}

const mailsOf = (campaignId: string) =>
  ctx.deps.db.select().from(outreachMessages).where(eq(outreachMessages.campaignId, campaignId));

test('20 leads in batches of 8 while a slow server outlasts half the claims’ lease: each gets step 1 exactly once', async () => {
  const user = await ctx.signup();
  const { campaign, enrollments } = await campaignOf(user, 'slow', 20);
  received.length = 0;
  // The 8th mail (the last of the first batch, after the second was claimed) takes 400 s: the second batch's claims
  // are then older than half their 600 s lease, and are taken again before it sends (else they would wait it out).
  onMail = (n) => {
    if (n === 8) clock.advance(400_000);
  };
  try {
    const run = await createSequencer(ctx.deps).runDue({ claimBatch: 8 });
    assert.equal(run.sent, 20);
  } finally {
    onMail = undefined;
  }
  assert.deepEqual([...received].sort(), enrollments.map((e) => e.email).sort(), 'each lead once');
  const mails = await mailsOf(campaign.id);
  assert.equal(mails.length, 20);
  assert.ok(mails.every((m) => m.status === 'SENT' && m.step === 0));
  const rows = await ctx.deps.db
    .select()
    .from(outreachEnrollments)
    .where(eq(outreachEnrollments.campaignId, campaign.id));
  assert.ok(
    rows.every((r) => r.nextStep === 1 && r.status === 'ACTIVE'),
    'every sequence moved on to step 2',
  );
  assert.equal((await createSequencer(ctx.deps).runDue({ claimBatch: 8 })).sent, 0, 'nothing is due again');
});

test('a balance that pays for 10 mails sends 10 across batches, not the 8 claimed ahead too', async () => {
  const user = await ctx.signup();
  const { campaign } = await campaignOf(user, 'paid', 20);
  const price = ctx.deps.credits.prices.emails_sent;
  const balance = await ctx.deps.credits.balance(ctx.deps.db, user.id);
  await ctx.deps.credits.adjust(ctx.deps.db, user.id, -(balance - 10 * price), 'test: ten mails left', 'test');
  received.length = 0;
  const run = await createSequencer(ctx.deps).runDue({ claimBatch: 8 });
  assert.equal(run.sent, 10);
  assert.equal(received.length, 10);
  assert.equal(await ctx.deps.credits.balance(ctx.deps.db, user.id), 0, 'every mail sent is paid');
  const mails = await mailsOf(campaign.id);
  assert.equal(mails.length, 10, 'no intent for a mail the balance does not pay for');
  const waiting = await ctx.deps.db
    .select()
    .from(outreachEnrollments)
    .where(eq(outreachEnrollments.campaignId, campaign.id));
  assert.equal(waiting.filter((e) => e.nextStep === 0).length, 10, 'the others wait, still at step 1');
  assert.ok(waiting.filter((e) => e.nextStep === 0).every((e) => e.nextSendAt! > clock.now()));
});

test('a step that already has a mail, whose check then fails, holds up nothing: the rest are sent, marked and paid', async () => {
  const user = await ctx.signup();
  const { campaign, enrollments } = await campaignOf(user, 'check', 12);
  // The 6th lead's step 1 went out in an earlier run (its outcome was written): its intent is refused here and the
  // sequencer looks the mail up, and that one read fails (the database hiccups).
  const [sent] = await mailsOf(campaign.id);
  assert.equal(sent, undefined);
  const known = enrollments[5]!;
  await ctx.deps.db.insert(outreachMessages).values({
    userId: user.id,
    campaignId: campaign.id,
    enrollmentId: known.id,
    leadId: known.leadId,
    step: 0,
    direction: 'outbound',
    status: 'SENT',
    messageId: `earlier-${known.id}@sender.test`,
    threadId: `earlier-${known.id}@sender.test`,
    fromEmail: 'check@sender.test',
    toEmail: known.email,
    subject: 'Hi',
    bodyText: 'one',
    createdAt: new Date(clock.now().getTime() - 3_600_000),
  });
  const balance = await ctx.deps.credits.balance(ctx.deps.db, user.id);
  // The real database, but the first read of outreach mails through the query builder fails once: in this run only
  // the look-up of the refused intent reads them that way (no lead here has a thread yet).
  let fail = true;
  const db = new Proxy(ctx.deps.db, {
    get(target, prop, receiver) {
      if (prop === 'select')
        return (...args: Parameters<typeof target.select>) => {
          const builder = target.select(...args);
          const from = builder.from.bind(builder);
          builder.from = ((table: unknown) => {
            if (table === outreachMessages && fail) {
              fail = false;
              throw new Error('connection reset (injected)');
            }
            return from(table as never);
          }) as typeof builder.from;
          return builder;
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  received.length = 0;
  const run = await createSequencer({ ...ctx.deps, db }).runDue({ claimBatch: 8 });
  assert.equal(fail, false, 'the look-up failed');
  assert.equal(run.sent, 11);
  assert.equal(received.length, 11);
  const mails = (await mailsOf(campaign.id)).filter((m) => m.enrollmentId !== known.id);
  assert.equal(mails.length, 11);
  assert.ok(
    mails.every((m) => m.status === 'SENT'),
    'every mail handed to SMTP is marked SENT',
  );
  assert.equal(
    await ctx.deps.credits.balance(ctx.deps.db, user.id),
    balance - 11 * ctx.deps.credits.prices.emails_sent,
    'and paid',
  );
  const [row] = await ctx.deps.db.select().from(outreachEnrollments).where(eq(outreachEnrollments.id, known.id));
  assert.equal(row!.nextStep, 0, 'the lead whose check failed waits to be looked at again');
  assert.ok(row!.nextSendAt! > clock.now());
});

test('claims are taken again only while still held: one another process took over is left to it', async () => {
  const user = await ctx.signup();
  const { enrollments } = await campaignOf(user, 'renew', 2);
  const repo = sequencerRepository(ctx.deps.db);
  const t0 = clock.now();
  const lease = new Date(t0.getTime() + 600_000);
  const claimed = await repo.claimDue(t0, lease, 10);
  const mine = claimed.filter((c) => enrollments.some((e) => e.id === c.id)).map((c) => c.id);
  assert.equal(mine.length, 2);
  // Another process took the second one over (its own lease).
  await ctx.deps.db
    .update(outreachEnrollments)
    .set({ nextSendAt: new Date(t0.getTime() + 900_000) })
    .where(eq(outreachEnrollments.id, mine[1]!));
  const renewed = new Date(t0.getTime() + 1_200_000);
  const held = await repo.renewClaims(mine, lease, renewed);
  assert.deepEqual([...held], [mine[0]]);
  const [first] = await ctx.deps.db.select().from(outreachEnrollments).where(eq(outreachEnrollments.id, mine[0]!));
  assert.equal(first!.nextSendAt!.getTime(), renewed.getTime());
  // Let the other run's claims go, so later tests start from nothing due.
  await ctx.deps.db
    .update(outreachEnrollments)
    .set({ status: 'STOPPED', nextSendAt: null })
    .where(eq(outreachEnrollments.userId, user.id));
});

test('the pipeline prepares a chunk only while fewer than its limit wait: never more than limit + chunk − 1 undone', async () => {
  let prepared = 0;
  let done = 0;
  let most = 0;
  const consumed: number[] = [];
  await boundedPipeline<number>({
    workers: 2,
    limit: 4,
    async produce({ room, put }) {
      for (let i = 0; i < 40; i += 4) {
        await room();
        // What the sequencer does here (records intents) counts from now on.
        prepared += 4;
        most = Math.max(most, prepared - done);
        await new Promise((r) => setTimeout(r, 1));
        put([i, i + 1, i + 2, i + 3]);
      }
    },
    async consume(item) {
      await new Promise((r) => setTimeout(r, 1));
      done++;
      consumed.push(item);
    },
  });
  assert.ok(most <= 4 + 4 - 1, `at most 7 prepared and not done (was ${most})`);
  assert.deepEqual(
    [...consumed].sort((a, b) => a - b),
    Array.from({ length: 40 }, (_, i) => i),
  );
});

test('the pipeline finishes what it was given and then throws the first error, of a consumer or the producer', async () => {
  const consumed: number[] = [];
  await assert.rejects(
    boundedPipeline<number>({
      workers: 2,
      limit: 2,
      async produce({ room, put }) {
        await room();
        put([1, 2, 3]);
        await room();
        put([4, 5]);
      },
      async consume(item) {
        consumed.push(item);
        if (item === 2) throw new Error('consumer broke');
      },
    }),
    /consumer broke/,
  );
  assert.deepEqual(
    [...consumed].sort((a, b) => a - b),
    [1, 2, 3, 4, 5],
    'the others were still consumed',
  );
  const done: number[] = [];
  await assert.rejects(
    boundedPipeline<number>({
      workers: 1,
      limit: 2,
      async produce({ put }) {
        put([1, 2]);
        throw new Error('producer broke');
      },
      async consume(item) {
        done.push(item);
      },
    }),
    /producer broke/,
  );
  assert.deepEqual(done, [1, 2], 'what was handed over is consumed before the error comes back');
});
