/**
 * The crawl engine's DYNAMIC scrape type (PlaywrightCrawler on the system Chromium) against fixture
 * sites on loopback. Skipped, with one line saying how to install it, when Chromium is missing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  abortThatHangs,
  assertAbortStopsCrawl,
  CHROMIUM_SKIP,
  childPids,
  chromiumMissing,
  collectCrawl,
  crawlSettings,
  emailsOf,
  TEST_USER_AGENT,
} from './fixtures/crawl-run.ts';
import {
  DIRECTORY_SELECTORS,
  directoryLead,
  type FixtureSite,
  HIDDEN_CLASS_INDEX,
  HIDDEN_INLINE_INDEX,
  startFixtureSite,
  startForwardProxy,
} from './fixtures/sites.ts';
import { pollUntil } from './helpers/process.ts';

if (chromiumMissing) console.log(CHROMIUM_SKIP);
const JS_SELECTORS = { ...DIRECTORY_SELECTORS, waitFor: '.person' };
const dynamic = (overrides: Parameters<typeof crawlSettings>[0]) =>
  crawlSettings({
    scrapeType: 'DYNAMIC',
    selectors: JS_SELECTORS,
    maxConcurrency: 2,
    domainConcurrency: 2,
    ...overrides,
  });

it('a missing Chromium fails the crawl saying how to install it', async () => {
  const run = await collectCrawl(
    crawlSettings({ url: 'http://127.0.0.1:9/', scrapeType: 'DYNAMIC', chromiumPath: '/nonexistent/chromium' }),
  );
  assert.equal(run.error?.kind, 'browser_unavailable');
  assert.equal(
    run.error?.message,
    'Chromium not found at /nonexistent/chromium: install it (apt-get install chromium) or set CHROMIUM_PATH',
  );
});

describe('DYNAMIC', { skip: chromiumMissing ? CHROMIUM_SKIP : false }, () => {
  let site: FixtureSite;
  before(async () => {
    site = await startFixtureSite({ pages: 3, leadsPerPage: 4, jsDelayMs: 300 });
  });
  after(() => site.close());

  it('waits for script-rendered content, follows nextPage, and sees stylesheet-hidden emails', async () => {
    const run = await collectCrawl(dynamic({ url: `${site.origin}/js-directory` }));
    assert.deepEqual(run.result, { pagesVisited: 3, pagesFailed: 0, aborted: false });
    const expected = [1, 2, 3].flatMap((p) => [0, 1, 2, 3].map((i) => directoryLead(p, i, 'js').email)).sort();
    assert.deepEqual(emailsOf(run), expected);
    const first = run.pages.find((p) => p.url === `${site.origin}/js-directory`)!;
    assert.equal(first.items[0]!.visible, true);
    assert.equal(first.items[HIDDEN_INLINE_INDEX]!.visible, false);
    assert.equal(first.items[HIDDEN_CLASS_INDEX]!.visible, false, 'the browser applies the stylesheet');
    assert.equal(site.requestsTo('/logo.png').length, 0, 'images are not downloaded');
    for (const r of site.requests) assert.equal(r.headers['user-agent'], TEST_USER_AGENT, r.path);
  });

  it('extracts nothing from content that is not rendered yet without waitFor', async () => {
    const late = await startFixtureSite({ jsDelayMs: 2000 });
    try {
      const run = await collectCrawl(dynamic({ url: `${late.origin}/js-directory`, selectors: DIRECTORY_SELECTORS }));
      assert.equal(run.result?.pagesVisited, 1);
      assert.deepEqual(emailsOf(run), []);
    } finally {
      await late.close();
    }
  });

  it('fails a page whose waitFor selector never appears, with a clear message', async () => {
    const run = await collectCrawl(
      dynamic({
        url: `${site.origin}/js-directory?case=never`,
        selectors: { ...DIRECTORY_SELECTORS, waitFor: '.never' },
        // Long enough that a loaded machine still loads the page itself in time: the wait must be what fails.
        requestTimeoutSecs: 3,
        maxRetries: 0,
      }),
    );
    assert.equal(run.error?.kind, 'all_failed');
    assert.equal(
      run.error?.message,
      `GET ${site.origin}/js-directory?case=never failed: the waitFor selector .never did not appear within 3 s`,
    );
  });

  it('retries a 500 and fails the page after maxRetries', async () => {
    const run = await collectCrawl(
      dynamic({ url: `${site.origin}/fail`, selectors: DIRECTORY_SELECTORS, maxRetries: 1 }),
    );
    assert.equal(run.error?.kind, 'all_failed');
    assert.equal(run.error?.message, `GET ${site.origin}/fail answered 500 after 2 attempts`);
  });

  it(
    'refuses a redirect to the metadata address, naming it (public start address served through a ' + 'proxy)',
    async () => {
      // See crawl.test.ts: offline, a first hop that the guard allows needs a public address, which
      // only a proxy can serve. Chromium's redirect hop goes through the crawl's guard proxy.
      const proxy = await startForwardProxy({ routeTo: site.origin });
      try {
        const run = await collectCrawl(
          dynamic({
            url: 'http://93.184.215.14/redirect-private',
            selectors: DIRECTORY_SELECTORS,
            allowPrivateNetwork: false,
            proxyUrls: [proxy.url],
            respectRobotsTxt: false,
          }),
        );
        assert.equal(run.error?.kind, 'ssrf', run.error?.message);
        assert.match(run.error!.message, /169\.254\.169\.254/);
        assert.ok(proxy.requests.some((r) => r.target === 'http://93.184.215.14/redirect-private'));
        assert.ok(!proxy.requests.some((r) => r.target.includes('169.254.169.254')), 'the private hop never left');
      } finally {
        await proxy.close();
      }
    },
  );

  it('sends the browser through proxyUrl', async () => {
    const proxy = await startForwardProxy();
    try {
      const run = await collectCrawl(
        dynamic({ url: `${site.origin}/js-directory`, proxyUrls: [proxy.url], maxPages: 2 }),
      );
      assert.equal(run.result?.pagesVisited, 2);
      const targets = proxy.requests.map((r) => r.target);
      assert.ok(
        targets.includes(`${site.origin}/js-directory`) && targets.includes(`${site.origin}/js-directory?page=2`),
        targets.join(' '),
      );
    } finally {
      await proxy.close();
    }
  });

  it('stops within 2 s of the abort and sends nothing afterwards', async () => {
    await assertAbortStopsCrawl(
      (origin) => dynamic({ url: `${origin}/slow?ms=800&n=1`, selectors: DIRECTORY_SELECTORS, maxPages: 100 }),
      2,
    );
  });

  it('settles when the abort comes at any moment of its start, the pool not yet running included', async () => {
    const settings = dynamic({
      url: `${site.origin}/directory`,
      selectors: DIRECTORY_SELECTORS,
      respectRobotsTxt: false,
    });
    for (let turns = 0; turns < 24; turns++) {
      assert.equal(await abortThatHangs(settings, { microtasks: 0, turns }), undefined);
      // A browser still launching when its crawl stopped was left running by the pool's teardown; it goes now (one
      // moment at a time: the 2-core CI machine runs another test file beside this one).
      await pollUntil(
        async () => childPids(),
        (pids) => pids.length === 0,
        30_000,
      ).catch(() => {});
      assert.deepEqual(childPids(), [], `Chromium left by the crawl aborted after ${turns} turns`);
    }
  });
});
