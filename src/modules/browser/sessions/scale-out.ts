/**
 * Several API processes on one PostgreSQL database (docs/browser.md "Scale-out"): the hosts' registry, where a
 * request for a session goes (the process holding it), and the sweep that fails the sessions of a host that died.
 * On PGlite (one process) none of this runs.
 */
import type { FastifyRequest } from 'fastify';
import { request as undiciRequest } from 'undici';
import type { AppDeps } from '../../../deps.ts';
import { storedId } from '../../../shared/ids.ts';
import type { CdpGrant } from '../cdp/token.ts';
import { forwardedHeaders, wasForwarded } from '../hosts/forward.ts';
import type { HostRow } from '../hosts/hosts.repository.ts';
import { HOST_STALE_MS, hostsRepository } from '../hosts/hosts.repository.ts';
import { bootId, defaultInternalUrl, forwardableUrl, HostRegistry } from '../hosts/registry.ts';
import type { BrowserHost } from './host.ts';
import { LIVE_STATUSES, sessionsRepository as repo, type SessionRow } from './sessions.repository.ts';
import type { SessionStatus } from './sessions.schemas.ts';

/** How often every process looks for sessions of hosts that went silent (stale after 20 s: failed within 25 s). */
const SWEEP_MS = 5000;
/** Sweeps between clean-ups of hosts silent for a day. */
const FORGET_EVERY = 720;

const SESSIONS = '/api/browser/sessions';
const CDP_ROUTE = `${SESSIONS}/:id/cdp`;
/** A host releasing its sessions closes each Chromium: seconds, not minutes. */
const RELEASE_TIMEOUT_MS = 30_000;

/**
 * The headers of the release-all each other host is asked: without the body's type (none is sent) and without the
 * client's Idempotency-Key, which this process has already taken for this request (the host would answer 409).
 */
function releaseAllHeaders(headers: Record<string, string>): Record<string, string> {
  delete headers['content-type'];
  delete headers['idempotency-key'];
  return headers;
}

export interface ScaleOutParts {
  hostId: string;
  host: BrowserHost | undefined;
  end: (id: string, status: SessionStatus, reason: string) => Promise<SessionRow | undefined>;
  /** Whether this host can start another session now. */
  hasRoom: () => boolean;
}

export type ScaleOut = ReturnType<typeof createScaleOut>;

export function createScaleOut(deps: AppDeps, { hostId, host, end, hasRoom }: ScaleOutParts) {
  const { config, db, logger } = deps;
  const enabled = deps.database.kind === 'postgres';
  const onError = (err: unknown) => logger.warn({ err }, 'the browser hosts registry could not be written');
  const registry =
    enabled && host
      ? new HostRegistry({
          db,
          hostId,
          internalUrl: config.BROWSER_INTERNAL_URL?.replace(/\/+$/, '') ?? '',
          maxSessions: config.BROWSER_MAX_SESSIONS,
          liveSessions: () => host.liveCount,
          onError,
        })
      : undefined;
  let sweeper: NodeJS.Timeout | undefined;
  let sweeps = 0;
  const thisBoot = bootId();
  const warnedLoopback = new Set<string>();

  /**
   * Where a host's requests can be forwarded: a host on another machine recording a loopback URL is unreachable
   * (forwarding there would reach this process itself), said once per host id.
   */
  function urlOf(row: HostRow | undefined): string | undefined {
    if (!row?.internalUrl) return undefined;
    const url = forwardableUrl(row, thisBoot);
    if (!url && !warnedLoopback.has(row.hostId)) {
      warnedLoopback.add(row.hostId);
      logger.warn(
        { hostId: row.hostId, internalUrl: row.internalUrl },
        `browser host ${row.hostId} records a loopback BROWSER_INTERNAL_URL; set BROWSER_INTERNAL_URL on it`,
      );
    }
    return url;
  }

  async function sweep(): Promise<void> {
    const rows = await repo.liveOnLostHosts(db, hostId, HOST_STALE_MS);
    for (const row of rows) {
      logger.warn({ sessionId: row.id, hostId: row.hostId }, 'a browser host went silent: its session failed');
      await end(row.id, 'FAILED', 'host lost').catch(() => {});
    }
    if (++sweeps % FORGET_EVERY === 0) await hostsRepository.forgetOld(db);
  }

  /** The internal URL of a live host other than this one (only ever an address from the registry). */
  async function liveHostUrl(holder: string): Promise<string | undefined> {
    if (holder === hostId) return undefined;
    return urlOf(await hostsRepository.findLive(db, holder));
  }

  /** A live host with room (the registry's counts, a heartbeat old), for what this process cannot start itself. */
  async function roomUrl(): Promise<string | undefined> {
    return urlOf(await hostsRepository.withRoom(db, hostId));
  }

  /**
   * Where a session's requests go: to the live host that holds it; a sleeping one's to a host with room when this
   * process runs no browsers or has no room (it would wake there); undefined: answered here.
   */
  async function holderUrl(id: string): Promise<string | undefined> {
    const key = storedId(id);
    const holder = key ? await repo.holderOf(db, key) : undefined;
    if (holder?.status === 'SLEEPING' && !(host && hasRoom())) return roomUrl();
    if (!holder || !LIVE_STATUSES.includes(holder.status as SessionStatus)) return undefined;
    return liveHostUrl(holder.hostId);
  }

  return {
    /** This host's internal URL once known, recorded on the sessions it starts. */
    get internalUrl(): string | null {
      return registry?.internalUrl || null;
    },

    /** Claims the host id (refusing a second live process with it) before this host touches any Chromium. */
    async start(): Promise<void> {
      if (!enabled) return;
      await registry?.claim();
      sweeper = setInterval(() => void sweep().catch(onError), SWEEP_MS);
      sweeper.unref();
    },

    /** The API listener's port, once bound: the default internal URL is derived from it. */
    listening(port: number): void {
      if (!registry || config.BROWSER_INTERNAL_URL) return;
      registry.internalUrl = defaultInternalUrl(config.HOST, port);
      void registry.beat();
    },

    async stop(): Promise<void> {
      clearInterval(sweeper);
      await registry?.release();
    },

    /**
     * The host a REST request should be forwarded to: a session's routes when another live host holds it, a
     * create when this process runs no browsers or has no room (another live host, drawn by room; none: answered
     * here, 429 on a full host). Never a request that already crossed a hop: that one is answered here (503 when
     * this process does not hold its session).
     */
    async targetOf(request: FastifyRequest): Promise<string | undefined> {
      if (!enabled || wasForwarded(request)) return undefined;
      const route = request.routeOptions.url;
      if (route === SESSIONS) {
        if (request.method !== 'POST' || (host && hasRoom())) return undefined;
        return roomUrl();
      }
      if (!route?.startsWith(`${SESSIONS}/:id`) || route === CDP_ROUTE) return undefined;
      const { id } = request.params as { id?: string };
      return id === undefined ? undefined : holderUrl(id);
    },

    /**
     * The same release-all on each of `hostIds` that is live (one hop, the request's own credentials and clientRef,
     * so each host releases what this request may see there); answers how many they released.
     */
    async releaseAllOn(request: FastifyRequest, hostIds: string[]): Promise<number> {
      if (!enabled || wasForwarded(request)) return 0;
      const counts = await Promise.all(
        hostIds.map(async (holder) => {
          const url = await liveHostUrl(holder);
          if (!url) return 0;
          try {
            const answer = await undiciRequest(new URL(`${SESSIONS}/release-all`, url), {
              method: 'POST',
              headers: releaseAllHeaders(forwardedHeaders(request)),
              headersTimeout: RELEASE_TIMEOUT_MS,
              bodyTimeout: RELEASE_TIMEOUT_MS,
            });
            const body = (await answer.body.json()) as { data?: { released?: number } };
            return answer.statusCode === 200 ? (body.data?.released ?? 0) : 0;
          } catch (err) {
            logger.warn({ err, hostId: holder }, 'a browser host could not be asked to release its sessions');
            return 0;
          }
        }),
      );
      return counts.reduce((a, b) => a + b, 0);
    },

    /** Where a wake goes when this process runs no browsers or has no room: a live host with room (PostgreSQL). */
    async wakeTarget(request: FastifyRequest): Promise<string | undefined> {
      if (!enabled || (host && hasRoom()) || wasForwarded(request)) return undefined;
      return roomUrl();
    },

    /** The host a CDP WebSocket should be relayed to (the token is checked again there, under the same key). */
    async targetForGrant(request: FastifyRequest, grant: CdpGrant, id: string): Promise<string | undefined> {
      if (!enabled || wasForwarded(request) || storedId(id) !== grant.sessionId) return undefined;
      return holderUrl(id);
    },
  };
}
