import { randomUUID } from 'node:crypto';
import type { Transporter } from 'nodemailer';
import type { AppDeps } from '../../../deps.ts';
import { type LeadToSend, leadsForSending } from '../../leads/index.ts';
import { suppressionOf } from '../../suppressions/index.ts';
import { type OutreachCampaignRow, outreachCampaignsRepository } from '../campaigns/outreach-campaigns.repository.ts';
import { connectionsRepository, type MailboxRow } from '../connections/connections.repository.ts';
import type { MessageRow } from '../messages/messages.repository.ts';
import { allowanceOf, startOfUtcDay } from './sequencer.decisions.ts';
import { type DueEnrollment, sequencerRepository } from './sequencer.repository.ts';

/** What a sequencer run knows across its batches (docs/outreach.md "Outreach", Sequencer). */
export interface RunState {
  mailboxes: Map<string, MailboxState>;
  /** Mails each user's balance still pays for in the current batch. */
  allowance: Map<string, number>;
  /**
   * Per user, mails booked in this run and still charged or about to be (less those given back). The allowance is
   * an estimate that keeps the planning near the balance; what is paid is decided by the charge taken as each chunk
   * is recorded (`recordPaid`), under the balance row's lock.
   */
  booked: Map<string, number>;
  /** Per user, mails of this run whose charge is committed (less the refunds committed). */
  charged: Map<string, number>;
}

export interface MailboxState {
  row: MailboxRow;
  sentToday: number;
  /** Per campaign, today. */
  byCampaign: Map<string, number>;
  /** No mail from this mailbox before this time (the random gap after its latest mail). */
  freeAt: number;
  transport?: Promise<Transporter>;
}

export const newRunState = (): RunState => ({
  mailboxes: new Map(),
  allowance: new Map(),
  booked: new Map(),
  charged: new Map(),
});

const add = (counts: Map<string, number>, userId: string, by: number) =>
  counts.set(userId, (counts.get(userId) ?? 0) + by);
/** A mail booked for the user (or, negative, given back: not recorded, not paid, or refused). */
export const countBooked = (run: RunState, userId: string, by: number) => add(run.booked, userId, by);
export const countCharged = (run: RunState, userId: string, by: number) => add(run.charged, userId, by);

/**
 * Sets what each user's balance pays for in the batch about to send: the balance read with the batch, less the mails
 * booked in this run whose charge was not committed when it was read. Called when the batch starts, after the batch
 * before booked its last mail. The charges committed are counted BEFORE the balance is read: a charge committed in
 * between is subtracted twice (the batch sends less), never not at all.
 */
export function startAllowance(run: RunState, batch: PreparedBatch) {
  for (const [userId, b] of batch.balances)
    run.allowance.set(userId, allowanceOf(b.paysFor, run.booked.get(userId) ?? 0, b.chargedBefore));
}

export type PreparedBatch = Awaited<ReturnType<typeof prepareBatch>>;

/**
 * What a batch needs, read before it sends (one read per kind, not one per mail): its campaigns, the mailboxes not
 * known yet in this run with today's counts, the leads and threads, and what each user's balance pays for.
 * Suppressions are read when it starts sending (`suppressedOf`).
 */
export async function prepareBatch(
  deps: Pick<AppDeps, 'db' | 'credits'>,
  claimed: DueEnrollment[],
  now: Date,
  run: RunState,
) {
  const { mailboxes } = run;
  const repo = sequencerRepository(deps.db);
  const userIds = [...new Set(claimed.map((e) => e.userId))];
  const campaignIds = [...new Set(claimed.map((e) => e.campaignId))];
  const campaigns = new Map<string, OutreachCampaignRow>(
    (await outreachCampaignsRepository(deps.db).byIds(campaignIds)).map((c) => [c.id, c]),
  );
  // Mailboxes of these campaigns, with today's counts and their latest mail.
  const wanted = [...new Set([...campaigns.values()].flatMap((c) => c.mailboxIds))].filter((id) => !mailboxes.has(id));
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
  const leads = new Map<string, LeadToSend>();
  for (const userId of userIds) {
    const mine = claimed.filter((e) => e.userId === userId).map((e) => e.leadId);
    for (const lead of await leadsForSending(deps.db, userId, mine)) leads.set(lead.id, lead);
  }
  const threads = new Map<string, MessageRow[]>();
  for (const m of await repo.threadsOf(claimed.filter((e) => e.nextStep > 0).map((e) => e.id))) {
    threads.set(m.enrollmentId!, [...(threads.get(m.enrollmentId!) ?? []), m]);
  }
  // Each user's balance in mails, and how many of this run's charges were committed before it was read.
  const price = deps.credits.prices.emails_sent;
  const balances = new Map<string, { paysFor: number; chargedBefore: number }>();
  for (const userId of userIds) {
    const chargedBefore = run.charged.get(userId) ?? 0;
    const paysFor =
      deps.credits.enabled && price > 0
        ? Math.floor((await deps.credits.balance(deps.db, userId)) / price)
        : Number.POSITIVE_INFINITY;
    balances.set(userId, { paysFor, chargedBefore });
  }
  return { claimed, now, campaigns, leads, threads, balances };
}

/** The batch's suppressed recipients, as `<userId> <address>`: read as the batch starts sending. */
export async function suppressedOf(deps: Pick<AppDeps, 'db'>, claimed: DueEnrollment[]): Promise<Set<string>> {
  const suppressed = new Set<string>();
  for (const userId of new Set(claimed.map((e) => e.userId))) {
    const emails = claimed.filter((e) => e.userId === userId).map((e) => e.email);
    for (const email of (await suppressionOf(deps.db, userId, emails)).keys()) suppressed.add(`${userId} ${email}`);
  }
  return suppressed;
}

/**
 * Books the mailbox's slot for a mail (today's counts, the gap until `freeAt`, the user's allowance) at once, so the
 * next mail planned sees it; answers what gives it back (a mail not recorded, not paid, or tried again later).
 */
export function bookSlot(
  run: RunState,
  mailbox: MailboxState,
  campaign: { id: string },
  userId: string,
  freeAt: number,
): () => void {
  const { allowance } = run;
  const freeBefore = mailbox.freeAt;
  mailbox.sentToday++;
  mailbox.byCampaign.set(campaign.id, (mailbox.byCampaign.get(campaign.id) ?? 0) + 1);
  mailbox.freeAt = freeAt;
  allowance.set(userId, allowance.get(userId)! - 1);
  countBooked(run, userId, 1);
  return () => {
    mailbox.sentToday--;
    mailbox.byCampaign.set(campaign.id, (mailbox.byCampaign.get(campaign.id) ?? 1) - 1);
    if (mailbox.freeAt === freeAt) mailbox.freeAt = freeBefore;
    allowance.set(userId, allowance.get(userId)! + 1);
    countBooked(run, userId, -1);
  };
}

/**
 * The sequencer's run lease: one process sends at a time. Renewed in the background while the run lasts; `lost`
 * once a renewal found it taken. Undefined when another process holds it.
 */
export async function takeRunLease(deps: Pick<AppDeps, 'db' | 'clock'>, leaseMs: number) {
  const holder = randomUUID();
  const repo = sequencerRepository(deps.db);
  const renew = (now: Date) => repo.takeRunLease(holder, now, new Date(now.getTime() + leaseMs));
  if (!(await renew(deps.clock.now()))) return undefined;
  let lost = false;
  const renewal = setInterval(
    () =>
      void renew(deps.clock.now())
        .then((held) => {
          if (!held) lost = true;
        })
        .catch(() => {}),
    Math.max(1000, leaseMs / 3),
  );
  renewal.unref();
  return {
    get lost() {
      return lost;
    },
    renew,
    stopRenewing: () => clearInterval(renewal),
    release: () => repo.releaseRunLease(holder).catch(() => {}),
  };
}
