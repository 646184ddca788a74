import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { extractInPage, waitForSelector } from '../../src/modules/scraping/extract-browser.ts';
import { extractFromHtml } from '../../src/modules/scraping/extract-html.ts';
import { CrawlError } from '../../src/modules/scraping/scraping.types.ts';
import { parseSelectors } from '../../src/modules/scraping/selectors.ts';
import { BOARD_SELECTORS, PEOPLE_PAGE, PEOPLE_SELECTORS } from '../fixtures/extract-pages.ts';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM)
  ? false
  : `DYNAMIC tests skipped: Chromium not found at ${CHROMIUM} (apt-get install chromium)`;

/** Content that appears 200 ms after load, as on a JS-rendered listing. */
const RENDERED_PAGE = `<!doctype html><html><body><div id="app">Loading…</div><script>
setTimeout(() => {
  document.getElementById('app').innerHTML = '<ul class="people">'
    + '<li><b>Ada Lovelace</b> <a href="mailto:ada@engine.test">mail</a></li>'
    + '<li><b>Charles Babbage</b> <a href="mailto:charles@engine.test">mail</a></li></ul>';
}, 200);
</script></body></html>`;

/** Emails hidden only by stylesheet rules: invisible to STATIC, seen by DYNAMIC's computed style. */
const STYLED_PAGE = `<!doctype html><html><head><style>
.gone { display: none } .ghost { visibility: hidden } .clear { opacity: 0 } .wrap-hidden > .inner { display: none }
</style></head><body>
<div class="p"><a class="m" href="mailto:visible@x.test">v</a></div>
<div class="p gone"><a class="m" href="mailto:gone@x.test">g</a></div>
<div class="p"><a class="m ghost" href="mailto:ghost@x.test">h</a></div>
<div class="p clear"><a class="m" href="mailto:clear@x.test">c</a></div>
<div class="p wrap-hidden"><div class="inner"><a class="m" href="mailto:nested@x.test">n</a></div></div>
<div class="p"><span aria-hidden="true"><a class="m" href="mailto:aria@x.test">a</a></span></div>
</body></html>`;

describe('extractInPage: DYNAMIC in real Chromium', { skip }, () => {
  let browser: Browser;
  let server: Server;
  let base: string;
  let page: Page;

  before(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-quic',
        '--no-first-run',
      ],
    });
    const pages: Record<string, string> = {
      '/members': PEOPLE_PAGE,
      '/rendered': RENDERED_PAGE,
      '/styled': STYLED_PAGE,
    };
    server = createServer((req, res) => {
      const body = pages[new URL(req.url ?? '/', 'http://x').pathname];
      res.writeHead(body ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
      res.end(body ?? 'not found');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    page = await browser.newPage();
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  const both = async (url: string, html: string, map: Record<string, string>, collectText = false) => {
    await page.goto(url);
    const dynamic = await extractInPage(page, parseSelectors(map, 'DYNAMIC'), page.url(), { collectText });
    const stat = extractFromHtml(html, parseSelectors(map, 'STATIC'), url, { collectText });
    return { dynamic, stat };
  };

  test('the fixture page gives the same items, next pages and text as STATIC (visibility aside)', async () => {
    const url = `${base}/members?page=1`;
    const { dynamic, stat } = await both(url, PEOPLE_PAGE, PEOPLE_SELECTORS, true);
    assert.equal(dynamic.items.length, 5);
    assert.equal(dynamic.items[0].fields.email, 'jane.doe@acme.test');
    assert.equal(dynamic.items[0].fields.profileUrl, `${base}/people/jane`);
    // The class-hidden trap is the one difference: only the browser sees the stylesheet.
    assert.equal(stat.items[3].visible, true);
    assert.equal(dynamic.items[3].visible, false);
    const expected = structuredClone(stat);
    expected.items[3].visible = false;
    assert.deepEqual(dynamic, expected);
    assert.deepEqual(dynamic.nextPageUrls, [`${base}/members?page=2`]);
    assert.deepEqual(
      dynamic.items.map((i) => i.visible),
      [true, true, false, false, true],
    );
  });

  test('XPath relative to rows and absolute inside an item: same as STATIC', async () => {
    const { dynamic, stat } = await both(`${base}/members`, PEOPLE_PAGE, BOARD_SELECTORS);
    assert.equal(dynamic.items.length, 2);
    assert.equal(dynamic.items[1].fields.orgContact, 'info@acme.test');
    assert.deepEqual(dynamic, stat);
  });

  test(
    'stylesheet-hidden emails (class rules, nested, opacity, visibility) and aria-hidden are not ' + 'visible',
    async () => {
      await page.goto(`${base}/styled`);
      const r = await extractInPage(page, parseSelectors({ item: 'div.p', email: 'a.m@href' }, 'DYNAMIC'), page.url());
      assert.deepEqual(
        r.items.map((i) => [i.fields.email, i.visible]),
        [
          ['visible@x.test', true],
          ['gone@x.test', false],
          ['ghost@x.test', false],
          ['clear@x.test', false],
          ['nested@x.test', false],
          ['aria@x.test', false],
        ],
      );
    },
  );

  test('waitForSelector waits for JS-rendered content (CSS and XPath), false when it never comes', async () => {
    await page.goto(`${base}/rendered`);
    assert.equal(await waitForSelector(page, 'ul.people li', 10_000), true);
    const r = await extractInPage(
      page,
      parseSelectors({ item: '//ul[@class="people"]/li', fullName: 'b', email: './/a/@href' }, 'DYNAMIC'),
      page.url(),
    );
    assert.deepEqual(
      r.items.map((i) => i.fields),
      [
        { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@engine.test' },
        { firstName: 'Charles', lastName: 'Babbage', email: 'charles@engine.test' },
      ],
    );
    assert.equal(
      await waitForSelector(page, parseSelectors({ waitFor: '//ul/li[2]/a/@href' }, 'DYNAMIC').waitFor!, 10_000),
      true,
    );
    assert.equal(await waitForSelector(page, '.never-there', 300), false);
  });

  test('small pages: the same values as STATIC', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      [
        `<a class="m" href="mailto:j%2Bdoe@x.test?subject=Hi">m</a><a class="t" href="TEL:+49 30 1234">t</a>`,
        { email: 'a.m@href', phone: 'a.t@href' },
      ],
      [
        `<div class="c"><p>Jane&nbsp;Doe<br>CEO</p><p>Acme &amp; Co</p><span>in</span><span>line</span></div>`,
        { card: 'div.c' },
      ],
      [
        `<ul><li>One</li><li>Two <b>bold</b></li><li data-k="v3">Three</li></ul>`,
        { second: '(//li)[2]/text()', third: '//LI[3]', attr: '//li/@data-k', count: '(count(//li))' },
      ],
      [
        `<div class="p"><b>Mary Ann de la Cruz</b><i>Maria</i></div><div class="p"><u>x</u></div>`,
        { item: 'div.p', fullName: 'b', firstName: 'i' },
      ],
      [
        `<a class="n" href="p2">2</a><span class="n">https://other.example/p3</span><a class="w" ` +
          `href="../team/ann">Ann</a>`,
        { nextPage: '.n', site: 'a.w@href' },
      ],
      [
        `<div class="p" id="a"><b>A</b></div><div class="p"><b>B</b></div>`,
        { item: '//div[@class="p"] | //div[@id="a"]', name: 'b', id: '@id' },
      ],
    ];
    for (const [html, map] of cases) {
      await page.setContent(html);
      const url = 'https://site.example/dir/page.html';
      const dynamic = await extractInPage(page, parseSelectors(map, 'DYNAMIC'), url);
      const stat = extractFromHtml(html, parseSelectors(map, 'STATIC'), url);
      assert.ok(stat.items.length > 0 || stat.nextPageUrls.length > 0, html);
      assert.deepEqual(dynamic, stat, html);
    }
  });

  test('a selector the browser rejects is CrawlError(invalid_selector) naming the key', async () => {
    await page.setContent('<p>x</p>');
    await assert.rejects(
      extractInPage(page, parseSelectors({ item: 'p', email: 'a[' }, 'DYNAMIC'), 'https://x.example/'),
      (err: unknown) =>
        err instanceof CrawlError && err.kind === 'invalid_selector' && err.message.startsWith('selectors.email: '),
    );
  });
});
