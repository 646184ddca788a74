/**
 * Line and branch coverage per folder of src/, from the lcov file node:test writes (`npm test` over the whole suite;
 * no threshold: the figures are for reading, docs/development.md).
 */
import fs from 'node:fs';

/** `src/modules/outreach/...` → `modules/outreach`, `src/shared/mail/x.ts` → `shared/mail`, `src/app.ts` → `(top)`. */
function folderOf(file: string): string {
  const parts = file.replace(/^.*?\bsrc\//, '').split('/');
  if (parts.length === 1) return '(top)';
  if (parts[0] === 'modules' || parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0]!;
}

interface Counts {
  lines: number;
  linesHit: number;
  branches: number;
  branchesHit: number;
}

export function coverageByFolder(lcov: string): Map<string, Counts> {
  const folders = new Map<string, Counts>();
  let current: Counts | undefined;
  for (const line of lcov.split('\n')) {
    const [key, value = ''] = line.split(':', 2) as [string, string?];
    if (key === 'SF') {
      const name = folderOf(line.slice(3));
      current = folders.get(name) ?? { lines: 0, linesHit: 0, branches: 0, branchesHit: 0 };
      folders.set(name, current);
    } else if (current && key === 'LF') current.lines += Number(value);
    else if (current && key === 'LH') current.linesHit += Number(value);
    else if (current && key === 'BRF') current.branches += Number(value);
    else if (current && key === 'BRH') current.branchesHit += Number(value);
  }
  return folders;
}

const pct = (hit: number, all: number) => (all ? `${((100 * hit) / all).toFixed(1)} %` : '-');

export function printCoverage(lcovFile: string): void {
  if (!fs.existsSync(lcovFile)) return;
  const folders = coverageByFolder(fs.readFileSync(lcovFile, 'utf8'));
  const total: Counts = { lines: 0, linesHit: 0, branches: 0, branchesHit: 0 };
  const rows = [...folders].sort(([a], [b]) => a.localeCompare(b));
  console.log(`\ncoverage of src/ per folder (lines, branches; details: ${lcovFile})`);
  for (const [name, c] of rows) {
    for (const k of Object.keys(total) as Array<keyof Counts>) total[k] += c[k];
    console.log(
      `  ${name.padEnd(28)} ${pct(c.linesHit, c.lines).padStart(8)} ${pct(c.branchesHit, c.branches).padStart(8)}`,
    );
  }
  console.log(
    `  ${'all'.padEnd(28)} ${pct(total.linesHit, total.lines).padStart(8)} ${pct(total.branchesHit, total.branches).padStart(8)}`,
  );
}
