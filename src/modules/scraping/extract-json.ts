/**
 * API extraction: `item` and `nextPage` are JSONPath over the response body (a dotted path works
 * too), fields are dotted paths inside each item (`name.first`, `emails.0`) or JSONPath relative
 * to the item when they start with `$`. Scalars are stringified, arrays of scalars joined with
 * ", ", objects skipped. JSON has no visibility: every item is visible.
 */
import { JSONPath } from 'jsonpath-plus';
import { type ExtractResult, postprocess, type RawItem, type RawValue } from './postprocess.ts';
import type { ParsedSelectors, Sel } from './selectors.ts';

export type { ExtractResult } from './postprocess.ts';

/** Values a JSONPath yields. Filters run in jsonpath-plus's safe evaluator (no JS eval of user input). */
function jsonPath(expr: string, json: unknown): unknown[] {
  if (json === null || typeof json !== 'object') return [];
  return JSONPath({ path: expr, json: json as object, wrap: true, eval: 'safe', ignoreEvalErrors: true }) as unknown[];
}

/** `name.first`, `emails.0`, `emails[0]`: own properties only. */
function dottedPath(expr: string, json: unknown): unknown[] {
  let cur: unknown = json;
  for (const segment of expr.replace(/\[(\d+)\]/g, '.$1').split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, segment)) return [];
    cur = (cur as Record<string, unknown>)[segment];
  }
  return cur === undefined ? [] : [cur];
}

const evaluate = (sel: Sel, json: unknown): unknown[] =>
  sel.kind === 'jsonpath' ? jsonPath(sel.expr, json) : dottedPath(sel.expr, json);

const isScalar = (v: unknown): v is string | number | boolean =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** A scalar as text; an array of scalars joined; objects, nulls and mixed arrays give nothing. */
function textOf(value: unknown): string | undefined {
  if (isScalar(value)) return String(value);
  if (Array.isArray(value) && value.length && value.every(isScalar)) return value.map(String).join(', ');
  return undefined;
}

/** The value of a field: one result as is, several scalar results joined like an array. */
function fieldValue(results: unknown[]): string | undefined {
  if (results.length === 1) return textOf(results[0]);
  return textOf(results.filter((r) => r !== null && r !== undefined));
}

/** Items: what `item` selects; one array result (`$.people` without `[*]`) is taken as its elements. */
function itemsOf(body: unknown, parsed: ParsedSelectors): unknown[] {
  if (!parsed.item) return [body];
  const found = evaluate(parsed.item, body);
  return found.length === 1 && Array.isArray(found[0]) ? found[0] : found;
}

export function extractFromJson(body: unknown, parsed: ParsedSelectors, pageUrl: string): ExtractResult {
  const items: RawItem[] = [];
  for (const item of itemsOf(body, parsed)) {
    if (item === null || typeof item !== 'object') continue;
    const fields: Record<string, RawValue> = {};
    for (const { key, sel } of parsed.fields) {
      const value = fieldValue(evaluate(sel, item));
      if (value !== undefined) fields[key] = { value };
    }
    items.push({ fields, visible: true });
  }
  const nextPage = parsed.nextPage
    ? evaluate(parsed.nextPage, body).flatMap((v) =>
        typeof v === 'string'
          ? [{ value: v }]
          : Array.isArray(v)
            ? v.filter((u): u is string => typeof u === 'string').map((value) => ({ value }))
            : [],
      )
    : [];
  return postprocess({ items, nextPage }, parsed, pageUrl);
}
