import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, type Dispatcher } from 'undici';

/**
 * The SSRF guard every outbound fetch goes through (sources, webhooks, browsers, exports).
 * Resolve, check, then connect to the checked address: the check sits in the connector's DNS
 * lookup, so a redirect or a second resolution cannot slip a private address past it.
 */

export class SsrfBlockedError extends Error {
  readonly address: string;
  readonly url?: string;
  readonly code = 'SSRF_BLOCKED';
  constructor(address: string, reason: string, url?: string) {
    super(
      `Refused to connect to ${address}${url ? ` (for ${url})` : ''}: it is ${reason}. ` +
        'Set ALLOW_PRIVATE_NETWORK=true to let Quarry reach private networks.',
    );
    this.name = 'SsrfBlockedError';
    this.address = address;
    this.url = url;
  }
}

/**
 * The address `host` names when it is an IP literal in any spelling a URL parser or resolver takes, canonical
 * (IPv6 as WHATWG URL writes it, a zone id kept; IPv4 dotted-decimal, from `127.1`, `0x7f.1`, `0177.0.0.1` or
 * `2130706433` as inet_aton reads them), or undefined for a name. Hosts given as strings (SMTP, IMAP) may not
 * have been through a URL parser that normalizes them.
 */
export function ipLiteral(host: string): string | undefined {
  const h = host.replace(/^\[(.*)\]$/, '$1');
  if (h.includes(':')) {
    if (!net.isIPv6(h)) return undefined;
    const [bare, zone] = h.split('%', 2) as [string, string | undefined];
    let canonical: string;
    try {
      canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
    } catch {
      return undefined;
    }
    return zone ? `${canonical}%${zone}` : canonical;
  }
  if (net.isIPv4(h)) return h;
  const v4 = h.replace(/\.$/, '');
  if (!/^(?:0x[0-9a-f]+|\d+)(?:\.(?:0x[0-9a-f]+|\d+)){0,3}$/i.test(v4) || !ipaddr.IPv4.isValid(v4)) return undefined;
  return ipaddr.IPv4.parse(v4).toString();
}

const DOCUMENTATION = 'a documentation address';
const PRIVATE = 'a private address';

/**
 * IPv4 ranges that are not global unicast (IANA special-purpose registry), first match named. The few global
 * special-purpose ranges (AS112, AMT, 192.31.196/24...) are left reachable.
 */
const V4_REFUSED = (
  [
    ['0.0.0.0/8', 'an unspecified address'],
    ['10.0.0.0/8', PRIVATE],
    ['100.64.0.0/10', 'a carrier-grade NAT address'],
    ['127.0.0.0/8', 'a loopback address'],
    ['169.254.0.0/16', 'a link-local address (cloud metadata lives here)'],
    ['172.16.0.0/12', PRIVATE],
    ['192.0.0.0/24', 'an IETF protocol assignment'],
    ['192.0.2.0/24', DOCUMENTATION],
    ['192.88.99.0/24', 'a 6to4 relay anycast address'],
    ['192.168.0.0/16', PRIVATE],
    ['198.18.0.0/15', 'a benchmarking address'],
    ['198.51.100.0/24', DOCUMENTATION],
    ['203.0.113.0/24', DOCUMENTATION],
    ['224.0.0.0/4', 'a multicast address'],
    ['255.255.255.255/32', 'a broadcast address'],
    ['240.0.0.0/4', 'a reserved address'],
  ] as const
).map(([cidr, reason]) => [ipaddr.IPv4.parseCIDR(cidr), reason] as const);

/** IPv6 ranges refused by name; anything else outside 2000::/3 (global unicast) is refused as reserved. */
const V6_REFUSED = (
  [
    ['64:ff9b:1::/48', 'a local-use NAT64 address'],
    ['100::/64', 'a discard-only address'],
    ['fc00::/7', 'a private (unique-local) address'],
    ['fe80::/10', 'a link-local address'],
    ['fec0::/10', 'a site-local address'],
    ['ff00::/8', 'a multicast address'],
    ['2001:2::/48', 'a benchmarking address'],
    ['2001:10::/28', 'an ORCHID address'],
    ['2001:20::/28', 'an ORCHID address'],
    // IETF protocol assignments (Teredo, 2001::/32, is judged by the addresses it carries before this).
    ['2001::/23', 'an IETF protocol assignment'],
    ['2001:db8::/32', DOCUMENTATION],
    ['3fff::/20', DOCUMENTATION],
  ] as const
).map(([cidr, reason]) => [ipaddr.IPv6.parseCIDR(cidr), reason] as const);

function v4Reason(addr: ipaddr.IPv4): string | undefined {
  return V4_REFUSED.find(([range]) => addr.match(range))?.[1];
}

/** The IPv4 address in two 16-bit groups. */
const v4Of = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/** Why the IPv4 address an IPv6 form carries is refused, saying which form; undefined when it is public. */
function carried(v4: ipaddr.IPv4, form: string): string | undefined {
  const reason = v4Reason(v4);
  return reason && `${reason}: the ${form} of ${v4.toString()}`;
}

function v6Reason(addr: ipaddr.IPv6): string | undefined {
  const p = addr.parts;
  const zero = (from: number, to: number) => p.slice(from, to).every((g) => g === 0);
  // Forms that reach an IPv4 address are judged by that address (RFC 4291 §2.5.5, RFC 6052, RFC 3056, RFC 4380).
  if (zero(0, 6)) {
    if (p[6] === 0 && p[7] === 0) return 'an unspecified address';
    if (p[6] === 0 && p[7] === 1) return 'a loopback address';
    return carried(v4Of(p[6]!, p[7]!), 'IPv4-compatible IPv6 form');
  }
  if (zero(0, 5) && p[5] === 0xffff) return carried(v4Of(p[6]!, p[7]!), 'IPv4-mapped IPv6 form');
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) return carried(v4Of(p[6]!, p[7]!), 'IPv4-translated IPv6 form');
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) return carried(v4Of(p[6]!, p[7]!), 'NAT64 form');
  if (p[0] === 0x2002) return carried(v4Of(p[1]!, p[2]!), '6to4 form');
  // Teredo: the server's address in clear, the client's with every bit flipped; either must be public.
  if (p[0] === 0x2001 && p[1] === 0)
    return (
      carried(v4Of(p[2]!, p[3]!), 'Teredo form (as its server)') ??
      carried(v4Of(p[6]! ^ 0xffff, p[7]! ^ 0xffff), 'Teredo form (as its client)')
    );
  const named = V6_REFUSED.find(([range]) => addr.match(range))?.[1];
  if (named) return named;
  return (p[0]! & 0xe000) === 0x2000 ? undefined : 'a reserved address';
}

/**
 * Why `ip` is not a public address, or undefined when it is: the one SSRF classification (docs/scraping.md "Scraping",
 * ALLOW_PRIVATE_NETWORK).
 * It judges what the address reaches: IPv6 forms that carry an IPv4 address (mapped, compatible, translated, NAT64,
 * 6to4, Teredo) by that address, and everything that is not global unicast is refused.
 */
export function privateAddressReason(ip: string): string | undefined {
  const literal = ipLiteral(ip);
  if (!literal) return 'not a valid IP address';
  const bare = literal.replace(/%.*$/, '');
  return bare.includes(':') ? v6Reason(ipaddr.IPv6.parse(bare)) : v4Reason(ipaddr.IPv4.parse(bare));
}

export const isPrivateAddress = (ip: string): boolean => privateAddressReason(ip) !== undefined;

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/** A `dns.lookup` replacement that fails with SsrfBlockedError when any resolved address is private. */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses as dns.LookupAddress[];
      if (!allowPrivate) {
        for (const a of list) {
          const reason = privateAddressReason(a.address);
          if (reason)
            return callback(new SsrfBlockedError(a.address, reason, hostname) as unknown as NodeJS.ErrnoException, []);
        }
      }
      if (options.all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`No address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

/** Throws SsrfBlockedError when `hostname` is (or resolves to) a private address. */
export async function assertPublicHost(hostname: string, allowPrivate: boolean, url?: string): Promise<void> {
  if (allowPrivate) return;
  const literal = ipLiteral(hostname);
  const addresses = literal
    ? [literal]
    : (await dns.promises.lookup(hostname.replace(/^\[|\]$/g, ''), { all: true })).map((a) => a.address);
  for (const address of addresses) {
    const reason = privateAddressReason(address);
    if (reason) throw new SsrfBlockedError(address, reason, url);
  }
}

export interface GuardedDispatcherOptions {
  allowPrivate: boolean;
  connectTimeoutMs?: number;
  /** Keep-alive connections per origin. */
  connections?: number;
}

/**
 * An undici dispatcher whose every connection is checked: IP-literal hosts directly, names through
 * the guarded lookup. Redirects followed by `fetch` reconnect through it, so they are checked too.
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions): Dispatcher {
  const base = buildConnector({
    lookup: guardedLookup(options.allowPrivate) as never,
    timeout: options.connectTimeoutMs ?? 10_000,
  });
  return new Agent({
    connections: options.connections ?? 64,
    keepAliveTimeout: 10_000,
    connect: (opts, callback) => {
      const host = ipLiteral(String(opts.hostname));
      if (!options.allowPrivate && host) {
        const reason = privateAddressReason(host);
        if (reason) return callback(new SsrfBlockedError(host, reason, `${opts.protocol}//${opts.host ?? host}`), null);
      }
      return base(opts, callback);
    },
  });
}

/** The SsrfBlockedError behind a failed fetch (undici wraps connector errors in `cause`). */
export function ssrfCause(error: unknown): SsrfBlockedError | undefined {
  for (let e = error as { cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e instanceof SsrfBlockedError) return e;
  }
  return undefined;
}

const dispatchers = new Map<boolean, Dispatcher>();

/** A shared guarded dispatcher per policy (one keep-alive pool for the process). */
export function sharedGuardedDispatcher(allowPrivate: boolean): Dispatcher {
  let d = dispatchers.get(allowPrivate);
  if (!d) dispatchers.set(allowPrivate, (d = createGuardedDispatcher({ allowPrivate })));
  return d;
}
