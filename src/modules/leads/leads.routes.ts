import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { createLeadValidationService } from './lead-validation.service.ts';
import {
  bulkDeleteView,
  bulkIdsBody,
  bulkUpdateBody,
  bulkUpdateView,
  createLeadBody,
  emailValidationView,
  exportLeadsBody,
  leadListItem,
  leadView,
  listLeadsRouteQuery,
  updateLeadBody,
  validateBulkView,
} from './leads.schemas.ts';
import { createLeadService, exportLeadsCsv } from './leads.service.ts';

const tags = ['Leads'];
const read = { scope: 'leads:read' };
const write = { scope: 'leads:write' };
const leadEnvelope = envelope(z.object({ lead: leadView }));

export const leadRoutes: RouteModule = (app, deps) => {
  const leads = createLeadService(deps);
  const validation = createLeadValidationService(deps);

  app.get('/api/leads', {
    config: read,
    schema: {
      tags,
      summary: 'List leads, newest (or oldest) first (cursor pagination)',
      description:
        'Filters combine with AND. `company` matches the whole name, ignoring case. `limit` 1–1000 (default 50); ' +
        'pass `nextCursor` back as `cursor` (with the same filters and `sort`). `q` finds text in the name, email, ' +
        'company or job title; `tag` leads carrying that tag.',
      querystring: listLeadsRouteQuery,
      response: {
        200: envelope(z.object({ leads: z.array(leadListItem), nextCursor })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => ok(await leads.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/leads', {
    config: write,
    schema: {
      tags,
      summary: 'Add a lead by hand',
      description:
        'Every lead starts NEW; VALID, INVALID and RISKY are set by email validation only ' +
        '(`POST /api/leads/{id}/validate-email`), not by the syntax check of the body.',
      body: createLeadBody,
      response: { 201: leadEnvelope, ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ lead: await leads.create(principalOf(request).userId, request.body) });
    },
  });

  app.post('/api/leads/bulk', {
    config: write,
    schema: {
      tags,
      summary: 'Delete up to 1000 leads in one operation',
      description:
        "Ids that name none of your leads (unknown, malformed, another user's) count in `failed` and are listed in " +
        '`errors`; duplicates count once.',
      body: bulkIdsBody,
      response: { 200: envelope(bulkDeleteView), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await leads.bulkDelete(principalOf(request).userId, request.body.leadIds)),
  });

  app.patch('/api/leads/bulk', {
    config: write,
    schema: {
      tags,
      summary: 'Set the status and add or remove tags on up to 1000 leads',
      description:
        'Tags: `addTags` are appended, duplicates dropped, then `removeTags` removed; order is kept. A lead that ' +
        'would end with more than 50 tags is left unchanged and reported with error `too_many_tags`.',
      body: bulkUpdateBody,
      response: { 200: envelope(bulkUpdateView), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) =>
      ok(await leads.bulkUpdate(principalOf(request).userId, request.body.leadIds, request.body.updates)),
  });

  app.post('/api/leads/export', {
    config: read,
    schema: {
      tags,
      summary: 'Download leads as CSV (streamed): the selected ones, or all that the list filters find',
      description:
        'RFC 4180 CSV with a header line: id, firstName, lastName, email, phone, company, jobTitle, status, tags ' +
        '(joined with "; "), sourceUrl, createdAt. `leadIds`: those of your leads, newest first (others are left ' +
        'out); `filter`: the filters of GET /api/leads, every lead they find, newest first; neither: all your leads. ' +
        "Cells a spreadsheet would run as a formula (starting with =, +, -, @) are prefixed with '.",
      body: exportLeadsBody,
      response: {
        200: {
          description: 'CSV file (Content-Disposition: attachment)',
          content: { 'text/csv': { schema: z.string() } },
        },
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request, reply) => {
      const stream = exportLeadsCsv(deps, principalOf(request).userId, request.body);
      const day = deps.clock.now().toISOString().slice(0, 10);
      reply.header('content-type', 'text/csv; charset=utf-8');
      reply.header('content-disposition', `attachment; filename="leads-${day}.csv"`);
      return reply.send(stream as never); // streamed as is; the schema only documents the body
    },
  });

  app.post('/api/leads/validate-bulk', {
    config: write,
    schema: {
      tags,
      summary: 'Queue email validation for up to 1000 leads',
      description:
        'Each lead with an email is validated in the background; its status then moves as with validate-email. Leads ' +
        'without an email are skipped (`no_email`), ids that name none of your leads too (`not_found`).',
      body: bulkIdsBody,
      response: { 200: envelope(validateBulkView), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await validation.queueBulk(principalOf(request).userId, request.body.leadIds)),
  });

  app.get('/api/leads/:id', {
    config: read,
    schema: {
      tags,
      summary: 'One lead with its job and source',
      params: idParams,
      response: { 200: leadEnvelope, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => ok({ lead: await leads.get(principalOf(request).userId, request.params.id) }),
  });

  app.patch('/api/leads/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Update a lead',
      description:
        'null or "" clears a text field. Changing the email clears the stored validation and, for a lead in NEW, ' +
        'VALID, INVALID or RISKY (and no status in the same request), sets it back to NEW (not validated).',
      params: idParams,
      body: updateLeadBody,
      response: { 200: leadEnvelope, ...errorResponses(400, 401, 403, 404, 409) },
    },
    handler: async (request) =>
      ok({ lead: await leads.update(principalOf(request).userId, request.params.id, request.body) }),
  });

  app.delete('/api/leads/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete a lead',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      await leads.remove(principalOf(request).userId, request.params.id);
      return done();
    },
  });

  app.post('/api/leads/:id/validate-email', {
    config: write,
    schema: {
      tags,
      summary: "Validate the lead's email now (syntax, suppression list, DNS, optional SMTP probe)",
      description:
        'Answers `status` (valid, risky, invalid, unknown), `tier` (how deep the check got), `errors[]` and ' +
        '`flags[]` (see the README). With SMTP_PROBE on, the mail exchanger is asked about the address and a ' +
        'random one at its domain (RCPT TO, never DATA): tier `mailbox`, or `mailbox_not_found`, `catch_all`, ' +
        '`smtp_unverified` (README "SMTP probing"). The result is stored on the lead; the status moves to VALID, ' +
        'INVALID or RISKY (unknown: unchanged) unless the lead is already CONTACTED or later.',
      params: idParams,
      response: { 200: envelope(emailValidationView), ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) => ok(await validation.validateLead(principalOf(request).userId, request.params.id)),
  });
};
