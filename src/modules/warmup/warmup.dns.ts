import { Resolver } from 'node:dns/promises';
import { createRequire } from 'node:module';
import { spf } from 'mailauth/lib/spf/index.js';
import type { ErrorDetail } from '../../shared/errors.ts';
import { ipLiteral, privateAddressReason } from '../../shared/ssrf.ts';

// mailauth's DKIM key-record reader (RFC 6376 §3.6.1, RFC 8463) ships without type definitions.
const require = createRequire(import.meta.url);
const { getPublicKey } = require('mailauth/lib/tools.js') as {
  getPublicKey(
    type: 'DKIM',
    name: string,
    minBitLength: number,
    resolver: DnsResolve,
  ): Promise<{ keyType: string; modulusLength?: number }>;
};

type DnsResolve = (name: string, rrtype: string) => Promise<string[][] | string[]>;

const KEY_ERRORS = new Set(['EINVALIDVAL', 'EINVALIDTYPE', 'EINVALIDVER', 'EINVALIDSERVICE', 'ESHORTKEY']);

/** An SPF evaluation (up to 10 lookups) that takes longer is a temporary error. */
const SPF_TIME_LIMIT_MS = 15_000;

/** The smallest RSA key accepted for DKIM (RFC 8301 §3.2). */
const MIN_RSA_BITS = 1024;

/** A resolver asking DNS_SERVERS (the system's when unset), in the shape mailauth takes. */
export function dnsResolverOf(servers: string[] | undefined): DnsResolve & { resolver: Resolver } {
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  if (servers?.length) resolver.setServers(servers);
  const resolve = ((name: string, rrtype: string) =>
    resolver.resolve(name, rrtype as 'TXT') as Promise<string[][]>) as DnsResolve & { resolver: Resolver };
  resolve.resolver = resolver;
  return resolve;
}

export interface DnsCheck {
  record: 'spf' | 'dkim';
  /** The DNS name that was read. */
  name: string;
  ok: boolean;
  message: string;
}

const codeOf = (err: unknown) => (err as { code?: string }).code;

/**
 * The sending host's addresses: the literal IP in any spelling (an `smtp:` URL leaves `127.1` or `0x7f.1` as it is),
 * or what its name resolves to (A and AAAA).
 */
export async function addressesOf(host: string, resolve: ReturnType<typeof dnsResolverOf>): Promise<string[]> {
  const literal = ipLiteral(host);
  if (literal) return [literal];
  const found = await Promise.allSettled([resolve.resolver.resolve4(host), resolve.resolver.resolve6(host)]);
  return found.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
}

/** SPF (RFC 7208): the domain's `v=spf1` record parses and gives `pass` for every address of the sending host. */
export async function checkSpf(
  domain: string,
  fromAddress: string,
  smtpHost: string,
  resolve: ReturnType<typeof dnsResolverOf>,
): Promise<DnsCheck> {
  const base = { record: 'spf' as const, name: domain };
  const ips = await addressesOf(smtpHost, resolve);
  if (!ips.length)
    return { ...base, ok: false, message: `the mailbox host ${smtpHost} does not resolve to an address` };
  for (const ip of ips) {
    const result = await spf({
      sender: fromAddress,
      ip,
      helo: smtpHost,
      mta: 'quarry',
      resolver: resolve,
      maxElapsedTime: SPF_TIME_LIMIT_MS,
    });
    const status = result.status.result;
    if (status === 'pass') continue;
    const why = result.status.comment ? ` (${result.status.comment})` : '';
    if (status === 'none') return { ...base, ok: false, message: `no v=spf1 TXT record at ${domain}` };
    if (status === 'permerror')
      return { ...base, ok: false, message: `the v=spf1 record of ${domain} does not parse${why}` };
    if (status === 'temperror') return { ...base, ok: false, message: `the SPF lookup of ${domain} failed${why}` };
    return {
      ...base,
      ok: false,
      message: `the v=spf1 record of ${domain} does not authorize the mailbox host ${smtpHost} (${ip}): ${status}`,
    };
  }
  return { ...base, ok: true, message: `authorizes ${smtpHost} (${ips.join(', ')})` };
}

/** DKIM: `<selector>._domainkey.<domain>` holds a key record (v=DKIM1; k=rsa|ed25519; p=<a key node can import>). */
export async function checkDkim(
  domain: string,
  selector: string,
  resolve: ReturnType<typeof dnsResolverOf>,
): Promise<DnsCheck> {
  const name = `${selector}._domainkey.${domain}`;
  const base = { record: 'dkim' as const, name };
  try {
    const key = await getPublicKey('DKIM', name, MIN_RSA_BITS, resolve);
    const size = key.keyType === 'rsa' && key.modulusLength ? ` ${key.modulusLength}-bit` : '';
    return { ...base, ok: true, message: `${key.keyType}${size} key found` };
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ENOTFOUND' || code === 'ENODATA') return { ...base, ok: false, message: `no TXT record at ${name}` };
    // mailauth's key errors (EINVALIDVAL, EINVALIDTYPE, EINVALIDVER, ESHORTKEY, …) carry the record read.
    if (code && KEY_ERRORS.has(code))
      return { ...base, ok: false, message: `the key record at ${name} is invalid: ${(err as Error).message}` };
    return { ...base, ok: false, message: `the lookup of ${name} failed: ${(err as Error).message}` };
  }
}

/** Both checks; the details of the failed ones as an error names them. */
export async function checkDomainDns(input: {
  domain: string;
  selector: string;
  fromAddress: string;
  smtpHost: string;
  servers: string[] | undefined;
}): Promise<{ checks: DnsCheck[]; failed: ErrorDetail[] }> {
  const resolve = dnsResolverOf(input.servers);
  const checks = await Promise.all([
    checkSpf(input.domain, input.fromAddress, input.smtpHost, resolve),
    checkDkim(input.domain, input.selector, resolve),
  ]);
  return { checks, failed: checks.filter((c) => !c.ok).map((c) => ({ field: c.record, message: c.message })) };
}

/**
 * The address the mailbox is reached at: its host resolved through DNS_SERVERS (as the SPF check saw it) and
 * checked by the SSRF guard unless ALLOW_PRIVATE_NETWORK; the connection goes to that address, so DNS cannot
 * change between the check and the connection. A string says why there is none.
 */
export async function mailboxAddress(
  host: string,
  settings: { servers: string[] | undefined; allowPrivate: boolean },
): Promise<{ address: string } | { refused: string }> {
  const addresses = await addressesOf(host, dnsResolverOf(settings.servers));
  if (!addresses.length) return { refused: `the mailbox host ${host} does not resolve` };
  if (!settings.allowPrivate) {
    for (const address of addresses) {
      const reason = privateAddressReason(address);
      if (reason)
        return { refused: `the mailbox host ${host} is ${reason} (${address}); set ALLOW_PRIVATE_NETWORK to allow it` };
    }
  }
  return { address: addresses[0]! };
}
