import type { Transporter } from 'nodemailer';
import type { AppDeps } from '../../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { normalizeEmail } from '../../../shared/mail/address.ts';
import type { OutreachCampaignRow } from '../campaigns/outreach-campaigns.repository.ts';
import type { IntentInsert } from '../messages/messages.repository.ts';
import {
  bookSlot,
  countBooked,
  countCharged,
  type MailboxState,
  newRunState,
  type PreparedBatch,
  prepareBatch,
  type RunState,
  startAllowance,
  suppressedOf,
  takeRunLease,
} from './sequencer.batch.ts';
import {
  afterExistingMail,
  afterSendFailure,
  decideSend,
  gapUntil,
  nextStepMove,
  nextWindowOpening,
  RETRY_AFTER_MS,
} from './sequencer.decisions.ts';
import { publicUrlOf, sessionFailure } from './sequencer.mail.ts';
import { emptyOutcomes, writeOutcomes } from './sequencer.outcomes.ts';
import { boundedPipeline } from './sequencer.pipeline.ts';
import { type DueEnrollment, sequencerRepository } from './sequencer.repository.ts';
import { composeIntent, deliverMail, mailboxTransport, recordPaid } from './sequencer.steps.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config' | 'logger' | 'credits'>;

/** Enrollments claimed at once (a batch). */
const CLAIM_BATCH = 1000;
/**
 * Mails recorded in one statement, per mail being sent at once (a chunk of the pipeline). A chunk is recorded only
 * while fewer than a chunk's worth wait to be sent, so at most 4 × OUTREACH_SEND_CONCURRENCY are ever recorded and
 * not sent: what a crash can leave UNCONFIRMED.
 */
const CHUNK_PER_CONNECTION = 2;

export interface SequencerRun {
  sent: number;
  failed: number;
  postponed: number;
  stopped: number;
}

/** A mail chosen and its slot booked, not recorded yet. */
interface Planned {
  e: DueEnrollment;
  campaign: OutreachCampaignRow;
  mailbox: MailboxState;
  intent: IntentInsert;
  /** Gives the booked slot (daily counts, gap, allowance) back. */
  release(): void;
  transport?: Transporter;
}

/**
 * The built-in sequencer (docs/outreach.md "Outreach", Sequencer): sends each enrolled lead's next step when it is due,
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

  const transportOf = (mailbox: MailboxState) =>
    mailboxTransport(deps, box, mailbox, { pool: true, maxConnections: Math.min(concurrency, 5) });

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
   * Sends a prepared batch as a pipeline of chunks: each chunk's mails are chosen (mailbox, slot, rendering) at
   * once, their intents recorded in one statement, then handed to SMTP, OUTREACH_SEND_CONCURRENCY at a time; the
   * next chunk is recorded while this one sends. At most two chunks are recorded and unsent at any moment, so a
   * crash leaves at most that many UNCONFIRMED.
   */
  async function runBatch(run: RunState, prepared: PreparedBatch, onHalfRecorded: () => void) {
    const { claimed, now, campaigns, leads, threads } = prepared;
    const { mailboxes, allowance } = run;
    startAllowance(run, prepared);
    // Read as the batch starts, not when it was claimed: an address suppressed meanwhile gets nothing.
    const suppressed = await suppressedOf(deps, claimed);
    const out = emptyOutcomes();
    const retryAt = new Date(now.getTime() + RETRY_AFTER_MS);
    const postpone = (e: DueEnrollment, at: Date) => void out.postpones.push({ id: e.id, step: e.nextStep, at });
    // `now` is the batch's: each campaign's window is read once.
    const windowOpensAt = new Map<string, Date>();
    for (const c of campaigns.values()) windowOpensAt.set(c.id, nextWindowOpening(now, c.window));

    const advance = (e: DueEnrollment, campaign: OutreachCampaignRow, mailboxId: string | null, at: Date) =>
      nextStepMove(e, campaign.steps, mailboxId, at);

    /**
     * The mail this enrollment gets now, with its mailbox's slot booked (synchronously, so the next one sees it;
     * `release` gives it back), or undefined with the outcome noted (postponed, stopped).
     */
    function plan(e: DueEnrollment): Planned | undefined {
      const campaign = campaigns.get(e.campaignId);
      const lead = leads.get(e.leadId);
      const decision = decideSend({
        e,
        campaign,
        leadEmail: lead?.email === e.email ? e.email : (lead?.email && normalizeEmail(lead.email)) || undefined,
        suppressed: suppressed.has(`${e.userId} ${e.email}`),
        windowOpensAt: windowOpensAt.get(e.campaignId) ?? now,
        allowance: allowance.get(e.userId)!,
        mailboxes,
        now,
        retryAt,
      });
      if ('postpone' in decision) return postpone(e, decision.postpone);
      if ('stop' in decision || !campaign) return void out.stops.push(e.id);
      const mailbox = decision.send;
      const intent = composeIntent(e, campaign.steps[e.nextStep]!, lead!, mailbox.row, threads.get(e.id) ?? [], now);
      // Booked only once everything that could throw is done (a throw leaves nothing booked).
      const release = bookSlot(run, mailbox, campaign, e.userId, gapUntil(now, campaign));
      return { e, campaign, mailbox, intent, release };
    }

    /** This step already has a mail: an answered one moves on, a lost one becomes UNCONFIRMED; none is resent. */
    async function reconcile(e: DueEnrollment, campaign: OutreachCampaignRow) {
      const existing = await sequencerRepository(deps.db).intentOf(e.id, e.nextStep);
      const next = afterExistingMail(existing, now, SEND_LEASE_MS, retryAt);
      if ('postpone' in next) return postpone(e, next.postpone);
      if ('stop' in next) return void out.stops.push(e.id);
      if (next.unconfirmed) out.unconfirmed.push({ id: existing!.id });
      out.moves.push(advance(e, campaign, existing!.mailboxId, existing!.createdAt));
    }

    /** Records a chunk's intents (connections first: a mailbox that cannot be reached records nothing). */
    async function record(chunk: Planned[]): Promise<{ recorded: Planned[]; refused: Planned[] }> {
      const reachable: Planned[] = [];
      for (const p of chunk) {
        try {
          p.transport = await transportOf(p.mailbox);
          reachable.push(p);
        } catch (err) {
          // DNS, a private address, a server down, a refused login: the lead waits, the mailbox rests for this run.
          p.release();
          mailboxUnavailable(p.mailbox, err);
          postpone(p.e, retryAt);
        }
      }
      let recorded: Set<string>;
      let unpaid: Set<string>;
      let paid: Map<string, number>;
      try {
        ({ recorded, unpaid, paid } = await deps.db.transaction((tx) =>
          recordPaid(
            tx,
            deps.credits,
            reachable.map((p) => ({ id: p.intent.id, userId: p.e.userId })),
            (repo) => repo.insertIntents(reachable.map((p) => p.intent)),
            true,
          ),
        ));
      } catch (err) {
        deps.logger.error({ err }, 'outreach intents not recorded');
        for (const p of reachable) {
          p.release();
          postpone(p.e, retryAt);
        }
        return { recorded: [], refused: [] };
      }
      for (const [userId, mails] of paid) countCharged(run, userId, mails);
      for (const p of reachable) {
        if (recorded.has(p.intent.id) && !unpaid.has(p.intent.id)) continue;
        p.release();
        // The balance ran out under this batch (a one-off mail took it meanwhile): the lead waits.
        if (unpaid.has(p.intent.id)) postpone(p.e, retryAt);
      }
      return {
        recorded: reachable.filter((p) => recorded.has(p.intent.id) && !unpaid.has(p.intent.id)),
        // Not recorded: the step has a mail already, or the enrollment or campaign stopped since the batch was read.
        refused: reachable.filter((p) => !recorded.has(p.intent.id)),
      };
    }

    async function deliver({ e, campaign, mailbox, intent, release, transport }: Planned): Promise<void> {
      const delivery = await deliverMail(
        deps.config,
        transport!,
        {
          ...intent,
          from: mailbox.row.email,
          fromName: mailbox.row.fromName,
          to: e.email,
          text: intent.bodyText,
          trackOpens: campaign.trackOpens,
        },
        baseUrl,
      );
      if (delivery.kind === 'sent') {
        out.sent.push({ id: intent.id, userId: e.userId, leadId: e.leadId, enrollmentId: e.id });
        out.moves.push(advance(e, campaign, mailbox.row.id, now));
        return;
      }
      const { kind, error } = delivery;
      deps.logger.warn({ enrollmentId: e.id, mailboxId: mailbox.row.id, kind, error }, 'outreach mail not sent');
      // A refused or lost mail keeps its slot (it counts toward the limits). Its charge (taken when it was
      // recorded) is given back when it certainly did not go out (refused, or nothing handed over); a lost
      // answer (UNCONFIRMED: it may have gone out) stays charged.
      const then = afterSendFailure(kind);
      if (then === 'stop') {
        countBooked(run, e.userId, -1);
        out.failed.push({ id: intent.id, userId: e.userId, error });
        out.stops.push(e.id);
      } else if (then === 'retry') {
        out.retried.push({ id: intent.id, userId: e.userId });
        release();
        if (sessionFailure(delivery.cause)) mailboxUnavailable(mailbox, delivery.cause);
        postpone(e, retryAt);
      } else {
        out.unconfirmed.push({ id: intent.id });
        out.moves.push(advance(e, campaign, mailbox.row.id, now));
      }
    }

    // The pipeline: a chunk is recorded while the one before it sends; mails are handed to SMTP
    // OUTREACH_SEND_CONCURRENCY at a time. Whatever happens, the outcomes of what was sent are written.
    const chunkSize = concurrency * CHUNK_PER_CONNECTION;
    let failure: { error: unknown } | undefined;
    try {
      await boundedPipeline<Planned>({
        workers: concurrency,
        limit: chunkSize,
        consume: deliver,
        async produce({ room, put }) {
          for (let i = 0; i < claimed.length; i += chunkSize) {
            // Half of the batch is recorded: the next batch is claimed and read while the rest sends.
            if (i >= claimed.length / 2) onHalfRecorded();
            await room();
            const chunk: Planned[] = [];
            for (const e of claimed.slice(i, i + chunkSize)) {
              try {
                const p = plan(e);
                if (p) chunk.push(p);
              } catch (err) {
                deps.logger.error({ err, enrollmentId: e.id }, 'outreach mail not planned');
                postpone(e, retryAt);
              }
            }
            const { recorded, refused } = await record(chunk);
            put(recorded);
            for (const p of refused) {
              try {
                await reconcile(p.e, p.campaign);
              } catch (err) {
                deps.logger.error({ err, enrollmentId: p.e.id }, 'outreach mail not reconciled');
                postpone(p.e, retryAt);
              }
            }
          }
        },
      });
    } catch (error) {
      failure = { error };
    }
    // The outcomes are written while the next batch sends (its enrollments are leased, so nothing is claimed twice
    // meanwhile); refunds of the mails that did not go out are counted once they commit. A batch that broke off still writes
    // what it sent before the error goes on.
    const written = writeOutcomes(deps, out, now, (userId, refunded) => countCharged(run, userId, -refunded));
    if (failure) {
      await written.catch((err) => deps.logger.error({ err }, 'outreach outcomes not written'));
      throw failure.error;
    }
    const result: SequencerRun = {
      sent: out.sent.length,
      failed: out.failed.length,
      postponed: out.postpones.length + out.retried.length,
      stopped: out.stops.length,
    };
    return { result, finalize: written };
  }

  return {
    /**
     * Sends what is due now, batch after batch, until nothing due is left (the worker runs it every minute). One
     * process runs it at a time (a lease, renewed while it lasts): another process's call answers at once, and the
     * next minute's run picks up whatever became due meanwhile.
     */
    async runDue(options: { maxBatches?: number; claimBatch?: number } = {}): Promise<SequencerRun> {
      const total: SequencerRun = { sent: 0, failed: 0, postponed: 0, stopped: 0 };
      const leaseFrom = (now: Date) => new Date(now.getTime() + SEND_LEASE_MS);
      const repo = sequencerRepository(deps.db);
      const lease = await takeRunLease(deps, SEND_LEASE_MS);
      if (!lease) return total;
      const run = newRunState();
      const writing: Array<Promise<void>> = [];
      const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
      const claimBatch = options.claimBatch ?? CLAIM_BATCH;

      /** Claims (leases) the next due enrollments and reads what they need; undefined when nothing is due. */
      const claimNext = async (): Promise<PreparedBatch | undefined> => {
        const now = deps.clock.now();
        const claimed = await deps.db.transaction((tx) =>
          sequencerRepository(tx).claimDue(now, leaseFrom(now), claimBatch),
        );
        return claimed.length ? prepareBatch(deps, claimed, now, run) : undefined;
      };
      let upcoming: Promise<PreparedBatch | undefined> | undefined;
      try {
        await repo.confirmStaleOneOffs(new Date(deps.clock.now().getTime() - SEND_LEASE_MS));
        upcoming = claimNext();
        for (let batch = 0; upcoming; batch++) {
          let prepared = await upcoming;
          upcoming = undefined;
          // Without the run lease, a batch claimed ahead is not sent: its claims wait out their lease.
          if (!prepared || lease.lost) break;
          // The batch's time is when it starts sending (windows, gaps, due dates), not when it was claimed.
          const now = deps.clock.now();
          // Every batch makes sure the run is still this process's (the renewal timer may have failed quietly).
          if (batch > 0 && !(await lease.renew(now))) break;
          // Claimed while the batch before finished sending: claims older than half their lease are taken again
          // (the ones another process took meanwhile are left to it).
          if (now.getTime() - prepared.now.getTime() > SEND_LEASE_MS / 2) {
            const held = await repo.renewClaims(
              prepared.claimed.map((e) => e.id),
              leaseFrom(prepared.now),
              leaseFrom(now),
            );
            prepared = { ...prepared, claimed: prepared.claimed.filter((e) => held.has(e.id)) };
          }
          prepared = { ...prepared, now };
          const next = () => {
            if (!upcoming && batch + 1 < maxBatches && !lease.lost) {
              upcoming = claimNext();
              upcoming.catch(() => {});
            }
          };
          const { result: sent, finalize } = await runBatch(run, prepared, next);
          next();
          // Written while the next batch sends; unhandled until awaited below (the rejection is kept, not thrown twice).
          finalize.catch(() => {});
          writing.push(finalize);
          for (const key of Object.keys(total) as Array<keyof SequencerRun>) total[key] += sent[key];
        }
        for (const w of writing) await w;
      } finally {
        lease.stopRenewing();
        // A batch claimed but not sent (an error ended the run) waits out its lease.
        await upcoming?.catch(() => {});
        await Promise.allSettled(writing);
        for (const m of run.mailboxes.values()) void m.transport?.then((t) => t.close()).catch(() => {});
        await lease.release();
      }
      return total;
    },
  };
}
