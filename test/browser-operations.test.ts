/**
 * The cloud browser's operations (actions, page, tabs, cookies and storage, logs) on a real Chromium reached over
 * CDP, through their route modules on a small Fastify app whose resolver knows one session. One file, past the usual
 * length, so that one Chromium serves every section.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { chromium as playwright } from 'playwright-core';
import type { AppDeps } from '../src/deps.ts';
import { browserActionRoutes } from '../src/modules/browser/actions/actions.routes.ts';
import { browserLogRoutes } from '../src/modules/browser/logs/logs.routes.ts';
import { browserPageRoutes } from '../src/modules/browser/page/page.routes.ts';
import { browserStateRoutes } from '../src/modules/browser/state/state.routes.ts';
import {
  createSessionOperations,
  type SessionOperations,
  type SessionResolver,
} from '../src/modules/browser/tabs/session-browser.ts';
import { browserTabRoutes } from '../src/modules/browser/tabs/tabs.routes.ts';
import type { TypedApp } from '../src/route-module.ts';
import { registerErrorHandling } from '../src/shared/error-handler.ts';
import { notFound } from '../src/shared/errors.ts';
import { registerJsonBodyParser } from '../src/shared/json-body.ts';
import { openApiPath, openApiTags, operationIds } from '../src/shared/openapi.ts';
import { responseSerializerCompiler } from '../src/shared/serializer.ts';
import { startBrowserPages } from './fixtures/browser-pages.ts';
import { type CdpChromium, launchCdpChromium, processesNaming } from './helpers/cdp-chromium.ts';
import { pollUntil } from './helpers/process.ts';

let chromium: CdpChromium;
let site: Awaited<ReturnType<typeof startBrowserPages>>;
let session: SessionOperations;
let app: FastifyInstance;
let activity = 0;
const routes: Array<{ method: string; url: string; scope?: string; tags?: string[]; summary?: string }> = [];

const base = '/api/browser/sessions/s1';
type Answer = { status: number; body: { success?: boolean; data?: any; error?: any }; raw: Buffer; type: string };
async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object): Promise<Answer> {
  const res = await app.inject({ method, url: `${base}${url}`, ...(payload === undefined ? {} : { payload }) });
  const type = String(res.headers['content-type'] ?? '');
  return { status: res.statusCode, body: type.includes('json') ? res.json() : {}, raw: res.rawPayload, type };
}
const act = (action: string, body: object) => call('POST', `/actions/${action}`, body);
const evaluate = async (expression: string) => (await act('evaluate', { expression })).body.data.result;
const assertFailed = (answer: Answer, field: string) => {
  assert.equal(answer.status, 422, JSON.stringify(answer.body));
  assert.equal(answer.body.error.code, 'ACTION_FAILED');
  assert.equal(answer.body.error.details[0].field, field);
};
const assertInvalid = (answer: Answer, field: string) => {
  assert.equal(answer.status, 400, JSON.stringify(answer.body));
  assert.equal(answer.body.error.code, 'VALIDATION_ERROR');
  assert.ok(
    answer.body.error.details.some((d: { field: string }) => d.field === field),
    JSON.stringify(answer.body),
  );
};

before(async () => {
  site = await startBrowserPages();
  chromium = await launchCdpChromium();
  session = createSessionOperations(chromium.browser, { onActivity: () => activity++ });
  const resolve: SessionResolver = async (_request, id) => {
    if (id !== 's1') throw notFound('Browser session');
    return session;
  };
  app = Fastify();
  app.addHook('onRoute', (route) => {
    const config = route.config as { scope?: string } | undefined;
    const schema = route.schema as { tags?: string[]; summary?: string } | undefined;
    for (const method of [route.method].flat())
      if (method !== 'HEAD') routes.push({ method, url: route.url, scope: config?.scope, ...schema });
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler);
  registerErrorHandling(app);
  registerJsonBodyParser(app);
  const typed = app as unknown as TypedApp;
  for (const routes of [browserActionRoutes, browserPageRoutes, browserTabRoutes, browserStateRoutes, browserLogRoutes])
    routes(resolve)(typed, {} as AppDeps);
  await app.listen({ host: '127.0.0.1', port: 0 });
});

after(async () => {
  session?.dispose();
  await app?.close();
  await chromium?.close();
  await site?.close();
  if (chromium) assert.equal(processesNaming(chromium.userDataDir), 0, 'no Chromium left behind');
});

test('every route: under the session, a scope (GET reads, the rest writes), the tag, a summary, an operationId', () => {
  assert.equal(routes.length, 25);
  for (const route of routes) {
    const where = `${route.method} ${route.url}`;
    assert.match(route.url, /^\/api\/browser\/sessions\/:id\//, where);
    assert.equal(route.scope, route.method === 'GET' ? 'browser:read' : 'browser:write', where);
    assert.deepEqual(route.tags, ['Cloud Browser'], where);
    assert.ok(route.summary, where);
    assert.ok(operationIds[`${route.method} ${openApiPath(route.url)}`], `operationId of ${where}`);
  }
  assert.ok(openApiTags.some((tag) => tag.name === 'Cloud Browser'));
});

describe('actions', () => {
  test('navigate: a URL, back, forward, reload; bad input 400, a dead address 422', async () => {
    const first = await act('navigate', { url: `${site.url}/form` });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.data.url, `${site.url}/form`);
    assert.deepEqual(first.body.data.result, { status: 200, title: 'Form' });
    assert.match(first.body.data.tabId, /^tab_\d+$/);
    await act('navigate', { url: `${site.url}/list` });
    assert.equal((await act('navigate', { action: 'back' })).body.data.url, `${site.url}/form`);
    assert.equal((await act('navigate', { action: 'forward' })).body.data.url, `${site.url}/list`);
    assert.equal((await act('navigate', { action: 'reload', waitUntil: 'domcontentloaded' })).status, 200);
    assertInvalid(await act('navigate', { url: 'file:///etc/passwd' }), 'url');
    assertInvalid(await act('navigate', {}), 'url');
    assertInvalid(await act('navigate', { url: `${site.url}/`, timeoutMs: -1 }), 'timeoutMs');
    assertFailed(await act('navigate', { url: 'http://127.0.0.1:9/', timeoutMs: 5000 }), 'navigate');
    assert.ok(activity > 0, 'every operation counts as activity');
    assert.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/api/browser/sessions/s2/actions/navigate',
          payload: { url: site.url },
        })
      ).statusCode,
      404,
    );
  });

  test('type, click and press; a missing selector is 422 within its timeout', async () => {
    await act('navigate', { url: `${site.url}/form` });
    assert.equal((await act('type', { selector: '#name', text: 'Ada', delay: 5 })).status, 200);
    assert.equal((await act('click', { selector: '#submit' })).status, 200);
    assert.equal(await evaluate("document.getElementById('out').textContent"), 'sent Ada');
    await act('type', { selector: '#name', text: 'Grace', clear: true });
    assert.equal(await evaluate("document.getElementById('name').value"), 'Grace');
    assert.equal((await act('press', { selector: '#name', key: 'Control+A' })).status, 200);
    await act('press', { key: 'Backspace' });
    assert.equal(await evaluate("document.getElementById('name').value"), '');
    const keys = await evaluate('window.keys');
    assert.deepEqual([keys.at(-2).toLowerCase(), keys.at(-1)], ['a', 'Backspace']);
    const started = Date.now();
    assertFailed(await act('click', { selector: '#nowhere', timeoutMs: 300 }), 'click');
    assert.ok(Date.now() - started < 5000);
    assertInvalid(await act('click', { x: 5 }), 'selector');
    assertInvalid(await act('type', { text: 'x' }), 'selector');
    assertFailed(await act('type', { selector: '#nowhere', text: 'x', timeoutMs: 200 }), 'type');
    assertFailed(await act('press', { key: 'NoSuchKey' }), 'press');
  });

  test('click at a point and drag between points and elements', async () => {
    await act('navigate', { url: `${site.url}/drag` });
    await act('click', { x: 30, y: 30, button: 'left' });
    await act('drag', { from: { selector: '#a' }, to: { x: 300, y: 300 } });
    const events = await evaluate('window.events');
    assert.deepEqual(events.slice(-2), [
      ['mousedown', 35, 35],
      ['mouseup', 300, 300],
    ]);
    await act('drag', { from: { selector: '#a' }, to: { selector: '#b' } });
    assert.deepEqual((await evaluate('window.events')).at(-1), ['mouseup', 225, 225]);
    assertFailed(await act('drag', { from: { selector: '#none' }, to: { x: 1, y: 1 }, timeoutMs: 200 }), 'drag');
  });

  test('scroll to the bottom loads more of an infinite feed; scroll by pixels', async () => {
    await act('navigate', { url: `${site.url}/scroll` });
    assert.equal(await evaluate("document.querySelectorAll('.item').length"), 20);
    const bottom = await act('scroll', { to: 'bottom' });
    assert.ok(bottom.body.data.result.scrollY > 1000, JSON.stringify(bottom.body));
    assert.equal((await act('wait', { selector: '.item >> nth=39', state: 'attached' })).status, 200);
    const by = await act('scroll', { to: 'top' });
    assert.equal(by.body.data.result.scrollY, 0);
    assert.equal((await act('scroll', { y: 250 })).body.data.result.scrollY, 250);
    assertInvalid(await act('scroll', {}), 'y');
    assertFailed(await act('scroll', { selector: '#none', y: 5, timeoutMs: 200 }), 'scroll');
  });

  test('wait for a selector, a URL, a load state or a time; a timeout is 422', async () => {
    await act('navigate', { url: `${site.url}/form` });
    assert.equal((await act('wait', { selector: '#late', state: 'visible', timeoutMs: 5000 })).status, 200);
    assert.equal((await act('wait', { url: '**/form' })).status, 200);
    assert.equal((await act('wait', { loadState: 'load' })).status, 200);
    const started = Date.now();
    await act('wait', { ms: 150 });
    assert.ok(Date.now() - started >= 140);
    assertFailed(await act('wait', { selector: '#never', timeoutMs: 200 }), 'wait');
    assertFailed(await act('wait', { url: '**/elsewhere', timeoutMs: 200 }), 'wait');
    assertInvalid(await act('wait', { ms: 10, url: '**' }), 'selector');
  });

  test('evaluate: expressions, function bodies with arguments, errors and the size cap', async () => {
    assert.equal(await evaluate('document.title'), 'Form');
    assert.equal(await evaluate('Promise.resolve(6 * 7);'), 42);
    assert.equal(await evaluate('undefined'), null);
    const fn = await act('evaluate', {
      function: 'const [a, b] = args; return { sum: a.n + b, tag: a.t };',
      args: [{ n: 1, t: 'x' }, 2],
    });
    assert.deepEqual(fn.body.data.result, { sum: 3, tag: 'x' });
    const thrown = await act('evaluate', { expression: "(() => { throw new Error('nope') })()" });
    assertFailed(thrown, 'evaluate');
    assert.match(thrown.body.error.message, /nope/);
    assertFailed(await act('evaluate', { expression: "'x'.repeat(2 * 1024 * 1024)" }), 'evaluate');
    assertFailed(await act('evaluate', { expression: 'new Promise(() => {})', timeoutMs: 200 }), 'evaluate');
    assertInvalid(await act('evaluate', {}), 'expression');
  });

  test('batch: steps in order with each result; the first failure stops it, bad steps are 400 before any runs', async () => {
    const ok = await act('batch', {
      steps: [
        { action: 'navigate', url: `${site.url}/form` },
        { action: 'type', selector: '#name', text: 'Linus' },
        { action: 'click', selector: '#submit' },
        { action: 'evaluate', expression: "document.getElementById('out').textContent" },
      ],
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.deepEqual(
      ok.body.data.steps.map((s: { action: string }) => s.action),
      ['navigate', 'type', 'click', 'evaluate'],
    );
    assert.equal(ok.body.data.steps[3].result, 'sent Linus');
    const failed = await act('batch', {
      steps: [
        { action: 'evaluate', expression: 'window.marker = 1' },
        { action: 'click', selector: '#missing', timeoutMs: 200 },
        { action: 'evaluate', expression: 'window.marker = 2' },
      ],
    });
    assertFailed(failed, 'steps.1.click');
    assert.equal(await evaluate('window.marker'), 1, 'the step after the failure did not run');
    assertInvalid(
      await act('batch', {
        steps: [
          { action: 'evaluate', expression: '1' },
          { action: 'navigate', url: 'ftp://x' },
        ],
      }),
      'steps.1.url',
    );
    assertInvalid(await act('batch', { steps: [{ action: 'fly' }] }), 'steps.0.action');
    assertInvalid(await act('batch', { steps: [] }), 'steps');
  });
});

const pngSize = (buffer: Buffer) => ({ width: buffer.readUInt32BE(16), height: buffer.readUInt32BE(20) });

describe('page', () => {
  test('screenshots: PNG and JPEG, full page, clip, element', async () => {
    await act('navigate', { url: `${site.url}/long` });
    const png = await call('GET', '/page/screenshot');
    assert.equal(png.status, 200);
    assert.equal(png.type, 'image/png');
    assert.deepEqual([...png.raw.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const viewport = pngSize(png.raw);
    const full = pngSize((await call('GET', '/page/screenshot?fullPage=true')).raw);
    assert.ok(full.height >= 4000 && full.height > viewport.height, `${full.height} > ${viewport.height}`);
    assert.deepEqual(pngSize((await call('GET', '/page/screenshot?clip=0,0,120,80')).raw), { width: 120, height: 80 });
    const jpeg = await call('GET', '/page/screenshot?format=jpeg&quality=40');
    assert.equal(jpeg.type, 'image/jpeg');
    assert.deepEqual([...jpeg.raw.subarray(0, 3)], [0xff, 0xd8, 0xff]);
    await act('navigate', { url: `${site.url}/drag` });
    assert.deepEqual(pngSize((await call('GET', '/page/screenshot?selector=%23b')).raw), { width: 50, height: 50 });
    assertInvalid(await call('GET', '/page/screenshot?format=gif'), 'format');
    assertInvalid(await call('GET', '/page/screenshot?quality=50'), 'quality');
    assertFailed(await call('GET', '/page/screenshot?selector=%23none&timeoutMs=300'), 'screenshot');
  });

  test('pdf, content as HTML, text and markdown, scrape with the sources extractor, accessibility', async () => {
    await act('navigate', { url: `${site.url}/list` });
    const pdf = await call('POST', '/page/pdf', { format: 'A4', landscape: true, printBackground: true });
    assert.equal(pdf.type, 'application/pdf');
    assert.equal(pdf.raw.subarray(0, 5).toString(), '%PDF-');
    assert.ok(pdf.raw.length > 1000);
    assertInvalid(await call('POST', '/page/pdf', { format: 'B9' }), 'format');
    const html = await call('GET', '/page/content');
    assert.equal(html.body.data.format, 'html');
    assert.match(html.body.data.content, /<li class="p">/);
    const text = await call('GET', '/page/content?format=text');
    assert.match(text.body.data.content, /Ada Lovelace/);
    assert.doesNotMatch(text.body.data.content, /</);
    const markdown = await call('GET', '/page/content?format=markdown');
    assert.match(markdown.body.data.content, /# Team/);
    assert.match(markdown.body.data.content, /\*\*bold\*\*/);
    assert.equal(markdown.body.data.title, 'People');
    const scraped = await call('POST', '/page/scrape', {
      selectors: { item: 'li.p', person: '.n', email: 'a.m@href' },
    });
    assert.equal(scraped.status, 200, JSON.stringify(scraped.body));
    assert.deepEqual(
      scraped.body.data.items.map((i: { fields: Record<string, string> }) => i.fields),
      [
        { person: 'Ada Lovelace', email: 'ada@example.org' },
        { person: 'Alan Turing', email: 'alan@example.org' },
      ],
    );
    const xpath = await call('POST', '/page/scrape', { selectors: { heading: '//h1' } });
    assert.equal(xpath.body.data.items[0].fields.heading, 'Team');
    assertInvalid(await call('POST', '/page/scrape', { selectors: { heading: '//h1[' } }), 'selectors.heading');
    const tree = await call('GET', '/page/accessibility');
    assert.match(tree.body.data.snapshot, /heading "Team"/);
    assert.match(tree.body.data.snapshot, /listitem/);
  });
});

describe('tabs', () => {
  test('popups become tabs with stable ids; open, activate, close', async () => {
    await act('navigate', { url: `${site.url}/popup` });
    const before = (await call('GET', '/tabs')).body.data.tabs;
    const opener = before.find((t: { active: boolean }) => t.active);
    assert.equal(opener.url, `${site.url}/popup`);
    await act('click', { selector: '#open' });
    await act('click', { selector: '#win' });
    let tabs: Array<{ id: string; url: string; active: boolean }> = [];
    for (let i = 0; i < 50 && tabs.length < before.length + 2; i++) {
      tabs = (await call('GET', '/tabs')).body.data.tabs;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(tabs.length, before.length + 2, JSON.stringify(tabs));
    const list = tabs.find((t) => t.url.endsWith('/list')) as { id: string };
    assert.ok(tabs.some((t) => t.url.endsWith('/form')));
    assert.equal(tabs.find((t) => t.active)?.id, opener.id, 'a popup does not take the active tab');
    const again = (await call('GET', '/tabs')).body.data.tabs.map((t: { id: string }) => t.id);
    assert.deepEqual(
      again,
      tabs.map((t) => t.id),
      'ids are stable',
    );
    const activated = await call('POST', `/tabs/${list.id}/activate`);
    assert.equal(activated.body.data.active, true);
    assert.equal(await evaluate("document.querySelector('h1').textContent"), 'Team', 'actions run on the active tab');
    const opened = await call('POST', '/tabs', { url: `${site.url}/form` });
    assert.equal(opened.status, 201);
    assert.equal(opened.body.data.active, true);
    assert.equal(opened.body.data.title, 'Form');
    assert.equal((await call('DELETE', `/tabs/${opened.body.data.id}`)).status, 200);
    assert.equal((await call('DELETE', `/tabs/${opened.body.data.id}`)).status, 404);
    assert.equal((await call('POST', '/tabs/tab_999/activate')).status, 404);
    assertInvalid(await call('POST', '/tabs', { url: 'javascript:alert(1)' }), 'url');
    const other = await playwright.connectOverCDP(chromium.wsEndpoint);
    const foreign = await other.contexts()[0].newPage();
    await foreign.goto(`${site.url}/drag`);
    // The service learns of another client's page (and its URL) from Chromium's target events, moments later: under
    // load the list asked at once could still miss it.
    const isDrag = (t: { url: string }) => t.url === `${site.url}/drag`;
    const seen = await pollUntil(
      async () => (await call('GET', '/tabs')).body.data.tabs as Array<{ url: string }>,
      (tabs) => tabs.some(isDrag),
      5_000,
    ).catch(() => []);
    assert.ok(seen.some(isDrag), 'a page another CDP client opened');
    await foreign.close();
    await other.close();
    const now = (await call('GET', '/tabs')).body.data.tabs;
    assert.ok(!now.some((t: { id: string }) => t.id === opened.body.data.id));
    assert.equal(now.filter((t: { active: boolean }) => t.active).length, 1);
  });
});

describe('cookies and storage', () => {
  test('cookies: set, read filtered by url and name, delete by filter', async () => {
    await act('navigate', { url: `${site.url}/form` });
    const set = await call('POST', '/cookies', {
      cookies: [
        { name: 'a', value: '1', url: site.url },
        { name: 'b', value: '2', domain: 'example.org', path: '/', httpOnly: true },
      ],
    });
    assert.deepEqual(set.body.data, { set: 2 });
    const mine = (await call('GET', `/cookies?url=${encodeURIComponent(site.url)}`)).body.data.cookies;
    assert.deepEqual(mine.map((c: { name: string }) => c.name).sort(), ['a', 'visited']);
    const b = (await call('GET', '/cookies?name=b')).body.data.cookies;
    assert.equal(b.length, 1);
    assert.equal(b[0].httpOnly, true);
    assert.equal((await call('DELETE', '/cookies?name=a')).body.data.deleted, 1);
    assert.deepEqual((await call('GET', '/cookies')).body.data.cookies.map((c: { name: string }) => c.name).sort(), [
      'b',
      'visited',
    ]);
    assertInvalid(await call('POST', '/cookies', { cookies: [{ name: 'x', value: 'y' }] }), 'cookies.0.url');
    await call('DELETE', '/cookies');
    assert.deepEqual((await call('GET', '/cookies')).body.data.cookies, []);
  });

  test('storage: local and session storage per origin, on a tab or a temporary page', async () => {
    await act('navigate', { url: `${site.url}/form` });
    const put = await call('PUT', '/storage', {
      origin: site.url,
      localStorage: { theme: 'dark' },
      sessionStorage: { step: '2' },
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.data, {
      origin: site.url,
      localStorage: { theme: 'dark' },
      sessionStorage: { step: '2' },
    });
    assert.equal(await evaluate("localStorage.getItem('theme')"), 'dark');
    const other = 'http://localhost:9';
    const tabsBefore = (await call('GET', '/tabs')).body.data.tabs.length;
    await call('PUT', '/storage', { origin: other, localStorage: { k: 'v' } });
    const read = await call('GET', `/storage?origin=${encodeURIComponent(`${other}/any/path`)}`);
    assert.deepEqual(read.body.data, { origin: other, localStorage: { k: 'v' }, sessionStorage: {} });
    assert.equal((await call('GET', '/tabs')).body.data.tabs.length, tabsBefore, 'the temporary page is gone');
    const cleared = await call('PUT', '/storage', { origin: site.url, localStorage: { only: 'this' }, clear: true });
    assert.deepEqual(cleared.body.data.localStorage, { only: 'this' });
    assertInvalid(await call('GET', '/storage'), 'origin');
  });
});

describe('logs', () => {
  test('console messages, page errors and requests, filtered, and the SSE stream', async () => {
    const { port } = app.server.address() as AddressInfo;
    const controller = new AbortController();
    const stream = await fetch(`http://127.0.0.1:${port}${base}/logs/stream?type=pageerror`, {
      signal: controller.signal,
    });
    assert.equal(stream.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    await act('navigate', { url: `${site.url}/console` });
    const reader = stream.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    let text = '';
    while (!text.includes('boom')) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    assert.match(text, /event: log\ndata: \{"seq":\d+,[^\n]*"type":"pageerror"/);
    assert.doesNotMatch(text, /hello log/);

    let entries: Array<Record<string, any>> = [];
    for (let i = 0; i < 50 && !entries.some((e) => e.status === 404); i++) {
      entries = (await call('GET', '/logs')).body.data.entries;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(entries.some((e) => e.type === 'console' && e.level === 'log' && e.text === 'hello log'));
    assert.ok(entries.some((e) => e.type === 'console' && e.level === 'error' && e.text === 'bad thing'));
    assert.ok(entries.some((e) => e.type === 'pageerror' && e.text.includes('boom')));
    const missing = entries.find((e) => e.type === 'network' && e.url === `${site.url}/missing`);
    assert.equal(missing?.status, 404);
    assert.equal(missing?.method, 'GET');
    assert.equal(typeof missing?.durationMs, 'number');
    assert.ok(
      entries.some((e) => e.type === 'network' && e.failure && e.url === 'http://127.0.0.1:9/'),
      'failed request',
    );
    const consoleOnly = (await call('GET', '/logs?type=console')).body.data.entries;
    assert.ok(consoleOnly.length >= 2 && consoleOnly.every((e: { type: string }) => e.type === 'console'));
    const last = entries.at(-1)?.seq as number;
    assert.deepEqual((await call('GET', `/logs?after=${last}`)).body.data.entries, []);
    assert.deepEqual((await call('GET', '/logs?since=2999-01-01T00:00:00Z')).body.data.entries, []);
    assertInvalid(await call('GET', '/logs?type=dom'), 'type');
  });

  test('the buffer is bounded: the oldest entries go and are counted', async () => {
    const small = createSessionOperations(chromium.browser, { logCapacity: 5 });
    try {
      const page = await small.activePage();
      await page.goto(`${site.url}/chatty`);
      await page.evaluate('1');
      const entries = small.logs.entries({ types: ['console'] });
      assert.equal(small.logs.entries().length, 5);
      assert.ok(small.logs.dropped >= 26, String(small.logs.dropped));
      assert.equal(entries.at(-1)?.text, 'line 29');
    } finally {
      small.dispose();
    }
  });
});
