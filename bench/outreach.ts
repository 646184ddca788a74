/**
 * Outreach figures on PostgreSQL (README "Outreach"), the service's own sequencer and inbox reader:
 *   - sends: BENCH_OUTREACH_DUE (default 10,000) due first-step mails to a loopback SMTP sink (accepting at once):
 *     sends/s of the sequencer (OUTREACH_SEND_CONCURRENCY 8, one mailbox's pooled transport) against a bare
 *     nodemailer loop with the same pooled transport, concurrency, headers and body. The campaign has
 *     BENCH_OUTREACH_ENROLLED (default 1,000,000) enrolled leads, of which that many are made due before each of
 *     BENCH_OUTREACH_ROUNDS (default 5) rounds; the bare loop runs before and after each round, and a round's ratio
 *     is its rate over the mean of those two. The median round counts, so a burst of other work on the machine
 *     weighs on one round, not on the figure. Both paths are warmed up first. A campaign of exactly the due leads
 *     runs last: the 1M rate ÷ its rate shows the scheduler's cost follows due sends, not enrolled ones.
 *   - replies: 1,000 replies to those mails appended to a Dovecot INBOX (test/helpers/imap-server.ts), then one
 *     inbox read: matched, stored, sequences stopped, leads REPLIED.
 * `BENCH_OUTREACH_DUE=1000 BENCH_OUTREACH_ENROLLED=20000 npm run bench -- outreach` for a quick check (ENROLLED must
 * hold the warm-up's 1,000 and every round's DUE).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { createInboxReader } from '../src/modules/outreach/inbox/inbox.reader.ts';
import { mailOptions } from '../src/modules/outreach/sequencer/sequencer.mail.ts';
import { createSequencer } from '../src/modules/outreach/sequencer/sequencer.ts';
import { createSecretBox, secretKeyMaterial } from '../src/shared/crypto.ts';
import { startImapServer } from '../test/helpers/imap-server.ts';
import { listenOnLoopback } from '../test/helpers/smtp.ts';
import { median, type Row, seedLeads, startBenchService } from './lib.ts';

const DUE = Number(process.env.BENCH_OUTREACH_DUE ?? 10_000);
const ENROLLED = Number(process.env.BENCH_OUTREACH_ENROLLED ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_OUTREACH_ROUNDS ?? 5);
const REPLIES = Math.min(1000, DUE);
const WARM_UP = Math.min(1000, DUE);
const CONCURRENCY = 8;
const SENDER = 'bench@outreach-bench.test';

async function startSink() {
  const sink = { count: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        sink.count++;
        callback();
      });
    },
  });
  const port = await listenOnLoopback(server);
  return { port, sink, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The bare loop: the same pooled transport options and concurrency, the same headers and a body of the same size. */
async function bareLoop(port: number, count: number): Promise<number> {
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    auth: { user: 'u', pass: 'p' },
    pool: true,
    maxConnections: Math.min(CONCURRENCY, 5),
  });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        await transport.sendMail(
          mailOptions({
            from: SENDER,
            fromName: 'Bench',
            to: `person${i}@company${i % 500}.com`,
            subject: `Hello First${i}`,
            text: `Hi First${i}, a first note about Company ${i % 500}.`,
            messageId: `${randomUUID()}@outreach-bench.test`,
            inReplyTo: null,
            references: [],
            unsubscribeUrl: `http://127.0.0.1/api/outreach/unsubscribe/${randomUUID()}.${'x'.repeat(32)}`,
            openPixelUrl: null,
          }),
        );
      }
    }),
  );
  transport.close();
  return count / ((performance.now() - started) / 1000);
}

async function seedCampaign(pool: pg.Pool, userId: string, connectionId: string, mailboxId: string, name: string) {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO outreach_campaigns (id, user_id, connection_id, name, status, steps, "window", daily_limit,
                                     mailbox_ids, stop_on_reply, min_gap_seconds, max_gap_seconds, track_opens)
     VALUES (gen_random_uuid(), $1, $2, $3, 'ACTIVE', $4, $5, 1000000, ARRAY[$6::uuid], true, 0, 0, false)
     RETURNING id`,
    [
      userId,
      connectionId,
      name,
      JSON.stringify([
        { subject: 'Hello {{firstName}}', body: 'Hi {{firstName}}, a first note about {{company}}.', delayDays: 0 },
        { subject: '', body: 'Following up, {{firstName}}.', delayDays: 3 },
      ]),
      JSON.stringify({ timezone: 'UTC', days: [1, 2, 3, 4, 5, 6, 7], startHour: 0, endHour: 24 }),
      mailboxId,
    ],
  );
  return rows[0]!.id;
}

/**
 * Enrolls `count` of the user's leads (by id, after the first `skip`) in the campaign, none of them due yet: each run
 * makes its own due (`makeDue`).
 */
async function enroll(pool: pg.Pool, userId: string, campaignId: string, count: number, skip: number) {
  const batch = 250_000;
  for (let offset = 0; offset < count; offset += batch) {
    await pool.query(
      `INSERT INTO outreach_enrollments (id, user_id, campaign_id, lead_id, email, next_send_at)
       SELECT gen_random_uuid(), $1, $2, l.id, l.email, now() + interval '30 days'
       FROM (SELECT id, email FROM leads WHERE user_id = $1 ORDER BY id LIMIT $3 OFFSET $4) l`,
      [userId, campaignId, Math.min(batch, count - offset), skip + offset],
    );
  }
  await pool.query('ANALYZE outreach_enrollments');
}

/** Makes `due` more of the campaign's not yet contacted enrollments due now. */
async function makeDue(pool: pg.Pool, campaignId: string, due: number) {
  await pool.query(
    `UPDATE outreach_enrollments SET next_send_at = now() - interval '1 second'
     WHERE id IN (SELECT id FROM outreach_enrollments
                  WHERE campaign_id = $1 AND status = 'ACTIVE' AND next_step = 0 AND next_send_at > now()
                  LIMIT $2)`,
    [campaignId, due],
  );
}

export async function benchOutreach(): Promise<Row[]> {
  if (ENROLLED < WARM_UP + ROUNDS * DUE)
    throw new Error(
      `BENCH_OUTREACH_ENROLLED must hold the warm-up and every round: at least ${WARM_UP + ROUNDS * DUE}`,
    );
  const smtp = await startSink();
  const imap = await startImapServer({ users: [{ user: SENDER, pass: 'bench' }] });
  const service = await startBenchService('bench_outreach', {
    workers: false,
    env: { ALLOW_PRIVATE_NETWORK: 'true', OUTREACH_SEND_CONCURRENCY: String(CONCURRENCY) },
  });
  const { user, pool, runtime } = service;
  try {
    // The 1M campaign's leads, then the due-only campaign's own: every mail of both runs makes a new lead CONTACTED.
    await seedLeads(pool, user.id, ENROLLED + DUE, 500);
    const box = createSecretBox(secretKeyMaterial(runtime.deps.config));
    const {
      rows: [connection],
    } = await pool.query<{ id: string }>(
      `INSERT INTO outreach_connections (id, user_id, provider, name, verified_at)
       VALUES (gen_random_uuid(), $1, 'smtp', 'bench', now()) RETURNING id`,
      [user.id],
    );
    const {
      rows: [mailbox],
    } = await pool.query<{ id: string }>(
      `INSERT INTO outreach_mailboxes (id, user_id, connection_id, email, from_name, daily_limit, smtp_url_encrypted,
                                       imap_url_encrypted, smtp_host, smtp_port, imap_host, imap_port, username)
       VALUES (gen_random_uuid(), $1, $2, $3, 'Bench', 10000000, $4, $5, '127.0.0.1', $6, '127.0.0.1', $7, 'u')
       RETURNING id`,
      [
        user.id,
        connection!.id,
        SENDER,
        box.seal(`smtp://u:p@127.0.0.1:${smtp.port}`),
        box.seal(imap.url(SENDER)),
        smtp.port,
        imap.port,
      ],
    );
    const sequencer = createSequencer(runtime.deps);
    const timedRun = async () => {
      const before = smtp.sink.count;
      const started = performance.now();
      const run = await sequencer.runDue();
      const secs = (performance.now() - started) / 1000;
      if (run.sent !== DUE || smtp.sink.count - before !== DUE)
        throw new Error(`sent ${run.sent}, sink got ${smtp.sink.count - before}, wanted ${DUE}`);
      return DUE / secs;
    };
    const small = await seedCampaign(pool, user.id, connection!.id, mailbox!.id, 'due only');
    await enroll(pool, user.id, small, DUE, ENROLLED);
    const large = await seedCampaign(pool, user.id, connection!.id, mailbox!.id, 'one million');
    await enroll(pool, user.id, large, ENROLLED, 0);
    // Warm-up (not timed): both paths run once before anything is measured.
    await makeDue(pool, large, WARM_UP);
    await sequencer.runDue();
    await bareLoop(smtp.port, WARM_UP);
    const bare = [await bareLoop(smtp.port, DUE)];
    const rates: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await makeDue(pool, large, DUE);
      rates.push(await timedRun());
      bare.push(await bareLoop(smtp.port, DUE));
    }
    await makeDue(pool, small, DUE);
    const rateSmall = await timedRun();
    const ratios = rates.map((rate, i) => rate / ((bare[i]! + bare[i + 1]!) / 2));
    const ratio = median(ratios);
    const rateLarge = median(rates);
    const baseline = median(bare);

    // Replies to the first campaign's mails, appended to the mailbox's INBOX, then one read.
    const { rows: sent } = await pool.query<{
      message_id: string;
      to_email: string;
      subject: string;
      enrollment_id: string;
      lead_id: string;
    }>(
      `SELECT message_id, to_email, subject, enrollment_id, lead_id FROM outreach_messages
       WHERE campaign_id = $1 AND direction = 'outbound' LIMIT $2`,
      [small, REPLIES],
    );
    for (const [i, m] of sent.entries()) {
      await imap.append(
        SENDER,
        `From: <${m.to_email}>\r\nTo: <${SENDER}>\r\nSubject: Re: ${m.subject}\r\nMessage-ID: <r${i}@bench.test>\r\n` +
          `In-Reply-To: <${m.message_id}>\r\nReferences: <${m.message_id}>\r\n\r\nTell me more.\r\n`,
      );
    }
    const started = performance.now();
    const read = await createInboxReader(runtime.deps).runDue({ force: true });
    const replySecs = (performance.now() - started) / 1000;
    // What the read must have done, read back: each reply stored, its sequence stopped, its lead REPLIED.
    const {
      rows: [outcome],
    } = await pool.query<{ stored: number; stopped: number; replied: number }>(
      `SELECT (SELECT count(*)::int FROM outreach_messages
               WHERE user_id = $1 AND direction = 'inbound' AND kind = 'reply' AND in_reply_to = ANY($2::text[]))
                AS stored,
              (SELECT count(*)::int FROM outreach_enrollments
               WHERE id = ANY($3::uuid[]) AND status = 'REPLIED' AND next_send_at IS NULL) AS stopped,
              (SELECT count(*)::int FROM leads WHERE id = ANY($4::uuid[]) AND status = 'REPLIED') AS replied`,
      [user.id, sent.map((m) => m.message_id), sent.map((m) => m.enrollment_id), sent.map((m) => m.lead_id)],
    );
    const repliesDone =
      sent.length === REPLIES &&
      read.reply === REPLIES &&
      outcome!.stored === REPLIES &&
      outcome!.stopped === REPLIES &&
      outcome!.replied === REPLIES;
    return [
      {
        name: `sequencer sends/s ÷ bare nodemailer loop (${DUE.toLocaleString('en')} due of ${ENROLLED.toLocaleString('en')} enrolled), median of ${ROUNDS} rounds`,
        value: `${ratio.toFixed(2)} (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')}; ${rateLarge.toFixed(0)}/s vs ${baseline.toFixed(0)}/s)`,
        target: '≥ 0.8',
        pass: ratio >= 0.8,
      },
      {
        name: `  same due sends, campaign of ${DUE.toLocaleString('en')} enrolled (after the rounds)`,
        value: `${rateSmall.toFixed(0)}/s (bare loop ${bare.map((b) => b.toFixed(0)).join(', ')}/s)`,
        target: '-',
        pass: null,
      },
      {
        name: '  rate at 1M enrolled ÷ rate at due-only (cost follows due sends)',
        value: (rateLarge / rateSmall).toFixed(2),
        target: '≥ 0.8',
        pass: rateLarge / rateSmall >= 0.8,
      },
      {
        name: `${REPLIES.toLocaleString('en')} IMAP replies: matched, stored, sequences stopped, leads REPLIED`,
        value:
          `${replySecs.toFixed(1)} s (${read.reply} replies, ${read.unmatched} unmatched; ${outcome!.stored} stored, ` +
          `${outcome!.stopped} sequences stopped, ${outcome!.replied} leads REPLIED)`,
        target: '< 20 s',
        pass: repliesDone && replySecs < 20,
      },
    ];
  } finally {
    await service.stop();
    await imap.close();
    await smtp.close();
  }
}
