/** What DNS says about a sending domain (SPF, DKIM): read through DNS_SERVERS (src/shared/mail/dns.ts). */
import { createRequire } from 'node:module';
import { spf } from 'mailauth/lib/spf/index.js';
import type { ErrorDetail } from '../errors.ts';
import { addressesOf, type DnsResolve, dnsResolverOf } from './dns.ts';

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

const KEY_ERRORS = new Set(['EINVALIDVAL', 'EINVALIDTYPE', 'EINVALIDVER', 'EINVALIDSERVICE', 'ESHORTKEY']);

/** An SPF evaluation (up to 10 lookups) that takes longer is a temporary error. */
const SPF_TIME_LIMIT_MS = 15_000;

/** The smallest RSA key accepted for DKIM (RFC 8301 §3.2). */
const MIN_RSA_BITS = 1024;

export interface DnsCheck {
  record: 'spf' | 'dkim';
  /** The DNS name that was read. */
  name: string;
  ok: boolean;
  message: string;
}

const codeOf = (err: unknown) => (err as { code?: string }).code;

/** SPF (RFC 7208): the domain's `v=spf1` record parses and gives `pass` for every address of the sending host. */
export async function checkSpf(
  domain: string,
  fromAddress: string,
  smtpHost: string,
  resolve: DnsResolve,
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
export async function checkDkim(domain: string, selector: string, resolve: DnsResolve): Promise<DnsCheck> {
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
