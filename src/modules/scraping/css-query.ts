/**
 * CSS for STATIC sources: css-select (the engine under cheerio) with compiled selectors cached,
 * about 5x faster than `$(el).find(css)`, which recompiles the selector on every call (250 calls
 * for a page of 50 items with 5 fields). Validation compiles with the same engine.
 */
import type { AnyNode, Element } from 'cheerio';
import { compile, selectAll, selectOne } from 'css-select';

type Query = ReturnType<typeof compile<AnyNode, Element>>;
const cache = new Map<string, Query>();

/** The compiled selector; throws on a selector css-select does not accept. */
export function compileCss(css: string): Query {
  let query = cache.get(css);
  if (!query) {
    query = compile<AnyNode, Element>(css, { xmlMode: false });
    if (cache.size > 500) cache.clear();
    cache.set(css, query);
  }
  return query;
}

/** Descendants of `context` matching `css`, in document order. */
export const cssSelectAll = (css: string, context: AnyNode): Element[] =>
  selectAll<AnyNode, Element>(compileCss(css), context, { xmlMode: false });

/**
 * The first descendant of `context` matching `css`. selectOne recurses once per level of nesting;
 * on a page nested thousands deep (unclosed tags) the iterative selectAll answers instead.
 */
export function cssSelectOne(css: string, context: AnyNode): Element | null {
  try {
    return selectOne<AnyNode, Element>(compileCss(css), context, { xmlMode: false });
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return cssSelectAll(css, context)[0] ?? null;
  }
}
