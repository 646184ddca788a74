import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { envelope, errorResponses, ok } from '../../../shared/http.ts';
import { browserTags, readScope, sessionParams, sessionPath, writeScope } from '../tabs/route-parts.ts';
import type { SessionResolver } from '../tabs/session-browser.ts';
import {
  accessibilityQuery,
  accessibilityView,
  contentQuery,
  contentView,
  pdfBody,
  scrapeBody,
  scrapeView,
  screenshotQuery,
} from './page.schemas.ts';
import { accessibility, content, pdf, scrape, screenshot, tabOf } from './page.service.ts';

const binary = (what: string) => z.any().describe(what);

/** `/api/browser/sessions/{id}/page/…`: what the active tab (or `tabId`) shows, as images, PDF, text or data. */
export const browserPageRoutes =
  (resolve: SessionResolver): RouteModule =>
  (app) => {
    const errors = errorResponses(400, 401, 403, 404, 422);
    app.get(sessionPath('page/screenshot'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: 'A screenshot of the tab (PNG or JPEG): the viewport, the full page, a clip or an element',
        params: sessionParams,
        querystring: screenshotQuery,
        response: { 200: binary('image/png or image/jpeg'), ...errors },
      },
      handler: async (request, reply) => {
        const { page } = await tabOf(await resolve(request, request.params.id), request.query.tabId);
        const image = await screenshot(page, request.query);
        return reply.header('content-type', image.contentType).header('cache-control', 'no-store').send(image.body);
      },
    });
    app.post(sessionPath('page/pdf'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Print the tab to PDF',
        params: sessionParams,
        body: pdfBody,
        response: { 200: binary('application/pdf'), ...errors },
      },
      handler: async (request, reply) => {
        const { page } = await tabOf(await resolve(request, request.params.id), request.body.tabId);
        const file = await pdf(page, request.body);
        return reply.header('content-type', 'application/pdf').header('cache-control', 'no-store').send(file);
      },
    });
    app.get(sessionPath('page/content'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: "The tab's content as HTML (the live DOM), visible text, or Markdown",
        params: sessionParams,
        querystring: contentQuery,
        response: { 200: envelope(contentView), ...errors },
      },
      handler: async (request) => {
        const { page, tabId } = await tabOf(await resolve(request, request.params.id), request.query.tabId);
        const format = request.query.format ?? 'html';
        const text = await content(page, format);
        return ok({ tabId, url: page.url(), title: await page.title(), format, content: text });
      },
    });
    app.post(sessionPath('page/scrape'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: "Extract values with selectors (the sources' convention) from the tab's current DOM",
        params: sessionParams,
        body: scrapeBody,
        response: { 200: envelope(scrapeView), ...errors },
      },
      handler: async (request) => {
        const { page, tabId } = await tabOf(await resolve(request, request.params.id), request.body.tabId);
        return ok({ tabId, url: page.url(), ...(await scrape(page, request.body.selectors)) });
      },
    });
    app.get(sessionPath('page/accessibility'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: "The tab's accessibility tree (Playwright's ARIA snapshot, YAML)",
        params: sessionParams,
        querystring: accessibilityQuery,
        response: { 200: envelope(accessibilityView), ...errors },
      },
      handler: async (request) => {
        const { page, tabId } = await tabOf(await resolve(request, request.params.id), request.query.tabId);
        return ok({ tabId, url: page.url(), snapshot: await accessibility(page, request.query) });
      },
    });
  };
