import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor, paginationQuery } from '../../shared/pagination.ts';
import { createDestinationBody, destinationView, pushBody, pushParams, pushView } from './destinations.schemas.ts';
import { createDestinationService } from './destinations.service.ts';

export const destinationRoutes: RouteModule = (app, deps) => {
  const service = createDestinationService(deps);
  const tags = ['Destinations'];
  const read = { scope: 'destinations:read' };
  const write = { scope: 'destinations:write' };
  const one = envelope(z.object({ destination: destinationView }));
  const onePush = envelope(z.object({ push: pushView }));

  app.get('/api/destinations', {
    config: read,
    schema: {
      tags,
      summary: 'List your destinations, newest first',
      description: 'Secrets are never returned: `secretSet` says which ones are stored.',
      querystring: paginationQuery,
      response: {
        200: envelope(z.object({ destinations: z.array(destinationView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await service.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/destinations', {
    // Never replayed from the idempotency store: the answer carries a webhook's signing secret, shown once.
    config: { ...write, idempotency: false },
    schema: {
      tags,
      summary: 'Add a destination leads can be pushed to: webhook, postgres or s3',
      description:
        '`webhook`: batches of leads POSTed as JSON, signed as the service’s webhooks are (Standard Webhooks); ' +
        'without `config.secret` one is made and shown once here as `signingSecret`. `postgres`: a table in another ' +
        'database, created when missing (lead columns, id, timestamps). `s3`: one CSV or JSONL object per batch, ' +
        '`<prefix>/<pushId>/part-00001.<format>`. Secrets (signing secret, password, connection string, secret ' +
        'access key) are encrypted at rest and never returned. Unless `skipTest`, the connection is tried first ' +
        '(a signed `destination.test` request, a login, a HeadBucket): 400 CONNECTION_FAILED naming the failure. ' +
        'Hosts on private networks are refused unless the operator sets ALLOW_PRIVATE_NETWORK.',
      body: createDestinationBody,
      response: {
        201: envelope(
          z.object({
            destination: destinationView,
            signingSecret: z.string().optional().describe('The webhook signing secret made for you: shown once'),
          }),
        ),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok(await service.create(principalOf(request).userId, request.body));
    },
  });

  app.get('/api/destinations/:id', {
    config: read,
    schema: { tags, summary: 'One destination', params: idParams, response: { 200: one, ...errorResponses(401, 404) } },
    handler: async (request) => ok({ destination: await service.get(principalOf(request).userId, request.params.id) }),
  });

  app.delete('/api/destinations/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete a destination and its pushes',
      description: 'A running push stops after its current batch. What was pushed stays at the destination.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 404) },
    },
    handler: async (request) => {
      await service.delete(principalOf(request).userId, request.params.id);
      return done('Destination deleted');
    },
  });

  app.post('/api/destinations/:id/push', {
    config: write,
    schema: {
      tags,
      summary: 'Push leads to the destination (a background job)',
      description:
        '`leadIds` (all must be yours: any other id is a 404 naming `leadIds`) or `filter` (the leads list’s: ' +
        'status, company, jobId, sourceId, tag; `{}` is every lead), newest first, as they are when the push is ' +
        'made (leads created later are not included). `mode`: `append` adds leads the destination does not hold ' +
        'yet (a postgres table keys rows by lead id); `upsert` keeps one row per email in a postgres table, the ' +
        'newest lead’s (webhook and s3 receive the same batches in both modes). 202 with the push: follow it with ' +
        '`GET /api/destinations/{id}/pushes/{pushId}`. A push whose worker died resumes after the last batch ' +
        'delivered; a batch it repeats replaces itself (same rows, same S3 key, same webhook-id). Fires ' +
        '`destination.push.completed` or `destination.push.failed`.',
      params: idParams,
      body: pushBody,
      response: { 202: onePush, ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      reply.code(202);
      return ok({ push: await service.push(principalOf(request).userId, request.params.id, request.body) });
    },
  });

  app.get('/api/destinations/:id/pushes', {
    config: read,
    schema: {
      tags,
      summary: 'The pushes to a destination, newest first',
      params: idParams,
      querystring: paginationQuery,
      response: {
        200: envelope(z.object({ pushes: z.array(pushView), nextCursor })),
        ...errorResponses(400, 401, 404),
      },
    },
    handler: async (request) => ok(await service.pushes(principalOf(request).userId, request.params.id, request.query)),
  });

  app.get('/api/destinations/:id/pushes/:pushId', {
    config: read,
    schema: {
      tags,
      summary: 'One push: status and progress',
      description: 'PENDING → RUNNING → COMPLETED | FAILED; `progress` counts leads pushed and batches delivered.',
      params: pushParams,
      response: { 200: onePush, ...errorResponses(401, 404) },
    },
    handler: async (request) => {
      const { id, pushId } = request.params;
      return ok({ push: await service.getPush(principalOf(request).userId, id, pushId) });
    },
  });

  app.post('/api/destinations/:id/pushes/:pushId/retry', {
    config: write,
    schema: {
      tags,
      summary: 'Run a failed push again from where it stopped',
      description: 'Only a FAILED push (else 400 INVALID_STATUS); batches delivered before are not sent again.',
      params: pushParams,
      response: { 202: onePush, ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      const { id, pushId } = request.params;
      reply.code(202);
      return ok({ push: await service.retry(principalOf(request).userId, id, pushId) });
    },
  });
};
