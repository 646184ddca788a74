import type { preValidationAsyncHookHandler } from 'fastify';
import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { envelope, errorResponses, idParams, ok } from '../../../shared/http.ts';
import { nextCursor } from '../../../shared/pagination.ts';
import { forwardHttp } from '../hosts/forward.ts';
import { webSocketBase } from './session-view.ts';
import { createSessionBody, listSessionsQuery, sessionView, updateSessionBody } from './sessions.schemas.ts';
import { browserSessionsOf } from './sessions.service.ts';

const tenancyNote =
  'With `X-Client-Ref`, only sessions recorded with that ref exist (others answer 404); without it, every ' +
  'session of the key.';

export const browserSessionRoutes: RouteModule = (app, deps) => {
  const sessions = browserSessionsOf(deps);
  app.addHook('onReady', () => sessions.start());
  app.addHook('onClose', () => sessions.stop());
  app.addHook('onListen', function () {
    const address = this.server.address();
    if (address && typeof address === 'object') sessions.scaleOut.listening(address.port);
  });
  // Scale-out (PostgreSQL): a session held by another live host is served by that host, every route of
  // /api/browser/sessions/{id} (the operation modules' too, declared after this) and a create on a process without
  // browsers. Before validation, so the host validates the client's own body; after authentication, so only callers
  // with a key cross. The CDP WebSocket is relayed by its own route.
  const forward: preValidationAsyncHookHandler = async (request, reply) => {
    const target = await sessions.scaleOut.targetOf(request);
    if (!target) return;
    try {
      return await forwardHttp(request, reply, target);
    } catch (err) {
      // A host that just died is still in the registry for a few seconds: the session is read from the database.
      if (request.method === 'GET' && request.routeOptions.url === '/api/browser/sessions/:id' && !reply.sent) return;
      throw err;
    }
  };
  app.addHook('onRoute', (route) => {
    if (deps.database.kind !== 'postgres' || !route.url.startsWith('/api/browser/sessions')) return;
    if (route.url.endsWith('/cdp')) return;
    const own = route.preValidation;
    route.preValidation = [forward, ...(own === undefined ? [] : Array.isArray(own) ? own : [own])];
  });
  const tags = ['Cloud Browser'];
  const read = { scope: 'browser:read' };
  const write = { scope: 'browser:write' };
  const base = (request: Parameters<typeof webSocketBase>[1]) => webSocketBase(deps.config.PUBLIC_URL, request);
  const one = envelope(z.object({ session: sessionView }));

  app.post('/api/browser/sessions', {
    config: write,
    schema: {
      tags,
      summary: 'Start a browser session (its own Chromium); answers its cdpUrl',
      description:
        'The `cdpUrl` works with Playwright `chromium.connectOverCDP(cdpUrl)` and Puppeteer ' +
        '`connect({ browserWSEndpoint: cdpUrl })`; its token expires after 10 minutes (GET the session for a ' +
        'fresh one) and never carries the API key. The session ends at `expiresAt`, after `idleTimeoutMs` with ' +
        'no client and no action unless `keepAlive`, or on release. `clientRef` defaults to `X-Client-Ref`; a ' +
        'different one is 400 CLIENT_REF_MISMATCH. 429 CAPACITY_EXCEEDED (with Retry-After) when the host, the ' +
        'user or the clientRef has no room for another live session. It answers as soon as the Chromium process ' +
        'runs: CDP commands sent while it starts wait for it, and a Chromium that does not come up ends the ' +
        'session FAILED with the reason (`endReason`); a binary that cannot be run is 503.',
      body: createSessionBody,
      response: { 201: one, ...errorResponses(400, 401, 402, 403, 404, 409, 429, 503) },
    },
    handler: async (request, reply) => {
      const session = await sessions.create(request, request.body, base(request));
      reply.code(201);
      return ok({ session });
    },
  });

  app.get('/api/browser/sessions', {
    config: read,
    schema: {
      tags,
      summary: 'List browser sessions, newest first',
      description: `Filters: \`status\`, \`clientRef\`, \`metadata=key=value\`. Cursor pagination. ${tenancyNote}`,
      querystring: listSessionsQuery,
      response: {
        200: envelope(z.object({ sessions: z.array(sessionView), nextCursor })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => ok(await sessions.list(request, request.query, base(request))),
  });

  app.get('/api/browser/sessions/:id', {
    config: read,
    schema: {
      tags,
      summary: 'A browser session, with a fresh cdpUrl while it is live',
      description: tenancyNote,
      params: idParams,
      response: { 200: one, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) => ok({ session: await sessions.get(request, request.params.id, base(request)) }),
  });

  app.patch('/api/browser/sessions/:id', {
    config: write,
    schema: {
      tags,
      summary: "Extend a live session's deadline, change keepAlive or metadata",
      description: `\`timeoutMs\` counts from the start; \`extendMs\` moves \`expiresAt\` later. ${tenancyNote}`,
      params: idParams,
      body: updateSessionBody,
      response: { 200: one, ...errorResponses(400, 401, 403, 404, 503) },
    },
    handler: async (request) =>
      ok({ session: await sessions.update(request, request.params.id, request.body, base(request)) }),
  });

  app.delete('/api/browser/sessions/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Release a session: its Chromium is closed, the session kept as RELEASED',
      description: `Releasing an ended session answers it as it is. ${tenancyNote}`,
      params: idParams,
      response: { 200: one, ...errorResponses(400, 401, 403, 404, 503) },
    },
    handler: async (request) => ok({ session: await sessions.release(request, request.params.id, base(request)) }),
  });

  app.post('/api/browser/sessions/release-all', {
    config: write,
    schema: {
      tags,
      summary: 'Release every live session (of the X-Client-Ref when sent)',
      description:
        "Every live session the request sees, on whichever host holds it (with X-Client-Ref: that clientRef's). " +
        '`elsewhere` counts live sessions whose host could not be reached (they end when it answers again, or ' +
        'FAILED within 30 s once it is gone).',
      response: {
        200: envelope(z.object({ released: z.number().int(), elsewhere: z.number().int() })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => ok(await sessions.releaseAll(request)),
  });
};
