import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor, paginationQuery } from '../../shared/pagination.ts';
import { apiKeyView, createApiKeyBody, createdApiKeyView } from './api-keys.schemas.ts';

export const apiKeyRoutes: RouteModule = (app, deps) => {
  const tags = ['API keys'];

  app.post('/api/api-keys', {
    config: { scope: 'api-keys:write', idempotency: false },
    schema: {
      tags,
      summary: 'Mint a scoped, optionally expiring key (shown once)',
      description:
        'A key can only grant scopes that the calling key holds. With `orgId` (or made with an organization key) ' +
        "the key acts for that organization within its holder's role (docs/organizations.md): 404 unless the caller " +
        'is a member, 403 for scopes beyond the role.',
      body: createApiKeyBody,
      response: { 201: envelope(z.object({ apiKey: createdApiKeyView })), ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ apiKey: await deps.apiKeys.create(principalOf(request), request.body) });
    },
  });

  app.get('/api/api-keys', {
    config: { scope: 'api-keys:read' },
    schema: {
      tags,
      summary: 'Live keys of the caller (prefix, scopes, lastUsedAt, expiresAt), newest first',
      description:
        "With an organization key: the organization's keys (every member's for admins and owners, your own otherwise).",
      querystring: paginationQuery,
      response: { 200: envelope(z.object({ apiKeys: z.array(apiKeyView), nextCursor })), ...errorResponses(400, 401) },
    },
    handler: async (request) => ok(await deps.apiKeys.list(principalOf(request), request.query)),
  });

  app.post('/api/api-keys/:id/rotate', {
    config: { scope: 'api-keys:write', idempotency: false },
    schema: {
      tags,
      summary: 'Replace a key; the old one keeps working for 24 hours',
      description:
        'The new key has the same name, scopes and expiry. A key that was already rotated answers 409 ' +
        '(rotate its replacement). The calling key must hold every scope of the key it rotates or revokes (403 ' +
        "otherwise); only a key's holder rotates it (an organization's admin revokes other members' keys).",
      params: idParams,
      response: {
        200: envelope(
          z.object({
            apiKey: createdApiKeyView.extend({ previousKey: z.object({ id: z.string(), expiresAt: z.string() }) }),
          }),
        ),
        ...errorResponses(401, 403, 404, 409),
      },
    },
    handler: async (request) => ok({ apiKey: await deps.apiKeys.rotate(principalOf(request), request.params.id) }),
  });

  app.delete('/api/api-keys/:id', {
    config: { scope: 'api-keys:write' },
    schema: {
      tags,
      summary: 'Revoke a key at once',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      await deps.apiKeys.revoke(principalOf(request), request.params.id);
      return done('API key revoked');
    },
  });
};
