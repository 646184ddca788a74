import { sql } from 'drizzle-orm';
import type { Config, CreditPrices } from '../../config.ts';
import { type Db, pipelineStep, queryRows, type Tx } from '../../db/client.ts';
import type { CreditTransactionKind } from '../../db/schema/index.ts';
import type { Clock } from '../../shared/clock.ts';
import { AI_TOKENS_PER_PRICE_UNIT, type Credits, type MeteredFeature } from '../../shared/credits.ts';
import { AppError, validationError } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { creditsRepository } from './credits.repository.ts';

/** The implementation of `deps.credits`; its port is src/shared/credits.ts (docs/webhooks-and-credits.md). */
type Conn = Db | Tx;

/** Credits that `units` of `feature` cost. */
export function costOf(prices: CreditPrices, feature: MeteredFeature, units: number): number {
  if (units <= 0) return 0;
  if (feature === 'ai_tokens') return Math.ceil(units / AI_TOKENS_PER_PRICE_UNIT) * prices.ai_tokens;
  return units * prices[feature];
}

export const insufficientCredits = (needed: number, balance: number) =>
  new AppError(
    'INSUFFICIENT_CREDITS',
    `Not enough credits: this needs ${needed}, the balance is ${balance}. Buy more with POST /api/credits/checkout.`,
  );

/** The start-up log line saying whether credits are metered, and why (docs/webhooks-and-credits.md "Credits"). */
export function creditsMode(config: Pick<Config, 'CREDITS_ENABLED' | 'STRIPE_SECRET_KEY'>): string {
  const payments = config.STRIPE_SECRET_KEY !== undefined;
  if (config.CREDITS_ENABLED) {
    return payments
      ? 'credits: metered (payments configured)'
      : 'credits: metered (CREDITS_ENABLED=true; no payment provider, so users cannot buy credits)';
  }
  return payments
    ? 'credits: off (CREDITS_ENABLED=false): nothing is charged or refused'
    : 'credits: off, no payment provider configured: nothing is charged or refused ' +
        '(set STRIPE_SECRET_KEY or CREDITS_ENABLED=true to meter)';
}

/** `emit` is where `credits.low` goes (the event outbox; tests record it). */
export function createCredits(config: Config, clock: Clock, emit: typeof emitEvent = emitEvent): Credits {
  const enabled = config.CREDITS_ENABLED;
  const prices = config.CREDITS_PRICES;
  const threshold = config.CREDITS_LOW_THRESHOLD;

  /** The locked balance, opening the account (with its grant) first when there is none. */
  async function locked(tx: Conn, userId: string): Promise<number> {
    const repo = creditsRepository(tx);
    const current = await repo.lockBalance(userId);
    if (current !== undefined) return current;
    await open(tx, userId);
    return (await repo.lockBalance(userId)) ?? 0;
  }

  async function open(db: Conn, userId: string, grant = config.CREDITS_SIGNUP_GRANT): Promise<void> {
    const now = clock.now();
    await db.transaction(async (tx) => {
      const repo = creditsRepository(tx);
      if (!(await repo.openAccount(userId, grant, now)) || grant === 0) return;
      await repo.append({
        userId,
        kind: 'grant',
        amount: grant,
        balanceAfter: grant,
        reason: 'signup grant',
        actor: 'system',
        createdAt: now,
      });
    });
  }

  async function balance(db: Conn, userId: string): Promise<number> {
    const current = await creditsRepository(db).readBalance(userId);
    if (current !== undefined) return current;
    await open(db, userId);
    return (await creditsRepository(db).readBalance(userId)) ?? 0;
  }

  /** Applies `amount` (either sign) to a locked balance, appends the ledger row, and reports a low crossing. */
  async function apply(
    tx: Conn,
    userId: string,
    before: number,
    row: {
      kind: CreditTransactionKind;
      amount: number;
      feature?: string;
      units?: number;
      reason?: string;
      actor?: string;
      reference?: string;
    },
  ): Promise<number> {
    const after = before + row.amount;
    const now = clock.now();
    const repo = creditsRepository(tx);
    // Read before this change's row exists: was the balance lifted back above the threshold by money?
    const crossing = threshold > 0 && before >= threshold && after < threshold;
    const alert = crossing && (await lowAlertArmed(tx, userId));
    await repo.setBalanceAndAppend({ userId, ...row, balanceAfter: after, createdAt: now });
    if (alert) await emit(tx, userId, 'credits.low', { balance: after, threshold });
    return after;
  }

  /**
   * `credits.low` goes once per crossing: when a change takes the balance from at/above the threshold to below it,
   * and only if money (a grant, a purchase, an admin's credit) lifted it there since it was last below. A giveBack
   * (metered work charged, then not done: a `refund` row naming a feature) never re-arms the alert, so a balance
   * hovering at the threshold while refused mails are charged and given back does not fire it on every cycle.
   */
  async function lowAlertArmed(tx: Conn, userId: string): Promise<boolean> {
    const [row] = await queryRows<{ armed: boolean }>(
      tx,
      sql`WITH last_low AS (
            SELECT id FROM credit_transactions WHERE user_id = ${userId} AND balance_after < ${threshold}
            ORDER BY id DESC LIMIT 1)
          SELECT NOT EXISTS (SELECT 1 FROM last_low) OR EXISTS (
            SELECT 1 FROM credit_transactions t, last_low
            WHERE t.user_id = ${userId} AND t.id > last_low.id AND t.amount > 0
              AND NOT (t.kind = 'refund' AND t.feature IS NOT NULL)) AS armed`,
    );
    return row?.armed === true;
  }

  return {
    enabled,
    prices,
    openAccount: open,

    balance,

    async assert(db, userId, feature, units = 1) {
      if (!enabled) return;
      const needed = costOf(prices, feature, units);
      if (needed === 0) return;
      const current = await balance(db, userId);
      if (current < needed) throw insufficientCredits(needed, current);
    },

    async spend(db, userId, feature, units, options = {}) {
      const cost = costOf(prices, feature, units);
      if (!enabled || cost === 0) return { charged: 0, paidUnits: units, balance: null };
      // A savepoint inside the caller's transaction, or a transaction of its own.
      return db.transaction(async (tx) => {
        const before = await locked(tx, userId);
        let charged = cost;
        let paidUnits = units;
        if (before < cost) {
          if (!options.partial) throw insufficientCredits(cost, before);
          if (feature === 'ai_tokens') {
            charged = before;
            paidUnits = Math.floor((units * before) / cost);
          } else {
            paidUnits = Math.floor(before / prices[feature]);
            charged = paidUnits * prices[feature];
          }
        }
        if (charged === 0) return { charged, paidUnits, balance: before };
        const balance = await apply(tx, userId, before, {
          kind: 'usage',
          amount: -charged,
          feature,
          units: paidUnits,
          reason: options.reason,
          actor: 'system',
        });
        return { charged, paidUnits, balance };
      });
    },

    spendStatement(db, userId, feature, units, options = {}) {
      const cost = costOf(prices, feature, units);
      if (!enabled || cost === 0) return undefined;
      // The cases `spend` reads before it writes (no account yet, a short balance, a low-balance alert) answer no row.
      const debit = creditsRepository(db).debitIfCovered(
        {
          userId,
          kind: 'usage',
          amount: -cost,
          feature,
          units,
          reason: options.reason,
          actor: 'system',
          createdAt: clock.now(),
        },
        threshold,
      );
      return pipelineStep(debit, 'rows');
    },

    async giveBack(db, userId, feature, units, reason) {
      const amount = costOf(prices, feature, units);
      if (!enabled || amount === 0) return;
      await db.transaction(async (tx) => {
        const before = await locked(tx, userId);
        await apply(tx, userId, before, { kind: 'refund', amount, feature, units: -units, reason, actor: 'system' });
      });
    },

    async adjust(db, userId, amount, reason, actor, kind = 'adjustment') {
      if (!Number.isSafeInteger(amount) || amount === 0) throw validationError('amount', 'a non-zero whole number');
      return db.transaction(async (tx) => {
        const before = await locked(tx, userId);
        if (before + amount < 0) {
          throw validationError('amount', `would take the balance below zero (the balance is ${before})`);
        }
        return { balance: await apply(tx, userId, before, { kind, amount, reason, actor }) };
      });
    },

    async takeBack(db, userId, credits, reason, reference) {
      return db.transaction(async (tx) => {
        const before = await locked(tx, userId);
        const taken = Math.min(credits, before);
        if (taken <= 0) return { taken: 0, balance: before };
        const balance = await apply(tx, userId, before, {
          kind: 'refund',
          amount: -taken,
          reason,
          actor: 'stripe',
          reference,
        });
        return { taken, balance };
      });
    },

    async purchase(db, userId, amount, reference) {
      return db.transaction(async (tx) => {
        const before = await locked(tx, userId);
        const balance = await apply(tx, userId, before, {
          kind: 'purchase',
          amount,
          reason: 'credits purchased',
          actor: 'stripe',
          reference,
        });
        return { balance };
      });
    },
  };
}
