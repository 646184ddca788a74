import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { notFound } from '../../../shared/errors.ts';
import { errorResponses } from '../../../shared/http.ts';
import { escapeHtml } from '../../../shared/text.ts';
import { OUTREACH_TAGS } from '../connections/connections.routes.ts';
import { createUnsubscribeService } from './unsubscribe.service.ts';

/** A transparent 1×1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
  `<title>${title}</title></head><body style="font-family:sans-serif;max-width:32rem;margin:4rem auto">` +
  `<h1 style="font-size:1.4rem">${title}</h1>${body}</body></html>`;

const tokenParams = z.object({ token: z.string().max(200) });
const html = z.string().describe('An HTML page');

/**
 * Public pages behind the links of outreach mail (docs/outreach.md "Outreach"): unsubscribe (RFC 8058 one-click POST, and
 * a page with a button for people: a GET never unsubscribes, since mail scanners follow links) and the
 * open-tracking image.
 */
export const outreachUnsubscribeRoutes: RouteModule = (app, deps) => {
  const service = createUnsubscribeService(deps);
  const tags = OUTREACH_TAGS;

  app.register(async (instance: FastifyInstance) => {
    const scope = instance.withTypeProvider<ZodTypeProvider>();
    // RFC 8058 clients POST `List-Unsubscribe=One-Click` as a form; the body itself carries nothing we need.
    scope.addContentTypeParser(
      ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'],
      { parseAs: 'string', bodyLimit: 4096 },
      (_request, _body, done) => done(null, {}),
    );

    scope.get('/api/outreach/unsubscribe/:token', {
      config: { public: true },
      schema: {
        tags,
        summary: 'The unsubscribe page of a mail (public; a button confirms)',
        params: tokenParams,
        response: { 200: html, ...errorResponses(404) },
      },
      handler: async (request, reply) => {
        const email = await service.addressOf(request.params.token);
        if (!email) throw notFound('Unsubscribe link');
        reply.type('text/html; charset=utf-8');
        return page(
          'Unsubscribe',
          `<p>Stop emails to <strong>${escapeHtml(email)}</strong>?</p><form method="post">` +
            '<button type="submit">Unsubscribe</button></form>',
        );
      },
    });

    scope.post('/api/outreach/unsubscribe/:token', {
      config: { public: true, idempotency: false },
      schema: {
        tags,
        summary: 'Unsubscribe (public; RFC 8058 one-click POST or the page’s button)',
        description:
          'Suppresses the recipient’s address for the sender (source `unsubscribe`), stops their sequences ' +
          '(UNSUBSCRIBED) and marks their leads UNSUBSCRIBED. Repeating it changes nothing. 404 for a link that ' +
          'is not valid.',
        params: tokenParams,
        response: { 200: html, ...errorResponses(404) },
      },
      handler: async (request, reply) => {
        const email = await service.unsubscribe(request.params.token);
        if (!email) throw notFound('Unsubscribe link');
        reply.type('text/html; charset=utf-8');
        return page('Unsubscribed', `<p>${escapeHtml(email)} will not receive these emails again.</p>`);
      },
    });

    scope.get('/api/outreach/o/:file', {
      config: { public: true },
      schema: {
        tags,
        summary: 'Open-tracking image of a mail (public)',
        params: z.object({ file: z.string().max(210) }),
        response: { 200: z.any().describe('image/gif'), ...errorResponses(404) },
      },
      handler: async (request, reply) => {
        const token = request.params.file.replace(/\.gif$/, '');
        const counted = await service.opened(token);
        reply.header('cache-control', 'no-store, private');
        if (!counted) throw notFound('Image');
        return reply.type('image/gif').send(PIXEL);
      },
    });
  });
};
