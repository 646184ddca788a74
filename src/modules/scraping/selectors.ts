/**
 * The selector convention of docs/selectors.md: parsing a source's `selectors`
 * map into typed selectors, and validating it for the sources API (400 VALIDATION_ERROR naming
 * `selectors.<key>`).
 *
 * - HTML sources (STATIC, DYNAMIC): CSS, or XPath when the selector starts with `/`, `./`, `../`
 *   or `(`. A final `@name` outside brackets, parentheses and quotes takes the attribute `name`
 *   (`a.mail@href`, `//a/@href`, `.//span@data-x`); a bare `@name` is the item element's own
 *   attribute. `waitFor` is used by DYNAMIC only; on STATIC it is checked but ignored.
 * - API sources: `item` and `nextPage` are JSONPath (`$.data.people[*]`), fields are dotted paths
 *   inside each item (`name.first`, `emails.0`, `emails[0]`) or JSONPath (relative to the item)
 *   when they start with `$`. `waitFor` is ignored.
 */
import { createRequire } from 'node:module';
import { JSONPath } from 'jsonpath-plus';
import { compileCss } from './css-query.ts';
import type { ScrapeType } from './scraping.types.ts';

export type SelectorKind = 'css' | 'xpath' | 'jsonpath' | 'path';

/** One parsed selector. `expr` is the selector without its `@attr` suffix. */
export interface Sel {
  raw: string;
  kind: SelectorKind;
  expr: string;
  attr?: string;
}

export interface ParsedSelectors {
  item?: Sel;
  fields: Array<{ key: string; sel: Sel }>;
  nextPage?: Sel;
  /** DYNAMIC only (the crawler waits for it before extracting). */
  waitFor?: Sel;
}

export interface SelectorProblem {
  /** `selectors` or `selectors.<key>`. */
  field: string;
  message: string;
}

export const LEAD_FIELD_KEYS = ['firstName', 'lastName', 'fullName', 'email', 'phone', 'company', 'jobTitle'] as const;
export type LeadFieldKey = (typeof LEAD_FIELD_KEYS)[number];
export const CONTROL_KEYS = ['item', 'nextPage', 'waitFor'] as const;
export const MAX_SELECTOR_KEYS = 50;
export const MAX_SELECTOR_LENGTH = 1000;

const KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;
/** Keys that would write an object's prototype instead of a field. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const ATTR_NAME = /^[A-Za-z_:][-A-Za-z0-9_.:]*$/;

export const isLeadFieldKey = (key: string): key is LeadFieldKey =>
  (LEAD_FIELD_KEYS as readonly string[]).includes(key);
export const isXPathSelector = (s: string): boolean =>
  s.startsWith('/') || s.startsWith('./') || s.startsWith('../') || s.startsWith('(');

type Role = 'item' | 'field' | 'nextPage' | 'waitFor';
const roleOf = (key: string): Role => (key === 'item' || key === 'nextPage' || key === 'waitFor' ? key : 'field');

/**
 * Calls `visit` with each character of `s` outside quoted strings ('…' or "…", backslash escapes
 * inside); false when a quote is left open.
 */
function scanUnquoted(s: string, visit: (c: string, i: number) => void): boolean {
  let quote = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else visit(c, i);
  }
  return !quote;
}

/**
 * The index of the `@` that starts an attribute suffix, or -1: the last `@` outside brackets,
 * parentheses and quotes, followed only by an attribute name.
 */
function attrSuffixIndex(s: string): number {
  let depth = 0;
  let at = -1;
  scanUnquoted(s, (c, i) => {
    if (c === '[' || c === '(') depth++;
    else if (c === ']' || c === ')') depth = Math.max(0, depth - 1);
    else if (c === '@' && depth === 0) at = i;
  });
  return at >= 0 && ATTR_NAME.test(s.slice(at + 1)) ? at : -1;
}

function parseHtmlSelector(raw: string): Sel {
  const s = raw.trim();
  const kind = isXPathSelector(s) ? 'xpath' : 'css';
  const at = attrSuffixIndex(s);
  if (at < 0) return { raw, kind, expr: s };
  const attr = s.slice(at + 1);
  let expr = s.slice(0, at).trim();
  if (kind === 'xpath') {
    // `//@href` and `.//@x`: every element carrying the attribute; `//a/@href`: the `a` elements.
    if (expr.endsWith('//')) expr = `${expr}*[@${attr}]`;
    else if (expr.endsWith('/')) expr = expr.slice(0, -1) || '/';
  }
  return { raw, kind, expr, attr };
}

function parseJsonSelector(raw: string): Sel {
  const s = raw.trim();
  return { raw, kind: s.startsWith('$') ? 'jsonpath' : 'path', expr: s };
}

/** One selector of a source of `scrapeType`. */
export function parseSelector(raw: string, scrapeType: ScrapeType): Sel {
  return scrapeType === 'API' ? parseJsonSelector(raw) : parseHtmlSelector(raw);
}

/**
 * The selectors of a source, typed. Assumes `validateSelectors` passed; entries that are not
 * strings or use reserved keys are skipped. `waitFor` is returned for DYNAMIC only.
 */
export function parseSelectors(map: Record<string, string>, scrapeType: ScrapeType): ParsedSelectors {
  const parsed: ParsedSelectors = { fields: [] };
  for (const [key, raw] of Object.entries(map ?? {})) {
    if (typeof raw !== 'string' || !raw.trim() || RESERVED_KEYS.has(key)) continue;
    const sel = parseSelector(raw, scrapeType);
    const role = roleOf(key);
    if (role === 'item') parsed.item = sel;
    else if (role === 'nextPage') parsed.nextPage = sel;
    else if (role === 'waitFor') {
      if (scrapeType === 'DYNAMIC') parsed.waitFor = sel;
    } else parsed.fields.push({ key, sel });
  }
  return parsed;
}

// ---- validation -------------------------------------------------------------------------------

interface XPathModule {
  parse(expr: string): unknown;
}
// Loaded through require: the package's typings pull the whole DOM lib into the program.
const xpathModule = createRequire(import.meta.url)('xpath') as XPathModule;

/** css-select extensions that Chromium's querySelectorAll rejects (DYNAMIC runs in the browser). */
const NON_BROWSER_PSEUDOS = [
  'contains',
  'icontains',
  'header',
  'button',
  'input',
  'text',
  'checkbox',
  'file',
  'password',
  'reset',
  'radio',
  'submit',
  'image',
  'parent',
  'selected',
  'matches',
];
const NON_BROWSER_PSEUDO = new RegExp(`:(${NON_BROWSER_PSEUDOS.join('|')})(?![-\\w])`, 'i');

/** Removes quoted strings so that pseudo-class checks do not look inside attribute values. */
const withoutQuoted = (s: string) => s.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');

function cssProblem(expr: string, scrapeType: ScrapeType): string | undefined {
  if (/[>+~,]\s*$/.test(expr)) return 'invalid CSS selector: it ends with a combinator or comma';
  if (/^\s*[>+~]/.test(expr))
    return 'invalid CSS selector: it starts with a combinator (for direct children of the item use :scope > …)';
  try {
    compileCss(expr); // the extractor's engine
  } catch (err) {
    return `invalid CSS selector: ${(err as Error).message}`;
  }
  const pseudo = scrapeType === 'DYNAMIC' ? NON_BROWSER_PSEUDO.exec(withoutQuoted(expr)) : null;
  if (pseudo) return `:${pseudo[1]} is not supported by browsers (DYNAMIC sources): use standard CSS or XPath`;
  return undefined;
}

/** XPath 1.0's functions and node-type tests: what both engines (xpath package, browsers) know. */
const XPATH_CALLABLE = new Set([
  'last',
  'position',
  'count',
  'id',
  'local-name',
  'namespace-uri',
  'name',
  'string',
  'concat',
  'starts-with',
  'contains',
  'substring-before',
  'substring-after',
  'substring',
  'string-length',
  'normalize-space',
  'translate',
  'boolean',
  'not',
  'true',
  'false',
  'lang',
  'number',
  'sum',
  'floor',
  'ceiling',
  'round',
  'text',
  'node',
  'comment',
  'processing-instruction',
]);
const XPATH_OPERATORS = new Set(['and', 'or', 'div', 'mod']);

/** Syntax, plus what parses but fails on every page: XPath 2.0 functions, variables, namespace prefixes. */
function xpathProblem(expr: string): string | undefined {
  try {
    xpathModule.parse(expr);
  } catch {
    return 'invalid XPath expression';
  }
  const code = withoutQuoted(expr);
  for (const [, name] of code.matchAll(/([A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?)\s*\(/g)) {
    if (!XPATH_CALLABLE.has(name) && !XPATH_OPERATORS.has(name)) return `${name}() is not an XPath 1.0 function`;
  }
  if (code.includes('$')) return 'XPath variables are not supported';
  if (/[A-Za-z_][\w.-]*:[A-Za-z_*]/.test(code.replaceAll('::', '  ')))
    return 'XPath namespace prefixes are not supported (HTML elements have none)';
  return undefined;
}

/** Brackets, parentheses and quotes balanced (jsonpath-plus silently accepts `$.a[`). */
function balanced(s: string): boolean {
  const stack: string[] = [];
  let mismatched = false;
  const closed = scanUnquoted(s, (c) => {
    if (c === '[' || c === '(') stack.push(c === '[' ? ']' : ')');
    else if ((c === ']' || c === ')') && stack.pop() !== c) mismatched = true;
  });
  return closed && !mismatched && stack.length === 0;
}

interface SafeScriptClass {
  new (code: string): unknown;
}
const SafeScript = (JSONPath.prototype as unknown as { safeVm: { Script: SafeScriptClass } }).safeVm.Script;

function jsonPathProblem(expr: string): string | undefined {
  if (!expr.startsWith('$')) return 'invalid JSONPath: it must start with $';
  if (!balanced(expr) || /\[\s*\]/.test(expr) || /(^|[^.])\.$/.test(expr)) return 'invalid JSONPath expression';
  // Filter and script expressions are parsed now (jsonpath-plus would only fail on matching data).
  for (const part of JSONPath.toPathArray(expr)) {
    const script = /^\??\((.*)\)$/s.exec(part)?.[1];
    if (script === undefined) continue;
    try {
      new SafeScript(script.replaceAll('@', '_$_v'));
    } catch (err) {
      return `invalid JSONPath filter: ${(err as Error).message}`;
    }
  }
  return undefined;
}

function dottedPathProblem(expr: string): string | undefined {
  const segments = expr.replace(/\[(\d+)\]/g, '.$1').split('.');
  return segments.some((s) => s.trim() === '')
    ? 'invalid path: use dotted names like name.first or emails.0, or a JSONPath starting with $'
    : undefined;
}

function selectorProblem(key: string, raw: string, scrapeType: ScrapeType, hasItem: boolean): string | undefined {
  const role = roleOf(key);
  if (scrapeType === 'API') {
    if (role === 'waitFor') return undefined; // ignored for API sources
    const sel = parseJsonSelector(raw);
    return sel.kind === 'jsonpath' ? jsonPathProblem(sel.expr) : dottedPathProblem(sel.expr);
  }
  const sel = parseHtmlSelector(raw);
  if (sel.expr === '') {
    if (role !== 'field') return 'needs an element selector before @attribute';
    if (!hasItem) return 'a bare @attribute reads the item element: set an item selector';
    return undefined;
  }
  return sel.kind === 'xpath' ? xpathProblem(sel.expr) : cssProblem(sel.expr, scrapeType);
}

/**
 * Problems with a source's `selectors` for the sources API, each naming `selectors.<key>` (or
 * `selectors` for the map as a whole). Empty when the map is valid.
 */
export function validateSelectors(map: unknown, scrapeType: ScrapeType): SelectorProblem[] {
  if (map === undefined || map === null) return [];
  if (typeof map !== 'object' || Array.isArray(map))
    return [{ field: 'selectors', message: 'must be an object whose values are selector strings' }];
  const entries = Object.entries(map as Record<string, unknown>);
  const problems: SelectorProblem[] = [];
  if (entries.length > MAX_SELECTOR_KEYS)
    problems.push({ field: 'selectors', message: `at most ${MAX_SELECTOR_KEYS} selectors` });
  const hasItem = typeof (map as Record<string, unknown>).item === 'string';
  for (const [key, raw] of entries) {
    const field = `selectors.${key}`;
    let message: string | undefined;
    if (!KEY_PATTERN.test(key))
      message = 'invalid key: start with a letter or _, then letters, digits, _, . or - (at most 64 characters)';
    else if (RESERVED_KEYS.has(key)) message = `"${key}" is a reserved name`;
    else if (typeof raw !== 'string') message = 'must be a selector string';
    else if (raw.trim() === '') message = 'must not be empty';
    else if (raw.length > MAX_SELECTOR_LENGTH) message = `at most ${MAX_SELECTOR_LENGTH} characters`;
    else message = selectorProblem(key, raw, scrapeType, hasItem);
    if (message) problems.push({ field, message });
  }
  return problems;
}
