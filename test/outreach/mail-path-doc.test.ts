// docs/architecture-mail-path.md traces an outreach mail through the code: every file and function it names exists,
// so the trace cannot silently go stale when code moves.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '..', '..');
const doc = fs.readFileSync(path.join(root, 'docs', 'architecture-mail-path.md'), 'utf8');
/** The rows of the path's table: `| # | hop | \`function\` | \`file\` | change |`. */
const rows = [...doc.matchAll(/^\| (\d+) \| [^\n]*\| `(\w+)` \| `([^`]+)` \| [^|\n]+ \|$/gm)].map((m) => ({
  step: Number(m[1]),
  fn: m[2]!,
  file: m[3]!,
}));

test('the mail path table lists its hops in order, from the enroll route to the wire', () => {
  assert.ok(rows.length >= 20, `found ${rows.length} rows`);
  assert.deepEqual(
    rows.map((r) => r.step),
    rows.map((_, i) => i + 1),
  );
  assert.equal(rows[0]!.fn, 'outreachCampaignRoutes');
  assert.equal(rows.at(-1)!.fn, 'deliverMail');
});

test('every file and function the mail path names exists', () => {
  for (const { step, fn, file } of rows) {
    const full = path.join(root, file);
    assert.ok(fs.existsSync(full), `hop ${step}: ${file} does not exist`);
    const source = fs.readFileSync(full, 'utf8');
    const defined = new RegExp(`(?:function\\s+|const\\s+|async\\s+|^\\s+)${fn}\\s*[(=:<]`, 'm');
    assert.match(source, defined, `hop ${step}: ${fn} is not defined in ${file}`);
  }
});

test('the last hop hands the mail to SMTP', () => {
  const last = rows.at(-1)!;
  assert.match(fs.readFileSync(path.join(root, last.file), 'utf8'), /transport\.sendMail\(/);
});
