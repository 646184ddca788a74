import type { EnrollmentStatus, SendingWindow } from '../../../db/schema/index.ts';

/**
 * The sequencer's decisions (docs/outreach.md "Outreach", Sequencer) as pure functions: what is due, the daily
 * allowance, the sending window, the gap between mails and steps, and what a reply or a refused mail stops. They
 * read only their arguments (no database, no clock, no network), so test/outreach/sequencer-decisions.test.ts checks
 * them alone; sequencer.ts runs them.
 */

/** A mail the server answered with a 4xx (or could not be reached for) is tried again this much later. */
export const RETRY_AFTER_MS = 15 * 60_000;
const DAY_MS = 86_400_000;

// ---- The sending window

/**
 * Sending windows: local days (1 = Monday … 7 = Sunday) and hours
 * [startHour, endHour) in the campaign's time zone.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS: Record<string, number> = { Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6, Sun: 7 };

function localParts(at: Date, timeZone: string): { weekday: number; hour: number } {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: 'numeric', hourCycle: 'h23' });
    formatters.set(timeZone, format);
  }
  const parts = format.formatToParts(at);
  const weekday = WEEKDAYS[parts.find((p) => p.type === 'weekday')?.value ?? ''] ?? 0;
  const hour = Number(parts.find((p) => p.type === 'hour')?.value ?? 0);
  return { weekday, hour };
}

export function inWindow(at: Date, window: SendingWindow): boolean {
  const { weekday, hour } = localParts(at, window.timezone);
  return window.days.includes(weekday) && hour >= window.startHour && hour < window.endHour;
}

const QUARTER_HOUR = 15 * 60_000;

/** The first moment at or after `from` inside the window (found on quarter hours, so half-hour zones work too). */
export function nextWindowOpening(from: Date, window: SendingWindow): Date {
  if (inWindow(from, window)) return from;
  let t = Math.ceil(from.getTime() / QUARTER_HOUR) * QUARTER_HOUR;
  for (let i = 0; i < 8 * 24 * 4; i++, t += QUARTER_HOUR) {
    if (inWindow(new Date(t), window)) return new Date(t);
  }
  // A window that never opens cannot be saved (days and hours are checked); a day later is a safe answer.
  return new Date(from.getTime() + DAY_MS);
}

export const startOfUtcDay = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
export const startOfNextUtcDay = (at: Date) => new Date(startOfUtcDay(at).getTime() + DAY_MS);

// ---- The gap between steps and between mails

/** An enrollment's move once its step's mail is sent (or known): the next step after its delay, or COMPLETED. */
export interface StepMove {
  id: string;
  nextStep: number;
  nextSendAt: Date | null;
  status: EnrollmentStatus;
  mailboxId: string | null;
}

/** The move after the mail of `e.nextStep` went out at `at`: the next step is due its delay (days) later. */
export function nextStepMove(
  e: { id: string; nextStep: number },
  steps: ReadonlyArray<{ delayDays: number }>,
  mailboxId: string | null,
  at: Date,
): StepMove {
  const next = e.nextStep + 1;
  if (next >= steps.length) return { id: e.id, nextStep: next, nextSendAt: null, status: 'COMPLETED', mailboxId };
  const due = new Date(at.getTime() + steps[next]!.delayDays * DAY_MS);
  return { id: e.id, nextStep: next, nextSendAt: due, status: 'ACTIVE', mailboxId };
}

/** When the mailbox may send again after a mail at `now`: a random gap in [minGapSeconds, maxGapSeconds]. */
export function gapUntil(
  now: Date,
  campaign: { minGapSeconds: number; maxGapSeconds: number },
  random: () => number = Math.random,
): number {
  const { minGapSeconds: min, maxGapSeconds: max } = campaign;
  return now.getTime() + (min + Math.floor(random() * (max - min + 1))) * 1000;
}

// ---- The daily allowance and the mailbox

/** What the sequencer knows of a mailbox today. */
export interface MailboxSlot {
  row: { id: string; dailyLimit: number };
  sentToday: number;
  /** Per campaign, today. */
  byCampaign: Map<string, number>;
  /** No mail from this mailbox before this time (ms; the random gap after its latest mail); Infinity: resting. */
  freeAt: number;
}

/**
 * What a user's balance pays for in the batch about to send: the balance in mails, less the mails booked in this
 * run whose charge was not committed when it was read (a charge committed in between is counted twice: the batch
 * sends less, never more).
 */
export const allowanceOf = (paysFor: number, bookedInRun: number, chargedBefore: number): number =>
  paysFor - (bookedInRun - chargedBefore);

/**
 * The mailbox for this enrollment now (its own once it has one, else the campaign's, the least used today first),
 * or when to try again: the retry time when none can be reached, the next day's window when every one reached a
 * daily limit (its own or the campaign's), the end of the shortest gap otherwise.
 */
export function pickMailbox<M extends MailboxSlot>(
  e: { mailboxId: string | null },
  campaign: { id: string; mailboxIds: string[]; dailyLimit: number; window: SendingWindow },
  mailboxes: ReadonlyMap<string, M>,
  now: Date,
  retryAt: Date,
): M | Date {
  const candidates = (e.mailboxId ? [e.mailboxId] : campaign.mailboxIds)
    .map((id) => mailboxes.get(id))
    .filter((m): m is M => !!m && m.freeAt !== Number.POSITIVE_INFINITY);
  if (!candidates.length) return retryAt;
  const open = candidates.filter(
    (m) => m.sentToday < m.row.dailyLimit && (m.byCampaign.get(campaign.id) ?? 0) < campaign.dailyLimit,
  );
  if (!open.length) return nextWindowOpening(startOfNextUtcDay(now), campaign.window);
  const ready = open.filter((m) => m.freeAt <= now.getTime());
  if (!ready.length) return new Date(Math.min(...open.map((m) => m.freeAt)));
  return ready.reduce((a, b) => (b.sentToday < a.sentToday ? b : a));
}

// ---- What is due now

export type SendDecision<M> = { send: M } | { postpone: Date } | { stop: true };

/**
 * Whether a claimed enrollment gets its mail now: not while its campaign is not ACTIVE (looked at again at once);
 * never when the lead's address changed or is suppressed (the enrollment stops); not before the window opens, nor
 * while the user's balance pays for nothing more (retry later); then as `pickMailbox` says.
 */
export function decideSend<M extends MailboxSlot>(input: {
  e: { email: string; mailboxId: string | null };
  campaign: { id: string; status: string; mailboxIds: string[]; dailyLimit: number; window: SendingWindow } | undefined;
  /** The lead's address now (normalized), undefined when the lead is gone or has none. */
  leadEmail: string | undefined;
  suppressed: boolean;
  windowOpensAt: Date;
  allowance: number;
  mailboxes: ReadonlyMap<string, M>;
  now: Date;
  retryAt: Date;
}): SendDecision<M> {
  const { e, campaign, now } = input;
  if (campaign?.status !== 'ACTIVE') return { postpone: now };
  if (input.leadEmail !== e.email || input.suppressed) return { stop: true };
  if (input.windowOpensAt > now) return { postpone: input.windowOpensAt };
  if (!(input.allowance > 0)) return { postpone: input.retryAt };
  const mailbox = pickMailbox(e, campaign, input.mailboxes, now, input.retryAt);
  return mailbox instanceof Date ? { postpone: mailbox } : { send: mailbox };
}

/**
 * A step that already has a mail (found when recording was refused): a mail still being sent by another process
 * is waited for until its lease ends; a refused one stops the enrollment; otherwise the enrollment moves on from
 * that mail, and a PENDING one past its lease (its answer lost) becomes UNCONFIRMED. None is sent again.
 */
export function afterExistingMail(
  existing: { status: string; createdAt: Date } | undefined,
  now: Date,
  leaseMs: number,
  retryAt: Date,
): { postpone: Date } | { stop: true } | { advance: true; unconfirmed: boolean } {
  if (!existing) return { postpone: retryAt };
  if (existing.status === 'FAILED') return { stop: true };
  const leaseEnds = existing.createdAt.getTime() + leaseMs;
  if (existing.status === 'PENDING' && now.getTime() < leaseEnds) return { postpone: new Date(leaseEnds) };
  return { advance: true, unconfirmed: existing.status === 'PENDING' };
}

// ---- What stops a sequence

/**
 * What an SMTP failure does to the enrollment: a refused mail (5xx) is FAILED and stops it; a 4xx or an unreachable
 * server is tried again later; a lost answer (the mail may have gone out) is UNCONFIRMED and the sequence moves on.
 */
export function afterSendFailure(kind: 'rejected' | 'retry' | 'unknown'): 'stop' | 'retry' | 'move_on' {
  return kind === 'rejected' ? 'stop' : kind === 'retry' ? 'retry' : 'move_on';
}

/**
 * Whether an inbound mail stops the enrollment it answers: a reply does, unless its campaign is set not to
 * (stop-on-reply, the default when the campaign is not known); an automatic reply never does. (A hard bounce stops
 * every active sequence of the address: email verification asks outreach's `stopEnrollmentsOf`.)
 */
export const replyStops = (kind: 'reply' | 'auto_reply', campaign: { stopOnReply: boolean } | undefined): boolean =>
  kind === 'reply' && (campaign?.stopOnReply ?? true);
