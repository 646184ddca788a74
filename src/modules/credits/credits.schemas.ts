import { z } from 'zod';
import { creditTransactionKinds } from '../../db/schema/index.ts';
import { METERED_FEATURES } from '../../shared/credits.ts';
import { nextCursor } from '../../shared/pagination.ts';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048);

export const balanceQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
});
export type BalanceQuery = z.infer<typeof balanceQuery>;

export const creditTransactionView = z
  .object({
    id: z.string(),
    kind: z.enum(creditTransactionKinds),
    amount: z.number().int().describe('Credits added (positive) or taken (negative)'),
    balanceAfter: z.number().int(),
    feature: z.string().nullable().describe('Usage: the metered feature'),
    units: z.number().int().nullable().describe('Usage: pages, emails or tokens paid for'),
    reason: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'CreditTransaction' });

export const creditBalanceView = z
  .object({
    balance: z.number().int(),
    enabled: z.boolean().describe('false: metering is off on this service (CREDITS_ENABLED)'),
    lowThreshold: z.number().int().describe('`credits.low` is sent when the balance falls below this'),
    usageThisMonth: z.object({
      since: z.string().describe('Start of the current month (UTC)'),
      credits: z.number().int(),
      byFeature: z.array(z.object({ feature: z.string(), credits: z.number().int(), units: z.number().int() })),
    }),
    transactions: z.array(creditTransactionView).describe('Newest first'),
    nextCursor,
  })
  .meta({ id: 'CreditBalance' });

export const creditTierView = z
  .object({
    id: z.string(),
    name: z.string(),
    credits: z.number().int(),
    amount: z.number().int().describe("Price in the currency's minor unit (cents)"),
    currency: z.string(),
  })
  .meta({ id: 'CreditTier' });

export const creditPricingView = z
  .object({
    enabled: z.boolean(),
    signupGrant: z.number().int().describe('Credits every new account starts with'),
    tiers: z.array(creditTierView),
    prices: z.array(
      z.object({
        feature: z.enum(METERED_FEATURES),
        credits: z.number().int().describe('Credits per unit'),
        unit: z.string(),
      }),
    ),
  })
  .meta({ id: 'CreditPricing' });

export const checkoutBody = z.strictObject({
  tierId: z.string().min(1).max(40).describe('One of the tiers of GET /api/credits/pricing'),
  successUrl: httpUrl.optional().describe('Where Stripe sends the buyer after paying; default PUBLIC_URL'),
  cancelUrl: httpUrl.optional().describe('Where Stripe sends the buyer who gives up; default PUBLIC_URL'),
});
export type CheckoutInput = z.infer<typeof checkoutBody>;

export const checkoutView = z
  .object({
    url: z.string().describe('The Stripe Checkout page to send the buyer to'),
    sessionId: z.string(),
    tier: creditTierView,
  })
  .meta({ id: 'CreditCheckout' });
