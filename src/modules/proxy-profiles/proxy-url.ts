/**
 * A proxy profile as the URLs the HTTP clients take (`http://`, `https://` or `socks5://user:pass@host:port`):
 * undici's ProxyAgent speaks all three, the guard proxy chains to them (src/shared/guard-proxy.ts).
 */
import type { ProxyType } from '../../db/schema/index.ts';

export interface ProxyEndpoint {
  host: string;
  port: number;
}

export interface ProxyCredentials {
  username: string;
  password: string;
}

export function proxyUrl(type: ProxyType, endpoint: ProxyEndpoint, auth?: ProxyCredentials): string {
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  const userinfo = auth ? `${encodeURIComponent(auth.username)}:${encodeURIComponent(auth.password)}@` : '';
  return `${type}://${userinfo}${host}:${endpoint.port}`;
}

/** The URL without its password, for messages. */
export const shownProxyUrl = (type: ProxyType, endpoint: ProxyEndpoint) => proxyUrl(type, endpoint);
