/**
 * A start-up fast path for Node's ESM resolver (docs/scaling-out.md "Start-up"). Node 24 reads the nearest package.json again
 * for every module it resolves, and parses its whole `exports` map each time (nodejs/node#58126): drizzle-orm's
 * is 179 KB, so its 112 modules cost over a second and most of the start's garbage collection. For a relative
 * `.js` import made by a module inside node_modules, the answer is simple (the URL next to the importer; ESM when
 * the nearest package.json says `"type": "module"`), so this hook gives it from a per-directory cache and leaves
 * every other resolution, and every `require`, to Node.
 */
import fs from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

type Format = 'module' | 'commonjs';

/** The format Node gives a `.js` file in `dir`: from the nearest package.json's `type` (commonjs without one). */
function formatOf(dir: string, cache: Map<string, Format>): Format {
  const visited: string[] = [];
  let format: Format | undefined;
  for (let current = dir; format === undefined; ) {
    format = cache.get(current);
    if (format !== undefined) break;
    visited.push(current);
    try {
      const { type } = JSON.parse(fs.readFileSync(path.join(current, 'package.json'), 'utf8')) as { type?: string };
      format = type === 'module' ? 'module' : 'commonjs';
    } catch {
      const parent = path.dirname(current);
      if (parent === current) format = 'commonjs';
      current = parent;
    }
  }
  for (const d of visited) cache.set(d, format);
  return format;
}

export function installResolutionFastPath(): void {
  const formats = new Map<string, Format>();
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL;
      if (
        parent?.startsWith('file:') &&
        parent.includes('/node_modules/') &&
        (specifier.startsWith('./') || specifier.startsWith('../')) &&
        specifier.endsWith('.js') &&
        context.conditions?.includes('import')
      ) {
        const url = new URL(specifier, parent);
        // Node would fail with its own error for a missing file: leave those to it.
        const file = fileURLToPath(url);
        if (fs.existsSync(file))
          return { url: url.href, format: formatOf(path.dirname(file), formats), shortCircuit: true };
      }
      return nextResolve(specifier, context);
    },
  });
}
