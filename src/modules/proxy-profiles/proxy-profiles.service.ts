/**
 * Proxy profiles (docs/scraping.md "Proxy profiles"): a proxy (http, https or socks5) with its credentials sealed
 * at rest, checked on create, used by sources' crawls, markdown exports and browser sessions, which ask
 * `proxyUrlsFor` here for the URLs to go out through.
 */
import type { Db } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { isForeignKeyViolation } from '../../shared/db-errors.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { assertPublicHost, ssrfCause } from '../../shared/ssrf.ts';
import { CrawlError } from '../scraping/index.ts';
import { checkProxy } from './proxy-check.ts';
import { type ProxyProfileRow, proxyProfileRepository } from './proxy-profiles.repository.ts';
import type { CreateProxyProfileInput, ProxyProfileView } from './proxy-profiles.schemas.ts';
import { type ProxyEndpoint, proxyUrl, shownProxyUrl } from './proxy-url.ts';

export const toProxyProfileView = (r: ProxyProfileRow): ProxyProfileView => ({
  id: r.id,
  name: r.name,
  type: r.type,
  host: r.host,
  port: r.port,
  auth: r.username === null ? null : { username: r.username, passwordSet: r.passwordSealed !== null },
  rotation: r.rotation,
  checkedAt: r.checkedAt?.toISOString() ?? null,
  createdAt: r.createdAt.toISOString(),
});

const endpointsOf = (r: Pick<ProxyProfileRow, 'host' | 'port' | 'rotation'>): ProxyEndpoint[] => [
  { host: r.host, port: r.port },
  ...(r.rotation?.endpoints ?? []),
];

export type ProxyProfileService = ReturnType<typeof createProxyProfileService>;

export function createProxyProfileService(deps: Pick<AppDeps, 'db' | 'clock' | 'config'>) {
  const repo = proxyProfileRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const allowPrivate = deps.config.ALLOW_PRIVATE_NETWORK;

  /** A proxy on a private address would be a way into the operator's network: refused like any target. */
  async function assertPublicEndpoints(endpoints: ProxyEndpoint[], field: (i: number) => string): Promise<void> {
    for (const [i, e] of endpoints.entries()) {
      try {
        await assertPublicHost(e.host, allowPrivate, `proxy://${e.host}:${e.port}`);
      } catch (error) {
        const blocked = ssrfCause(error);
        if (blocked) throw validationError(field(i), `the proxy host is not allowed: ${blocked.message}`);
        throw validationError(field(i), `the proxy host does not resolve: ${(error as Error).message}`);
      }
    }
  }

  const owned = (userId: string, id: string, field?: string) =>
    findOwned(id, 'Proxy profile', (key) => repo.find(userId, key), field);

  return {
    async create(userId: string, input: CreateProxyProfileInput): Promise<ProxyProfileView> {
      const endpoints = endpointsOf({ host: input.host, port: input.port, rotation: input.rotation ?? null });
      await assertPublicEndpoints(endpoints, (i) => (i === 0 ? 'host' : `rotation.endpoints.${i - 1}.host`));
      let checkedAt: Date | null = null;
      if (!input.skipTest) {
        // Every endpoint is checked: a rotation with one dead endpoint would fail a share of the requests.
        for (const e of endpoints)
          await checkProxy(
            proxyUrl(input.type, e, input.auth),
            deps.config.PROXY_CHECK_URL,
            shownProxyUrl(input.type, e),
          );
        checkedAt = deps.clock.now();
      }
      const now = deps.clock.now();
      const row = await repo.insert({
        userId,
        name: input.name ?? null,
        type: input.type,
        host: input.host,
        port: input.port,
        username: input.auth?.username ?? null,
        passwordSealed: input.auth ? box.seal(input.auth.password) : null,
        rotation: input.rotation ?? null,
        checkedAt,
        createdAt: now,
        updatedAt: now,
      });
      return toProxyProfileView(row);
    },

    async list(userId: string, query: { limit: number; cursor?: string }) {
      const rows = await repo.list(userId, decodeCursor(query.cursor), query.limit);
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { proxyProfiles: items.map(toProxyProfileView), nextCursor };
    },

    get: async (userId: string, id: string) => toProxyProfileView(await owned(userId, id)),

    /** Refused with 409 CONFLICT while a source names it or an export or browser session runs with it. */
    async remove(userId: string, id: string): Promise<void> {
      const row = await owned(userId, id);
      const users = await repo.users(userId, row.id);
      const named = [
        ...users.sources.map((s) => `source ${s}`),
        ...users.markdownExports.map((e) => `markdown export ${e}`),
        ...users.browserSessions.map((s) => `browser session ${s}`),
      ];
      if (named.length)
        throw new AppError('CONFLICT', `The proxy profile is in use by ${named.join(', ')}`, {
          details: named.map((message) => ({ field: 'id', message })),
        });
      try {
        if (!(await repo.delete(userId, row.id))) throw notFound('Proxy profile');
      } catch (error) {
        // A source took the profile between the check and the delete: the foreign key refuses it.
        if (isForeignKeyViolation(error)) throw new AppError('CONFLICT', 'The proxy profile is in use by a source');
        throw error;
      }
    },

    /** 404 naming `field` unless the caller owns the profile (a body's `proxyProfileId`). */
    async assertOwned(userId: string, id: string, field = 'proxyProfileId'): Promise<string> {
      return (await owned(userId, id, field)).id;
    },

    /**
     * The proxy URLs one crawl, export or browser session goes out through: every endpoint in turn for
     * `per-request` rotation, one picked at random for `per-session`, else the profile's own. Each endpoint's
     * host is checked by the SSRF guard again (a name may resolve elsewhere since the profile was made).
     */
    async proxyUrlsFor(userId: string, id: string): Promise<string[]> {
      const row = await owned(userId, id, 'proxyProfileId');
      let endpoints = endpointsOf(row);
      if (row.rotation?.mode === 'per-session') endpoints = [endpoints[Math.floor(Math.random() * endpoints.length)]!];
      else if (!row.rotation) endpoints = endpoints.slice(0, 1);
      await assertPublicEndpoints(endpoints, () => 'proxyProfileId');
      const auth =
        row.username === null
          ? undefined
          : { username: row.username, password: row.passwordSealed ? box.open(row.passwordSealed) : '' };
      return endpoints.map((e) => proxyUrl(row.type, e, auth));
    },

    /**
     * The proxies of a crawl (a source's job, a markdown export): its profile's, else SCRAPER_PROXY_URL, else none.
     * A profile that cannot be used (deleted, now on a private address) fails the crawl naming why: it never
     * falls back to going out directly.
     */
    async crawlProxyUrls(userId: string, profileId: string | null): Promise<string[] | undefined> {
      if (!profileId) return deps.config.SCRAPER_PROXY_URL ? [deps.config.SCRAPER_PROXY_URL] : undefined;
      try {
        return await this.proxyUrlsFor(userId, profileId);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        throw new CrawlError('other', `The proxy profile ${profileId} cannot be used: ${error.message}`);
      }
    },
  };
}

/** Whether the user owns this proxy profile (a source's `proxyProfileId`), for services without the secret box. */
export const ownsProxyProfile = async (db: Db, userId: string, id: string): Promise<boolean> =>
  (await proxyProfileRepository(db).find(userId, id)) !== undefined;
