/**
 * WS /api/browser/sessions/{id}/cdp: Playwright and Puppeteer on one session at once through its cdpUrl, new
 * pages, a screenshot over 4 MB, reconnecting after a disconnect, and the tokens it refuses.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import WebSocket from 'ws';
import { buildApp } from '../src/app.ts';
import { assembleDeps } from '../src/assemble-deps.ts';
import { cdpTokenKey, signCdpToken } from '../src/modules/browser/cdp/token.ts';
import { browserSessionsOf } from '../src/modules/browser/index.ts';
import { secretKeyMaterial } from '../src/shared/crypto.ts';
import { createNotifier } from '../src/shared/notify.ts';
import { asAnotherInstance, eventually, type TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext, upgradeStatus } from './helpers/browser.ts';
import { listenersOf } from './helpers/listeners.ts';

let ctx: BrowserTestContext;
let alice: TestUser;
let bob: TestUser;

before(async () => {
  ctx = await createBrowserContext();
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
});
after(async () => {
  await ctx.close();
});

const create = async (user: TestUser, body: object = {}) => {
  const res = await ctx.api(user, 'POST', '/api/browser/sessions', body);
  assert.equal(res.statusCode, 201, JSON.stringify(res.json()));
  return res.json().data.session;
};

it('Playwright and Puppeteer drive one session at once; a disconnect keeps the pages', async () => {
  const session = await create(alice);
  assert.equal(session.status, 'LIVE');
  assert.match(session.cdpUrl, new RegExp(`^ws://${ctx.hostPort}/api/browser/sessions/${session.id}/cdp\\?token=`));
  assert.ok(!session.cdpUrl.includes(alice.apiKey));

  const pw = await chromium.connectOverCDP(session.cdpUrl);
  const context = pw.contexts()[0]!;
  const page = await context.newPage();
  await page.setContent('<h1>from playwright</h1>');

  const pp = await puppeteer.connect({ browserWSEndpoint: session.cdpUrl, defaultViewport: null });
  const bodyText = 'document.body ? document.body.textContent : ""';
  const seen = await Promise.all((await pp.pages()).map((p) => p.evaluate(bodyText) as Promise<string>));
  assert.ok(
    seen.some((text) => text.includes('from playwright')),
    'puppeteer sees the page Playwright made',
  );
  const p2 = await pp.newPage();
  await p2.setContent('<p id="pp">from puppeteer</p>');
  await eventually(async () => context.pages().length >= 3, 15_000);

  // Random pixels do not compress: a PNG of 1600×1200 of them is several MB, in one CDP message.
  await p2.evaluate(`(() => {
    const canvas = document.createElement('canvas');
    canvas.width = 1600;
    canvas.height = 1200;
    const g = canvas.getContext('2d');
    const image = g.createImageData(1600, 1200);
    for (let i = 0; i < image.data.length; i++) image.data[i] = (Math.random() * 256) | 0;
    g.putImageData(image, 0, 0);
    document.body.append(canvas);
  })()`);
  const shot = await p2.screenshot({ fullPage: true });
  assert.ok(shot.length > 4 * 1024 * 1024, `screenshot of ${shot.length} bytes`);

  const during = (await ctx.api(alice, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session;
  assert.equal(during.connectedClients, 2);

  await pw.close();
  await pp.disconnect();
  await eventually(async () => {
    const s = (await ctx.api(alice, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session;
    return s.status === 'LIVE' && s.connectedClients === 0;
  }, 15_000);

  const fresh = (await ctx.api(alice, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session;
  const again = await chromium.connectOverCDP(fresh.cdpUrl);
  const texts = await Promise.all(
    again
      .contexts()[0]!
      .pages()
      .map((p) => p.evaluate(bodyText) as Promise<string>),
  );
  assert.ok(texts.some((t) => t.includes('from playwright')));
  assert.ok(texts.some((t) => t.includes('from puppeteer')));
  await again.close();
  assert.equal((await ctx.api(alice, 'DELETE', `/api/browser/sessions/${session.id}`)).statusCode, 200);
});

it("the service's own Playwright connects once per session, through a loopback listener with a secret path", async () => {
  const session = await create(alice);
  const sessions = browserSessionsOf(ctx.deps);
  const first = await sessions.playwright(session.id);
  assert.equal(await sessions.playwright(session.id), first, 'reused');
  const page = await first.contexts()[0]!.newPage();
  await page.setContent('<b>rest</b>');
  assert.equal(await page.textContent('b'), 'rest');
  // Only loopback listeners: the API (bound by the test) and the internal CDP endpoint.
  for (const l of listenersOf()) assert.match(l.address, /^(127\.0\.0\.1|::1)$/);
  const internal = listenersOf().filter((l) => `127.0.0.1:${l.port}` !== ctx.hostPort);
  assert.ok(internal.length >= 1);
  // Without the secret path: closed at once.
  for (const l of internal) {
    const ws = new WebSocket(`ws://127.0.0.1:${l.port}/guess/${session.id}`);
    const code = await new Promise<number>((resolve) => {
      ws.once('close', (c) => resolve(c));
      ws.once('error', () => resolve(-1));
    });
    assert.notEqual(code, 1000);
  }
  // A REST operation counts as activity; the client count is users' clients only.
  assert.equal(
    (await ctx.api(alice, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session.connectedClients,
    0,
  );
  assert.equal((await ctx.api(alice, 'DELETE', `/api/browser/sessions/${session.id}`)).statusCode, 200);
  await assert.rejects(sessions.playwright(session.id));
});

it('a cdpUrl is refused once the API key that asked for it is revoked, and its open socket is closed; one from another key still opens', async () => {
  const extra = await ctx.api(alice, 'POST', '/api/api-keys', {
    name: 'short-lived',
    scopes: ['browser:read', 'browser:write'],
  });
  assert.equal(extra.statusCode, 201, JSON.stringify(extra.json()));
  const { id: keyId, key } = extra.json().data.apiKey;
  const viaExtra = { ...alice, apiKey: key, headers: { authorization: `Bearer ${key}` } };
  const session = await create(alice);
  const fromExtra = (await ctx.api(viaExtra, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session.cdpUrl;
  assert.equal(await upgradeStatus(fromExtra), 101);
  const openSocket = async (url: string) => {
    const ws = new WebSocket(url);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<[number, string]>((resolve) =>
      ws.once('close', (code, reason) => resolve([code, String(reason)])),
    );
    return { ws, closed };
  };
  const [extraSocket, ownSocket] = [await openSocket(fromExtra), await openSocket(session.cdpUrl)];
  assert.equal((await ctx.api(alice, 'DELETE', `/api/api-keys/${keyId}`)).statusCode, 200);
  assert.deepEqual(await extraSocket.closed, [1008, 'the API key that made this cdpUrl was revoked or expired']);
  assert.equal(await upgradeStatus(fromExtra), 401, 'its key is revoked');
  assert.equal(await upgradeStatus(session.cdpUrl), 101, "alice's own key still stands");
  assert.equal(ownSocket.ws.readyState, WebSocket.OPEN, "the socket of alice's own key stays open");
  ownSocket.ws.close();
  await ctx.api(alice, 'DELETE', `/api/browser/sessions/${session.id}`);
});

it('a key revoked through another API process closes the socket here (the revocation notice, not this process)', async () => {
  const notifier = createNotifier(ctx.deps.database, ctx.deps.config.DATABASE_URL);
  const app2 = await buildApp(assembleDeps(asAnotherInstance({ ...ctx.deps, notifier })));
  await app2.ready();
  try {
    const extra = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'other-process', scopes: ['browser:read'] });
    const { id: keyId, key } = extra.json().data.apiKey;
    const session = await create(alice);
    const viaExtra = { ...alice, apiKey: key, headers: { authorization: `Bearer ${key}` } };
    const cdpUrl = (await ctx.api(viaExtra, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session.cdpUrl;
    const ws = new WebSocket(cdpUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    const res = await app2.inject({ method: 'DELETE', url: `/api/api-keys/${keyId}`, headers: alice.headers });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await closed, 1008);
    await ctx.api(alice, 'DELETE', `/api/browser/sessions/${session.id}`);
  } finally {
    await app2.close();
    await notifier.close();
  }
});

it('refuses a bad, expired or foreign token before the upgrade', async () => {
  const mine = await create(alice);
  const theirs = await create(bob);
  const url = new URL(mine.cdpUrl);
  const base = `ws://${ctx.hostPort}/api/browser/sessions`;
  assert.equal(await upgradeStatus(mine.cdpUrl), 101);
  assert.equal(await upgradeStatus(`${base}/${mine.id}/cdp`), 401);
  assert.equal(await upgradeStatus(`${base}/${mine.id}/cdp?token=nope`), 401);
  const token = url.searchParams.get('token')!;
  assert.equal(await upgradeStatus(`${base}/${mine.id}/cdp?token=${token.slice(0, -2)}xx`), 401);
  // A valid token of one session opens no other, the other user's included.
  assert.equal(await upgradeStatus(`${base}/${theirs.id}/cdp?token=${token}`), 404);
  const key = cdpTokenKey(secretKeyMaterial(ctx.config));
  const expired = signCdpToken(key, {
    sessionId: mine.id,
    userId: alice.id,
    clientRef: null,
    keyId: null,
    expiresAt: Date.now() - 1,
  });
  assert.equal(await upgradeStatus(`${base}/${mine.id}/cdp?token=${expired}`), 401);
  // Signed for alice but naming bob's session (as if alice guessed its id): not hers.
  const forged = signCdpToken(key, {
    sessionId: theirs.id,
    userId: alice.id,
    clientRef: null,
    keyId: null,
    expiresAt: Date.now() + 60_000,
  });
  assert.equal(await upgradeStatus(`${base}/${theirs.id}/cdp?token=${forged}`), 404);
  // Released: the token names a session that no longer runs.
  await ctx.api(alice, 'DELETE', `/api/browser/sessions/${mine.id}`);
  assert.equal(await upgradeStatus(mine.cdpUrl), 404);
  await ctx.api(bob, 'DELETE', `/api/browser/sessions/${theirs.id}`);
});
