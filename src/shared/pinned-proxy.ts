/**
 * Proxy URLs pinned to a checked address (docs/scraping.md "Proxy profiles"). A proxy profile's host is resolved
 * once per use and judged by the SSRF guard; the URL then names the address, not the host, so a name that
 * answers a public address to the check and a private one later (DNS rebinding) cannot send proxy traffic into
 * the operator's network. An `https` proxy still verifies TLS against its name, carried in the URL's fragment
 * (never sent anywhere): every client of these URLs takes them through `proxyTarget`.
 */
import dns from 'node:dns';
import { ProxyAgent } from 'undici';
import { ipLiteral, privateAddressReason, SsrfBlockedError } from './ssrf.ts';

/** A host's addresses (the system resolver, as the SSRF guard's lookup asks it). */
export type ResolveHost = (host: string) => Promise<string[]>;

const systemResolve: ResolveHost = async (host) =>
  (await dns.promises.lookup(host, { all: true })).map((a) => a.address);

/**
 * The one address `host` is reached at: the literal itself, or the first its name resolves to, after the SSRF
 * guard judged every one (SsrfBlockedError naming `url`) unless `allowPrivate`.
 */
export async function checkedAddress(
  host: string,
  allowPrivate: boolean,
  url: string,
  resolve: ResolveHost = systemResolve,
): Promise<string> {
  const bare = host.replace(/^\[|\]$/g, '');
  const literal = ipLiteral(bare);
  const addresses = literal ? [literal] : await resolve(bare);
  if (!addresses.length) throw Object.assign(new Error(`No address for ${bare}`), { code: 'ENOTFOUND' });
  if (!allowPrivate)
    for (const address of addresses) {
      const reason = privateAddressReason(address);
      if (reason) throw new SsrfBlockedError(address, reason, url);
    }
  return addresses[0]!;
}

/** `uri` (a proxy URL by name) pointed at `address`; an https proxy keeps its name for TLS in the fragment. */
export function pinProxyUrl(uri: string, address: string): string {
  const url = new URL(uri);
  const name = url.hostname.replace(/^\[|\]$/g, '');
  url.hostname = address.includes(':') ? `[${address}]` : address;
  if (url.protocol === 'https:' && !ipLiteral(name)) url.hash = encodeURIComponent(name);
  return url.href;
}

/** What a client connects to for a proxy URL: the URL without fragment, and the TLS server name of a pinned one. */
export function proxyTarget(uri: string): { uri: string; servername?: string } {
  const url = new URL(uri);
  const servername =
    url.protocol === 'https:' && url.hash.length > 1 ? decodeURIComponent(url.hash.slice(1)) : undefined;
  url.hash = '';
  return { uri: url.href.replace(/\/$/, ''), servername };
}

/** undici's proxy agent for a (possibly pinned) proxy URL: TLS to an https proxy is verified against its name. */
export function createProxyAgent(uri: string, options: Omit<ProxyAgent.Options, 'uri'> = {}): ProxyAgent {
  const target = proxyTarget(uri);
  return new ProxyAgent({
    ...options,
    uri: target.uri,
    ...(target.servername ? { proxyTls: { ...options.proxyTls, servername: target.servername } } : {}),
  });
}
