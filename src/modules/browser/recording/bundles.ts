/**
 * rrweb's browser bundles, read once from node_modules and inlined: the recorder into pages, the player into the
 * replay page. Nothing is loaded from a CDN.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const distOf = (pkg: string) => path.dirname(require.resolve(pkg));
// Their exports map hides the UMD builds; they sit next to the main entry.
const read = (pkg: string, file: string) =>
  fs.readFileSync(path.join(distOf(pkg), file), 'utf8').replace(/\n\/[/*]# sourceMappingURL=\S+(\s*\*\/)?\s*$/, '\n');

let cache: { record: string; player: string; playerCss: string } | undefined;

/** `rrwebRecord` (record.umd.min.cjs), `rrwebPlayer` and its CSS: UMD builds with no imports of their own. */
export function rrwebBundles() {
  cache ??= {
    record: read('@rrweb/record', 'record.umd.min.cjs'),
    player: read('rrweb-player', 'rrweb-player.umd.min.cjs'),
    playerCss: read('rrweb-player', 'style.min.css'),
  };
  return cache;
}

/**
 * Runs a UMD bundle in a scope of its own: a page's `define`, `module` or `exports` neither captures it nor is
 * touched, and the bundle's global lands on `holder`, not on the page's window.
 */
export const isolatedUmd = (bundle: string, globalName: string) =>
  `(function(){var holder={};(function(){var exports,module,define;\n${bundle}\n}).call(holder);return holder[${JSON.stringify(globalName)}];})()`;
