import crypto from 'node:crypto';
import fs from 'node:fs';
import pg from 'pg';
import { type Database, openDatabase } from '../../src/db/client.ts';
import { ensurePgliteTemplate, ensurePostgresTemplate, withDatabase } from './template.ts';
import './pg-warnings.ts';

export interface TestDatabase {
  database: Database;
  /** Set on PostgreSQL: the throwaway database's URL. */
  url?: string;
  drop(): Promise<void>;
}

export const testDatabaseKind = (): 'postgres' | 'pglite' => (process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite');

/**
 * A throwaway, migrated database: PGlite by default, PostgreSQL when TEST_DATABASE_URL is set. PGlite runs in its
 * worker thread (PGLITE_WORKER) with `pgliteWorker`, or for every test file with QUARRY_TEST_PGLITE_WORKER=1.
 */
export async function createTestDatabase(options: { pgliteWorker?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    const dump = process.env.QUARRY_TEST_PGLITE_DUMP ?? (await ensurePgliteTemplate());
    const database = await openDatabase({
      loadDataDir: new Blob([fs.readFileSync(dump)]),
      worker: options.pgliteWorker ?? process.env.QUARRY_TEST_PGLITE_WORKER === '1',
    });
    return { database, drop: async () => {} };
  }
  const template = process.env.QUARRY_TEST_PG_TEMPLATE ?? (await ensurePostgresTemplate(adminUrl));
  const name = `quarry_t_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        break;
      } catch (err) {
        // Two files cloning the template at the same instant: wait and try again.
        if (attempt > 20 || !/being accessed by other users/.test(String((err as Error).message))) throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  const url = withDatabase(adminUrl, name);
  const database = await openDatabase({ databaseUrl: url, poolSize: 10 });
  return {
    database,
    url,
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => c.end());
    },
  };
}
