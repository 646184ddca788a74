import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { createProxyProfileBody, listProxyProfilesQuery, proxyProfileView } from './proxy-profiles.schemas.ts';
import { createProxyProfileService } from './proxy-profiles.service.ts';

export const proxyProfileRoutes: RouteModule = (app, deps) => {
  const service = createProxyProfileService(deps);
  const tags = ['Proxy profiles'];
  const read = { scope: 'enterprise:read' };
  const write = { scope: 'enterprise:write' };

  app.post('/api/proxy-profiles', {
    config: write,
    schema: {
      tags,
      summary: 'Add a proxy (http, https or socks5), checked with a request through it unless skipTest',
      description:
        'Unless `skipTest`, PROXY_CHECK_URL is fetched through the proxy (and through every rotation endpoint): ' +
        'a failure is 400 CONNECTION_FAILED naming it (credentials rejected, connection refused, timeout, a ' +
        'non-2xx answer). A host on a private network is 400 VALIDATION_ERROR unless ALLOW_PRIVATE_NETWORK. ' +
        'The password is stored encrypted and never returned. Use the profile with `proxyProfileId` on a source, ' +
        'a markdown export or a browser session: their traffic then goes out through it instead of SCRAPER_PROXY_URL.',
      body: createProxyProfileBody,
      response: { 201: envelope(z.object({ proxyProfile: proxyProfileView })), ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ proxyProfile: await service.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/proxy-profiles', {
    config: read,
    schema: {
      tags,
      summary: 'Your proxy profiles, newest first (credentials masked)',
      querystring: listProxyProfilesQuery,
      response: {
        200: envelope(z.object({ proxyProfiles: z.array(proxyProfileView), nextCursor })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => ok(await service.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/proxy-profiles/:id', {
    config: read,
    schema: {
      tags,
      summary: 'One proxy profile (credentials masked)',
      params: idParams,
      response: { 200: envelope(z.object({ proxyProfile: proxyProfileView })), ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => ok({ proxyProfile: await service.get(principalOf(request).userId, request.params.id) }),
  });

  app.delete('/api/proxy-profiles/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete a proxy profile no source, running export or live browser session uses',
      description:
        '409 CONFLICT naming the users while a source names the profile (change or delete the source first) or a ' +
        'PENDING/RUNNING markdown export or a live browser session runs with it. Finished exports keep its id.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404, 409) },
    },
    handler: async (request) => {
      await service.remove(principalOf(request).userId, request.params.id);
      return done('Proxy profile deleted');
    },
  });
};
