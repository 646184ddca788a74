/**
 * `npm test`: builds the migrated template database once (PGlite, or PostgreSQL when
 * TEST_DATABASE_URL is set), then runs every *.test.ts file with node:test, each on its own copy.
 * Extra arguments are passed to `node --test` (e.g. a file to run alone).
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { ensurePgliteTemplate, ensurePostgresTemplate } from './helpers/template.ts';

const env = { ...process.env };
if (process.env.TEST_DATABASE_URL) {
  env.QUARRY_TEST_PG_TEMPLATE = await ensurePostgresTemplate(process.env.TEST_DATABASE_URL);
  console.log(
    `tests on PostgreSQL (${new URL(process.env.TEST_DATABASE_URL).host}), template ${env.QUARRY_TEST_PG_TEMPLATE}`,
  );
} else {
  env.QUARRY_TEST_PGLITE_DUMP = await ensurePgliteTemplate();
  console.log('tests on embedded PGlite');
}

const args = process.argv.slice(2);
const files = args.filter((a) => !a.startsWith('-'));
const concurrency = process.env.TEST_CONCURRENCY ?? String(Math.max(2, os.availableParallelism()));
const result = spawnSync(
  process.execPath,
  [
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=180000',
    ...args.filter((a) => a.startsWith('-')),
    // `**` also matches nested folders (test/scraping/).
    ...(files.length ? files : ['test/**/*.test.ts']),
  ],
  { stdio: 'inherit', env },
);
process.exit(result.status ?? 1);
