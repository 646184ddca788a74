import type Stripe from 'stripe';
import type { CreditTier } from '../../config.ts';
import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { METERED_FEATURES, meteredUnit } from '../../shared/credits.ts';
import { validationError } from '../../shared/errors.ts';
import { newId, storedId } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { type CreditTransactionRow, creditsRepository } from './credits.repository.ts';
import type { BalanceQuery, CheckoutInput } from './credits.schemas.ts';
import { createStripeClient, paymentProviderError, paymentsNotConfigured } from './credits.stripe.ts';

const toTransactionView = (r: CreditTransactionRow) => ({
  id: r.id,
  kind: r.kind,
  amount: r.amount,
  balanceAfter: r.balanceAfter,
  feature: r.feature,
  units: r.units,
  reason: r.reason,
  createdAt: r.createdAt.toISOString(),
});

const tierView = (t: CreditTier) => ({ ...t, name: t.name ?? t.id });

/** The part of a Checkout Session the purchase depends on (as Stripe sends it in events). */
export interface CompletedSession {
  id: string;
  payment_status?: string | null;
  payment_intent?: string | null;
  metadata?: Record<string, string> | null;
}

/** The fields of a Stripe Charge a `charge.refunded` event is read by. */
export interface RefundedCharge {
  id: string;
  payment_intent?: string | null;
  /** What was charged (after discounts and taxes), in the currency's minor unit. */
  amount: number;
  /** All refunded so far, in the currency's minor unit. */
  amount_refunded: number;
}

export type CreditsServiceDeps = Pick<AppDeps, 'db' | 'config' | 'clock' | 'credits' | 'logger'>;

export function createCreditsService(deps: CreditsServiceDeps, options: { stripe?: Stripe } = {}) {
  const repo = creditsRepository(deps.db);
  let stripeClient: Promise<Stripe | undefined> | undefined;
  const stripeOf = () =>
    (stripeClient ??= options.stripe ? Promise.resolve(options.stripe) : createStripeClient(deps.config));

  /** Where Stripe sends the buyer back: the request's URL, else PUBLIC_URL, else a 400 naming the field. */
  function returnUrl(given: string | undefined, field: string, outcome: string): string {
    if (given) return given;
    const base = deps.config.PUBLIC_URL?.replace(/\/+$/, '');
    if (!base) throw validationError(field, 'required: this service has no PUBLIC_URL to return to');
    return `${base}/?checkout=${outcome}`;
  }

  return {
    /** GET /api/credits/balance: the balance, this month's usage by feature and a page of the ledger. */
    async balance(userId: string, query: BalanceQuery) {
      const now = deps.clock.now();
      const since = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
      const balance = await deps.credits.balance(deps.db, userId);
      const [rows, byFeature] = await Promise.all([
        repo.transactions(userId, query.limit, decodeCursor(query.cursor)),
        repo.usageSince(userId, since),
      ]);
      const { items, nextCursor } = pageOf(rows, query.limit);
      return {
        balance,
        enabled: deps.credits.enabled,
        lowThreshold: deps.config.CREDITS_LOW_THRESHOLD,
        usageThisMonth: {
          since: since.toISOString(),
          credits: byFeature.reduce((sum, f) => sum + f.credits, 0),
          byFeature,
        },
        transactions: items.map(toTransactionView),
        nextCursor,
      };
    },

    /** GET /api/credits/pricing: the tiers on sale (CREDITS_TIERS) and what each metered action costs. */
    pricing() {
      return {
        enabled: deps.credits.enabled,
        signupGrant: deps.config.CREDITS_SIGNUP_GRANT,
        tiers: deps.config.CREDITS_TIERS.map(tierView),
        prices: METERED_FEATURES.map((feature) => ({
          feature,
          credits: deps.credits.prices[feature],
          unit: meteredUnit[feature],
        })),
      };
    },

    /**
     * POST /api/credits/checkout: a Stripe Checkout Session for one tier. The checkout is recorded first
     * and its id travels in the Session's metadata, so the webhook finds it however early it arrives.
     */
    async checkout(userId: string, input: CheckoutInput) {
      const tier = deps.config.CREDITS_TIERS.find((t) => t.id === input.tierId);
      if (!tier) {
        const ids = deps.config.CREDITS_TIERS.map((t) => t.id).join(', ');
        throw validationError('tierId', `unknown tier; one of: ${ids}`);
      }
      const successUrl = returnUrl(input.successUrl, 'successUrl', 'success');
      const cancelUrl = returnUrl(input.cancelUrl, 'cancelUrl', 'cancelled');
      const stripe = await stripeOf();
      if (!stripe) throw paymentsNotConfigured('STRIPE_SECRET_KEY');
      const checkoutId = newId();
      await repo.insertCheckout({
        id: checkoutId,
        userId,
        tierId: tier.id,
        credits: tier.credits,
        amount: tier.amount,
        currency: tier.currency,
        createdAt: deps.clock.now(),
      });
      let session: Stripe.Checkout.Session;
      try {
        session = await stripe.checkout.sessions.create({
          mode: 'payment',
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: tier.currency,
                unit_amount: tier.amount,
                product_data: { name: `${tierView(tier).name}: ${tier.credits.toLocaleString('en')} credits` },
              },
            },
          ],
          success_url: successUrl,
          cancel_url: cancelUrl,
          client_reference_id: userId,
          metadata: { checkoutId, userId, tierId: tier.id, credits: String(tier.credits) },
        });
      } catch (error) {
        deps.logger.warn({ err: error, userId, tierId: tier.id }, 'Stripe checkout failed');
        await repo.deleteCheckout(checkoutId).catch(() => {});
        throw paymentProviderError(error);
      }
      if (!session.url) {
        await repo.deleteCheckout(checkoutId).catch(() => {});
        throw paymentProviderError(undefined);
      }
      await repo.setCheckoutSession(checkoutId, session.id);
      return { url: session.url, sessionId: session.id, tier: tierView(tier) };
    },

    /**
     * Credits a paid Checkout Session of ours, once (the checkout goes open → completed in the caller's
     * transaction, and the purchase row is unique per Session). Sessions of others, unpaid ones (an
     * asynchronous payment still pending) and ones already credited are left alone.
     */
    async completeCheckout(tx: Db | Tx, session: CompletedSession) {
      const checkoutId = storedId(session.metadata?.checkoutId);
      const paid = session.payment_status === 'paid' || session.payment_status === 'no_payment_required';
      if (!checkoutId || !paid) return { credited: false as const };
      const checkout = await creditsRepository(tx).completeCheckout(
        checkoutId,
        session.id,
        session.payment_intent ?? null,
        deps.clock.now(),
      );
      if (!checkout) return { credited: false as const };
      const { balance } = await deps.credits.purchase(tx, checkout.userId, checkout.credits, session.id);
      deps.logger.info({ userId: checkout.userId, credits: checkout.credits }, 'credits purchased');
      return { credited: true as const, userId: checkout.userId, credits: checkout.credits, balance };
    },

    /**
     * Takes back the share of a purchase's credits that Stripe refunded (`amount_refunded` is cumulative, so
     * each event takes the difference once; a late or repeated one takes nothing). Credits already spent cannot
     * be taken back: the balance stops at zero. Charges of others are left alone.
     */
    async refundCheckout(tx: Db | Tx, charge: RefundedCharge) {
      if (!charge.payment_intent) return { takenBack: 0 };
      const checkout = await creditsRepository(tx).recordRefund(charge.payment_intent, charge.amount_refunded);
      if (!checkout) return { takenBack: 0 };
      // The refunded share of what was charged (a coupon or a tax makes it differ from the tier's price).
      const charged = charge.amount > 0 ? charge.amount : checkout.amount;
      const share = (refunded: number) => Math.floor((checkout.credits * Math.min(refunded, charged)) / charged);
      const due = share(charge.amount_refunded) - share(checkout.refundedBefore);
      if (due <= 0) return { takenBack: 0 };
      const refunded = `${(charge.amount_refunded / 100).toFixed(2)} ${checkout.currency.toUpperCase()}`;
      const { taken, balance } = await deps.credits.takeBack(
        tx,
        checkout.userId,
        due,
        // The row's amount is what could be taken (the balance stops at zero).
        `Stripe refund (${refunded} refunded in all): ${due} credits due back`,
        `${charge.id}:${charge.amount_refunded}`,
      );
      deps.logger.info({ userId: checkout.userId, due, taken }, 'credits taken back for a refund');
      return { takenBack: taken, balance };
    },
  };
}

export type CreditsService = ReturnType<typeof createCreditsService>;
