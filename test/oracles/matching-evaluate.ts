import type {
  Condition,
  ConditionGroup,
  MatchableLead,
  MatchableProfile,
} from '../../src/modules/matching/matching.conditions.ts';
import type { SetRule } from '../../src/modules/matching/matching.sql.ts';
import {
  dateTextMs,
  type FieldRef,
  fieldRef,
  numericText,
  type Operand,
  operandOf,
} from '../../src/modules/matching/matching.values.ts';

/**
 * The rule language evaluated row by row in Node, with exactly the semantics the SQL compiler
 * implements (src/modules/matching/matching.values.ts). The service never uses it: it proves the SQL
 * (test/matching-semantics.test.ts compares both on random rules and rows) and is the naive
 * baseline of `npm run bench -- matching`.
 * Known approximations: regex patterns run as ECMAScript RegExp (PostgreSQL's ARE agrees on common
 * syntax; its \y and \Y word boundaries are translated), lower-casing is JS's (PostgreSQL's lower()
 * agrees on ASCII and most letters).
 */

export interface EvalResult {
  matched: boolean;
  matchScore: number;
  /** Truth of each top-level item (FILTER: the group's children; SCORED: the criteria). */
  details: boolean[];
}

/** One element: its text (null when it has none) and, for JSON numbers, its value. */
interface Element {
  text: string | null;
  num: number | null;
}

const jsonElement = (v: unknown): Element => {
  if (typeof v === 'string') return { text: v, num: null };
  if (typeof v === 'number') return { text: String(v), num: v };
  if (typeof v === 'boolean') return { text: String(v), num: null };
  return { text: null, num: null };
};

function leadText(lead: MatchableLead, column: string): string | null {
  switch (column) {
    case 'fullName': {
      const s = [lead.firstName, lead.lastName].filter((x) => x !== null).join(' ');
      return s === '' ? null : s;
    }
    case 'emailDomain':
      return lead.email === null ? null : (lead.email.split('@')[1] ?? '').toLowerCase() || null;
    default:
      return (lead as unknown as Record<string, string | null>)[column] ?? null;
  }
}

function elementsOf(row: MatchableProfile, ref: FieldRef): Element[] {
  if (ref.kind === 'json') {
    const holder = ref.source === 'profile' ? row.data : row.lead?.customFields;
    const v = holder && Object.hasOwn(holder, ref.key) ? holder[ref.key] : undefined;
    return (Array.isArray(v) ? v : [v]).map(jsonElement);
  }
  if (!row.lead) return [];
  if (ref.kind === 'tags') return row.lead.tags.map((t) => ({ text: t, num: null }));
  if (ref.kind === 'text') return [{ text: leadText(row.lead, ref.column), num: null }];
  return [];
}

function exists(row: MatchableProfile, ref: FieldRef): boolean {
  if (ref.kind === 'json') {
    const holder = ref.source === 'profile' ? row.data : row.lead?.customFields;
    const v = holder && Object.hasOwn(holder, ref.key) ? holder[ref.key] : undefined;
    if (v === undefined || v === null || v === '') return false;
    if (Array.isArray(v)) return v.length > 0;
    if (typeof v === 'object') return Object.keys(v).length > 0;
    return true;
  }
  if (!row.lead) return false;
  if (ref.kind === 'tags') return row.lead.tags.length > 0;
  if (ref.kind === 'timestamp') return true;
  const t = leadText(row.lead, ref.column);
  return t !== null && t !== '';
}

/** PostgreSQL's word-boundary escapes \y and \Y in JS syntax (\b and \B; validation rejects those in rules). */
const jsPattern = (pattern: string) =>
  pattern.replace(/\\(.)/gs, (escaped, c: string) => (c === 'y' ? '\\b' : c === 'Y' ? '\\B' : escaped));

const regexCache = new Map<string, RegExp>();
function regexOf(pattern: string, ci: boolean): RegExp {
  const key = `${ci ? 'i' : 's'}:${pattern}`;
  let re = regexCache.get(key);
  if (!re) {
    re = new RegExp(jsPattern(pattern), ci ? 'i' : '');
    if (regexCache.size > 1000) regexCache.clear();
    regexCache.set(key, re);
  }
  return re;
}

function compare(op: string, a: number, b: number): boolean {
  switch (op) {
    case 'gt':
      return a > b;
    case 'gte':
      return a >= b;
    case 'lt':
      return a < b;
    case 'lte':
      return a <= b;
    default:
      return a === b;
  }
}

function elementHolds(op: string, operand: Operand, ci: boolean, e: Element): boolean {
  if (e.text === null) return false;
  const low = (s: string) => (ci ? s.toLowerCase() : s);
  const num = () => e.num ?? numericText(e.text!);
  switch (op) {
    case 'equals':
      if (operand.kind === 'number') {
        const n = num();
        return n !== null && n === operand.n;
      }
      return low(e.text) === low((operand as { s: string }).s);
    case 'in': {
      const { texts, numbers } = operand as Extract<Operand, { kind: 'list' }>;
      if (texts.some((s) => low(s) === low(e.text!))) return true;
      const n = numbers.length ? num() : null;
      return n !== null && numbers.includes(n);
    }
    case 'contains': {
      const s = operand.kind === 'number' ? String(operand.n) : (operand as { s: string }).s;
      return low(e.text).includes(low(s));
    }
    case 'regex':
      return regexOf((operand as { s: string }).s, ci).test(e.text);
    default: {
      if (operand.kind === 'number') {
        const n = num();
        return n !== null && compare(op, n, operand.n);
      }
      const ms = dateTextMs(e.text);
      return ms !== null && compare(op, ms, (operand as { ms: number }).ms);
    }
  }
}

function positive(row: MatchableProfile, c: Condition, op: string): boolean {
  const ref = fieldRef(c.field);
  if (!ref) throw new Error(`unknown field ${c.field}`);
  if (op === 'exists') return exists(row, ref);
  const operand = operandOf(c);
  if (ref.kind === 'timestamp')
    return row.lead !== null && compare(op, row.lead.createdAt.getTime(), (operand as { ms: number }).ms);
  const ci = !c.caseSensitive;
  return elementsOf(row, ref).some((e) => elementHolds(op, operand, ci, e));
}

export function evaluateCondition(row: MatchableProfile, c: Condition): boolean {
  return c.operator.startsWith('not_') ? !positive(row, c, c.operator.slice(4)) : positive(row, c, c.operator);
}

const isGroup = (x: Condition | ConditionGroup): x is ConditionGroup => Array.isArray((x as ConditionGroup).conditions);

export function evaluateNode(row: MatchableProfile, node: Condition | ConditionGroup): boolean {
  if (!isGroup(node)) return evaluateCondition(row, node);
  return node.operator === 'AND'
    ? node.conditions.every((n) => evaluateNode(row, n))
    : node.conditions.some((n) => evaluateNode(row, n));
}

/** A FILTER or SCORED rule on one row: the same matched, matchScore and details the SQL computes. */
export function evaluateRule(rule: SetRule, row: MatchableProfile): EvalResult {
  if (rule.type === 'FILTER') {
    const details = rule.conditions.conditions.map((n) => evaluateNode(row, n));
    const matched = rule.conditions.operator === 'AND' ? details.every(Boolean) : details.some(Boolean);
    return { matched, matchScore: matched ? 100 : 0, details };
  }
  const details = rule.criteria.map((c) => evaluateNode(row, c.condition));
  const total = rule.criteria.reduce((n, c) => n + c.weight, 0);
  const held = rule.criteria.reduce((n, c, i) => n + (details[i] ? c.weight : 0), 0);
  const matchScore = Math.round((100 * held) / total);
  return { matched: matchScore >= rule.threshold, matchScore, details };
}
