/**
 * Which links a site crawl follows (markdown exports, docs/scraping.md "Markdown exports"): pure decisions over
 * URLs, unit-tested without a network. Path patterns are globs on the URL's path: `*` matches within one
 * path segment, `**` across segments (`/docs/**`, `/blog/*.html`); an exclude wins over an include.
 */
import type { FollowLinks } from './scraping.types.ts';

const escapeRe = (s: string) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

/** A glob on a path as an anchored RegExp (no user regex: nothing that can backtrack for ever). */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      out += '.*';
      i++;
    } else if (c === '*') out += '[^/]*';
    else out += escapeRe(c);
  }
  return new RegExp(`^${out}$`);
}

/** The host a "same site" check compares: without a leading `www.`, lower-cased. */
const siteOf = (u: URL) => u.hostname.toLowerCase().replace(/^www\./, '');

export interface LinkPolicy {
  /** Whether the link `url` found on a page at `depth` is followed. */
  follows(url: URL, depth: number): boolean;
  /** Whether a URL named by the site itself (a sitemap entry) is taken. */
  takes(url: URL): boolean;
}

export function linkPolicy(start: URL, follow: FollowLinks): LinkPolicy {
  const include = follow.includePaths.map(globToRegExp);
  const exclude = follow.excludePaths.map(globToRegExp);
  const site = siteOf(start);
  const takes = (url: URL) => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    if (follow.sameSiteOnly && siteOf(url) !== site) return false;
    if (exclude.some((re) => re.test(url.pathname))) return false;
    return include.length === 0 || include.some((re) => re.test(url.pathname));
  };
  return { takes, follows: (url, depth) => depth + 1 <= follow.maxDepth && takes(url) };
}

/** `<loc>` entries of a sitemap or sitemap index (XML entities of URLs decoded). */
export function sitemapLocations(xml: string): { pages: string[]; sitemaps: string[] } {
  const isIndex = /<sitemapindex[\s>]/i.test(xml);
  const locs = [...xml.matchAll(/<loc>\s*([^<]+?)\s*<\/loc>/gi)].map((m) =>
    m[1]!
      .replace(/&amp;/g, '&')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"'),
  );
  return isIndex ? { pages: [], sitemaps: locs } : { pages: locs, sitemaps: [] };
}
