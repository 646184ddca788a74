/**
 * Proxy profiles (docs/scraping.md "Proxy profiles"): a proxy (http, https or socks5) with its credentials sealed
 * at rest, checked on create, used by sources' crawls, markdown exports and browser sessions, which ask
 * `proxyUrlsFor` here for the URLs to go out through.
 */
import type { Db } from '../../db/client.ts';
import type { ProxyType } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { isForeignKeyViolation } from '../../shared/db-errors.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { checkedAddress, pinProxyUrl, type ResolveHost } from '../../shared/pinned-proxy.ts';
import { ssrfCause } from '../../shared/ssrf.ts';
import { CrawlError } from '../scraping/index.ts';
import { checkProxy } from './proxy-check.ts';
import { type ProxyProfileRow, proxyProfileRepository } from './proxy-profiles.repository.ts';
import type { CreateProxyProfileInput, ProxyProfileView } from './proxy-profiles.schemas.ts';
import { type ProxyCredentials, type ProxyEndpoint, proxyUrl, shownProxyUrl } from './proxy-url.ts';

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

/** `resolve`: tests only, the resolver of proxy hosts instead of the system's. */
export function createProxyProfileService(
  deps: Pick<AppDeps, 'db' | 'clock' | 'config'>,
  options: { resolve?: ResolveHost } = {},
) {
  const repo = proxyProfileRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const allowPrivate = deps.config.ALLOW_PRIVATE_NETWORK;

  /**
   * The URL of each endpoint for this one use. A proxy on a private address would be a way into the operator's
   * network: its host is resolved once and refused like any target, and the URL names the checked address so a
   * later answer of the name (DNS rebinding) is never connected to. ALLOW_PRIVATE_NETWORK keeps the names.
   */
  async function pinnedUrls(
    type: ProxyType,
    endpoints: ProxyEndpoint[],
    auth: ProxyCredentials | undefined,
    field: (i: number) => string,
  ): Promise<string[]> {
    const urls: string[] = [];
    for (const [i, e] of endpoints.entries()) {
      const url = proxyUrl(type, e, auth);
      if (allowPrivate) {
        urls.push(url);
        continue;
      }
      try {
        urls.push(
          pinProxyUrl(url, await checkedAddress(e.host, false, `proxy://${e.host}:${e.port}`, options.resolve)),
        );
      } catch (error) {
        const blocked = ssrfCause(error);
        if (blocked) throw validationError(field(i), `the proxy host is not allowed: ${blocked.message}`);
        throw validationError(field(i), `the proxy host does not resolve: ${(error as Error).message}`);
      }
    }
    return urls;
  }

  const owned = (userId: string, id: string, field?: string) =>
    findOwned(id, 'Proxy profile', (key) => repo.find(userId, key), field);

  return {
    async create(userId: string, input: CreateProxyProfileInput): Promise<ProxyProfileView> {
      const endpoints = endpointsOf({ host: input.host, port: input.port, rotation: input.rotation ?? null });
      const urls = await pinnedUrls(input.type, endpoints, input.auth, (i) =>
        i === 0 ? 'host' : `rotation.endpoints.${i - 1}.host`,
      );
      let checkedAt: Date | null = null;
      if (!input.skipTest) {
        // Every endpoint is checked: a rotation with one dead endpoint would fail a share of the requests.
        for (const [i, e] of endpoints.entries())
          await checkProxy(urls[i]!, deps.config.PROXY_CHECK_URL, shownProxyUrl(input.type, e));
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
     * host is resolved and checked by the SSRF guard again (a name may resolve elsewhere since the profile was
     * made), and its URL names the checked address (`pinnedUrls`).
     */
    async proxyUrlsFor(userId: string, id: string): Promise<string[]> {
      const row = await owned(userId, id, 'proxyProfileId');
      let endpoints = endpointsOf(row);
      if (row.rotation?.mode === 'per-session') endpoints = [endpoints[Math.floor(Math.random() * endpoints.length)]!];
      else if (!row.rotation) endpoints = endpoints.slice(0, 1);
      const auth =
        row.username === null
          ? undefined
          : { username: row.username, password: row.passwordSealed ? box.open(row.passwordSealed) : '' };
      return pinnedUrls(row.type, endpoints, auth, () => 'proxyProfileId');
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
