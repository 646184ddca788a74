import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { SMTPServer } from 'smtp-server';
import { outreachEnrollments, outreachMessages } from '../src/db/schema/index.ts';
import { QUEUES } from '../src/queue/queues.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { seedCampaign, seedEnrollments, seedSmtpConnection } from './helpers/outreach-seed.ts';
import { type ServiceProcess, startService } from './helpers/process.ts';
import { listenOnLoopback } from './helpers/smtp.ts';

// README "Outreach", Exactly once: a worker process killed with -9 in the middle of a batch never makes the same
// step go out twice. Worker processes on one PostgreSQL database, as on separate machines.
const skip = process.env.TEST_DATABASE_URL ? false : 'needs PostgreSQL: run with TEST_DATABASE_URL=postgres://…';

/** A mail server slow to accept each message, so a batch is always in flight; it keeps (recipient, subject). */
async function startSlowSink(delayMs: number) {
  const received: Array<{ to: string; subject: string }> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      let head = '';
      stream.on('data', (c: Buffer) => {
        if (head.length < 4000) head += c.toString('utf8');
      });
      stream.on('end', () => {
        const subject = head.match(/^Subject: (.*)$/m)?.[1]?.trim() ?? '';
        setTimeout(() => {
          for (const r of session.envelope.rcptTo) received.push({ to: r.address.toLowerCase(), subject });
          callback();
        }, delayMs);
      });
    },
  });
  const port = await listenOnLoopback(server);
  return { port, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('the sequencer across worker processes', { skip }, () => {
  const SECRET_KEY = 'outreach-crash-test-secret-key-0123456789';
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-outreach-crash-'));
  let ctx: TestContext;
  let alice: TestUser;
  let sink: Awaited<ReturnType<typeof startSlowSink>>;
  const workers: ServiceProcess[] = [];
  const env = () => ({
    DATABASE_URL: ctx.deps.config.DATABASE_URL!,
    DATA_DIR: dataDir,
    SECRET_KEY,
    ALLOW_PRIVATE_NETWORK: 'true',
    OUTREACH_SEND_CONCURRENCY: '4',
    OUTREACH_SEND_LEASE_SECONDS: '5',
  });
  const startWorker = async () => {
    const worker = startService(env(), 'src/worker.ts');
    workers.push(worker);
    const deadline = Date.now() + 120_000;
    while (!worker.output().includes('quarry worker started')) {
      if (Date.now() > deadline) throw new Error(worker.output());
      await new Promise((r) => setTimeout(r, 100));
    }
    return worker;
  };

  before(async () => {
    sink = await startSlowSink(300);
    ctx = await createTestContext({ workers: false, env: { SECRET_KEY } });
    alice = await ctx.signup();
  });
  after(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await ctx?.close();
    await sink?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('a worker killed -9 mid-batch: nothing is sent twice, every enrollment finishes', async () => {
    const LEADS = 30;
    const { connection, mailboxes } = await seedSmtpConnection(ctx, alice, [
      { email: 'crash@sender.test', smtpUrl: `smtp://u:p@127.0.0.1:${sink.port}`, dailyLimit: 1000 },
    ]);
    const campaign = await seedCampaign(ctx, alice, {
      connectionId: connection.id,
      mailboxIds: [mailboxes[0]!.id],
      steps: [
        { subject: 'First {{firstName}}', body: 'Hello {{firstName}}', delayDays: 0 },
        { subject: '', body: 'Again, {{firstName}}', delayDays: 0 },
      ],
    });
    const leads: Array<{ id: string; email: string }> = [];
    for (let i = 0; i < LEADS; i++) {
      const email = `crash${i}@prospects.test`;
      const res = await ctx.call(alice, 'POST', '/api/leads', {
        sourceUrl: 'https://e.com',
        email,
        firstName: `C${i}`,
      });
      leads.push({ id: res.json().data.lead.id, email });
    }
    await seedEnrollments(ctx, alice, campaign.id, leads, new Date());

    const first = await startWorker();
    await ctx.deps.boss.send(QUEUES.outreachSend, {});
    await eventually(async () => sink.received.length >= 6, 60_000, 20);
    first.child.kill('SIGKILL');
    await first.exited;
    const atKill = sink.received.length;
    const inFlight = await ctx.deps.db.select().from(outreachMessages).where(eq(outreachMessages.status, 'PENDING'));
    assert.ok(inFlight.length > 0, 'the worker died with mails in flight');

    // Another process takes over once the claims and the unanswered mails are past their lease.
    await startWorker();
    await new Promise((r) => setTimeout(r, 5500));
    await ctx.deps.boss.send(QUEUES.outreachSend, {});
    await eventually(
      async () => {
        const rows = await ctx.deps.db
          .select()
          .from(outreachEnrollments)
          .where(eq(outreachEnrollments.campaignId, campaign.id));
        return rows.every((r) => r.status === 'COMPLETED');
      },
      90_000,
      200,
    );
    // Let any last SMTP answers land before counting.
    await new Promise((r) => setTimeout(r, 500));
    const seen = new Map<string, number>();
    for (const r of sink.received) seen.set(`${r.to} ${r.subject}`, (seen.get(`${r.to} ${r.subject}`) ?? 0) + 1);
    const twice = [...seen].filter(([, n]) => n > 1);
    assert.deepEqual(twice, [], 'no step of any lead arrived twice');
    const messages = await ctx.deps.db
      .select()
      .from(outreachMessages)
      .where(eq(outreachMessages.campaignId, campaign.id));
    assert.equal(messages.length, 2 * LEADS, 'one mail recorded per lead and step');
    assert.equal(messages.filter((m) => m.status === 'PENDING').length, 0, 'every intent was reconciled');
    const unconfirmed = messages.filter((m) => m.status === 'UNCONFIRMED');
    assert.equal(unconfirmed.length, inFlight.length, 'the mails in flight at the kill count as sent, unconfirmed');
    assert.equal(
      sink.received.length + unconfirmed.filter((m) => !seen.has(`${m.toEmail} ${m.subject}`)).length,
      2 * LEADS,
      'every step went out once, or was in flight when the worker died',
    );
    assert.ok(atKill < 2 * LEADS);
  });
});
