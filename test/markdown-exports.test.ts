/**
 * Markdown exports over HTTP (docs/scraping.md "Markdown exports"): a loopback documentation site whose expected markdown
 * per page is the oracle; link rules (depth, page limit, include/exclude, sitemap, robots.txt, same site);
 * downloads; retry of failed pages; credits; the webhook event; cancellation; isolation; bad input; the SSRF
 * guard; DYNAMIC on real Chromium.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { strFromU8, unzipSync } from 'fflate';
import { queryRows } from '../src/db/client.ts';
import { createMarkdownExportRecovery, createMarkdownExportService } from '../src/modules/markdown-exports/index.ts';
import { ConvertError, createConvertPool } from '../src/modules/markdown-exports/markdown-convert-pool.ts';
import { eventDataSchemas } from '../src/shared/event-payloads.ts';
import { expectedMarkdown, type MarkdownSite, startMarkdownSite } from './fixtures/markdown-site.ts';
import { createTestContext, createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let site: MarkdownSite;

before(async () => {
  site = await startMarkdownSite({ slowMs: 300 });
  ({ ctx, alice, bob } = await createTwoUserContext({ env: { SCRAPER_MAX_RETRIES: '0' } }));
});
after(async () => {
  await ctx?.close();
  await site?.close();
});

interface ExportView {
  id: string;
  proxyProfileId: string | null;
  status: string;
  pagesDone: number;
  pagesFailed: number;
  error: string | null;
  progress: number;
}
interface PageView {
  url: string;
  fetchedAt: string;
  status: string;
  title: string | null;
  markdown: string | null;
  depth: number;
  error: string | null;
}

async function create(user: TestUser, body: Record<string, unknown>, c = ctx): Promise<ExportView> {
  const res = await c.call(user, 'POST', '/api/markdown-exports', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.export;
}

async function finished(user: TestUser, id: string, c = ctx, timeoutMs = 30_000): Promise<ExportView> {
  return eventually(async () => {
    const res = await c.call(user, 'GET', `/api/markdown-exports/${id}`);
    const e = res.json().data.export as ExportView;
    return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(e.status) ? e : undefined;
  }, timeoutMs);
}

async function pagesOf(user: TestUser, id: string): Promise<PageView[]> {
  const all: PageView[] = [];
  let cursor: string | null = null;
  do {
    const res = await ctx.call(
      user,
      'GET',
      `/api/markdown-exports/${id}/pages?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
    );
    assert.equal(res.statusCode, 200, res.body);
    all.push(...res.json().data.pages);
    cursor = res.json().data.nextCursor;
  } while (cursor);
  return all;
}

const paths = (pages: PageView[]) => pages.map((p) => `${new URL(p.url).pathname}${new URL(p.url).search}`).sort();

async function exportOf(body: Record<string, unknown>) {
  const created = await create(alice, body);
  const done = await finished(alice, created.id);
  return { done, pages: await pagesOf(alice, created.id) };
}

describe('a site exported as markdown', () => {
  let siteExport: { done: ExportView; pages: PageView[] };
  before(async () => {
    const hook = await ctx.call(alice, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['markdown_export.completed'],
    });
    assert.equal(hook.statusCode, 201, hook.body);
    siteExport = await exportOf({ startUrl: `${site.origin}/`, maxDepth: 2, sitemap: true });
  });

  test('follows links to maxDepth, adds the sitemap, skips robots.txt-disallowed and off-site pages', () => {
    const { done, pages } = siteExport;
    assert.equal(done.status, 'COMPLETED', done.error ?? '');
    assert.deepEqual(paths(pages), [
      '/',
      '/blog/post-1',
      '/blog/post-1?ref=docs', // depth 2: home → install → the announcement (another URL)
      '/docs/api',
      '/docs/deep/1', // depth 2: home → api → deep/1
      '/docs/flaky',
      '/docs/install',
      '/docs/orphan', // only in /sitemap.xml
    ]);
    assert.ok(!site.requests.includes('/secret/page'), 'robots.txt disallows /secret');
    assert.equal(done.pagesDone, 8);
    assert.equal(done.progress, 100);
    assert.equal(pages.find((p) => p.url.endsWith('/docs/deep/1'))?.depth, 2);
  });

  test('each page is the expected markdown: tables, code with its language, absolute links, images as links', () => {
    for (const path of ['/docs/install', '/docs/api'] as const) {
      const page = siteExport.pages.find((p) => p.url === `${site.origin}${path}`)!;
      assert.equal(page.status, 'OK');
      assert.equal(page.markdown, expectedMarkdown(site.origin, path), path);
    }
    const install = siteExport.pages.find((p) => p.url.endsWith('/docs/install'))!;
    assert.equal(install.title, 'Install guide');
    // onlyMainContent: navigation and the footer are gone.
    assert.doesNotMatch(install.markdown!, /hello@docs\.test|\[Home\]/);
  });

  test('each page stored is charged markdown_pages; the completed event carries the counts', async () => {
    const [ledger] = await queryRows<{ units: number }>(
      ctx.deps.db,
      sql`SELECT coalesce(sum(units), 0)::int AS units FROM credit_transactions
          WHERE user_id = ${alice.id} AND feature = 'markdown_pages' AND reason = ${`markdown export ${siteExport.done.id}`}`,
    );
    assert.equal(ledger!.units, 8);
    const events = await eventually(async () => {
      const rows = await queryRows<{ data: unknown }>(
        ctx.deps.db,
        sql`SELECT data FROM webhook_events WHERE user_id = ${alice.id} AND type = 'markdown_export.completed'`,
      );
      const parsed = rows.map((r) => eventDataSchemas['markdown_export.completed'].parse(r.data));
      return parsed.find((e) => e.exportId === siteExport.done.id);
    });
    assert.equal(events.pagesDone, 8);
    assert.equal(events.pagesFailed, 0);
    assert.equal(events.startUrl, `${site.origin}/`);
  });

  test('the ZIP holds one .md per page with YAML front matter', async () => {
    const res = await ctx.call(alice, 'GET', `/api/markdown-exports/${siteExport.done.id}/download`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/zip');
    const files = unzipSync(new Uint8Array(res.rawPayload));
    const host = new URL(site.origin).host.replace(':', '_');
    assert.equal(Object.keys(files).length, 8);
    assert.ok(files[`${host}/blog/post-1_ref_docs.md`], Object.keys(files).join());
    const install = strFromU8(files[`${host}/docs/install.md`]!);
    const page = siteExport.pages.find((p) => p.url.endsWith('/docs/install'))!;
    assert.equal(
      install,
      `---\nurl: "${site.origin}/docs/install"\ntitle: "Install guide"\nfetchedAt: "${page.fetchedAt}"\ndepth: 1\n---\n\n` +
        `${expectedMarkdown(site.origin, '/docs/install')}\n`,
    );
    assert.ok(files[`${host}/index.md`], Object.keys(files).join());
  });

  test('format=single is one llms-full.txt-style file of every page', async () => {
    const res = await ctx.call(alice, 'GET', `/api/markdown-exports/${siteExport.done.id}/download?format=single`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/markdown/);
    const sections = res.body.split('\n\n---\n\n');
    assert.equal(sections.length, 8);
    const install = sections.find((s) => s.startsWith('# Install guide\n'))!;
    assert.equal(
      install,
      `# Install guide\n\nSource: ${site.origin}/docs/install\n\n${expectedMarkdown(site.origin, '/docs/install')}\n`,
    );
  });

  test('the events stream of a finished export sends its state and ends', async () => {
    const res = await ctx.call(alice, 'GET', `/api/markdown-exports/${siteExport.done.id}/events`);
    assert.equal(res.statusCode, 200);
    assert.match(
      res.body,
      /event: markdown_export\ndata: \{"id":"[^"]+","status":"COMPLETED","progress":100,"pagesDone":8,/,
    );
  });
});

describe('link rules', () => {
  test('onlyMainContent off keeps the navigation and the footer with its contacts', async () => {
    const { pages } = await exportOf({ startUrl: `${site.origin}/docs/install`, maxDepth: 0, onlyMainContent: false });
    assert.equal(pages.length, 1);
    const md = pages[0]!.markdown!;
    assert.match(md, /Contact us: hello@docs\.test, \+1 555 0100$/);
    assert.match(md, new RegExp(`^\\[Home\\]\\(${site.origin}/\\)`));
    assert.ok(md.includes('```python\nimport tool'), md);
  });

  test('include and exclude path globs; an exclude wins', async () => {
    const { pages } = await exportOf({
      startUrl: `${site.origin}/`,
      maxDepth: 5,
      includePaths: ['/docs/**'],
      excludePaths: ['/docs/deep/*', '/docs/flaky'],
    });
    assert.deepEqual(paths(pages), ['/', '/docs/api', '/docs/install']);
  });

  test('maxPages caps the export; maxDepth counts hops', async () => {
    const deep = { startUrl: `${site.origin}/docs/deep/1`, includePaths: ['/docs/deep/*'] };
    const capped = await exportOf({ ...deep, maxDepth: 10, maxPages: 3 });
    assert.deepEqual(paths(capped.pages), ['/docs/deep/1', '/docs/deep/2', '/docs/deep/3']);
    const shallow = await exportOf({ ...deep, maxDepth: 1 });
    assert.deepEqual(paths(shallow.pages), ['/docs/deep/1', '/docs/deep/2']);
  });

  test('sameSiteOnly false follows links to another host', async () => {
    const { pages } = await exportOf({
      startUrl: `${site.origin}/`,
      maxDepth: 1,
      sameSiteOnly: false,
      includePaths: ['/', '/docs/offsite'],
    });
    assert.deepEqual(pages.map((p) => p.url).sort(), [`${site.offsiteOrigin}/docs/offsite`, `${site.origin}/`].sort());
  });
});

describe('retry of failed pages', () => {
  test('a page that fails, then answers, is fetched again alone and replaces its failure', async () => {
    site.failing.add('/docs/flaky');
    const first = await exportOf({ startUrl: `${site.origin}/`, maxDepth: 1, includePaths: ['/', '/docs/**'] });
    assert.equal(first.done.status, 'COMPLETED');
    assert.equal(first.done.pagesFailed, 1);
    const failed = first.pages.find((p) => p.status === 'FAILED')!;
    assert.equal(failed.url, `${site.origin}/docs/flaky`);
    assert.match(failed.error!, /500/);
    assert.equal(failed.markdown, null);

    site.failing.delete('/docs/flaky');
    const before = site.requests.length;
    const res = await ctx.call(alice, 'POST', `/api/markdown-exports/${first.done.id}/retry`);
    assert.equal(res.statusCode, 200, res.body);
    const done = await finished(alice, first.done.id);
    assert.equal(done.status, 'COMPLETED');
    assert.equal(done.pagesFailed, 0);
    assert.equal(done.pagesDone, first.done.pagesDone + 1);
    const fetched = site.requests.slice(before).filter((p) => p !== '/robots.txt');
    assert.deepEqual(fetched, ['/docs/flaky'], 'only the failed page is fetched again');
    const flaky = (await pagesOf(alice, first.done.id)).find((p) => p.url.endsWith('/docs/flaky'))!;
    assert.equal(flaky.status, 'OK');
    assert.match(flaky.markdown!, /^# Page \/docs\/flaky/);

    // Nothing failed any more: 400.
    assertError(await ctx.call(alice, 'POST', `/api/markdown-exports/${first.done.id}/retry`), 400, 'INVALID_STATUS');
  });
});

describe('cancellation and deletion', () => {
  test('DELETE of a running export cancels it: no page is fetched after, the pages so far are kept', async () => {
    const created = await create(alice, { startUrl: `${site.origin}/slow/1`, maxDepth: 10, maxPages: 200 });
    await eventually(async () => {
      const pages = await pagesOf(alice, created.id);
      return pages.length >= 2;
    });
    const res = await ctx.call(alice, 'DELETE', `/api/markdown-exports/${created.id}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().message, 'Export cancelled');
    const view = (await ctx.call(alice, 'GET', `/api/markdown-exports/${created.id}`)).json().data.export;
    assert.equal(view.status, 'CANCELLED');
    await new Promise((r) => setTimeout(r, 1_500));
    const settled = site.requests.filter((p) => p.startsWith('/slow/')).length;
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(site.requests.filter((p) => p.startsWith('/slow/')).length, settled, 'requests stopped');
    assert.ok(settled < 200);
    // A finished export is deleted with its pages.
    const del = await ctx.call(alice, 'DELETE', `/api/markdown-exports/${created.id}`);
    assert.equal(del.json().message, 'Export deleted');
    assertError(await ctx.call(alice, 'GET', `/api/markdown-exports/${created.id}`), 404, 'NOT_FOUND');
    const [left] = await queryRows<{ n: number }>(
      ctx.deps.db,
      sql`SELECT count(*)::int AS n FROM markdown_export_pages WHERE export_id = ${created.id}`,
    );
    assert.equal(left!.n, 0);
  });
});

describe('crash recovery', () => {
  test('an export of a worker that stopped beating is taken over; pages stored before are not charged again', async () => {
    const created = await create(alice, { startUrl: `${site.origin}/docs/api`, maxDepth: 0 });
    await finished(alice, created.id);
    // As a worker that died mid-run leaves it: RUNNING, its heartbeat minutes old.
    await ctx.deps.db.execute(
      sql`UPDATE markdown_exports SET status = 'RUNNING', worker_id = 'gone:1:abc', attempts = 1,
          heartbeat_at = now() - interval '5 minutes' WHERE id = ${created.id}`,
    );
    const recovery = createMarkdownExportRecovery(ctx.deps, createMarkdownExportService(ctx.deps));
    assert.deepEqual((await recovery.sweep()).requeued, [created.id]);
    const done = await finished(alice, created.id);
    assert.equal(done.status, 'COMPLETED');
    assert.equal(done.pagesDone, 1);
    assert.equal((done as ExportView & { attempts: number }).attempts, 2);
    const [ledger] = await queryRows<{ units: number }>(
      ctx.deps.db,
      sql`SELECT coalesce(sum(units), 0)::int AS units FROM credit_transactions
          WHERE user_id = ${alice.id} AND reason = ${`markdown export ${created.id}`}`,
    );
    assert.equal(ledger!.units, 1);
  });
});

describe('access and input', () => {
  test("another user's export is a 404 everywhere, and not in their list", async () => {
    const mine = await create(alice, { startUrl: `${site.origin}/docs/api`, maxDepth: 0 });
    await finished(alice, mine.id);
    for (const [method, path] of [
      ['GET', ''],
      ['GET', '/pages'],
      ['GET', '/download'],
      ['GET', '/events'],
      ['POST', '/retry'],
      ['DELETE', ''],
    ] as const) {
      assertError(await ctx.call(bob, method, `/api/markdown-exports/${mine.id}${path}`), 404, 'NOT_FOUND');
    }
    const list = (await ctx.call(bob, 'GET', '/api/markdown-exports')).json().data.exports as ExportView[];
    assert.ok(!list.some((e) => e.id === mine.id));
    const own = (await ctx.call(alice, 'GET', '/api/markdown-exports')).json().data.exports as ExportView[];
    assert.ok(own.some((e) => e.id === mine.id));
    assertError(await ctx.call(alice, 'GET', '/api/markdown-exports/not-a-uuid'), 404, 'NOT_FOUND');
  });

  test('a key with markdown:read reads exports but cannot start one', async () => {
    const res = await ctx.call(alice, 'POST', '/api/api-keys', { name: 'reader', scopes: ['markdown:read'] });
    assert.equal(res.statusCode, 201, res.body);
    const reader = { ...alice, headers: { authorization: `Bearer ${res.json().data.apiKey.key}` } };
    assert.equal((await ctx.call(reader, 'GET', '/api/markdown-exports')).statusCode, 200);
    const refused = await ctx.call(reader, 'POST', '/api/markdown-exports', { startUrl: `${site.origin}/` });
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().error.code, 'INSUFFICIENT_SCOPE');
  });

  test('bad input is a 400 naming the field', async () => {
    const post = (body: Record<string, unknown>) => ctx.call(alice, 'POST', '/api/markdown-exports', body);
    assertValidation(await post({}), 'startUrl');
    assertValidation(await post({ startUrl: 'ftp://example.test/' }), 'startUrl');
    assertValidation(await post({ startUrl: `${site.origin}/`, maxPages: 0 }), 'maxPages');
    assertValidation(await post({ startUrl: `${site.origin}/`, maxDepth: -1 }), 'maxDepth');
    assertValidation(await post({ startUrl: `${site.origin}/`, includePaths: ['docs'] }), 'includePaths.0');
    assertValidation(await post({ startUrl: `${site.origin}/`, scrapeType: 'API' }), 'scrapeType');
    assertValidation(await post({ startUrl: `${site.origin}/`, proxyProfileId: 'x' }), 'proxyProfileId');
    assertValidation(await ctx.call(alice, 'GET', '/api/markdown-exports?cursor=%%%'), 'cursor');
  });

  test('a proxy profile that is not yours is a 404 naming it (test/proxy-profiles.test.ts uses real ones); an empty balance is a 402', async () => {
    const proxyProfileId = '0190a8a0-0000-7000-8000-0000000000aa';
    const unknown = await ctx.call(alice, 'POST', '/api/markdown-exports', {
      startUrl: `${site.origin}/`,
      proxyProfileId,
    });
    assertError(unknown, 404, 'NOT_FOUND');
    assert.equal(unknown.json().error.details[0].field, 'proxyProfileId');
    const poor = await ctx.signup();
    const balance = await ctx.deps.credits.balance(ctx.deps.db, poor.id);
    await ctx.deps.credits.adjust(ctx.deps.db, poor.id, -balance, 'test', 'test');
    assertError(
      await ctx.call(poor, 'POST', '/api/markdown-exports', { startUrl: `${site.origin}/` }),
      402,
      'INSUFFICIENT_CREDITS',
    );
  });
});

describe('the SSRF guard', () => {
  let guarded: TestContext;
  after(async () => guarded?.close());
  test('a private start address fails the export, naming the address; nothing is fetched', async () => {
    guarded = await createTestContext({ env: { ALLOW_PRIVATE_NETWORK: 'false' } });
    const user = await guarded.signup();
    const before = site.requests.length;
    const created = await create(user, { startUrl: `${site.origin}/docs/api` }, guarded);
    const done = await finished(user, created.id, guarded);
    assert.equal(done.status, 'FAILED');
    assert.match(done.error!, /127\.0\.0\.1/);
    assert.equal(site.requests.length, before);
  });
});

describe('the conversion threads', { timeout: 20_000 }, () => {
  const small =
    '<html><head><title>Small</title></head><body><main><article><h1>Small</h1><p>A short page.</p></article></main></body></html>';
  // Over a second of Readability and mdream.
  const slow = `<html><body><main><article>${'<p>Some words of prose, <a href="/x">a link</a>, more.</p>'.repeat(15_000)}</article></main></body></html>`;

  test('a page over the time limit fails alone: its thread is replaced, the pages queued behind it convert', async () => {
    const pool = createConvertPool(1, { timeLimitMs: 300 });
    try {
      assert.equal((await pool.convert(small, 'https://e.test/a', true)).title, 'Small');
      const started = Date.now();
      const [late, queued] = await Promise.allSettled([
        pool.convert(slow, 'https://e.test/slow', true),
        pool.convert(small, 'https://e.test/b', true),
      ]);
      assert.equal(late.status, 'rejected');
      assert.ok((late as PromiseRejectedResult).reason instanceof ConvertError);
      assert.match(String((late as PromiseRejectedResult).reason), /longer than 300 ms/);
      assert.equal(queued.status === 'fulfilled' && queued.value.title, 'Small');
      assert.ok(Date.now() - started < 5000);
      assert.equal((await pool.convert(small, 'https://e.test/c', true)).title, 'Small');
    } finally {
      await pool.close();
    }
  });

  test('an export records a page over MARKDOWN_CONVERT_TIMEOUT_MS as failed and completes', async () => {
    const limited = await createTestContext({ env: { MARKDOWN_CONVERT_TIMEOUT_MS: '1000', SCRAPER_MAX_RETRIES: '0' } });
    try {
      const user = await limited.signup();
      const created = await create(user, { startUrl: `${site.origin}/docs/long`, maxDepth: 1 }, limited);
      const done = await finished(user, created.id, limited);
      assert.equal(done.status, 'COMPLETED', done.error ?? '');
      const res = await limited.call(user, 'GET', `/api/markdown-exports/${created.id}/pages`);
      const pages = res.json().data.pages as PageView[];
      const long = pages.find((p) => p.url.endsWith('/docs/long'));
      assert.equal(long?.status, 'FAILED');
      assert.match(long?.error ?? '', /longer than 1000 ms/);
      assert.equal(pages.find((p) => p.url.endsWith('/docs/api'))?.status, 'OK');
      // The page and its nav links: /, /docs/install, /blog/post-1, /docs/api.
      assert.deepEqual([done.pagesDone, done.pagesFailed], [4, 1]);
    } finally {
      await limited.close();
    }
  });

  test('a thread that exits without an error fails the pages it held (closing the pool) instead of leaving them', async () => {
    const pool = createConvertPool(1);
    const pending = pool.convert(slow, 'https://e.test/slow', true);
    await new Promise((r) => setTimeout(r, 50));
    await pool.close();
    await assert.rejects(pending, /closed/);
    await assert.rejects(pool.convert(small, 'https://e.test/a', true), /closed/);
  });
});

const chromiumMissing = !fs.existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium');
describe('DYNAMIC', { skip: chromiumMissing ? 'Chromium is not installed' : false }, () => {
  test('a page written by a script is exported as rendered by Chromium', async () => {
    const { done, pages } = await exportOf({ startUrl: `${site.origin}/js/page`, scrapeType: 'DYNAMIC', maxDepth: 0 });
    assert.equal(done.status, 'COMPLETED', done.error ?? '');
    assert.equal(pages.length, 1);
    // Readability keeps a heading that differs from the <title> (as h2).
    assert.match(pages[0]!.markdown!, /^#+ Rendered by script\n\nThis paragraph is here/);
    // STATIC sees the empty shell.
    const shell = await exportOf({ startUrl: `${site.origin}/js/page`, maxDepth: 0 });
    assert.doesNotMatch(shell.pages[0]?.markdown ?? '', /Rendered by script/);
  });
});
