import { type Condition, LEAD_CONDITION_FIELDS } from './matching.conditions.ts';

/**
 * What a condition's field and value mean, shared by the SQL compiler (matching.sql.ts) and the
 * tests' row-by-row evaluator (test/oracles/matching-evaluate.ts) so the two cannot drift apart.
 *
 * Semantics (both sides):
 * - A field yields zero or more elements: a profile/custom field's JSON value (each element of an
 *   array value), a lead text column (one element unless NULL), `tags` (each tag). A profile with no
 *   lead has no lead elements.
 * - A positive operator (equals, in, contains, gt…, regex) holds when ANY element satisfies it; the
 *   `not_*` operators are exactly the negation of their positive form, so they hold when the value is
 *   absent. No condition is ever NULL.
 * - Element text: JSON strings as they are, numbers and booleans as their text; objects, nested
 *   arrays and null have none. Text comparisons ignore case (lower() on both sides) unless
 *   `caseSensitive`.
 * - A number value compares numerically with elements that are JSON numbers or text matching
 *   NUMERIC_TEXT; a string/boolean value compares as text (equals, in, contains).
 * - gt/gte/lt/lte with an ISO date value compare instants with elements matching ISO_DATE (a
 *   calendar date, or date and time; no offset means UTC).
 * - exists: the value is there and not null, "", [] or {} (for text columns: not NULL or "").
 */

/** Numeric text (no exponent, bounded length so the cast never fails and stays exact enough). */
export const NUMERIC_TEXT = '^-?[0-9]{1,15}([.][0-9]{1,15})?$';
/** An ISO date or date-time; the day-of-month is checked against the month separately. */
export const ISO_DATE =
  '^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])' +
  '([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.][0-9]{1,3})?)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?)?$';
/** An explicit UTC offset at the end of an ISO_DATE text. */
export const HAS_OFFSET = '(Z|[+-][0-9]{2}:[0-9]{2})$';

const numericRe = new RegExp(NUMERIC_TEXT);
const dateRe = new RegExp(ISO_DATE);
const offsetRe = new RegExp(HAS_OFFSET);

export const TEXT_OPS = new Set(['equals', 'not_equals', 'in', 'not_in', 'contains', 'not_contains', 'regex']);
export const ORDER_OPS = new Set(['gt', 'gte', 'lt', 'lte']);

/** Milliseconds since the epoch of an ISO_DATE text (UTC when no offset), or null when it is not one. */
export function dateTextMs(text: string): number | null {
  if (!dateRe.test(text)) return null;
  const y = Number(text.slice(0, 4));
  const m = Number(text.slice(5, 7));
  const d = Number(text.slice(8, 10));
  if (d > new Date(Date.UTC(y, m, 0)).getUTCDate()) return null;
  let iso = text.replace(' ', 'T');
  if (iso.length === 10) iso += 'T00:00:00Z';
  else if (!offsetRe.test(iso)) iso += 'Z';
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms;
}

/** The instants an operand date may have: those whose ISO text has a 4-digit year. */
const MIN_DATE_MS = Date.UTC(1000, 0, 1);
const MAX_DATE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export const numericText = (text: string): number | null => (numericRe.test(text) ? Number(text) : null);

/** Where a condition's field lives. */
export type FieldRef =
  | { kind: 'json'; source: 'profile' | 'custom'; key: string }
  | { kind: 'text'; column: LeadTextField }
  | { kind: 'tags' }
  | { kind: 'timestamp' };

export type LeadTextField = Exclude<(typeof LEAD_CONDITION_FIELDS)[number], 'tags' | 'createdAt'>;

export function fieldRef(field: string): FieldRef | undefined {
  if (field.startsWith('profile.')) return { kind: 'json', source: 'profile', key: field.slice('profile.'.length) };
  if (field.startsWith('lead.customFields.'))
    return { kind: 'json', source: 'custom', key: field.slice('lead.customFields.'.length) };
  const column = field.slice('lead.'.length);
  if (!field.startsWith('lead.') || !(LEAD_CONDITION_FIELDS as readonly string[]).includes(column)) return undefined;
  if (column === 'tags') return { kind: 'tags' };
  if (column === 'createdAt') return { kind: 'timestamp' };
  return { kind: 'text', column: column as LeadTextField };
}

/** A condition's value, typed once for both sides. */
export type Operand =
  | { kind: 'none' }
  | { kind: 'number'; n: number }
  | { kind: 'text'; s: string }
  | { kind: 'date'; iso: string; ms: number }
  | { kind: 'list'; texts: string[]; numbers: number[] };

/** The operand of a condition the service has validated (see conditionProblems). */
export function operandOf(c: Condition): Operand {
  const v = c.value;
  if (c.operator === 'exists' || c.operator === 'not_exists' || v === undefined) return { kind: 'none' };
  if (Array.isArray(v)) {
    return {
      kind: 'list',
      texts: v.filter((x): x is string => typeof x === 'string'),
      numbers: v.filter((x): x is number => typeof x === 'number'),
    };
  }
  if (typeof v === 'number') return { kind: 'number', n: v };
  if (ORDER_OPS.has(c.operator) && typeof v === 'string') {
    const ms = dateTextMs(v.trim())!;
    return { kind: 'date', iso: new Date(ms).toISOString(), ms };
  }
  return { kind: 'text', s: String(v) };
}

/**
 * What is wrong with a condition's operator and value, as {part, message} (part: 'value' or
 * 'operator'), independent of the profile type. Regex compilation is checked by the service in SQL.
 */
export function operandProblem(
  c: Condition,
  ref: FieldRef,
): { part: 'value' | 'operator'; message: string } | undefined {
  const v = c.value;
  const op = c.operator;
  if (op === 'exists' || op === 'not_exists')
    return v === undefined ? undefined : { part: 'value', message: `${op} takes no value` };
  if (v === undefined) return { part: 'value', message: `${op} needs a value` };
  if (ref.kind === 'timestamp' && !ORDER_OPS.has(op)) {
    return { part: 'operator', message: 'lead.createdAt supports gt, gte, lt, lte, exists and not_exists' };
  }
  if (op === 'in' || op === 'not_in')
    return Array.isArray(v) ? undefined : { part: 'value', message: `${op} needs an array of strings or numbers` };
  if (Array.isArray(v)) return { part: 'value', message: `${op} needs a single value, not an array` };
  if (ORDER_OPS.has(op)) {
    if (typeof v === 'number' && ref.kind !== 'timestamp') return undefined;
    const ms = typeof v === 'string' ? dateTextMs(v.trim()) : null;
    if (ms !== null) {
      // An offset can push the instant out of the 4-digit years ('9999-12-31T23:00-05:00' is in year
      // 10000): its ISO text would be '+010000-…', which PostgreSQL rejects at execute time.
      if (ms >= MIN_DATE_MS && ms <= MAX_DATE_MS) return undefined;
      return {
        part: 'value',
        message: `${op} needs a date whose instant is between 1000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z`,
      };
    }
    return {
      part: 'value',
      message: `${op} needs a number or an ISO date (YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z|±HH:MM])`,
    };
  }
  if (op === 'regex' && typeof v !== 'string') return { part: 'value', message: 'regex needs a pattern string' };
  if (typeof v === 'string' && v.length === 0 && op !== 'equals' && op !== 'not_equals')
    return { part: 'value', message: 'must not be empty' };
  return undefined;
}
