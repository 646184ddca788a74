/**
 * `npm test`: builds the migrated template database once (PGlite, or PostgreSQL when
 * TEST_DATABASE_URL is set), then runs every *.test.ts file with node:test, each on its own copy.
 * Extra arguments are passed to `node --test` (e.g. a file to run alone).
 * The whole suite also measures line and branch coverage of src/ and prints it per folder (QUARRY_TEST_COVERAGE=0
 * turns it off, =1 on for a few files); .tmp/coverage/lcov.info has the details.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ourChromiumPids } from './helpers/browser.ts';
import { printCoverage } from './helpers/coverage.ts';
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
const coverage = process.env.QUARRY_TEST_COVERAGE ? process.env.QUARRY_TEST_COVERAGE === '1' : files.length === 0;
const lcov = path.join('.tmp', 'coverage', 'lcov.info');
if (coverage) fs.mkdirSync(path.dirname(lcov), { recursive: true });
const coverageArgs = [
  '--experimental-test-coverage',
  '--test-coverage-include=src/**',
  `--test-reporter=${path.join(import.meta.dirname, 'helpers', 'spec-reporter.ts')}`,
  '--test-reporter-destination=stdout',
  '--test-reporter=lcov',
  `--test-reporter-destination=${lcov}`,
];
// The whole suite leaves no Chromium behind (sessions, crawls, kill -9 tests): the ones running now are counted
// before it, and any other still running a few seconds after it fails the run.
const wholeSuite = files.length === 0;
const chromiumBefore = new Set(wholeSuite ? ourChromiumPids() : []);
const result = spawnSync(
  process.execPath,
  [
    // Fails a file whose process outlives its tests (helpers/exit-watchdog.ts) instead of hanging the suite.
    `--import=${path.join(import.meta.dirname, 'helpers', 'exit-watchdog.ts')}`,
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=180000',
    ...(coverage ? coverageArgs : []),
    ...args.filter((a) => a.startsWith('-')),
    // `**` also matches nested folders (test/scraping/).
    ...(files.length ? files : ['test/**/*.test.ts']),
  ],
  { stdio: 'inherit', env },
);
if (coverage) printCoverage(lcov);
let leftChromium: number[] = [];
if (wholeSuite) {
  for (let waited = 0; waited <= 5000; waited += 250) {
    leftChromium = ourChromiumPids().filter((pid) => !chromiumBefore.has(pid));
    if (!leftChromium.length) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  console.log(`Chromium processes of the service's browsers left after the suite: ${leftChromium.length}`);
  if (leftChromium.length) console.error(`left running: ${leftChromium.join(', ')}`);
}
process.exit(leftChromium.length ? 1 : (result.status ?? 1));
