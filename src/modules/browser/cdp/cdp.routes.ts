/**
 * WS /api/browser/sessions/{id}/cdp?token=…: the session's Chrome DevTools Protocol for Playwright and Puppeteer.
 * Authenticated by the cdpUrl's token (not the API key): an invalid or expired token is 401, a session the
 * token does not name (another session, another user, another clientRef, ended) 404, both before the upgrade.
 */
import fastifyWebsocket from '@fastify/websocket';
import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { AppError } from '../../../shared/errors.ts';
import { forwardedHeaders, openUpstream, relayWebSocket, type Upstream } from '../hosts/forward.ts';
import type { LiveSession } from '../sessions/host.ts';
import { browserSessionsOf } from '../sessions/sessions.service.ts';
import { attachWebSocket, CDP_MAX_PAYLOAD } from './websocket.ts';

const query = z.object({ token: z.string().max(2000).optional() });
const params = z.object({ id: z.string().max(100) });

export const browserCdpRoutes: RouteModule = (app, deps) => {
  const sessions = browserSessionsOf(deps);
  app.register(async (scoped) => {
    await scoped.register(fastifyWebsocket, { options: { maxPayload: CDP_MAX_PAYLOAD, perMessageDeflate: false } });
    const live = new WeakMap<object, { session: LiveSession; keyId: string | null }>();
    /** Scale-out: the same endpoint on the host that holds the session, opened before this upgrade is accepted. */
    const relayed = new WeakMap<object, Upstream>();
    scoped.get(
      '/api/browser/sessions/:id/cdp',
      {
        websocket: true,
        config: { public: true },
        schema: { hide: true },
        preValidation: async (request) => {
          const { token } = query.parse(request.query);
          const grant = token ? sessions.verifyToken(token) : undefined;
          if (!grant)
            throw new AppError('UNAUTHORIZED', 'Invalid or expired cdpUrl token: GET the session for a fresh one');
          const { id } = params.parse(request.params);
          const target = await sessions.scaleOut.targetForGrant(request, grant, id);
          if (target) relayed.set(request, await openUpstream(target, request.url, forwardedHeaders(request)));
          else live.set(request, { session: await sessions.liveForGrant(grant, id), keyId: grant.keyId });
        },
      },
      (socket, request) => {
        const upstream = relayed.get(request);
        if (upstream) return relayWebSocket(socket, upstream);
        const held = live.get(request);
        if (!held) return socket.close(1011, 'no session');
        const { session } = held;
        // The cdpUrl stands only while the key that asked for it does: its revocation closes the socket.
        const unbind = sessions.keyBound.add(held.keyId, () =>
          socket.close(1008, 'the API key that made this cdpUrl was revoked or expired'),
        );
        socket.once('close', unbind);
        attachWebSocket(session.mux, socket, {
          counts: true,
          onOpen: () => {
            session.clients++;
            session.lastActivity = deps.clock.now().getTime();
          },
          onClose: () => {
            session.clients--;
            session.lastActivity = deps.clock.now().getTime();
          },
        });
      },
    );
  });
};
