import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { createJobEventStreams } from './jobs.events.ts';
import { createJobBody, jobView, listJobsQuery } from './jobs.schemas.ts';
import { createJobService } from './jobs.service.ts';

export const jobRoutes: RouteModule = (app, deps) => {
  const jobs = createJobService(deps);
  const streamEvents = createJobEventStreams(app, deps);
  const tags = ['Jobs'];
  const job = envelope(z.object({ job: jobView }));
  const read = { scope: 'jobs:read' };
  const write = { scope: 'jobs:write' };

  app.get('/api/jobs', {
    config: read,
    schema: {
      tags,
      summary: 'List jobs, newest first',
      description: 'Filters: `status`, `sourceId`. Cursor pagination (`limit`, `cursor` → `nextCursor`).',
      querystring: listJobsQuery,
      response: { 200: envelope(z.object({ jobs: z.array(jobView), nextCursor })), ...errorResponses(400, 401) },
    },
    handler: async (request) => ok(await jobs.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/jobs', {
    config: write,
    schema: {
      tags,
      summary: 'Start a scraping job (status PENDING)',
      description:
        'The source must be yours (404 naming `sourceId`) and ACTIVE (400 SOURCE_NOT_ACTIVE). A worker picks the job ' +
        'up: PENDING → RUNNING → COMPLETED | FAILED, with `progress` (0–100) and `leadsFound` updated while it runs. ' +
        'Follow it with `GET /api/jobs/{id}/events`.',
      body: createJobBody,
      response: { 201: job, ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ job: await jobs.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/jobs/:id', {
    config: read,
    schema: { tags, summary: 'One job', params: idParams, response: { 200: job, ...errorResponses(401, 404) } },
    handler: async (request) => ok({ job: await jobs.get(principalOf(request).userId, request.params.id) }),
  });

  app.get('/api/jobs/:id/events', {
    config: read,
    schema: {
      tags,
      summary: 'Live progress as Server-Sent Events',
      description:
        'A `text/event-stream` (an addition to the JSON API, for progress bars). Each change sends `event: job` with ' +
        'data `{id, status, progress, leadsFound, pagesVisited, error}`; the stream ends after COMPLETED, FAILED or ' +
        'CANCELLED, and sends `event: deleted` if the job is deleted. The first event is the current state. ' +
        'Authenticate with the Authorization header ' +
        '(browser EventSource cannot set it: use a fetch-based SSE client).',
      params: idParams,
      response: { 200: z.string().describe('text/event-stream'), ...errorResponses(401, 404) },
    },
    handler: async (request, reply) => {
      const row = await jobs.owned(principalOf(request).userId, request.params.id);
      await streamEvents(reply, row);
    },
  });

  app.delete('/api/jobs/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Cancel a pending or running job, or delete a finished one',
      description:
        'PENDING or RUNNING: the job becomes CANCELLED (kept for history) and its crawl stops within 2 s. COMPLETED, ' +
        'FAILED or CANCELLED: the job is deleted; the leads it found stay, without their job link.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 404) },
    },
    handler: async (request) => {
      const outcome = await jobs.cancelOrDelete(principalOf(request).userId, request.params.id);
      return done(outcome === 'cancelled' ? 'Job cancelled' : 'Job deleted');
    },
  });

  app.post('/api/jobs/:id/retry', {
    config: write,
    schema: {
      tags,
      summary: 'Retry a failed job',
      description: 'FAILED → PENDING, queued again with the same id. Any other state: 400 INVALID_STATUS.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => {
      await jobs.retry(principalOf(request).userId, request.params.id);
      return done('Job retry started');
    },
  });
};
