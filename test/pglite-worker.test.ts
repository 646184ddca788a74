import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { loadConfig, pgliteInWorker } from '../src/config.ts';
import { type Database, openDatabase, pipelineStep, queryRows } from '../src/db/client.ts';
import { migrate } from '../src/db/migrate.ts';
import type { EmbeddedDatabase } from '../src/db/pglite-worker.ts';
import { users } from '../src/db/schema/index.ts';
import { createCredits } from '../src/modules/credits/index.ts';
import { systemClock } from '../src/shared/clock.ts';
import { isUniqueViolation, pgConstraint } from '../src/shared/db-errors.ts';

// The worker thread serves the embedded database only; PostgreSQL runs have nothing to check here.
const skip = process.env.TEST_DATABASE_URL ? 'PGLITE_WORKER concerns the embedded database only' : false;

describe('PGLITE_WORKER: the embedded database in a worker thread', { skip }, () => {
  const dirs = [
    fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-pgw-')),
    fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-pgi-')),
  ];
  let worker: Database;
  let inProcess: Database;

  before(async () => {
    worker = await openDatabase({ dataDir: dirs[0], worker: true });
    inProcess = await openDatabase({ dataDir: dirs[1], worker: false });
    await Promise.all([migrate(worker), migrate(inProcess)]);
  });
  after(async () => {
    await worker?.close();
    await inProcess?.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  const newUserId = '0192f1a0-0000-7000-8000-000000000002';
  const user = (email: string) => ({
    id: '0192f1a0-0000-7000-8000-000000000001',
    email,
    passwordHash: 'x',
    createdAt: new Date('2026-01-02T03:04:05.678Z'),
    updatedAt: new Date('2026-01-02T03:04:05.678Z'),
    consentUpdatedAt: new Date('2026-01-02T03:04:05.678Z'),
  });

  test('drizzle and raw queries answer the same values and JS types as PGlite in the process', async () => {
    const rows: unknown[][] = [];
    for (const database of [worker, inProcess]) {
      await database.db.insert(users).values(user('types@example.com'));
      const [row] = await database.db.select().from(users).where(eq(users.email, 'types@example.com'));
      const raw = await queryRows(
        database.db,
        sql`SELECT now() - now() AS zero, 2::int8 AS big, '{"a":[1]}'::jsonb AS j, ${new Date(0)}::timestamptz AS t, 'ab'::bytea AS b`,
      );
      rows.push([row, raw, await database.query('SELECT count(*)::int AS n FROM users')]);
    }
    assert.ok((rows[0]![0] as { createdAt: unknown }).createdAt instanceof Date);
    assert.deepEqual(rows[0], rows[1]);
  });

  test('a driver error keeps its SQLSTATE and constraint', async () => {
    const err = await worker.db
      .insert(users)
      .values(user('types@example.com'))
      .catch((e: unknown) => e);
    assert.ok(isUniqueViolation(err), String(err));
    assert.match(pgConstraint(err) ?? '', /users/);
  });

  test('a transaction commits or rolls back as a whole, and statements from outside wait for its end', async () => {
    await assert.rejects(
      worker.db.transaction(async (tx) => {
        await tx.update(users).set({ name: 'rolled back' });
        throw new Error('stop');
      }),
      /stop/,
    );
    let outsideSaw: string | null | undefined;
    await worker.db.transaction(async (tx) => {
      await tx.update(users).set({ name: 'committed' });
      // Issued while the transaction is open: it must see the committed state, not wait forever or see half of it.
      void worker.query<{ name: string | null }>('SELECT name FROM users').then((r) => (outsideSaw = r[0]?.name));
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(outsideSaw, undefined);
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(outsideSaw, 'committed');
  });

  /** COPY text: `from` … `to` - 1, with escapes, non-ASCII and lines of varying length. */
  const copyText = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, k) => `${from + k}\tname ✓ 日本 \\t ${'x'.repeat(k % 97)}\n`).join('');
  const copied = (database: Database) =>
    database.query<{ n: number; hash: string }>(
      `SELECT count(*)::int AS n, md5(string_agg(n || ':' || t, ',' ORDER BY n)) AS hash FROM copied`,
    );

  test('COPY FROM a blob runs in the worker, outside and inside a transaction, as in the process', async () => {
    const seen: unknown[] = [];
    for (const database of [worker, inProcess]) {
      const pglite = database.pglite!;
      await pglite.exec('CREATE TABLE copied (n int PRIMARY KEY, t text)');
      await pglite.exec(`COPY copied FROM '/dev/blob'`, { blob: new Blob([copyText(0, 3000)]) });
      // In a transaction: rolled back (its rows gone), then committed (through drizzle's handle, as the lead writer does).
      await pglite.transaction(async (tx) => {
        await tx.exec(`COPY copied FROM '/dev/blob'`, { blob: new Blob([copyText(3000, 4000)]) });
        assert.equal((await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM copied')).rows[0]!.n, 4000);
        await tx.rollback();
      });
      await database.db.transaction(async (tx) => {
        const client = (tx as unknown as { session: { client: Pick<EmbeddedDatabase, 'exec'> } }).session.client;
        await client.exec(`COPY copied FROM '/dev/blob'`, { blob: new Blob([copyText(4000, 4500)]) });
      });
      seen.push(await copied(database));
    }
    assert.equal((seen[0] as { n: number }[])[0]!.n, 3500);
    assert.deepEqual(seen[0], seen[1]);
  });

  test('an error inside a COPY keeps its SQLSTATE, and a transaction it broke rolls back', async () => {
    const bad = `${copyText(10_000, 10_100)}not a number\tx\n`;
    const errors: Array<{ code?: string; message?: string }> = [];
    for (const database of [worker, inProcess]) {
      const pglite = database.pglite!;
      const was = await copied(database);
      errors.push(
        await pglite.exec(`COPY copied FROM '/dev/blob'`, { blob: new Blob([bad]) }).then(
          () => assert.fail('a bad COPY was accepted'),
          (e: { code?: string; message?: string }) => ({ code: e.code, message: e.message }),
        ),
      );
      await assert.rejects(
        pglite.transaction(async (tx) => {
          await tx.exec(`COPY copied FROM '/dev/blob'`, { blob: new Blob([copyText(20_000, 20_010)]) });
          await tx.exec(`COPY copied FROM '/dev/blob'`, { blob: new Blob([bad]) });
        }),
        (e: { code?: string }) => e.code === '22P02',
      );
      assert.deepEqual(await copied(database), was, 'neither COPY left a row');
    }
    assert.equal(errors[0]!.code, '22P02');
    assert.deepEqual(errors[0], errors[1]);
  });

  test('a pipeline is one transaction: results in order; a failing statement rolls back all, the credits spend too', async () => {
    const credits = createCredits(
      loadConfig({ CREDITS_ENABLED: 'true', CREDITS_SIGNUP_GRANT: '1000', CREDITS_LOW_THRESHOLD: '100' }),
      systemClock,
    );
    const userId = user('').id;
    const state = (database: Database) =>
      database.query<{ balance: number; ledger: string }>(
        `SELECT b.balance, (SELECT string_agg(amount || '=' || balance_after, ',' ORDER BY id) FROM credit_transactions
          WHERE user_id = b.user_id) AS ledger FROM credit_balances b WHERE b.user_id = $1`,
        [userId],
      );
    const seen: unknown[] = [];
    for (const database of [worker, inProcess]) {
      await credits.openAccount(database.db, userId);
      const spend = (pages: number) => credits.spendStatement(database.db, userId, 'pages', pages, { reason: 'test' })!;
      const ok = await database.pipeline!([
        spend(10),
        pipelineStep(sql`SELECT 1 AS a`),
        pipelineStep(sql`SELECT ${'two'}::text AS b`),
        { sql: `SELECT 3 AS c; SELECT 4 AS d`, exec: true },
      ]);
      assert.ok('results' in ok);
      assert.deepEqual(
        ok.results.map((r) => r.rows[0]),
        [{ balance: 990 }, { a: 1 }, { b: 'two' }, { d: 4 }],
      );
      assert.deepEqual(await state(database), [{ balance: 990, ledger: '1000=1000,-10=990' }]);

      // The spend ran, then a statement failed: nothing stays, and the error keeps its SQLSTATE and constraint.
      const duplicate = database.db.insert(users).values(user('types@example.com')).toSQL();
      const err = await database.pipeline!([spend(10), duplicate]).catch((e: unknown) => e);
      assert.ok(isUniqueViolation(err), String(err));
      assert.match(pgConstraint(err) ?? '', /users/);
      assert.deepEqual(await state(database), [{ balance: 990, ledger: '1000=1000,-10=990' }]);

      // A step whose `expect` fails stops it: rolled back (the row inserted before it too), the step's index answered.
      const other = database.db
        .insert(users)
        .values({ ...user('pipeline@example.com'), id: newUserId })
        .toSQL();
      const crossing = 990 - 95; // below CREDITS_LOW_THRESHOLD: `spend` must decide on the alert
      assert.deepEqual(await database.pipeline!([other, spend(crossing)]), { stoppedAt: 1 });
      assert.deepEqual(await database.pipeline!([other, spend(5_000)]), { stoppedAt: 1 }, 'a short balance');
      assert.deepEqual(await database.pipeline!([other, pipelineStep(sql`SELECT 1`, 'none')]), { stoppedAt: 1 });
      assert.equal((await database.query('SELECT 1 FROM users WHERE id = $1', [newUserId])).length, 0);
      assert.deepEqual(await state(database), [{ balance: 990, ledger: '1000=1000,-10=990' }]);
      seen.push(await state(database));
    }
    assert.deepEqual(seen[0], seen[1]);
  });

  test('LISTEN/NOTIFY reaches listeners on the service thread until they unlisten', async () => {
    const got: string[] = [];
    const unlisten = await worker.pglite!.listen('pgw_test', (payload) => got.push(payload));
    await worker.query(`SELECT pg_notify('pgw_test', 'one')`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await unlisten();
    await worker.query(`SELECT pg_notify('pgw_test', 'two')`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(got, ['one']);
  });

  test('after close, statements fail as on a lost connection instead of hanging', async () => {
    const database = await openDatabase({
      dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-pgc-')),
      worker: true,
    });
    await database.close();
    await assert.rejects(database.query('SELECT 1'), (err: { code?: string }) => err.code === '08006');
  });
});

test('PGLITE_WORKER: `auto` by default (on with two cores or more), true/false force it', () => {
  const mode = (value: string | undefined, cores: number) =>
    pgliteInWorker(loadConfig(value === undefined ? {} : { PGLITE_WORKER: value }), cores);
  assert.equal(mode(undefined, 2), true, 'by default PGlite runs in its worker thread when there is a second core');
  assert.equal(mode(undefined, 1), false, 'on one core it stays in the service thread');
  assert.equal(mode('auto', 2), true);
  assert.equal(mode('auto', 1), false);
  assert.equal(mode('true', 1), true);
  assert.equal(mode('false', 8), false);
});
