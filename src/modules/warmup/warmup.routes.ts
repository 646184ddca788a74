import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import {
  createWarmupBody,
  listWarmupQuery,
  metricsBody,
  updateWarmupBody,
  warmupDomainView,
} from './warmup.schemas.ts';
import { createWarmupService } from './warmup.service.ts';

const one = envelope(z.object({ warmupDomain: warmupDomainView }));

/** The state table, as docs/outreach.md "Warmup domains" has it. */
const STATES =
  'States: `DRAFT` → (`start`, SPF and DKIM right) → `WARMING` ⇄ (PATCH `status`) `PAUSED`; `WARMING` or ' +
  '`PAUSED` → `AUTO_PAUSED` when metrics show a bounce rate above 10 % or a spam rate above 0.5 %; ' +
  '`AUTO_PAUSED` → `WARMING` by PATCH once the latest rates are within the limits; `WARMING` → `COMPLETED` ' +
  'after the 35th schedule day is sent. Any other move is `400 INVALID_STATE`.';

export const warmupRoutes: RouteModule = (app, deps) => {
  const warmup = createWarmupService(deps);
  const tags = ['Warmup Domains'];
  const read = { scope: 'warmup:read' };
  const write = { scope: 'warmup:write' };

  app.post('/api/warmup-domains', {
    config: write,
    schema: {
      tags,
      summary: 'Add a sending domain to warm up (DRAFT)',
      description:
        'The domain, its DKIM selector, the sending mailbox (`smtpUrl`, stored encrypted, never returned) and ' +
        'the From address at the domain. 409 CONFLICT when the domain is already yours. ' +
        STATES,
      body: createWarmupBody,
      response: { 201: one, ...errorResponses(400, 401, 403, 409) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ warmupDomain: await warmup.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/warmup-domains', {
    config: read,
    schema: {
      tags,
      summary: 'List your warmup domains, newest first',
      description: 'Each with its day, today’s target and sent count, and the schedule. Cursor pagination.',
      querystring: listWarmupQuery,
      response: {
        200: envelope(z.object({ warmupDomains: z.array(warmupDomainView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await warmup.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/warmup-domains/:id', {
    config: read,
    schema: {
      tags,
      summary: 'A warmup domain: state, schedule day, today’s target and sent count, latest metrics',
      params: idParams,
      response: { 200: one, ...errorResponses(401, 404) },
    },
    handler: async (request) => ok({ warmupDomain: await warmup.get(principalOf(request).userId, request.params.id) }),
  });

  app.patch('/api/warmup-domains/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Pause or resume; change the selector, mailbox or From address while not warming',
      description:
        '`status: PAUSED` pauses a WARMING domain; `status: WARMING` resumes a PAUSED one, or an AUTO_PAUSED one ' +
        'whose latest rates are within the limits. Paused UTC days do not advance the schedule. Settings change ' +
        'only while the domain is not WARMING (not together with a resume); a resume after the DKIM selector or ' +
        'the mailbox host changed checks SPF and DKIM again (400 DNS_NOT_READY). ' +
        STATES,
      params: idParams,
      body: updateWarmupBody,
      response: { 200: one, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) =>
      ok({ warmupDomain: await warmup.update(principalOf(request).userId, request.params.id, request.body) }),
  });

  app.delete('/api/warmup-domains/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete a warmup domain with its sending history and metrics',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      await warmup.remove(principalOf(request).userId, request.params.id);
      return done('Warmup domain deleted');
    },
  });

  app.post('/api/warmup-domains/:id/start', {
    config: write,
    schema: {
      tags,
      summary: 'Check SPF and DKIM in DNS and start warming (DRAFT → WARMING)',
      description:
        'SPF: the domain’s `v=spf1` TXT record parses and authorizes the mailbox host (every address it resolves ' +
        'to). DKIM: `<selector>._domainkey.<domain>` holds a key record (`v=DKIM1; k=rsa|ed25519; p=…`, RSA at ' +
        'least 1024 bits). Otherwise `400 DNS_NOT_READY`, the message naming the failed record and why, `details` ' +
        'one entry per failed record (`field`: `spf` or `dkim`). Only a DRAFT domain starts (`400 INVALID_STATE`).',
      params: idParams,
      response: { 200: one, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) =>
      ok({ warmupDomain: await warmup.start(principalOf(request).userId, request.params.id) }),
  });

  app.post('/api/warmup-domains/:id/metrics', {
    config: write,
    schema: {
      tags,
      summary: 'Feed open, reply, bounce and spam rates (fractions 0–1)',
      description:
        'Recorded with the time. A bounce rate above 0.10 or a spam rate above 0.005 moves a WARMING or PAUSED ' +
        'domain to AUTO_PAUSED at once (sending stops) and emits `warmup.auto_paused`.',
      params: idParams,
      body: metricsBody,
      response: { 200: one, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) =>
      ok({
        warmupDomain: await warmup.recordMetrics(principalOf(request).userId, request.params.id, request.body),
      }),
  });
};
