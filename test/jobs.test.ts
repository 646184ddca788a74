import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, isNull } from 'drizzle-orm';
import { jobs, leads } from '../src/db/schema/index.ts';
import { QUEUES } from '../src/queue/queues.ts';
import {
  API_SELECTORS,
  apiPerson,
  DIRECTORY_SELECTORS,
  directoryLead,
  type FixtureSite,
  HIDDEN_CLASS_INDEX,
  HIDDEN_INLINE_INDEX,
  startFixtureSite,
} from './fixtures/sites.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let site: FixtureSite;

before(async () => {
  site = await startFixtureSite({ pages: 3, leadsPerPage: 5, flakyFailures: 1 });
  ({ ctx, alice, bob } = await createTwoUserContext({ env: { SCRAPER_MAX_RETRIES: '1' } }));
});
after(async () => {
  await ctx?.close();
  await site?.close();
});

const unknownId = '0190a8a0-0000-7000-8000-000000000000';

async function activeSource(user: TestUser, body: Record<string, unknown>) {
  const res = await ctx.call(user, 'POST', '/api/sources', { name: 'Fixture', scrapeType: 'STATIC', ...body });
  assert.equal(res.statusCode, 201, res.body);
  const source = res.json().data.source;
  assert.equal((await ctx.call(user, 'POST', `/api/sources/${source.id}/activate`)).statusCode, 200);
  return source as { id: string };
}

async function startJob(user: TestUser, sourceId: string, name = 'Run') {
  const res = await ctx.call(user, 'POST', '/api/jobs', { name, sourceId });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.job as { id: string; status: string; name: string };
}

async function finished(user: TestUser, id: string, timeoutMs = 30_000) {
  return eventually(async () => {
    const job = (await ctx.call(user, 'GET', `/api/jobs/${id}`)).json().data.job;
    return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(job.status) ? job : undefined;
  }, timeoutMs);
}

describe('POST /api/jobs', () => {
  test('bad input is 400 naming the field; a source that is not yours is 404 naming sourceId', async () => {
    assertValidation(await ctx.call(alice, 'POST', '/api/jobs', { sourceId: unknownId }), 'name');
    assertValidation(await ctx.call(alice, 'POST', '/api/jobs', { name: 'x', sourceId: 'nope' }), 'sourceId');
    const bobs = await activeSource(bob, { url: `${site.url}directory`, selectors: DIRECTORY_SELECTORS });
    for (const sourceId of [unknownId, bobs.id]) {
      const res = await ctx.call(alice, 'POST', '/api/jobs', { name: 'x', sourceId });
      assertError(res, 404, 'NOT_FOUND');
      assert.equal(res.json().error.details[0].field, 'sourceId');
    }
  });

  test('a DRAFT source is 400 SOURCE_NOT_ACTIVE', async () => {
    const draft = (
      await ctx.call(alice, 'POST', '/api/sources', {
        name: 'Draft',
        url: site.url,
        scrapeType: 'STATIC',
        selectors: {},
      })
    ).json().data.source;
    assertError(
      await ctx.call(alice, 'POST', '/api/jobs', { name: 'x', sourceId: draft.id }),
      400,
      'SOURCE_NOT_ACTIVE',
    );
    assert.equal((await ctx.deps.db.select().from(jobs).where(eq(jobs.sourceId, draft.id))).length, 0);
  });
});

describe('a STATIC job end to end', () => {
  test('PENDING → RUNNING → COMPLETED; every page followed; leads stored with provenance', async () => {
    const source = await activeSource(alice, { url: `${site.url}directory?page=1`, selectors: DIRECTORY_SELECTORS });
    const created = await startJob(alice, source.id, 'Directory run');
    assert.equal(created.status, 'PENDING');
    assert.equal(created.name, 'Directory run');
    const job = await finished(alice, created.id);
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.progress, 100);
    assert.equal(job.leadsFound, 15);
    assert.equal(job.pagesVisited, 3);
    assert.ok(job.startedAt && job.finishedAt);

    const rows = await ctx.deps.db.select().from(leads).where(eq(leads.jobId, job.id));
    assert.equal(rows.length, 15);
    const expected = directoryLead(2, HIDDEN_INLINE_INDEX);
    const lead = rows.find((r) => r.email === expected.email)!;
    assert.ok(lead, 'lead of page 2 stored');
    assert.equal(lead.firstName, expected.fullName.split(' ')[0]);
    assert.equal(lead.lastName, 'Lovelace');
    assert.equal(lead.company, expected.company);
    assert.equal(lead.phone, expected.phone, 'tel: stripped');
    assert.equal(lead.status, 'NEW', 'scraped leads start NEW: only email validation sets VALID');
    assert.equal(lead.userId, alice.id);
    assert.equal(lead.sourceId, source.id);
    assert.equal(lead.provenance?.pageUrl, `${site.url}directory?page=2`);
    assert.equal(lead.provenance?.selector, DIRECTORY_SELECTORS.email);
    assert.equal(lead.provenance?.visible, false, 'email hidden by an inline style');
    const visible = rows.find((r) => r.email === directoryLead(2, 0).email)!;
    assert.equal(visible.provenance?.visible, true);
    assert.ok(
      rows.find((r) => r.email === directoryLead(1, HIDDEN_CLASS_INDEX).email),
      'class-hidden emails are stored too',
    );

    const listed = (await ctx.call(alice, 'GET', `/api/leads?jobId=${job.id}&limit=100`)).json().data.leads;
    assert.equal(listed.length, 15);
    const listedJobs = (await ctx.call(alice, 'GET', '/api/jobs')).json().data.jobs;
    assert.ok(listedJobs.some((j: { id: string; status: string }) => j.id === job.id && j.status === 'COMPLETED'));
  });

  test('a second run of the same source adds no duplicates; a re-delivered message does nothing', async () => {
    const source = await activeSource(alice, { url: `${site.url}directory?page=1`, selectors: DIRECTORY_SELECTORS });
    const first = await finished(alice, (await startJob(alice, source.id)).id);
    assert.equal(first.leadsFound, 15);
    const second = await finished(alice, (await startJob(alice, source.id)).id);
    assert.equal(second.status, 'COMPLETED');
    assert.equal(second.leadsFound, 0);
    assert.equal((await ctx.deps.db.select().from(leads).where(eq(leads.sourceId, source.id))).length, 15);

    // The queue delivers the finished job's message again (at-least-once delivery): nothing changes.
    const requestsBefore = site.requests.length;
    await ctx.deps.boss.send(QUEUES.scrape, { jobId: first.id });
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(site.requests.length, requestsBefore, 'no page fetched again');
    const again = (await ctx.call(alice, 'GET', `/api/jobs/${first.id}`)).json().data.job;
    assert.equal(again.status, 'COMPLETED');
    assert.equal(again.attempts, 1);
  });

  test('a job taken over from a dead worker (stale heartbeat) runs again and adds no duplicates', async () => {
    const source = await activeSource(alice, { url: `${site.url}directory?page=1`, selectors: DIRECTORY_SELECTORS });
    const job = await finished(alice, (await startJob(alice, source.id)).id);
    // As if the worker had died after storing the leads but before finishing: RUNNING, heartbeat long gone.
    await ctx.deps.db
      .update(jobs)
      .set({
        status: 'RUNNING',
        workerId: 'dead-worker',
        heartbeatAt: new Date(Date.now() - 120_000),
        finishedAt: null,
      })
      .where(eq(jobs.id, job.id));
    await ctx.deps.boss.send(QUEUES.scrape, { jobId: job.id });
    const rerun = await finished(alice, job.id);
    assert.equal(rerun.status, 'COMPLETED');
    assert.equal(rerun.attempts, 2);
    assert.equal(rerun.leadsFound, 15, 'leads of the first attempt still count, none twice');
    assert.equal((await ctx.deps.db.select().from(leads).where(eq(leads.sourceId, source.id))).length, 15);
  });
});

describe('API jobs', () => {
  test('JSONPath items and nextPage, dotted fields', async () => {
    const source = await activeSource(alice, {
      scrapeType: 'API',
      url: `${site.url}api/people?page=1`,
      selectors: { ...API_SELECTORS, city: 'address.city' },
    });
    const job = await finished(alice, (await startJob(alice, source.id)).id);
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.leadsFound, 15);
    const person = apiPerson(3, 4);
    const [lead] = await ctx.deps.db
      .select()
      .from(leads)
      .where(and(eq(leads.sourceId, source.id), eq(leads.email, person.contact.email)));
    assert.equal(lead!.firstName, person.name.first);
    assert.equal(lead!.jobTitle, person.title);
  });
});

describe('failures, retry, cancel, delete', () => {
  test('a job whose pages all fail is FAILED with the reason; retry reruns it; a COMPLETED one is 400', async () => {
    const source = await activeSource(alice, { url: `${site.url}fail`, selectors: DIRECTORY_SELECTORS });
    const job = await finished(alice, (await startJob(alice, source.id)).id);
    assert.equal(job.status, 'FAILED');
    assert.match(job.error, /fail/);
    assert.match(job.error, /500/);
    const before = site.requestsTo('/fail').length;
    const retry = await ctx.call(alice, 'POST', `/api/jobs/${job.id}/retry`);
    assert.equal(retry.statusCode, 200);
    assert.deepEqual(retry.json(), { success: true, message: 'Job retry started' });
    const again = await finished(alice, job.id);
    assert.equal(again.status, 'FAILED');
    assert.equal(again.attempts, 2);
    assert.ok(site.requestsTo('/fail').length > before, 'the retry fetched again');

    const ok = await activeSource(alice, { url: `${site.url}flaky`, selectors: DIRECTORY_SELECTORS });
    const done = await finished(alice, (await startJob(alice, ok.id)).id);
    assert.equal(done.status, 'COMPLETED', 'a page failing once succeeds on its retry');
    assertError(await ctx.call(alice, 'POST', `/api/jobs/${done.id}/retry`), 400, 'INVALID_STATUS');
  });

  test('DELETE of a running job cancels it: CANCELLED, and no request leaves 2 s after', async () => {
    const source = await activeSource(alice, {
      url: `${site.url}slow?ms=400&n=1`,
      selectors: DIRECTORY_SELECTORS,
      maxPages: 500,
    });
    const job = await startJob(alice, source.id);
    await eventually(async () => site.requestsTo('/slow').length >= 3);
    assert.equal((await ctx.call(alice, 'GET', `/api/jobs/${job.id}`)).json().data.job.status, 'RUNNING');
    const res = await ctx.call(alice, 'DELETE', `/api/jobs/${job.id}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().success, true);
    const cancelledAt = Date.now();
    const view = (await ctx.call(alice, 'GET', `/api/jobs/${job.id}`)).json().data.job;
    assert.equal(view.status, 'CANCELLED');
    await new Promise((r) => setTimeout(r, 3000));
    const late = site.requestsTo('/slow').filter((r) => r.at > cancelledAt + 2000);
    assert.deepEqual(late, [], 'no request after the crawl stopped');
    assert.equal(
      (await ctx.call(alice, 'GET', `/api/jobs/${job.id}`)).json().data.job.status,
      'CANCELLED',
      'the worker did not overwrite the cancel',
    );
  });

  test('DELETE cancels a pending job before it runs, and deletes a finished one but keeps its leads', async () => {
    const source = await activeSource(alice, { url: `${site.url}directory?page=1`, selectors: DIRECTORY_SELECTORS });
    const pending = (
      await ctx.deps.db.insert(jobs).values({ userId: alice.id, sourceId: source.id, name: 'queued' }).returning()
    )[0]!;
    assert.equal((await ctx.call(alice, 'DELETE', `/api/jobs/${pending.id}`)).statusCode, 200);
    assert.equal((await ctx.call(alice, 'GET', `/api/jobs/${pending.id}`)).json().data.job.status, 'CANCELLED');

    const job = await finished(alice, (await startJob(alice, source.id)).id);
    assert.equal(job.leadsFound, 15);
    assert.equal((await ctx.call(alice, 'DELETE', `/api/jobs/${job.id}`)).statusCode, 200);
    assertError(await ctx.call(alice, 'GET', `/api/jobs/${job.id}`), 404, 'NOT_FOUND');
    const kept = await ctx.deps.db
      .select()
      .from(leads)
      .where(and(eq(leads.sourceId, source.id), isNull(leads.jobId)));
    assert.equal(kept.length, 15, 'leads stay, without their job link');
  });

  test("another user's job is 404 everywhere", async () => {
    const source = await activeSource(alice, { url: `${site.url}directory?page=1`, selectors: DIRECTORY_SELECTORS });
    const job = await finished(alice, (await startJob(alice, source.id)).id);
    for (const [method, url] of [
      ['GET', `/api/jobs/${job.id}`],
      ['GET', `/api/jobs/${job.id}/events`],
      ['DELETE', `/api/jobs/${job.id}`],
      ['POST', `/api/jobs/${job.id}/retry`],
    ] as const) {
      assertError(await ctx.call(bob, method, url), 404, 'NOT_FOUND');
    }
    assert.ok(!(await ctx.call(bob, 'GET', '/api/jobs')).json().data.jobs.some((j: { id: string }) => j.id === job.id));
    assertError(await ctx.call(alice, 'GET', '/api/jobs/not-a-uuid'), 404, 'NOT_FOUND');
  });
});

describe('crawl settings in options', () => {
  test('options.maxPages limits the crawl; the old places (selectors, top level) still do, options winning', async () => {
    const cases: Array<[Record<string, unknown>, number]> = [
      [{ selectors: DIRECTORY_SELECTORS, options: { maxPages: 2 } }, 2],
      [{ selectors: { ...DIRECTORY_SELECTORS, maxPages: '1' } }, 1],
      [{ selectors: { ...DIRECTORY_SELECTORS, maxPages: 3000 }, maxPages: 3000, options: { maxPages: 1 } }, 1],
    ];
    for (const [body, pages] of cases) {
      const source = await activeSource(alice, { url: `${site.url}directory?page=1`, ...body });
      const job = await finished(alice, (await startJob(alice, source.id)).id);
      assert.equal(job.status, 'COMPLETED', job.error);
      assert.equal(job.pagesVisited, pages, JSON.stringify(body));
      assert.equal(job.leadsFound, 5 * pages);
    }
  });
});

describe('GET /api/jobs/{id}/events', () => {
  test('streams status, progress and leadsFound until the job completes', async () => {
    const address = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const source = await activeSource(alice, {
      url: `${site.url}slow?ms=150&n=1`,
      selectors: DIRECTORY_SELECTORS,
      maxPages: 12,
    });
    const job = await startJob(alice, source.id);
    const res = await fetch(`${address}/api/jobs/${job.id}/events`, { headers: alice.headers });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const text = await res.text(); // the stream ends after the terminal state
    const events = text
      .split('\n\n')
      .filter((b) => b.startsWith('event: job'))
      .map((b) => JSON.parse(b.split('\ndata: ')[1]!));
    assert.ok(events.length >= 2, text);
    const last = events.at(-1);
    assert.equal(last.status, 'COMPLETED');
    assert.equal(last.progress, 100);
    assert.equal(last.leadsFound, 12, 'one lead per slow page');
    const progress = events.map((e) => e.progress);
    assert.deepEqual(
      progress,
      [...progress].sort((a, b) => a - b),
      'progress never goes back',
    );
  });
});
