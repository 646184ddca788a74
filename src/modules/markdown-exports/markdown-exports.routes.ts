import { Readable } from 'node:stream';
import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor, paginationQuery } from '../../shared/pagination.ts';
import { createUpdateStreams } from '../../shared/sse.ts';
import { singleFileOf, zipOf } from './markdown-download.ts';
import { markdownExportRepository } from './markdown-exports.repository.ts';
import {
  createMarkdownExportBody,
  downloadQuery,
  listPagesQuery,
  markdownExportView,
  markdownPageView,
} from './markdown-exports.schemas.ts';
import {
  createMarkdownExportService,
  exportUpdatePayload,
  MARKDOWN_UPDATE_CHANNEL,
} from './markdown-exports.service.ts';

export const markdownExportRoutes: RouteModule = (app, deps) => {
  const exports = createMarkdownExportService(deps);
  const repo = markdownExportRepository(deps.db);
  const streamEvents = createUpdateStreams(app, deps.notifier, {
    channel: MARKDOWN_UPDATE_CHANNEL,
    event: 'markdown_export',
    terminal: new Set(['COMPLETED', 'FAILED', 'CANCELLED']),
    load: (id) => repo.findById(id),
    payload: exportUpdatePayload,
  });
  const tags = ['Markdown exports'];
  const one = envelope(z.object({ export: markdownExportView }));
  const read = { scope: 'markdown:read' };
  const write = { scope: 'markdown:write' };

  app.get('/api/markdown-exports', {
    config: read,
    schema: {
      tags,
      summary: 'List your markdown exports, newest first',
      querystring: paginationQuery,
      response: {
        200: envelope(z.object({ exports: z.array(markdownExportView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await exports.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/markdown-exports', {
    config: write,
    schema: {
      tags,
      summary: 'Export a website as markdown (status PENDING)',
      description:
        'Crawls from `startUrl` on the scraping engine (robots.txt, politeness, the SSRF guard), following links ' +
        'up to `maxDepth` hops and `maxPages` pages, within the include/exclude path globs, on the same site ' +
        'unless `sameSiteOnly` is false, plus the pages of /sitemap.xml with `sitemap`. Each page becomes ' +
        'markdown (tables, code blocks with their language, links and images made absolute); with ' +
        '`onlyMainContent` only the article is kept. PENDING → RUNNING → COMPLETED | FAILED; follow it with ' +
        '`GET /api/markdown-exports/{id}/events`. Each page exported costs `markdown_pages` credits (402 ' +
        'INSUFFICIENT_CREDITS when the balance cannot pay for one). `proxyProfileId` (one of your proxy ' +
        'profiles; 404 naming it otherwise) sends every page through that proxy instead of SCRAPER_PROXY_URL. ' +
        'Fires `markdown_export.completed`.',
      body: createMarkdownExportBody,
      response: { 201: one, ...errorResponses(400, 401, 402, 404) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ export: await exports.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/markdown-exports/:id', {
    config: read,
    schema: {
      tags,
      summary: 'One markdown export',
      params: idParams,
      response: { 200: one, ...errorResponses(401, 404) },
    },
    handler: async (request) => ok({ export: await exports.get(principalOf(request).userId, request.params.id) }),
  });

  app.delete('/api/markdown-exports/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Cancel a pending or running export, or delete a finished one',
      description:
        'PENDING or RUNNING: the export becomes CANCELLED (kept with the pages exported so far) and its crawl ' +
        'stops within 2 s. COMPLETED, FAILED or CANCELLED: the export and its pages are deleted.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 404) },
    },
    handler: async (request) => {
      const outcome = await exports.cancelOrDelete(principalOf(request).userId, request.params.id);
      return done(outcome === 'cancelled' ? 'Export cancelled' : 'Export deleted');
    },
  });

  app.get('/api/markdown-exports/:id/pages', {
    config: read,
    schema: {
      tags,
      summary: 'The pages of an export, with their markdown',
      description: 'In the order they were stored; `status` filters OK or FAILED. Cursor pagination.',
      params: idParams,
      querystring: listPagesQuery,
      response: {
        200: envelope(z.object({ pages: z.array(markdownPageView), nextCursor })),
        ...errorResponses(400, 401, 404),
      },
    },
    handler: async (request) => ok(await exports.pages(principalOf(request).userId, request.params.id, request.query)),
  });

  app.get('/api/markdown-exports/:id/download', {
    config: read,
    schema: {
      tags,
      summary: 'Download the exported pages: a ZIP of .md files, or one llms-full.txt-style file',
      description:
        '`format=zip` (default): `application/zip`, one `<host>/<path>.md` per page, each opening with YAML front ' +
        'matter (`url`, `title`, `fetchedAt`, `depth`). `format=single`: `text/markdown`, every page in turn under ' +
        'its title and source URL, separated by `---`. The pages exported so far, whatever the status.',
      params: idParams,
      querystring: downloadQuery,
      response: { 200: z.any().describe('The file, as an attachment'), ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      const row = await exports.owned(principalOf(request).userId, request.params.id);
      const pages = exports.exportedPages(row.id);
      if (request.query.format === 'single') {
        return reply
          .header('content-type', 'text/markdown; charset=utf-8')
          .header('content-disposition', `attachment; filename="llms-full-${row.id}.txt"`)
          .send(Readable.from(singleFileOf(pages)));
      }
      return reply
        .header('content-type', 'application/zip')
        .header('content-disposition', `attachment; filename="markdown-export-${row.id}.zip"`)
        .send(Readable.from(zipOf(pages)));
    },
  });

  app.get('/api/markdown-exports/:id/events', {
    config: read,
    schema: {
      tags,
      summary: 'Live progress as Server-Sent Events',
      description:
        'A `text/event-stream`, as a job’s: `event: markdown_export` with data `{id, status, progress, pagesDone, ' +
        'pagesFailed, error}` on every change, ending after COMPLETED, FAILED or CANCELLED; `event: deleted` if ' +
        'the export is deleted. The first event is the current state.',
      params: idParams,
      response: { 200: z.string().describe('text/event-stream'), ...errorResponses(401, 404) },
    },
    handler: async (request, reply) => {
      const row = await exports.owned(principalOf(request).userId, request.params.id);
      await streamEvents(reply, row);
    },
  });

  app.post('/api/markdown-exports/:id/retry', {
    config: write,
    schema: {
      tags,
      summary: 'Fetch the failed pages of a finished export again',
      description:
        'Only the FAILED pages are fetched again (no links followed); pages that succeed now replace them. A ' +
        'FAILED export without any page (its start URL failed) runs again whole. Running, pending, or nothing ' +
        'failed: 400 INVALID_STATUS.',
      params: idParams,
      response: { 200: one, ...errorResponses(400, 401, 402, 404) },
    },
    handler: async (request) => ok({ export: await exports.retry(principalOf(request).userId, request.params.id) }),
  });
};
