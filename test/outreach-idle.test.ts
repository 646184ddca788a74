import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { outreachMessages } from '../src/db/schema/index.ts';
import { createInboxReader } from '../src/modules/outreach/inbox/inbox.reader.ts';
import { createInboxWatcher } from '../src/modules/outreach/inbox/inbox.watcher.ts';
import { QUEUES } from '../src/queue/queues.ts';
import { registerWorkers } from '../src/workers.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { startImapServer, type TestImapServer } from './helpers/imap-server.ts';
import { seedSmtpConnection } from './helpers/outreach-seed.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

// README "Outreach", Replies and bounces: IMAP IDLE. A worker keeps a connection per mailbox with INBOX selected;
// new mail there queues a read of that mailbox at once, without waiting for its turn on the schedule.
let ctx: TestContext;
let alice: TestUser;
let smtp: TestSmtpServer;
let imap: TestImapServer;
const SENDER = 'idle@outreach-sender.test';

before(async () => {
  smtp = await startSmtpServer({ auth: { user: SENDER, pass: 'pw-smtp' } });
  imap = await startImapServer({ users: [{ user: SENDER, pass: 'pw-imap' }] });
  // The schedule reads a mailbox once a day here: only IDLE can bring a reply in during the test.
  ctx = await createTestContext({ env: { OUTREACH_IMAP_INTERVAL_SECONDS: '86400' } });
  alice = await ctx.signup();
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
  await imap?.close();
});

/** Connects the mailbox, sends one mail to a lead through it and reads the inbox once (its turn is then a day off). */
async function mailboxWithOneMail(prospect: string) {
  const connected = await ctx.call(alice, 'POST', '/api/outreach/connections', {
    provider: 'smtp',
    name: 'Idle',
    mailboxes: [
      {
        email: SENDER,
        smtpUrl: `smtp://${encodeURIComponent(SENDER)}:pw-smtp@127.0.0.1:${smtp.port}`,
        imapUrl: imap.url(SENDER),
      },
    ],
  });
  assert.equal(connected.statusCode, 201, connected.body);
  const connectionId = connected.json().data.connection.id as string;
  const mailboxId = connected.json().data.connection.mailboxes[0].id as string;
  const lead = await ctx.call(alice, 'POST', '/api/leads', {
    sourceUrl: 'https://example.com/idle',
    email: prospect,
    firstName: 'Pat',
  });
  const leadId = lead.json().data.lead.id as string;
  const sent = await ctx.call(alice, 'POST', '/api/outreach/emails', {
    mailboxId,
    leadId,
    subject: 'Hello Pat',
    body: 'A first note.',
  });
  assert.equal(sent.statusCode, 201, sent.body);
  const mail = await smtp.waitFor(prospect);
  const messageId = mail.raw.toString().match(/^Message-ID:\s*(<[^>]+>)/im)![1]!;
  await createInboxReader(ctx.deps).runDue({ force: true });
  return { connectionId, mailboxId, leadId, messageId };
}

const replyTo = (prospect: string, messageId: string, n: number) =>
  [
    `From: <${prospect}>`,
    `To: <${SENDER}>`,
    'Subject: Re: Hello Pat',
    `Message-ID: <idle-reply-${n}@leads.test>`,
    `In-Reply-To: ${messageId}`,
    `References: ${messageId}`,
    '',
    'Tell me more.',
    '',
  ].join('\r\n');

const repliesOf = (leadId: string) =>
  ctx.deps.db
    .select()
    .from(outreachMessages)
    .where(eq(outreachMessages.leadId, leadId))
    .then((rows) => rows.filter((r) => r.direction === 'inbound'));

test('the watcher hears of new mail in a watched INBOX at once, and of nothing else', async () => {
  const { connectionId, mailboxId, messageId, leadId } = await mailboxWithOneMail('watched@leads.test');
  const woken: string[] = [];
  const watcher = createInboxWatcher(ctx.deps, async (id) => {
    woken.push(id);
  });
  try {
    await watcher.sync();
    await eventually(async () => watcher.watching().includes(mailboxId), 10_000, 50);
    // Idle for a moment: nothing arrives, nothing is asked.
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(woken.length, 0);
    await imap.append(SENDER, replyTo('watched@leads.test', messageId, 1));
    await eventually(async () => woken.includes(mailboxId), 10_000, 50);
    // The watcher only asks; reading is the reader's, so nothing was stored yet.
    assert.equal((await repliesOf(leadId)).length, 0);
    // A mailbox removed from the account is no longer watched.
    await ctx.call(alice, 'DELETE', `/api/outreach/connections/${connectionId}`);
    await watcher.sync();
    assert.deepEqual(watcher.watching(), []);
  } finally {
    watcher.close();
  }
});

test('a read queued for one mailbox reads it now, though its turn on the schedule is a day away', async () => {
  const { mailboxId, messageId, leadId } = await mailboxWithOneMail('queued@leads.test');
  await imap.append(SENDER, replyTo('queued@leads.test', messageId, 2));
  await ctx.deps.boss.send(QUEUES.outreachInbox, { mailboxId });
  await eventually(async () => (await repliesOf(leadId)).length === 1, 20_000, 100);
  const lead = await ctx.call(alice, 'GET', `/api/leads/${leadId}`);
  assert.equal(lead.json().data.lead.status, 'REPLIED');
});

test('a refused login is not tried again (servers lock accounts for that); a watcher closed mid-sync opens nothing', async () => {
  const bob = await ctx.signup();
  const { mailboxes } = await seedSmtpConnection(ctx, bob, [
    {
      email: 'wrong@outreach-sender.test',
      smtpUrl: `smtp://u:p@127.0.0.1:${smtp.port}`,
      imapUrl: imap.url(SENDER).replace('pw-imap', 'not-the-password'),
    },
  ]);
  const watcher = createInboxWatcher(ctx.deps, async () => {});
  try {
    await watcher.sync();
    await eventually(async () => watcher.refused().includes(mailboxes[0]!.id), 10_000, 50);
    assert.ok(!watcher.watching().includes(mailboxes[0]!.id));
  } finally {
    watcher.close();
  }
  const closedEarly = createInboxWatcher(ctx.deps, async () => {});
  const syncing = closedEarly.sync();
  closedEarly.close();
  await syncing;
  await new Promise((r) => setTimeout(r, 1000));
  assert.deepEqual(closedEarly.watching(), []);
  assert.deepEqual(closedEarly.refused(), []);
});

test('a worker process with IDLE on stores a reply as it arrives, with no read asked for', async () => {
  const { mailboxId, messageId, leadId } = await mailboxWithOneMail('pushed@leads.test');
  assert.ok(mailboxId);
  // This context's workers run without IDLE; a second worker process's registration, with it, watches the mailbox
  // from its start (its first sync).
  const workers = await registerWorkers({ ...ctx.deps, config: { ...ctx.deps.config, OUTREACH_IMAP_IDLE: true } });
  try {
    // Connected, INBOX selected and idling (a second after the last command).
    await new Promise((r) => setTimeout(r, 4000));
    await imap.append(SENDER, replyTo('pushed@leads.test', messageId, 3));
    await eventually(async () => (await repliesOf(leadId)).length === 1, 20_000, 100);
    const lead = await ctx.call(alice, 'GET', `/api/leads/${leadId}`);
    assert.equal(lead.json().data.lead.status, 'REPLIED');
  } finally {
    await workers.stop();
  }
});
