import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { envelope, errorResponses, ok } from '../../../shared/http.ts';
import { browserTags, readScope, sessionParams, sessionPath, writeScope } from '../tabs/route-parts.ts';
import type { SessionResolver } from '../tabs/session-browser.ts';
import {
  cookieFilter,
  cookieView,
  putStorageBody,
  setCookiesBody,
  storageQuery,
  storageView,
} from './state.schemas.ts';
import { deleteCookies, listCookies, readStorage, setCookies, writeStorage } from './state.service.ts';

/** `/api/browser/sessions/{id}/cookies` and `/storage`: the state of the session's browser context. */
export const browserStateRoutes =
  (resolve: SessionResolver): RouteModule =>
  (app) => {
    const errors = errorResponses(400, 401, 403, 404, 422);
    app.get(sessionPath('cookies'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: "The session's cookies, optionally only those sent to a URL or of one name",
        params: sessionParams,
        querystring: cookieFilter,
        response: { 200: envelope(z.object({ cookies: z.array(cookieView) })), ...errors },
      },
      handler: async (request) =>
        ok({ cookies: await listCookies(await resolve(request, request.params.id), request.query) }),
    });
    app.post(sessionPath('cookies'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Set cookies (each with a url, or a domain and path)',
        params: sessionParams,
        body: setCookiesBody,
        response: { 200: envelope(z.object({ set: z.number().int() })), ...errors },
      },
      handler: async (request) =>
        ok({ set: await setCookies(await resolve(request, request.params.id), request.body) }),
    });
    app.delete(sessionPath('cookies'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Delete cookies: all, or those sent to a URL and/or of one name',
        params: sessionParams,
        querystring: cookieFilter,
        response: { 200: envelope(z.object({ deleted: z.number().int() })), ...errors },
      },
      handler: async (request) =>
        ok({ deleted: await deleteCookies(await resolve(request, request.params.id), request.query) }),
    });
    app.get(sessionPath('storage'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: "An origin's localStorage and sessionStorage",
        description: 'sessionStorage is per tab: it is read from a tab at that origin, and is empty when none is open.',
        params: sessionParams,
        querystring: storageQuery,
        response: { 200: envelope(storageView), ...errors },
      },
      handler: async (request) =>
        ok(await readStorage(await resolve(request, request.params.id), request.query.origin)),
    });
    app.put(sessionPath('storage'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: "Write an origin's localStorage and/or sessionStorage (optionally clearing them first)",
        params: sessionParams,
        body: putStorageBody,
        response: { 200: envelope(storageView), ...errors },
      },
      handler: async (request) => ok(await writeStorage(await resolve(request, request.params.id), request.body)),
    });
  };
