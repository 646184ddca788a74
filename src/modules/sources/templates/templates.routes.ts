import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { principalOf } from '../../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../../shared/http.ts';
import { nextCursor } from '../../../shared/pagination.ts';
import { createTemplateBody, listTemplatesQuery, templateView } from './templates.schemas.ts';
import { createTemplateService } from './templates.service.ts';

export const sourceTemplateRoutes: RouteModule = (app, deps) => {
  const templates = createTemplateService(deps);
  const tags = ['Source templates'];
  const template = envelope(z.object({ template: templateView }));
  const read = { scope: 'sources:read' };
  const write = { scope: 'sources:write' };

  app.get('/api/source-templates', {
    config: read,
    schema: {
      tags,
      summary: 'List built-in and own source templates',
      description:
        'Built-in templates first (one per directory kind of the catalogue), then yours, newest first. Filter ' +
        '`kind` (builtin, own). Cursor pagination (`limit`, `cursor` → `nextCursor`).',
      querystring: listTemplatesQuery,
      response: {
        200: envelope(z.object({ templates: z.array(templateView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await templates.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/source-templates', {
    config: write,
    schema: {
      tags,
      summary: 'Save a source template',
      description:
        'A source configuration whose URL has named variables. `urlPattern` must be an http(s) URL once its ' +
        "variables are filled, each variable named once; selectors are checked as a source's are (400 naming " +
        '`selectors.<key>`). Make a source from it with `POST /api/sources` `{templateId, variables}`.',
      body: createTemplateBody,
      response: { 201: template, ...errorResponses(400, 401) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ template: await templates.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/source-templates/:id', {
    config: read,
    schema: {
      tags,
      summary: 'One source template',
      description: 'A built-in (`builtin:<id>`) or one of yours; anything else is 404.',
      params: idParams,
      response: { 200: template, ...errorResponses(401, 404) },
    },
    handler: async (request) => ok({ template: await templates.find(principalOf(request).userId, request.params.id) }),
  });

  app.delete('/api/source-templates/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete one of your source templates',
      description:
        'Sources made from it keep their settings and `templateId`. Built-ins are read-only: 403 TEMPLATE_READ_ONLY.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      await templates.remove(principalOf(request).userId, request.params.id);
      return done('Source template deleted');
    },
  });
};
