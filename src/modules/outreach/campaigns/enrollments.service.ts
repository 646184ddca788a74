import type { Db, Tx } from '../../../db/client.ts';
import type { EnrollmentStatus } from '../../../db/schema/index.ts';
import { normalizeEmail } from '../../../shared/mail/address.ts';
import { stopEnrollmentsOf } from './enrollments.repository.ts';

/**
 * What another module may ask of outreach's sequences (through the face): stop every active sequence of these
 * addresses, in the caller's transaction, with the reason (a hard bounce: BOUNCED). Addresses are matched in
 * their normalized form, the one enrollments store, whatever form the caller holds. Answers the leads concerned.
 */
export function stopSequencesOf(
  tx: Db | Tx,
  userId: string,
  emails: string[],
  status: Extract<EnrollmentStatus, 'BOUNCED' | 'UNSUBSCRIBED' | 'REPLIED' | 'STOPPED'>,
  now: Date,
): Promise<string[]> {
  const normalized = new Set(emails.flatMap((e) => normalizeEmail(e) ?? []));
  return stopEnrollmentsOf(tx, userId, [...normalized], status, now);
}
