/**
 * The one post-processing step shared by every extractor (STATIC over cheerio, DYNAMIC in the
 * browser, API over JSON), so that the same page gives the same items whatever fetched it:
 * whitespace collapsed and trimmed, `mailto:`/`tel:` stripped, URLs resolved, `fullName` split,
 * empty values and empty items dropped.
 */
import type { ExtractedItem } from './scraping.types.ts';
import { isLeadFieldKey, type ParsedSelectors } from './selectors.ts';

/** A value as an extractor found it: the text, or the attribute `attr`. */
export interface RawValue {
  value: string;
  attr?: string;
}

export interface RawItem {
  /** First non-empty raw value per field key. */
  fields: Record<string, RawValue>;
  visible: boolean;
  text?: string;
}

/** What an extractor hands to `postprocess`. */
export interface RawExtraction {
  items: RawItem[];
  /** Values the nextPage selector yielded (hrefs, or text for JSON). */
  nextPage: RawValue[];
  text?: string;
}

export interface ExtractResult {
  items: ExtractedItem[];
  /** Absolute http(s) URLs of the next page(s), without fragment, never the page itself. */
  nextPageUrls: string[];
  /** The page's visible text (only with `collectText`). */
  text?: string;
}

export interface ExtractOptions {
  /** Collect the page's and each item's text (AI profile extraction). */
  collectText?: boolean;
}

/** A field longer than this is cut: a selector that matches a whole page must not store the page. */
export const MAX_VALUE_LENGTH = 2000;
export const MAX_PAGE_TEXT = 20_000;

/** Attributes whose values are URLs: resolved against the page for custom fields and nextPage. */
const URL_ATTRS = new Set(['href', 'src']);

/** Collapses runs of whitespace (including non-breaking spaces) into one space and trims. */
export const collapseWhitespace = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** `mailto:a@b.c?subject=x` → `a@b.c`; `tel:+1 555` → `+1 555`; anything else unchanged. */
export function stripContactScheme(value: string): { value: string; stripped: boolean } {
  const m = /^(mailto|tel|callto):/i.exec(value);
  if (!m) return { value, stripped: false };
  let rest = value.slice(m[0].length);
  if (m[1].toLowerCase() === 'mailto') rest = rest.split('?')[0];
  try {
    rest = decodeURIComponent(rest);
  } catch {
    // a stray % is kept as written
  }
  return { value: rest.trim(), stripped: true };
}

/** The absolute http(s) URL for `value` on `pageUrl`, or undefined. */
export function resolveHttpUrl(value: string, pageUrl: string): string | undefined {
  try {
    const url = new URL(value, pageUrl);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

function cleanValue(raw: RawValue, pageUrl: string, isCustom: boolean): string {
  const collapsed = collapseWhitespace(raw.value);
  if (!collapsed) return '';
  const { value, stripped } = stripContactScheme(collapsed);
  let out = value;
  if (!stripped && isCustom && raw.attr && URL_ATTRS.has(raw.attr.toLowerCase()))
    out = resolveHttpUrl(value, pageUrl) ?? value;
  if (out.length > MAX_VALUE_LENGTH) out = out.slice(0, MAX_VALUE_LENGTH).trimEnd();
  return out;
}

/** `fullName` becomes firstName (first token) and lastName (the rest) where those are missing; it is not kept. */
function splitFullName(fields: Record<string, string>, matched: Record<string, string>): void {
  const full = fields.fullName;
  if (full === undefined) return;
  const fullSel = matched.fullName;
  delete fields.fullName;
  delete matched.fullName;
  const [first, ...rest] = full.split(' ');
  if (fields.firstName === undefined && first) {
    fields.firstName = first;
    matched.firstName = fullSel;
  }
  if (fields.lastName === undefined && rest.length) {
    fields.lastName = rest.join(' ');
    matched.lastName = fullSel;
  }
}

/** Absolute http(s) next-page URLs, fragment removed, deduplicated, the page itself excluded. */
export function nextPageUrlsOf(values: RawValue[], pageUrl: string): string[] {
  const self = pageUrl.split('#')[0];
  const urls = new Set<string>();
  for (const raw of values) {
    const value = collapseWhitespace(raw.value);
    if (!value) continue;
    const url = resolveHttpUrl(value, pageUrl)?.split('#')[0];
    if (url && url !== self) urls.add(url);
  }
  return [...urls];
}

export function postprocess(raw: RawExtraction, parsed: ParsedSelectors, pageUrl: string): ExtractResult {
  const selectorOf = new Map(parsed.fields.map((f) => [f.key, f.sel.raw]));
  const items: ExtractedItem[] = [];
  for (const rawItem of raw.items) {
    const fields: Record<string, string> = {};
    const matchedSelectors: Record<string, string> = {};
    for (const [key, rawValue] of Object.entries(rawItem.fields)) {
      const value = cleanValue(rawValue, pageUrl, !isLeadFieldKey(key));
      if (!value) continue;
      fields[key] = value;
      matchedSelectors[key] = selectorOf.get(key) ?? '';
    }
    splitFullName(fields, matchedSelectors);
    if (Object.keys(fields).length === 0) continue;
    const item: ExtractedItem = { fields, matchedSelectors, visible: rawItem.visible };
    if (rawItem.text !== undefined) item.text = collapseWhitespace(rawItem.text).slice(0, MAX_PAGE_TEXT);
    items.push(item);
  }
  const result: ExtractResult = { items, nextPageUrls: nextPageUrlsOf(raw.nextPage, pageUrl) };
  if (raw.text !== undefined) result.text = collapseWhitespace(raw.text).slice(0, MAX_PAGE_TEXT);
  return result;
}
