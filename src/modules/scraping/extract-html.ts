/**
 * STATIC extraction: the selector convention over the DOM cheerio parsed (CSS through css-select,
 * the engine under cheerio, with compiled selectors cached; XPath through `xpath-domhandler.ts` over the same
 * nodes). Raw values go through the shared `postprocess`, as DYNAMIC's do, so both give the same items for the
 * same page.
 *
 * Visibility here sees only what the markup says (the `hidden` attribute, `aria-hidden="true"`,
 * inline `display:none`, `visibility:hidden|collapse`, `opacity:0` on the element or an ancestor);
 * stylesheet rules are invisible to it. DYNAMIC uses the browser's computed style.
 */
import { type AnyNode, type CheerioAPI, type Element, load } from 'cheerio';
import { cssSelectAll, cssSelectOne } from './css-query.ts';
import {
  type ExtractOptions,
  type ExtractResult,
  postprocess,
  type RawExtraction,
  type RawItem,
  type RawValue,
} from './postprocess.ts';
import { CrawlError } from './scraping.types.ts';
import type { ParsedSelectors, Sel } from './selectors.ts';
import { evaluateXPath } from './xpath-domhandler.ts';

export type { ExtractOptions, ExtractResult } from './postprocess.ts';

type DomNode = AnyNode & { type: string; parent: AnyNode | null };
type WithChildren = { children: AnyNode[] };

/** What a selector matched: a value, and the element it came from (for visibility). */
interface Hit {
  value: string;
  attr?: string;
  element?: Element;
}

const isElement = (n: AnyNode): n is Element => {
  const t = (n as DomNode).type;
  return t === 'tag' || t === 'script' || t === 'style';
};

/** Subtrees whose text is not page text (and that browsers do not render as text). */
export const SKIP_TEXT = new Set(['script', 'style', 'noscript', 'template']);
/** Elements whose boundaries separate words (`<p>a</p><p>b</p>` is "a b", not "ab"). */
export const BLOCK_TAGS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'br',
  'caption',
  'dd',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'li',
  'main',
  'nav',
  'ol',
  'option',
  'p',
  'pre',
  'section',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'title',
  'tr',
  'ul',
]);

/**
 * Text of a node: text nodes in order, script/style/noscript/template skipped, spaces at block
 * boundaries. Iterative: unclosed tags can nest thousands deep.
 */
export function textOf(node: AnyNode): string {
  const parts: string[] = [];
  const stack: Array<AnyNode | null> = [node]; // null closes a block
  while (stack.length) {
    const n = stack.pop();
    if (n === null) {
      parts.push(' ');
      continue;
    }
    const t = (n as DomNode).type;
    if (t === 'text' || t === 'cdata') {
      parts.push((n as unknown as { data: string }).data);
      continue;
    }
    if (t === 'comment' || t === 'directive') continue;
    const name = isElement(n as AnyNode) ? (n as Element).name : '';
    if (SKIP_TEXT.has(name)) continue;
    if (BLOCK_TAGS.has(name)) {
      parts.push(' ');
      stack.push(null);
    }
    const kids = (n as unknown as WithChildren).children ?? [];
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
  }
  return parts.join('');
}

function inlineStyleHides(style: string): boolean {
  for (const decl of style.toLowerCase().split(';')) {
    const colon = decl.indexOf(':');
    if (colon < 0) continue;
    const prop = decl.slice(0, colon).trim();
    const value = decl
      .slice(colon + 1)
      .replace('!important', '')
      .trim();
    if (prop === 'display' && value === 'none') return true;
    if (prop === 'visibility' && (value === 'hidden' || value === 'collapse')) return true;
    if (prop === 'opacity' && parseFloat(value) === 0) return true;
  }
  return false;
}

/** False when the element or an ancestor is hidden by its markup (attributes and inline style). */
export function isVisibleByMarkup(element: Element): boolean {
  for (let n: AnyNode | null = element; n; n = (n as DomNode).parent) {
    if (!isElement(n)) continue;
    const a = n.attribs;
    if (a.hidden !== undefined || a['aria-hidden'] === 'true') return false;
    if (a.style && inlineStyleHides(a.style)) return false;
  }
  return true;
}

/** nextPage without `@attr` reads the link's href. */
const LINK_TAGS = new Set(['a', 'area', 'link']);

function elementValue(el: Element, attr: string | undefined, preferHref: boolean): RawValue {
  if (attr) return { value: el.attribs[attr.toLowerCase()] ?? '', attr };
  if (preferHref && LINK_TAGS.has(el.name) && el.attribs.href !== undefined)
    return { value: el.attribs.href, attr: 'href' };
  return { value: textOf(el) };
}

/** Everything `sel` matches under `context` (the document or an item element), in document order. */
function select(sel: Sel, context: AnyNode, preferHref = false): Hit[] {
  if (sel.kind === 'xpath') {
    return evaluateXPath(sel.expr, context).map((h) => {
      if (h.kind === 'element') return { ...elementValue(h.element, sel.attr, preferHref), element: h.element };
      if (h.kind === 'attr') return { value: h.value, attr: h.name, element: h.element };
      return { value: h.value, element: h.element };
    });
  }
  // A bare `@attr` reads the item element itself.
  if (sel.expr === '')
    return isElement(context) ? [{ ...elementValue(context, sel.attr, preferHref), element: context }] : [];
  return cssSelectAll(sel.expr, context).map((el) => ({ ...elementValue(el, sel.attr, preferHref), element: el }));
}

/** The first match with a non-blank value. */
function firstValue(sel: Sel, context: AnyNode): Hit | undefined {
  // Usually the first match has a value: find it without collecting every match.
  if (sel.kind === 'css' && sel.expr !== '') {
    const el = cssSelectOne(sel.expr, context);
    if (!el) return undefined;
    const hit = { ...elementValue(el, sel.attr, false), element: el };
    if (hit.value.trim()) return hit;
  }
  for (const hit of select(sel, context)) if (hit.value.trim()) return hit;
  return undefined;
}

const bodyOf = (root: AnyNode): AnyNode => cssSelectOne('body', root) ?? root;

/**
 * Extraction over a document cheerio already parsed (the crawler's `$`): no second parse. Throws
 * CrawlError('invalid_selector') naming the key when a selector does not compile.
 */
export function extractFromCheerio(
  $: CheerioAPI,
  parsed: ParsedSelectors,
  pageUrl: string,
  opts: ExtractOptions = {},
): ExtractResult {
  return extractFromDom($.root()[0], parsed, pageUrl, opts);
}

/** The same over a domhandler document (htmlparser2's `parseDocument`, Crawlee's `dom`), without cheerio. */
export function extractFromDom(
  root: AnyNode,
  parsed: ParsedSelectors,
  pageUrl: string,
  opts: ExtractOptions = {},
): ExtractResult {
  let key = 'item';
  try {
    return extract(root, parsed, pageUrl, opts, (k) => (key = k));
  } catch (err) {
    // Stack exhaustion on a pathological page is the page's fault, not the selector's.
    if (err instanceof CrawlError || err instanceof RangeError) throw err;
    throw new CrawlError('invalid_selector', `selectors.${key}: ${(err as Error).message}`);
  }
}

function extract(
  root: AnyNode,
  parsed: ParsedSelectors,
  pageUrl: string,
  opts: ExtractOptions,
  at: (key: string) => void,
): ExtractResult {
  const containers: AnyNode[] = parsed.item
    ? select(parsed.item, root).flatMap((h) => (h.element ? [h.element] : []))
    : [root];
  const items: RawItem[] = [];
  let seen: Set<AnyNode> | undefined;
  for (const container of containers) {
    // An item selector can match the same element twice (`//div | //div[@id]`).
    if (parsed.item && (seen ??= new Set()).has(container)) continue;
    seen?.add(container);
    const fields: Record<string, RawValue> = {};
    let emailElement: Element | undefined;
    for (const { key, sel } of parsed.fields) {
      at(key);
      const hit = firstValue(sel, container);
      if (!hit) continue;
      fields[key] = hit.attr ? { value: hit.value, attr: hit.attr } : { value: hit.value };
      if (key === 'email') emailElement = hit.element;
    }
    const visibilityOf = emailElement ?? (isElement(container) ? container : undefined);
    const item: RawItem = { fields, visible: visibilityOf ? isVisibleByMarkup(visibilityOf) : true };
    if (opts.collectText) item.text = textOf(isElement(container) ? container : bodyOf(root));
    items.push(item);
  }
  at('nextPage');
  const raw: RawExtraction = {
    items,
    nextPage: parsed.nextPage ? select(parsed.nextPage, root, true).map((h) => ({ value: h.value, attr: h.attr })) : [],
  };
  if (opts.collectText) raw.text = textOf(bodyOf(root));
  return postprocess(raw, parsed, pageUrl);
}

/**
 * Parses `html` with htmlparser2 (as Crawlee's CheerioCrawler does, ~3.5x faster than parse5)
 * and extracts from it.
 */
export function extractFromHtml(
  html: string,
  parsed: ParsedSelectors,
  pageUrl: string,
  opts: ExtractOptions = {},
): ExtractResult {
  const $ = load(html, { _useHtmlParser2: true } as Parameters<typeof load>[1]);
  return extractFromCheerio($, parsed, pageUrl, opts);
}
