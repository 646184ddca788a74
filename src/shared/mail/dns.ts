import { Resolver } from 'node:dns/promises';
import { ipLiteral } from '../ssrf.ts';

/**
 * The one DNS resolver of mail (docs/configuration.md, DNS_SERVERS): every lookup of outreach, warmup, email
 * verification and the mailbox connections asks these servers, the system's when none are set.
 */
export function createResolver(options: { servers?: string[]; timeoutMs?: number; tries?: number } = {}): Resolver {
  const servers = options.servers?.filter(Boolean) ?? [];
  const resolver = new Resolver({ timeout: options.timeoutMs ?? 2000, tries: options.tries ?? 2 });
  try {
    if (servers.length) resolver.setServers(servers);
  } catch (err) {
    throw new Error(
      `Invalid configuration: DNS_SERVERS=${JSON.stringify(servers.join(','))}: ${(err as Error).message} ` +
        '(expected "ip" or "ip:port" entries)',
    );
  }
  return resolver;
}

/** A lookup in the shape mailauth takes (SPF, DKIM), with its resolver for the other record types. */
export type DnsResolve = ((name: string, rrtype: string) => Promise<string[][] | string[]>) & { resolver: Resolver };

/** A resolver asking DNS_SERVERS (the system's when unset), in the shape mailauth takes. */
export function dnsResolverOf(servers: string[] | undefined): DnsResolve {
  const resolver = createResolver({ servers });
  const resolve = ((name: string, rrtype: string) =>
    resolver.resolve(name, rrtype as 'TXT') as Promise<string[][]>) as DnsResolve;
  resolve.resolver = resolver;
  return resolve;
}

/**
 * A host's addresses: the literal IP in any spelling (an `smtp:` URL leaves `127.1` or `0x7f.1` as it is), or what
 * its name resolves to (A and AAAA).
 */
export async function addressesOf(host: string, resolve: DnsResolve): Promise<string[]> {
  const literal = ipLiteral(host);
  if (literal) return [literal];
  const found = await Promise.allSettled([resolve.resolver.resolve4(host), resolve.resolver.resolve6(host)]);
  return found.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
}

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

/** The domain's status and, when `ok`, its mail hosts by preference (the implicit MX: the domain itself). */
export interface MailDomainAnswer {
  status: MailDomainStatus;
  hosts: string[];
}

export interface MailDomainResolver {
  check(asciiDomain: string): Promise<MailDomainStatus>;
  /** The cached answer of `check` with the mail hosts, lowest MX preference first. */
  mailHosts(asciiDomain: string): Promise<MailDomainAnswer>;
  /** A host's IPv4 then IPv6 addresses through the same servers (empty when it has none or DNS fails). */
  addresses(host: string): Promise<string[]>;
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

const none = (status: MailDomainStatus): MailDomainAnswer => ({ status, hosts: [] });

async function lookupMailDomain(resolver: Resolver, domain: string): Promise<MailDomainAnswer> {
  const mx = await attempt(() => resolver.resolveMx(domain));
  if (mx.kind === 'nxdomain') return none('not_found');
  if (mx.kind === 'error') return none('unknown');
  if (mx.kind === 'records') {
    const records = (mx.values as Array<{ exchange: string; priority: number }>).filter((r) => !isRoot(r.exchange));
    // RFC 7505 §3: a domain with a null MX must publish no other MX; if it does, the real ones count.
    if (!records.length) return none('null_mx');
    // RFC 5321 §5.1: lowest preference first (stable among equals).
    const hosts = [...new Set(records.sort((x, y) => x.priority - y.priority).map((r) => r.exchange.toLowerCase()))];
    return { status: 'ok', hosts };
  }
  const [a, aaaa] = await Promise.all([
    attempt(() => resolver.resolve4(domain)),
    attempt(() => resolver.resolve6(domain)),
  ]);
  if (a.kind === 'records' || aaaa.kind === 'records') return { status: 'ok', hosts: [domain] };
  if (a.kind === 'error' || aaaa.kind === 'error') return none('unknown');
  if (a.kind === 'nxdomain' && aaaa.kind === 'nxdomain') return none('not_found');
  return none('no_mx');
}

// One cache per process and resolver configuration, shared by every validator built on it.
const caches = new Map<string, Map<string, { expires: number; value: Promise<MailDomainAnswer> }>>();
const addressCaches = new Map<string, Map<string, { expires: number; value: Promise<string[]> }>>();
const MAX_ENTRIES = 10_000;

export function createMailDomainResolver(options: MailDomainResolverOptions = {}): MailDomainResolver {
  const servers = options.servers?.filter(Boolean) ?? [];
  const timeout = options.timeoutMs ?? 2000;
  const tries = options.tries ?? 2;
  const ttl = options.ttlMs ?? 5 * 60_000;
  const unknownTtl = options.unknownTtlMs ?? 10_000;
  const now = options.now ?? Date.now;
  const resolver = createResolver({ servers, timeoutMs: timeout, tries });
  const cacheKey = `${servers.join(',')}|${timeout}|${tries}`;
  let cache = caches.get(cacheKey);
  if (!cache) caches.set(cacheKey, (cache = new Map()));
  const entries = cache;
  // The addresses of mail exchangers (SMTP probing), cached the same way.
  let hostAddresses = addressCaches.get(cacheKey);
  if (!hostAddresses) addressCaches.set(cacheKey, (hostAddresses = new Map()));

  function mailHosts(asciiDomain: string): Promise<MailDomainAnswer> {
    const domain = asciiDomain.toLowerCase();
    const hit = entries.get(domain);
    if (hit && hit.expires > now()) return hit.value;
    // The promise is cached at once, so concurrent checks of one domain share a single lookup.
    const value = lookupMailDomain(resolver, domain).then((answer) => {
      const entry = entries.get(domain);
      if (entry?.value === value) entry.expires = now() + (answer.status === 'unknown' ? unknownTtl : ttl);
      return answer;
    });
    if (entries.size >= MAX_ENTRIES) {
      for (const [key, entry] of entries) if (entry.expires <= now()) entries.delete(key);
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
    }
    entries.set(domain, { expires: Number.POSITIVE_INFINITY, value });
    return value;
  }

  return {
    check: async (asciiDomain) => (await mailHosts(asciiDomain)).status,
    mailHosts,
    addresses(host) {
      const name = host.toLowerCase();
      const hit = hostAddresses.get(name);
      if (hit && hit.expires > now()) return hit.value;
      const lookups = [attempt(() => resolver.resolve4(name)), attempt(() => resolver.resolve6(name))];
      const value = Promise.all(lookups).then((outcomes) => {
        const list = outcomes.flatMap((o) => (o.kind === 'records' ? (o.values as string[]) : []));
        const entry = hostAddresses.get(name);
        if (entry?.value === value) entry.expires = now() + (list.length ? ttl : unknownTtl);
        return list;
      });
      if (hostAddresses.size >= MAX_ENTRIES) hostAddresses.delete(hostAddresses.keys().next().value!);
      hostAddresses.set(name, { expires: Number.POSITIVE_INFINITY, value });
      return value;
    },
  };
}
