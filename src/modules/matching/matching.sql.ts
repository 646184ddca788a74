import { type SQL, sql } from 'drizzle-orm';
import { arrayLiteral } from '../../db/array-literal.ts';
import type { Condition, ConditionGroup, Criterion } from './matching.conditions.ts';
import {
  type FieldRef,
  fieldRef,
  HAS_OFFSET,
  ISO_DATE,
  NUMERIC_TEXT,
  type Operand,
  operandOf,
} from './matching.values.ts';

/**
 * Compiles the rule language (matching.conditions.ts; semantics in matching.values.ts) into SQL over
 * `profiles p LEFT JOIN leads l ON l.id = p.lead_id`. Every value is a bound parameter. Every
 * compiled condition is true or false, never NULL (so NOT and OR behave), and no cast can fail:
 * numeric and date casts sit behind CASE branches that check the text first (CASE evaluates in order).
 */

const LEAD_COLUMN: Record<string, SQL> = {
  firstName: sql`l.first_name`,
  lastName: sql`l.last_name`,
  fullName: sql`NULLIF(concat_ws(' ', l.first_name, l.last_name), '')`,
  email: sql`l.email`,
  emailDomain: sql`NULLIF(lower(split_part(l.email, '@', 2)), '')`,
  phone: sql`l.phone`,
  company: sql`l.company`,
  jobTitle: sql`l.job_title`,
  status: sql`l.status`,
  sourceUrl: sql`l.source_url`,
};

const cmp = {
  gt: sql.raw('>'),
  gte: sql.raw('>='),
  lt: sql.raw('<'),
  lte: sql.raw('<='),
  equals: sql.raw('='),
} as const;
type Cmp = keyof typeof cmp;

const lowerIf = (ci: boolean, x: SQL) => (ci ? sql`lower(${x})` : x);

/** A text[] parameter, lower-cased in SQL (lower() of the literal keeps quotes and escapes intact). */
const textArray = (ci: boolean, items: readonly string[]) =>
  ci ? sql`lower(${arrayLiteral(items)})::text[]` : sql`${arrayLiteral(items)}::text[]`;

/** Instant of an ISO_DATE text `t` known to match ISO_DATE (no offset: UTC). */
const instantOf = (t: SQL) =>
  sql`(CASE WHEN ${t} ~ ${HAS_OFFSET} THEN ${t}::timestamptz ELSE ${t}::timestamp AT TIME ZONE 'UTC' END)`;
/** The day-of-month exists in that month (2024-02-30 matches ISO_DATE but is no date). */
const dayExists = (t: SQL) =>
  sql`substr(${t}, 9, 2)::int
      <= extract(day from (substr(${t}, 1, 7) || '-01')::date + interval '1 month' - interval '1 day')`;

/** An ISO_DATE text's day exists; days up to 28 always do (the cheap test first). */
const validDay = (t: SQL) => sql`(substr(${t}, 9, 2) COLLATE "C" <= '28' OR ${dayExists(t)})`;

/**
 * A date-only text (midnight UTC) against the instant `iso`, compared as text without a cast:
 * with vDate the UTC date of `iso`, t > v ⇔ t > vDate, and so on, adjusted when `iso` is not midnight.
 */
function dateOnlyCmp(op: 'gt' | 'gte' | 'lt' | 'lte', t: SQL, iso: string): SQL {
  const vDate = iso.slice(0, 10);
  const midnight = iso.endsWith('T00:00:00.000Z');
  const c = { gt: '>', gte: midnight ? '>=' : '>', lt: midnight ? '<' : '<=', lte: '<=' }[op];
  return sql`(${t} COLLATE "C" ${sql.raw(c)} ${vDate}::text)`;
}

/**
 * A predicate over one element, given its text `t` (NULL when it has none) and, for JSON elements,
 * `jsonNum` (its numeric value when it is a JSON number, else NULL). Yields true, false or NULL
 * (NULL only when `t` is NULL; the caller coalesces).
 */
function elementPredicate(op: string, operand: Operand, ci: boolean, t: SQL, jsonNum: SQL | null): SQL {
  const numberCmp = (c: Cmp, n: number) => {
    const param = sql`${String(n)}::numeric`;
    const textual = sql`WHEN ${t} ~ ${NUMERIC_TEXT} THEN ${t}::numeric ${cmp[c]} ${param}`;
    return jsonNum
      ? sql`(CASE WHEN ${jsonNum} IS NOT NULL THEN ${jsonNum} ${cmp[c]} ${param} ${textual} ELSE false END)`
      : sql`(CASE ${textual} ELSE false END)`;
  };
  switch (op) {
    case 'equals':
      return operand.kind === 'number'
        ? numberCmp('equals', operand.n)
        : sql`${lowerIf(ci, t)} = ${lowerIf(ci, sql`${(operand as { s: string }).s}::text`)}`;
    case 'in': {
      const { texts, numbers } = operand as Extract<Operand, { kind: 'list' }>;
      const parts: SQL[] = [];
      // Scalar array comparisons (no subquery, so nothing is re-planned per row inside the LATERAL).
      if (texts.length) parts.push(sql`${lowerIf(ci, t)} = ANY(${textArray(ci, texts)})`);
      if (numbers.length) {
        const list = sql`${arrayLiteral(numbers.map(String))}::numeric[]`;
        const textual = sql`WHEN ${t} ~ ${NUMERIC_TEXT} THEN ${t}::numeric = ANY(${list})`;
        parts.push(
          jsonNum
            ? sql`(CASE WHEN ${jsonNum} IS NOT NULL THEN ${jsonNum} = ANY(${list}) ${textual} ELSE false END)`
            : sql`(CASE ${textual} ELSE false END)`,
        );
      }
      return sql`(${sql.join(parts, sql` OR `)})`;
    }
    case 'contains': {
      const s = operand.kind === 'number' ? String(operand.n) : (operand as { s: string }).s;
      return sql`strpos(${lowerIf(ci, t)}, ${lowerIf(ci, sql`${s}::text`)}) > 0`;
    }
    case 'regex':
      return ci ? sql`${t} ~* ${(operand as { s: string }).s}` : sql`${t} ~ ${(operand as { s: string }).s}`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      if (operand.kind === 'number') return numberCmp(op, operand.n);
      return sql`(CASE WHEN ${t} ~ ${ISO_DATE}
        THEN (CASE WHEN NOT ${validDay(t)} THEN false
                   WHEN length(${t}) = 10 THEN ${dateOnlyCmp(op, t, (operand as { iso: string }).iso)}
                   ELSE ${instantOf(t)} ${cmp[op]} ${(operand as { iso: string }).iso}::timestamptz END)
        ELSE false END)`;
    default:
      throw new Error(`not an element operator: ${op}`);
  }
}

const jsonText = (v: SQL) =>
  sql`(CASE WHEN jsonb_typeof(${v}) IN ('string', 'number', 'boolean') THEN ${v} #>> '{}' END)`;
const jsonNumber = (v: SQL) => sql`(CASE WHEN jsonb_typeof(${v}) = 'number' THEN (${v})::numeric END)`;

function jsonOf(ref: Extract<FieldRef, { kind: 'json' }>): SQL {
  return ref.source === 'profile' ? sql`(p.data -> ${ref.key}::text)` : sql`(l.custom_fields -> ${ref.key}::text)`;
}

/**
 * A JSON field computed once per row (evaluationSelect extracts each field a rule names in a LATERAL):
 * the value, its text and number (when a scalar) and whether it is an array.
 */
export interface JsonSlot {
  j: SQL;
  t: SQL;
  n: SQL;
  isArray: SQL;
}
export type Slots = Map<string, JsonSlot>;
const slotKey = (ref: Extract<FieldRef, { kind: 'json' }>) => `${ref.source}:${ref.key}`;
const inlineSlot = (ref: Extract<FieldRef, { kind: 'json' }>): JsonSlot => {
  const j = jsonOf(ref);
  return { j, t: jsonText(j), n: jsonNumber(j), isArray: sql`(jsonb_typeof(${j}) = 'array')` };
};

/** The positive form of a condition (exists, equals, in, contains, gt…, regex), possibly NULL. */
function positive(c: Condition, op: string, slots?: Slots): SQL {
  const ref = fieldRef(c.field);
  if (!ref) throw new Error(`unknown field ${c.field}`);
  const ci = !c.caseSensitive;
  const slot = ref.kind === 'json' ? (slots?.get(slotKey(ref)) ?? inlineSlot(ref)) : undefined;
  if (op === 'exists') {
    switch (ref.kind) {
      case 'json': {
        const j = slot!.j;
        return sql`(jsonb_typeof(${j}) <> 'null' AND ${j} NOT IN ('""'::jsonb, '[]'::jsonb, '{}'::jsonb))`;
      }
      case 'text':
        return sql`(${LEAD_COLUMN[ref.column]!} <> '')`;
      case 'tags':
        return sql`(cardinality(l.tags) > 0)`;
      case 'timestamp':
        return sql`(l.created_at IS NOT NULL)`;
    }
  }
  const operand = operandOf(c);
  switch (ref.kind) {
    case 'json':
      return sql`(CASE WHEN ${slot!.isArray}
        THEN EXISTS (SELECT 1 FROM jsonb_array_elements(${slot!.j}) AS e(v)
                     WHERE ${elementPredicate(op, operand, ci, jsonText(sql`e.v`), jsonNumber(sql`e.v`))})
        ELSE ${elementPredicate(op, operand, ci, slot!.t, slot!.n)} END)`;
    case 'text':
      return elementPredicate(op, operand, ci, LEAD_COLUMN[ref.column]!, null);
    case 'tags':
      if (op === 'in' && operand.kind === 'list' && !operand.numbers.length) {
        // Any tag in the list: array overlap on the (lower-cased) arrays, no per-row unnest.
        return ci
          ? sql`(lower(l.tags::text)::text[] && ${textArray(true, operand.texts)})`
          : sql`(l.tags && ${textArray(false, operand.texts)})`;
      }
      return sql`EXISTS (SELECT 1 FROM unnest(l.tags) AS e(v)
                         WHERE ${elementPredicate(op, operand, ci, sql`e.v`, null)})`;
    case 'timestamp':
      return sql`(l.created_at ${cmp[op as Cmp]} ${(operand as { iso: string }).iso}::timestamptz)`;
  }
}

export function compileCondition(c: Condition, slots?: Slots): SQL {
  const negated = c.operator.startsWith('not_');
  const held = sql`coalesce(${positive(c, negated ? c.operator.slice(4) : c.operator, slots)}, false)`;
  return negated ? sql`(NOT ${held})` : held;
}

const isGroup = (x: Condition | ConditionGroup): x is ConditionGroup => Array.isArray((x as ConditionGroup).conditions);

export function compileNode(node: Condition | ConditionGroup, slots?: Slots): SQL {
  if (!isGroup(node)) return compileCondition(node, slots);
  const parts = node.conditions.map((n) => compileNode(n, slots));
  return sql`(${sql.join(parts, node.operator === 'AND' ? sql` AND ` : sql` OR `)})`;
}

/** What a rule computes per profile: booleans per top-level item, then score and match from them. */
export type SetRule =
  | { type: 'FILTER'; conditions: ConditionGroup }
  | { type: 'SCORED'; criteria: Criterion[]; threshold: number };

/** The top-level items whose truth is kept in `details` (FILTER: the group's children; SCORED: criteria). */
export const detailItems = (rule: SetRule): Array<Condition | ConditionGroup> =>
  rule.type === 'FILTER' ? rule.conditions.conditions : rule.criteria.map((c) => c.condition);

/**
 * SELECT profile_id, lead_id, matched, match_score, details over the profiles `scope` selects (a
 * condition on `p`). Each top-level item is computed once in a LATERAL subquery (OFFSET 0 keeps the
 * planner from inlining, and so duplicating, it); details is a JSON array of those booleans.
 */
/** Every JSON field the nodes name, once each. */
/** True when some condition reads the lead (a column or a custom field): only then is `leads` joined. */
function readsLead(nodes: Array<Condition | ConditionGroup>): boolean {
  return nodes.some((n) => (isGroup(n) ? readsLead(n.conditions) : n.field.startsWith('lead.')));
}

function jsonRefs(nodes: Array<Condition | ConditionGroup>): Array<Extract<FieldRef, { kind: 'json' }>> {
  const out = new Map<string, Extract<FieldRef, { kind: 'json' }>>();
  const walk = (n: Condition | ConditionGroup) => {
    if (isGroup(n)) return n.conditions.forEach(walk);
    const ref = fieldRef(n.field);
    if (ref?.kind === 'json') out.set(slotKey(ref), ref);
  };
  nodes.forEach(walk);
  return [...out.values()];
}

export function evaluationSelect(rule: SetRule, scope: SQL, options: { tail?: SQL; extra?: SQL } = {}): SQL {
  const refs = jsonRefs(detailItems(rule));
  const slots: Slots = new Map(
    refs.map((ref, i) => [
      slotKey(ref),
      { j: sql.raw(`fj.j${i}`), t: sql.raw(`ft.t${i}`), n: sql.raw(`ft.n${i}`), isArray: sql.raw(`ft.a${i}`) },
    ]),
  );
  // Each field is extracted once (fj), then its text/number/array-ness once (ft); OFFSET 0 keeps
  // the planner from inlining the subqueries back into every reference.
  const fieldJoins = refs.length
    ? sql`CROSS JOIN LATERAL (SELECT ${sql.join(
        refs.map((r, i) => sql`${jsonOf(r)} AS ${sql.raw(`j${i}`)}`),
        sql`, `,
      )} OFFSET 0) AS fj
    CROSS JOIN LATERAL (SELECT ${sql.join(
      refs.map((_, i) => {
        const j = sql.raw(`fj.j${i}`);
        return sql`${jsonText(j)} AS ${sql.raw(`t${i}`)}, ${jsonNumber(j)} AS ${sql.raw(`n${i}`)},
          jsonb_typeof(${j}) = 'array' AS ${sql.raw(`a${i}`)}`;
      }),
      sql`, `,
    )} OFFSET 0) AS ft`
    : sql``;
  const items = detailItems(rule).map((n) => compileNode(n, slots));
  const cols = sql.join(
    items.map((_, i) => sql.raw(`m.c${i}`)),
    sql`, `,
  );
  const names = sql.raw(items.map((_, i) => `c${i}`).join(', '));
  let score: SQL;
  let matched: SQL;
  if (rule.type === 'FILTER') {
    matched = sql`(${sql.join(
      items.map((_, i) => sql.raw(`m.c${i}`)),
      rule.conditions.operator === 'AND' ? sql` AND ` : sql` OR `,
    )})`;
    score = sql`(CASE WHEN ${matched} THEN 100 ELSE 0 END)`;
  } else {
    const total = rule.criteria.reduce((n, c) => n + c.weight, 0);
    const held = sql.join(
      rule.criteria.map((c, i) => sql`(CASE WHEN ${sql.raw(`m.c${i}`)} THEN ${c.weight}::int ELSE 0 END)`),
      sql` + `,
    );
    score = sql`round(100.0 * (${held}) / ${total}::int)::int`;
    matched = sql`(${score} >= ${rule.threshold}::int)`;
  }
  return sql`SELECT p.id AS profile_id, p.lead_id, ${matched} AS matched, ${score} AS match_score,
      jsonb_build_array(${cols}) AS details${options.extra ?? sql``}
    FROM profiles p
    ${readsLead(detailItems(rule)) ? sql`LEFT JOIN leads l ON l.id = p.lead_id AND l.user_id = p.user_id` : sql``}
    ${fieldJoins}
    CROSS JOIN LATERAL (SELECT ${sql.join(items, sql`, `)} OFFSET 0) AS m(${names})
    WHERE ${scope} ${options.tail ?? sql``}`;
}
