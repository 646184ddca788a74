import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { envelope, errorResponses, ok } from '../../shared/http.ts';
import { createInboundWebhookService } from './webhooks-inbound.service.ts';

/** Providers' events are small; this bounds what is buffered before the signature is checked. */
const MAX_BODY = 1024 * 1024;

export const inboundWebhookRoutes: RouteModule = (app, deps) => {
  const service = createInboundWebhookService(deps);

  // Signatures cover the exact bytes sent: in this scope only, the body is kept raw (a Buffer), whatever
  // its content type, instead of going through the JSON parser of every other route.
  app.register(async (instance: FastifyInstance) => {
    const scope = instance.withTypeProvider<ZodTypeProvider>();
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY }, (_request, body, done) =>
      done(null, body),
    );
    scope.post('/api/webhooks/inbound/:provider', {
      config: { public: true, idempotency: false },
      schema: {
        tags: ['Webhooks'],
        summary: 'Receive an event from a provider (public; verified by its signature)',
        description:
          '`stripe`: signed with `Stripe-Signature` (STRIPE_WEBHOOK_SECRET); a paid `checkout.session.completed` ' +
          'adds the purchased credits; a `charge.refunded` of that payment takes back the refunded share of them ' +
          '(never below a zero balance). `standard`: Standard Webhooks headers `webhook-id`, `webhook-timestamp`, ' +
          '`webhook-signature` (INBOUND_WEBHOOK_SECRET). The signature is checked on the raw body: 400 ' +
          'INVALID_SIGNATURE and nothing stored when it does not verify. An event id seen before answers 200 ' +
          '`duplicate: true` and does nothing. `instantly`, `smartlead`: the address given when the outreach ' +
          'connection was created (`?connection=…&token=…`; the platforms sign nothing, so the token is the secret); ' +
          'a wrong token is 400 INVALID_SIGNATURE. Sends, opens, replies, bounces and unsubscribes apply to the ' +
          'connection’s campaigns and leads (docs/outreach.md "Outreach", Platforms). Other providers: 404.',
        params: z.object({ provider: z.string() }),
        querystring: z.object({
          connection: z.string().max(100).optional().describe('`instantly`, `smartlead`: the connection id'),
          token: z.string().max(200).optional().describe('`instantly`, `smartlead`: the connection’s webhook token'),
        }),
        response: {
          200: envelope(z.object({ received: z.literal(true), duplicate: z.boolean() })),
          ...errorResponses(400, 404, 413, 503),
        },
      },
      handler: async (request) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        return ok(await service.receive(request.params.provider, raw, request.headers, request.query));
      },
    });
  });
};
