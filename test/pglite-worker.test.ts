import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { type Database, openDatabase, queryRows } from '../src/db/client.ts';
import { migrate } from '../src/db/migrate.ts';
import { users } from '../src/db/schema/index.ts';
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
