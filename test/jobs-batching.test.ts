import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { jobs, leads } from '../src/db/schema/index.ts';
import { runCrawl } from '../src/modules/scraping/crawl.ts';
import { CrawlError, type CrawledPage, type RunCrawl } from '../src/modules/scraping/scraping.types.ts';
import { API_SELECTORS, DIRECTORY_SELECTORS, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';

// The leads writer buffers pages and stores them in batches (README, Scraping): leads still show up
// while a job runs, the buffer is written before the job's final state, and leadsFound counts only
// the leads a batch actually inserted.

/**
 * How the crawl under the runner behaves: `real` is the engine as is; the `replay` modes run the real
 * crawl, then hand every page to the runner in one burst (so they all sit in the writer's buffer,
 * well within its flush period) and then end it: normally, by waiting for the cancel, or by failing.
 */
let mode: 'real' | 'replay' | 'replay-hold' | 'replay-fail' = 'real';
let replayed: PromiseWithResolvers<void> = Promise.withResolvers();

const crawlUnderTest: RunCrawl = async (settings, hooks) => {
  if (mode === 'real') return runCrawl(settings, hooks);
  const pages: CrawledPage[] = [];
  const result = await runCrawl(settings, { ...hooks, onPage: async (page) => void pages.push(page) });
  for (const page of pages) await hooks.onPage(page);
  replayed.resolve();
  if (mode === 'replay-fail') throw new CrawlError('other', 'The test stopped this crawl');
  if (mode === 'replay-hold') {
    if (!hooks.signal.aborted)
      await new Promise((resolve) => hooks.signal.addEventListener('abort', resolve, { once: true }));
    return { ...result, aborted: true };
  }
  return result;
};

/** People on /people?page=N as JSON (API_SELECTORS): duplicates across and within pages, and odd characters. */
const PEOPLE: Record<string, object[]> = {
  '1': [
    { name: { first: 'Alice', last: 'Archer' }, contact: { email: 'alice@example.com' }, company: 'Acme' },
    { name: { first: 'Bob', last: 'Baker' }, contact: { email: 'bob@example.com' }, company: 'Acme' },
    { name: { first: 'Alice', last: 'Again' }, contact: { email: 'Alice@Example.com' }, company: 'Acme' },
    { name: { first: 'Dan', last: 'Lee' }, company: 'Initech' },
  ],
  '2': [
    { name: { first: 'Alice', last: 'Third' }, contact: { email: 'ALICE@example.com' }, company: 'Acme' },
    { name: { first: 'Carol', last: 'Cook' }, contact: { email: 'carol@example.com' }, company: 'Globex' },
    { name: { first: 'dan', last: 'LEE' }, company: 'INITECH' },
    { name: { first: 'Bob', last: 'Baker' }, contact: { email: 'bob@example.com' }, company: 'Acme' },
  ],
  // The test's trigger refuses the first write holding Flaky Co, and every write holding Poison Co.
  flaky: [
    { name: { first: 'Fay', last: 'Flake' }, contact: { email: 'fay@example.com' }, company: 'Flaky Co' },
    { name: { first: 'Sam', last: 'Steady' }, contact: { email: 'sam@example.com' }, company: 'Steady Co' },
  ],
  poison: [
    { name: { first: 'Pia', last: 'Poison' }, contact: { email: 'pia@example.com' }, company: 'Poison Co' },
    { name: { first: 'Sam', last: 'Steady' }, contact: { email: 'sam@example.com' }, company: 'Steady Co' },
  ],
  // NUL characters (PostgreSQL text refuses them) and a lone surrogate (half an emoji), beside an ordinary lead.
  odd: [
    {
      name: { first: 'Nu\u0000ll', last: 'Char' },
      contact: { email: 'nul@example.com' },
      company: 'Zero\u0000 Ltd',
      note: 'a\u0000b',
    },
    { name: { first: 'Half', last: 'Emoji' }, contact: { email: 'emoji@example.com' }, company: 'Smile \ud83d' },
    { name: { first: 'Plain', last: 'Person' }, contact: { email: 'plain@example.com' }, company: 'Plain Co' },
  ],
};

let ctx: TestContext;
let alice: TestUser;
let site: FixtureSite;
let peopleServer: http.Server;
let peopleUrl: string;

before(async () => {
  site = await startFixtureSite({ pages: 3, leadsPerPage: 5 });
  peopleServer = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://localhost');
    if (url.pathname === '/robots.txt') return void res.writeHead(404).end();
    const page = url.searchParams.get('page') ?? '';
    const next = page === '1' ? '/people?page=2' : null;
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ data: { people: PEOPLE[page] ?? [] }, next }));
  });
  await new Promise<void>((resolve) => peopleServer.listen(0, '127.0.0.1', resolve));
  peopleUrl = `http://127.0.0.1:${(peopleServer.address() as AddressInfo).port}/people`;
  ctx = await createTestContext({ runCrawl: crawlUnderTest });
  alice = await ctx.signup();
  // Database failures on demand, in the database itself (see PEOPLE.flaky and PEOPLE.poison).
  await ctx.deps.db.execute(sql.raw('CREATE SEQUENCE test_flaky_writes'));
  await ctx.deps.db.execute(
    sql.raw(`CREATE FUNCTION test_refuse_leads() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.company = 'Poison Co' OR (NEW.company = 'Flaky Co' AND nextval('test_flaky_writes') = 1) THEN
          RAISE EXCEPTION 'refused by the test';
        END IF;
        RETURN NEW;
      END $$`),
  );
  await ctx.deps.db.execute(
    sql.raw(
      'CREATE TRIGGER test_refuse_leads BEFORE INSERT ON leads FOR EACH ROW EXECUTE FUNCTION test_refuse_leads()',
    ),
  );
});
after(async () => {
  await ctx?.close();
  await site?.close();
  await new Promise((resolve) => peopleServer?.close(resolve));
});

async function activeSource(body: Record<string, unknown>) {
  const res = await ctx.call(alice, 'POST', '/api/sources', { name: 'Batching', scrapeType: 'STATIC', ...body });
  assert.equal(res.statusCode, 201, res.body);
  const source = res.json().data.source as { id: string };
  assert.equal((await ctx.call(alice, 'POST', `/api/sources/${source.id}/activate`)).statusCode, 200);
  return source;
}

async function startJob(sourceId: string): Promise<string> {
  replayed = Promise.withResolvers();
  const res = await ctx.call(alice, 'POST', '/api/jobs', { name: 'Batching', sourceId });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.job.id;
}

const jobView = async (id: string) => (await ctx.call(alice, 'GET', `/api/jobs/${id}`)).json().data.job;
const storedLeads = async (jobId: string) =>
  Number((await ctx.deps.db.select({ n: sql<number>`count(*)::int` }).from(leads).where(eq(leads.jobId, jobId)))[0]!.n);

/** The job's row and its stored leads, read together the moment it reaches a final state. */
async function final(jobId: string) {
  return eventually(
    async () => {
      const job = await jobView(jobId);
      if (!['COMPLETED', 'FAILED', 'CANCELLED'].includes(job.status)) return undefined;
      return { job, stored: await storedLeads(jobId) };
    },
    30_000,
    20,
  );
}

describe('scraped leads are written in batches', () => {
  test('leads appear while a long job still runs', async () => {
    mode = 'real';
    const source = await activeSource({
      url: `${site.url}slow?ms=300&n=1`,
      selectors: DIRECTORY_SELECTORS,
      maxPages: 200,
    });
    const jobId = await startJob(source.id);
    const seen = await eventually(
      async () => {
        const stored = await storedLeads(jobId);
        const job = await jobView(jobId);
        assert.equal(
          job.status === 'PENDING' || job.status === 'RUNNING',
          true,
          `the job ended (${job.status}) before any lead was stored`,
        );
        return stored > 0 && job.status === 'RUNNING' && { stored, job };
      },
      20_000,
      50,
    );
    assert.ok(seen.job.pagesVisited < 200, 'still crawling');
    assert.equal((await ctx.call(alice, 'DELETE', `/api/jobs/${jobId}`)).statusCode, 200);
    const counted = await eventually(async () => {
      const job = await jobView(jobId);
      const stored = await storedLeads(jobId);
      return job.leadsFound === stored && job.leadsFound >= seen.stored && job;
    });
    assert.equal(counted.status, 'CANCELLED');
  });

  test('COMPLETED: the buffer is written first, so leadsFound and the stored leads agree at once', async () => {
    mode = 'replay';
    const source = await activeSource({ url: `${site.url}directory?page=1`, selectors: DIRECTORY_SELECTORS });
    const { job, stored } = await final(await startJob(source.id));
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.leadsFound, 15);
    assert.equal(stored, 15);
  });

  test('FAILED: the buffer is written before the failure is recorded', async () => {
    mode = 'replay-fail';
    const source = await activeSource({ url: `${site.url}directory?page=1`, selectors: DIRECTORY_SELECTORS });
    const { job, stored } = await final(await startJob(source.id));
    assert.equal(job.status, 'FAILED');
    assert.equal(job.error, 'The test stopped this crawl');
    assert.equal(job.leadsFound, 15);
    assert.equal(stored, 15);
  });

  test('CANCELLED: the buffer is written when the crawl stops, and leadsFound counts it', async () => {
    mode = 'replay-hold';
    const source = await activeSource({ url: `${site.url}directory?page=1`, selectors: DIRECTORY_SELECTORS });
    const jobId = await startJob(source.id);
    await replayed.promise;
    assert.equal((await ctx.call(alice, 'DELETE', `/api/jobs/${jobId}`)).statusCode, 200);
    const job = await eventually(async () => {
      const view = await jobView(jobId);
      return view.leadsFound === 15 && view;
    });
    assert.equal(job.status, 'CANCELLED');
    assert.equal(await storedLeads(jobId), 15);
    const [row] = await ctx.deps.db.select({ workerId: jobs.workerId }).from(jobs).where(eq(jobs.id, jobId));
    assert.ok(row!.workerId, 'the job was run by a worker');
  });

  test('duplicates across pages of one batch and within a page are stored and counted once', async () => {
    mode = 'replay';
    const source = await activeSource({ scrapeType: 'API', url: `${peopleUrl}?page=1`, selectors: API_SELECTORS });
    const { job, stored } = await final(await startJob(source.id));
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.pagesVisited, 2);
    assert.equal(job.leadsFound, 4, 'alice, bob, carol and dan');
    assert.equal(stored, 4);
    const rows = await ctx.deps.db.select().from(leads).where(eq(leads.sourceId, source.id));
    const alices = rows.filter((r) => r.email === 'alice@example.com');
    assert.equal(alices.length, 1);
    assert.equal(alices[0]!.lastName, 'Archer', 'the first occurrence is kept');
    assert.equal(rows.filter((r) => r.email === null && r.lastName?.toLowerCase() === 'lee').length, 1);

    // A second run of the source in one batch again: nothing new, nothing counted.
    const again = await final(await startJob(source.id));
    assert.equal(again.job.leadsFound, 0);
    assert.equal(again.stored, 0);
  });

  test('a NUL character or half an emoji on a page does not cost the batch it is written with', async () => {
    mode = 'replay';
    const source = await activeSource({
      scrapeType: 'API',
      url: `${peopleUrl}?page=odd`,
      selectors: { ...API_SELECTORS, note: 'note' },
    });
    const { job, stored } = await final(await startJob(source.id));
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.leadsFound, 3);
    assert.equal(stored, 3);
    const rows = await ctx.deps.db.select().from(leads).where(eq(leads.sourceId, source.id));
    const byEmail = new Map(rows.map((r) => [r.email, r]));
    assert.equal(byEmail.get('nul@example.com')!.firstName, 'Null');
    assert.equal(byEmail.get('nul@example.com')!.company, 'Zero Ltd');
    assert.deepEqual(byEmail.get('nul@example.com')!.customFields, { note: 'ab' });
    assert.equal(byEmail.get('emoji@example.com')!.company, 'Smile \ufffd');
    assert.equal(byEmail.get('plain@example.com')!.company, 'Plain Co');
  });

  test('a write the database refuses once is made again with the next one: no lead lost', async () => {
    mode = 'replay';
    const source = await activeSource({ scrapeType: 'API', url: `${peopleUrl}?page=flaky`, selectors: API_SELECTORS });
    const { job, stored } = await final(await startJob(source.id));
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.leadsFound, 2);
    assert.equal(stored, 2);
  });

  test('writes the database keeps refusing fail the job (retryable), not hold it or lose count', async () => {
    mode = 'replay';
    const source = await activeSource({ scrapeType: 'API', url: `${peopleUrl}?page=poison`, selectors: API_SELECTORS });
    const { job, stored } = await final(await startJob(source.id));
    assert.equal(job.status, 'FAILED');
    assert.equal(job.error, 'The job stopped on an internal error; it can be retried.');
    assert.equal(job.leadsFound, 0);
    assert.equal(stored, 0);
  });
});
