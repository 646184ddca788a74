import { and, desc, eq, gte, isNotNull, lt, or, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import { creditBalances, creditCheckouts, creditTransactions } from '../../db/schema/index.ts';
import { newId } from '../../shared/ids.ts';

export type CreditTransactionRow = typeof creditTransactions.$inferSelect;
export type CreditCheckoutRow = typeof creditCheckouts.$inferSelect;
/** A checkout a refund moved, with what had been refunded before it. */
export type RefundedCheckout = Pick<CreditCheckoutRow, 'id' | 'userId' | 'credits' | 'amount' | 'currency'> & {
  refundedBefore: number;
};

/** The only code that writes the credit tables (balances, ledger, checkouts). */
export function creditsRepository(db: Db | Tx) {
  return {
    /** The balance, row-locked until the caller's transaction ends; undefined when the user has no account yet. */
    async lockBalance(userId: string): Promise<number | undefined> {
      const [row] = await db
        .select({ balance: creditBalances.balance })
        .from(creditBalances)
        .where(eq(creditBalances.userId, userId))
        .for('update');
      return row?.balance;
    },
    async readBalance(userId: string): Promise<number | undefined> {
      const [row] = await db
        .select({ balance: creditBalances.balance })
        .from(creditBalances)
        .where(eq(creditBalances.userId, userId));
      return row?.balance;
    },
    /** Opens the account with `balance`; false when it exists already (a concurrent opener won). */
    async openAccount(userId: string, balance: number, now: Date): Promise<boolean> {
      const rows = await db
        .insert(creditBalances)
        .values({ userId, balance, updatedAt: now })
        .onConflictDoNothing()
        .returning({ userId: creditBalances.userId });
      return rows.length > 0;
    },
    /**
     * Sets the (locked) balance and appends its ledger row in one statement: metered work charges on hot paths
     * (a chunk of outreach mail), where each round trip counts.
     */
    async setBalanceAndAppend(
      values: typeof creditTransactions.$inferInsert & { balanceAfter: number },
    ): Promise<void> {
      const now = values.createdAt ?? new Date();
      await db.execute(sql`WITH b AS (
          UPDATE credit_balances SET balance = ${values.balanceAfter}, updated_at = ${now}
          WHERE user_id = ${values.userId})
        INSERT INTO credit_transactions
          (id, user_id, kind, amount, balance_after, feature, units, reason, actor, reference, created_at)
        VALUES (${values.id ?? newId()}, ${values.userId}, ${values.kind}, ${values.amount}, ${values.balanceAfter},
          ${values.feature ?? null}, ${values.units ?? null}, ${values.reason ?? null}, ${values.actor ?? null},
          ${values.reference ?? null}, ${now})`);
    },
    async append(values: typeof creditTransactions.$inferInsert): Promise<CreditTransactionRow> {
      const [row] = await db.insert(creditTransactions).values(values).returning();
      return row!;
    },
    /**
     * `setBalanceAndAppend` of a debit as a statement that reads nothing first (a pipelined transaction's: no JavaScript
     * between its statements): the balance row is locked and changed only when it holds `amount` and stays at or above
     * `keepAbove` (0: no floor); one row (`balance`, after) when it did, none otherwise.
     */
    debitIfCovered(
      values: Omit<typeof creditTransactions.$inferInsert, 'balanceAfter' | 'createdAt'> & { createdAt: Date },
      keepAbove: number,
    ) {
      const amount = -values.amount;
      return sql`WITH b AS (
          UPDATE credit_balances SET balance = balance - ${amount}::int, updated_at = ${values.createdAt}
          WHERE user_id = ${values.userId} AND balance >= ${amount}::int
            AND NOT (balance >= ${keepAbove}::int AND balance - ${amount}::int < ${keepAbove}::int)
          RETURNING balance)
        INSERT INTO credit_transactions
          (id, user_id, kind, amount, balance_after, feature, units, reason, actor, reference, created_at)
        SELECT ${values.id ?? newId()}, ${values.userId}, ${values.kind}, ${values.amount}::int, b.balance,
          ${values.feature ?? null}, ${values.units ?? null}::int, ${values.reason ?? null}, ${values.actor ?? null},
          ${values.reference ?? null}, ${values.createdAt}
        FROM b
        RETURNING balance_after AS balance`;
    },
    /** Newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    transactions(userId: string, limit: number, before?: string): Promise<CreditTransactionRow[]> {
      return db
        .select()
        .from(creditTransactions)
        .where(and(eq(creditTransactions.userId, userId), before ? lt(creditTransactions.id, before) : undefined))
        .orderBy(desc(creditTransactions.id))
        .limit(limit + 1);
    },
    /** Credits and units used per metered feature since `since`, less what was given back of each. */
    usageSince(userId: string, since: Date): Promise<Array<{ feature: string; credits: number; units: number }>> {
      return db
        .select({
          feature: sql<string>`coalesce(${creditTransactions.feature}, 'other')`,
          credits: sql<number>`coalesce(-sum(${creditTransactions.amount}), 0)::int`,
          units: sql<number>`coalesce(sum(${creditTransactions.units}), 0)::int`,
        })
        .from(creditTransactions)
        .where(
          and(
            eq(creditTransactions.userId, userId),
            or(
              eq(creditTransactions.kind, 'usage'),
              and(eq(creditTransactions.kind, 'refund'), isNotNull(creditTransactions.feature)),
            ),
            gte(creditTransactions.createdAt, since),
          ),
        )
        .groupBy(sql`1`)
        .orderBy(sql`1`);
    },

    // ---- checkouts ----

    async insertCheckout(values: typeof creditCheckouts.$inferInsert): Promise<CreditCheckoutRow> {
      const [row] = await db.insert(creditCheckouts).values(values).returning();
      return row!;
    },
    async setCheckoutSession(id: string, sessionId: string): Promise<void> {
      await db.update(creditCheckouts).set({ sessionId }).where(eq(creditCheckouts.id, id));
    },
    async deleteCheckout(id: string): Promise<void> {
      await db.delete(creditCheckouts).where(and(eq(creditCheckouts.id, id), eq(creditCheckouts.status, 'open')));
    },
    /** open → completed, once: the row when this call completed it, undefined otherwise (unknown or done). */
    async completeCheckout(
      id: string,
      sessionId: string,
      paymentIntentId: string | null,
      now: Date,
    ): Promise<CreditCheckoutRow | undefined> {
      const [row] = await db
        .update(creditCheckouts)
        .set({ status: 'completed', completedAt: now, sessionId, paymentIntentId })
        .where(and(eq(creditCheckouts.id, id), eq(creditCheckouts.status, 'open')))
        .returning();
      return row;
    },
    /**
     * Records that `refundedAmount` of a completed checkout's payment is refunded so far (it only grows: an older
     * event arriving late changes nothing); the row as it was before, when this call moved it.
     */
    async recordRefund(paymentIntentId: string, refundedAmount: number): Promise<RefundedCheckout | undefined> {
      const [row] = await queryRows<RefundedCheckout>(
        db,
        sql`UPDATE credit_checkouts c SET refunded_amount = ${refundedAmount}
            FROM (SELECT id, refunded_amount FROM credit_checkouts WHERE payment_intent_id = ${paymentIntentId}
                    AND status = 'completed' FOR UPDATE) old
            WHERE c.id = old.id AND old.refunded_amount < ${refundedAmount}
            RETURNING c.id, c.user_id AS "userId", c.credits, c.amount, c.currency,
              old.refunded_amount AS "refundedBefore"`,
      );
      return row;
    },
  };
}
