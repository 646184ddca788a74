/**
 * The SSRF guard for Chromium (DYNAMIC): a loopback HTTP proxy, one per crawl, that every browser
 * connection goes through (Playwright also proxies loopback, see its `<-loopback>` rule). `page.route`
 * alone cannot guard a browser: Playwright does not call route handlers for redirect hops, so a public
 * page answering `302 Location: http://169.254.169.254/` would slip past it. Here each connection is
 * checked as it is opened, by the same lookup the undici guard uses (ssrf.ts), redirects included.
 *
 * Plain-HTTP requests are forwarded with undici (refused ones answer 403 with `x-quarry-ssrf`);
 * HTTPS arrives as CONNECT and is tunnelled to the checked address (refused: 403, recorded in
 * `refusals` by host:port so the crawler can name the address). With upstream proxies (SCRAPER_PROXY_URL or a
 * proxy profile: http, https or socks5, taken in turn per request or tunnel) the target host is checked with
 * assertPublicHost and the request chained to the next one.
 * Once the crawl's signal aborts, everything is refused: no browser request leaves after a stop.
 *
 * It listens on loopback only and asks for credentials made for this one crawl (407 without them), so no other
 * process on the host can relay through it; it closes when the crawl ends (docs/CONVENTIONS.md, Listeners).
 * A client that cannot send proxy credentials (Chromium given `--proxy-server` by hand, for a browser session)
 * is admitted by its connecting process instead (`admitPeer`, judged once per connection).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { SocksClient } from 'socks';
import { type Dispatcher, request as undiciRequest } from 'undici';
import { safeEqual } from './crypto.ts';
import { createProxyAgent, proxyTarget } from './pinned-proxy.ts';
import {
  assertPublicHost,
  createGuardedDispatcher,
  guardedLookup,
  ipLiteral,
  privateAddressReason,
  SsrfBlockedError,
  ssrfCause,
} from './ssrf.ts';

export interface GuardProxy {
  /** http://127.0.0.1:<port>, for Chromium's --proxy-server. */
  url: string;
  /** This proxy's own credentials (Basic), made for one crawl: Playwright answers its 407 with them. */
  username: string;
  password: string;
  /** Refused connections by `host:port` (the SsrfBlockedError names the address). */
  refusals: Map<string, SsrfBlockedError>;
  close(): Promise<void>;
}

export interface GuardProxyOptions {
  allowPrivateNetwork: boolean;
  /** Upstream proxies (http(s):// or socks5://user:pass@host:port): requests are chained to them in turn. */
  upstreamProxyUrls?: string[];
  signal: AbortSignal;
  /** Replaces the Basic credentials: whether the process at the other end of this connection may use the proxy. */
  admitPeer?: (socket: net.Socket) => Promise<boolean>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
export const SSRF_HEADER = 'x-quarry-ssrf';

function splitHostPort(authority: string, defaultPort: number): { host: string; port: number } {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(authority) ?? /^([^:]+)(?::(\d+))?$/.exec(authority);
  return { host: m?.[1] ?? authority, port: Number(m?.[2] ?? defaultPort) };
}

/** Opens a TCP connection to host:port after the guard's check (IP literals directly, names by the guarded lookup). */
function guardedConnect(host: string, port: number, allowPrivate: boolean): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    // An IP literal in any spelling (`0x7f.1`) is judged, and connected to, as the address it spells.
    const literal = ipLiteral(host);
    if (!allowPrivate && literal) {
      const reason = privateAddressReason(literal);
      if (reason) return reject(new SsrfBlockedError(literal, reason, `https://${host}:${port}`));
    }
    const socket = net.connect({ host: literal ?? host, port, lookup: guardedLookup(allowPrivate) as never });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * A tunnel through the upstream proxy (CONNECT host:port, or a SOCKS5 CONNECT), with its credentials. A proxy
 * profile's URL names its checked address (src/shared/pinned-proxy.ts); `servername` is an https proxy's name,
 * which its certificate is verified against.
 */
async function upstreamConnect(upstream: URL, host: string, port: number, servername?: string): Promise<net.Socket> {
  if (upstream.protocol === 'socks5:') {
    const { socket } = await SocksClient.createConnection({
      proxy: {
        host: upstream.hostname.replace(/^\[|\]$/g, ''),
        port: Number(upstream.port || 1080),
        type: 5,
        userId: upstream.username ? decodeURIComponent(upstream.username) : undefined,
        password: upstream.password ? decodeURIComponent(upstream.password) : undefined,
      },
      command: 'connect',
      destination: { host, port },
      timeout: 30_000,
    });
    return socket;
  }
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: `${host}:${port}` };
    if (upstream.username) {
      const credentials = `${decodeURIComponent(upstream.username)}:${decodeURIComponent(upstream.password)}`;
      headers['proxy-authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
    }
    const tls = upstream.protocol === 'https:';
    const req = (tls ? https : http).request({
      host: upstream.hostname.replace(/^\[|\]$/g, ''),
      port: Number(upstream.port || (tls ? 443 : 80)),
      method: 'CONNECT',
      path: `${host}:${port}`,
      headers,
      ...(tls && servername ? { servername } : {}),
    });
    req.once('connect', (res, socket) => {
      if (res.statusCode === 200) return resolve(socket);
      socket.destroy();
      reject(new Error(`the proxy answered ${res.statusCode} to CONNECT ${host}:${port}`));
    });
    req.once('error', reject);
    req.end();
  });
}

const PROXY_CHALLENGE = { 'proxy-authenticate': 'Basic realm="quarry-guard"' };

/** A check of `Proxy-Authorization: Basic …` against one pair, in constant time. */
function proxyAuthCheck(username: string, password: string): (header: string | undefined) => boolean {
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  return (header) => safeEqual(header ?? '', expected);
}

export async function startGuardProxy(options: GuardProxyOptions): Promise<GuardProxy> {
  const { allowPrivateNetwork, signal } = options;
  const username = `crawl-${crypto.randomBytes(6).toString('hex')}`;
  const password = crypto.randomBytes(24).toString('base64url');
  const basicOk = proxyAuthCheck(username, password);
  const { admitPeer } = options;
  const admitted = new WeakMap<object, Promise<boolean>>();
  const authorized = async (req: http.IncomingMessage): Promise<boolean> =>
    admitPeer ? ((await admitted.get(req.socket)) ?? false) : basicOk(req.headers['proxy-authorization']);
  const upstreams = (options.upstreamProxyUrls ?? []).map((uri) => {
    const target = proxyTarget(uri);
    return { url: new URL(target.uri), servername: target.servername, dispatcher: createProxyAgent(uri) as Dispatcher };
  });
  const direct = upstreams.length ? undefined : createGuardedDispatcher({ allowPrivate: allowPrivateNetwork });
  let turn = 0;
  /** The next upstream in turn (per-request rotation), or none: direct through the guarded dispatcher. */
  const nextUpstream = () => (upstreams.length ? upstreams[turn++ % upstreams.length] : undefined);
  const refusals = new Map<string, SsrfBlockedError>();
  const sockets = new Set<Duplex>();
  const track = (s: Duplex) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  // Through an upstream proxy the connection goes to the proxy: check the target host first.
  const checkTarget = (host: string, url: string) =>
    upstreams.length ? assertPublicHost(host, allowPrivateNetwork, url) : Promise.resolve();

  const server = http.createServer(async (req, res) => {
    if (!(await authorized(req))) return void res.writeHead(407, PROXY_CHALLENGE).end();
    if (signal.aborted) return void res.writeHead(503).end();
    let target: URL;
    try {
      target = new URL(req.url ?? '');
      if (target.protocol !== 'http:') throw new Error('not http');
    } catch {
      return void res.writeHead(400).end('absolute http:// URLs only');
    }
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
    try {
      await checkTarget(target.hostname, target.href);
      const upstreamRes = await undiciRequest(target, {
        method: req.method as Dispatcher.HttpMethod,
        headers,
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : req,
        dispatcher: nextUpstream()?.dispatcher ?? direct!,
        signal,
      });
      const outHeaders: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(upstreamRes.headers))
        if (v !== undefined && !HOP_BY_HOP.has(k)) outHeaders[k] = v;
      res.writeHead(upstreamRes.statusCode, outHeaders);
      upstreamRes.body.pipe(res);
      upstreamRes.body.once('error', () => res.destroy());
      // The browser gave up (page closed, navigation replaced): stop reading upstream.
      res.once('close', () => {
        if (!upstreamRes.body.readableEnded) upstreamRes.body.destroy();
      });
    } catch (error) {
      const blocked = ssrfCause(error);
      if (blocked) {
        refusals.set(`${target.hostname}:${target.port || 80}`, blocked);
        return void res
          .writeHead(403, {
            [SSRF_HEADER]: blocked.message.replace(/[^\x20-\x7e]/g, '?'),
            'content-type': 'text/plain',
          })
          .end(blocked.message);
      }
      if (!res.headersSent)
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`Bad gateway: ${(error as Error).message}`);
      else res.destroy();
    }
  });

  server.on('connect', async (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    client.on('error', () => client.destroy());
    if (!(await authorized(req))) {
      return void client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="quarry-guard"\r\n\r\n',
      );
    }
    if (signal.aborted) return void client.end('HTTP/1.1 503 Service Unavailable\r\n\r\n');
    const { host, port } = splitHostPort(req.url ?? '', 443);
    try {
      await checkTarget(host, `https://${req.url}`);
      const upstream = nextUpstream();
      const remote = upstream
        ? await upstreamConnect(upstream.url, host, port, upstream.servername)
        : await guardedConnect(host, port, allowPrivateNetwork);
      track(remote);
      if (signal.aborted || client.destroyed) return void remote.destroy();
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) remote.write(head);
      remote.pipe(client).on('error', () => client.destroy());
      client.pipe(remote).on('error', () => remote.destroy());
      remote.on('error', () => client.destroy());
      remote.on('close', () => client.destroy());
      client.on('close', () => remote.destroy());
    } catch (error) {
      const blocked = ssrfCause(error);
      if (blocked) refusals.set(`${host}:${port}`, blocked);
      client.end(blocked ? 'HTTP/1.1 403 Forbidden\r\n\r\n' : 'HTTP/1.1 502 Bad Gateway\r\n\r\n');
    }
  });
  server.on('connection', (socket: net.Socket) => {
    track(socket);
    if (admitPeer)
      admitted.set(
        socket,
        admitPeer(socket).catch(() => false),
      );
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  // A stopped crawl closes its tunnels at once (in-flight browser requests are cancelled).
  const onAbort = () => {
    for (const s of sockets) s.destroy();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  return {
    url: `http://127.0.0.1:${port}`,
    username,
    password,
    refusals,
    close: async () => {
      signal.removeEventListener('abort', onAbort);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      for (const d of [direct, ...upstreams.map((u) => u.dispatcher)]) await d?.destroy().catch(() => {});
    },
  };
}
