import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../../db/client.ts';
import { type EnrollmentStatus, outreachEnrollments } from '../../../db/schema/index.ts';

/**
 * Stops every active sequence of these addresses (normalized) in the caller's transaction: what a hard bounce
 * (BOUNCED) asks of outreach, wherever the bounce was reported (docs/outreach.md "Outreach"). Answers the leads concerned.
 */
export async function stopEnrollmentsOf(
  tx: Db | Tx,
  userId: string,
  emails: string[],
  status: Extract<EnrollmentStatus, 'BOUNCED' | 'UNSUBSCRIBED' | 'REPLIED' | 'STOPPED'>,
  now: Date,
): Promise<string[]> {
  if (!emails.length) return [];
  const rows = await tx
    .update(outreachEnrollments)
    .set({ status, nextSendAt: null, updatedAt: now })
    .where(
      and(
        eq(outreachEnrollments.userId, userId),
        inArray(outreachEnrollments.email, emails),
        eq(outreachEnrollments.status, 'ACTIVE'),
      ),
    )
    .returning({ leadId: outreachEnrollments.leadId });
  return rows.map((r) => r.leadId);
}

/** Stops these enrollments (when still active) in the caller's transaction. */
export async function stopEnrollmentsById(
  tx: Db | Tx,
  ids: string[],
  status: Extract<EnrollmentStatus, 'BOUNCED' | 'UNSUBSCRIBED' | 'REPLIED' | 'STOPPED'>,
  now: Date,
): Promise<void> {
  if (!ids.length) return;
  await tx
    .update(outreachEnrollments)
    .set({ status, nextSendAt: null, updatedAt: now })
    .where(and(inArray(outreachEnrollments.id, ids), eq(outreachEnrollments.status, 'ACTIVE')));
}

/** A platform reported the enrollment's mail of `step` sent: its next step is at least the one after. */
export async function advanceEnrollmentPast(tx: Db | Tx, id: string, step: number, now: Date): Promise<void> {
  await tx
    .update(outreachEnrollments)
    .set({ nextStep: sql`greatest(${outreachEnrollments.nextStep}, ${step + 1})`, updatedAt: now })
    .where(eq(outreachEnrollments.id, id));
}
