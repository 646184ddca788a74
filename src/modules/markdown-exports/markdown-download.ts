/**
 * The files of a download (docs/scraping.md "Markdown exports"): a ZIP of one `.md` per page, each opening with YAML
 * front matter (url, title, fetchedAt, depth), or one llms-full.txt-style file of every page in turn.
 */
import { strToU8, Zip, ZipDeflate } from 'fflate';
import type { MarkdownPageRow } from './markdown-exports.repository.ts';

/** A YAML scalar: JSON strings are valid double-quoted YAML. */
const yaml = (value: string | number | null) => (value === null ? 'null' : JSON.stringify(value));

export function frontMatter(page: MarkdownPageRow): string {
  return [
    '---',
    `url: ${yaml(page.url)}`,
    `title: ${yaml(page.title)}`,
    `fetchedAt: ${yaml(page.fetchedAt.toISOString())}`,
    `depth: ${page.depth}`,
    '---',
    '',
  ].join('\n');
}

/** A page's path in the ZIP: host/path, `index.md` for a folder, the query kept in the name; unique. */
export function zipPathOf(url: string, taken: Set<string>): string {
  const u = new URL(url);
  let path = u.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // A malformed escape stays as it is (made safe below).
  }
  if (path.endsWith('/')) path += 'index';
  path = path.replace(/\.(html?|php|aspx?)$/i, '');
  if (u.search) path += `_${u.search.slice(1)}`;
  const safe = `${u.host}/${path}`
    .split('/')
    .map((s) => s.replace(/[^\w.-]+/g, '_').replace(/^\.+/, '_'))
    .filter(Boolean)
    .join('/');
  let name = `${safe}.md`;
  for (let n = 2; taken.has(name); n++) name = `${safe}-${n}.md`;
  taken.add(name);
  return name;
}

/** The ZIP, streamed as it is built (pages are read in batches). */
export async function* zipOf(pages: AsyncIterable<MarkdownPageRow>): AsyncGenerator<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let failed: Error | undefined;
  const zip = new Zip((error, chunk) => {
    if (error) failed = error;
    else chunks.push(chunk);
  });
  const taken = new Set<string>();
  for await (const page of pages) {
    const file = new ZipDeflate(zipPathOf(page.url, taken), { level: 6 });
    zip.add(file);
    file.push(strToU8(`${frontMatter(page)}\n${page.markdown ?? ''}\n`), true);
    if (failed) throw failed;
    yield* chunks.splice(0);
  }
  zip.end();
  if (failed) throw failed;
  yield* chunks.splice(0);
}

/** llms-full.txt style: each page as a section with its title and source URL. */
export async function* singleFileOf(pages: AsyncIterable<MarkdownPageRow>): AsyncGenerator<string> {
  let first = true;
  for await (const page of pages) {
    const head = `# ${page.title ?? page.url}\n\nSource: ${page.url}\n\n`;
    yield `${first ? '' : '\n\n---\n\n'}${head}${page.markdown ?? ''}\n`;
    first = false;
  }
}
