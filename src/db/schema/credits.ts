import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

export const creditTransactionKinds = ['grant', 'purchase', 'usage', 'refund', 'adjustment'] as const;
export type CreditTransactionKind = (typeof creditTransactionKinds)[number];

/** One row per user: the running balance the ledger adds up to; the CHECK keeps it from going negative. */
export const creditBalances = pgTable(
  'credit_balances',
  {
    userId: uuid('user_id')
      .primaryKey()
      .references(() => users.id, { onDelete: 'cascade' }),
    balance: integer('balance').notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [check('credit_balances_not_negative', sql`${t.balance} >= 0`)],
);

/**
 * The append-only ledger (docs/webhooks-and-credits.md "Credits"): every change of a balance, with the balance after it.
 * Rows are never updated (a trigger refuses it); they go only with their user.
 */
export const creditTransactions = pgTable(
  'credit_transactions',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: creditTransactionKinds }).notNull(),
    /** Credits added (positive) or taken (negative). */
    amount: integer('amount').notNull(),
    balanceAfter: integer('balance_after').notNull(),
    /** Usage: the metered feature (`pages`, `email_validations`, `ai_tokens`) and how many of its units. */
    feature: text('feature'),
    units: integer('units'),
    /** What it was for, readable: `job …`, `lead …`, an admin's reason. */
    reason: text('reason'),
    /** Who made it: `system`, `stripe`, or an admin's user id. */
    actor: text('actor'),
    /** A purchase's Checkout Session id: credited once however often it is reported. */
    reference: text('reference'),
    createdAt: createdAt(),
  },
  (t) => [
    index('credit_transactions_user_idx').on(t.userId, t.id),
    index('credit_transactions_usage_idx').on(t.userId, t.kind, t.createdAt),
    uniqueIndex('credit_transactions_reference_key').on(t.kind, t.reference).where(sql`${t.reference} IS NOT NULL`),
  ],
);

/** Checkout Sessions this service created: what each one buys, and whether it was credited. */
export const creditCheckouts = pgTable(
  'credit_checkouts',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** Set once Stripe answered; the Session's metadata carries this row's id (`checkoutId`). */
    sessionId: text('session_id'),
    tierId: text('tier_id').notNull(),
    credits: integer('credits').notNull(),
    /** Price in the currency's minor unit (cents). */
    amount: integer('amount').notNull(),
    currency: text('currency').notNull(),
    status: text('status', { enum: ['open', 'completed'] })
      .notNull()
      .default('open'),
    completedAt: tsColumn('completed_at'),
    /** The Session's PaymentIntent (set on completion): a `charge.refunded` names it. */
    paymentIntentId: text('payment_intent_id'),
    /** What Stripe refunded of `amount` so far (minor units): each refund takes back its share of `credits`. */
    refundedAmount: integer('refunded_amount').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('credit_checkouts_session_key').on(t.sessionId),
    index('credit_checkouts_user_idx').on(t.userId),
    uniqueIndex('credit_checkouts_payment_intent_key').on(t.paymentIntentId),
  ],
);
