/**
 * Recording (record: true): rrweb in every page of a real session (REST actions, navigations, a page a Playwright
 * client opens over the cdpUrl, one Puppeteer opens), read after release as events and as an HTML replay page that
 * a real Chromium renders offline. Sessions not recorded, other users and other X-Client-Refs: 404.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import {
  openRecording,
  readRecording,
  recordingPath,
  sweepRecordings,
} from '../src/modules/browser/recording/recording-store.ts';
import { startRecordingPages } from './fixtures/recording-pages.ts';
import type { TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext } from './helpers/browser.ts';

let ctx: BrowserTestContext;
let site: Awaited<ReturnType<typeof startRecordingPages>>;
let alice: TestUser;
let bob: TestUser;
let recorded: { id: string; cdpUrl: string };
let plain: { id: string };
let tenant: { id: string };
const S = '/api/browser/sessions';
const A = { 'x-client-ref': 'tenant-a' };

type Event = { type: number; timestamp: number; data?: any };
const FULL_SNAPSHOT = 2;
const INCREMENTAL = 3;
const INPUT_SOURCE = 5;

const recording = async (user: TestUser, id: string, query = '', headers = {}) =>
  ctx.api(user, 'GET', `${S}/${id}/recording${query}`, undefined, headers);

before(async () => {
  site = await startRecordingPages();
  ctx = await createBrowserContext({ env: { ALLOW_PRIVATE_NETWORK: 'true' } });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
  const [rec, other, ref] = await Promise.all([
    ctx.api(alice, 'POST', S, { record: true }),
    ctx.api(alice, 'POST', S, {}),
    ctx.api(alice, 'POST', S, { record: true }, A),
  ]);
  assert.equal(rec.statusCode, 201, JSON.stringify(rec.json()));
  recorded = rec.json().data.session;
  assert.equal(rec.json().data.session.record, true);
  plain = other.json().data.session;
  tenant = ref.json().data.session;
});
after(async () => {
  await ctx?.close();
  await site?.close();
});

const act = async (action: string, body: object) => {
  const res = await ctx.api(alice, 'POST', `${S}/${recorded.id}/actions/${action}`, body);
  assert.equal(res.statusCode, 200, `${action}: ${JSON.stringify(res.json())}`);
};

describe('a recorded session', () => {
  let pages: { id: string; url: string | null; events: number }[];

  it('records REST actions, navigations and pages other CDP clients open; readable after release', async () => {
    await act('navigate', { url: `${site.url}/start` });
    await act('type', { selector: '#name', text: 'Ada' });
    await act('click', { selector: '#go' });
    await act('wait', { selector: '#out:has-text("Hello Ada")' });
    await act('navigate', { url: `${site.url}/second` });
    await act('type', { selector: '#note', text: 'second note' });
    // Typed, then at once a navigation (Enter submits the form): the keystrokes pending in the page are not lost.
    await act('type', { selector: '#search', text: 'query' });
    await act('press', { selector: '#search', key: 'Enter' });
    await act('wait', { url: '**/third?q=query' });

    const pw = await chromium.connectOverCDP(recorded.cdpUrl);
    const client = await pw.contexts()[0].newPage();
    await client.goto(`${site.url}/client`);
    await client.fill('#q', 'from playwright');
    const pp = await puppeteer.connect({ browserWSEndpoint: recorded.cdpUrl, defaultViewport: null });
    const puppet = await pp.newPage();
    await puppet.goto(`${site.url}/puppet`);
    await puppet.type('#p', 'from puppeteer');
    // The keystrokes travel page → binding → service asynchronously: wait until the last one is in.
    for (let tries = 0; ; tries++) {
      const live = (await recording(alice, recorded.id)).json().data;
      const puppetPage = live.pages.find((p: { url: string | null }) => p.url === `${site.url}/puppet`);
      const events: Event[] = puppetPage
        ? (await recording(alice, recorded.id, `?page=${puppetPage.id}`)).json().data.events
        : [];
      if (events.some((e) => e.data?.text === 'from puppeteer')) break;
      assert.ok(tries < 50, 'the last keystrokes arrive within 5 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    await pp.disconnect();
    await pw.close();

    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${recorded.id}`)).statusCode, 200);

    const res = await recording(alice, recorded.id);
    assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
    const data = res.json().data;
    assert.equal(data.truncated, false);
    pages = data.pages;
    const byUrl = (path: string) => pages.filter((p) => p.url === `${site.url}${path}`);
    // The REST tab: one recording through both navigations (a Meta event per document); the clients' tabs apart.
    assert.equal(byUrl('/start').length, 1, JSON.stringify(pages));
    assert.equal(byUrl('/client').length, 1, JSON.stringify(pages));
    assert.equal(byUrl('/puppet').length, 1, JSON.stringify(pages));
    assert.equal(data.page, pages[0].id, 'the first page by default');

    const eventsOf = async (pageId: string): Promise<Event[]> =>
      (await recording(alice, recorded.id, `?page=${pageId}`)).json().data.events;
    const rest = await eventsOf(byUrl('/start')[0].id);
    const text = JSON.stringify(rest);
    assert.ok(rest.filter((e) => e.type === FULL_SNAPSHOT).length >= 2, 'a full snapshot per document');
    assert.match(text, /Recorded Heading/);
    assert.match(text, /Second Page/, 'recording survives the navigation');
    const inputs = rest.filter((e) => e.type === INCREMENTAL && e.data.source === INPUT_SOURCE);
    assert.ok(
      inputs.some((e) => e.data.text === 'Ada'),
      'typed text as an input event',
    );
    assert.ok(inputs.some((e) => e.data.text === 'second note'));
    assert.ok(
      inputs.some((e) => e.data.text === 'query'),
      'keystrokes right before a navigation',
    );
    assert.match(text, /Third Page/);
    assert.match(text, /Hello Ada/, 'the click changed the DOM: a mutation');
    assert.match(text, /Inside the cross-origin frame/, 'the cross-origin frame is recorded too');
    for (const [path, typed] of [
      ['/client', 'from playwright'],
      ['/puppet', 'from puppeteer'],
    ]) {
      const events = await eventsOf(byUrl(path)[0].id);
      assert.ok(
        events.some((e) => e.type === FULL_SNAPSHOT),
        `${path}: a full snapshot`,
      );
      assert.ok(
        events.some((e) => e.type === INCREMENTAL && e.data.source === INPUT_SOURCE && e.data.text === typed),
        `${path}: the input`,
      );
    }
    assert.equal((await recording(alice, recorded.id, '?page=page_99')).statusCode, 404);
    const bad = await recording(alice, recorded.id, '?format=mp4');
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.details[0].field, 'format');
  });

  it('the HTML replay page is self-contained and replays in a real Chromium, offline', async () => {
    const res = await ctx.app.inject({
      method: 'GET',
      url: `${S}/${recorded.id}/recording?format=html`,
      headers: { ...alice.headers, host: ctx.hostPort },
    });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.match(String(res.headers['content-security-policy']), /connect-src 'none'/);
    const html = res.body;
    assert.doesNotMatch(html, /<script[^>]+src=/i, 'no script loaded from anywhere');
    assert.doesNotMatch(html, /<link[^>]+href=/i, 'no stylesheet loaded from anywhere');
    assert.doesNotMatch(html, /@import|url\(\s*['"]?https?:/i);
    assert.doesNotMatch(html, /sourceMappingURL=rrweb/);

    const browser = await chromium.launch({ executablePath: ctx.config.CHROMIUM_PATH });
    try {
      const page = await browser.newPage();
      await page.setExtraHTTPHeaders(alice.headers);
      const attempted: string[] = [];
      await page.route('**/*', (route) => {
        const { hostname } = new URL(route.request().url());
        if (hostname === '127.0.0.1' || hostname === 'localhost') return route.continue();
        attempted.push(route.request().url());
        return route.abort();
      });
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      await page.goto(`http://${ctx.hostPort}${S}/${recorded.id}/recording?format=html`);
      await page.waitForSelector('.rr-player');
      const replay = page.frameLocator('.replayer-wrapper iframe');
      await replay.locator('h1', { hasText: 'Recorded Heading' }).waitFor({ timeout: 10_000 });
      assert.deepEqual(attempted, [], 'nothing requested beyond loopback');
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
    }
  });

  it('a session not recorded is 404; other users and other X-Client-Refs are 404', async () => {
    const notRecorded = await recording(alice, plain.id);
    assert.equal(notRecorded.statusCode, 404);
    assert.match(notRecorded.json().error.message, /not recorded/);
    assert.equal((await recording(bob, recorded.id)).statusCode, 404);
    assert.equal((await recording(bob, recorded.id, '?format=html')).statusCode, 404);
    assert.equal((await recording(alice, recorded.id, '', A)).statusCode, 404, 'another ref');
    assert.equal((await recording(alice, tenant.id, '', A)).statusCode, 200, 'its own ref');
    assert.equal((await recording(bob, tenant.id, '', A)).statusCode, 404);
    assert.equal((await recording(alice, 'not-a-session')).statusCode, 404);
  });
});

describe('the recording file', () => {
  it('stops at its cap with a truncated marker; the sweep removes old recordings only', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-recording-'));
    try {
      const writer = openRecording(dir, 's1', 1000);
      const event = (n: number) => ({ type: 3, timestamp: n, data: { source: 5, text: 'x'.repeat(100) } });
      for (let n = 0; n < 20; n++) writer.append(n % 2 ? 'page_2' : 'page_1', [event(n)]);
      await writer.close();
      const read = await readRecording(dir, 's1');
      assert.ok(read);
      assert.equal(read.truncated, true);
      const kept = read.pages.reduce((sum, p) => sum + p.events, 0);
      assert.ok(kept > 0 && kept < 20, `${kept} events kept`);
      assert.ok(fs.statSync(recordingPath(dir, 's1')).size <= 1000 + 20);
      assert.deepEqual(
        read.events('page_1').map((e) => e.timestamp),
        [0, 2, 4, 6].slice(0, read.pages[0].events),
      );
      assert.equal(await readRecording(dir, 'nothing'), undefined);
      await openRecording(dir, 's2').close();
      const old = Date.now() - 31 * 86_400_000;
      fs.utimesSync(recordingPath(dir, 's1'), old / 1000, old / 1000);
      assert.equal(await sweepRecordings(dir, Date.now()), 1);
      assert.equal(fs.existsSync(recordingPath(dir, 's1')), false);
      assert.equal(fs.existsSync(recordingPath(dir, 's2')), true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
