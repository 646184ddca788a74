/**
 * Sleeping sessions: POST /sessions/{id}/sleep, and the snapshots they leave (list, read, wake, delete). X-Client-Ref
 * applies as to sessions: another ref's or another user's snapshot is 404.
 */
import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../../shared/http.ts';
import { nextCursor } from '../../../shared/pagination.ts';
import { forwardHttp } from '../hosts/forward.ts';
import { webSocketBase } from '../sessions/session-view.ts';
import { sessionView } from '../sessions/sessions.schemas.ts';
import { browserSessionsOf } from '../sessions/sessions.service.ts';
import { scopeOf } from '../sessions/tenancy.ts';
import { readScope, sessionParams, sessionPath, browserTags as tags, writeScope } from '../tabs/route-parts.ts';
import { listSnapshotsQuery, snapshotView, snapshotViewOf } from './snapshots.schemas.ts';

const SNAPSHOTS = '/api/browser/snapshots';
const tenancy =
  'With `X-Client-Ref`, only snapshots of sessions recorded with that ref exist (others answer 404); without it, ' +
  'every snapshot of the key.';

export const browserSnapshotRoutes: RouteModule = (app, deps) => {
  const sessions = browserSessionsOf(deps);
  const { snapshots } = sessions;
  const base = (request: Parameters<typeof webSocketBase>[1]) => webSocketBase(deps.config.PUBLIC_URL, request);
  const withSession = envelope(z.object({ session: sessionView, snapshot: snapshotView }));

  app.post(sessionPath('sleep'), {
    config: writeScope,
    schema: {
      tags,
      summary: 'Put a live session to sleep: its state saved as a snapshot, its Chromium stopped',
      description:
        'Saves cookies, localStorage and IndexedDB per origin, every tab (URL, scroll position, history length, ' +
        'sessionStorage, which one is active) and the viewport, then stops Chromium: the session is `SLEEPING`, ' +
        'uses no process and counts against no live-session limit (host, user, clientRef). Its minutes are charged ' +
        'for the live part that ends; its hard timeout pauses (what is left resumes at the wake) and `expiresAt` ' +
        'becomes the snapshot’s expiry. It wakes with `POST /snapshots/{id}/wake`, any operation on it, or a ' +
        'connection to its `cdpUrl`. Files of the session and a tab’s earlier history entries are not kept. A ' +
        `sleeping session answers its snapshot as it is. ${tenancy}`,
      params: sessionParams,
      response: { 200: withSession, ...errorResponses(400, 401, 403, 404, 503) },
    },
    handler: async (request) => {
      const { snapshot } = await snapshots.sleep(scopeOf(request), request.params.id);
      const session = await sessions.get(request, request.params.id, base(request));
      return ok({ session, snapshot: snapshotViewOf(snapshot) });
    },
  });

  app.get(SNAPSHOTS, {
    config: readScope,
    schema: {
      tags,
      summary: 'List the snapshots of sleeping sessions, newest first',
      description: `Cursor pagination. ${tenancy}`,
      querystring: listSnapshotsQuery,
      response: {
        200: envelope(z.object({ snapshots: z.array(snapshotView), nextCursor })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => {
      const page = await snapshots.list(scopeOf(request), request.query);
      return ok({ snapshots: page.items.map(snapshotViewOf), nextCursor: page.nextCursor });
    },
  });

  app.get(`${SNAPSHOTS}/:id`, {
    config: readScope,
    schema: {
      tags,
      summary: 'A snapshot: its tabs, origins and cookie count (never a cookie or storage value)',
      description: tenancy,
      params: idParams,
      response: { 200: envelope(z.object({ snapshot: snapshotView })), ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) =>
      ok({ snapshot: snapshotViewOf(await snapshots.get(scopeOf(request), request.params.id)) }),
  });

  app.post(`${SNAPSHOTS}/:id/wake`, {
    config: writeScope,
    // Scale-out: a process that runs no browsers passes the wake to a host with room (before validation, as the
    // sessions' routes are forwarded).
    preValidation: async (request, reply) => {
      const target = await sessions.scaleOut.wakeTarget(request);
      if (target) return forwardHttp(request, reply, target);
    },
    schema: {
      tags,
      summary: 'Wake a sleeping session: the same session LIVE again with its state',
      description:
        'A new Chromium on this host; cookies and storage are restored before the tabs load, the tabs reopen at ' +
        'their URLs in order with the active one active and scrolled where they were. The session keeps its id ' +
        'and its `cdpUrl` form; the snapshot is gone once it is awake. 429 CAPACITY_EXCEEDED (with Retry-After) ' +
        `when the host, the user or the clientRef has no room for another live session, as a create. ${tenancy}`,
      params: idParams,
      response: { 200: envelope(z.object({ session: sessionView })), ...errorResponses(400, 401, 403, 404, 429, 503) },
    },
    handler: async (request) => {
      const row = await snapshots.wake(scopeOf(request), request.params.id);
      return ok({ session: await sessions.get(request, row.id, base(request)) });
    },
  });

  app.delete(`${SNAPSHOTS}/:id`, {
    config: writeScope,
    schema: {
      tags,
      summary: 'Delete a snapshot: its sleeping session can no longer wake and ends RELEASED',
      description: tenancy,
      params: idParams,
      response: { 200: successOnly, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) => {
      await snapshots.remove(scopeOf(request), request.params.id);
      return done('Snapshot deleted');
    },
  });
};
