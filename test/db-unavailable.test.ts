import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { QUEUES } from '../src/queue/queues.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { type PgAdmin, pgAdmin } from './helpers/pg-admin.ts';
import { freePort, type ServiceProcess, startService, waitHealthy } from './helpers/process.ts';

// PGlite runs in the process: there is no connection to lose.
const skip = process.env.TEST_DATABASE_URL
  ? false
  : 'database connections exist on PostgreSQL only: run with TEST_DATABASE_URL=postgres://…';

describe('a database connection lost under a request or a background job', { skip }, () => {
  let ctx: TestContext;
  let admin: PgAdmin;
  let user: TestUser;
  /** Holds locks on the test database, so that a query of the service waits where the test wants it. */
  let locker: pg.Client;
  let service: ServiceProcess | undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-db-lost-'));

  before(async () => {
    // Background jobs run in a service process of their own (test 3): none in this one.
    ctx = await createTestContext({ workers: false });
    admin = await pgAdmin(ctx.deps.config.DATABASE_URL!);
    locker = new pg.Client({ connectionString: ctx.deps.config.DATABASE_URL });
    await locker.connect();
    user = await ctx.signup();
  });
  after(async () => {
    service?.child.kill('SIGTERM');
    await service?.exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
    await locker?.end();
    await admin?.close();
    await ctx?.close();
  });

  /** The service's backends (pool, not pg-boss or the listener) waiting on a lock the test holds. */
  const blocked = () => admin.backends(`application_name = 'quarry' AND wait_event_type = 'Lock'`);
  const terminateBlocked = async () => {
    const [waiting] = await eventually(
      async () => {
        const rows = await blocked();
        return rows.length ? rows : undefined;
      },
      15_000,
      20,
    );
    assert.equal(await admin.terminate('pid = $2', [waiting!.pid]), 1);
    return waiting!.pid;
  };
  const createProject = async (name: string) => {
    const res = await ctx.call(user, 'POST', '/api/projects', { name });
    assert.equal(res.statusCode, 201);
    return res.json().data.project.id as string;
  };

  test('a write whose connection is terminated: 503 SERVICE_UNAVAILABLE with Retry-After, not 500', async () => {
    const id = await createProject('before');
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM projects WHERE id = $1 FOR UPDATE', [id]);
    try {
      const pending = ctx.call(user, 'PATCH', `/api/projects/${id}`, { name: 'after' });
      await terminateBlocked();
      const res = await pending;
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().error.code, 'SERVICE_UNAVAILABLE');
      assert.ok(Number(res.headers['retry-after']) > 0, 'Retry-After names the seconds to wait');
    } finally {
      await locker.query('ROLLBACK');
    }
    // Not retried, nothing written; and the service answers again at once.
    const read = await ctx.call(user, 'GET', `/api/projects/${id}`);
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().data.project.name, 'before');
  });

  test('a GET whose connection is terminated mid-query is read again on another connection: 200', async () => {
    const id = await createProject('read me');
    assert.equal((await ctx.call(user, 'GET', `/api/projects/${id}`)).statusCode, 200); // key cached
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE projects IN ACCESS EXCLUSIVE MODE');
    let pid: number;
    try {
      const pending = ctx.call(user, 'GET', `/api/projects/${id}`);
      let answered: string | undefined;
      void pending.then((r) => (answered = `${r.statusCode} ${r.body}`));
      pid = await terminateBlocked();
      // The second attempt waits on the same lock, on another backend.
      await eventually(
        async () => {
          if (answered) throw new Error(`answered without reading again: ${answered}`);
          return (await blocked()).some((b) => b.pid !== pid);
        },
        15_000,
        20,
      );
      await locker.query('COMMIT');
      const res = await pending;
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.project.name, 'read me');
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
    }
  });

  test('a pg-boss handler whose transaction loses its connection fails at once; the process lives on', async () => {
    const port = await freePort();
    service = startService({
      DATABASE_URL: ctx.deps.config.DATABASE_URL!,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    });
    await waitHealthy(port, service);
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE sources IN ACCESS EXCLUSIVE MODE');
    let jobId: string | null;
    try {
      // The service process's source-scheduler tick claims sources in a transaction: it waits on the
      // lock, and is cut off there.
      jobId = await ctx.deps.boss.send(QUEUES.sourceScheduler, {});
      await terminateBlocked();
    } finally {
      await locker.query('COMMIT');
    }
    // Its queue lets a tick stay active for 300 s; a handler that failed is marked failed within moments.
    const job = await eventually(
      async () => {
        const { rows } = await locker.query<{ state: string; output: unknown }>(
          'SELECT state, output FROM pgboss.job WHERE id = $1',
          [jobId],
        );
        return rows[0]?.state === 'failed' ? rows[0] : undefined;
      },
      30_000,
      100,
    ).catch(() => {
      const { exitCode } = service!.child;
      throw new Error(
        `the tick was not marked failed; service exit code ${exitCode}:\n${service!.output().slice(-3000)}`,
      );
    });
    assert.match(JSON.stringify(job.output), /terminat/i);
    assert.equal(service.child.exitCode, null, service.output());
    assert.equal((await fetch(`http://127.0.0.1:${port}/api/health`)).status, 200);
  });
});
