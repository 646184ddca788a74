import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { envelope, errorResponses, ok } from '../../shared/http.ts';
import { balanceQuery, checkoutBody, checkoutView, creditBalanceView, creditPricingView } from './credits.schemas.ts';
import { createCreditsService } from './credits.service.ts';

export const creditRoutes: RouteModule = (app, deps) => {
  const tags = ['Credits'];
  const credits = createCreditsService(deps);

  app.get('/api/credits/balance', {
    config: { scope: 'credits:read' },
    schema: {
      tags,
      summary: "The balance, this month's usage by feature, and the ledger (newest first)",
      querystring: balanceQuery,
      response: { 200: envelope(creditBalanceView), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await credits.balance(principalOf(request).userId, request.query)),
  });

  app.get('/api/credits/pricing', {
    config: { scope: 'credits:read' },
    schema: {
      tags,
      summary: 'Credit tiers on sale and the price of each metered action',
      response: { 200: envelope(creditPricingView), ...errorResponses(401, 403) },
    },
    handler: async () => ok(credits.pricing()),
  });

  app.post('/api/credits/checkout', {
    config: { scope: 'credits:write' },
    schema: {
      tags,
      summary: 'Buy a tier: a Stripe Checkout Session, answered with the URL to send the buyer to',
      description:
        'The credits are added when Stripe reports the paid session (`checkout.session.completed` to ' +
        '`POST /api/webhooks/inbound/stripe`). 503 PAYMENTS_NOT_CONFIGURED without STRIPE_SECRET_KEY; ' +
        '502 PAYMENT_PROVIDER_ERROR when Stripe fails.',
      body: checkoutBody,
      response: { 201: envelope(checkoutView), ...errorResponses(400, 401, 403, 502, 503) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok(await credits.checkout(principalOf(request).userId, request.body));
    },
  });
};
