import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { createProjectBody, listProjectsQuery, projectView, updateProjectBody } from './projects.schemas.ts';
import { createProjectService } from './projects.service.ts';

export const projectRoutes: RouteModule = (app, deps) => {
  const projects = createProjectService(deps);
  const tags = ['Projects'];
  const project = envelope(z.object({ project: projectView }));

  app.get('/api/projects', {
    config: { scope: 'projects:read' },
    schema: {
      tags,
      summary: 'List projects, newest first',
      querystring: listProjectsQuery,
      response: {
        200: envelope(z.object({ projects: z.array(projectView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await projects.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/projects', {
    config: { scope: 'projects:write' },
    schema: {
      tags,
      summary: 'Create a project',
      description:
        '`name` is trimmed (1–200 characters). `color` accepts `#rrggbb` or `#rgb` and is stored as ' +
        'lower-case `#rrggbb`.',
      body: createProjectBody,
      response: { 201: project, ...errorResponses(400, 401) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ project: await projects.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/projects/:id', {
    config: { scope: 'projects:read' },
    schema: {
      tags,
      summary: 'One project',
      description: "An unknown, malformed or another user's id answers 404 NOT_FOUND.",
      params: idParams,
      response: { 200: project, ...errorResponses(401, 404) },
    },
    handler: async (request) => ok({ project: await projects.get(principalOf(request).userId, request.params.id) }),
  });

  app.patch('/api/projects/:id', {
    config: { scope: 'projects:write' },
    schema: {
      tags,
      summary: 'Update name, description or color',
      description:
        "Another user's project answers 403 FORBIDDEN; an unknown or malformed id 404. An empty body is a 400.",
      params: idParams,
      body: updateProjectBody,
      response: { 200: project, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) =>
      ok({ project: await projects.update(principalOf(request).userId, request.params.id, request.body) }),
  });

  app.delete('/api/projects/:id', {
    config: { scope: 'projects:write' },
    schema: {
      tags,
      summary: 'Delete a project and all its data',
      description:
        'Deletes, in one transaction, the project, its sources, their jobs and leads, and the profiles extracted ' +
        "from those sources. Another user's project answers 403 FORBIDDEN; an unknown or malformed id 404.",
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      await projects.remove(principalOf(request).userId, request.params.id);
      return done('Project deleted');
    },
  });
};
