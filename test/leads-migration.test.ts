/**
 * The migration that turns never-validated VALID leads into NEW (README, Leads: VALID means validated):
 * a lead email validation has seen keeps its status, and the analytics counts follow the change.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { openDatabase } from '../src/db/client.ts';
import { migrate } from '../src/db/migrate.ts';
import { analyticsRepository } from '../src/modules/analytics/analytics.repository.ts';
import { migrationsBefore, migrationWith } from './helpers/migrations.ts';

test('VALID leads without a validation become NEW; validated ones and other statuses stay', async () => {
  const dir = migrationsBefore(migrationWith(`SET "status" = 'NEW' WHERE "status" = 'VALID'`));
  const database = await openDatabase({});
  try {
    await migratePglite(database.db as never, { migrationsFolder: dir });
    const [{ id: userId }] = await database.query<{ id: string }>(
      `INSERT INTO users (id, email, password_hash) VALUES (gen_random_uuid(), 'old@example.com', 'x') RETURNING id`,
    );
    const leads: Array<[string, string, boolean, string]> = [
      // email, status before, validated, status after
      ['scraped@acme.com', 'VALID', false, 'NEW'],
      ['created@acme.com', 'VALID', false, 'NEW'],
      ['checked@acme.com', 'VALID', true, 'VALID'],
      ['risky@acme.com', 'RISKY', true, 'RISKY'],
      ['sent@acme.com', 'CONTACTED', false, 'CONTACTED'],
      ['fresh@acme.com', 'NEW', false, 'NEW'],
    ];
    for (const [email, status, validated] of leads) {
      await database.query(
        `INSERT INTO leads (id, user_id, email, status, email_validation, validated_at, source_url)
         VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, 'https://example.com/')`,
        [
          userId,
          email,
          status,
          validated ? JSON.stringify({ status: status === 'RISKY' ? 'risky' : 'valid' }) : null,
          validated ? '2026-01-04T08:00:00Z' : null,
        ],
      );
    }
    const before = await analyticsRepository(database.db).pipeline(userId, {});
    assert.equal(before.byStatus.VALID, 3);

    await migrate(database);

    const rows = await database.query<{ email: string; status: string }>(
      'SELECT email, status FROM leads WHERE user_id = $1',
      [userId],
    );
    const statusOf = new Map(rows.map((r) => [r.email, r.status]));
    for (const [email, , , after] of leads) assert.equal(statusOf.get(email), after, email);
    const figures = await analyticsRepository(database.db).pipeline(userId, {});
    assert.equal(figures.byStatus.VALID, 1);
    assert.equal(figures.byStatus.NEW, 3);
    assert.equal(figures.totalLeads, leads.length);
  } finally {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
