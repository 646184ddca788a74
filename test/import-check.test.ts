/**
 * The dependency rules `npm run lint` enforces (scripts/check-imports.ts; docs/CONVENTIONS.md "Dependencies"):
 * a fixture tree with one violation of each rule, and the repository's own src/ with none.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { checkImports, importStats, moduleLoops } from '../scripts/check-imports.ts';

const fixture = path.join(import.meta.dirname, 'fixtures', 'import-check');
const script = path.join(import.meta.dirname, '..', 'scripts', 'check-imports.ts');

describe('import check', () => {
  test('finds each broken rule in the fixture tree, naming the file and the import', () => {
    const found = checkImports(fixture).map((v) => `${v.from} ${v.specifier} | ${v.rule}`);
    assert.deepEqual(found.sort(), [
      'db/client.ts ../queue/queues.ts | db/ imports no module, queue/ or top-level file (queue)',
      'db/schema.ts ../shared/util.ts | db/ imports nothing of shared/ (shared builds on db)',
      "modules/a/index.ts ./a.repository.ts | a module's index.ts never exports its repository's functions",
      "modules/b/b.service.ts ../a/a.repository.ts | a module never imports another module's repository (modules/a)",
      "modules/b/b.service.ts ../a/a.repository.ts | a module never imports another module's repository (modules/a)",
      'modules/b/b.service.ts ../a/a.service.ts | a module imports another module only through its index.ts ' +
        '(modules/a/index.ts)',
      'modules/c/c.service.ts ../b/b.service.ts | a module imports another module only through its index.ts ' +
        '(modules/b/index.ts)',
      'modules/c/c.service.ts ../outreach/outreach.service.ts | a module imports another module only through its ' +
        'index.ts (modules/outreach/index.ts)',
      'modules/outreach/outreach.service.ts ../a/a.service.ts | a module imports another module only through its ' +
        'index.ts (modules/a/index.ts)',
      'queue/queues.ts ../modules/a/index.ts | queue/ holds queue names only and imports no module (modules/a)',
      'shared/util.ts ../app.ts | shared/ imports no module, queue/ or top-level file (top)',
      'shared/util.ts ../modules/a/a.service.ts | shared/ imports no module, queue/ or top-level file (modules/a)',
    ]);
  });

  test('the figures count every cross-module import that bypasses a face', () => {
    assert.equal(importStats(fixture).crossModuleImportsNotThroughIndex, 6);
  });

  test('the command fails on the fixture and passes on src/', () => {
    const bad = spawnSync(process.execPath, [script, fixture], { encoding: 'utf8' });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /^shared\/util\.ts: import '\.\.\/app\.ts' breaks a rule: shared\/ imports no module/m);
    assert.match(bad.stderr, /12 import\(s\) break the dependency rules/);
    const good = spawnSync(process.execPath, [script], { encoding: 'utf8' });
    assert.equal(good.stderr, '');
    assert.equal(good.status, 0);
  });

  test('module loops are the groups of modules that reach each other', () => {
    const edge = (from: string, to: string) => ({ from, to, specifier: '' });
    const loops = moduleLoops([
      edge('modules/a/x.ts', 'modules/b/index.ts'),
      edge('modules/b/y.ts', 'modules/c/index.ts'),
      edge('modules/c/z.ts', 'modules/a/index.ts'),
      edge('modules/d/w.ts', 'modules/a/index.ts'),
      edge('shared/v.ts', 'modules/d/index.ts'),
    ]);
    assert.deepEqual(loops, [['a', 'b', 'c']]);
  });

  test('src/ has no back-arrow, no module loop and no cross-module repository import', () => {
    const stats = importStats(path.join(import.meta.dirname, '..', 'src'));
    assert.deepEqual(stats.backArrowFolderPairs, []);
    assert.deepEqual(stats.moduleLoops, []);
    assert.deepEqual(stats.crossModuleRepositoryImports, []);
    assert.equal(stats.crossModuleImportsNotThroughIndex, 0);
    assert.deepEqual(stats.depsImportsOfModuleInternals, []);
  });
});
