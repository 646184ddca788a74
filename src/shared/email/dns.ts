import { Resolver } from 'node:dns/promises';

/**
 * What DNS says about a mail domain:
 * - `ok`: it has MX hosts, or no MX but an A/AAAA record (RFC 5321 §5.1 implicit MX);
 * - `null_mx`: it publishes the null MX of RFC 7505 (a single MX whose exchange is the root);
 * - `no_mx`: the name exists but has neither MX nor A/AAAA;
 * - `not_found`: NXDOMAIN;
 * - `unknown`: no conclusive answer (timeout, SERVFAIL, refused, network error).
 */
export type MailDomainStatus = 'ok' | 'null_mx' | 'no_mx' | 'not_found' | 'unknown';

export interface MailDomainResolverOptions {
  /** `ip` or `ip:port` entries (DNS_SERVERS); the system resolver when empty. */
  servers?: string[];
  timeoutMs?: number;
  tries?: number;
  /** How long a conclusive answer is reused (per process). */
  ttlMs?: number;
  /** How long an inconclusive answer is reused (a bulk run over a dead resolver should not wait per lead). */
  unknownTtlMs?: number;
  now?: () => number;
}

export interface MailDomainResolver {
  check(asciiDomain: string): Promise<MailDomainStatus>;
}

type Outcome = { kind: 'records'; values: unknown[] } | { kind: 'nodata' } | { kind: 'nxdomain' } | { kind: 'error' };

async function attempt(lookup: () => Promise<unknown[]>): Promise<Outcome> {
  try {
    const values = await lookup();
    return values.length ? { kind: 'records', values } : { kind: 'nodata' };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENODATA') return { kind: 'nodata' };
    if (code === 'ENOTFOUND') return { kind: 'nxdomain' };
    return { kind: 'error' };
  }
}

const isRoot = (exchange: string) => exchange === '' || exchange === '.';

async function lookupMailDomain(resolver: Resolver, domain: string): Promise<MailDomainStatus> {
  const mx = await attempt(() => resolver.resolveMx(domain));
  if (mx.kind === 'nxdomain') return 'not_found';
  if (mx.kind === 'error') return 'unknown';
  if (mx.kind === 'records') {
    const hosts = (mx.values as Array<{ exchange: string }>).filter((r) => !isRoot(r.exchange));
    // RFC 7505 §3: a domain with a null MX must publish no other MX; if it does, the real ones count.
    return hosts.length ? 'ok' : 'null_mx';
  }
  const [a, aaaa] = await Promise.all([
    attempt(() => resolver.resolve4(domain)),
    attempt(() => resolver.resolve6(domain)),
  ]);
  if (a.kind === 'records' || aaaa.kind === 'records') return 'ok';
  if (a.kind === 'error' || aaaa.kind === 'error') return 'unknown';
  if (a.kind === 'nxdomain' && aaaa.kind === 'nxdomain') return 'not_found';
  return 'no_mx';
}

// One cache per process and resolver configuration, shared by every validator built on it.
const caches = new Map<string, Map<string, { expires: number; value: Promise<MailDomainStatus> }>>();
const MAX_ENTRIES = 10_000;

export function createMailDomainResolver(options: MailDomainResolverOptions = {}): MailDomainResolver {
  const servers = options.servers?.filter(Boolean) ?? [];
  const timeout = options.timeoutMs ?? 2000;
  const tries = options.tries ?? 2;
  const ttl = options.ttlMs ?? 5 * 60_000;
  const unknownTtl = options.unknownTtlMs ?? 10_000;
  const now = options.now ?? Date.now;
  const resolver = new Resolver({ timeout, tries });
  try {
    if (servers.length) resolver.setServers(servers);
  } catch (err) {
    throw new Error(
      `Invalid configuration: DNS_SERVERS=${JSON.stringify(servers.join(','))}: ${(err as Error).message} ` +
        '(expected "ip" or "ip:port" entries)',
    );
  }
  const cacheKey = `${servers.join(',')}|${timeout}|${tries}`;
  let cache = caches.get(cacheKey);
  if (!cache) caches.set(cacheKey, (cache = new Map()));
  const entries = cache;

  return {
    check(asciiDomain) {
      const domain = asciiDomain.toLowerCase();
      const hit = entries.get(domain);
      if (hit && hit.expires > now()) return hit.value;
      // The promise is cached at once, so concurrent checks of one domain share a single lookup.
      const value = lookupMailDomain(resolver, domain).then((status) => {
        const entry = entries.get(domain);
        if (entry?.value === value) entry.expires = now() + (status === 'unknown' ? unknownTtl : ttl);
        return status;
      });
      if (entries.size >= MAX_ENTRIES) {
        for (const [key, entry] of entries) if (entry.expires <= now()) entries.delete(key);
        if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      }
      entries.set(domain, { expires: Number.POSITIVE_INFINITY, value });
      return value;
    },
  };
}
