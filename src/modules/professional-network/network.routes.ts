import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { disconnectSignal, envelope, errorResponses, idParams, ok } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { createCredentials } from './credentials.ts';
import { createEnricher } from './enrich.ts';
import {
  commonalitiesBody,
  createCredentialBody,
  credentialView,
  enrichBody,
  enrichOneView,
  jobDetailView,
  jobView,
  listQuery,
  networkCommonalitiesView,
  validateBody,
  validateView,
} from './network.schemas.ts';
import { createNetworkService } from './network.service.ts';

const RISK =
  ' Automated access to the professional network breaks its terms of service: the account behind the cookie can be ' +
  'restricted or banned (docs/professional-network.md).';

export const professionalNetworkRoutes: RouteModule = (app, deps) => {
  const credentials = createCredentials(deps);
  const network = createNetworkService(deps);
  const enricher = createEnricher(deps);
  const tags = ['Professional Network'];
  const read = { scope: 'linkedin:read' };
  const write = { scope: 'linkedin:write' };

  app.post('/api/linkedin/credentials', {
    config: write,
    schema: {
      tags,
      summary: 'Store a session cookie of the professional network (encrypted; answered masked)',
      description:
        'The cookie is sealed at rest and never returned, not even now: the answer shows its last 4 characters. ' +
        '`dailyLimit` caps the requests enrichment makes with it per UTC day (default LINKEDIN_DAILY_LIMIT).' +
        RISK,
      body: createCredentialBody,
      response: { 201: envelope(z.object({ credential: credentialView })), ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ credential: await credentials.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/linkedin/credentials', {
    config: read,
    schema: {
      tags,
      summary: 'Your credentials with their computed status, daily limit and requests remaining, newest first',
      description:
        'Status: INVALID (the network rejected the login; add a new cookie), SOFT_BANNED (it answered a challenge: ' +
        'HTTP 999 or a login wall; for 24 hours), RATE_LIMITED (no requests left today, UTC), else ACTIVE.',
      querystring: listQuery,
      response: {
        200: envelope(z.object({ credentials: z.array(credentialView), nextCursor })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => ok(await credentials.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/linkedin/validate', {
    config: read,
    schema: {
      tags,
      summary: "Check a profile URL's shape and read its public metadata",
      description:
        'The URL must be `LINKEDIN_BASE_URL/in/<profile-name>` (400 naming `url` otherwise). The page is fetched ' +
        'without any credential (the SSRF guard applies) and its meta tags and JSON-LD read; `reachable` false ' +
        'with the `reason` when the network answers a challenge, a login wall or a 404. Spends no credential request.',
      body: validateBody,
      response: { 200: envelope(validateView), ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => ok(await network.validate(request.body.url, disconnectSignal(reply))),
  });

  app.post('/api/linkedin/enrich', {
    config: write,
    schema: {
      tags,
      summary: "Fill leads' title, company, location and profile URL from their profile pages",
      description:
        'Through a cloud-browser session of yours (it shows among your sessions and counts its minutes) carrying ' +
        "the credential's cookie. `leadId`: one lead, answered when done (200); 404 PROFILE not found naming " +
        '`profileUrl`; 502 PLATFORM_ERROR when the network challenges (the credential becomes SOFT_BANNED) or ' +
        'rejects the login (INVALID). `leadIds`: a background job (202), one profile at a time at a human pace ' +
        '(LINKEDIN_DELAY_MS plus random LINKEDIN_JITTER_MS), stopped (STOPPED) at a challenge, a rejected login or ' +
        "the daily limit. The profile URL is the lead's `customFields.profileUrl`, else its `sourceUrl` when it is " +
        'a profile. 429 RATE_LIMIT_EXCEEDED when the credential has no requests left today; 400 INVALID_STATE ' +
        'when no credential is ACTIVE; 409 CONFLICT when the new title and company would duplicate another lead of ' +
        'its source.' +
        RISK,
      body: enrichBody,
      response: {
        200: envelope(enrichOneView),
        202: envelope(z.object({ job: jobView })),
        ...errorResponses(400, 401, 403, 404, 409, 429, 502, 503),
      },
    },
    handler: async (request, reply) => {
      const userId = principalOf(request).userId;
      if (request.body.leadId !== undefined) return ok(await enricher.enrichOne(userId, request.body));
      reply.code(202);
      return ok({ job: await enricher.startJob(userId, request.body) });
    },
  });

  app.get('/api/linkedin/jobs', {
    config: read,
    schema: {
      tags,
      summary: 'Your enrichment jobs with their progress, newest first',
      querystring: listQuery,
      response: { 200: envelope(z.object({ jobs: z.array(jobView), nextCursor })), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await enricher.listJobs(principalOf(request).userId, request.query)),
  });

  app.get('/api/linkedin/jobs/:id', {
    config: read,
    schema: {
      tags,
      summary: 'An enrichment job with the outcome of each lead handled so far',
      params: idParams,
      response: { 200: envelope(z.object({ job: jobDetailView })), ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => ok({ job: await enricher.getJob(principalOf(request).userId, request.params.id) }),
  });

  app.post('/api/linkedin/commonalities', {
    config: read,
    schema: {
      tags,
      summary: 'What a set of leads has in common (AI; a labelled heuristic without an AI provider)',
      description:
        "The AI model reads the leads' titles, companies, locations and custom fields (no names or emails) and " +
        'answers shared `traits` (`method` `ai`). Without an AI provider the shared values are counted instead ' +
        '(`method` `heuristic`, said in `summary`). 404 naming `leadIds` when one is not yours; 502 ' +
        'AI_PROVIDER_ERROR when the provider fails.',
      body: commonalitiesBody,
      response: { 200: envelope(networkCommonalitiesView), ...errorResponses(400, 401, 403, 404, 502) },
    },
    handler: async (request, reply) =>
      ok(await network.commonalities(principalOf(request).userId, request.body.leadIds, disconnectSignal(reply))),
  });
};
