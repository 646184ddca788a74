import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { clientIp, envelope, errorResponses, ok } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { consentEventView, consentHistoryQuery, consentView, updateConsentBody } from './consent.schemas.ts';
import { createConsentService } from './consent.service.ts';

export const consentRoutes: RouteModule = (app, deps) => {
  const consent = createConsentService(deps);
  const tags = ['Consent'];

  app.get('/api/users/consent', {
    config: { scope: 'users:read' },
    schema: {
      tags,
      summary: 'Current consent preferences',
      response: { 200: envelope(z.object({ consent: consentView })), ...errorResponses(401) },
    },
    handler: async (request) => ok({ consent: await consent.get(principalOf(request).userId) }),
  });

  app.patch('/api/users/consent', {
    config: { scope: 'users:write' },
    schema: {
      tags,
      summary: 'Change marketing consent (recorded in the consent history with the client address)',
      body: updateConsentBody,
      response: { 200: envelope(z.object({ consent: consentView })), ...errorResponses(400, 401) },
    },
    handler: async (request) =>
      ok({
        consent: await consent.updateMarketing(
          principalOf(request).userId,
          request.body.marketingConsent,
          clientIp(request),
        ),
      }),
  });

  app.get('/api/users/consent/history', {
    config: { scope: 'users:read' },
    schema: {
      tags,
      summary: 'Audit trail of consent changes, newest first (signup writes the first entries)',
      querystring: consentHistoryQuery,
      response: {
        200: envelope(z.object({ history: z.array(consentEventView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) =>
      ok(await consent.history(principalOf(request).userId, request.query.limit, request.query.cursor)),
  });
};
