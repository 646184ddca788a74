import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import {
  createProfileTypeBody,
  listProfileTypesQuery,
  profileTypeTemplateView,
  profileTypeView,
  updateProfileTypeBody,
} from './profile-types.schemas.ts';
import { createProfileTypeService, toProfileTypeView } from './profile-types.service.ts';

const FIELDS_DOC =
  'Each element of `fields`: `{name, type, label?, description?, required?, enum?, items?}`. `name` is an identifier ' +
  '(`^[a-zA-Z][a-zA-Z0-9_]*$`, at most 64 characters, unique case-insensitively); `type` one of string, number, ' +
  'integer, boolean, date, url, email, array; `enum` (allowed values) only on string fields; `items {type, enum?}` ' +
  'required on array fields and only there. Unknown keys in a field definition are rejected. Errors name the path, ' +
  'e.g. `fields.2.type`.';

export const profileTypeRoutes: RouteModule = (app, deps) => {
  const types = createProfileTypeService(deps);
  const tags = ['Profile Types & Profiles'];

  app.get('/api/profile-types', {
    config: { scope: 'profiles:read' },
    schema: {
      tags,
      summary: 'List profile types, newest first',
      querystring: listProfileTypesQuery,
      response: {
        200: envelope(z.object({ profileTypes: z.array(profileTypeView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await types.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/profile-types/templates', {
    config: { scope: 'profiles:read' },
    schema: {
      tags,
      summary: 'Built-in profile type templates (lender, restaurant, software-company, law-firm, …)',
      description:
        'Each template is a ready-made body for POST /api/profile-types: copy name, slug, description and fields.',
      response: { 200: envelope(z.object({ templates: z.array(profileTypeTemplateView) })), ...errorResponses(401) },
    },
    handler: async () => ok({ templates: [...types.templates()] }),
  });

  app.post('/api/profile-types', {
    config: { scope: 'profiles:write' },
    schema: {
      tags,
      summary: 'Create a profile type',
      description:
        `${FIELDS_DOC} A slug already used by one of the caller's types is a 409 CONFLICT ` +
        '(other users may use the same slug).',
      body: createProfileTypeBody,
      response: { 201: envelope(profileTypeView), ...errorResponses(400, 401, 409) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok(await types.create(principalOf(request).userId, request.body));
    },
  });

  app.get('/api/profile-types/:id', {
    config: { scope: 'profiles:read' },
    schema: {
      tags,
      summary: 'One profile type',
      params: idParams,
      response: { 200: envelope(profileTypeView), ...errorResponses(401, 404) },
    },
    handler: async (request) => ok(toProfileTypeView(await types.get(principalOf(request).userId, request.params.id))),
  });

  app.patch('/api/profile-types/:id', {
    config: { scope: 'profiles:write' },
    schema: {
      tags,
      summary: 'Update name, description or fields',
      description:
        `${FIELDS_DOC} The slug cannot be changed (a \`slug\` in the body is ignored). ` +
        '`fields` replaces the whole list; stored profile data is not rewritten. An empty body is a 400.',
      params: idParams,
      body: updateProfileTypeBody,
      response: { 200: envelope(profileTypeView), ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => ok(await types.update(principalOf(request).userId, request.params.id, request.body)),
  });

  app.delete('/api/profile-types/:id', {
    config: { scope: 'profiles:write' },
    schema: {
      tags,
      summary: 'Delete a profile type and all its profiles',
      description:
        'The profiles of this type are deleted with it. Sources that used the type keep running without one.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 404) },
    },
    handler: async (request) => {
      await types.remove(principalOf(request).userId, request.params.id);
      return done('Profile type deleted');
    },
  });
};
