import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { DIRECTORY_SELECTORS, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { type ApiClient, activeSourceVia, signedUpClient } from './helpers/http-client.ts';
import { freePort, type ServiceProcess, startService, waitHealthy } from './helpers/process.ts';

// An API-only process and two `npm run worker` processes on one PostgreSQL database, as on three machines.
const skip = process.env.TEST_DATABASE_URL
  ? false
  : 'scale-out needs PostgreSQL: run with TEST_DATABASE_URL=postgres://…';

describe('scale-out of scraping: two worker processes', { skip }, () => {
  let testDb: TestDatabase;
  let sql: pg.Client;
  let site: FixtureSite;
  let api: ServiceProcess;
  const workers: ServiceProcess[] = [];
  let client: ApiClient;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-scale-jobs-'));

  before(async () => {
    site = await startFixtureSite();
    testDb = await createTestDatabase();
    await testDb.database.close();
    sql = new pg.Client({ connectionString: testDb.url });
    await sql.connect();
    const port = await freePort();
    const env = { DATABASE_URL: testDb.url!, DATA_DIR: dataDir, ALLOW_PRIVATE_NETWORK: 'true', LOG_LEVEL: 'warn' };
    api = startService({ ...env, PORT: String(port), RUN_WORKERS: 'false' });
    await waitHealthy(port, api);
    for (let i = 0; i < 2; i++)
      workers.push(startService({ ...env, JOB_CONCURRENCY: '1', SCRAPER_DOMAIN_CONCURRENCY: '2' }, 'src/worker.ts'));
    client = await signedUpClient(`http://127.0.0.1:${port}`, 'scale-jobs@example.com');
  });
  after(async () => {
    for (const p of [api, ...workers]) p?.child.kill('SIGKILL');
    await Promise.all([api, ...workers].map((p) => p?.exited));
    await sql?.end();
    await testDb?.drop();
    await site?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const jobRow = async (id: string) =>
    (await sql.query('SELECT status, attempts, worker_id, leads_found FROM jobs WHERE id = $1', [id])).rows[0];
  const waitFor = async <T>(
    check: () => Promise<T | undefined | false>,
    timeoutMs: number,
    what: string,
  ): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check();
      if (v) return v;
      if (Date.now() > deadline)
        throw new Error(
          `${what} not within ${timeoutMs} ms; workers said: ${workers.map((w) => w.output()).join('\n---\n')}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  test('jobs are shared between the workers and each runs exactly once', async () => {
    const ids: string[] = [];
    const sourceIds: string[] = [];
    for (let i = 0; i < 6; i++) {
      const sourceId = await activeSourceVia(client, {
        name: `Slow ${i}`,
        url: `${site.url}slow?ms=150&n=1&s=${i}`,
        selectors: DIRECTORY_SELECTORS,
        maxPages: 8,
      });
      sourceIds.push(sourceId);
      ids.push((await client.call('POST', '/api/jobs', { name: `Job ${i}`, sourceId })).body.data.job.id);
    }
    const rows = await waitFor(
      async () => {
        const all = [];
        for (const id of ids) all.push(await jobRow(id)); // one query at a time on one client (pg 9 refuses more)
        return all.every((r) => r.status === 'COMPLETED') && all;
      },
      90_000,
      'all jobs completed',
    );
    assert.deepEqual(
      rows.map((r) => r.attempts),
      [1, 1, 1, 1, 1, 1],
      'no job started twice',
    );
    const pids = new Set(rows.map((r) => String(r.worker_id).split(':')[1]));
    assert.deepEqual([...pids].sort(), workers.map((w) => String(w.child.pid)).sort(), 'both workers took jobs');
    for (const sourceId of sourceIds) {
      const { rows: counts } = await sql.query(
        'SELECT count(*)::int AS n, count(DISTINCT lower(email))::int AS d FROM leads WHERE source_id = $1',
        [sourceId],
      );
      assert.deepEqual(counts[0], { n: 8, d: 8 }, 'one lead per page, none twice');
    }
  });

  test('a scheduled source fires once per period across both workers', async () => {
    const sourceId = await activeSourceVia(client, {
      name: 'Hourly',
      url: `${site.url}directory?page=1`,
      selectors: DIRECTORY_SELECTORS,
      scheduleType: 'HOURLY',
    });
    await sql.query("UPDATE sources SET next_run_at = now() - interval '1 second' WHERE id = $1", [sourceId]);
    // pg-boss fires the scheduler's cron once a minute across all processes.
    await waitFor(
      async () => (await sql.query('SELECT 1 FROM jobs WHERE source_id = $1', [sourceId])).rowCount,
      120_000,
      'a scheduled run',
    );
    await new Promise((r) => setTimeout(r, 3000));
    const { rows } = await sql.query('SELECT trigger FROM jobs WHERE source_id = $1', [sourceId]);
    assert.deepEqual(rows, [{ trigger: 'schedule' }]);
    const next = (await sql.query('SELECT next_run_at FROM sources WHERE id = $1', [sourceId])).rows[0]
      .next_run_at as Date;
    assert.ok(next.getTime() > Date.now() + 55 * 60_000, 'the next run is an hour on');
  });

  test('a worker killed -9 mid-job: the other worker takes the job over within 60 s', async () => {
    const sourceId = await activeSourceVia(client, {
      name: 'Long',
      url: `${site.url}slow?ms=700&n=1&long=1`,
      selectors: DIRECTORY_SELECTORS,
      maxPages: 30,
    });
    const id = (await client.call('POST', '/api/jobs', { name: 'Crash', sourceId })).body.data.job.id;
    const running = await waitFor(
      async () => {
        const r = await jobRow(id);
        return r.status === 'RUNNING' && r.leads_found >= 2 && r;
      },
      30_000,
      'job running',
    );
    const victim = workers.find((w) => String(w.child.pid) === String(running.worker_id).split(':')[1])!;
    assert.ok(victim, 'the job runs in one of the two workers');
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    const takenOver = await waitFor(
      async () => {
        const r = await jobRow(id);
        return r.attempts === 2 && r;
      },
      60_000,
      'take-over',
    );
    assert.ok(Date.now() - killedAt < 60_000);
    assert.notEqual(takenOver.worker_id, running.worker_id);
    const done = await waitFor(
      async () => {
        const r = await jobRow(id);
        return r.status === 'COMPLETED' && r;
      },
      60_000,
      'completion',
    );
    assert.equal(done.leads_found, 30);
    const { rows } = await sql.query('SELECT count(*)::int AS n FROM leads WHERE source_id = $1', [sourceId]);
    assert.equal(rows[0].n, 30);
  });
});
