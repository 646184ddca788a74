/**
 * Live views of browser sessions: signed, expiring, revocable URLs of an embeddable page that shows the session's
 * active tab and, for `interact` views, takes a person's mouse and keyboard (docs/browser.md "Live viewer"). One
 * per process (`liveViewsOf`): the screencast hubs it holds are those of this host's sessions.
 */
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { AppDeps } from '../../../deps.ts';
import { secretKeyMaterial } from '../../../shared/crypto.ts';
import { AppError, notFound } from '../../../shared/errors.ts';
import { emitEvent } from '../../../shared/events.ts';
import { storedId } from '../../../shared/ids.ts';
import type { CdpGrant } from '../cdp/token.ts';
import { forwardedHeaders, openUpstream, type Upstream } from '../hosts/forward.ts';
import type { LiveSession } from '../sessions/host.ts';
import { operationsOf } from '../sessions/operations.ts';
import { browserSessionsOf } from '../sessions/sessions.service.ts';
import type { SessionOperations } from '../tabs/session-browser.ts';
import { type LiveViewRow, liveViewsRepository as repo } from './live.repository.ts';
import type { CreateLiveViewBody, LiveMode, LiveViewView } from './live.schemas.ts';
import { viewerMessage } from './live.schemas.ts';
import { type LiveGrant, liveTokenKey, signLiveToken, verifyLiveToken } from './live-token.ts';
import { LiveHub, type Viewer } from './screencast.ts';

/** What a viewer's socket may hold unsent before it is dropped: a few frames, not a backlog. */
const MAX_VIEWER_BUFFERED_BYTES = 4 * 1024 * 1024;
/** The largest message a viewer may send (input events are a few hundred bytes). */
export const VIEWER_MAX_PAYLOAD = 4096;
/** A viewer closed politely that does not answer the close is cut off after this. */
const CLOSE_GRACE_MS = 1000;

/** Where the stream of a token is served: relayed from the host that holds the session, or here. */
export type StreamTarget = { relay: Upstream } | { view: LiveViewRow; live: LiveSession };

const keyRevoked = () => new AppError('UNAUTHORIZED', 'The API key that made this live view is revoked or expired');

/** http(s)://… of the service as this request reached it, or PUBLIC_URL. */
export const publicBase = (publicUrl: string | undefined, request: FastifyRequest): string =>
  publicUrl ? publicUrl.replace(/\/+$/, '') : `${request.protocol}://${request.host}`;

export type LiveViews = ReturnType<typeof createLiveViews>;

export function createLiveViews(deps: AppDeps) {
  const { config, db, clock, logger } = deps;
  const sessions = browserSessionsOf(deps);
  const key = liveTokenKey(secretKeyMaterial(config));
  const now = () => clock.now().getTime();
  const hubs = new Map<string, Promise<{ hub: LiveHub; ops: SessionOperations }>>();

  const toView = (row: LiveViewRow, base: string): LiveViewView => ({
    id: row.id,
    url: `${base}/api/browser/live/${signLiveToken(key, { viewId: row.id, expiresAt: row.expiresAt.getTime() })}`,
    expiresAt: row.expiresAt.toISOString(),
    mode: row.mode as LiveMode,
  });

  /** The grant of a token: 401 when it is forged or expired. */
  function grantOf(token: string): LiveGrant {
    const grant = verifyLiveToken(key, token, now());
    if (!grant) throw new AppError('UNAUTHORIZED', 'Invalid or expired live-view token: create a new live view');
    return grant;
  }

  /** The view a grant names: 404 once revoked (or gone with its session). */
  async function viewOf(grant: LiveGrant): Promise<LiveViewRow> {
    const row = await repo.find(db, grant.viewId);
    if (!row || row.revokedAt || row.expiresAt.getTime() !== grant.expiresAt) throw notFound('Live view');
    return row;
  }

  /** The session's grant, as a cdpUrl's token would carry it: the sessions service checks it the same way. */
  const sessionGrant = (view: LiveViewRow): CdpGrant => ({
    sessionId: view.sessionId,
    userId: view.userId,
    clientRef: view.clientRef,
    keyId: view.keyId,
    expiresAt: view.expiresAt.getTime(),
  });

  /**
   * This host's hub of a session: one screencast whatever the number of viewers (none while nobody watches), kept
   * until the session ends.
   */
  function hubOf(live: LiveSession): Promise<{ hub: LiveHub; ops: SessionOperations }> {
    let pending = hubs.get(live.id);
    if (!pending) {
      pending = operationsOf(deps, live).then((ops) => {
        const hub = new LiveHub(ops, {
          maxFps: config.BROWSER_LIVE_MAX_FPS,
          maxBufferedBytes: MAX_VIEWER_BUFFERED_BYTES,
        });
        ops.browser.once('disconnected', () => {
          if (hubs.get(live.id) === pending) hubs.delete(live.id);
          hub.end('the session ended');
        });
        return { hub, ops };
      });
      pending.catch(() => hubs.delete(live.id));
      hubs.set(live.id, pending);
    }
    return pending;
  }

  async function control(view: LiveViewRow, hub: LiveHub, ops: SessionOperations, action: 'take' | 'release') {
    const at = clock.now();
    // Only a change of who has control is logged and told to the webhooks: a page sending the same message over and
    // over fills neither the logs nor anyone's webhook endpoint.
    const holds = hub.controller === view.id;
    if ((action === 'take') === holds) return;
    hub.controller = action === 'take' ? view.id : undefined;
    ops.logs.add({
      type: 'live',
      tabId: hub.tabId ?? '',
      level: 'info',
      text: `live view ${view.id}: ${action === 'take' ? 'took control' : 'released control'}`,
    });
    hub.broadcast({ type: 'control', action, viewId: view.id });
    await db.transaction((tx) =>
      emitEvent(tx, view.userId, 'browser.live.control', {
        sessionId: view.sessionId,
        liveViewId: view.id,
        action,
        clientRef: view.clientRef,
        at: at.toISOString(),
      }),
    );
  }

  return {
    async create(request: FastifyRequest, sessionId: string, body: CreateLiveViewBody): Promise<LiveViewView> {
      const live = await sessions.findLiveSession(request, sessionId);
      const row = await repo.insert(db, {
        sessionId: live.id,
        userId: live.userId,
        clientRef: live.clientRef,
        keyId: request.principal?.keyId ?? null,
        mode: body.mode,
        expiresAt: new Date(now() + body.expiresInMs),
        createdAt: clock.now(),
      });
      return toView(row, publicBase(config.PUBLIC_URL, request));
    },

    /** Revokes a view: its URL answers 404 from now on and its open viewers on this host are closed at once. */
    async revoke(request: FastifyRequest, sessionId: string, viewId: string): Promise<void> {
      const session = await sessions.get(request, sessionId, '');
      const key = storedId(viewId);
      const row = key ? await repo.revoke(db, session.id, key, clock.now()) : undefined;
      if (!row) throw notFound('Live view', 'viewId');
      const held = hubs.get(session.id);
      if (held) (await held).hub.close(1008, 'the live view was revoked', row.id);
    },

    /**
     * The page of a token: its mode (401 for a forged or expired token, or once the API key that made it is revoked;
     * 404 once the view is revoked). The stream checks the account and the session too.
     */
    async pageOf(token: string): Promise<LiveMode> {
      const view = await viewOf(grantOf(token));
      if (view.keyId !== null && !(await deps.apiKeys.isLive(view.keyId))) throw keyRevoked();
      return view.mode as LiveMode;
    },

    /** Where a token's stream is served; refusals (401, 404, 503) before the upgrade. */
    async streamOf(request: FastifyRequest, token: string): Promise<StreamTarget> {
      const view = await viewOf(grantOf(token));
      const grant = sessionGrant(view);
      const target = await sessions.scaleOut.targetForGrant(request, grant, view.sessionId);
      if (target) return { relay: await openUpstream(target, request.url, forwardedHeaders(request)) };
      return { view, live: await sessions.liveForGrant(grant, view.sessionId) };
    },

    /** A viewer's socket on this host: frames out, input in (interact views only), closed at expiry. */
    async attach(ws: WebSocket, view: LiveViewRow, live: LiveSession): Promise<void> {
      // Like a cdpUrl, a view stands only while the API key that made it does: held from the first moment, so a
      // revocation while the hub connects closes it too.
      const close = (code: number, reason: string) => {
        // A viewer that does not read cannot read a close frame either.
        if (code === 1013) return ws.terminate();
        ws.close(code, reason);
        setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
      };
      const unbind = sessions.keyBound.add(view.keyId, () =>
        close(1008, 'the API key that made this live view was revoked or expired'),
      );
      ws.once('close', unbind);
      let held: { hub: LiveHub; ops: SessionOperations };
      try {
        held = await hubOf(live);
      } catch {
        return ws.close(1011, 'the browser is gone');
      }
      const { hub, ops } = held;
      if (ws.readyState !== ws.OPEN) return;
      const viewer: Viewer = {
        viewId: view.id,
        mode: view.mode as LiveMode,
        send: (text) => ws.send(text),
        get bufferedAmount() {
          return ws.bufferedAmount;
        },
        close,
      };
      const expiry = setTimeout(() => viewer.close(1008, 'the live view expired'), view.expiresAt.getTime() - now());
      expiry.unref();
      // An open viewer is a client of the session: it does not end idle while someone watches.
      live.clients++;
      live.lastActivity = now();
      ws.once('close', () => {
        clearTimeout(expiry);
        live.clients--;
        live.lastActivity = now();
        hub.remove(viewer);
      });
      ws.on('message', (data) => {
        let message: unknown;
        try {
          message = JSON.parse(String(data));
        } catch {
          return ws.send(JSON.stringify({ type: 'error', field: 'message', message: 'not JSON' }));
        }
        const parsed = viewerMessage.safeParse(message);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          const field = issue?.path.join('.') || 'type';
          return ws.send(JSON.stringify({ type: 'error', field, message: issue?.message ?? 'invalid' }));
        }
        // A view-only token's input never reaches the browser, whatever its page sends.
        if (viewer.mode !== 'interact') {
          hub.inputsDropped++;
          return;
        }
        const input = parsed.data;
        const applied = input.type === 'control' ? control(view, hub, ops, input.action) : hub.input(input);
        applied.catch((err) => logger.debug({ err, sessionId: live.id }, 'live viewer input not applied'));
      });
      hub.add(viewer);
    },

    /** The hub of a session held here, for figures (screencasts started, frames sent, input dropped). */
    async hubStats(sessionId: string) {
      const held = hubs.get(sessionId);
      if (!held) return undefined;
      const { hub } = await held;
      return {
        viewers: hub.viewers.size,
        screencastsStarted: hub.screencastsStarted,
        framesReceived: hub.framesReceived,
        framesSent: hub.framesSent,
        inputsDropped: hub.inputsDropped,
      };
    },
  };
}

const perProcess = new WeakMap<AppDeps, LiveViews>();

/** The one live-views service of these deps. */
export function liveViewsOf(deps: AppDeps): LiveViews {
  let views = perProcess.get(deps);
  if (!views) {
    views = createLiveViews(deps);
    perProcess.set(deps, views);
  }
  return views;
}
