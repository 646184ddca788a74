import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DIRECTORY_SELECTORS, directoryLead, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';

let site: FixtureSite;
before(async () => {
  site = await startFixtureSite({ pages: 2, leadsPerPage: 4 });
});
after(async () => site?.close());

const URL_PATH = '/api/sources/preview-selectors';

describe('POST /api/sources/preview-selectors', () => {
  let ctx: TestContext;
  let alice: TestUser;
  before(async () => ({ ctx, alice } = await createTwoUserContext({ workers: false })));
  after(async () => ctx?.close());

  test('answers what each selector found on the page and the first items, as the STATIC crawl extracts them', async () => {
    const res = await ctx.call(alice, 'POST', URL_PATH, {
      url: `${site.url}directory`,
      selectors: { ...DIRECTORY_SELECTORS, missing: '.no-such-thing' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.url, `${site.url}directory`);
    assert.equal(data.status, 200);
    assert.equal(data.itemCount, 4);
    assert.equal(data.items.length, 4);
    const first = directoryLead(1, 0);
    assert.equal(data.items[0].fields.email, first.email);
    assert.equal(data.items[0].fields.company, first.company);
    assert.equal(data.items[0].fields.firstName, 'Ada1x0');
    assert.equal(data.items[0].visible, true);
    // The spam-trap style hidden email is reported as a job sees it.
    assert.equal(data.items[1].visible, false);
    const byKey = Object.fromEntries(data.selectors.map((s: { key: string }) => [s.key, s]));
    assert.deepEqual(
      data.selectors.map((s: { key: string }) => s.key),
      [...Object.keys(DIRECTORY_SELECTORS), 'missing'],
    );
    assert.deepEqual(byKey.item, { key: 'item', selector: '.person', matches: 4, samples: [] });
    assert.equal(byKey.email.matches, 4);
    assert.deepEqual(
      byKey.email.samples,
      [0, 1, 2].map((i) => directoryLead(1, i).email),
    );
    assert.equal(byKey.phone.samples[0], first.phone);
    assert.deepEqual(byKey.nextPage, {
      key: 'nextPage',
      selector: 'a.next@href',
      matches: 1,
      samples: [`${site.url}directory?page=2`],
    });
    assert.deepEqual(byKey.missing, { key: 'missing', selector: '.no-such-thing', matches: 0, samples: [] });
    assert.deepEqual(data.nextPageUrls, [`${site.url}directory?page=2`]);
  });

  test('validation: 400 naming url, selectors and selectors.<key>; unauthenticated 401', async () => {
    assertValidation(await ctx.call(alice, 'POST', URL_PATH, { selectors: { item: '.x' } }), 'url');
    assertValidation(
      await ctx.call(alice, 'POST', URL_PATH, { url: 'ftp://example.com/', selectors: { item: '.x' } }),
      'url',
    );
    assertValidation(await ctx.call(alice, 'POST', URL_PATH, { url: `${site.url}directory` }), 'selectors');
    assertValidation(
      await ctx.call(alice, 'POST', URL_PATH, { url: `${site.url}directory`, selectors: {} }),
      'selectors',
    );
    assertValidation(
      await ctx.call(alice, 'POST', URL_PATH, { url: `${site.url}directory`, selectors: { email: 'a[[' } }),
      'selectors.email',
    );
    assertValidation(
      await ctx.call(alice, 'POST', URL_PATH, {
        url: `${site.url}directory`,
        scrapeType: 'API',
        selectors: { item: '$.x' },
      }),
      'scrapeType',
    );
    assertError(
      await ctx.call(undefined, 'POST', URL_PATH, { url: site.url, selectors: { item: '.x' } }),
      401,
      'UNAUTHORIZED',
    );
  });

  test('a page that answers an error or is not HTML is a 400 naming url', async () => {
    const missing = await ctx.call(alice, 'POST', URL_PATH, { url: `${site.url}nowhere`, selectors: { item: '.x' } });
    assertValidation(missing, 'url');
    assert.match(missing.json().error.details[0].message, /HTTP 404/);
    const json = await ctx.call(alice, 'POST', URL_PATH, { url: `${site.url}api/people`, selectors: { item: '.x' } });
    assertValidation(json, 'url');
    assert.match(json.json().error.details[0].message, /application\/json, not HTML/);
  });

  test('each account gets 20 previews a minute, then 429 RATE_LIMIT_EXCEEDED; another account is not counted', async () => {
    // Counted before the body is read, so refused requests count too (as the per-IP sign-in limits do).
    const { bob } = { bob: await ctx.signup() };
    for (let i = 0; i < 20; i++) {
      const res = await ctx.call(bob, 'POST', '/api/sources/preview-selectors', { url: 'not a url' });
      assert.equal(res.statusCode, 400);
    }
    assertError(
      await ctx.call(bob, 'POST', '/api/sources/preview-selectors', { url: 'not a url' }),
      429,
      'RATE_LIMIT_EXCEEDED',
    );
    const other = await ctx.call(alice, 'POST', '/api/sources/preview-selectors', { url: 'not a url' });
    assert.equal(other.statusCode, 400);
  });
});

describe('with ALLOW_PRIVATE_NETWORK=false', () => {
  let ctx: TestContext;
  let alice: TestUser;
  before(
    async () =>
      ({ ctx, alice } = await createTwoUserContext({ workers: false, env: { ALLOW_PRIVATE_NETWORK: 'false' } })),
  );
  after(async () => ctx?.close());

  test('the SSRF guard refuses a loopback URL: 400 naming url with the guard message, nothing fetched', async () => {
    const before = site.requestsTo('/directory').length;
    const res = await ctx.call(alice, 'POST', URL_PATH, {
      url: `${site.url}directory`,
      selectors: { item: '.person' },
    });
    assertValidation(res, 'url');
    assert.match(res.json().error.details[0].message, /Refused to connect to 127\.0\.0\.1.*loopback/);
    assert.equal(site.requestsTo('/directory').length, before);
  });
});
