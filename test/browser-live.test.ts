/**
 * The live viewer: a signed URL of an embeddable page opened in a real Chromium shows the session's active tab
 * (pixels of the fixture), sends clicks and keys through an interact token and none through a view token (the
 * server drops them), follows the active tab, shares one screencast between viewers, reports control hand-offs in
 * the logs and as webhook events, and closes its socket at revocation and at the session's end. Tokens forged or
 * expired are 401, revoked 404; other users and other X-Client-Refs 404; bad input 400 naming the field.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { sql } from 'drizzle-orm';
import { type Browser, chromium, type Page } from 'playwright-core';
import WebSocket from 'ws';
import { queryRows } from '../src/db/client.ts';
import { liveViewsOf } from '../src/modules/browser/live/live.service.ts';
import { LiveHub, type Viewer } from '../src/modules/browser/live/screencast.ts';
import { eventDataSchemas } from '../src/shared/event-payloads.ts';
import { LIVE_BLUE, LIVE_GREEN, startLivePages } from './fixtures/live-pages.ts';
import { eventually, type TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext, upgradeStatus } from './helpers/browser.ts';

let ctx: BrowserTestContext;
let site: Awaited<ReturnType<typeof startLivePages>>;
let alice: TestUser;
let bob: TestUser;
let session: { id: string };
let viewer: Browser;
const S = '/api/browser/sessions';
const A = { 'x-client-ref': 'tenant-a' };
const ANCESTORS = "'self' https://embedder.example";

type LiveView = { id: string; url: string; expiresAt: string; mode: 'view' | 'interact' };

const createView = async (body: object, user = alice, id = session.id, headers = {}) =>
  ctx.api(user, 'POST', `${S}/${id}/live-views`, body, headers);
const view = async (mode: 'view' | 'interact', extra = {}): Promise<LiveView> => {
  const res = await createView({ mode, ...extra });
  assert.equal(res.statusCode, 201, JSON.stringify(res.json()));
  return res.json().data;
};
const act = async (action: string, body: object) => {
  const res = await ctx.api(alice, 'POST', `${S}/${session.id}/actions/${action}`, body);
  assert.equal(res.statusCode, 200, `${action}: ${JSON.stringify(res.json())}`);
  return res.json().data;
};
const wsUrl = (url: string) => `${url.replace(/^http/, 'ws')}/stream`;
const stats = async () => (await liveViewsOf(ctx.deps).hubStats(session.id))!;

/** Waits until `expression` holds in the viewer page (evaluated over CDP: the page's CSP forbids eval). */
const until = (page: Page, expression: string, timeoutMs = 5000) =>
  eventually(async () => page.evaluate(expression), timeoutMs, 50);
/** The live page open in the viewer Chromium, once it has drawn a frame. */
async function open(url: string): Promise<Page> {
  const page = await viewer.newPage({ viewport: { width: 1280, height: 720 } });
  await page.goto(url);
  await until(page, 'window.__live.frames > 0', 15_000);
  return page;
}
/** The colour of the viewer's canvas at a point of the session's page. */
const pixel = (page: Page, x: number, y: number): Promise<number[]> =>
  page.evaluate(
    `[...document.getElementById('screen').getContext('2d').getImageData(${x}, ${y}, 1, 1).data].slice(0, 3)`,
  );
/** What the viewer page tells of itself: frames drawn, their size, whether its socket closed and how. */
const liveOf = (page: Page): Promise<Record<string, any>> => page.evaluate('window.__live');
const near = (rgb: number[], want: readonly number[]) => rgb.every((v, i) => Math.abs(v - want[i]!) <= 12);

before(async () => {
  site = await startLivePages();
  ctx = await createBrowserContext({
    env: { ALLOW_PRIVATE_NETWORK: 'true', BROWSER_LIVE_FRAME_ANCESTORS: ANCESTORS, BROWSER_LIVE_MAX_FPS: '10' },
  });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
  const res = await ctx.api(alice, 'POST', S, { keepAlive: true });
  assert.equal(res.statusCode, 201, JSON.stringify(res.json()));
  session = res.json().data.session;
  await act('navigate', { url: `${site.url}/green` });
  viewer = await chromium.launch({ executablePath: ctx.config.CHROMIUM_PATH });
});
after(async () => {
  await viewer?.close();
  await ctx?.close();
  await site?.close();
});

describe('live views', () => {
  it('answers a signed URL on the service; the page is self-contained and framable by the configured ancestors', async () => {
    const v = await view('interact');
    assert.match(v.url, new RegExp(`^http://${ctx.hostPort}/api/browser/live/[\\w.-]+$`));
    assert.equal(v.mode, 'interact');
    assert.ok(Date.parse(v.expiresAt) - Date.now() > 3_500_000, 'an hour by default');
    const res = await ctx.app.inject({ method: 'GET', url: new URL(v.url).pathname });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    const csp = String(res.headers['content-security-policy']);
    assert.ok(csp.includes(`frame-ancestors ${ANCESTORS}`), csp);
    assert.match(csp, /connect-src 'self'/);
    assert.equal(res.headers['x-frame-options'], undefined, 'no X-Frame-Options overriding frame-ancestors');
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
    assert.doesNotMatch(res.body, /<script[^>]+src=|<link[^>]+href=|https?:\/\//i, 'nothing loaded from anywhere');
  });

  it('shows the active tab in a real page; a click and keys through an interact token reach it', async () => {
    const v = await view('interact');
    const page = await open(v.url);
    const { result: size } = await act('evaluate', { expression: '[innerWidth, innerHeight]' });
    assert.deepEqual(await liveOf(page).then((l) => [l.width, l.height]), size, "a frame of the session's viewport");
    assert.ok(near(await pixel(page, 640, 300), LIVE_GREEN), `green: ${await pixel(page, 640, 300)}`);
    // The frame is letterboxed in the viewer's 1280 × 720 (object-fit: contain): its top is that much lower.
    const top = (720 - size[1]) / 2;

    const before = site.clicks;
    await page.mouse.click(200, top + 100);
    await eventually(async () => site.clicks === before + 1, 5000);

    await page.mouse.click(800, top + size[1] * 0.6 + 12); // the input field, at 60 % / 60 %
    await page.keyboard.type('hi there');
    await eventually(async () => {
      const { result } = await act('evaluate', { expression: "document.getElementById('field').value" });
      return result === 'hi there';
    }, 5000);
    await page.close();
    await eventually(async () => (await stats()).viewers === 0, 5000);
  });

  it('a view token shows the page but its input is dropped by the server, whatever its page sends', async () => {
    const v = await view('view');
    const page = await open(v.url);
    assert.ok(near(await pixel(page, 640, 300), LIVE_GREEN));
    const before = site.clicks;
    await page.mouse.click(200, 200);
    await page.keyboard.type('ignored');
    // Its page sends nothing; a hand-made client sends clicks anyway.
    const ws = new WebSocket(wsUrl(v.url));
    await new Promise((resolve) => ws.once('open', resolve));
    const dropped = (await stats()).inputsDropped;
    for (const event of ['mousePressed', 'mouseReleased'])
      ws.send(JSON.stringify({ type: 'mouse', event, x: 200, y: 200, button: 'left', clickCount: 1 }));
    ws.send(JSON.stringify({ type: 'control', action: 'take' }));
    await eventually(async () => (await stats()).inputsDropped === dropped + 3, 5000);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(site.clicks, before, 'no click reached the page');
    ws.close();
    await page.close();
    await eventually(async () => (await stats()).viewers === 0, 5000);
  });

  it('viewers share one screencast, which follows the active tab', async () => {
    const v = await view('view');
    const started = (await stats()).screencastsStarted;
    const [one, two] = [await open(v.url), await open(v.url)];
    const s = await stats();
    assert.equal(s.viewers, 2);
    assert.equal(s.screencastsStarted, started + 1, 'one Page.startScreencast for both viewers');

    const tab = await ctx.api(alice, 'POST', `${S}/${session.id}/tabs`, {});
    assert.equal(tab.statusCode, 201, JSON.stringify(tab.json()));
    await act('navigate', { url: `${site.url}/blue` });
    for (const page of [one, two]) await eventually(async () => near(await pixel(page, 640, 300), LIVE_BLUE), 10_000);
    assert.equal((await stats()).screencastsStarted, started + 2, 'one more for the new tab, still shared');
    await ctx.api(alice, 'DELETE', `${S}/${session.id}/tabs/${tab.json().data.id}`);
    for (const page of [one, two]) await eventually(async () => near(await pixel(page, 640, 300), LIVE_GREEN), 10_000);
    await one.close();
    await two.close();
    await eventually(async () => (await stats()).viewers === 0, 5000);
  });

  it('at most BROWSER_LIVE_MAX_FPS frames a second reach the viewers', async () => {
    await act('navigate', { url: `${site.url}/clock` });
    const v = await view('view');
    const page = await open(v.url);
    const start = (await liveOf(page)).frames;
    await new Promise((r) => setTimeout(r, 2000));
    const frames = (await liveOf(page)).frames - start;
    assert.ok(frames >= 4 && frames <= 22, `${frames} frames in 2 s at 10 fps`);
    await page.close();
    await act('navigate', { url: `${site.url}/green` });
  });

  it("taking and releasing control shows in the session's logs and as browser.live.control events", async () => {
    const hook = await ctx.api(alice, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['browser.live.control'],
    });
    assert.equal(hook.statusCode, 201, JSON.stringify(hook.json()));
    const v = await view('interact');
    const page = await open(v.url);
    await page.click('#control');
    await until(page, 'window.__live.controlling === true');
    // The same view taking control again, over and over (a hand-made client): no change, nothing told.
    const again = new WebSocket(wsUrl(v.url));
    await new Promise((resolve) => again.once('open', resolve));
    for (let i = 0; i < 5; i++) again.send(JSON.stringify({ type: 'control', action: 'take' }));
    await new Promise((r) => setTimeout(r, 300));
    again.close();
    await page.click('#control');
    const events = await eventually(async () => {
      const rows = await queryRows<{ data: Record<string, unknown> }>(
        ctx.deps.db,
        sql`SELECT data FROM webhook_events WHERE user_id = ${alice.id} AND type = 'browser.live.control' ORDER BY created_at`,
      );
      return rows.length === 2 && rows.map((r) => eventDataSchemas['browser.live.control'].parse(r.data));
    }, 5000);
    assert.deepEqual(
      events.map((e) => [e.sessionId, e.liveViewId, e.action]),
      [
        [session.id, v.id, 'take'],
        [session.id, v.id, 'release'],
      ],
    );
    const logs = await ctx.api(alice, 'GET', `${S}/${session.id}/logs?type=live`);
    assert.equal(logs.statusCode, 200);
    const texts = logs.json().data.entries.map((e: { text: string }) => e.text);
    assert.deepEqual(texts, [`live view ${v.id}: took control`, `live view ${v.id}: released control`]);
    await page.close();
  });

  it('DELETE revokes at once: the open socket closes, the URL answers 404', async () => {
    const v = await view('interact');
    const page = await open(v.url);
    const started = Date.now();
    const res = await ctx.api(alice, 'DELETE', `${S}/${session.id}/live-views/${v.id}`);
    assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
    await until(page, 'window.__live.closed !== null', 2000);
    assert.ok(Date.now() - started < 2000);
    assert.deepEqual((await liveOf(page)).closed, {
      code: 1008,
      reason: 'the live view was revoked',
    });
    assert.equal((await ctx.app.inject({ method: 'GET', url: new URL(v.url).pathname })).statusCode, 404);
    assert.equal(await upgradeStatus(wsUrl(v.url)), 404);
    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${session.id}/live-views/${v.id}`)).statusCode, 200);
    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${session.id}/live-views/nope`)).statusCode, 404);
    await page.close();
  });

  it('a forged or expired token is 401', async () => {
    const v = await view('interact', { expiresInMs: 1000 });
    const path = new URL(v.url).pathname;
    const token = path.split('/').at(-1)!;
    const [id, expiry, signature] = token.split('.');
    const later = `${id}.${(Date.now() + 3_600_000).toString(36)}.${signature}`;
    const flipped = `${id}.${expiry}.${signature!.slice(0, -1)}${signature!.endsWith('A') ? 'B' : 'A'}`;
    for (const forged of [later, flipped, 'garbage', `${token}.x`]) {
      const res = await ctx.app.inject({ method: 'GET', url: `/api/browser/live/${forged}` });
      assert.equal(res.statusCode, 401, forged);
      assert.equal(await upgradeStatus(`ws://${ctx.hostPort}/api/browser/live/${forged}/stream`), 401);
    }
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await ctx.app.inject({ method: 'GET', url: path })).statusCode, 401, 'expired');
    assert.equal(await upgradeStatus(wsUrl(v.url)), 401);
  });

  it('other users and other X-Client-Refs are 404; bad input is 400 naming the field', async () => {
    const mine = await view('view');
    assert.equal((await createView({ mode: 'view' }, bob)).statusCode, 404);
    assert.equal((await createView({ mode: 'view' }, alice, session.id, A)).statusCode, 404);
    assert.equal((await ctx.api(bob, 'DELETE', `${S}/${session.id}/live-views/${mine.id}`)).statusCode, 404);
    assert.equal(
      (await ctx.api(alice, 'DELETE', `${S}/${session.id}/live-views/${mine.id}`, undefined, A)).statusCode,
      404,
    );
    assert.equal((await createView({ mode: 'view' }, alice, 'not-a-session')).statusCode, 404);
    const refSession = (await ctx.api(alice, 'POST', S, {}, A)).json().data.session;
    const refView = await createView({ mode: 'view' }, alice, refSession.id, A);
    assert.equal(refView.statusCode, 201, 'its own ref');
    assert.equal((await createView({ mode: 'view' }, bob, refSession.id, A)).statusCode, 404);
    await ctx.api(alice, 'DELETE', `${S}/${refSession.id}`, undefined, A);
    const ended = await createView({ mode: 'view' }, alice, refSession.id, A);
    assert.equal(ended.statusCode, 400, 'an ended session');
    assert.equal(ended.json().error.code, 'INVALID_STATE');

    for (const [body, field] of [
      [{ mode: 'watch' }, 'mode'],
      [{}, 'mode'],
      [{ mode: 'view', expiresInMs: 5 }, 'expiresInMs'],
      [{ mode: 'view', expiresInMs: 'soon' }, 'expiresInMs'],
    ] as const) {
      const res = await createView(body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error.details[0].field, field);
    }
    // A viewer's malformed message is answered with the field, never applied.
    const v = await view('interact');
    const ws = new WebSocket(wsUrl(v.url));
    const errors: any[] = [];
    ws.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'error') errors.push(message);
    });
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ type: 'mouse', event: 'mousePressed', x: -5, y: 10 }));
    ws.send('not json');
    ws.send(JSON.stringify({ type: 'teleport' }));
    await eventually(async () => errors.length === 3, 5000);
    assert.deepEqual(
      errors.map((e) => e.field),
      ['x', 'message', 'type'],
    );
    ws.close();
  });

  it('a live view is refused once the API key that made it is revoked, and its open viewer closed; one of another key still opens', async () => {
    const extra = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'live', scopes: ['browser:write'] });
    assert.equal(extra.statusCode, 201, JSON.stringify(extra.json()));
    const { id: keyId, key } = extra.json().data.apiKey;
    const viaExtra = { ...alice, apiKey: key, headers: { authorization: `Bearer ${key}` } };
    const fromExtra = (await createView({ mode: 'view' }, viaExtra)).json().data as LiveView;
    const mine = await view('view');
    assert.equal((await ctx.app.inject({ method: 'GET', url: new URL(fromExtra.url).pathname })).statusCode, 200);
    assert.equal(await upgradeStatus(wsUrl(fromExtra.url)), 101);
    const viewer = new WebSocket(wsUrl(fromExtra.url));
    await new Promise((resolve) => viewer.once('open', resolve));
    const closed = new Promise<[number, string]>((resolve) =>
      viewer.once('close', (code, reason) => resolve([code, String(reason)])),
    );
    assert.equal((await ctx.api(alice, 'DELETE', `/api/api-keys/${keyId}`)).statusCode, 200);
    assert.deepEqual(await closed, [1008, 'the API key that made this live view was revoked or expired']);
    assert.equal((await ctx.app.inject({ method: 'GET', url: new URL(fromExtra.url).pathname })).statusCode, 401);
    assert.equal(await upgradeStatus(wsUrl(fromExtra.url)), 401, 'its key is revoked');
    assert.equal(await upgradeStatus(wsUrl(mine.url)), 101, "alice's own key still stands");
  });

  it("the session's end closes its viewers", async () => {
    const v = await view('view');
    const ws = new WebSocket(wsUrl(v.url));
    await new Promise((resolve) => ws.once('open', resolve));
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${session.id}`)).statusCode, 200);
    assert.equal(await closed, 1001);
    assert.equal((await ctx.app.inject({ method: 'GET', url: new URL(v.url).pathname })).statusCode, 200);
    assert.equal(await upgradeStatus(wsUrl(v.url)), 404, 'the stream of an ended session');
  });
});

describe('the screencast hub', () => {
  /** A tab whose CDP session records the commands sent and lets the test emit frames. */
  function fakeTab() {
    const cdp = Object.assign(new EventEmitter(), {
      sent: [] as string[],
      send: async (method: string) => {
        cdp.sent.push(method);
        return {};
      },
      detach: async () => {},
    });
    const page = { isClosed: () => false, context: () => ({ newCDPSession: async () => cdp }) };
    const ops = { tabs: { current: () => ({ id: 'tab_1', page }) }, touch: () => {} };
    return { cdp, ops: ops as never };
  }
  const viewerOf = (buffered = 0): Viewer & { got: string[]; closed?: number } => {
    const v: Viewer & { got: string[]; closed?: number } = {
      viewId: 'v',
      mode: 'view',
      got: [],
      send: (text) => v.got.push(text),
      bufferedAmount: buffered,
      close: (code) => {
        v.closed = code;
        hub.remove(v);
      },
    };
    return v;
  };
  let hub: LiveHub;
  const frame = (n: number) => ({ data: `jpeg${n}`, metadata: { timestamp: n }, sessionId: n });

  it('one screencast for every viewer, paced to maxFps with the newest frame kept; a viewer that does not read is dropped', async () => {
    const { cdp, ops } = fakeTab();
    hub = new LiveHub(ops, { maxFps: 10, maxBufferedBytes: 1000 });
    const [a, b, slow] = [viewerOf(), viewerOf(), viewerOf(5000)];
    hub.add(a);
    hub.add(b);
    await eventually(async () => cdp.sent.includes('Page.startScreencast'), 2000, 10);
    hub.add(slow);
    for (let n = 1; n <= 5; n++) cdp.emit('Page.screencastFrame', frame(n));
    assert.equal(cdp.sent.filter((m) => m === 'Page.startScreencast').length, 1, 'one screencast for three viewers');
    assert.equal(cdp.sent.filter((m) => m === 'Page.screencastFrameAck').length, 5, 'every frame acknowledged');
    assert.equal(slow.closed, 1013, 'the viewer that does not read is dropped');
    assert.deepEqual(
      a.got.map((t) => JSON.parse(t).data),
      ['jpeg1'],
      'the first at once, the rest wait for the next slot',
    );
    await eventually(async () => a.got.length === 2, 1000, 10);
    assert.equal(JSON.parse(a.got[1]!).data, 'jpeg5', 'only the newest of those held back');
    assert.deepEqual(b.got, a.got);
    assert.equal(hub.framesSent, 2);
    hub.remove(a);
    hub.remove(b);
    await eventually(async () => cdp.sent.includes('Page.stopScreencast'), 1000, 10);
  });

  it('a frame held back when the active tab changes does not stop the new tab’s first frame from coming', async () => {
    const first = fakeTab();
    const second = fakeTab();
    let active = {
      id: 'tab_1',
      page: { isClosed: () => false, context: () => ({ newCDPSession: async () => first.cdp }) },
    };
    const ops = { tabs: { current: () => active }, touch: () => {} };
    hub = new LiveHub(ops as never, { maxFps: 10, maxBufferedBytes: 1e9, followEveryMs: 20 });
    const v = viewerOf();
    hub.add(v);
    await eventually(async () => first.cdp.sent.includes('Page.startScreencast'), 2000, 10);
    first.cdp.emit('Page.screencastFrame', frame(1)); // sent
    first.cdp.emit('Page.screencastFrame', frame(2)); // held for its slot
    active = {
      id: 'tab_2',
      page: { isClosed: () => false, context: () => ({ newCDPSession: async () => second.cdp }) },
    };
    await eventually(async () => second.cdp.sent.includes('Page.startScreencast'), 2000, 10);
    second.cdp.emit('Page.screencastFrame', frame(3)); // a static page's one frame, within the slot
    await eventually(async () => v.got.some((t) => JSON.parse(t).data === 'jpeg3'), 2000, 10);
    hub.remove(v);
  });
});
