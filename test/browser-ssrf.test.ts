/**
 * Without ALLOW_PRIVATE_NETWORK every connection of a session's Chromium goes through the SSRF guard: a CDP
 * navigation and an in-page fetch to a loopback server never reach it. The guard admits the session's own
 * Chromium by its process group (it cannot send proxy credentials) and refuses every other process.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { chromium } from 'playwright-core';
import WebSocket from 'ws';
import { police } from '../src/modules/browser/cdp/policy.ts';
import { browserSessionsOf } from '../src/modules/browser/index.ts';
import { peerInGroup } from '../src/modules/browser/pool/peer.ts';
import { SSRF_HEADER, startGuardProxy } from '../src/shared/guard-proxy.ts';
import type { TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext } from './helpers/browser.ts';

let ctx: BrowserTestContext;
let alice: TestUser;
let hits = 0;
const fixture = http.createServer((_req, res) => {
  hits++;
  res.end('<p id="secret">internal</p>');
});
let fixtureUrl: string;

before(async () => {
  await new Promise<void>((resolve) => fixture.listen(0, '127.0.0.1', resolve));
  fixtureUrl = `http://127.0.0.1:${(fixture.address() as AddressInfo).port}/`;
  ctx = await createBrowserContext({ env: { ALLOW_PRIVATE_NETWORK: 'false' } });
  alice = await ctx.signup();
});
after(async () => {
  await ctx.close();
  fixture.close();
});

/** An HTTP request through `proxy` from this process: the status it answers. */
const viaProxy = (proxy: string, target: string) =>
  new Promise<number>((resolve, reject) => {
    const { hostname, port } = new URL(proxy);
    http
      .request({ host: hostname, port, path: target, headers: { host: new URL(target).host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .once('error', reject)
      .end();
  });

it('CDP navigation and in-page fetch to a loopback server are refused by the guard', async () => {
  const session = (await ctx.api(alice, 'POST', '/api/browser/sessions', {})).json().data.session;
  const browser = await chromium.connectOverCDP(session.cdpUrl);
  const page = await browser.contexts()[0]!.newPage();
  const response = await page.goto(fixtureUrl);
  // 403 from the guard (not a 407): Chromium was admitted by its process group, then refused by the SSRF check.
  assert.equal(response?.status(), 403);
  assert.ok(response?.headers()[SSRF_HEADER], 'refused by the SSRF guard');
  await page.setContent('<p>public page</p>');
  const fetched = await page.evaluate(`fetch(${JSON.stringify(fixtureUrl)}).then((r) => r.status, (e) => String(e))`);
  assert.notEqual(fetched, 200);
  assert.equal(hits, 0, 'the loopback server saw no request');

  // A browser context with a proxy of its own would go around the guard: refused.
  const raw = new WebSocket(session.cdpUrl);
  await new Promise((resolve) => raw.once('open', resolve));
  const answer = new Promise<any>((resolve) => raw.on('message', (m) => resolve(JSON.parse(String(m)))));
  raw.send(JSON.stringify({ id: 7, method: 'Target.createBrowserContext', params: { proxyServer: 'direct://' } }));
  const refused = await answer;
  assert.equal(refused.id, 7);
  assert.match(refused.error.message, /proxy/);
  raw.close();

  // The same guard, asked by another process (this one): refused before anything is relayed.
  const guardUrl = browserSessionsOf(ctx.deps).host!.get(session.id)!.guardUrl!;
  assert.equal(await viaProxy(guardUrl, fixtureUrl), 407);
  assert.equal(hits, 0);
  await browser.close();
  await ctx.api(alice, 'DELETE', `/api/browser/sessions/${session.id}`);
});

it('download paths are pointed into the session directory', () => {
  const policy = { downloadDir: '/tmp/quarry-browser-x/Downloads', guarded: true };
  const command = { method: 'Browser.setDownloadBehavior', params: { behavior: 'allow', downloadPath: '/etc' } };
  assert.equal(police(command, policy), undefined);
  assert.equal(command.params.downloadPath, policy.downloadDir);
  assert.equal(police({ method: 'Target.createBrowserContext', params: {} }, policy), undefined);
  const proxied = { method: 'Target.createBrowserContext', params: { proxyServer: 'direct://' } };
  assert.equal(police(proxied, { ...policy, guarded: false }), undefined);
});

it('a guard admitting by process group relays for that group only', async () => {
  const stop = new AbortController();
  let group = -1;
  const guard = await startGuardProxy({
    allowPrivateNetwork: true,
    signal: stop.signal,
    admitPeer: async (socket) => peerInGroup(socket, group),
  });
  const { hostname, port } = new URL(guard.url);
  const script = `require('node:http').request({ host: '${hostname}', port: ${port}, path: '${fixtureUrl}' },
    (res) => { console.log(res.statusCode); res.resume(); }).end();`;
  const child = spawn(process.execPath, ['-e', script], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
  group = child.pid!;
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  await new Promise((resolve) => child.once('exit', resolve));
  assert.equal(out.trim(), '200', 'the admitted group reaches the server');
  assert.equal(hits, 1);
  assert.equal(await viaProxy(guard.url, fixtureUrl), 407, 'another process is refused');
  assert.equal(hits, 1);
  stop.abort();
  await guard.close();
});
