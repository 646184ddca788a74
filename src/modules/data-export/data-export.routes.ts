import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { envelope, errorResponses, ok } from '../../shared/http.ts';
import { nextCursor, paginationQuery } from '../../shared/pagination.ts';
import { createExportBody, downloadQuery, exportView } from './data-export.schemas.ts';
import { createDataExportService } from './data-export.service.ts';

export const dataExportRoutes: RouteModule = (app, deps) => {
  const exports = createDataExportService(deps);
  const tags = ['Data export'];

  app.post('/api/users/export', {
    config: { scope: 'users:write' },
    schema: {
      tags,
      summary: 'Request a copy of all your data (GDPR art. 15/20); generated in the background',
      description:
        'Answers the request as PENDING; poll `GET /api/users/export/status` until COMPLETED, then download it. ' +
        'It holds the profile, consent history, API keys (no hashes), projects, sources, jobs, leads, profile ' +
        'types, profiles, suppressions, the credit ledger and checkouts, AI usage, account notes, matching rules ' +
        'and runs, campaigns, chat conversations, messages and approvals, webhook endpoints (no signing secrets) ' +
        'and events, bounces, warmup domains (no mailbox credentials), outreach connections, mailboxes (no credentials), campaigns, enrollments, mails and unsubscribes, professional-network credentials (no cookie) and enrichment jobs, and the changes admins made to the account; JSON: one document, CSV: a ZIP, one file per ' +
        'section. ' +
        'Rate limit: 3 accepted requests per rolling week per user (429 with Retry-After).',
      body: createExportBody,
      response: { 200: envelope(exportView), ...errorResponses(400, 401, 429) },
    },
    handler: async (request) => ok(await exports.request(principalOf(request).userId, request.body?.format ?? 'JSON')),
  });

  app.get('/api/users/export/status', {
    config: { scope: 'users:read' },
    schema: {
      tags,
      summary: 'Your export requests, newest first',
      querystring: paginationQuery,
      response: { 200: envelope(z.object({ exports: z.array(exportView), nextCursor })), ...errorResponses(400, 401) },
    },
    handler: async (request) => ok(await exports.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/users/export/download', {
    config: { scope: 'users:read' },
    schema: {
      tags,
      summary: 'Download a completed export (JSON document, or ZIP of CSV files)',
      description: 'Available for 7 days after completion. Missing, pending, expired or not yours: 404.',
      querystring: downloadQuery,
      response: { 200: z.any().describe('The file, as an attachment'), ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      const file = await exports.download(principalOf(request).userId, request.query.requestId);
      return reply
        .header('content-type', file.contentType)
        .header('content-disposition', `attachment; filename="${file.fileName.replace(/["\\\r\n]/g, '_')}"`)
        .header('cache-control', 'private, no-store')
        .header('x-content-type-options', 'nosniff')
        .send(file.content);
    },
  });
};
