import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { z } from 'zod';
import type { AppDeps } from '../../deps.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import {
  type CreditsService,
  createCreditsService,
  loadStripe,
  paymentsNotConfigured,
  STRIPE_SIGNATURE_TOLERANCE_S,
  stripeSignedAt,
} from '../credits/index.ts';
import {
  createPlatformEventService,
  PlatformError,
  type PlatformWebhookEvent,
  platformWebhookParser,
} from '../outreach/index.ts';
import { inboundWebhookRepository } from './webhooks-inbound.repository.ts';

export const INBOUND_PROVIDERS = ['stripe', 'standard', 'instantly', 'smartlead'] as const;
export type InboundProvider = (typeof INBOUND_PROVIDERS)[number];

/** Stripe events that may complete a credit purchase (an asynchronous payment succeeds later). */
const CHECKOUT_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded']);

const eventId = z.string().min(1).max(255);
const stripeEvent = z.object({
  id: eventId,
  type: z.string().min(1).max(255),
  data: z.object({ object: z.record(z.string(), z.unknown()) }),
});
const checkoutSession = z.object({
  id: z.string().min(1).max(255),
  payment_status: z.string().nullish(),
  payment_intent: z.string().max(255).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
});
const refundedCharge = z.object({
  id: z.string().min(1).max(255),
  payment_intent: z.string().max(255).nullish(),
  amount: z.number().int().min(0),
  amount_refunded: z.number().int().min(0),
});
const standardEvent = z.object({ type: z.string().min(1).max(255).optional() }).loose();

const invalidSignature = (field: string, message: string) =>
  new AppError('INVALID_SIGNATURE', `The webhook signature does not verify: ${message}`, {
    details: [{ field, message }],
  });

/** A zod failure as a 400 naming the field, `prefix` first (`data.object.id`). */
function parse<T extends z.ZodType>(schema: T, value: unknown, prefix = ''): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw validationError(`${prefix}${issue.path.join('.')}` || 'body', issue.message);
}

const header = (headers: Record<string, string | string[] | undefined>, name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

export interface VerifiedEvent {
  id: string;
  type: string | null;
  payload: unknown;
}

/**
 * Inbound webhooks (docs/webhooks-and-credits.md "Inbound webhooks"): each provider's signature is checked on the raw body
 * before anything is parsed or stored; a verified event is stored once per provider event id and
 * processed in the same transaction, so a re-delivery, even a concurrent one, does nothing.
 */
export function createInboundWebhookService(
  deps: Pick<AppDeps, 'db' | 'config' | 'clock' | 'credits' | 'logger' | 'sentMail'>,
  options: { credits?: CreditsService } = {},
) {
  const credits = options.credits ?? createCreditsService(deps);
  const platformEvents = createPlatformEventService(deps);
  const standard = deps.config.INBOUND_WEBHOOK_SECRET ? new Webhook(deps.config.INBOUND_WEBHOOK_SECRET) : undefined;

  async function verifyStripe(
    raw: Buffer,
    headers: Record<string, string | string[] | undefined>,
  ): Promise<VerifiedEvent> {
    const secret = deps.config.STRIPE_WEBHOOK_SECRET;
    if (!secret) throw paymentsNotConfigured('STRIPE_WEBHOOK_SECRET');
    const signature = header(headers, 'stripe-signature');
    if (!signature) throw invalidSignature('stripe-signature', 'the Stripe-Signature header is missing');
    const Stripe = await loadStripe();
    const now = deps.clock.now().getTime();
    let event: unknown;
    try {
      event = Stripe.webhooks.constructEvent(raw, signature, secret, STRIPE_SIGNATURE_TOLERANCE_S, undefined, now);
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError)
        throw invalidSignature('stripe-signature', 'no signature matches the body, or it is too old');
      throw validationError('body', 'must be a JSON event');
    }
    // The package checks only the past side; a signature dated ahead would stay replayable until then.
    if (!(Math.abs(Math.floor(now / 1000) - stripeSignedAt(signature)) <= STRIPE_SIGNATURE_TOLERANCE_S))
      throw invalidSignature('stripe-signature', 'its timestamp (t) is more than 5 minutes from now');
    const parsed = parse(stripeEvent, event);
    return { id: parsed.id, type: parsed.type, payload: event };
  }

  function verifyStandard(raw: Buffer, headers: Record<string, string | string[] | undefined>): VerifiedEvent {
    if (!standard) throw notFound('Inbound webhook provider');
    const wanted = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;
    const given: Record<string, string> = {};
    for (const name of wanted) {
      const value = header(headers, name);
      if (!value) throw invalidSignature(name, `the ${name} header is missing`);
      given[name] = value;
    }
    let payload: unknown;
    try {
      payload = standard.verify(raw, given);
    } catch (error) {
      if (error instanceof WebhookVerificationError)
        throw invalidSignature('webhook-signature', 'no signature matches the body, or it is too old');
      throw validationError('body', 'must be JSON');
    }
    const parsed = parse(standardEvent, payload);
    return { id: parse(eventId, given['webhook-id'], 'webhook-id'), type: parsed.type ?? null, payload };
  }

  /**
   * An outreach platform's event (docs/outreach.md "Outreach", Platforms): the address's token is checked before the body is
   * read; the event is stored once per connection and platform event id, and applied in the same transaction.
   * What is stored of it is its kind, not its content (addresses and replies live with the user's outreach data).
   */
  async function receivePlatform(
    provider: 'instantly' | 'smartlead',
    raw: Buffer,
    query: { connection?: string; token?: string },
  ): Promise<{ received: true; duplicate: boolean }> {
    const connection =
      query.connection && query.token
        ? await platformEvents.connectionFor(provider, query.connection, query.token)
        : undefined;
    if (!connection) throw invalidSignature('token', 'the address is not one this service gave out');
    let payload: unknown;
    try {
      payload = JSON.parse(raw.toString('utf8'));
    } catch {
      throw validationError('body', 'must be JSON');
    }
    let event: PlatformWebhookEvent;
    try {
      event = platformWebhookParser(provider)(payload);
    } catch (err) {
      if (err instanceof PlatformError) throw validationError('body', err.message);
      throw err;
    }
    const fresh = await deps.db.transaction(async (tx) => {
      const stored = await inboundWebhookRepository(tx).record({
        provider,
        eventId: `${connection.id}:${event.eventId}`.slice(0, 255),
        type: event.platformType.slice(0, 255),
        payload: { connectionId: connection.id, kind: event.kind },
        receivedAt: deps.clock.now(),
      });
      if (stored) await platformEvents.apply(tx, connection, event);
      return stored;
    });
    return { received: true, duplicate: !fresh };
  }

  return {
    /** Verifies, stores and processes one delivery; `duplicate` when its event id was seen before. */
    async receive(
      provider: string,
      raw: Buffer,
      headers: Record<string, string | string[] | undefined>,
      query: { connection?: string; token?: string } = {},
    ): Promise<{ received: true; duplicate: boolean }> {
      if (provider === 'instantly' || provider === 'smartlead') return receivePlatform(provider, raw, query);
      let event: VerifiedEvent;
      if (provider === 'stripe') event = await verifyStripe(raw, headers);
      else if (provider === 'standard') event = verifyStandard(raw, headers);
      else throw notFound('Inbound webhook provider');
      const session =
        provider === 'stripe' && event.type && CHECKOUT_EVENTS.has(event.type)
          ? parse(checkoutSession, (event.payload as { data: { object: unknown } }).data.object, 'data.object.')
          : undefined;
      const charge =
        provider === 'stripe' && event.type === 'charge.refunded'
          ? parse(refundedCharge, (event.payload as { data: { object: unknown } }).data.object, 'data.object.')
          : undefined;
      const fresh = await deps.db.transaction(async (tx) => {
        const stored = await inboundWebhookRepository(tx).record({
          provider,
          eventId: event.id,
          type: event.type,
          payload: event.payload,
          receivedAt: deps.clock.now(),
        });
        if (stored && session) await credits.completeCheckout(tx, session);
        if (stored && charge) await credits.refundCheckout(tx, charge);
        return stored;
      });
      if (!fresh) deps.logger.info({ provider, eventId: event.id }, 'inbound webhook seen before; ignored');
      return { received: true, duplicate: !fresh };
    },
  };
}
