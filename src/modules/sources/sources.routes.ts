import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { disconnectSignal, done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { hitWindowLimit, type WindowLimit } from '../../shared/rate-limit.ts';
import {
  createSelectorPreview,
  PREVIEW_MAX_BYTES,
  previewSelectorsBody,
  previewSelectorsView,
} from './sources.preview.ts';
import {
  batchResultView,
  batchSourcesBody,
  createSourceRequest,
  listSourcesQuery,
  MAX_BATCH_SOURCES,
  sourceView,
  updateSourceBody,
} from './sources.schemas.ts';
import { createSourceService } from './sources.service.ts';

/** Selector previews per account and minute (each fetches and parses a page). */
export const PREVIEW_LIMIT: WindowLimit = { bucket: 'sources:preview', limit: 20, windowMs: 60_000 };

export const sourceRoutes: RouteModule = (app, deps) => {
  const sources = createSourceService(deps);
  const previewSelectors = createSelectorPreview(deps);
  const tags = ['Sources'];
  const source = envelope(z.object({ source: sourceView }));
  const read = { scope: 'sources:read' };
  const write = { scope: 'sources:write' };

  app.get('/api/sources', {
    config: read,
    schema: {
      tags,
      summary: 'List sources, newest first',
      description: 'Filters: `status`, `projectId`. Cursor pagination (`limit`, `cursor` → `nextCursor`).',
      querystring: listSourcesQuery,
      response: { 200: envelope(z.object({ sources: z.array(sourceView), nextCursor })), ...errorResponses(400, 401) },
    },
    handler: async (request) => ok(await sources.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/sources', {
    config: write,
    schema: {
      tags,
      summary: 'Create a source (status DRAFT)',
      description:
        'Selectors follow the convention in the `selectors` description and are checked here: a selector that does ' +
        'not parse is a 400 naming `selectors.<key>`. `projectId` and `profileTypeId` must be yours (404 naming the ' +
        'field). A DRAFT source does not run; activate it. With `templateId` (GET /api/source-templates) the template ' +
        'fills `url` from `variables` (a missing one is a 400 naming `variables.<name>`), `scrapeType`, `selectors`, ' +
        '`scheduleType` and `options`; fields of the body win. An unknown template is a 404 naming `templateId`.',
      body: createSourceRequest,
      response: { 201: source, ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ source: await sources.create(principalOf(request).userId, request.body) });
    },
  });

  app.post('/api/sources/batch', {
    config: write,
    schema: {
      tags,
      summary: 'Create several DRAFT sources at once',
      description:
        `1–${MAX_BATCH_SOURCES} sources, all created or none. ` +
        '`scrapeType` defaults to DYNAMIC and `selectors` to {}. Items may name a `templateId` with `variables`, as ' +
        'in `POST /api/sources`.',
      body: batchSourcesBody,
      response: { 201: envelope(batchResultView), ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      const created = await sources.createMany(
        principalOf(request).userId,
        request.body.sources,
        request.body.projectId,
      );
      reply.code(201);
      return ok({ sources: created.map(({ id, name, status }) => ({ id, name, status })), count: created.length });
    },
  });

  app.post('/api/sources/preview-selectors', {
    config: write,
    // Each preview fetches and parses a page on the API process: a person gets a few a minute, not a free scraper.
    onRequest: async (request) => hitWindowLimit(deps.db, deps.clock, PREVIEW_LIMIT, principalOf(request).userId),
    schema: {
      tags,
      summary: 'Test selectors on a page (nothing is saved)',
      description:
        'Fetches `url` as a crawl does (through SCRAPER_PROXY_URL when set, the SSRF guard and the configured ' +
        'User-Agent; scripts are not run) and runs the STATIC extraction with `selectors` over it: answers, per ' +
        'selector, how many items it found a value in with a few samples, and the first items as a job would ' +
        'save them. A selector that does not parse is a 400 naming `selectors.<key>`; an empty map a 400 naming ' +
        '`selectors`; a URL that is refused (private network), unreachable, answers an error, is not HTML or is ' +
        `larger than ${PREVIEW_MAX_BYTES / 1024 / 1024} MB: 400 naming \`url\`. Rate limit: ` +
        `${PREVIEW_LIMIT.limit} previews per minute per account (429 RATE_LIMIT_EXCEEDED).`,
      body: previewSelectorsBody,
      response: { 200: envelope(previewSelectorsView), ...errorResponses(400, 401, 403, 429) },
    },
    handler: async (request, reply) => ok(await previewSelectors(request.body, disconnectSignal(reply))),
  });

  app.get('/api/sources/:id', {
    config: read,
    schema: { tags, summary: 'One source', params: idParams, response: { 200: source, ...errorResponses(401, 404) } },
    handler: async (request) => ok({ source: await sources.get(principalOf(request).userId, request.params.id) }),
  });

  app.patch('/api/sources/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Update a source',
      description:
        'Any attribute of creation, plus `status` DRAFT (stop scheduled runs) or ARCHIVED. Changing the schedule or ' +
        'the status recomputes `nextRunAt`.',
      params: idParams,
      body: updateSourceBody,
      response: { 200: source, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) =>
      ok({ source: await sources.update(principalOf(request).userId, request.params.id, request.body) }),
  });

  app.delete('/api/sources/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete a source with its jobs, leads and profiles',
      description: 'Running jobs of the source stop within seconds.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 404) },
    },
    handler: async (request) => {
      await sources.remove(principalOf(request).userId, request.params.id);
      return done('Source deleted');
    },
  });

  app.post('/api/sources/:id/activate', {
    config: write,
    schema: {
      tags,
      summary: 'Activate a source',
      description:
        'DRAFT or ARCHIVED → ACTIVE. Scheduled sources (HOURLY, DAILY, WEEKLY) get `nextRunAt` one period from now. ' +
        'Already active: 400 ALREADY_ACTIVE.',
      params: idParams,
      response: { 200: source, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => ok({ source: await sources.activate(principalOf(request).userId, request.params.id) }),
  });
};
