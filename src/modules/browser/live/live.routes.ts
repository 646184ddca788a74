/**
 * The live viewer: `POST /api/browser/sessions/{id}/live-views` (a signed, expiring URL), `DELETE …/{viewId}`
 * (revoked at once), and, public with the token as the credential, `GET /api/browser/live/{token}` (the embeddable
 * page) and `WS /api/browser/live/{token}/stream` (its frames and input).
 */
import fastifyWebsocket from '@fastify/websocket';
import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { done, envelope, errorResponses, ok, successOnly } from '../../../shared/http.ts';
import { relayWebSocket } from '../hosts/forward.ts';
import { browserTags, sessionParams, sessionPath, writeScope } from '../tabs/route-parts.ts';
import { createLiveViewBody, liveTokenParams, liveViewParams, liveViewView } from './live.schemas.ts';
import { liveViewsOf, type StreamTarget, VIEWER_MAX_PAYLOAD } from './live.service.ts';
import { livePage, livePageCsp } from './live-page.ts';

const LIVE = '/api/browser/live/:token';

export const browserLiveRoutes: RouteModule = (app, deps) => {
  const views = liveViewsOf(deps);

  app.post(sessionPath('live-views'), {
    config: writeScope,
    schema: {
      tags: browserTags,
      summary: 'A signed, expiring URL of a page showing the session live, to embed in an iframe',
      description:
        'The page shows the active tab (following it when it changes); with `mode: interact` the viewer may also ' +
        'use the mouse, wheel and keyboard and take or hand back control (`browser.live.control` webhook event ' +
        "and a `live` entry in the session's logs). The URL's token is the credential: anyone with it sees the " +
        'session until `expiresAt` or until the view is revoked (DELETE). Embedding sites must be allowed by ' +
        '`BROWSER_LIVE_FRAME_ANCESTORS`. 400 INVALID_STATE once the session has ended.',
      params: sessionParams,
      body: createLiveViewBody,
      response: { 201: envelope(liveViewView), ...errorResponses(400, 401, 403, 404, 503) },
    },
    handler: async (request, reply) => {
      const view = await views.create(request, request.params.id, request.body);
      reply.code(201);
      return ok(view);
    },
  });

  app.delete(sessionPath('live-views/:viewId'), {
    config: writeScope,
    schema: {
      tags: browserTags,
      summary: 'Revoke a live view: its URL stops working and its open viewers are disconnected at once',
      params: liveViewParams,
      response: { 200: successOnly, ...errorResponses(400, 401, 403, 404, 503) },
    },
    handler: async (request) => {
      await views.revoke(request, request.params.id, request.params.viewId);
      return done('Live view revoked');
    },
  });

  app.get(LIVE, {
    config: { public: true },
    schema: {
      tags: browserTags,
      summary: 'The live-view page (public: the token is the credential); embed it in an iframe',
      description:
        'A self-contained HTML page (nothing loaded from elsewhere) that shows the session through ' +
        '`WS /api/browser/live/{token}/stream`. Its `Content-Security-Policy` names the sites that may frame it ' +
        '(`BROWSER_LIVE_FRAME_ANCESTORS`). 401 for a forged or expired token, 404 once revoked.',
      params: liveTokenParams,
      response: { 200: z.string().describe('text/html'), ...errorResponses(401, 404) },
    },
    handler: async (request, reply) => {
      const mode = await views.pageOf(request.params.token);
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', livePageCsp(deps.config.BROWSER_LIVE_FRAME_ANCESTORS))
        .send(livePage(mode));
    },
  });

  app.register(async (scoped) => {
    await scoped.register(fastifyWebsocket, { options: { maxPayload: VIEWER_MAX_PAYLOAD, perMessageDeflate: false } });
    const targets = new WeakMap<object, StreamTarget>();
    scoped.get(
      `${LIVE}/stream`,
      {
        websocket: true,
        config: { public: true },
        schema: { hide: true },
        preValidation: async (request) => {
          const { token } = liveTokenParams.parse(request.params);
          targets.set(request, await views.streamOf(request, token));
        },
      },
      (socket, request) => {
        const target = targets.get(request);
        if (!target) return socket.close(1011, 'no session');
        if ('relay' in target) return relayWebSocket(socket, target.relay);
        void views.attach(socket, target.view, target.live);
      },
    );
  });
};
