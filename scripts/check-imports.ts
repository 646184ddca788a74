/**
 * The dependency rules of docs/CONVENTIONS.md ("Dependencies"), checked on the imports of `src/`:
 * `npm run lint` runs it and fails on the first finding, naming the file, the import and the rule.
 *
 *   node scripts/check-imports.ts [--stats] [root]     root defaults to this repository's src/
 *
 * `--stats` prints the figures the structure reviews compare (back-arrows, module loops, cross-module
 * repository imports, cross-module imports that bypass a module's index.ts) and exits 0.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** The top-level files: what wires modules together, so nothing below may import them. */
const TOP = new Set(['app.ts', 'deps.ts', 'runtime.ts', 'workers.ts', 'server.ts', 'worker.ts']);

export interface Edge {
  /** Both paths relative to the root, with `/` separators. */
  from: string;
  to: string;
  specifier: string;
}

export interface Violation extends Edge {
  rule: string;
}

/** `modules/x/...` → `modules/x`; `shared/...` → `shared`; a top-level file → `top`. */
export function areaOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'modules' && parts.length > 2) return `modules/${parts[1]}`;
  if (parts.length === 1) return TOP.has(parts[0]) ? 'top' : parts[0];
  return parts[0];
}

function listFiles(dir: string, root: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'migrations') listFiles(full, root, out);
    } else if (entry.name.endsWith('.ts')) {
      out.push(path.relative(root, full).split(path.sep).join('/'));
    }
  }
  return out;
}

/** Every relative import of every `.ts` file under root (static, re-exports, `import()`, `import type`). */
export function importEdges(root: string): Edge[] {
  const edges: Edge[] = [];
  for (const file of listFiles(root, root)) {
    const info = ts.preProcessFile(readFileSync(path.join(root, file), 'utf8'), true, true);
    for (const { fileName: specifier } of info.importedFiles) {
      if (!specifier.startsWith('.')) continue;
      const to = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
      if (to.startsWith('..')) continue;
      edges.push({ from: file, to, specifier });
    }
  }
  return edges;
}

const isRepository = (file: string) => /\.repository\.ts$/.test(file);
const isFace = (file: string) => /^modules\/[^/]+\/index\.ts$/.test(file);

/** The rule an edge breaks, or null. */
export function ruleBroken({ from, to }: Edge): string | null {
  const source = areaOf(from);
  const target = areaOf(to);
  if (source === target) return null;
  const lower = source === 'shared' || source === 'db';
  if (lower && (target.startsWith('modules/') || target === 'queue' || target === 'top')) {
    return `${source}/ imports no module, queue/ or top-level file (${target})`;
  }
  if (source === 'db' && target === 'shared') return 'db/ imports nothing of shared/ (shared builds on db)';
  if (source === 'queue' && (target.startsWith('modules/') || target === 'top')) {
    return `queue/ holds queue names only and imports no module (${target})`;
  }
  if (source.startsWith('modules/') && target.startsWith('modules/')) {
    if (isRepository(to)) return `a module never imports another module's repository (${target})`;
    if (!isFace(to)) return `a module imports another module only through its index.ts (${target}/index.ts)`;
  }
  return null;
}

/**
 * A face that re-exports its repository's functions would let other modules reach them "through any path"; its
 * row types may pass (`export type { SourceRow } from './sources.repository.ts'`).
 */
function faceLeaksRepository(root: string, edges: Edge[]): Violation[] {
  const leaks: Violation[] = [];
  const seen = new Set<string>();
  for (const edge of edges) {
    if (!isFace(edge.from) || !isRepository(edge.to) || seen.has(`${edge.from} ${edge.specifier}`)) continue;
    seen.add(`${edge.from} ${edge.specifier}`);
    const text = readFileSync(path.join(root, edge.from), 'utf8');
    const face = ts.createSourceFile(edge.from, text, ts.ScriptTarget.Latest);
    const leaks_ = face.statements.some(
      (st) =>
        ts.isExportDeclaration(st) &&
        st.moduleSpecifier !== undefined &&
        (st.moduleSpecifier as ts.StringLiteral).text === edge.specifier &&
        !st.isTypeOnly &&
        !(st.exportClause && ts.isNamedExports(st.exportClause) && st.exportClause.elements.every((e) => e.isTypeOnly)),
    );
    if (leaks_) leaks.push({ ...edge, rule: "a module's index.ts never exports its repository's functions" });
  }
  return leaks;
}

export function checkImports(root: string): Violation[] {
  const edges = importEdges(root);
  const violations: Violation[] = [];
  for (const edge of edges) {
    const rule = ruleBroken(edge);
    if (rule) violations.push({ ...edge, rule });
  }
  violations.push(...faceLeaksRepository(root, edges));
  return violations;
}

/** Strongly connected groups of two or more modules (Tarjan), each sorted, e.g. [["a", "b"]]. */
export function moduleLoops(edges: Edge[]): string[][] {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const a = areaOf(from);
    const b = areaOf(to);
    if (a === b || !a.startsWith('modules/') || !b.startsWith('modules/')) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a)!.add(b);
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w.slice('modules/'.length));
      } while (w !== v);
      if (group.length > 1) loops.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return loops;
}

/** The figures of a structure review (`node scripts/check-imports.ts --stats`). */
export function importStats(root: string) {
  const edges = importEdges(root);
  const cross = edges.filter((e) => {
    const [a, b] = [areaOf(e.from), areaOf(e.to)];
    return a !== b && a.startsWith('modules/') && b.startsWith('modules/');
  });
  const back = edges.filter((e) => {
    const [a, b] = [areaOf(e.from), areaOf(e.to)];
    if (a === 'db' && b === 'shared') return true;
    if (a === 'shared' || a === 'db') return b.startsWith('modules/') || b === 'queue' || b === 'top';
    return a === 'queue' && (b.startsWith('modules/') || b === 'top');
  });
  const pairs = (list: Edge[]) => [...new Set(list.map((e) => `${areaOf(e.from)} → ${areaOf(e.to)}`))].sort();
  const repo = cross.filter((e) => isRepository(e.to));
  const notFace = cross.filter((e) => !isFace(e.to));
  const depsInternals = edges.filter((e) => e.from === 'deps.ts' && areaOf(e.to).startsWith('modules/'));
  return {
    backArrowImports: back.length,
    backArrowFolderPairs: pairs(back),
    moduleLoops: moduleLoops(edges),
    crossModuleRepositoryImports: repo.map((e) => `${e.from} → ${e.to}`),
    crossModuleImportsNotThroughIndex: notFace.length,
    depsImportsOfModuleInternals: depsInternals.filter((e) => !isFace(e.to)).map((e) => e.to),
  };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const root = path.resolve(args.find((a) => !a.startsWith('-')) ?? path.join(import.meta.dirname, '..', 'src'));
  if (args.includes('--stats')) {
    console.log(JSON.stringify(importStats(root), null, 2));
  } else {
    const violations = checkImports(root);
    for (const v of violations) console.error(`${v.from}: import '${v.specifier}' breaks a rule: ${v.rule}`);
    if (violations.length) {
      console.error(`${violations.length} import(s) break the dependency rules (docs/CONVENTIONS.md, "Dependencies")`);
      process.exit(1);
    }
  }
}
