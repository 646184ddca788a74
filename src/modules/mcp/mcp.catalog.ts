/**
 * The routes the MCP tools stand on, captured as the route modules register them (an `onRoute` hook installed
 * before any of them). A tool names its route by operationId (src/shared/operation-ids.ts), so its input and
 * output schemas are the route's own zod schemas and its call is the route itself: validation, scopes, credits,
 * tenancy and error codes cannot drift between the REST API and the tools.
 */
import type { RouteOptions } from 'fastify';
import type { z } from 'zod';
import { openApiPath, operationIdOf } from '../../shared/openapi.ts';

export interface CatalogRoute {
  method: string;
  /** Fastify's path, `/api/leads/:id`. */
  url: string;
  operationId: string;
  /** The scope the route's config demands (`leads:read`), if any. */
  scope?: string;
  summary?: string;
  description?: string;
  params?: z.ZodType;
  querystring?: z.ZodType;
  body?: z.ZodType;
  /** The success answer's schema (200, 201 or 202), `{ success, data }`. */
  success?: z.ZodType;
  /** The answer schemas by status, as the route declares them (its serializers are compiled from these). */
  response: Record<string, z.ZodType>;
  /**
   * The route's options object itself: the handler and route-level hooks are read from it when a tool is first
   * called, after every later `onRoute` hook (idempotency, forwarding) has added its own.
   */
  options: RouteOptions;
  /** Registered in a child scope of the app (`register`), whose own hooks the options do not show. */
  scoped: boolean;
}

export interface RouteCatalog {
  get(operationId: string): CatalogRoute | undefined;
}

type RouteSchema = {
  summary?: string;
  description?: string;
  params?: z.ZodType;
  querystring?: z.ZodType;
  body?: z.ZodType;
  headers?: z.ZodType;
  response?: Record<string, z.ZodType>;
};

/** Records every route registered after this call (HEAD routes Fastify adds for GETs are skipped). */
export function captureRoutes(app: {
  addHook(name: 'onRoute', hook: (this: unknown, route: RouteOptions) => void): unknown;
}) {
  const byOperationId = new Map<string, CatalogRoute>();
  // A function, not an arrow: Fastify calls it with the instance the route is registered on.
  app.addHook('onRoute', function (this: unknown, route) {
    const scoped = this !== app;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const schema = (route.schema ?? {}) as RouteSchema;
    const config = (route.config ?? {}) as { scope?: string };
    for (const method of methods) {
      if (method === 'HEAD') continue;
      const operationId = operationIdOf(method, openApiPath(route.url));
      const response = schema.response ?? {};
      byOperationId.set(operationId, {
        method,
        url: route.url,
        operationId,
        scope: config.scope,
        summary: schema.summary,
        description: schema.description,
        params: schema.params,
        querystring: schema.querystring,
        body: schema.body,
        success: response[200] ?? response[201] ?? response[202],
        response,
        options: route,
        scoped,
      });
    }
  });
  const catalog: RouteCatalog = { get: (operationId) => byOperationId.get(operationId) };
  return catalog;
}
