import type Stripe from 'stripe';
import type { Config } from '../../config.ts';
import { AppError } from '../../shared/errors.ts';

/**
 * The `stripe` package, loaded on first use: its hundreds of modules would add about a second to every
 * start (docs/configuration.md "Running"), and most installs never take a payment.
 */
let stripeModule: typeof Stripe | undefined;
export async function loadStripe(): Promise<typeof Stripe> {
  stripeModule ??= (await import('stripe')).default;
  return stripeModule;
}

/**
 * The Stripe client, or undefined without STRIPE_SECRET_KEY. STRIPE_API_BASE points it at another server
 * speaking Stripe's API (its protocol, host and port; Stripe's paths start at `/v1`).
 */
export async function createStripeClient(
  config: Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_BASE'>,
): Promise<Stripe | undefined> {
  if (!config.STRIPE_SECRET_KEY) return undefined;
  const Stripe = await loadStripe();
  const base = config.STRIPE_API_BASE ? new URL(config.STRIPE_API_BASE) : undefined;
  const https = base?.protocol !== 'http:';
  return new Stripe(config.STRIPE_SECRET_KEY, {
    maxNetworkRetries: 2,
    timeout: 30_000,
    telemetry: false,
    ...(base && {
      host: base.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: base.port || (https ? 443 : 80),
      protocol: https ? 'https' : 'http',
    }),
  });
}

export const paymentsNotConfigured = (setting: string) =>
  new AppError('PAYMENTS_NOT_CONFIGURED', `Payments are not configured on this service: set ${setting}`);

/** A Stripe failure as the API reports it: the status, never Stripe's text (it may quote the request). */
export function paymentProviderError(error: unknown): AppError {
  // The package is loaded: the error came from a call through it.
  const status = stripeModule && error instanceof stripeModule.errors.StripeError ? error.statusCode : undefined;
  return new AppError(
    'PAYMENT_PROVIDER_ERROR',
    status ? `The payment provider answered HTTP ${status}` : 'The payment provider could not be reached',
  );
}

/** How far (seconds) a Stripe-Signature's `t` may be from now, either way: Stripe's own default, and Standard
 * Webhooks' window. */
export const STRIPE_SIGNATURE_TOLERANCE_S = 300;

/**
 * The `t` of a Stripe-Signature header, read as the `stripe` package reads it (the last `t=` item, parseInt), so it
 * is the timestamp the verified signature covers. The package refuses only old ones: a `t` far ahead would let a
 * captured delivery be replayed for as long as it is dated.
 */
export function stripeSignedAt(header: string): number {
  let t = Number.NaN;
  for (const item of header.split(',')) {
    const [key, value] = item.split('=');
    if (key === 't') t = Number.parseInt(value ?? '', 10);
  }
  return t;
}
