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
  metadata?: Record<string, string> | null;
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
      const checkout = await creditsRepository(tx).completeCheckout(checkoutId, session.id, deps.clock.now());
      if (!checkout) return { credited: false as const };
      const { balance } = await deps.credits.purchase(tx, checkout.userId, checkout.credits, session.id);
      deps.logger.info({ userId: checkout.userId, credits: checkout.credits }, 'credits purchased');
      return { credited: true as const, userId: checkout.userId, credits: checkout.credits, balance };
    },
  };
}

export type CreditsService = ReturnType<typeof createCreditsService>;
