import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { warnOnAsciiOnlyCaseFolding } from '../src/runtime.ts';
import { createTestDatabase, type TestDatabase, testDatabaseKind } from './helpers/db.ts';
import { withDatabase } from './helpers/template.ts';

let testDb: TestDatabase;
before(async () => {
  testDb = await createTestDatabase();
});
after(async () => {
  await testDb?.database.close();
  await testDb?.drop();
});

const recorder = () => {
  const lines: string[] = [];
  return { lines, logger: { warn: (msg: string) => void lines.push(msg) } as never };
};

describe('startup check of lower() case folding', () => {
  test('a UTF-8 database folds Ü: no warning', async () => {
    const { lines, logger } = recorder();
    assert.equal(await warnOnAsciiOnlyCaseFolding(testDb.database, logger), true);
    assert.deepEqual(lines, []);
  });

  test('a database created with LOCALE C folds ASCII only: one warning naming a UTF-8 locale', {
    skip: testDatabaseKind() !== 'postgres' && 'needs PostgreSQL',
  }, async () => {
    const adminUrl = process.env.TEST_DATABASE_URL!;
    const name = `quarry_c_${crypto.randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE "${name}" TEMPLATE template0 LOCALE 'C' ENCODING 'UTF8'`);
      const client = new pg.Client({ connectionString: withDatabase(adminUrl, name) });
      await client.connect();
      try {
        const { lines, logger } = recorder();
        const database = { query: async (text: string) => (await client.query(text)).rows };
        assert.equal(await warnOnAsciiOnlyCaseFolding(database as never, logger), false);
        assert.equal(lines.length, 1);
        assert.match(lines[0]!, /case-insensitive matching and account grouping fold only ASCII/);
        assert.match(lines[0]!, /UTF-8 locale \(e\.g\. C\.UTF-8 or en_US\.UTF-8\)/);
      } finally {
        await client.end();
      }
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => admin.end());
    }
  });
});
