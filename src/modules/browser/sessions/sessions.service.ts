/**
 * Browser sessions: admission, start, views with a fresh cdpUrl, changes, release, and the reaper that ends
 * sessions at their deadline, when idle, or when their Chromium died. One per process (`browserSessionsOf`):
 * the Chromium processes it holds are the process's.
 */
import os from 'node:os';
import type { FastifyRequest } from 'fastify';
import type { AppDeps } from '../../../deps.ts';
import { secretKeyMaterial } from '../../../shared/crypto.ts';
import { AppError, accountSuspended, notFound, validationError } from '../../../shared/errors.ts';
import { emitEvent } from '../../../shared/events.ts';
import { storedId } from '../../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../../shared/pagination.ts';
import { createProxyProfileService } from '../../proxy-profiles/index.ts';
import { accountStatusOf } from '../../users/index.ts';
import { type CdpGrant, cdpTokenKey, verifyCdpToken } from '../cdp/token.ts';
import { createExtensions } from '../extensions/extensions.service.ts';
import { followDownloads } from '../files/files.service.ts';
import { hostIdOf } from '../hosts/registry.ts';
import { profileLeasesOf } from '../profiles/profile-leases.ts';
import { startRecording } from '../recording/recorder.ts';
import { createSnapshots } from '../snapshots/snapshots.service.ts';
import { releaseIfAccountEnded, watchAccounts } from './account-watch.ts';
import { BrowserHost, type LiveSession } from './host.ts';
import { createKeyBoundClients } from './key-bound.ts';
import { admissionLimits, admit, minutesOf } from './lifecycle.ts';
import { createLiveLookup } from './live-lookup.ts';
import { createReaper } from './reaper.ts';
import { createScaleOut } from './scale-out.ts';
import { sessionView } from './session-view.ts';
import { sessionsRepository as repo, type SessionRow, type SessionScope } from './sessions.repository.ts';
import type {
  CreateSessionBody,
  ListSessionsQuery,
  SessionStatus,
  SessionView,
  UpdateSessionBody,
} from './sessions.schemas.ts';
import { refForCreate, scopeOf } from './tenancy.ts';

const DEFAULT_VIEWPORT = { width: 1280, height: 720 };
/** The reaper's period: a session ends within this of its deadline (the issue asks for 5 s at most). */
const REAP_INTERVAL_MS = 1000;

/** endReason of a session whose CDP client closed the browser. */
export const CLOSED_BY_CLIENT = 'closed by a CDP client (Browser.close)';

export type BrowserSessions = ReturnType<typeof createBrowserSessions>;

export function createBrowserSessions(deps: AppDeps) {
  const { config, db, clock, logger } = deps;
  const now = () => clock.now().getTime();
  const tokenKey = cdpTokenKey(secretKeyMaterial(config));
  const proxyProfiles = createProxyProfileService(deps);
  const hostId = hostIdOf(config);
  let starting = 0;
  let reaper: NodeJS.Timeout | undefined;
  const ending = new Map<string, Promise<SessionRow | undefined>>();

  const host = config.RUN_BROWSERS
    ? new BrowserHost({
        chromiumPath: config.CHROMIUM_PATH,
        dataDir: config.dataDir,
        hostId,
        warmPool: config.BROWSER_WARM_POOL,
        defaultViewport: DEFAULT_VIEWPORT,
        allowPrivateNetwork: config.ALLOW_PRIVATE_NETWORK,
        now,
        onDied: (session, reason) =>
          // A client's Browser.close is a release by that client, not a failure.
          void (session.mux.closedByClient
            ? end(session.id, 'RELEASED', CLOSED_BY_CLIENT)
            : end(session.id, 'FAILED', reason)),
      })
    : undefined;
  const limits = admissionLimits(config);
  /** Why this host cannot start another session now (sessions, those starting or waking, free memory); none: it can. */
  const hostRefusal = () =>
    host &&
    admit(
      {
        hostLive: host.liveCount + starting + snapshots.waking,
        userLive: 0,
        freeMemoryMb: os.freemem() / 2 ** 20,
      },
      limits,
    );
  const scaleOut = createScaleOut(deps, { hostId, host, end, hasRoom: () => !hostRefusal() });
  const snapshots = createSnapshots(deps, {
    hostId,
    host,
    internalUrl: () => scaleOut.internalUrl,
    hostRefusal: () => hostRefusal() || undefined,
    end,
  });
  const { liveOf, lostHere } = createLiveLookup({ hostId, host, ending, transitioning: snapshots.busy, end });
  const extensions = createExtensions(db, config.dataDir);
  const profiles = profileLeasesOf(deps);

  /** Ends a session once (Chromium closed first), charging its minutes and telling the webhooks in one transaction. */
  function end(id: string, status: SessionStatus, reason: string, charge = true): Promise<SessionRow | undefined> {
    let pending = ending.get(id);
    if (!pending) {
      pending = (async () => {
        await profiles.beforeClose(id, async () => host!.playwright(id)); // a writer saves its state first
        await host?.close(id);
        const at = clock.now();
        return db.transaction(async (tx) => {
          const row = await repo.end(tx, id, status, reason, at);
          if (!row) return undefined;
          if (row.persistProfile) await profiles.free(tx, row.id); // its writer lease ends with it (crash, lost host)
          // The live part now ending (none for a sleeping session: each sleep charged the part it ended).
          const minutes = charge && row.liveSince ? minutesOf(row.liveSince.getTime(), at.getTime()) : 0;
          if (minutes > 0) {
            await deps.credits.spend(tx, row.userId, 'browser_minutes', minutes, {
              partial: true,
              reason: `browser session ${id}`,
            });
          }
          await emitEvent(tx, row.userId, 'browser.session.ended', {
            sessionId: id,
            status,
            endReason: reason,
            clientRef: row.clientRef,
            metadata: row.metadata,
            minutes: row.billedMinutes + minutes,
            createdAt: row.createdAt.toISOString(),
            endedAt: at.toISOString(),
          });
          return row;
        });
      })().finally(() => ending.delete(id));
      pending.catch((err) => logger.error({ err, sessionId: id }, 'ending a browser session failed'));
      ending.set(id, pending);
    }
    return pending;
  }

  let unwatchUsers: (() => void) | undefined;
  const keyBound = createKeyBoundClients(deps);

  const view = (row: SessionRow, base: string, request: FastifyRequest): SessionView =>
    sessionView(row, base, { hostId, host, tokenKey, now, keyId: request.principal?.keyId ?? null });

  async function findRow(scope: SessionScope, id: string): Promise<SessionRow> {
    const key = storedId(id);
    const row = key ? await repo.find(db, scope, key) : undefined;
    if (!row) throw notFound('Browser session');
    return row;
  }

  return {
    hostId,
    host,
    scaleOut,
    snapshots,
    /** This host's sockets opened with a cdpUrl or a live view: closed when the API key that made it stops standing. */
    keyBound,

    async start(): Promise<void> {
      await scaleOut.start();
      const killed = host?.start();
      if (killed) logger.warn({ killed }, 'killed Chromium processes left by a previous run of this host');
      // The embedded database serves one process: after its restart no session runs, whatever host id it recorded
      // (an earlier version's, or a run with other settings); on PostgreSQL, this host's own.
      const stale =
        deps.database.kind === 'pglite' ? await repo.liveAll(db) : host ? await repo.liveOnHost(db, hostId) : [];
      for (const row of stale) await end(row.id, 'FAILED', 'the host restarted', false);
      if (!host) return;
      unwatchUsers = watchAccounts(deps, host, end);
      keyBound.start();
      const reap = createReaper({ db, hostId, host, now, end, lostHere, ending, sleep: snapshots.autoSleep });
      reaper = setInterval(() => void reap(), REAP_INTERVAL_MS);
      reaper.unref();
    },

    /** Every session of this host released, then every Chromium gone. */
    async stop(): Promise<void> {
      clearInterval(reaper);
      unwatchUsers?.();
      keyBound.stop();
      if (host) {
        await Promise.all(host.sessions().map((s) => end(s.id, 'RELEASED', 'the service stopped').catch(() => {})));
        await Promise.all([...ending.values()].map((p) => p.catch(() => {})));
        await host.stop();
      }
      await scaleOut.stop();
    },

    async create(request: FastifyRequest, body: CreateSessionBody, base: string): Promise<SessionView> {
      const scope = scopeOf(request);
      const clientRef = refForCreate(scope.clientRef, body.clientRef);
      if (!host) {
        throw new AppError('SERVICE_UNAVAILABLE', 'This process hosts no browser sessions (RUN_BROWSERS=false)');
      }
      await deps.credits.assert(db, scope.userId, 'browser_minutes', 1);
      const extensionDirs = await extensions.dirsFor(scope.userId, body.extensionIds);
      // 404 naming proxyProfileId unless it is the caller's; resolved before anything is stored or started.
      const proxyProfileId = body.proxyProfileId ? (storedId(body.proxyProfileId) ?? body.proxyProfileId) : null;
      const proxyUrls = proxyProfileId ? await proxyProfiles.proxyUrlsFor(scope.userId, proxyProfileId) : [];
      const profile = await profiles.forCreate(db, { userId: scope.userId, clientRef: clientRef ?? undefined }, body);
      const refuse = (refusal: { message: string; retryAfterSeconds: number }) =>
        new AppError('CAPACITY_EXCEEDED', refusal.message, {
          headers: { 'retry-after': String(refusal.retryAfterSeconds) },
        });
      const full = hostRefusal();
      if (full) throw refuse(full);
      starting++;
      try {
        const viewport = body.viewport ?? DEFAULT_VIEWPORT;
        const timeoutMs = body.timeoutMs ?? config.BROWSER_SESSION_TIMEOUT_MS;
        const row = await db.transaction(async (tx) => {
          await repo.lockUser(tx, scope.userId);
          const userLive = await repo.countLive(tx, scope.userId);
          const refLive = clientRef === null ? undefined : await repo.countLive(tx, scope.userId, clientRef);
          const refusal = admit({ hostLive: 0, userLive, refLive, freeMemoryMb: Number.POSITIVE_INFINITY }, limits);
          if (refusal) throw refuse(refusal);
          const createdAt = clock.now();
          const inserted = await repo.insert(tx, {
            userId: scope.userId,
            clientRef,
            status: 'STARTING',
            viewportWidth: viewport.width,
            viewportHeight: viewport.height,
            profileId: profile?.id ?? null,
            persistProfile: body.persistProfile,
            proxyProfileId,
            timeoutMs,
            idleTimeoutMs: body.idleTimeoutMs ?? config.BROWSER_IDLE_TIMEOUT_MS,
            keepAlive: body.keepAlive,
            autoSleepMs: body.autoSleepMs ?? null,
            record: body.record,
            extensionIds: body.extensionIds,
            metadata: body.metadata,
            hostId,
            hostAddress: scaleOut.internalUrl,
            expiresAt: new Date(createdAt.getTime() + timeoutMs),
            liveSince: createdAt,
            createdAt,
            updatedAt: createdAt,
          });
          await profiles.acquire(tx, profile, inserted); // persistProfile: the writer lease, or 409 PROFILE_LOCKED
          return inserted;
        });
        try {
          const live = await host.open(
            {
              id: row.id,
              userId: row.userId,
              clientRef: row.clientRef,
              expiresAt: row.expiresAt.getTime(),
              idleTimeoutMs: row.idleTimeoutMs,
              keepAlive: row.keepAlive,
              autoSleepMs: row.autoSleepMs,
            },
            viewport,
            extensionDirs,
            proxyUrls,
          );
          await profiles.restore(row.id, () => host.playwright(row.id)); // starts where its profile was saved
          // Downloads become the session's files (they land in its directory anyway: the profile's preferences
          // say so); followed from here on, without holding the create up for the round trips.
          void followDownloads(live).catch((err) => logger.warn({ err, sessionId: row.id }, 'downloads not followed'));
          // Recording starts before the session is answered, so before any page can load.
          if (row.record) await startRecording(await host.playwright(row.id), config.dataDir, row.id);
        } catch (err) {
          await end(row.id, 'FAILED', `chromium did not start: ${(err as Error).message}`, false);
          logger.error({ err }, 'a browser session could not start');
          throw new AppError('SERVICE_UNAVAILABLE', 'The browser could not be started', {
            headers: { 'retry-after': '5' },
          });
        }
        const liveRow = await repo.markLive(db, row.id, clock.now());
        if (!liveRow) {
          // Its Chromium died, or the service began to stop, between the launch and now: the row has ended.
          await host.close(row.id);
          throw new AppError('SERVICE_UNAVAILABLE', 'The browser stopped while it was starting', {
            headers: { 'retry-after': '5' },
          });
        }
        // An account suspended while its session started: the watcher saw no session of it then.
        const released = await releaseIfAccountEnded(db, host, end, row.userId);
        return view(released ? await findRow({ userId: row.userId }, row.id) : liveRow, base, request);
      } finally {
        starting--;
      }
    },

    async get(request: FastifyRequest, id: string, base: string): Promise<SessionView> {
      return view(await findRow(scopeOf(request), id), base, request);
    },

    async list(request: FastifyRequest, query: ListSessionsQuery, base: string) {
      const scope = scopeOf(request);
      const [key, ...rest] = query.metadata?.split('=') ?? [];
      const rows = await repo.list(db, scope, {
        status: query.status,
        clientRef: query.clientRef,
        metadata: key !== undefined ? [key, rest.join('=')] : undefined,
        before: decodeCursor(query.cursor),
        limit: query.limit,
      });
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { sessions: items.map((row) => view(row, base, request)), nextCursor };
    },

    async update(request: FastifyRequest, id: string, body: UpdateSessionBody, base: string): Promise<SessionView> {
      // A sleeping session wakes for it (a change of its deadline counts from the wake).
      const row = await snapshots.awake(await findRow(scopeOf(request), id));
      const live = liveOf(row);
      let expiresAt = row.expiresAt.getTime();
      let timeoutMs = row.timeoutMs;
      if (body.timeoutMs !== undefined) {
        timeoutMs = body.timeoutMs;
        expiresAt = row.createdAt.getTime() + timeoutMs;
      }
      if (body.extendMs !== undefined) {
        expiresAt += body.extendMs;
        timeoutMs = expiresAt - row.createdAt.getTime();
      }
      if (expiresAt <= now()) throw validationError('timeoutMs', 'the new deadline has already passed');
      const updated = await repo.update(
        db,
        row.id,
        {
          expiresAt: new Date(expiresAt),
          timeoutMs,
          keepAlive: body.keepAlive,
          autoSleepMs: body.autoSleepMs,
          metadata: body.metadata,
        },
        clock.now(),
      );
      live.expiresAt = expiresAt;
      if (body.keepAlive !== undefined) live.keepAlive = body.keepAlive;
      if (body.autoSleepMs !== undefined) live.autoSleepMs = body.autoSleepMs;
      live.lastActivity = now();
      return view(updated ?? row, base, request);
    },

    async release(request: FastifyRequest, id: string, base: string): Promise<SessionView> {
      const row = await findRow(scopeOf(request), id);
      if (row.status === 'SLEEPING') await end(row.id, 'RELEASED', 'released');
      else if (row.status === 'LIVE' || row.status === 'STARTING') {
        // Held here (or starting here): released; held by another live host: 503 from liveOf.
        if (row.hostId !== hostId) liveOf(row);
        await end(row.id, 'RELEASED', 'released');
      }
      return view(await findRow({ userId: row.userId }, row.id), base, request);
    },

    /**
     * Releases every live session the request sees: those of this host here, those of other live hosts by the same
     * request on each of them (scale-out); `elsewhere` counts the ones no host could be asked to release.
     */
    async releaseAll(request: FastifyRequest): Promise<{ released: number; elsewhere: number }> {
      const live = await repo.listLive(db, scopeOf(request));
      const here = live.filter((s) => host?.get(s.id));
      const others = [...new Set(live.filter((s) => !host?.get(s.id)).map((s) => s.hostId))];
      const [ended, releasedElsewhere] = await Promise.all([
        Promise.all(here.map((s) => end(s.id, 'RELEASED', 'released'))),
        scaleOut.releaseAllOn(request, others),
      ]);
      const released = ended.filter(Boolean).length + releasedElsewhere;
      return { released, elsewhere: Math.max(0, live.length - released) };
    },

    /** The live session a request names, for the session's operations (a sleeping one is woken first). */
    async findLiveSession(request: FastifyRequest, id: string): Promise<LiveSession> {
      const live = liveOf(await snapshots.awake(await findRow(scopeOf(request), id)));
      live.lastActivity = now();
      return live;
    },

    /** The service's own Playwright on a live session of this host (connected once, reused). */
    playwright: (sessionId: string) => {
      if (!host) return Promise.reject(new Error('this process hosts no browser sessions'));
      return host.playwright(sessionId);
    },

    /** A cdpUrl's token: the grant when valid and unexpired. */
    verifyToken: (token: string): CdpGrant | undefined => verifyCdpToken(tokenKey, token, now()),

    /** The session a valid grant names, when it is live or sleeping (404 otherwise, 503 on another host). */
    async liveForGrant(grant: CdpGrant, id: string): Promise<LiveSession> {
      // The token outlives checks of the account and the key: a suspended user's is refused as the API key is, a
      // deleted one's 404, and one minted by a key revoked (or expired) since is 401 like that key.
      const key = storedId(id);
      const [account, keyLive, row] = await Promise.all([
        accountStatusOf(db, grant.userId),
        grant.keyId === null ? true : deps.apiKeys.isLive(grant.keyId),
        key === grant.sessionId ? repo.find(db, { userId: grant.userId }, key) : undefined,
      ]);
      if (account !== 'active') throw account === 'suspended' ? accountSuspended() : notFound('Browser session');
      if (!keyLive) throw new AppError('UNAUTHORIZED', 'The API key that asked for this cdpUrl is revoked or expired');
      const waking = row?.status === 'STARTING' && snapshots.busy(row.id);
      if (!row || row.clientRef !== grant.clientRef || !(['LIVE', 'SLEEPING'].includes(row.status) || waking))
        throw notFound('Browser session');
      // A sleeping session wakes for its client, which waits for it.
      return liveOf(await snapshots.awake(row));
    },
  };
}

const perProcess = new WeakMap<AppDeps, BrowserSessions>();

/** The one sessions service of these deps (its host holds this process's Chromium processes). */
export function browserSessionsOf(deps: AppDeps): BrowserSessions {
  let sessions = perProcess.get(deps);
  if (!sessions) {
    sessions = createBrowserSessions(deps);
    perProcess.set(deps, sessions);
  }
  return sessions;
}
