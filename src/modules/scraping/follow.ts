/**
 * Which links a site crawl follows (markdown exports, docs/scraping.md "Markdown exports"): pure decisions over
 * URLs, unit-tested without a network. Path patterns are globs on the URL's path: `*` matches within one
 * path segment, `**` across segments (`/docs/**`, `/blog/*.html`); an exclude wins over an include.
 */
import type { FollowLinks } from './scraping.types.ts';

/**
 * A glob on a path as a matcher. It runs the glob as a set of positions over the path (a bit-parallel NFA, one
 * bit a position), so a test costs a few big-integer steps a character whatever the pattern: the backtracking
 * RegExp globs used to be took seconds on an 80-character path against `/**a**a**a**b`.
 */
export function compileGlob(glob: string): { test(path: string): boolean } {
  // Bit i: the glob's i-th piece is next. A run of stars is one piece; `**` anywhere in it crosses segments.
  const literal = new Map<string, bigint>();
  let star = 0n; // `*`: matches any character but `/` and stays
  let any = 0n; // `**`: matches any character and stays
  let bit = 1n;
  for (let i = 0; i < glob.length; i++, bit <<= 1n) {
    const c = glob[i]!;
    if (c !== '*') {
      literal.set(c, (literal.get(c) ?? 0n) | bit);
      continue;
    }
    let run = 1;
    for (; glob[i + 1] === '*'; i++) run++;
    if (run > 1) any |= bit;
    else star |= bit;
  }
  const accept = bit;
  const stars = star | any;
  // A star may match nothing: the piece after it is next too.
  const skip = (d: bigint) => d | ((d & stars) << 1n);
  const start = skip(1n);
  return {
    test(path: string): boolean {
      let d = start;
      for (let k = 0; k < path.length && d !== 0n; k++) {
        const c = path[k]!;
        d = skip((((literal.get(c) ?? 0n) & d) << 1n) | (d & (c === '/' ? any : stars)));
      }
      return (d & accept) !== 0n;
    },
  };
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
  const include = follow.includePaths.map(compileGlob);
  const exclude = follow.excludePaths.map(compileGlob);
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
