/**
 * DYNAMIC extraction: one `page.evaluate` runs the selector convention inside the page (CSS with
 * querySelectorAll, XPath with document.evaluate, visibility from the computed style) and returns
 * raw values; the shared `postprocess` then cleans them exactly as STATIC's, so the same page
 * gives the same items in both.
 *
 * The page function is self-contained (Playwright sends its source to the page): it may use only
 * its argument and the page's globals, so its helpers live inside it, and its text walker mirrors
 * `textOf` in extract-html.ts (same skipped and block tags).
 */
import { errors, type Page } from 'playwright-core';
import { BLOCK_TAGS, SKIP_TEXT } from './extract-html.ts';
import { type ExtractOptions, type ExtractResult, postprocess, type RawExtraction } from './postprocess.ts';
import { CrawlError } from './scraping.types.ts';
import { type ParsedSelectors, parseSelector, type Sel } from './selectors.ts';

export type { ExtractOptions, ExtractResult } from './postprocess.ts';

interface InPageArgs {
  parsed: ParsedSelectors;
  collectText: boolean;
  skipText: string[];
  blockTags: string[];
}
type InPageResult = RawExtraction | { error: string };

// The few DOM shapes the page function touches (the project is compiled without the DOM lib).
interface PNode {
  nodeType: number;
  nodeValue: string | null;
  childNodes: ArrayLike<PNode>;
  parentElement: PElement | null;
}
interface PElement extends PNode {
  localName: string;
  getAttribute(name: string): string | null;
  hasAttribute(name: string): boolean;
  querySelectorAll(css: string): ArrayLike<PElement>;
  checkVisibility?: (options: { checkOpacity: boolean; checkVisibilityCSS: boolean }) => boolean;
}
interface PAttr extends PNode {
  name: string;
  value: string;
  ownerElement: PElement | null;
}
interface PDocument extends PNode {
  body: PElement | null;
  documentElement: PElement;
  querySelectorAll(css: string): ArrayLike<PElement>;
  evaluate(
    expr: string,
    context: PNode,
    ns: null,
    type: number,
    result: null,
  ): {
    snapshotLength: number;
    snapshotItem(i: number): PNode | null;
    stringValue: string;
  };
}
interface PWindow {
  document: PDocument;
  getComputedStyle(el: PElement): { display: string; visibility: string; opacity: string };
}
interface PHit {
  value: string;
  attr?: string;
  element?: PElement;
}

/** Runs in the page. Must not reference anything outside itself. */
function extractInPageFunction(args: InPageArgs): InPageResult {
  const win = globalThis as unknown as PWindow;
  const doc = win.document;
  // The page function cannot import: the tag lists of the HTML extractor arrive as arguments.
  const SKIP_TEXT = new Set(args.skipText);
  const BLOCK_TAGS = new Set(args.blockTags);
  const LINK_TAGS = new Set(['a', 'area', 'link']);

  const textOf = (node: PNode): string => {
    const parts: string[] = [];
    const stack: Array<PNode | null> = [node]; // null closes a block
    while (stack.length) {
      const n = stack.pop();
      if (n === null || n === undefined) {
        if (n === null) parts.push(' ');
        continue;
      }
      if (n.nodeType === 3 || n.nodeType === 4) {
        parts.push(n.nodeValue ?? '');
        continue;
      }
      if (n.nodeType !== 1 && n.nodeType !== 9 && n.nodeType !== 11) continue;
      const name = n.nodeType === 1 ? (n as PElement).localName.toLowerCase() : '';
      if (SKIP_TEXT.has(name)) continue;
      if (BLOCK_TAGS.has(name)) {
        parts.push(' ');
        stack.push(null);
      }
      for (let i = n.childNodes.length - 1; i >= 0; i--) stack.push(n.childNodes[i]);
    }
    return parts.join('');
  };

  const isVisible = (el: PElement): boolean => {
    for (let n: PElement | null = el; n; n = n.parentElement)
      if (n.getAttribute('aria-hidden') === 'true') return false;
    if (typeof el.checkVisibility === 'function')
      return el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
    for (let n: PElement | null = el; n; n = n.parentElement) {
      const cs = win.getComputedStyle(n);
      if (
        cs.display === 'none' ||
        cs.visibility === 'hidden' ||
        cs.visibility === 'collapse' ||
        parseFloat(cs.opacity) === 0
      )
        return false;
    }
    return true;
  };

  const elementValue = (el: PElement, attr: string | undefined, preferHref: boolean): PHit => {
    if (attr) return { value: el.getAttribute(attr) ?? '', attr, element: el };
    if (preferHref && LINK_TAGS.has(el.localName.toLowerCase()) && el.hasAttribute('href'))
      return { value: el.getAttribute('href') ?? '', attr: 'href', element: el };
    return { value: textOf(el), element: el };
  };

  const select = (sel: Sel, context: PNode, preferHref: boolean): PHit[] => {
    const hits: PHit[] = [];
    if (sel.kind === 'xpath') {
      let snapshot: ReturnType<PDocument['evaluate']>;
      try {
        snapshot = doc.evaluate(sel.expr, context, null, 7 /* ORDERED_NODE_SNAPSHOT_TYPE */, null);
      } catch (err) {
        // Not a node-set (`string(//h1)`): its string value.
        if ((err as Error).name !== 'TypeError') throw err;
        return [{ value: doc.evaluate(sel.expr, context, null, 2 /* STRING_TYPE */, null).stringValue }];
      }
      for (let i = 0; i < snapshot.snapshotLength; i++) {
        const node = snapshot.snapshotItem(i);
        if (!node) continue;
        if (node.nodeType === 1) hits.push(elementValue(node as PElement, sel.attr, preferHref));
        else if (node.nodeType === 2) {
          const a = node as PAttr;
          hits.push({ value: a.value, attr: a.name, ...(a.ownerElement ? { element: a.ownerElement } : {}) });
        } else if (node.nodeType === 3 || node.nodeType === 4)
          hits.push({ value: node.nodeValue ?? '', ...(node.parentElement ? { element: node.parentElement } : {}) });
        else if (node.nodeType === 9)
          hits.push(elementValue((node as PDocument).documentElement, sel.attr, preferHref));
      }
      return hits;
    }
    if (sel.expr === '') return context.nodeType === 1 ? [elementValue(context as PElement, sel.attr, preferHref)] : [];
    const found = (context as PElement | PDocument).querySelectorAll(sel.expr);
    for (let i = 0; i < found.length; i++) hits.push(elementValue(found[i], sel.attr, preferHref));
    return hits;
  };

  const { parsed, collectText } = args;
  let key = 'item';
  try {
    const containers: PNode[] = parsed.item
      ? [...new Set(select(parsed.item, doc, false).flatMap((h) => (h.element ? [h.element] : [])))]
      : [doc];
    const body = doc.body ?? doc.documentElement;
    const items: RawExtraction['items'] = [];
    for (const container of containers) {
      const fields: Record<string, { value: string; attr?: string }> = {};
      let emailElement: PElement | undefined;
      for (const field of parsed.fields) {
        key = field.key;
        const hit = select(field.sel, container, false).find((h) => h.value.trim() !== '');
        if (!hit) continue;
        fields[field.key] = hit.attr ? { value: hit.value, attr: hit.attr } : { value: hit.value };
        if (field.key === 'email') emailElement = hit.element;
      }
      const visibilityOf = emailElement ?? (container.nodeType === 1 ? (container as PElement) : undefined);
      const item: RawExtraction['items'][number] = { fields, visible: visibilityOf ? isVisible(visibilityOf) : true };
      if (collectText) item.text = textOf(container.nodeType === 1 ? container : body);
      items.push(item);
    }
    key = 'nextPage';
    const nextPage = parsed.nextPage
      ? select(parsed.nextPage, doc, true).map((h) => (h.attr ? { value: h.value, attr: h.attr } : { value: h.value }))
      : [];
    const raw: RawExtraction = { items, nextPage };
    if (collectText) raw.text = textOf(body);
    return raw;
  } catch (err) {
    return { error: `selectors.${key}: ${(err as Error).message}` };
  }
}

/**
 * Extracts from the page as rendered now (the crawler waits for `waitFor` first). Throws
 * CrawlError('invalid_selector') naming the key when the browser rejects a selector.
 */
export async function extractInPage(
  page: Page,
  parsed: ParsedSelectors,
  pageUrl: string,
  opts: ExtractOptions = {},
): Promise<ExtractResult> {
  const raw = await page.evaluate(extractInPageFunction, {
    parsed,
    collectText: !!opts.collectText,
    skipText: [...SKIP_TEXT],
    blockTags: [...BLOCK_TAGS],
  });
  if ('error' in raw) throw new CrawlError('invalid_selector', raw.error);
  return postprocess(raw, parsed, pageUrl);
}

/**
 * Waits until `sel` (CSS or XPath; an `@attr` suffix is ignored) is in the DOM. Attached, not
 * visible: a hidden element is still content to extract. False on timeout.
 */
export async function waitForSelector(page: Page, sel: Sel | string, timeoutMs: number): Promise<boolean> {
  const s = typeof sel === 'string' ? parseSelector(sel, 'DYNAMIC') : sel;
  if (!s.expr) return true;
  try {
    await page.waitForSelector(s.kind === 'xpath' ? `xpath=${s.expr}` : s.expr, {
      state: 'attached',
      timeout: timeoutMs,
    });
    return true;
  } catch (err) {
    if (err instanceof errors.TimeoutError) return false;
    throw err;
  }
}
