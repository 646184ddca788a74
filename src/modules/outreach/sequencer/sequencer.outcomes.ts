import type { Db, Tx } from '../../../db/client.ts';
import type { AppDeps } from '../../../deps.ts';
import type { Credits } from '../../../shared/credits.ts';
import { moveLeadsForOutreach } from '../../leads/index.ts';
import { type EnrollmentMove, sequencerRepository } from './sequencer.repository.ts';

/** Sends whose outcome is written in one transaction. */
const OUTCOME_CHUNK = 500;

/** What one batch of the sequencer decided (docs/outreach.md "Outreach", Sequencer); written after it sends. */
export interface BatchOutcomes {
  /** Mails the server accepted (a one-off mail has no enrollment). */
  sent: Array<{ id: string; userId: string; leadId: string | null; enrollmentId: string | null }>;
  /** Enrollments moved to their next step (sent, or answered before) or COMPLETED. */
  moves: EnrollmentMove[];
  /** Due-time changes, each for the step it was claimed at. */
  postpones: Array<{ id: string; step: number; at: Date }>;
  /** Enrollments that end here (the address changed or was suppressed, the server refused the recipient). */
  stops: string[];
  /** Mails the server refused (5xx to RCPT TO or DATA). */
  failed: Array<{ id: string; userId: string; error: string }>;
  /** Intents of mails that did not go out and will be tried again (4xx, the server could not be reached). */
  retried: Array<{ id: string; userId: string }>;
  /** Mails whose answer was lost: never sent again (a one-off mail keeps its error). */
  unconfirmed: Array<{ id: string; error?: string }>;
}

export const emptyOutcomes = (): BatchOutcomes => ({
  sent: [],
  moves: [],
  postpones: [],
  stops: [],
  failed: [],
  retried: [],
  unconfirmed: [],
});

/** Gives back the charge of mails that certainly did not go out (a `refund` row of `emails_sent`). */
export async function refundMails(credits: Credits, tx: Db | Tx, userId: string, mails: number, why: string) {
  await credits.giveBack(tx, userId, 'emails_sent', mails, `outreach mail not sent (${why}): charge given back`);
}

/**
 * Writes a batch's outcomes in transactions of OUTCOME_CHUNK sends: mail states, enrollment moves, leads
 * CONTACTED; everything that was not a plain send goes with the first, with the refunds of the mails that did not
 * go out (every mail was charged when it was recorded). `refunded` is told after that commit how many mails of which
 * user were given back.
 */
export async function writeOutcomes(
  deps: Pick<AppDeps, 'db' | 'credits'>,
  outcomes: BatchOutcomes,
  now: Date,
  refunded: (userId: string, mails: number) => void,
  refundReason = 'refused or not handed over',
): Promise<void> {
  const { sent, moves } = outcomes;
  const moveOf = new Map(moves.map((m) => [m.id, m]));
  const sentIds = new Set(sent.flatMap((s) => s.enrollmentId ?? []));
  const notSent = new Map<string, number>();
  for (const m of [...outcomes.failed, ...outcomes.retried]) notSent.set(m.userId, (notSent.get(m.userId) ?? 0) + 1);
  for (let i = 0; i < Math.max(sent.length, 1); i += OUTCOME_CHUNK) {
    const chunk = sent.slice(i, i + OUTCOME_CHUNK);
    const byUser = new Map<string, string[]>();
    for (const s of chunk) if (s.leadId) byUser.set(s.userId, [...(byUser.get(s.userId) ?? []), s.leadId]);
    await deps.db.transaction(async (tx) => {
      const repo = sequencerRepository(tx);
      await repo.setMessages(
        chunk.map((s) => s.id),
        { status: 'SENT', sentAt: now, updatedAt: now },
      );
      const chunkMoves = chunk.flatMap((s) => (s.enrollmentId && moveOf.get(s.enrollmentId)) || []);
      if (i === 0) {
        chunkMoves.push(...moves.filter((m) => !sentIds.has(m.id)));
        await repo.confirmLost(outcomes.unconfirmed, now);
        for (const f of outcomes.failed)
          await repo.setMessages([f.id], { status: 'FAILED', error: f.error, updatedAt: now });
        await repo.deleteMessages(outcomes.retried.map((r) => r.id));
        await repo.stopEnrollments(outcomes.stops, 'STOPPED', now);
        await repo.postpone(outcomes.postpones);
        // Users in one order in every transaction (two writers never wait on each other's balance rows in a cycle).
        for (const userId of [...notSent.keys()].sort())
          await refundMails(deps.credits, tx, userId, notSent.get(userId)!, refundReason);
      }
      await repo.moveEnrollments(chunkMoves, now);
      for (const userId of [...byUser.keys()].sort())
        await moveLeadsForOutreach(tx, userId, byUser.get(userId)!, 'CONTACTED', now);
    });
    if (i === 0) for (const [userId, mails] of notSent) refunded(userId, mails);
  }
}
