import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { done, envelope, errorResponses, ok, successOnly } from '../../../shared/http.ts';
import { runStep } from '../actions/action-error.ts';
import { browserTags, readScope, sessionParams, sessionPath, writeScope } from './route-parts.ts';
import type { SessionResolver } from './session-browser.ts';

const tabView = z
  .object({ id: z.string(), url: z.string(), title: z.string(), active: z.boolean() })
  .meta({ id: 'BrowserTab' });
const tabParams = sessionParams.extend({ tabId: z.string().min(1).max(100) });
const openBody = z.object({
  url: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .max(8192)
    .optional()
    .describe('Blank when absent'),
  waitUntil: z.enum(['load', 'domcontentloaded', 'networkidle', 'commit']).optional(),
  timeoutMs: z.number().int().min(0).max(120_000).optional(),
});

/** `/api/browser/sessions/{id}/tabs`: the session's pages, popups and pages CDP clients opened included. */
export const browserTabRoutes =
  (resolve: SessionResolver): RouteModule =>
  (app) => {
    app.get(sessionPath('tabs'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: "The session's open tabs; the active one is where actions run",
        params: sessionParams,
        response: { 200: envelope(z.object({ tabs: z.array(tabView) })), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => {
        const session = await resolve(request, request.params.id);
        session.touch();
        return ok({ tabs: await session.tabs.list() });
      },
    });
    app.post(sessionPath('tabs'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Open a tab (optionally at a URL); it becomes the active tab',
        params: sessionParams,
        body: openBody,
        response: { 201: envelope(tabView), ...errorResponses(400, 401, 403, 404, 422) },
      },
      handler: async (request, reply) => {
        const session = await resolve(request, request.params.id);
        session.touch();
        const page = await session.tabs.open();
        const { url, waitUntil, timeoutMs } = request.body;
        if (url !== undefined)
          await runStep('url', () => page.goto(url, { waitUntil: waitUntil ?? 'load', timeout: timeoutMs ?? 30_000 }));
        return reply.code(201).send(ok(await session.tabs.view(page)));
      },
    });
    app.post(sessionPath('tabs/:tabId/activate'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Make a tab the active one (brought to front; actions run there)',
        params: tabParams,
        response: { 200: envelope(tabView), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => {
        const session = await resolve(request, request.params.id);
        session.touch();
        return ok(await session.tabs.view(await session.tabs.activate(request.params.tabId)));
      },
    });
    app.delete(sessionPath('tabs/:tabId'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Close a tab; the most recent remaining tab becomes active',
        params: tabParams,
        response: { 200: successOnly, ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => {
        const session = await resolve(request, request.params.id);
        session.touch();
        await session.tabs.close(request.params.tabId);
        return done('Tab closed');
      },
    });
  };
