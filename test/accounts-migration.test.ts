/**
 * Migration 0003 on a database that already has leads: every lead gets its account key, and the first
 * read of the accounts builds rollups equal to a grouping from scratch (test/oracles/accounts.ts).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { openDatabase } from '../src/db/client.ts';
import { migrate } from '../src/db/migrate.ts';
import { accountRepository } from '../src/modules/accounts/accounts.repository.ts';
import { migrationsBefore } from './helpers/migrations.ts';
import { oracleAccounts } from './oracles/accounts.ts';

test('0003_accounts_at_scale keys the leads already there and their accounts read as before', async () => {
  const dir = migrationsBefore('0003_accounts_at_scale');
  const database = await openDatabase({});
  try {
    await migratePglite(database.db as never, { migrationsFolder: dir });
    // An install from before: its free-mail list in place (here only the domain the leads use).
    await database.query(`INSERT INTO free_email_domains (domain) VALUES ('gmail.com')`);
    const [{ id: userId }] = await database.query<{ id: string }>(
      `INSERT INTO users (id, email, password_hash) VALUES (gen_random_uuid(), 'old@example.com', 'x') RETURNING id`,
    );
    await database.query(
      `INSERT INTO leads (id, user_id, email, company, job_title, status, source_url)
       SELECT gen_random_uuid(), $1, e, c, t, s, 'https://example.com/'
       FROM (VALUES ('a@acme.com', 'Acme Corp', 'CTO', 'NEW'), ('b@acme.com', 'Acme', 'CTO', 'VALID'),
                    ('c@gmail.com', 'Globex GmbH', 'Buyer', 'NEW'), (NULL, 'globex', 'Buyer', 'REPLIED'),
                    (NULL, NULL, 'Nobody', 'NEW')) AS v(e, c, t, s)`,
      [userId],
    );
    await migrate(database);

    const keys = await database.query<{ account_key: string | null }>(
      'SELECT account_key FROM leads ORDER BY account_key NULLS LAST',
    );
    assert.deepEqual(
      keys.map((k) => k.account_key),
      ['company:globex', 'company:globex', 'domain:acme.com', 'domain:acme.com', null],
    );
    const rows = await accountRepository(database.db).list(userId, {}, 'name', 50);
    const expected = await oracleAccounts(database.db, userId);
    assert.deepEqual(
      rows.map((r) => [r.account_key, r.name, r.lead_count, r.titles]).sort(),
      [
        ['company:globex', 'Globex GmbH', 2, ['Buyer']],
        ['domain:acme.com', 'Acme', 2, ['CTO']],
      ].sort(),
    );
    assert.equal(expected.length, 2);
    assert.deepEqual(rows.map((r) => r.lead_count).sort(), expected.map((a) => a.leadCount).sort());
  } finally {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
