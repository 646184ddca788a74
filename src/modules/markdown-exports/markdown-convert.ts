/**
 * HTML → markdown for exports (docs/scraping.md "Markdown exports"): mdream (its Rust build when the platform package is
 * installed, `@mdream/js` otherwise), tables as GFM, code blocks with their language, links and images made
 * absolute against the page's URL. With `onlyMainContent`, Mozilla Readability over linkedom keeps the article
 * and drops navigation, headers and footers; without it the whole body is kept (footers with contacts too).
 */
import { createRequire } from 'node:module';
import { htmlToMarkdown as jsHtmlToMarkdown } from '@mdream/js';
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

type Convert = (html: string, origin: string) => string;

/** The Rust engine (about 10× faster) when its prebuilt package for this platform is installed. */
function loadEngine(): { name: 'rust' | 'js'; convert: Convert } {
  try {
    const rust = createRequire(import.meta.url)(`@mdream/rust-${process.platform}-${process.arch}-gnu`) as {
      htmlToMarkdown(html: string, options: { origin?: string }): { markdown: string };
    };
    return { name: 'rust', convert: (html, origin) => rust.htmlToMarkdown(html, { origin }).markdown };
  } catch {
    return { name: 'js', convert: (html, origin) => jsHtmlToMarkdown(html, { origin }) };
  }
}

export const markdownEngine = loadEngine();

export interface ConvertedPage {
  title: string | null;
  markdown: string;
}

const TITLE = /<title[^>]*>([\s\S]*?)<\/title>/i;
const HEAD = /<head[\s>][\s\S]*?<\/head>/i;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", apos: "'", nbsp: ' ' };
const decode = (s: string) => s.replace(/&(amp|lt|gt|quot|#39|apos|nbsp);/g, (_m, e: string) => ENTITIES[e] ?? _m);

function titleOf(html: string): string | null {
  const m = TITLE.exec(html);
  const title = m ? decode(m[1]!.replace(/\s+/g, ' ').trim()) : '';
  return title || null;
}

/** The article of a page (Readability), or undefined when it finds none (the whole page is then converted). */
function mainContent(html: string, url: string): { title: string | null; html: string } | undefined {
  const { document } = parseHTML(html);
  // Readability resolves links against the document's base; linkedom has no URL of its own.
  if (!document.querySelector('base')) {
    const base = document.createElement('base');
    base.setAttribute('href', url);
    document.head?.prepend(base);
  }
  // keepClasses: `language-*` classes carry code blocks' languages.
  const article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
    keepClasses: true,
  }).parse();
  if (!article?.content) return undefined;
  return { title: article.title?.trim() || null, html: article.content };
}

/** One page's title and markdown. */
export function pageToMarkdown(html: string, url: string, onlyMainContent: boolean): ConvertedPage {
  const title = titleOf(html);
  const main = onlyMainContent ? mainContent(html, url) : undefined;
  // The <head> is not content (mdream would print the <title>); the title goes to the front matter.
  const body = main ? main.html : html.replace(HEAD, '');
  let markdown = markdownEngine.convert(body, url).trim();
  // Readability takes the page's heading as the article's title and drops it from the content: put it back.
  if (main?.title && !markdown.startsWith('#')) markdown = `# ${main.title}\n\n${markdown}`;
  return { title: title ?? main?.title ?? null, markdown };
}
