import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { leads } from '../src/db/schema/index.ts';
import {
  DIRECTORY_SELECTORS,
  directoryLead,
  type FixtureSite,
  HIDDEN_CLASS_INDEX,
  startFixtureSite,
} from './fixtures/sites.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';

// Jobs through the SSRF guard (ALLOW_PRIVATE_NETWORK off) and DYNAMIC jobs in Chromium.

let site: FixtureSite;
before(async () => {
  site = await startFixtureSite({ pages: 2, leadsPerPage: 4 });
});
after(async () => site?.close());

async function runJob(ctx: TestContext, user: TestUser, body: Record<string, unknown>) {
  const source = (
    await ctx.call(user, 'POST', '/api/sources', {
      name: 'Guarded',
      scrapeType: 'STATIC',
      selectors: DIRECTORY_SELECTORS,
      ...body,
    })
  ).json().data.source;
  await ctx.call(user, 'POST', `/api/sources/${source.id}/activate`);
  const job = (await ctx.call(user, 'POST', '/api/jobs', { name: 'Run', sourceId: source.id })).json().data.job;
  return eventually(async () => {
    const j = (await ctx.call(user, 'GET', `/api/jobs/${job.id}`)).json().data.job;
    return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(j.status) ? { ...j, sourceId: source.id } : undefined;
  }, 60_000);
}

describe('SSRF guard on jobs (ALLOW_PRIVATE_NETWORK=false)', () => {
  let ctx: TestContext;
  let user: TestUser;
  before(async () => {
    ctx = await createTestContext({ env: { ALLOW_PRIVATE_NETWORK: 'false' } });
    user = await ctx.signup();
  });
  after(async () => ctx?.close());

  test('a source on a loopback address fails with an error naming the address; no request reaches it', async () => {
    const before = site.requests.length;
    const job = await runJob(ctx, user, { url: `${site.url}directory?page=1` });
    assert.equal(job.status, 'FAILED');
    assert.match(job.error, /127\.0\.0\.1/);
    assert.match(job.error, /loopback/);
    assert.match(job.error, /ALLOW_PRIVATE_NETWORK/);
    assert.equal(site.requests.length, before, 'nothing left the guard');
  });

  test('a name that resolves to loopback is refused the same way', async () => {
    const job = await runJob(ctx, user, { url: `http://localhost:${site.port}/directory?page=1` });
    assert.equal(job.status, 'FAILED');
    assert.match(job.error, /127\.0\.0\.1|::1/);
  });

  for (const address of ['169.254.169.254', '10.0.0.1', '[::1]']) {
    test(`${address} is refused`, async () => {
      const job = await runJob(ctx, user, { url: `http://${address}/latest/meta-data/` });
      assert.equal(job.status, 'FAILED');
      assert.ok(job.error.includes(address.replace(/[[\]]/g, '')), job.error);
    });
  }
});

const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noChromium = existsSync(chromium)
  ? false
  : `DYNAMIC tests skipped: Chromium not found at ${chromium} (apt-get install chromium)`;

describe('DYNAMIC jobs', { skip: noChromium }, () => {
  let ctx: TestContext;
  let user: TestUser;
  before(async () => {
    ctx = await createTestContext();
    user = await ctx.signup();
  });
  after(async () => ctx?.close());

  test('a JS-rendered directory: waitFor, every page followed, hidden emails flagged by computed style', async () => {
    const job = await runJob(ctx, user, {
      scrapeType: 'DYNAMIC',
      url: `${site.url}js-directory?page=1`,
      selectors: { ...DIRECTORY_SELECTORS, waitFor: '.person' },
    });
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.leadsFound, 8);
    const rows = await ctx.deps.db.select().from(leads).where(eq(leads.sourceId, job.sourceId));
    const hidden = rows.find((r) => r.email === directoryLead(2, HIDDEN_CLASS_INDEX, 'js').email);
    assert.equal(hidden?.provenance?.visible, false, 'hidden by a stylesheet class: only a browser sees it');
    assert.equal(rows.find((r) => r.email === directoryLead(2, 0, 'js').email)?.provenance?.visible, true);
  });
});
