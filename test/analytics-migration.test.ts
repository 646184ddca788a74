/**
 * The migration that adds the analytics lead counts, on a database that already has leads: they are
 * counted as if the triggers had seen them written (test/oracles/analytics.ts).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { openDatabase } from '../src/db/client.ts';
import { migrate } from '../src/db/migrate.ts';
import { analyticsRepository } from '../src/modules/analytics/analytics.repository.ts';
import { migrationsBefore, migrationWith } from './helpers/migrations.ts';
import { type ModelLead, pipeline } from './oracles/analytics.ts';

test('leads from before the analytics migration are in its counts', async () => {
  const dir = migrationsBefore(migrationWith('CREATE TABLE "lead_stat_deltas"'));
  const database = await openDatabase({});
  try {
    await migratePglite(database.db as never, { migrationsFolder: dir });
    const [{ id: userId }] = await database.query<{ id: string }>(
      `INSERT INTO users (id, email, password_hash) VALUES (gen_random_uuid(), 'old@example.com', 'x') RETURNING id`,
    );
    const model: Array<ModelLead & { at: string }> = [
      ['2026-01-03T23:59:00Z', 'NEW', true, 'valid', '2026-01-04'],
      ['2026-01-04T00:00:00Z', 'CONTACTED', true, 'risky', '2026-01-05'],
      ['2026-01-04T10:00:00Z', 'CONVERTED', false],
      ['2026-01-09T10:00:00Z', 'REPLIED', true],
      ['2026-01-09T11:00:00Z', 'VALID', true, 'unknown', '2026-01-09'],
    ].map(([at, status, email, validation, validatedDay], i) => ({
      id: String(i),
      at: at as string,
      day: (at as string).slice(0, 10),
      status: status as ModelLead['status'],
      email: email as boolean,
      validation: validation as ModelLead['validation'],
      validatedDay: validatedDay as string | undefined,
      source: null,
      project: null,
    }));
    for (const l of model) {
      await database.query(
        `INSERT INTO leads (id, user_id, email, status, email_validation, validated_at, created_at)
         VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6)`,
        [
          userId,
          l.email ? `${l.id}@example.com` : null,
          l.status,
          l.validation ? JSON.stringify({ status: l.validation }) : null,
          l.validatedDay ? `${l.validatedDay}T08:00:00Z` : null,
          l.at,
        ],
      );
    }
    await migrate(database);

    const repo = analyticsRepository(database.db);
    for (const w of [{}, { from: '2026-01-04', to: '2026-01-04' }, { from: '2026-01-05' }]) {
      const figures = await repo.pipeline(userId, w);
      const expected = pipeline(model, w);
      assert.equal(figures.totalLeads, expected.totalLeads, JSON.stringify(w));
      assert.deepEqual(figures.funnel, expected.funnel);
      assert.deepEqual(figures.emailValidation, expected.emailValidation);
    }
    const days = await repo.activity(userId, { from: '2026-01-03', to: '2026-01-05' });
    assert.deepEqual(
      days.map((d) => [d.date, d.leadsCreated, d.leadsValidated]),
      [
        ['2026-01-03', 1, 0],
        ['2026-01-04', 2, 1],
        ['2026-01-05', 0, 1],
      ],
    );
  } finally {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
