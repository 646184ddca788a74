import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { envelope, errorResponses, idParams, ok } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { createProfileExporter } from './profiles.export.ts';
import {
  exportProfilesQuery,
  listProfilesQuery,
  profileStatsView,
  profileView,
  updateProfileBody,
} from './profiles.schemas.ts';
import { createProfileService } from './profiles.service.ts';

export const profileRoutes: RouteModule = (app, deps) => {
  const profiles = createProfileService(deps);
  const exportCsv = createProfileExporter(deps);
  const tags = ['Profile Types & Profiles'];
  const one = envelope(z.object({ profile: profileView }));

  app.get('/api/profiles', {
    config: { scope: 'profiles:read' },
    schema: {
      tags,
      summary: 'List extracted profiles, newest first',
      description:
        'Filters combine with AND. A filter id that is not a UUID is a 400 naming it; one that names nothing of the ' +
        "caller's simply matches nothing. Profiles are created by scraping jobs (there is no public create " +
        "endpoint); their `data` is normalised to the type's fields on the way in: unknown keys dropped, numbers " +
        'read from text such as "$1,200" or "1.5M", booleans from yes/no, dates as YYYY-MM-DD, URLs without a scheme ' +
        'get https://, lists split from comma- or semicolon-separated text, and values that still do not fit are ' +
        'dropped. A record without a value for a required field is not stored.',
      querystring: listProfilesQuery,
      response: {
        200: envelope(z.object({ profiles: z.array(profileView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await profiles.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/profiles/stats', {
    config: { scope: 'profiles:read' },
    schema: {
      tags,
      summary: "Aggregates across the caller's profiles",
      description:
        'total; byStatus (every status, zeros included); byProfileType (every type of the caller, with its profile ' +
        'count and, per field, how many profiles have a non-empty value: not null, "" or []).',
      response: { 200: envelope(profileStatsView), ...errorResponses(401) },
    },
    handler: async (request) => ok(await profiles.stats(principalOf(request).userId)),
  });

  app.get('/api/profiles/export', {
    config: { scope: 'profiles:read' },
    schema: {
      tags,
      summary: 'Download profiles as CSV (streamed)',
      description:
        "RFC 4180 CSV with a header line: id, profileType (the type's slug), status, sourceUrl, createdAt, then one " +
        "column per field of the type given by `profileTypeId`, or the union of the fields of all the caller's types " +
        '(in type creation order). Arrays are joined with "; ". Cells that a spreadsheet would run as a formula ' +
        "(starting with =, +, -, @) are prefixed with '. An unknown `profileTypeId` is a 404 naming it. With " +
        "`ruleId` (a matching rule of yours, else 404 naming it): the rule's profile type, only the profiles its " +
        'latest execution matched (every evaluated one with `includeUnmatched=true`, plus a `matched` column), with ' +
        "`matchScore` and `aiReasoning` columns last; a `profileTypeId` other than the rule's is a 400.",
      querystring: exportProfilesQuery,
      response: {
        200: {
          description: 'CSV file (Content-Disposition: attachment)',
          content: { 'text/csv': { schema: z.string() } },
        },
        ...errorResponses(400, 401, 404),
      },
    },
    handler: async (request, reply) => {
      const { filename, stream } = await exportCsv(principalOf(request).userId, request.query);
      reply.header('content-type', 'text/csv; charset=utf-8');
      reply.header('content-disposition', `attachment; filename="${filename}"`);
      return reply.send(stream as never); // streamed as is; the schema only documents the body
    },
  });

  app.get('/api/profiles/:id', {
    config: { scope: 'profiles:read' },
    schema: { tags, summary: 'One profile', params: idParams, response: { 200: one, ...errorResponses(401, 404) } },
    handler: async (request) => ok({ profile: await profiles.get(principalOf(request).userId, request.params.id) }),
  });

  app.patch('/api/profiles/:id', {
    config: { scope: 'profiles:write' },
    schema: {
      tags,
      summary: "Edit a profile's data or status",
      description:
        '`data` is merged into the stored data. Each key must be a field of the profile type and each value must fit ' +
        'it; otherwise 400 naming `data.<field>`. null or "" removes a value (a required field cannot be removed). ' +
        'An empty body is a 400.',
      params: idParams,
      body: updateProfileBody,
      response: { 200: one, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) =>
      ok({ profile: await profiles.update(principalOf(request).userId, request.params.id, request.body) }),
  });
};
