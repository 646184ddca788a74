import { randomUUID } from 'node:crypto';
import type { Transporter } from 'nodemailer';
import type { AppDeps } from '../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { newId } from '../../shared/ids.ts';
import { leadsForOutreach, moveLeadsForOutreach, type OutreachLead } from '../leads/leads.outreach.ts';
import { domainOf, normalizeEmail } from '../suppressions/suppressions.normalize.ts';
import { suppressionOf } from '../suppressions/suppressions.service.ts';
import { type CampaignRow, campaignsRepository } from './campaigns.repository.ts';
import { connectionsRepository, type MailboxRow } from './connections.repository.ts';
import { mailboxEndpoints, openSmtpTransport } from './mailbox.transport.ts';
import { classifySendError, linkToken, mailOptions, publicUrlOf, sessionFailure } from './sequencer.mail.ts';
import { intentWriter, semaphore } from './sequencer.pipeline.ts';
import {
  type DueEnrollment,
  type EnrollmentMove,
  type IntentInsert,
  type MessageRow,
  sequencerRepository,
} from './sequencer.repository.ts';
import { inWindow, nextWindowOpening, startOfNextUtcDay, startOfUtcDay } from './sequencer.window.ts';
import { leadTemplateVars, renderTemplate } from './templates.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config' | 'logger' | 'credits'>;

/** Enrollments claimed at once. */
const CLAIM_BATCH = 1000;
/** Mails being prepared (intent recorded) per mail being sent. */
const PREPARE_AHEAD = 4;
/** Sends whose outcome is written in one transaction. */
const FINALIZE_BATCH = 100;
/** A mail the server answered with a 4xx (or could not be reached for) is tried again this much later. */
const RETRY_AFTER_MS = 15 * 60_000;

export interface SequencerRun {
  sent: number;
  failed: number;
  postponed: number;
  stopped: number;
}

/** What a run counts across its batches. */
interface RunState {
  mailboxes: Map<string, MailboxState>;
  /** Mails each user's balance still pays for in the current batch. */
  allowance: Map<string, number>;
  /** Mails sent whose charge is not committed yet, per user. */
  uncharged: Map<string, number>;
}

interface MailboxState {
  row: MailboxRow;
  sentToday: number;
  /** Per campaign, today. */
  byCampaign: Map<string, number>;
  /** No mail from this mailbox before this time (the random gap after its latest mail). */
  freeAt: number;
  transport?: Promise<Transporter>;
}

const randomBetween = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

/**
 * The built-in sequencer (README "Outreach", Sequencer): sends each enrolled lead's next step when it is due,
 * inside the campaign's window, within the mailboxes' daily limits and gaps, rotating mailboxes.
 * Exactly once: the mail is recorded as PENDING (one per enrollment and step, a unique index) and committed
 * before the SMTP transaction; its outcome is written after. A mail whose outcome was lost (the process died, the
 * connection broke after the data went out) becomes UNCONFIRMED and is never sent again.
 */
export function createSequencer(deps: Deps) {
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const baseUrl = publicUrlOf(deps.config);
  const concurrency = deps.config.OUTREACH_SEND_CONCURRENCY;
  // How long a claim or an unanswered mail is held before another process may take the enrollment over.
  const SEND_LEASE_MS = deps.config.OUTREACH_SEND_LEASE_SECONDS * 1000;
  const smtpSlots = semaphore(concurrency);

  /** The mailbox's pooled transport, opened once per run (a failed opening rests the mailbox for the run). */
  function transportOf(mailbox: MailboxState): Promise<Transporter> {
    if (!mailbox.transport) {
      const { smtp } = mailboxEndpoints(box, mailbox.row);
      mailbox.transport = smtp
        ? openSmtpTransport(deps, smtp, { pool: true, maxConnections: Math.min(concurrency, 5) })
        : Promise.reject(new Error('The mailbox has no SMTP URL'));
      mailbox.transport.catch(() => {});
    }
    return mailbox.transport;
  }

  /** A mailbox whose server refused the session (or could not be reached) sends nothing more in this run. */
  function mailboxUnavailable(mailbox: MailboxState, err: unknown) {
    if (mailbox.freeAt !== Number.POSITIVE_INFINITY)
      deps.logger.warn(
        { mailboxId: mailbox.row.id, error: String((err as Error).message ?? err).slice(0, 300) },
        'outreach mailbox unavailable; its leads wait',
      );
    mailbox.freeAt = Number.POSITIVE_INFINITY;
  }

  /**
   * What a batch needs, read before it sends (one read per kind, not one per mail): its campaigns, the mailboxes not
   * known yet in this run with today's counts, the leads, suppressions and threads. A user's balance is read once per
   * run: what it pays for is counted down over every batch.
   */
  async function prepareBatch(claimed: DueEnrollment[], now: Date, run: RunState) {
    const { mailboxes, allowance } = run;
    const repo = sequencerRepository(deps.db);
    const campaignIds = [...new Set(claimed.map((e) => e.campaignId))];
    const campaigns = new Map((await campaignsRepository(deps.db).byIds(campaignIds)).map((c) => [c.id, c]));
    // Mailboxes of these campaigns, with today's counts and their latest mail.
    const wanted = [...new Set([...campaigns.values()].flatMap((c) => c.mailboxIds))].filter(
      (id) => !mailboxes.has(id),
    );
    const rows = await connectionsRepository(deps.db).mailboxesByIds(wanted);
    const counts = await repo.sendsSince(
      rows.map((r) => r.id),
      startOfUtcDay(now),
    );
    for (const row of rows) {
      const mine = counts.filter((c) => c.mailboxId === row.id);
      const last = Math.max(0, ...mine.map((c) => new Date(c.last).getTime()));
      mailboxes.set(row.id, {
        row,
        sentToday: mine.reduce((n, c) => n + c.n, 0),
        byCampaign: new Map(mine.map((c) => [c.campaignId ?? '', c.n])),
        freeAt: last,
      });
    }
    const leads = new Map<string, OutreachLead>();
    for (const userId of new Set(claimed.map((e) => e.userId))) {
      const mine = claimed.filter((e) => e.userId === userId).map((e) => e.leadId);
      for (const lead of await leadsForOutreach(deps.db, userId, mine)) leads.set(lead.id, lead);
    }
    const suppressed = new Set<string>();
    for (const userId of new Set(claimed.map((e) => e.userId))) {
      const emails = claimed.filter((e) => e.userId === userId).map((e) => e.email);
      for (const email of (await suppressionOf(deps.db, userId, emails)).keys()) suppressed.add(`${userId} ${email}`);
    }
    const threads = new Map<string, MessageRow[]>();
    for (const m of await repo.threadsOf(claimed.filter((e) => e.nextStep > 0).map((e) => e.id))) {
      threads.set(m.enrollmentId!, [...(threads.get(m.enrollmentId!) ?? []), m]);
    }
    // What each user's balance pays for in this batch: the balance now, less the mails of earlier batches whose
    // charge is still being written (their finalize runs while this batch sends).
    const price = deps.credits.prices.emails_sent;
    for (const userId of new Set(claimed.map((e) => e.userId))) {
      const paysFor =
        deps.credits.enabled && price > 0
          ? Math.floor((await deps.credits.balance(deps.db, userId)) / price) - (run.uncharged.get(userId) ?? 0)
          : Number.POSITIVE_INFINITY;
      allowance.set(userId, paysFor);
    }
    return { claimed, now, run, campaigns, leads, suppressed, threads };
  }

  async function runBatch(prepared: Awaited<ReturnType<typeof prepareBatch>>) {
    const { claimed, now, run, campaigns, leads, suppressed, threads } = prepared;
    const { mailboxes, allowance } = run;
    const result: SequencerRun = { sent: 0, failed: 0, postponed: 0, stopped: 0 };
    const intents = intentWriter(deps.db);

    const postpones: Array<{ id: string; step: number; at: Date }> = [];
    const stops: string[] = [];
    const sent: Array<{ enrollment: DueEnrollment; message: IntentInsert; mailbox: MailboxState }> = [];
    const moves: EnrollmentMove[] = [];
    const failedIds: Array<{ id: string; error: string }> = [];
    const retried: string[] = [];
    const unconfirmed: string[] = [];

    const advance = (e: DueEnrollment, campaign: CampaignRow, mailboxId: string | null, at: Date): EnrollmentMove => {
      const next = e.nextStep + 1;
      if (next >= campaign.steps.length)
        return { id: e.id, nextStep: next, nextSendAt: null, status: 'COMPLETED', mailboxId };
      const due = new Date(at.getTime() + campaign.steps[next]!.delayDays * 86_400_000);
      return { id: e.id, nextStep: next, nextSendAt: due, status: 'ACTIVE', mailboxId };
    };

    /** The mailbox for this enrollment now, or when to try again. */
    function pickMailbox(e: DueEnrollment, campaign: CampaignRow): MailboxState | Date {
      const candidates = (e.mailboxId ? [e.mailboxId] : campaign.mailboxIds)
        .map((id) => mailboxes.get(id))
        .filter((m): m is MailboxState => !!m && m.freeAt !== Number.POSITIVE_INFINITY);
      if (!candidates.length) return new Date(now.getTime() + RETRY_AFTER_MS);
      const open = candidates.filter(
        (m) => m.sentToday < m.row.dailyLimit && (m.byCampaign.get(campaign.id) ?? 0) < campaign.dailyLimit,
      );
      if (!open.length) return nextWindowOpening(startOfNextUtcDay(now), campaign.window);
      const ready = open.filter((m) => m.freeAt <= now.getTime());
      if (!ready.length) return new Date(Math.min(...open.map((m) => m.freeAt)));
      return ready.reduce((a, b) => (b.sentToday < a.sentToday ? b : a));
    }

    async function sendOne(e: DueEnrollment): Promise<void> {
      const campaign = campaigns.get(e.campaignId);
      const lead = leads.get(e.leadId);
      if (campaign?.status !== 'ACTIVE') return void postpones.push({ id: e.id, step: e.nextStep, at: now });
      if (!lead?.email || normalizeEmail(lead.email) !== e.email || suppressed.has(`${e.userId} ${e.email}`)) {
        stops.push(e.id);
        return;
      }
      if (!inWindow(now, campaign.window))
        return void postpones.push({ id: e.id, step: e.nextStep, at: nextWindowOpening(now, campaign.window) });
      if (!(allowance.get(e.userId)! > 0))
        return void postpones.push({ id: e.id, step: e.nextStep, at: new Date(now.getTime() + RETRY_AFTER_MS) });
      const mailbox = pickMailbox(e, campaign);
      if (mailbox instanceof Date) return void postpones.push({ id: e.id, step: e.nextStep, at: mailbox });
      // Book the slot before any await, so concurrent sends see it; `release` gives it back.
      const freeBefore = mailbox.freeAt;
      const booked = now.getTime() + randomBetween(campaign.minGapSeconds, campaign.maxGapSeconds) * 1000;
      mailbox.sentToday++;
      mailbox.byCampaign.set(campaign.id, (mailbox.byCampaign.get(campaign.id) ?? 0) + 1);
      mailbox.freeAt = booked;
      allowance.set(e.userId, allowance.get(e.userId)! - 1);
      const release = () => {
        mailbox.sentToday--;
        mailbox.byCampaign.set(campaign.id, (mailbox.byCampaign.get(campaign.id) ?? 1) - 1);
        if (mailbox.freeAt === booked) mailbox.freeAt = freeBefore;
        allowance.set(e.userId, allowance.get(e.userId)! + 1);
      };
      // The connection first: a mailbox that cannot be reached (DNS, a private address, a refused login) leaves
      // nothing recorded and the lead waits; the mailbox rests for the rest of this run.
      let transport: Transporter;
      try {
        transport = await transportOf(mailbox);
      } catch (err) {
        release();
        mailboxUnavailable(mailbox, err);
        return void postpones.push({ id: e.id, step: e.nextStep, at: new Date(now.getTime() + RETRY_AFTER_MS) });
      }
      const step = campaign.steps[e.nextStep]!;
      const thread = threads.get(e.id) ?? [];
      const first = thread[0];
      const vars = { ...leadTemplateVars(lead), senderName: mailbox.row.fromName, senderEmail: mailbox.row.email };
      const rendered = renderTemplate(step.subject, vars).trim();
      const subject = rendered || (first ? `Re: ${first.subject.replace(/^re:\s*/i, '')}` : '(no subject)');
      const messageId = `${randomUUID()}@${domainOf(mailbox.row.email)}`;
      const intent: IntentInsert = {
        id: newId(),
        enrollmentId: e.id,
        mailboxId: mailbox.row.id,
        step: e.nextStep,
        messageId,
        inReplyTo: thread.at(-1)?.messageId ?? null,
        references: thread.map((m) => m.messageId),
        threadId: first?.threadId ?? messageId,
        fromEmail: mailbox.row.email,
        subject,
        bodyText: renderTemplate(step.body, vars),
        createdAt: now,
      };
      let recorded: boolean;
      try {
        recorded = await intents.add(intent);
      } catch (err) {
        release();
        throw err;
      }
      if (!recorded) {
        release();
        return reconcile(e, campaign);
      }
      try {
        await smtpSlots.acquire();
        try {
          await transport.sendMail(
            mailOptions({
              from: mailbox.row.email,
              fromName: mailbox.row.fromName,
              to: e.email,
              subject,
              text: intent.bodyText,
              messageId,
              inReplyTo: intent.inReplyTo,
              references: intent.references,
              unsubscribeUrl: `${baseUrl}/api/outreach/unsubscribe/${linkToken(deps.config, 'unsubscribe', intent.id)}`,
              openPixelUrl: campaign.trackOpens
                ? `${baseUrl}/api/outreach/o/${linkToken(deps.config, 'open', intent.id)}.gif`
                : null,
            }),
          );
        } finally {
          smtpSlots.release();
        }
        sent.push({ enrollment: e, message: intent, mailbox });
        moves.push(advance(e, campaign, mailbox.row.id, now));
      } catch (err) {
        const kind = classifySendError(err);
        const error = String((err as Error).message ?? err).slice(0, 500);
        deps.logger.warn({ enrollmentId: e.id, mailboxId: mailbox.row.id, kind, error }, 'outreach mail not sent');
        if (kind === 'rejected') {
          failedIds.push({ id: intent.id, error });
          stops.push(e.id);
        } else if (kind === 'retry') {
          retried.push(intent.id);
          release();
          if (sessionFailure(err)) mailboxUnavailable(mailbox, err);
          postpones.push({ id: e.id, step: e.nextStep, at: new Date(now.getTime() + RETRY_AFTER_MS) });
        } else {
          unconfirmed.push(intent.id);
          moves.push(advance(e, campaign, mailbox.row.id, now));
        }
      }
    }

    /** This step already has a mail: an answered one moves on, a lost one becomes UNCONFIRMED; none is resent. */
    async function reconcile(e: DueEnrollment, campaign: CampaignRow) {
      const existing = await sequencerRepository(deps.db).intentOf(e.id, e.nextStep);
      if (!existing)
        return void postpones.push({ id: e.id, step: e.nextStep, at: new Date(now.getTime() + RETRY_AFTER_MS) });
      if (existing.status === 'FAILED') return void stops.push(e.id);
      if (existing.status === 'PENDING' && now.getTime() - existing.createdAt.getTime() < SEND_LEASE_MS) {
        // Another process may still be sending it: look again when its lease is over.
        return void postpones.push({
          id: e.id,
          step: e.nextStep,
          at: new Date(existing.createdAt.getTime() + SEND_LEASE_MS),
        });
      }
      if (existing.status === 'PENDING') unconfirmed.push(existing.id);
      moves.push(advance(e, campaign, existing.mailboxId, existing.createdAt));
    }

    // Four times as many preparing as sending: intents waiting for their INSERT share one statement (each commit
    // waits for the WAL flush), and the SMTP connections never wait for the database. OUTREACH_SEND_CONCURRENCY
    // mails are handed to SMTP at once; a crash can leave up to this many recorded and unsent (UNCONFIRMED).
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency * PREPARE_AHEAD, claimed.length) }, async () => {
        while (next < claimed.length) {
          const e = claimed[next++]!;
          try {
            await sendOne(e);
          } catch (err) {
            deps.logger.error({ err, enrollmentId: e.id }, 'outreach send failed');
            postpones.push({ id: e.id, step: e.nextStep, at: new Date(now.getTime() + RETRY_AFTER_MS) });
          }
        }
      }),
    );

    // Outcomes, in batches: mail states, enrollment moves, leads CONTACTED, credits. Written while the next batch
    // is sent (its enrollments are leased, so nothing is claimed twice meanwhile).
    const finalize = async () => {
      for (let i = 0; i < Math.max(sent.length, 1); i += FINALIZE_BATCH) {
        const chunk = sent.slice(i, i + FINALIZE_BATCH);
        const first = i === 0;
        await deps.db.transaction(async (tx) => {
          const txRepo = sequencerRepository(tx);
          await txRepo.setMessages(
            chunk.map((s) => s.message.id),
            { status: 'SENT', sentAt: now, updatedAt: now },
          );
          const chunkMoves = moves.filter((m) => chunk.some((s) => s.enrollment.id === m.id));
          if (first) {
            // Everything that was not a plain send, once.
            chunkMoves.push(...moves.filter((m) => !sent.some((s) => s.enrollment.id === m.id)));
            await txRepo.confirmLost(unconfirmed, now);
            for (const f of failedIds)
              await txRepo.setMessages([f.id], { status: 'FAILED', error: f.error, updatedAt: now });
            await txRepo.deleteMessages(retried);
            await txRepo.stopEnrollments(stops, 'STOPPED', now);
            await txRepo.postpone(postpones);
          }
          await txRepo.moveEnrollments(chunkMoves, now);
          // Users in one order in every transaction (two finalizing batches never wait on each other in a cycle).
          for (const userId of [...new Set(chunk.map((s) => s.enrollment.userId))].sort()) {
            const mine = chunk.filter((s) => s.enrollment.userId === userId);
            await moveLeadsForOutreach(
              tx,
              userId,
              mine.map((s) => s.enrollment.leadId),
              'CONTACTED',
              now,
            );
            // The mails went out: paid from what the balance holds (never below zero).
            await deps.credits.spend(tx, userId, 'emails_sent', mine.length, {
              partial: true,
              reason: 'outreach mail',
            });
          }
        });
        // Charged now. (A failed transaction leaves them counted: this run sends less, never unpaid.)
        for (const s of chunk)
          run.uncharged.set(s.enrollment.userId, (run.uncharged.get(s.enrollment.userId) ?? 1) - 1);
      }
    };
    for (const s of sent) run.uncharged.set(s.enrollment.userId, (run.uncharged.get(s.enrollment.userId) ?? 0) + 1);
    result.sent = sent.length;
    result.failed = failedIds.length;
    result.postponed = postpones.length + retried.length;
    result.stopped = stops.length;
    return { result, finalize: finalize() };
  }

  return {
    /**
     * Sends what is due now, batch after batch, until nothing due is left (the worker runs it every minute). One
     * process runs it at a time (a lease, renewed while it lasts): another process's call answers at once, and the
     * next minute's run picks up whatever became due meanwhile.
     */
    async runDue(options: { maxBatches?: number } = {}): Promise<SequencerRun> {
      const total: SequencerRun = { sent: 0, failed: 0, postponed: 0, stopped: 0 };
      const holder = randomUUID();
      const leaseFrom = (now: Date) => new Date(now.getTime() + SEND_LEASE_MS);
      const repo = sequencerRepository(deps.db);
      if (!(await repo.takeRunLease(holder, deps.clock.now(), leaseFrom(deps.clock.now())))) return total;
      let leaseLost = false;
      const renewal = setInterval(
        () =>
          void repo
            .takeRunLease(holder, deps.clock.now(), leaseFrom(deps.clock.now()))
            .then((held) => {
              if (!held) leaseLost = true;
            })
            .catch(() => {}),
        Math.max(1000, SEND_LEASE_MS / 3),
      );
      renewal.unref();
      const run: RunState = { mailboxes: new Map(), allowance: new Map(), uncharged: new Map() };
      const { mailboxes } = run;
      const writing: Array<Promise<void>> = [];
      const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
      try {
        await repo.confirmStaleOneOffs(new Date(deps.clock.now().getTime() - SEND_LEASE_MS));
        for (let batch = 0; batch < maxBatches && !leaseLost; batch++) {
          const now = deps.clock.now();
          const claimed = await deps.db.transaction((tx) =>
            sequencerRepository(tx).claimDue(now, leaseFrom(now), CLAIM_BATCH),
          );
          if (!claimed.length) break;
          const { result: sent, finalize } = await runBatch(await prepareBatch(claimed, now, run));
          // Written while the next batch sends; unhandled until awaited below (the rejection is kept, not thrown twice).
          finalize.catch(() => {});
          writing.push(finalize);
          total.sent += sent.sent;
          total.failed += sent.failed;
          total.postponed += sent.postponed;
          total.stopped += sent.stopped;
        }
        for (const w of writing) await w;
      } finally {
        clearInterval(renewal);
        await Promise.allSettled(writing);
        for (const m of mailboxes.values()) void m.transport?.then((t) => t.close()).catch(() => {});
        await repo.releaseRunLease(holder).catch(() => {});
      }
      return total;
    },
  };
}
