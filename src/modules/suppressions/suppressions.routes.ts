import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import {
  addSuppressionsBody,
  addSuppressionsResult,
  listSuppressionsQuery,
  suppressionList,
} from './suppressions.schemas.ts';
import { createSuppressionService } from './suppressions.service.ts';

export const suppressionRoutes: RouteModule = (app, deps) => {
  const service = createSuppressionService(deps);
  const tags = ['Suppressions'];
  const read = { scope: 'enterprise:read' };
  const write = { scope: 'enterprise:write' };

  app.get('/api/suppressions', {
    config: read,
    schema: {
      tags,
      summary: 'Search the suppression list, or check one address or domain (`?value=`)',
      description:
        'Newest first; `q` matches part of the value, `type` and `source` narrow it. Cursor pagination ' +
        '(`limit`, `cursor` → `nextCursor`). `?value=` checks one address or domain after normalizing it: ' +
        '`match` is the entry suppressing it (the address itself, else its domain or the nearest parent domain) ' +
        'or null; a value that is neither an address nor a domain is a 400 naming `value`.',
      querystring: listSuppressionsQuery,
      response: { 200: envelope(suppressionList), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await service.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/suppressions', {
    config: write,
    schema: {
      tags,
      summary: 'Add up to 1000 addresses or domains',
      description:
        'Values are normalized (trimmed, lower-cased, internationalized domains in punycode). An item whose ' +
        'type and value exist already, or appear twice in the request, is merged (its reason replaces the ' +
        'old one when given). A malformed value is a 400 naming it (`items.3.value`) and nothing is stored.',
      body: addSuppressionsBody,
      response: { 200: envelope(addSuppressionsResult), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await service.add(principalOf(request).userId, request.body)),
  });

  app.delete('/api/suppressions/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Remove an entry',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      await service.remove(principalOf(request).userId, request.params.id);
      return done('Suppression removed');
    },
  });
};
