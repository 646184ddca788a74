/**
 * `npm run bench`: measures the service against baselines taken in the same run and prints
 * PASS/FAIL against the figures the issues ask for; exits 1 when any figure is below its target.
 * PostgreSQL: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test
 * (a scratch database is made).
 * Sections: `npm run bench -- foundation`, `scraping`, `lead-insert`, `matching`, `accounts`, `events`, `analytics`,
 * `deliverability`, `outreach`, `browser`, `markdown`, `destinations`, `mcp`, `console` (default: all).
 */
import { benchAccounts } from './accounts.ts';
import { benchAnalytics } from './analytics.ts';
import { benchBrowser } from './browser.ts';
import { benchConsole } from './console.ts';
import { benchDeliverability } from './deliverability.ts';
import { benchDestinations } from './destinations.ts';
import { benchEvents } from './events.ts';
import { benchFoundation } from './foundation.ts';
import { benchLeadInsert } from './lead-insert.ts';
import { printTable, type Row } from './lib.ts';
import { benchMarkdown } from './markdown.ts';
import { benchMatching } from './matching.ts';
import { benchMcp } from './mcp.ts';
import { benchOutreach } from './outreach.ts';
import { benchScraping } from './scraping.ts';

const sections: Record<string, () => Promise<Row[]>> = {
  foundation: benchFoundation,
  scraping: benchScraping,
  'lead-insert': benchLeadInsert,
  matching: benchMatching,
  accounts: benchAccounts,
  events: benchEvents,
  analytics: benchAnalytics,
  deliverability: benchDeliverability,
  outreach: benchOutreach,
  browser: benchBrowser,
  markdown: benchMarkdown,
  destinations: benchDestinations,
  mcp: benchMcp,
  console: benchConsole,
};
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !(name in sections));
if (unknown.length) {
  console.error(`unknown bench section(s): ${unknown.join(', ')}; sections: ${Object.keys(sections).join(', ')}`);
  process.exit(2);
}
let failed = 0;
for (const [name, run] of Object.entries(sections)) {
  if (wanted.length && !wanted.includes(name)) continue;
  const rows = await run();
  printTable(name, rows);
  failed += rows.filter((r) => r.pass === false).length;
}
console.log(failed ? `\n${failed} figure(s) below target` : '\nall figures on target');
// A figure below its target fails the run, so a script or CI step can rely on the exit code.
process.exit(failed ? 1 : 0);
