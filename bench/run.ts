/**
 * `npm run bench`: measures the service against baselines taken in the same run and prints
 * PASS/FAIL against the figures the issues ask for. PostgreSQL: BENCH_DATABASE_URL, else
 * TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test (a scratch database is made).
 * Sections: `npm run bench -- foundation`, `npm run bench -- scraping` (default: all).
 */
import { benchFoundation } from './foundation.ts';
import { printTable, type Row } from './lib.ts';
import { benchScraping } from './scraping.ts';
import { benchMatching } from './matching.ts';

const sections: Record<string, () => Promise<Row[]>> = { foundation: benchFoundation, scraping: benchScraping, matching: benchMatching };
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
let failed = 0;
for (const [name, run] of Object.entries(sections)) {
  if (wanted.length && !wanted.includes(name)) continue;
  const rows = await run();
  printTable(name, rows);
  failed += rows.filter((r) => r.pass === false).length;
}
console.log(failed ? `\n${failed} figure(s) below target` : '\nall figures on target');
process.exit(0);
