/**
 * Proxy profiles (docs/scraping.md "Proxy profiles") against a real HTTP proxy and a real SOCKS5 proxy on
 * loopback, both requiring credentials: the check on create (good, wrong password, dead port, skipTest), masking
 * and encryption at rest, isolation, the in-use refusal, and each kind of traffic through the chosen proxy (a
 * STATIC crawl, a DYNAMIC crawl, a markdown export, a browser session's navigation), rotation across endpoints,
 * and the guard proxy's SOCKS5 tunnel for HTTPS (CONNECT).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { queryRows } from '../src/db/client.ts';
import { createProxyProfileService } from '../src/modules/proxy-profiles/index.ts';
import type { AppError } from '../src/shared/errors.ts';
import { startGuardProxy } from '../src/shared/guard-proxy.ts';
import {
  DIRECTORY_SELECTORS,
  type FixtureSite,
  type ForwardProxy,
  startFixtureSite,
  startForwardProxy,
} from './fixtures/sites.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { type Socks5Proxy, startSocks5Proxy } from './helpers/socks5-proxy.ts';

const HTTP_AUTH = { username: 'scraper', password: 'http-s3cret-pw' };
const SOCKS_AUTH = { username: 'socks-user', password: 'socks-s3cret-pw' };
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noChromium = existsSync(chromium) ? false : `skipped: Chromium not found at ${chromium}`;

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let site: FixtureSite;
let httpProxy: ForwardProxy;
let socks: Socks5Proxy;

const portOf = (url: string) => Number(new URL(url).port);
const siteHost = () => `127.0.0.1:${site.port}`;

before(async () => {
  site = await startFixtureSite();
  httpProxy = await startForwardProxy({ auth: `${HTTP_AUTH.username}:${HTTP_AUTH.password}` });
  socks = await startSocks5Proxy(SOCKS_AUTH);
  ({ ctx, alice, bob } = await createTwoUserContext({
    env: { PROXY_CHECK_URL: `${site.origin}/robots.txt`, SCRAPER_MAX_RETRIES: '0' },
  }));
});
after(async () => {
  await ctx?.close();
  await Promise.all([site?.close(), httpProxy?.close(), socks?.close()]);
});

interface ProfileView {
  id: string;
  type: string;
  host: string;
  port: number;
  auth: { username: string; passwordSet: boolean } | null;
  checkedAt: string | null;
}

const post = (user: TestUser, body: Record<string, unknown>) => ctx.call(user, 'POST', '/api/proxy-profiles', body);

async function create(user: TestUser, body: Record<string, unknown>): Promise<ProfileView> {
  const res = await post(user, body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.proxyProfile;
}

const httpProfile = (user = alice, extra: Record<string, unknown> = {}) =>
  create(user, { type: 'http', host: '127.0.0.1', port: portOf(httpProxy.url), auth: HTTP_AUTH, ...extra });
const socksProfile = (user = alice) =>
  create(user, { type: 'socks5', host: '127.0.0.1', port: socks.port, auth: SOCKS_AUTH });

/** A port nothing listens on. */
async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function finishedJob(user: TestUser, id: string) {
  return eventually(async () => {
    const job = (await ctx.call(user, 'GET', `/api/jobs/${id}`)).json().data.job;
    return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(job.status) ? job : undefined;
  }, 60_000);
}

async function runSource(user: TestUser, body: Record<string, unknown>) {
  const res = await ctx.call(user, 'POST', '/api/sources', { name: 'Proxied', scrapeType: 'STATIC', ...body });
  assert.equal(res.statusCode, 201, res.body);
  const source = res.json().data.source;
  assert.equal((await ctx.call(user, 'POST', `/api/sources/${source.id}/activate`)).statusCode, 200);
  const job = await ctx.call(user, 'POST', '/api/jobs', { name: 'Run', sourceId: source.id });
  assert.equal(job.statusCode, 201, job.body);
  return { source, job: await finishedJob(user, job.json().data.job.id) };
}

const httpTargets = () => httpProxy.requests.map((r) => r.target);

describe('the check on create', () => {
  test('an HTTP proxy with good credentials passes: the check went through it; the password is masked', async () => {
    const before = httpTargets().length;
    const profile = await httpProfile(alice, { name: 'office' });
    assert.deepEqual(profile.auth, { username: HTTP_AUTH.username, passwordSet: true });
    assert.ok(profile.checkedAt);
    assert.deepEqual(httpTargets().slice(before), [`${site.origin}/robots.txt`]);
    const listed = await ctx.call(alice, 'GET', '/api/proxy-profiles');
    assert.ok(!listed.body.includes(HTTP_AUTH.password));
    assert.ok(listed.json().data.proxyProfiles.some((p: ProfileView) => p.id === profile.id));
    const one = await ctx.call(alice, 'GET', `/api/proxy-profiles/${profile.id}`);
    assert.equal(one.json().data.proxyProfile.auth.username, HTTP_AUTH.username);
    assert.ok(!one.body.includes(HTTP_AUTH.password));
  });

  test('the password is encrypted at rest: its column does not hold it', async () => {
    const profile = await httpProfile();
    const [row] = await queryRows<{ password_sealed: string }>(
      ctx.deps.db,
      sql`SELECT password_sealed FROM proxy_profiles WHERE id = ${profile.id}`,
    );
    assert.ok(row?.password_sealed);
    assert.ok(!row.password_sealed.includes(HTTP_AUTH.password));
    assert.ok(!Buffer.from(row.password_sealed, 'base64').toString('latin1').includes(HTTP_AUTH.password));
  });

  test('a SOCKS5 proxy with good credentials passes, through it', async () => {
    const before = socks.connects.length;
    const profile = await socksProfile();
    assert.equal(profile.type, 'socks5');
    assert.deepEqual(socks.connects.slice(before), [siteHost()]);
  });

  test('a wrong password is 400 CONNECTION_FAILED naming the refusal (HTTP 407, SOCKS5 auth); nothing stored', async () => {
    const count = async () =>
      (await ctx.call(alice, 'GET', '/api/proxy-profiles?limit=100')).json().data.proxyProfiles.length;
    const n = await count();
    const http = await post(alice, {
      type: 'http',
      host: '127.0.0.1',
      port: portOf(httpProxy.url),
      auth: { username: HTTP_AUTH.username, password: 'wrong' },
    });
    assertError(http, 400, 'CONNECTION_FAILED');
    assert.match(http.json().error.message, /407/);
    const rejected = socks.rejectedLogins;
    const viaSocks = await post(alice, {
      type: 'socks5',
      host: '127.0.0.1',
      port: socks.port,
      auth: { username: SOCKS_AUTH.username, password: 'wrong' },
    });
    assertError(viaSocks, 400, 'CONNECTION_FAILED');
    assert.equal(socks.rejectedLogins, rejected + 1);
    assert.equal(await count(), n);
  });

  test('a dead port is 400 CONNECTION_FAILED (refused); skipTest stores it unchecked', async () => {
    const port = await deadPort();
    for (const type of ['http', 'socks5']) {
      const res = await post(alice, { type, host: '127.0.0.1', port, auth: HTTP_AUTH });
      assertError(res, 400, 'CONNECTION_FAILED');
      assert.match(res.json().error.message, /refused/, type);
    }
    const stored = await create(alice, { type: 'http', host: '127.0.0.1', port, skipTest: true });
    assert.equal(stored.checkedAt, null);
    assert.equal(stored.auth, null);
  });

  test('a check URL answering a non-2xx through the proxy is CONNECTION_FAILED naming the status', async () => {
    const service = createProxyProfileService({
      ...ctx.deps,
      config: { ...ctx.deps.config, PROXY_CHECK_URL: `${site.origin}/fail` },
    });
    await assert.rejects(
      service.create(alice.id, {
        type: 'http',
        host: '127.0.0.1',
        port: portOf(httpProxy.url),
        auth: HTTP_AUTH,
        skipTest: false,
      }),
      (e: AppError) => e.code === 'CONNECTION_FAILED' && /answered 500/.test(e.message),
    );
  });

  test('a proxy on a private address is refused without ALLOW_PRIVATE_NETWORK', async () => {
    const service = createProxyProfileService({
      ...ctx.deps,
      config: { ...ctx.deps.config, ALLOW_PRIVATE_NETWORK: false },
    });
    await assert.rejects(
      service.create(alice.id, { type: 'http', host: '10.0.0.5', port: 3128, skipTest: true }),
      (e: AppError) => e.code === 'VALIDATION_ERROR' && e.details?.[0]?.field === 'host',
    );
  });

  test('bad input is 400 naming the field', async () => {
    const ok = { type: 'http', host: '127.0.0.1', port: 3128, skipTest: true };
    assertValidation(await post(alice, { ...ok, type: 'socks4' }), 'type');
    assertValidation(await post(alice, { ...ok, port: 0 }), 'port');
    assertValidation(await post(alice, { ...ok, host: 'http://x/' }), 'host');
    assertValidation(await post(alice, { ...ok, auth: { username: 'u' } }), 'auth.password');
    assertValidation(await post(alice, { ...ok, rotation: { mode: 'sometimes', endpoints: [] } }), 'rotation.mode');
    assertValidation(await ctx.call(alice, 'GET', '/api/proxy-profiles?cursor=%%%'), 'cursor');
  });
});

describe('isolation and deletion', () => {
  test("another user's profile is 404 to read, delete and use", async () => {
    const profile = await httpProfile();
    assertError(await ctx.call(bob, 'GET', `/api/proxy-profiles/${profile.id}`), 404, 'NOT_FOUND');
    assertError(await ctx.call(bob, 'DELETE', `/api/proxy-profiles/${profile.id}`), 404, 'NOT_FOUND');
    assert.equal((await ctx.call(bob, 'GET', '/api/proxy-profiles')).json().data.proxyProfiles.length, 0);
    const uses = [
      ctx.call(bob, 'POST', '/api/sources', {
        name: 'x',
        url: site.url,
        scrapeType: 'STATIC',
        selectors: DIRECTORY_SELECTORS,
        proxyProfileId: profile.id,
      }),
      ctx.call(bob, 'POST', '/api/markdown-exports', { startUrl: site.url, proxyProfileId: profile.id }),
      ctx.call(bob, 'POST', '/api/browser/sessions', { proxyProfileId: profile.id }),
    ];
    for (const res of await Promise.all(uses)) {
      assertError(res, 404, 'NOT_FOUND');
      assert.equal(res.json().error.details?.[0]?.field, 'proxyProfileId', res.body);
    }
  });

  test('a profile a source uses is refused with 409 naming it; once the source lets go it is deleted', async () => {
    const profile = await create(alice, { type: 'http', host: '127.0.0.1', port: 3128, skipTest: true });
    const res = await ctx.call(alice, 'POST', '/api/sources', {
      name: 'Holds it',
      url: site.url,
      scrapeType: 'STATIC',
      selectors: DIRECTORY_SELECTORS,
      proxyProfileId: profile.id,
    });
    assert.equal(res.statusCode, 201, res.body);
    const source = res.json().data.source;
    assert.equal(source.proxyProfileId, profile.id);
    const refused = await ctx.call(alice, 'DELETE', `/api/proxy-profiles/${profile.id}`);
    assertError(refused, 409, 'CONFLICT');
    assert.match(refused.json().error.message, new RegExp(`source ${source.id}`));
    const patched = await ctx.call(alice, 'PATCH', `/api/sources/${source.id}`, { proxyProfileId: null });
    assert.equal(patched.json().data.source.proxyProfileId, null);
    assert.equal((await ctx.call(alice, 'DELETE', `/api/proxy-profiles/${profile.id}`)).statusCode, 200);
    assertError(await ctx.call(alice, 'GET', `/api/proxy-profiles/${profile.id}`), 404, 'NOT_FOUND');
  });
});

describe('traffic through the chosen proxy', () => {
  test('a STATIC crawl through the HTTP proxy and through the SOCKS5 proxy', async () => {
    const viaHttp = await httpProfile();
    const before = httpTargets().length;
    const { job } = await runSource(alice, {
      url: `${site.origin}/directory`,
      selectors: DIRECTORY_SELECTORS,
      proxyProfileId: viaHttp.id,
    });
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.pagesVisited, 3);
    const sent = httpTargets().slice(before);
    for (const page of ['/directory', '/directory?page=2', '/directory?page=3'])
      assert.ok(sent.includes(`${site.origin}${page}`), `${page} not in ${sent.join(' ')}`);

    const viaSocks = await socksProfile();
    const connects = socks.connects.length;
    const proxiedBefore = httpTargets().length;
    const second = await runSource(alice, {
      url: `${site.origin}/directory`,
      selectors: DIRECTORY_SELECTORS,
      proxyProfileId: viaSocks.id,
    });
    assert.equal(second.job.status, 'COMPLETED', second.job.error);
    assert.ok(socks.connects.length > connects, 'the crawl connected through the SOCKS5 proxy');
    assert.ok(socks.connects.slice(connects).every((t) => t === siteHost()));
    assert.equal(httpTargets().length, proxiedBefore, 'nothing went through the other proxy');
  });

  test('per-request rotation spreads a crawl over the endpoints', async () => {
    const second = await startForwardProxy({ auth: `${HTTP_AUTH.username}:${HTTP_AUTH.password}` });
    try {
      const profile = await httpProfile(alice, {
        rotation: { mode: 'per-request', endpoints: [{ host: '127.0.0.1', port: portOf(second.url) }] },
      });
      const before = httpTargets().length;
      const secondBefore = second.requests.length;
      const { job } = await runSource(alice, {
        url: `${site.origin}/directory`,
        selectors: DIRECTORY_SELECTORS,
        proxyProfileId: profile.id,
      });
      assert.equal(job.status, 'COMPLETED', job.error);
      // robots.txt and three pages: two requests each.
      assert.equal(httpTargets().length - before, 2);
      assert.equal(second.requests.length - secondBefore, 2);
    } finally {
      await second.close();
    }
  });

  test('a markdown export through the HTTP proxy', async () => {
    const profile = await httpProfile();
    const before = httpTargets().length;
    const res = await ctx.call(alice, 'POST', '/api/markdown-exports', {
      startUrl: `${site.origin}/directory`,
      maxDepth: 0,
      proxyProfileId: profile.id,
    });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json().data.export.id;
    const done = await eventually(async () => {
      const e = (await ctx.call(alice, 'GET', `/api/markdown-exports/${id}`)).json().data.export;
      return ['COMPLETED', 'FAILED'].includes(e.status) ? e : undefined;
    }, 60_000);
    assert.equal(done.status, 'COMPLETED', done.error);
    assert.ok(httpTargets().slice(before).includes(`${site.origin}/directory`));
  });

  test('a DYNAMIC crawl through the HTTP proxy', { skip: noChromium }, async () => {
    const profile = await httpProfile();
    const before = httpTargets().length;
    const { job } = await runSource(alice, {
      scrapeType: 'DYNAMIC',
      url: `${site.origin}/js-directory?page=1`,
      selectors: { ...DIRECTORY_SELECTORS, waitFor: '.person' },
      maxPages: 1,
      proxyProfileId: profile.id,
    });
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.ok(job.leadsFound > 0);
    assert.ok(httpTargets().slice(before).includes(`${site.origin}/js-directory?page=1`), httpTargets().join(' '));
  });

  test("a browser session's navigation through the SOCKS5 proxy", { skip: noChromium }, async () => {
    const profile = await socksProfile();
    const created = await ctx.call(alice, 'POST', '/api/browser/sessions', { proxyProfileId: profile.id });
    assert.equal(created.statusCode, 201, created.body);
    const session = created.json().data.session;
    assert.equal(session.proxyProfileId, profile.id);
    try {
      const connects = socks.connects.length;
      const nav = await ctx.call(alice, 'POST', `/api/browser/sessions/${session.id}/actions/navigate`, {
        url: `${site.origin}/directory`,
      });
      assert.equal(nav.statusCode, 200, nav.body);
      assert.ok(socks.connects.slice(connects).includes(siteHost()), socks.connects.join(' '));
      const busy = await ctx.call(alice, 'DELETE', `/api/proxy-profiles/${profile.id}`);
      assertError(busy, 409, 'CONFLICT');
      assert.match(busy.json().error.message, new RegExp(`browser session ${session.id}`));
      // Asleep and woken, the session still goes out through its proxy.
      const slept = await ctx.call(alice, 'POST', `/api/browser/sessions/${session.id}/sleep`);
      assert.equal(slept.statusCode, 200, slept.body);
      const wake = `/api/browser/snapshots/${slept.json().data.snapshot.id}/wake`;
      const beforeWake = socks.connects.length;
      assert.equal((await ctx.call(alice, 'POST', wake)).statusCode, 200);
      const again = await ctx.call(alice, 'POST', `/api/browser/sessions/${session.id}/actions/navigate`, {
        url: `${site.origin}/directory?page=2`,
      });
      assert.equal(again.statusCode, 200, again.body);
      assert.ok(socks.connects.slice(beforeWake).includes(siteHost()), 'the woken session used the proxy');
    } finally {
      await ctx.call(alice, 'DELETE', `/api/browser/sessions/${session.id}`);
    }
  });

  test('the guard proxy tunnels CONNECT (HTTPS) through a SOCKS5 upstream', async () => {
    const stop = new AbortController();
    const guard = await startGuardProxy({
      allowPrivateNetwork: true,
      upstreamProxyUrls: [socks.url],
      signal: stop.signal,
    });
    const connects = socks.connects.length;
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const s = net.connect(portOf(guard.url), '127.0.0.1', () => {
          const basic = Buffer.from(`${guard.username}:${guard.password}`).toString('base64');
          s.write(
            `CONNECT ${siteHost()} HTTP/1.1\r\nHost: ${siteHost()}\r\nProxy-Authorization: Basic ${basic}\r\n\r\n`,
          );
        });
        let text = '';
        let tunnelled = false;
        s.on('data', (chunk) => {
          text += chunk.toString();
          if (!tunnelled && text.includes('\r\n\r\n')) {
            tunnelled = true;
            if (!text.startsWith('HTTP/1.1 200')) return reject(new Error(text));
            text = '';
            s.write(`GET /robots.txt HTTP/1.1\r\nHost: ${siteHost()}\r\nConnection: close\r\n\r\n`);
          }
        });
        s.on('end', () => resolve(text));
        s.on('error', reject);
      });
      assert.match(answer, /^HTTP\/1\.1 200/);
      assert.deepEqual(socks.connects.slice(connects), [siteHost()]);
    } finally {
      stop.abort();
      await guard.close();
    }
  });
});
