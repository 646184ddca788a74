import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { arrayLiteral, inUuids } from '../../../db/array-literal.ts';
import { type Db, queryRows, type Tx } from '../../../db/client.ts';
import { outreachMessages } from '../../../db/schema/index.ts';

export type MessageRow = typeof outreachMessages.$inferSelect;
export type MessageInsert = typeof outreachMessages.$inferInsert;

/** A campaign mail's intent; the rest (user, campaign, lead, recipient) comes from its enrollment. */
export interface IntentInsert {
  id: string;
  enrollmentId: string;
  mailboxId: string;
  step: number;
  messageId: string;
  inReplyTo: string | null;
  references: string[];
  threadId: string;
  fromEmail: string;
  subject: string;
  bodyText: string;
  createdAt: Date;
}

/**
 * The only code that writes `outreach_messages`. Exactly once (docs/outreach.md "Exactly once"): an outbound mail is
 * recorded PENDING (`insertIntents`, `insertOneOff`) and committed before it is handed to SMTP or a platform, then
 * marked after: SENT (`setMessages`), FAILED when the server refused it, deleted when it certainly did not go out
 * (`deleteMessages`, its charge given back), or UNCONFIRMED when its answer was lost (`confirmLost`,
 * `confirmStaleOneOffs`): an UNCONFIRMED mail is never sent again. Mail that arrives (replies, a platform's reports)
 * is stored once per Message-ID (`insertIfNew`).
 */
export function messagesRepository(db: Db | Tx) {
  return {
    /**
     * Intents of campaign mails, recorded before the SMTP transaction, in one statement (columns as arrays: its
     * cost does not grow with parameters per row). A mail is recorded only while its enrollment is still ACTIVE at
     * that step and its campaign ACTIVE, so a reply, an unsubscribe, a bounce or a pause that landed after the
     * batch was read stops it here; a step that already has a mail is left out too. Answers the ids recorded.
     */
    async insertIntents(intents: IntentInsert[]): Promise<Set<string>> {
      if (!intents.length) return new Set();
      const col = (pick: (i: IntentInsert) => string | number | null) => arrayLiteral(intents.map(pick));
      const rows = await queryRows<{ id: string }>(
        db,
        sql`INSERT INTO outreach_messages (id, user_id, mailbox_id, campaign_id, enrollment_id, lead_id, step, direction,
              status, message_id, in_reply_to, "references", thread_id, from_email, to_email, subject, body_text,
              created_at, updated_at)
            SELECT v.id, e.user_id, v.mailbox_id, e.campaign_id, e.id, e.lead_id, v.step, 'outbound', 'PENDING',
                   v.message_id, v.in_reply_to, coalesce(string_to_array(v.refs, ' '), '{}'), v.thread_id, v.from_email,
                   e.email, v.subject, v.body_text, v.at, v.at
            FROM unnest(${col((i) => i.id)}::uuid[], ${col((i) => i.enrollmentId)}::uuid[],
                        ${col((i) => i.mailboxId)}::uuid[], ${col((i) => i.step)}::int[],
                        ${col((i) => i.messageId)}::text[], ${col((i) => i.inReplyTo)}::text[],
                        ${col((i) => (i.references.length ? i.references.join(' ') : null))}::text[],
                        ${col((i) => i.threadId)}::text[], ${col((i) => i.fromEmail)}::text[],
                        ${col((i) => i.subject)}::text[], ${col((i) => i.bodyText)}::text[],
                        ${col((i) => i.createdAt.toISOString())}::timestamptz[])
                 AS v(id, enrollment_id, mailbox_id, step, message_id, in_reply_to, refs, thread_id, from_email,
                      subject, body_text, at)
            JOIN outreach_enrollments e ON e.id = v.enrollment_id AND e.status = 'ACTIVE' AND e.next_step = v.step
            JOIN outreach_campaigns c ON c.id = e.campaign_id AND c.status = 'ACTIVE'
            ON CONFLICT DO NOTHING
            RETURNING id`,
      );
      return new Set(rows.map((r) => r.id));
    },

    /** A one-off mail (POST /api/outreach/emails), PENDING until it is marked. */
    async insertOneOff(values: Omit<MessageInsert, 'direction' | 'status'>): Promise<MessageRow> {
      const [row] = await db
        .insert(outreachMessages)
        .values({ ...values, direction: 'outbound', status: 'PENDING' })
        .returning();
      return row!;
    },

    /** A mail that arrived or that a platform reports sent, unless its Message-ID is stored already. */
    async insertIfNew(values: MessageInsert): Promise<MessageRow | undefined> {
      const [row] = await db.insert(outreachMessages).values(values).onConflictDoNothing().returning();
      return row;
    },

    async setMessages(ids: string[], values: Partial<MessageInsert>): Promise<void> {
      if (ids.length) await db.update(outreachMessages).set(values).where(inUuids(outreachMessages.id, ids));
    },

    /** The mail, locked until the transaction ends (a platform's `sent` event may be claiming it). */
    async lock(id: string): Promise<MessageRow | undefined> {
      const [row] = await db.select().from(outreachMessages).where(eq(outreachMessages.id, id)).for('update');
      return row;
    },

    /**
     * Mails whose answer was lost: UNCONFIRMED, never sent again (only from PENDING: a mail marked since stays),
     * with the error when it is known.
     */
    async confirmLost(lost: Array<{ id: string; error?: string }>, now: Date): Promise<void> {
      const plain = lost.filter((l) => l.error === undefined).map((l) => l.id);
      if (plain.length)
        await db
          .update(outreachMessages)
          .set({ status: 'UNCONFIRMED', updatedAt: now })
          .where(and(inUuids(outreachMessages.id, plain), eq(outreachMessages.status, 'PENDING')));
      for (const l of lost.filter((l) => l.error !== undefined))
        await db
          .update(outreachMessages)
          .set({ status: 'UNCONFIRMED', error: l.error })
          .where(and(eq(outreachMessages.id, l.id), eq(outreachMessages.status, 'PENDING')));
    },

    async deleteMessages(ids: string[]): Promise<void> {
      if (ids.length) await db.delete(outreachMessages).where(inUuids(outreachMessages.id, ids));
    },

    /** One-off mails (POST /api/outreach/emails) whose answer was lost: never sent again. */
    async confirmStaleOneOffs(before: Date): Promise<void> {
      await db.execute(
        sql`UPDATE outreach_messages SET status = 'UNCONFIRMED'
            WHERE status = 'PENDING' AND enrollment_id IS NULL AND created_at < ${before.toISOString()}`,
      );
    },

    /** Counts an open of an outbound mail (the first one sets `openedAt`); false when there is no such mail. */
    async countOpen(id: string, at: Date): Promise<boolean> {
      const rows = await db
        .update(outreachMessages)
        .set({
          openedAt: sql`coalesce(${outreachMessages.openedAt}, ${at.toISOString()}::timestamptz)`,
          openCount: sql`${outreachMessages.openCount} + 1`,
        })
        .where(and(eq(outreachMessages.id, id), eq(outreachMessages.direction, 'outbound')))
        .returning({ id: outreachMessages.id });
      return rows.length > 0;
    },

    /**
     * A reply sent through a platform's API that still waits for the platform's id (PENDING, or UNCONFIRMED when
     * its answer was lost): the platform's `sent` event for it takes it and marks it SENT, charged once. Locked, so
     * a reply being marked SENT right now no longer matches, and the insert then finds its id taken.
     */
    async claimWaitingReply(
      mail: { userId: string; campaignId: string; email: string; mailboxId: string | null },
      sent: { messageId: string; externalId: string; at: Date; now: Date },
    ): Promise<boolean> {
      const [waiting] = await db
        .select({ id: outreachMessages.id })
        .from(outreachMessages)
        .where(
          and(
            eq(outreachMessages.userId, mail.userId),
            eq(outreachMessages.campaignId, mail.campaignId),
            eq(outreachMessages.direction, 'outbound'),
            inArray(outreachMessages.status, ['PENDING', 'UNCONFIRMED']),
            isNull(outreachMessages.externalId),
            isNull(outreachMessages.enrollmentId),
            eq(outreachMessages.toEmail, mail.email),
            mail.mailboxId ? eq(outreachMessages.mailboxId, mail.mailboxId) : undefined,
          ),
        )
        .orderBy(asc(outreachMessages.id))
        .limit(1)
        .for('update');
      if (!waiting) return false;
      await db
        .update(outreachMessages)
        .set({
          status: 'SENT',
          messageId: sent.messageId,
          externalId: sent.externalId,
          error: null,
          sentAt: sent.at,
          updatedAt: sent.now,
        })
        .where(eq(outreachMessages.id, waiting.id));
      return true;
    },

    async byId(id: string): Promise<MessageRow | undefined> {
      const [row] = await db.select().from(outreachMessages).where(eq(outreachMessages.id, id));
      return row;
    },

    /** The user's mail with this Message-ID, if any. */
    async byMessageId(userId: string, messageId: string): Promise<MessageRow | undefined> {
      const [row] = await db
        .select()
        .from(outreachMessages)
        .where(and(eq(outreachMessages.userId, userId), eq(outreachMessages.messageId, messageId)));
      return row;
    },
  };
}
