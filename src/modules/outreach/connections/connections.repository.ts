import { and, eq, inArray, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../../db/client.ts';
import { newestFirstPage } from '../../../db/keyset.ts';
import { outreachConnections, outreachMailboxes } from '../../../db/schema/index.ts';

export type ConnectionRow = typeof outreachConnections.$inferSelect;
export type MailboxRow = typeof outreachMailboxes.$inferSelect;

/** Connections and their mailboxes (docs/outreach.md "Outreach"). */
export function connectionsRepository(db: Db | Tx) {
  return {
    async insert(
      connection: typeof outreachConnections.$inferInsert,
      mailboxes: Array<Omit<typeof outreachMailboxes.$inferInsert, 'connectionId'>>,
    ): Promise<{ connection: ConnectionRow; mailboxes: MailboxRow[] }> {
      const [row] = await db.insert(outreachConnections).values(connection).returning();
      const boxes = mailboxes.length
        ? await db
            .insert(outreachMailboxes)
            .values(mailboxes.map((m) => ({ ...m, connectionId: row!.id })))
            .returning()
        : [];
      return { connection: row!, mailboxes: boxes };
    },
    list(userId: string, before: string | undefined, limit: number): Promise<ConnectionRow[]> {
      return newestFirstPage(db as Db, outreachConnections, userId, [], limit, before);
    },
    async find(userId: string, id: string): Promise<ConnectionRow | undefined> {
      const [row] = await db
        .select()
        .from(outreachConnections)
        .where(and(eq(outreachConnections.userId, userId), eq(outreachConnections.id, id)));
      return row;
    },
    async remove(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(outreachConnections)
        .where(and(eq(outreachConnections.userId, userId), eq(outreachConnections.id, id)))
        .returning({ id: outreachConnections.id });
      return rows.length > 0;
    },
    mailboxesOf(connectionIds: string[]): Promise<MailboxRow[]> {
      if (!connectionIds.length) return Promise.resolve([]);
      return db
        .select()
        .from(outreachMailboxes)
        .where(inArray(outreachMailboxes.connectionId, connectionIds))
        .orderBy(outreachMailboxes.id);
    },
    listMailboxes(userId: string, connectionId: string | undefined, before: string | undefined, limit: number) {
      return newestFirstPage(
        db as Db,
        outreachMailboxes,
        userId,
        [connectionId ? eq(outreachMailboxes.connectionId, connectionId) : undefined],
        limit,
        before,
      );
    },
    async findMailbox(userId: string, id: string): Promise<MailboxRow | undefined> {
      const [row] = await db
        .select()
        .from(outreachMailboxes)
        .where(and(eq(outreachMailboxes.userId, userId), eq(outreachMailboxes.id, id)));
      return row;
    },
    mailboxesByIds(ids: string[]): Promise<MailboxRow[]> {
      if (!ids.length) return Promise.resolve([]);
      return db.select().from(outreachMailboxes).where(inArray(outreachMailboxes.id, ids));
    },
    /** Outbound mails of each mailbox since `since` (daily limits, `sentToday`). */
    async sentSince(mailboxIds: string[], since: Date): Promise<Map<string, number>> {
      if (!mailboxIds.length) return new Map();
      const rows = await queryRows<{ mailbox_id: string; n: number }>(
        db,
        sql`SELECT mailbox_id, count(*)::int AS n FROM outreach_messages
            WHERE mailbox_id = ANY(${`{${mailboxIds.join(',')}}`}::uuid[]) AND direction = 'outbound'
              AND status <> 'FAILED' AND created_at >= ${since.toISOString()}::timestamptz
            GROUP BY mailbox_id`,
      );
      return new Map(rows.map((r) => [r.mailbox_id, r.n]));
    },
    /** Every mailbox with an IMAP URL (the inbox reader's round). */
    imapMailboxes(): Promise<MailboxRow[]> {
      return db.select().from(outreachMailboxes).where(sql`${outreachMailboxes.imapUrlEncrypted} IS NOT NULL`);
    },
    /**
     * Takes the mailbox's inbox read: its check time becomes `now`, unless it was checked after `checkedBefore`
     * (another process reads it); no `checkedBefore` takes it anyway.
     */
    async claimImapCheck(id: string, now: Date, checkedBefore?: Date): Promise<MailboxRow | undefined> {
      const [row] = await db
        .update(outreachMailboxes)
        .set({ imapCheckedAt: now })
        .where(
          checkedBefore
            ? sql`${outreachMailboxes.id} = ${id} AND (${outreachMailboxes.imapCheckedAt} IS NULL
                OR ${outreachMailboxes.imapCheckedAt} <= ${checkedBefore.toISOString()})`
            : sql`${outreachMailboxes.id} = ${id}`,
        )
        .returning();
      return row;
    },

    async updateMailbox(id: string, values: Partial<typeof outreachMailboxes.$inferInsert>): Promise<void> {
      await db.update(outreachMailboxes).set(values).where(eq(outreachMailboxes.id, id));
    },
  };
}
