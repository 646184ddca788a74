import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createOutboundClient, OutboundError } from '../src/shared/outbound-http.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';

/** Every request a loopback server saw: method, URL and headers. */
type Seen = Array<{ method: string; url: string; headers: http.IncomingHttpHeaders }>;

const listen = async (server: http.Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};
const close = (server: http.Server) => new Promise<void>((resolve) => server.close(() => resolve()));

/** A loopback forward proxy: absolute-form requests are relayed, CONNECT is tunnelled; both are recorded. */
function forwardProxy(seen: Seen): http.Server {
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    const target = new URL(req.url!);
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    seen.push({ method: 'CONNECT', url: req.url!, headers: req.headers });
    const [host, port] = req.url!.split(':');
    const upstream = net.connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  return server;
}

const sitePages: Record<string, (req: http.IncomingMessage, res: http.ServerResponse) => void> = {
  '/brief.html': (_req, res) =>
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<html><body><p>Target audience: solar installers in Denver, Colorado.</p></body></html>'),
  '/headers': (req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(req.headers)),
  '/big': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(64 * 1024)),
  '/loop': (_req, res) => res.writeHead(302, { location: '/loop' }).end(),
  '/slow': () => {},
};

describe('outbound HTTP', () => {
  const siteSeen: Seen = [];
  const proxySeen: Seen = [];
  const site = http.createServer((req, res) => {
    siteSeen.push({ method: req.method!, url: req.url!, headers: req.headers });
    const page = sitePages[req.url!.split('?')[0]!];
    if (page) return page(req, res);
    const to = /^\/to\/(.+)$/.exec(req.url!);
    if (to) return void res.writeHead(302, { location: decodeURIComponent(to[1]!) }).end();
    res.writeHead(404).end('not here');
  });
  const otherSite = http.createServer((req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(req.headers)),
  );
  const proxy = forwardProxy(proxySeen);
  let siteUrl: string;
  let otherUrl: string;
  let proxyPort: number;
  before(async () => {
    siteUrl = await listen(site);
    otherUrl = await listen(otherSite);
    proxyPort = Number(new URL(await listen(proxy)).port);
  });
  after(async () => {
    site.closeAllConnections();
    proxy.closeAllConnections();
    await Promise.all([close(site), close(otherSite), close(proxy)]);
  });

  describe('analyze with SCRAPER_PROXY_URL', () => {
    let ctx: TestContext;
    let alice: TestUser;
    before(async () => {
      ctx = await createTestContext({
        workers: false,
        env: {
          SCRAPER_PROXY_URL: `http://quarry:s3cret@127.0.0.1:${proxyPort}`,
          SCRAPER_USER_AGENT: 'QuarryTest/1.0 (outbound)',
        },
      });
      alice = await ctx.signup();
    });
    after(async () => ctx?.close());

    test('the document is fetched through the proxy, with its credentials and the configured User-Agent', async () => {
      proxySeen.length = 0;
      siteSeen.length = 0;
      const res = await ctx.call(alice, 'POST', '/api/sources/analyze', {
        url: `${siteUrl}/to/${encodeURIComponent('/brief.html')}`,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.match(res.json().data.requirements.targetAudience, /solar installers/i);
      // Both hops (the redirect and its target) went out through the proxy, as absolute-form requests.
      assert.deepEqual(
        proxySeen.map((s) => `${s.method} ${s.url}`),
        [`GET ${siteUrl}/to/%2Fbrief.html`, `GET ${siteUrl}/brief.html`],
      );
      assert.equal(
        proxySeen[0]!.headers['proxy-authorization'],
        `Basic ${Buffer.from('quarry:s3cret').toString('base64')}`,
      );
      assert.deepEqual(
        siteSeen.map((s) => s.headers['user-agent']),
        ['QuarryTest/1.0 (outbound)', 'QuarryTest/1.0 (outbound)'],
      );
    });
  });

  describe('analyze with SCRAPER_PROXY_URL and ALLOW_PRIVATE_NETWORK=false', () => {
    let ctx: TestContext;
    let alice: TestUser;
    before(async () => {
      ctx = await createTestContext({
        workers: false,
        env: { SCRAPER_PROXY_URL: `http://127.0.0.1:${proxyPort}`, ALLOW_PRIVATE_NETWORK: 'false' },
      });
      alice = await ctx.signup();
    });
    after(async () => ctx?.close());

    test('a private target is refused before anything reaches the proxy', async () => {
      proxySeen.length = 0;
      const res = await ctx.call(alice, 'POST', '/api/sources/analyze', { url: `${siteUrl}/brief.html` });
      assertValidation(res, 'url');
      assert.match(res.json().error.details[0].message, /Refused to connect to 127\.0\.0\.1.*loopback/);
      assert.deepEqual(proxySeen, []);
    });
  });

  describe('the client', () => {
    const client = createOutboundClient({ allowPrivateNetwork: true, userAgent: 'QuarryTest/2.0' });
    const failure = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof OutboundError, `expected an OutboundError, got ${error}`);
      return error;
    };

    test('redirects: followed (credentials dropped across origins), answered as they are, or bounded', async () => {
      const cross = await client.request({
        url: `${siteUrl}/to/${encodeURIComponent(`${otherUrl}/x`)}`,
        headers: { Authorization: 'Bearer t', 'x-trace': '1' },
      });
      assert.equal(cross.status, 200);
      assert.equal(cross.url, `${otherUrl}/x`);
      const sent = JSON.parse(cross.body.toString());
      assert.equal(sent.authorization, undefined);
      assert.equal(sent['x-trace'], '1');
      assert.equal(sent['user-agent'], 'QuarryTest/2.0');

      const same = await client.request({
        url: `${siteUrl}/to/${encodeURIComponent('/headers')}`,
        headers: { authorization: 'Bearer t' },
      });
      assert.equal(JSON.parse(same.body.toString()).authorization, 'Bearer t');

      const asIs = await client.request({
        url: `${siteUrl}/to/${encodeURIComponent('/headers')}`,
        followRedirects: false,
      });
      assert.equal(asIs.status, 302);
      assert.equal(asIs.headers.location, '/headers');

      const loop = await failure(client.request({ url: `${siteUrl}/loop`, followRedirects: 3 }));
      assert.deepEqual([loop.reason, loop.message], ['redirect', 'more than 3 redirects']);
      const toFtp = await failure(
        client.request({ url: `${siteUrl}/to/${encodeURIComponent('ftp://example.org/x')}` }),
      );
      assert.deepEqual([toFtp.reason, toFtp.url], ['redirect', 'ftp://example.org/x']);
      assert.equal((await failure(client.request({ url: 'ftp://example.org/x' }))).reason, 'unsupported_url');
    });

    test('a body beyond maxBytes, a server that never answers and a closed port fail with their reason', async () => {
      assert.equal((await client.request({ url: `${siteUrl}/big`, maxBytes: 64 * 1024 })).body.length, 64 * 1024);
      assert.equal((await failure(client.request({ url: `${siteUrl}/big`, maxBytes: 1000 }))).reason, 'too_large');
      const slow = await failure(client.request({ url: `${siteUrl}/slow`, timeoutMs: 300 }));
      assert.equal(slow.reason, 'timeout');
      assert.equal(slow.message, 'no answer within 0.3 s');
      const closed = http.createServer();
      const closedUrl = await listen(closed);
      await close(closed);
      const refused = await failure(client.request({ url: closedUrl }));
      assert.deepEqual([refused.reason, refused.message], ['network', 'the connection was refused']);
      const badPort = await failure(client.request({ url: 'http://127.0.0.1:25/' }));
      assert.deepEqual([badPort.reason, badPort.message], ['network', 'the port is one HTTP clients refuse to use']);
    });

    test('the SSRF guard refuses private addresses, directly and through a proxy', async () => {
      for (const settings of [{}, { proxyUrl: `http://127.0.0.1:${proxyPort}` }]) {
        proxySeen.length = 0;
        const guarded = createOutboundClient({ allowPrivateNetwork: false, userAgent: 'QuarryTest/2.0', ...settings });
        for (const url of [
          `${siteUrl}/brief.html`,
          'http://[::1]/',
          'http://169.254.169.254/latest/meta-data/',
          `http://[::127.0.0.1]:${new URL(siteUrl).port}/brief.html`,
          'http://[::a9fe:a9fe]/latest/meta-data/',
          'http://[::ffff:0:a9fe:a9fe]/latest/meta-data/',
          'http://0x7f.1/',
        ]) {
          const blocked = await failure(guarded.request({ url }));
          assert.equal(blocked.reason, 'blocked');
          assert.match(blocked.message, /^Refused to connect to /);
        }
        assert.deepEqual(proxySeen, []);
      }
    });

    test("the caller's abort rejects with its reason, not as a timeout", async () => {
      const controller = new AbortController();
      const reason = new Error('client went away');
      setTimeout(() => controller.abort(reason), 50);
      const error = await client.request({ url: `${siteUrl}/slow`, signal: controller.signal }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.equal(error, reason);
    });
  });
});
