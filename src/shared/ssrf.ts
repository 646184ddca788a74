import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, type Dispatcher } from 'undici';

/**
 * The SSRF guard every outbound fetch goes through (sources, webhooks, browsers, exports).
 * Resolve, check, then connect to the checked address: the check sits in the connector's DNS
 * lookup, so a redirect or a second resolution cannot slip a private address past it.
 */

/** ipaddr.js ranges that are reachable on the public internet; everything else is refused. */
const PUBLIC_RANGES = new Set(['unicast']);

const RANGE_NAMES: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address (cloud metadata lives here)',
  uniqueLocal: 'a private (unique-local) address',
  unspecified: 'an unspecified address',
  carrierGradeNat: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  reserved: 'a reserved address',
};

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

/** Why `ip` is not a public address, or undefined when it is. */
export function privateAddressReason(ip: string): string | undefined {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(ip.replace(/^\[|\]$/g, ''));
  } catch {
    return 'not a valid IP address';
  }
  // ::ffff:127.0.0.1, NAT64 and 6to4 forms carry an IPv4 address: judge that one.
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) addr = v6.toIPv4Address();
    else if (v6.range() === 'rfc6052' || v6.range() === '6to4' || v6.range() === 'teredo')
      return 'an IPv6 transition address';
  }
  const range = addr.range();
  return PUBLIC_RANGES.has(range) ? undefined : (RANGE_NAMES[range] ?? `a ${range} address`);
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
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses = net.isIP(host) ? [host] : (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
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
      const host = String(opts.hostname).replace(/^\[|\]$/g, '');
      if (!options.allowPrivate && net.isIP(host)) {
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
