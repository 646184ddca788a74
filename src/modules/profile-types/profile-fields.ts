import { z } from 'zod';
import {
  type ProfileFieldDefinition,
  type ProfileItemType,
  profileFieldTypes,
  profileItemTypes,
} from '../../db/schema/profiles.ts';

/** Field definitions of a profile type (JSON-Schema style) and how values are made to fit them. */

export const FIELD_NAME_PATTERN = /^[a-zA-Z][a-zA-Z0-9_]*$/;
export const MAX_FIELDS = 100;
/** Longer text values are cut to this length when stored. */
export const MAX_TEXT_LENGTH = 10_000;
const MAX_ARRAY_ITEMS = 1000;

const enumValues = z
  .array(z.string().trim().min(1).max(200))
  .min(1)
  .max(200)
  .refine((v) => new Set(v).size === v.length, 'enum values must be unique');

export const profileFieldDefinition = z
  .strictObject({
    name: z.string().max(64).regex(FIELD_NAME_PATTERN, 'must start with a letter and hold only letters, digits and _'),
    type: z.enum(profileFieldTypes),
    label: z.string().trim().min(1).max(200).optional(),
    description: z.string().trim().max(2000).optional(),
    required: z.boolean().optional(),
    enum: enumValues.optional().describe('Allowed values; string fields only'),
    items: z
      .strictObject({ type: z.enum(profileItemTypes), enum: enumValues.optional().describe('string items only') })
      .optional()
      .describe('Element type; required for (and only for) array fields'),
  })
  .superRefine((f, ctx) => {
    if (f.enum && f.type !== 'string')
      ctx.addIssue({ code: 'custom', path: ['enum'], message: 'enum is only allowed on string fields' });
    if (f.type === 'array' && !f.items)
      ctx.addIssue({ code: 'custom', path: ['items'], message: 'array fields need items {type}' });
    if (f.type !== 'array' && f.items)
      ctx.addIssue({ code: 'custom', path: ['items'], message: 'items is only allowed on array fields' });
    if (f.items?.enum && f.items.type !== 'string') {
      ctx.addIssue({
        code: 'custom',
        path: ['items', 'enum'],
        message: 'items.enum is only allowed when items.type is string',
      });
    }
  });

export const profileFieldList = z
  .array(profileFieldDefinition)
  .max(MAX_FIELDS)
  .superRefine((fields, ctx) => {
    const seen = new Set<string>();
    fields.forEach((f, i) => {
      const key = f.name.toLowerCase();
      if (seen.has(key))
        ctx.addIssue({
          code: 'custom',
          path: [i, 'name'],
          message: `duplicate field name ${f.name} (names are compared case-insensitively)`,
        });
      seen.add(key);
    });
  })
  .describe('Field definitions: 1–100, names unique (case-insensitive)');

/** The stored shape of a field, for responses. */
export const profileFieldView = z.object({
  name: z.string(),
  type: z.enum(profileFieldTypes),
  label: z.string().optional(),
  description: z.string().optional(),
  required: z.boolean().optional(),
  enum: z.array(z.string()).optional(),
  items: z.object({ type: z.enum(profileItemTypes), enum: z.array(z.string()).optional() }).optional(),
});

export type CoerceResult = { ok: true; value: unknown } | { ok: false; reason: string };

const fail = (reason: string): CoerceResult => ({ ok: false, reason });
const okv = (value: unknown): CoerceResult => ({ ok: true, value });

const MULTIPLIERS: Record<string, number> = { k: 1e3, m: 1e6, mm: 1e6, b: 1e9, bn: 1e9 };

/** Digits with thousands and decimal separators (US "1,234.5", EU "1.234,5", Swiss "1'234.5") → JS number text. */
function normaliseSeparators(s: string): string | undefined {
  s = s.replace(/[\s_']/g, '');
  const lastComma = s.lastIndexOf(',');
  const lastDot = s.lastIndexOf('.');
  if (lastComma >= 0 && lastDot >= 0) {
    // Both: the last one is the decimal separator.
    return lastComma > lastDot ? s.replace(/\./g, '').replace(',', '.') : s.replace(/,/g, '');
  }
  if (lastComma >= 0) {
    if (/^\d{1,3}(,\d{3})+$/.test(s)) return s.replace(/,/g, '');
    return /^\d+,\d+$/.test(s) ? s.replace(',', '.') : undefined;
  }
  if (/^\d{1,3}(\.\d{3}){2,}$/.test(s)) return s.replace(/\./g, '');
  return s;
}

/** "$1,200" → 1200, "1.5M" → 1500000, "7.5%" → 7.5, "€1.200,50" → 1200.5; anything else → undefined. */
export function parseNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  let s = value
    .trim()
    .replace(/^(usd|eur|gbp|cad|aud)\s*/i, '')
    .replace(/\s*(usd|eur|gbp|cad|aud)$/i, '');
  const negative = /^-/.test(s) || /^\(.*\)$/.test(s);
  s = s
    .replace(/^[-(]|\)$/g, '')
    .replace(/^[$€£¥₹]\s*/, '')
    .replace(/\s*[$€£¥₹]$/, '')
    .replace(/%$/, '');
  const suffix = /(k|mm|m|bn|b)$/i.exec(s);
  if (suffix) s = s.slice(0, -suffix[1]!.length).trim();
  const digits = normaliseSeparators(s);
  if (digits === undefined || !/^(\d+(\.\d+)?|\.\d+)$/.test(digits)) return undefined;
  const n = Number(digits) * (suffix ? MULTIPLIERS[suffix[1]!.toLowerCase()]! : 1);
  if (!Number.isFinite(n)) return undefined;
  return negative ? -n : n;
}

const TRUE_WORDS = new Set(['true', 'yes', 'y', '1', 'on']);
const FALSE_WORDS = new Set(['false', 'no', 'n', '0', 'off']);
const pad = (n: number) => String(n).padStart(2, '0');
const EMAIL = z.email();

function coerceDate(value: unknown): CoerceResult {
  if (typeof value !== 'string') return fail('expected a date');
  const s = value.trim();
  const dateOnly = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (dateOnly) {
    const d = new Date(`${s}T00:00:00Z`);
    return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s) ? okv(s) : fail('not a calendar date');
  }
  if (!/\d{4}/.test(s)) return fail('expected a date such as 2024-05-31');
  const t = Date.parse(s);
  if (Number.isNaN(t)) return fail('expected a date such as 2024-05-31');
  const d = new Date(t);
  // With a time of day: an instant. Without: the calendar date as written (parsed as local midnight).
  return /\d:\d/.test(s)
    ? okv(d.toISOString())
    : okv(`${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`);
}

function coerceScalar(type: ProfileItemType, value: unknown, allowed?: string[]): CoerceResult {
  switch (type) {
    case 'string': {
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
        return fail('expected a string');
      const s = String(value).trim();
      if (!s) return fail('empty');
      if (allowed) {
        const match = allowed.find((a) => a.toLowerCase() === s.toLowerCase());
        return match ? okv(match) : fail(`must be one of: ${allowed.join(', ')}`);
      }
      return okv(s.slice(0, MAX_TEXT_LENGTH));
    }
    case 'number':
    case 'integer': {
      const n = parseNumber(value);
      if (n === undefined) return fail(`expected a${type === 'integer' ? 'n integer' : ' number'}`);
      return type === 'integer' && !Number.isSafeInteger(n) ? fail('expected an integer') : okv(n);
    }
    case 'boolean': {
      if (typeof value === 'boolean') return okv(value);
      const s = String(value).trim().toLowerCase();
      if (TRUE_WORDS.has(s)) return okv(true);
      if (FALSE_WORDS.has(s)) return okv(false);
      return fail('expected a boolean');
    }
    case 'date':
      return coerceDate(value);
    case 'url': {
      if (typeof value !== 'string') return fail('expected a URL');
      let s = value.trim();
      if (!/^[a-z][a-z0-9+.-]*:/i.test(s) && /^(\/\/)?[\w-]+(\.[\w-]+)+([/?#:].*)?$/.test(s))
        s = `https://${s.replace(/^\/\//, '')}`;
      try {
        const u = new URL(s);
        return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname && s.length <= 2048
          ? okv(s)
          : fail('expected an http(s) URL');
      } catch {
        return fail('expected an http(s) URL');
      }
    }
    case 'email': {
      if (typeof value !== 'string') return fail('expected an email address');
      const s = value.trim().replace(/^mailto:/i, '');
      return s.length <= 254 && EMAIL.safeParse(s).success ? okv(s) : fail('expected an email address');
    }
  }
}

/** True when the value counts as absent (and is therefore not stored). */
export const isEmptyValue = (v: unknown): boolean =>
  v === undefined || v === null || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0);

/**
 * Makes a value fit its field. Lenient (`strict` false, for scraped data): array elements that do
 * not fit are dropped. Strict (user edits): any element that does not fit fails the value.
 */
export function coerceFieldValue(field: ProfileFieldDefinition, value: unknown, strict = false): CoerceResult {
  if (field.type !== 'array') return coerceScalar(field.type, value, field.enum);
  const itemType = field.items?.type ?? 'string';
  let list: unknown[];
  if (Array.isArray(value)) list = value;
  else if (typeof value === 'string') {
    // Scraped lists arrive as text: "FHA, VA; Jumbo". Numbers may hold commas, so split those on ; | only.
    list = value.split(itemType === 'number' || itemType === 'integer' ? /[;|\n]/ : /[;,|\n]/);
  } else list = [value];
  const out: unknown[] = [];
  for (let i = 0; i < list.length; i++) {
    if (isEmptyValue(list[i]) && !strict) continue;
    const r = coerceScalar(itemType, list[i], field.items?.enum);
    if (r.ok) out.push(r.value);
    else if (strict) return fail(`element ${i}: ${r.reason}`);
  }
  if (out.length > MAX_ARRAY_ITEMS) {
    if (strict) return fail(`at most ${MAX_ARRAY_ITEMS} elements`);
    out.length = MAX_ARRAY_ITEMS;
  }
  return out.length ? okv(out) : fail('no valid elements');
}

export interface CoercedData {
  data: Record<string, unknown>;
  /** Keys that were dropped: unknown to the type, or values that did not fit. */
  dropped: Array<{ field: string; reason: string }>;
  /** Required fields without a value. */
  missing: string[];
}

/** Lenient fit of a whole data object to a type's fields (ingestion from scraping). */
export function coerceData(fields: readonly ProfileFieldDefinition[], input: unknown): CoercedData {
  const data: Record<string, unknown> = {};
  const dropped: CoercedData['dropped'] = [];
  const source = input && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
  const byName = new Map(fields.map((f) => [f.name, f]));
  const byLower = new Map(fields.map((f) => [f.name.toLowerCase(), f]));
  for (const [key, value] of Object.entries(source)) {
    // Exact name first, then case-insensitive (`Website` for `website`).
    const field = byName.get(key) ?? byLower.get(key.toLowerCase());
    if (!field) {
      dropped.push({ field: key, reason: 'unknown field' });
      continue;
    }
    if (isEmptyValue(value) || Object.hasOwn(data, field.name)) continue;
    const r = coerceFieldValue(field, value);
    if (r.ok) data[field.name] = r.value;
    else dropped.push({ field: key, reason: r.reason });
  }
  const missing = fields.filter((f) => f.required && !Object.hasOwn(data, f.name)).map((f) => f.name);
  return { data, dropped, missing };
}
