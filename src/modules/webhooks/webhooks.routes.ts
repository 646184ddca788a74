import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { EVENT_TYPES } from '../../shared/events.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor, paginationQuery } from '../../shared/pagination.ts';
import {
  createWebhookBody,
  deliveryParams,
  listDeliveriesQuery,
  updateWebhookBody,
  webhookDeliveryView,
  webhookView,
  webhookWithSecretView,
} from './webhooks.schemas.ts';
import { createWebhookService } from './webhooks.service.ts';

const queued = z.object({
  deliveryId: z.string(),
  eventId: z.string().describe('The `webhook-id` the endpoint receives'),
});

export const webhookRoutes: RouteModule = (app, deps) => {
  const webhooks = createWebhookService(deps);
  const tags = ['Webhooks'];
  const read = { scope: 'webhooks:read' };
  const write = { scope: 'webhooks:write' };

  app.post('/api/webhooks', {
    config: { ...write, idempotency: false },
    schema: {
      tags,
      summary: 'Create an endpoint; its signing secret is answered once',
      description:
        'Events of the chosen types are POSTed to `url` as `{type, timestamp, data}`, signed per Standard ' +
        'Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`). A URL that resolves to a private ' +
        'address is refused (400 naming `url`) unless the service runs with ALLOW_PRIVATE_NETWORK.',
      body: createWebhookBody,
      response: { 201: envelope(z.object({ webhook: webhookWithSecretView })), ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ webhook: await webhooks.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/webhooks', {
    config: read,
    schema: {
      tags,
      summary: 'List endpoints with their health, newest first',
      description:
        'Health: the success rate of the latest 100 attempts, the last success and failure, and why an ' +
        'endpoint was disabled. Cursor pagination (`limit`, `cursor` → `nextCursor`).',
      querystring: paginationQuery,
      response: {
        200: envelope(z.object({ webhooks: z.array(webhookView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await webhooks.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/webhooks/event-types', {
    config: read,
    schema: {
      tags,
      summary: 'The event types an endpoint may subscribe to',
      description: "Their payloads are in this document's `webhooks` section.",
      response: { 200: envelope(z.object({ eventTypes: z.array(z.enum(EVENT_TYPES)) })), ...errorResponses(401) },
    },
    handler: async () => ok({ eventTypes: [...EVENT_TYPES] }),
  });

  app.get('/api/webhooks/:id', {
    config: read,
    schema: {
      tags,
      summary: 'One endpoint with its health',
      params: idParams,
      response: { 200: envelope(z.object({ webhook: webhookView })), ...errorResponses(401, 404) },
    },
    handler: async (request) => ok({ webhook: await webhooks.get(principalOf(request).userId, request.params.id) }),
  });

  app.patch('/api/webhooks/:id', {
    config: { ...write, idempotency: false },
    schema: {
      tags,
      summary: 'Change the URL, event types, description or enabled state; rotate the secret',
      description:
        '`rotateSecret: true` answers a new `secret` (once); for 24 hours every delivery is signed with both ' +
        'the new and the previous secret (two `v1,` entries). `enabled: false` fails its pending deliveries; ' +
        '`enabled: true` re-enables an endpoint disabled by a 410 or by 5 days of failures.',
      params: idParams,
      body: updateWebhookBody,
      response: {
        200: envelope(z.object({ webhook: webhookView.extend({ secret: z.string().optional() }) })),
        ...errorResponses(400, 401, 403, 404),
      },
    },
    handler: async (request) =>
      ok({ webhook: await webhooks.update(principalOf(request).userId, request.params.id, request.body) }),
  });

  app.delete('/api/webhooks/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete an endpoint with its deliveries',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      await webhooks.remove(principalOf(request).userId, request.params.id);
      return done('Webhook deleted');
    },
  });

  app.post('/api/webhooks/:id/test', {
    config: write,
    schema: {
      tags,
      summary: 'Send a webhook.test event to this endpoint',
      description: 'Delivered (and retried) like any event; follow it in the deliveries. 409 when disabled.',
      params: idParams,
      response: { 202: envelope(queued), ...errorResponses(401, 403, 404, 409) },
    },
    handler: async (request, reply) => {
      reply.code(202);
      return ok(await webhooks.sendTest(principalOf(request).userId, request.params.id));
    },
  });

  app.get('/api/webhooks/:id/deliveries', {
    config: read,
    schema: {
      tags,
      summary: "An endpoint's deliveries with their attempts, newest first",
      description:
        'Each attempt: HTTP status, latency, the first 1 KB of the answer, and when the next one is due. Filters: ' +
        '`status`, `eventType`.',
      params: idParams,
      querystring: listDeliveriesQuery,
      response: {
        200: envelope(z.object({ deliveries: z.array(webhookDeliveryView), nextCursor })),
        ...errorResponses(400, 401, 404),
      },
    },
    handler: async (request) =>
      ok(await webhooks.deliveries(principalOf(request).userId, request.params.id, request.query)),
  });

  app.post('/api/webhooks/deliveries/:deliveryId/replay', {
    config: write,
    schema: {
      tags,
      summary: 'Send a delivery again, with the same webhook-id',
      description:
        'The delivery starts a new retry schedule at once. 409 while it is being sent, or when its endpoint is ' +
        'disabled.',
      params: deliveryParams,
      response: { 202: envelope(queued), ...errorResponses(401, 403, 404, 409) },
    },
    handler: async (request, reply) => {
      reply.code(202);
      return ok(await webhooks.replay(principalOf(request).userId, request.params.deliveryId));
    },
  });
};
