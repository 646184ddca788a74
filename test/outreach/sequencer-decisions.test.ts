// The sequencer's decisions alone (src/modules/outreach/sequencer/sequencer.decisions.ts): no database, no clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  afterExistingMail,
  afterSendFailure,
  allowanceOf,
  decideSend,
  gapUntil,
  inWindow,
  type MailboxSlot,
  nextStepMove,
  nextWindowOpening,
  pickMailbox,
  replyStops,
  startOfNextUtcDay,
} from '../../src/modules/outreach/sequencer/sequencer.decisions.ts';

const at = (iso: string) => new Date(iso);
// Monday to Friday, 9 to 17, in Berlin (UTC+1 in January).
const window = { days: [1, 2, 3, 4, 5], startHour: 9, endHour: 17, timezone: 'Europe/Berlin' };
const campaign = { id: 'c1', status: 'ACTIVE', mailboxIds: ['m1', 'm2'], dailyLimit: 50, window };

function slot(id: string, over: Partial<MailboxSlot> = {}): MailboxSlot {
  return { row: { id, dailyLimit: 100 }, sentToday: 0, byCampaign: new Map(), freeAt: 0, ...over };
}

test('the window: open inside the local days and hours, the next opening otherwise', () => {
  // Monday 2026-01-05 10:00 in Berlin is 09:00 UTC.
  assert.equal(inWindow(at('2026-01-05T09:00:00Z'), window), true);
  assert.equal(inWindow(at('2026-01-05T07:59:00Z'), window), false, '08:59 local');
  assert.equal(inWindow(at('2026-01-05T16:00:00Z'), window), false, '17:00 local is past the end');
  const inside = at('2026-01-05T12:00:00Z');
  assert.equal(nextWindowOpening(inside, window), inside);
  // Friday 17:30 local: the next opening is Monday 09:00 local (08:00 UTC).
  assert.deepEqual(nextWindowOpening(at('2026-01-09T16:30:00Z'), window), at('2026-01-12T08:00:00Z'));
  // A half-hour zone opens on the half hour.
  const kolkata = { days: [1, 2, 3, 4, 5, 6, 7], startHour: 9, endHour: 17, timezone: 'Asia/Kolkata' };
  assert.deepEqual(nextWindowOpening(at('2026-01-05T00:00:00Z'), kolkata), at('2026-01-05T03:30:00Z'));
});

test('the gap between steps: the next step after its delay, COMPLETED after the last', () => {
  const steps = [{ delayDays: 0 }, { delayDays: 3 }, { delayDays: 2 }];
  const sentAt = at('2026-01-05T10:00:00Z');
  assert.deepEqual(nextStepMove({ id: 'e', nextStep: 0 }, steps, 'm1', sentAt), {
    id: 'e',
    nextStep: 1,
    nextSendAt: at('2026-01-08T10:00:00Z'),
    status: 'ACTIVE',
    mailboxId: 'm1',
  });
  assert.deepEqual(nextStepMove({ id: 'e', nextStep: 2 }, steps, null, sentAt), {
    id: 'e',
    nextStep: 3,
    nextSendAt: null,
    status: 'COMPLETED',
    mailboxId: null,
  });
});

test('the gap between mails of a mailbox: within [min, max] seconds, both ends reachable', () => {
  const now = at('2026-01-05T10:00:00Z');
  const gaps = { minGapSeconds: 60, maxGapSeconds: 120 };
  assert.equal(
    gapUntil(now, gaps, () => 0),
    now.getTime() + 60_000,
  );
  assert.equal(
    gapUntil(now, gaps, () => 0.999999),
    now.getTime() + 120_000,
  );
  assert.equal(
    gapUntil(now, { minGapSeconds: 0, maxGapSeconds: 0 }, () => 0.5),
    now.getTime(),
  );
});

test('the allowance: the balance in mails less what this run booked and has not charged yet', () => {
  assert.equal(allowanceOf(10, 0, 0), 10);
  assert.equal(allowanceOf(10, 4, 4), 10, 'charges committed before the balance was read are in it already');
  assert.equal(allowanceOf(10, 4, 1), 7);
  assert.equal(allowanceOf(Number.POSITIVE_INFINITY, 1000, 0), Number.POSITIVE_INFINITY, 'credits off');
});

test('the mailbox: the least used ready one; limits move it to the next window, gaps to the first free one', () => {
  const now = at('2026-01-05T10:00:00Z');
  const retryAt = at('2026-01-05T10:15:00Z');
  const e = { mailboxId: null };
  const boxes = new Map([
    ['m1', slot('m1', { sentToday: 5 })],
    ['m2', slot('m2', { sentToday: 2 })],
  ]);
  assert.equal(pickMailbox(e, campaign, boxes, now, retryAt), boxes.get('m2'));
  // An enrollment keeps the mailbox it started with.
  assert.equal(pickMailbox({ mailboxId: 'm1' }, campaign, boxes, now, retryAt), boxes.get('m1'));
  // Both in their gap: the earliest free time.
  const busy = new Map([
    ['m1', slot('m1', { freeAt: now.getTime() + 90_000 })],
    ['m2', slot('m2', { freeAt: now.getTime() + 30_000 })],
  ]);
  assert.deepEqual(pickMailbox(e, campaign, busy, now, retryAt), new Date(now.getTime() + 30_000));
  // Every mailbox at its own limit, or at the campaign's: tomorrow's window.
  const full = new Map([
    ['m1', slot('m1', { sentToday: 100 })],
    ['m2', slot('m2', { byCampaign: new Map([['c1', 50]]) })],
  ]);
  const tomorrow = nextWindowOpening(startOfNextUtcDay(now), window);
  assert.deepEqual(pickMailbox(e, campaign, full, now, retryAt), tomorrow);
  assert.deepEqual(tomorrow, at('2026-01-06T08:00:00Z'));
  // None reachable (resting after a refused session, or unknown): try again later.
  const resting = new Map([['m1', slot('m1', { freeAt: Number.POSITIVE_INFINITY })]]);
  assert.equal(pickMailbox(e, campaign, resting, now, retryAt), retryAt);
});

test('what is due: paused campaigns wait, changed or suppressed addresses stop, then window, allowance, mailbox', () => {
  const now = at('2026-01-05T10:00:00Z');
  const retryAt = at('2026-01-05T10:15:00Z');
  const mailboxes = new Map([['m1', slot('m1')]]);
  const base = {
    e: { email: 'lead@example.com', mailboxId: null },
    campaign,
    leadEmail: 'lead@example.com',
    suppressed: false,
    windowOpensAt: now,
    allowance: 1,
    mailboxes,
    now,
    retryAt,
  };
  assert.deepEqual(decideSend(base), { send: mailboxes.get('m1') });
  assert.deepEqual(decideSend({ ...base, campaign: { ...campaign, status: 'PAUSED' } }), { postpone: now });
  assert.deepEqual(decideSend({ ...base, campaign: undefined }), { postpone: now });
  assert.deepEqual(decideSend({ ...base, leadEmail: 'other@example.com' }), { stop: true });
  assert.deepEqual(decideSend({ ...base, leadEmail: undefined }), { stop: true }, 'the lead is gone');
  assert.deepEqual(decideSend({ ...base, suppressed: true }), { stop: true });
  const opens = at('2026-01-06T08:00:00Z');
  assert.deepEqual(decideSend({ ...base, windowOpensAt: opens }), { postpone: opens });
  assert.deepEqual(decideSend({ ...base, allowance: 0 }), { postpone: retryAt }, 'the balance pays for no more');
  // A stop outranks a closed window: a suppressed address is not kept for later.
  assert.deepEqual(decideSend({ ...base, suppressed: true, windowOpensAt: opens }), { stop: true });
});

test('a step that has a mail already: wait for its lease, stop after a refusal, otherwise move on', () => {
  const now = at('2026-01-05T10:00:00Z');
  const retryAt = at('2026-01-05T10:15:00Z');
  const lease = 600_000;
  assert.deepEqual(afterExistingMail(undefined, now, lease, retryAt), { postpone: retryAt });
  assert.deepEqual(afterExistingMail({ status: 'FAILED', createdAt: now }, now, lease, retryAt), { stop: true });
  const recent = new Date(now.getTime() - 60_000);
  assert.deepEqual(afterExistingMail({ status: 'PENDING', createdAt: recent }, now, lease, retryAt), {
    postpone: new Date(recent.getTime() + lease),
  });
  const old = new Date(now.getTime() - lease);
  assert.deepEqual(afterExistingMail({ status: 'PENDING', createdAt: old }, now, lease, retryAt), {
    advance: true,
    unconfirmed: true,
  });
  assert.deepEqual(afterExistingMail({ status: 'SENT', createdAt: recent }, now, lease, retryAt), {
    advance: true,
    unconfirmed: false,
  });
});

test('what stops a sequence: a refused mail and a reply (unless the campaign says not); never an auto-reply', () => {
  assert.equal(afterSendFailure('rejected'), 'stop');
  assert.equal(afterSendFailure('retry'), 'retry');
  assert.equal(afterSendFailure('unknown'), 'move_on');
  assert.equal(replyStops('reply', { stopOnReply: true }), true);
  assert.equal(replyStops('reply', { stopOnReply: false }), false);
  assert.equal(replyStops('reply', undefined), true, 'the default when the campaign is not known');
  assert.equal(replyStops('auto_reply', { stopOnReply: true }), false);
});
