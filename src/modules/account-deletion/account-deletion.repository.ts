import { and, asc, desc, eq, gt, lte, or, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import { deletionRequests, users } from '../../db/schema/index.ts';
import { lockAccountRollups } from '../accounts/index.ts';
import { lockMembershipsOf, orgsBlockingDeletion, orgsDeletedWith } from '../organizations/index.ts';

export type DeletionRequestRow = typeof deletionRequests.$inferSelect;

/** A request still in force: scheduled, or requested with an unexpired token. */
const pending = (now: Date) =>
  or(
    eq(deletionRequests.status, 'scheduled'),
    and(eq(deletionRequests.status, 'requested'), gt(deletionRequests.tokenExpiresAt, now)),
  );

/** What cancel may still stop: a scheduled deletion within its grace period, or an open request. */
const cancellable = (now: Date) =>
  or(
    and(eq(deletionRequests.status, 'scheduled'), gt(deletionRequests.scheduledAt, now)),
    and(eq(deletionRequests.status, 'requested'), gt(deletionRequests.tokenExpiresAt, now)),
  );

export function deletionRepository(db: Db) {
  return {
    /**
     * Inserts a request unless one was accepted since `since`, under a per-user advisory lock so
     * concurrent requests cannot both pass. `blocked` when a deletion is already scheduled.
     */
    async createWithinLimit(input: {
      userId: string;
      tokenHash: string;
      now: Date;
      tokenExpiresAt: Date;
      since: Date;
      gracePeriodDays: number;
    }) {
      return db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`deletion:${input.userId}`}))`);
        const [scheduled] = await tx
          .select({ id: deletionRequests.id })
          .from(deletionRequests)
          .where(and(eq(deletionRequests.userId, input.userId), eq(deletionRequests.status, 'scheduled')))
          .limit(1);
        if (scheduled) return { outcome: 'scheduled' as const };
        const [recent] = await queryRows<{ oldest: Date | string | null }>(
          tx,
          sql`
          SELECT min(created_at) AS oldest FROM ${deletionRequests}
          WHERE user_id = ${input.userId} AND created_at > ${input.since.toISOString()}`,
        );
        if (recent?.oldest) return { outcome: 'limited' as const, oldest: new Date(recent.oldest) };
        // A new request supersedes an older unconfirmed one: only the newest token can confirm.
        await tx
          .update(deletionRequests)
          .set({ status: 'cancelled', cancelledAt: input.now })
          .where(and(eq(deletionRequests.userId, input.userId), eq(deletionRequests.status, 'requested')));
        const [row] = await tx
          .insert(deletionRequests)
          .values({
            userId: input.userId,
            status: 'requested',
            tokenHash: input.tokenHash,
            tokenExpiresAt: input.tokenExpiresAt,
            gracePeriodDays: input.gracePeriodDays,
            createdAt: input.now,
          })
          .returning();
        return { outcome: 'created' as const, row: row! };
      });
    },
    async remove(id: string) {
      await db.delete(deletionRequests).where(eq(deletionRequests.id, id));
    },
    /** requested → scheduled for the caller's unexpired token; undefined when none matches. */
    async confirm(
      userId: string,
      tokenHash: string,
      now: Date,
      scheduledAt: Date,
    ): Promise<DeletionRequestRow | undefined> {
      const [row] = await db
        .update(deletionRequests)
        .set({ status: 'scheduled', confirmedAt: now, scheduledAt })
        .where(
          and(
            eq(deletionRequests.userId, userId),
            eq(deletionRequests.tokenHash, tokenHash),
            eq(deletionRequests.status, 'requested'),
            gt(deletionRequests.tokenExpiresAt, now),
          ),
        )
        .returning();
      return row;
    },
    async cancelPending(userId: string, now: Date): Promise<number> {
      const rows = await db
        .update(deletionRequests)
        .set({ status: 'cancelled', cancelledAt: now })
        .where(and(eq(deletionRequests.userId, userId), cancellable(now)))
        .returning({ id: deletionRequests.id });
      return rows.length;
    },
    /** The request in force, scheduled ones first. */
    async findPending(userId: string, now: Date): Promise<DeletionRequestRow | undefined> {
      const [row] = await db
        .select()
        .from(deletionRequests)
        .where(and(eq(deletionRequests.userId, userId), pending(now)))
        .orderBy(sql`${deletionRequests.status} = 'scheduled' DESC`, desc(deletionRequests.id))
        .limit(1);
      return row;
    },
    async emailOf(userId: string): Promise<string | undefined> {
      const [row] = await db.select({ email: users.email }).from(users).where(eq(users.id, userId)).limit(1);
      return row?.email ?? undefined;
    },
    /** Users whose scheduled deletion is due. */
    async dueUserIds(now: Date, limit: number): Promise<string[]> {
      const rows = await db
        .selectDistinct({ userId: deletionRequests.userId, scheduledAt: deletionRequests.scheduledAt })
        .from(deletionRequests)
        .where(and(eq(deletionRequests.status, 'scheduled'), lte(deletionRequests.scheduledAt, now)))
        .orderBy(asc(deletionRequests.scheduledAt))
        .limit(limit);
      return [...new Set(rows.map((r) => r.userId))];
    },
    /**
     * Erases one user if their deletion is still scheduled and due (re-checked under a row lock so a
     * concurrent cancel wins or loses cleanly). Deleting the users row cascades to every table with
     * a `user_id` foreign key; any public table with a `user_id` column is then swept as well, so a
     * table added without the cascade cannot keep the user's data. Organizations whose only member they are go
     * with them the same way; while they are the last owner of one with other members nothing is deleted (it
     * stays scheduled, and the next run tries again). Returns the email and the deleted organizations, or undefined.
     */
    async purgeUser(userId: string, now: Date): Promise<{ email: string; orgIds: string[] } | undefined> {
      return db.transaction(async (tx) => {
        const [person] = await tx.select({ email: users.email }).from(users).where(eq(users.id, userId)).limit(1);
        const emailOfDeleted = person?.email;
        const due = await tx
          .select({ id: deletionRequests.id })
          .from(deletionRequests)
          .where(
            and(
              eq(deletionRequests.userId, userId),
              eq(deletionRequests.status, 'scheduled'),
              lte(deletionRequests.scheduledAt, now),
            ),
          )
          .for('update');
        if (!due.length) return undefined;
        // A co-owner stepping down meanwhile waits for this decision (or it waits for theirs).
        await lockMembershipsOf(tx, userId);
        if ((await orgsBlockingDeletion(tx, userId)).length) return undefined;
        const orgIds = await orgsDeletedWith(tx, userId);
        for (const id of [...orgIds, userId]) {
          await lockAccountRollups(tx, id);
          await tx.delete(users).where(eq(users.id, id));
          await sweepUserRows(tx, id);
        }
        return { email: emailOfDeleted ?? '', orgIds };
      });
    },
  };
}

/** Deletes the user's rows from every public table that has a `user_id` column. */
async function sweepUserRows(tx: Tx, userId: string): Promise<void> {
  const tables = await queryRows<{ table_name: string; data_type: string }>(
    tx,
    sql`
    SELECT c.table_name, c.data_type FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = 'public' AND c.column_name = 'user_id' AND t.table_type = 'BASE TABLE'
    ORDER BY c.table_name`,
  );
  for (const t of tables) {
    // uuid columns use their index; a user_id of another type (text, varchar) is compared as text.
    const match = t.data_type === 'uuid' ? sql`user_id = ${userId}::uuid` : sql`user_id::text = ${userId}`;
    await tx.execute(sql`DELETE FROM ${sql.identifier(t.table_name)} WHERE ${match}`);
  }
}
