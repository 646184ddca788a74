/**
 * Crash recovery of professional-network enrichment jobs: the claim is one conditional UPDATE (two claims, one
 * worker), a stale job is swept back to the queue or failed after three runs, and (PostgreSQL) a service process
 * killed -9 mid-job leaves a job that another process takes over once its heartbeat goes stale, and finishes without
 * enriching a lead twice.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import pg from 'pg';
import { newId } from '../src/db/ids.ts';
import { networkEnrichJobs } from '../src/db/schema/index.ts';
import { createEnrichRecovery } from '../src/modules/professional-network/index.ts';
import { networkRepository } from '../src/modules/professional-network/network.repository.ts';
import { type NetworkSite, PEOPLE, startNetworkSite } from './fixtures/network-site.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { recordedChromium } from './helpers/browser.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { type ApiClient, apiClient, signedUpClient } from './helpers/http-client.ts';
import { freePort, pollUntil, type ServiceProcess, startService, waitHealthy } from './helpers/process.ts';

const GOOD = 'AQEDAR-good-cookie-0001';

describe('claims and the recovery sweep', () => {
  let ctx: TestContext;
  let alice: TestUser;
  before(async () => {
    ctx = await createTestContext({ workers: false });
    alice = await ctx.signup();
  });
  after(async () => {
    await ctx?.close();
  });

  const newJob = async (values: Partial<typeof networkEnrichJobs.$inferInsert> = {}) => {
    const at = new Date();
    return networkRepository(ctx.deps.db).insertJob({
      userId: alice.id,
      leadIds: [newId(), newId()],
      createdAt: at,
      updatedAt: at,
      ...values,
    });
  };
  const rowOf = async (id: string) =>
    (await ctx.deps.db.select().from(networkEnrichJobs).where(eq(networkEnrichJobs.id, id)))[0]!;

  test('two claims of one job give it to one worker; a live holder keeps it, a silent one loses it', async () => {
    const repo = networkRepository(ctx.deps.db);
    for (let round = 0; round < 5; round++) {
      const job = await newJob();
      const now = new Date();
      const past = new Date(now.getTime() - 30_000);
      const claims = await Promise.all(['w1', 'w2'].map((w) => repo.claimJob(job.id, w, now, past)));
      const won = claims.filter((c) => c !== undefined);
      assert.equal(won.length, 1, 'one of two concurrent claims takes the job');
      const holder = won[0]!.workerId!;
      const other = holder === 'w1' ? 'w2' : 'w1';
      const row = await rowOf(job.id);
      assert.deepEqual([row.status, row.workerId, row.attempts], ['RUNNING', holder, 1]);
      // The loser may not beat, record or finish.
      assert.equal(await repo.heartbeat(job.id, other, now), false);
      assert.equal(
        await repo.recordResult(job.id, other, 0, { leadId: job.leadIds[0]!, status: 'ENRICHED' }, now),
        false,
      );
      assert.equal(await repo.heartbeat(job.id, holder, now), true);
      // A fresh heartbeat keeps the job with its holder.
      assert.equal(await repo.claimJob(job.id, other, now, past), undefined);
      // Silent since before the cut-off: the other worker takes it over; the old holder is out.
      const later = new Date(now.getTime() + 60_000);
      const taken = await repo.claimJob(job.id, other, later, new Date(later.getTime() - 30_000));
      assert.deepEqual([taken?.workerId, taken?.attempts], [other, 2]);
      assert.equal(await repo.heartbeat(job.id, holder, later), false);
      assert.equal(
        await repo.recordResult(job.id, holder, 0, { leadId: job.leadIds[0]!, status: 'ENRICHED' }, later),
        false,
      );
      assert.equal(
        await repo.recordResult(job.id, other, 0, { leadId: job.leadIds[0]!, status: 'ENRICHED' }, later),
        true,
      );
      // A position already recorded is not recorded twice.
      assert.equal(
        await repo.recordResult(job.id, other, 0, { leadId: job.leadIds[0]!, status: 'ENRICHED' }, later),
        false,
      );
      await repo.finishJob(job.id, holder, 'COMPLETED', null, later);
      assert.equal((await rowOf(job.id)).status, 'RUNNING', 'the old holder cannot finish it');
      await repo.finishJob(job.id, other, 'COMPLETED', null, later);
      assert.deepEqual(
        [(await rowOf(job.id)).status, (await rowOf(job.id)).processed, (await rowOf(job.id)).enriched],
        ['COMPLETED', 1, 1],
      );
    }
  });

  test('the sweep puts a stale job back to PENDING, fails one after three runs, and leaves a live one', async () => {
    const stale = new Date(Date.now() - 10 * 60_000);
    const requeue = await newJob({ status: 'RUNNING', workerId: 'dead', heartbeatAt: stale, attempts: 1 });
    const exhausted = await newJob({ status: 'RUNNING', workerId: 'dead', heartbeatAt: stale, attempts: 3 });
    const live = await newJob({ status: 'RUNNING', workerId: 'alive', heartbeatAt: new Date(), attempts: 1 });
    // A row of before the heartbeats: its last update counts.
    const legacy = await newJob({ status: 'RUNNING', updatedAt: stale });
    const found = await createEnrichRecovery(ctx.deps).sweep();
    assert.deepEqual(found.requeued.sort(), [requeue.id, legacy.id].sort());
    assert.deepEqual(found.failed, [exhausted.id]);
    const [a, b, c] = [await rowOf(requeue.id), await rowOf(exhausted.id), await rowOf(live.id)];
    assert.deepEqual([a.status, a.workerId, a.heartbeatAt], ['PENDING', null, null]);
    assert.equal(b.status, 'FAILED');
    assert.match(b.stopReason!, /stopped responding 3 times/);
    assert.deepEqual([c.status, c.workerId], ['RUNNING', 'alive']);
    // A second sweep finds nothing more.
    const again = await createEnrichRecovery(ctx.deps).sweep();
    assert.deepEqual([again.requeued, again.failed], [[], []]);
  });
});

// Two service processes on one PostgreSQL database; the one running the job is killed -9.
const skip = process.env.TEST_DATABASE_URL ? false : 'needs PostgreSQL: run with TEST_DATABASE_URL=postgres://…';

describe('a service process killed -9 mid-job', { skip }, () => {
  const EXTRA = ['dee-park', 'eve-hart', 'fay-lin'];
  const SLUGS = ['ann-lee', 'bob-stone', 'cid-moss', ...EXTRA];
  let site: NetworkSite;
  let testDb: TestDatabase;
  let sql: pg.Client;
  const services: { proc: ServiceProcess; dataDir: string; port: number }[] = [];

  before(async () => {
    for (const [i, slug] of EXTRA.entries()) {
      const [first, last] = slug.split('-').map((w) => w[0]!.toUpperCase() + w.slice(1));
      PEOPLE[slug] = {
        firstName: first!,
        lastName: last!,
        title: `Engineer ${i}`,
        company: 'Initech',
        location: 'Oslo',
      };
    }
    site = await startNetworkSite(new Set([GOOD]));
    testDb = await createTestDatabase();
    await testDb.database.close();
    sql = new pg.Client({ connectionString: testDb.url });
    await sql.connect();
    for (let i = 0; i < 2; i++) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-netrec-'));
      const port = await freePort();
      const proc = startService({
        DATABASE_URL: testDb.url!,
        DATA_DIR: dataDir,
        PORT: String(port),
        LOG_LEVEL: 'warn',
        ALLOW_PRIVATE_NETWORK: 'true',
        // One key for both, as on machines of one deployment: either opens the credential's sealed cookie.
        SECRET_KEY: 'netrec-test-secret-key-0123456789abcdef',
        LINKEDIN_BASE_URL: site.url,
        LINKEDIN_DELAY_MS: '1200',
        LINKEDIN_JITTER_MS: '0',
        LINKEDIN_JOB_HEARTBEAT_MS: '300',
        LINKEDIN_JOB_STALE_MS: '2000',
      });
      services.push({ proc, dataDir, port });
    }
    await Promise.all(services.map((s) => waitHealthy(s.port, s.proc)));
  });
  after(async () => {
    for (const s of services) s.proc.child.kill('SIGKILL');
    await Promise.all(services.map((s) => s.proc.exited));
    // The killed process's Chromium outlived it (the next start on its data directory would reap it): end it here.
    for (const s of services) {
      for (const { pid, userDataDir } of recordedChromium(s.dataDir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
        fs.rmSync(userDataDir, { recursive: true, force: true });
      }
      fs.rmSync(s.dataDir, { recursive: true, force: true });
    }
    for (const slug of EXTRA) delete PEOPLE[slug];
    await sql?.end();
    await testDb?.drop();
    await site?.close();
  });

  const jobRow = async (id: string) =>
    (
      await sql.query(
        'SELECT status, worker_id, attempts, processed, enriched, results, stop_reason FROM network_enrich_jobs WHERE id = $1',
        [id],
      )
    ).rows[0];

  test('another process takes the job over after its heartbeat goes stale and finishes it, no lead twice', async (t) => {
    const client: ApiClient = await signedUpClient(`http://127.0.0.1:${services[0]!.port}`, 'netrec@example.com');
    const cred = await client.call('POST', '/api/linkedin/credentials', { cookie: GOOD, dailyLimit: 50 });
    assert.equal(cred.status, 201, JSON.stringify(cred.body));
    const leadIds: string[] = [];
    for (const slug of SLUGS) {
      const res = await client.call('POST', '/api/leads', {
        // The API sets no custom fields: the profile URL is the lead's source.
        sourceUrl: `${site.url}/in/${slug}`,
        firstName: slug,
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      leadIds.push(res.body.data.lead.id);
    }
    const started = await client.call('POST', '/api/linkedin/enrich', { leadIds });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const jobId = started.body.data.job.id as string;

    // Running, with at least one lead done and more to go.
    const running = await pollUntil(
      () => jobRow(jobId),
      (r) => r.status === 'RUNNING' && r.processed >= 1 && r.processed <= 3,
      60_000,
    );
    const victim = services.find((s) => String(s.proc.child.pid) === String(running.worker_id).split(':')[1]);
    assert.ok(victim, `the job runs in one of the two processes (${running.worker_id})`);
    victim.proc.child.kill('SIGKILL');
    await victim.proc.exited;
    const killedAt = Date.now();
    const requestsAtKill = site.profileRequests().length;

    const taken = await pollUntil(
      () => jobRow(jobId),
      (r) => r.attempts === 2 && r.status === 'RUNNING',
      30_000,
    );
    const tookMs = Date.now() - killedAt;
    assert.notEqual(taken.worker_id, running.worker_id);
    assert.ok(tookMs < 15_000, `taken over ${tookMs} ms after the kill`);
    const done = await pollUntil(
      () => jobRow(jobId),
      (r) => r.status !== 'RUNNING' && r.status !== 'PENDING',
      60_000,
    );
    assert.equal(done.status, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual([done.processed, done.enriched, done.attempts], [SLUGS.length, SLUGS.length, 2]);
    // Each lead recorded once, in order.
    assert.deepEqual(
      done.results.map((r: { leadId: string; status: string }) => [r.leadId, r.status]),
      leadIds.map((id) => [id, 'ENRICHED']),
    );
    // Only leads not recorded before the kill were requested again: at most the one in flight twice.
    const perSlug = new Map<string, number>();
    for (const r of site.profileRequests()) {
      const slug = r.path.split('/')[2]!;
      perSlug.set(slug, (perSlug.get(slug) ?? 0) + 1);
    }
    const twice = SLUGS.filter((s) => (perSlug.get(s) ?? 0) > 1);
    assert.ok(twice.length <= 1, `requested twice: ${twice}`);
    assert.ok(
      SLUGS.every((s) => perSlug.get(s)),
      'every profile was read',
    );
    for (const [i, slug] of SLUGS.entries()) {
      if (i < running.processed) assert.equal(perSlug.get(slug), 1, `${slug}, done before the kill, read once`);
    }
    const survivor = services.find((s) => s !== victim)!;
    const key = client.headers.authorization!.replace(/^Bearer /, '');
    const lead = await apiClient(`http://127.0.0.1:${survivor.port}`, key).call('GET', `/api/leads/${leadIds.at(-1)}`);
    assert.deepEqual(
      [lead.body.data.lead.jobTitle, lead.body.data.lead.company],
      ['Engineer 2', 'Initech'],
      'the last lead, enriched by the process that took over',
    );
    t.diagnostic(
      `taken over ${tookMs} ms after the kill; ${site.profileRequests().length - requestsAtKill} profile reads after it`,
    );
  });
});
