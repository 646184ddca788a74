/**
 * Proxy profiles against DNS rebinding (docs/scraping.md "Proxy profiles"): each use resolves the proxy host once,
 * through a real DNS server on loopback whose answer changes between queries (TTL 0), and hands out URLs naming
 * the checked address; the clients (the STATIC fetcher, undici's proxy agent, the guard proxy) connect to that
 * address without resolving the name again, and TLS to an `https` proxy is still verified against its name.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { request } from 'undici';
import { createProxyProfileService } from '../src/modules/proxy-profiles/index.ts';
import { PageFetcher } from '../src/modules/scraping/http-client.ts';
import { HostLimiter } from '../src/modules/scraping/politeness.ts';
import type { AppError } from '../src/shared/errors.ts';
import { startGuardProxy } from '../src/shared/guard-proxy.ts';
import { addressesOf, dnsResolverOf } from '../src/shared/mail/dns.ts';
import { createProxyAgent, pinProxyUrl, proxyTarget } from '../src/shared/pinned-proxy.ts';
import { type FixtureSite, type ForwardProxy, startFixtureSite, startForwardProxy } from './fixtures/sites.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, type TestDnsServer } from './helpers/dns.ts';

const PUBLIC = '93.184.215.14';
const AUTH = { username: 'pin-user', password: 'pin-s3cret' };
/** Names no system resolver knows (.test is reserved): a client that resolved them would fail. */
const PROXY_NAME = 'proxy.pin.test';

let ctx: TestContext;
let alice: TestUser;
let dns: TestDnsServer;
let site: FixtureSite;
let forward: ForwardProxy;
/** TLS in front of the forward proxy (an `https` proxy), with a certificate for PROXY_NAME only. */
let tlsFront: net.Server;
let tlsPort: number;
let cert: string;
/** The server name (SNI) of each TLS handshake the front saw, completed or refused by the client. */
const sniSeen: Array<string | false | null> = [];

before(async () => {
  dns = await startTestDnsServer({
    'rebind.pin.test': { a: [PUBLIC], aThen: [[PUBLIC], ['127.0.0.1']] },
    'tls.pin.test': { a: [PUBLIC] },
  });
  site = await startFixtureSite();
  forward = await startForwardProxy({ auth: `${AUTH.username}:${AUTH.password}` });
  const dir = mkdtempSync(path.join(tmpdir(), 'quarry-pin-'));
  try {
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'],
        ...['-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
        ...['-subj', `/CN=${PROXY_NAME}`, '-addext', `subjectAltName=DNS:${PROXY_NAME}`],
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(path.join(dir, 'cert.pem'), 'utf8');
    const key = readFileSync(path.join(dir, 'key.pem'), 'utf8');
    tlsFront = tls.createServer({ key, cert }, (socket) => {
      const upstream = net.connect(Number(new URL(forward.url).port), '127.0.0.1');
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    tlsFront.on('secureConnection', (s: tls.TLSSocket) => sniSeen.push(s.servername));
    // A client refusing the certificate never completes the handshake: the name it asked for is still seen.
    tlsFront.on('tlsClientError', (_e, s: tls.TLSSocket) => sniSeen.push(s.servername));
    await new Promise<void>((resolve) => tlsFront.listen(0, '127.0.0.1', resolve));
    tlsPort = (tlsFront.address() as net.AddressInfo).port;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  ({ ctx, alice } = await createTwoUserContext({}));
});
after(async () => {
  await ctx?.close();
  await new Promise<void>((resolve) => (tlsFront ? tlsFront.close(() => resolve()) : resolve()));
  await Promise.all([dns?.close(), site?.close(), forward?.close()]);
});

/** The service as it runs without ALLOW_PRIVATE_NETWORK, resolving proxy hosts through the loopback DNS server. */
const guardedService = () =>
  createProxyProfileService(
    { ...ctx.deps, config: { ...ctx.deps.config, ALLOW_PRIVATE_NETWORK: false } },
    { resolve: (host) => addressesOf(host, dnsResolverOf([dns.address])) },
  );

describe('the URLs of a use name the checked address', () => {
  test('a name answering public then private: each use resolves once; the URL names the public address, the next use is refused', async () => {
    const service = guardedService();
    const profile = await service.create(alice.id, {
      type: 'http',
      host: 'rebind.pin.test',
      port: 3128,
      auth: AUTH,
      skipTest: true,
    });
    const asked = dns.queries.get('rebind.pin.test') ?? 0;
    const urls = await service.proxyUrlsFor(alice.id, profile.id);
    assert.deepEqual(urls, [`http://${AUTH.username}:${AUTH.password}@${PUBLIC}:3128/`]);
    // One resolution for this use (its A and AAAA queries): nothing is left for a client to resolve later.
    assert.equal((dns.queries.get('rebind.pin.test') ?? 0) - asked, 2);
    // The name now answers 127.0.0.1: the next use checks again and refuses it, naming the field.
    await assert.rejects(
      service.proxyUrlsFor(alice.id, profile.id),
      (e: AppError) =>
        e.code === 'VALIDATION_ERROR' && e.details?.[0]?.field === 'proxyProfileId' && /127\.0\.0\.1/.test(e.message),
    );
    await assert.rejects(
      service.crawlProxyUrls(alice.id, profile.id),
      (e: Error) => e.name === 'CrawlError' && /loopback/.test(e.message),
    );
  });

  test('an https proxy: the URL names the address and keeps the name for TLS; SOCKS5 and http carry no name', async () => {
    const service = guardedService();
    for (const type of ['https', 'http', 'socks5'] as const) {
      const profile = await service.create(alice.id, { type, host: 'tls.pin.test', port: 8443, skipTest: true });
      const [url] = await service.proxyUrlsFor(alice.id, profile.id);
      const target = proxyTarget(url!);
      assert.equal(new URL(target.uri).hostname, PUBLIC, type);
      assert.equal(target.servername, type === 'https' ? 'tls.pin.test' : undefined, type);
    }
  });

  test('ALLOW_PRIVATE_NETWORK keeps the names as they are', async () => {
    const service = createProxyProfileService(ctx.deps, {
      resolve: (host) => addressesOf(host, dnsResolverOf([dns.address])),
    });
    const profile = await service.create(alice.id, { type: 'https', host: 'tls.pin.test', port: 8443, skipTest: true });
    assert.deepEqual(await service.proxyUrlsFor(alice.id, profile.id), ['https://tls.pin.test:8443']);
  });
});

describe('clients connect to the pinned address', () => {
  /** The forward proxy's URL under a name nothing resolves, pinned to its loopback address. */
  const pinned = (protocol: string, port: number, name = PROXY_NAME) =>
    pinProxyUrl(`${protocol}//${AUTH.username}:${AUTH.password}@${name}:${port}`, '127.0.0.1');

  test('the STATIC fetcher goes through the pinned address without resolving the name', async () => {
    const fetcher = new PageFetcher({
      userAgent: 'quarry-test',
      accept: '*/*',
      allowPrivateNetwork: true,
      proxyUrls: [pinned('http:', Number(new URL(forward.url).port))],
      timeoutMs: 5000,
      signal: new AbortController().signal,
      limiter: new HostLimiter(2, 0),
      connections: 2,
    });
    const seen = forward.requests.length;
    try {
      const page = await fetcher.text(`${site.origin}/robots.txt`);
      assert.equal(page.status, 200);
      assert.ok(forward.requests.length > seen, 'the request went through the proxy');
    } finally {
      await fetcher.close();
    }
  });

  test('an https proxy: the pinned address is reached and its certificate verified against the name', async () => {
    const good = createProxyAgent(pinned('https:', tlsPort), { proxyTls: { ca: [cert] } });
    try {
      const res = await request(`${site.origin}/robots.txt`, { dispatcher: good });
      await res.body.dump();
      assert.equal(res.statusCode, 200);
      assert.equal(sniSeen.at(-1), PROXY_NAME);
    } finally {
      await good.destroy();
    }
    // The same address under a name its certificate does not cover: refused, so the name is what is verified.
    const wrong = createProxyAgent(pinned('https:', tlsPort, 'other.pin.test'), { proxyTls: { ca: [cert] } });
    try {
      await assert.rejects(request(`${site.origin}/robots.txt`, { dispatcher: wrong }), (e: Error) =>
        /altname|does not match|other\.pin\.test/i.test(`${e.message} ${(e.cause as Error | undefined)?.message}`),
      );
    } finally {
      await wrong.destroy();
    }
  });

  test('the guard proxy tunnels through a pinned http upstream, and sends an https upstream its name', async () => {
    const connect = async (upstream: string): Promise<string> => {
      const stop = new AbortController();
      const guard = await startGuardProxy({
        allowPrivateNetwork: true,
        upstreamProxyUrls: [upstream],
        signal: stop.signal,
      });
      try {
        return await new Promise<string>((resolve, reject) => {
          const s = net.connect(Number(new URL(guard.url).port), '127.0.0.1', () => {
            const basic = Buffer.from(`${guard.username}:${guard.password}`).toString('base64');
            const to = `127.0.0.1:${site.port}`;
            s.write(`CONNECT ${to} HTTP/1.1\r\nHost: ${to}\r\nProxy-Authorization: Basic ${basic}\r\n\r\n`);
          });
          let text = '';
          s.on('data', (chunk) => {
            text += chunk.toString();
            if (text.includes('\r\n\r\n')) {
              s.destroy();
              resolve(text.split('\r\n')[0]!);
            }
          });
          s.on('error', reject);
        });
      } finally {
        stop.abort();
        await guard.close();
      }
    };
    const seen = forward.requests.length;
    assert.match(await connect(pinned('http:', Number(new URL(forward.url).port))), /^HTTP\/1\.1 200/);
    assert.deepEqual(
      forward.requests.slice(seen).map((r) => r.method),
      ['CONNECT'],
    );
    // The certificate is not one the process trusts: the tunnel fails, after asking the pinned address for the name.
    const handshakes = sniSeen.length;
    assert.match(await connect(pinned('https:', tlsPort)), /^HTTP\/1\.1 502/);
    // The front sees the refused handshake once the client's alert arrives, after the 502 may have.
    await eventually(async () => sniSeen.length > handshakes, 5000, 20);
    assert.deepEqual(sniSeen.slice(handshakes), [PROXY_NAME]);
  });
});
