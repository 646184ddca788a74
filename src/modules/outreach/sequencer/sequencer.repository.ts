import { and, eq, inArray, sql } from 'drizzle-orm';
import { inUuids } from '../../../db/array-literal.ts';
import { type Db, queryRows, type Tx } from '../../../db/client.ts';
import { type EnrollmentStatus, outreachEnrollments, outreachMessages } from '../../../db/schema/index.ts';
import { type MessageRow, messagesRepository } from '../messages/messages.repository.ts';

export interface DueEnrollment {
  id: string;
  userId: string;
  campaignId: string;
  leadId: string;
  email: string;
  nextStep: number;
  mailboxId: string | null;
}

export interface EnrollmentMove {
  id: string;
  nextStep: number;
  nextSendAt: Date | null;
  status: EnrollmentStatus;
  mailboxId: string | null;
}

const uuids = (ids: string[]) => `{${ids.join(',')}}`;

/**
 * The sequencer's reads and writes (docs/outreach.md "Outreach", Sequencer): claims, enrollment moves, the run
 * lease; its mail records through the messages repository, the only writer of `outreach_messages`.
 */
export function sequencerRepository(db: Db | Tx) {
  const messages = messagesRepository(db);
  return {
    insertIntents: messages.insertIntents,
    setMessages: messages.setMessages,
    confirmLost: messages.confirmLost,
    deleteMessages: messages.deleteMessages,
    confirmStaleOneOffs: messages.confirmStaleOneOffs,
    /**
     * Takes up to `limit` due enrollments of active campaigns, oldest due first, through the partial due index
     * (its cost follows the due ones, not the enrolled ones), and leases them: their due time moves to
     * `leaseUntil`, so another process does not take them while this one works; each outcome sets it again.
     */
    async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<DueEnrollment[]> {
      return queryRows<DueEnrollment>(
        db,
        sql`WITH due AS (
              SELECT e.id FROM outreach_enrollments e
              JOIN outreach_campaigns c ON c.id = e.campaign_id AND c.status = 'ACTIVE'
              WHERE e.status = 'ACTIVE' AND e.next_send_at IS NOT NULL AND e.next_send_at <= ${now.toISOString()}
              ORDER BY e.next_send_at
              LIMIT ${limit}
              FOR UPDATE OF e SKIP LOCKED
            )
            UPDATE outreach_enrollments e SET next_send_at = ${leaseUntil.toISOString()}
            FROM due WHERE e.id = due.id
            RETURNING e.id, e.user_id AS "userId", e.campaign_id AS "campaignId", e.lead_id AS "leadId", e.email,
                      e.next_step AS "nextStep", e.mailbox_id AS "mailboxId"`,
      );
    },

    /**
     * Takes claims again for a new lease: only those still held under `heldUntil` (a claim another process took over
     * since, or whose enrollment changed, is left alone). Answers the ids held now.
     */
    async renewClaims(ids: string[], heldUntil: Date, leaseUntil: Date): Promise<Set<string>> {
      if (!ids.length) return new Set();
      const rows = await queryRows<{ id: string }>(
        db,
        sql`UPDATE outreach_enrollments SET next_send_at = ${leaseUntil.toISOString()}
            WHERE ${inUuids(sql`id`, ids)} AND status = 'ACTIVE' AND next_send_at = ${heldUntil.toISOString()}
            RETURNING id`,
      );
      return new Set(rows.map((r) => r.id));
    },

    /** Today's outbound mails per mailbox and campaign, and each mailbox's latest (limits and gaps). */
    async sendsSince(mailboxIds: string[], since: Date) {
      if (!mailboxIds.length) return [];
      return queryRows<{ mailboxId: string; campaignId: string | null; n: number; last: Date | string }>(
        db,
        sql`SELECT mailbox_id AS "mailboxId", campaign_id AS "campaignId", count(*)::int AS n, max(created_at) AS last
            FROM outreach_messages
            WHERE mailbox_id = ANY(${uuids(mailboxIds)}::uuid[]) AND direction = 'outbound' AND status <> 'FAILED'
              AND created_at >= ${since.toISOString()}::timestamptz
            GROUP BY mailbox_id, campaign_id`,
      );
    },

    /** The mails already sent to these enrollments, oldest first (threading: References, the first subject). */
    threadsOf(enrollmentIds: string[]): Promise<MessageRow[]> {
      if (!enrollmentIds.length) return Promise.resolve([]);
      return db
        .select()
        .from(outreachMessages)
        .where(
          and(
            inUuids(outreachMessages.enrollmentId, enrollmentIds),
            eq(outreachMessages.direction, 'outbound'),
            inArray(outreachMessages.status, ['SENT', 'UNCONFIRMED']),
          ),
        )
        .orderBy(outreachMessages.step);
    },

    async intentOf(enrollmentId: string, step: number): Promise<MessageRow | undefined> {
      const [row] = await db
        .select()
        .from(outreachMessages)
        .where(
          and(
            eq(outreachMessages.enrollmentId, enrollmentId),
            eq(outreachMessages.step, step),
            eq(outreachMessages.direction, 'outbound'),
          ),
        );
      return row;
    },

    /**
     * Moves enrollments in one statement. A lead that replied, bounced or unsubscribed meanwhile keeps that state
     * (only ACTIVE enrollments change state or get a new due time).
     */
    async moveEnrollments(moves: EnrollmentMove[], now: Date): Promise<void> {
      if (!moves.length) return;
      await db.execute(
        sql`UPDATE outreach_enrollments e SET
              next_step = GREATEST(e.next_step, v.next_step),
              mailbox_id = coalesce(e.mailbox_id, v.mailbox_id),
              status = CASE WHEN e.status = 'ACTIVE' THEN v.status ELSE e.status END,
              next_send_at = CASE WHEN e.status = 'ACTIVE' AND v.status = 'ACTIVE' THEN v.next_send_at END,
              updated_at = ${now.toISOString()}
            FROM unnest(${uuids(moves.map((m) => m.id))}::uuid[], ${`{${moves.map((m) => m.nextStep).join(',')}}`}::int[],
                        ${`{${moves.map((m) => (m.nextSendAt ? `"${m.nextSendAt.toISOString()}"` : 'NULL')).join(',')}}`}::timestamptz[],
                        ${`{${moves.map((m) => m.status).join(',')}}`}::text[],
                        ${`{${moves.map((m) => m.mailboxId ?? 'NULL').join(',')}}`}::uuid[])
              AS v(id, next_step, next_send_at, status, mailbox_id)
            WHERE e.id = v.id AND e.next_step < v.next_step`,
      );
    },

    /**
     * Due-time changes only (outside the window, limits reached, a gap, a lease to wait out), each for the step it
     * was claimed at: a claim that outlived its lease cannot move a step another process has sent since.
     */
    async postpone(items: Array<{ id: string; step: number; at: Date }>): Promise<void> {
      if (!items.length) return;
      await db.execute(
        sql`UPDATE outreach_enrollments e SET next_send_at = v.at
            FROM unnest(${uuids(items.map((i) => i.id))}::uuid[], ${`{${items.map((i) => i.step).join(',')}}`}::int[],
                        ${`{${items.map((i) => `"${i.at.toISOString()}"`).join(',')}}`}::timestamptz[]) AS v(id, step, at)
            WHERE e.id = v.id AND e.status = 'ACTIVE' AND e.next_step = v.step`,
      );
    },

    async stopEnrollments(ids: string[], status: EnrollmentStatus, now: Date): Promise<void> {
      if (!ids.length) return;
      await db
        .update(outreachEnrollments)
        .set({ status, nextSendAt: null, updatedAt: now })
        .where(and(inUuids(outreachEnrollments.id, ids), eq(outreachEnrollments.status, 'ACTIVE')));
    },

    /** Takes (or renews) the sequencer's run lease; false while another process holds it. */
    async takeRunLease(holder: string, now: Date, until: Date): Promise<boolean> {
      const rows = await queryRows<{ holder: string }>(
        db,
        sql`INSERT INTO outreach_sequencer_lease (name, holder, lease_until)
            VALUES ('sequencer', ${holder}, ${until.toISOString()})
            ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
            WHERE outreach_sequencer_lease.holder = excluded.holder
               OR outreach_sequencer_lease.lease_until <= ${now.toISOString()}
            RETURNING holder`,
      );
      return rows.length > 0;
    },

    async releaseRunLease(holder: string): Promise<void> {
      await db.execute(
        sql`UPDATE outreach_sequencer_lease SET lease_until = '-infinity' WHERE name = 'sequencer' AND holder = ${holder}`,
      );
    },
  };
}
