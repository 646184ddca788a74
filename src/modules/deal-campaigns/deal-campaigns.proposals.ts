import type { Db } from '../../db/client.ts';
import type { ProfileFieldDefinition } from '../../db/schema/index.ts';
import { AppError } from '../../shared/errors.ts';
import {
  type Condition,
  type ConditionGroup,
  checkDefinition,
  LEAD_CONDITION_FIELDS,
  ruleDefinitionSchema,
} from '../matching/index.ts';
import type { SuggestedRule } from './deal-campaigns.schemas.ts';

/**
 * The checks every matching-rule proposal (the model's or the rule-based builder's) passes before it
 * is answered or saved: ruleDefinitionSchema, fields that exist on the profile type or among
 * LEAD_CONDITION_FIELDS, and the matching module's checkDefinition (what saving a rule by hand runs).
 */

export type Proposal = Omit<SuggestedRule, 'method' | 'id'>;

const LEAD_FIELDS = new Set<string>(LEAD_CONDITION_FIELDS);

type Checked = { ok: true; rule: Proposal } | { ok: false; problem: string; paths: string[] };

/**
 * Parses a proposal with ruleDefinitionSchema, checks its fields exist, then runs the matching module's
 * own checkDefinition (operands, regexes compiled by PostgreSQL, size limits): a proposal that passes
 * is exactly what POST /api/matching/rules would accept. On failure, `paths` are the bad parts
 * (`conditions.conditions.2.value`, `criteria.1.condition.value`).
 */
export async function checkProposal(db: Db, p: Proposal, fields: ProfileFieldDefinition[]): Promise<Checked> {
  const parsed = ruleDefinitionSchema.safeParse(
    p.type === 'FILTER'
      ? { type: p.type, conditions: p.conditions }
      : p.type === 'SCORED'
        ? { type: p.type, criteria: p.criteria, threshold: p.threshold }
        : { type: p.type, aiPrompt: p.aiPrompt, threshold: p.threshold },
  );
  if (!parsed.success)
    return {
      ok: false,
      problem: parsed.error.issues.map((i) => `${i.path.join('.') || 'rule'}: ${i.message}`).join('; '),
      paths: [],
    };
  const known = new Set(fields.map((f) => `profile.${f.name}`));
  const unknown: string[] = [];
  const walk = (c: Condition | ConditionGroup) => {
    if ('conditions' in c) return c.conditions.forEach(walk);
    const lead = c.field.startsWith('lead.') ? c.field.slice(5) : undefined;
    if (!(known.has(c.field) || (lead !== undefined && LEAD_FIELDS.has(lead)))) unknown.push(c.field);
  };
  const def = parsed.data;
  if (def.type === 'FILTER') walk(def.conditions);
  if (def.type === 'SCORED') for (const cr of def.criteria) walk(cr.condition);
  if (unknown.length) return { ok: false, problem: `unknown field ${[...new Set(unknown)].join(', ')}`, paths: [] };
  try {
    await checkDefinition(db, def, fields);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'VALIDATION_ERROR') throw error;
    const details = error.details ?? [];
    return {
      ok: false,
      problem: details.map((d) => `${d.field}: ${d.message}`).join('; ') || error.message,
      paths: details.map((d) => d.field),
    };
  }
  return { ok: true, rule: { name: p.name, description: p.description, rationale: p.rationale, ...def } as Proposal };
}

/** Top-level conditions (FILTER) or criteria (SCORED) of a flat proposal that `paths` name. */
export function badItems(p: Proposal, paths: string[]): Set<number> {
  const re = p.type === 'FILTER' ? /^conditions\.conditions\.(\d+)\./ : /^criteria\.(\d+)\./;
  return new Set(paths.flatMap((path) => (re.exec(path) ? [Number(re.exec(path)![1])] : [])));
}

/** Proposals that pass checkProposal, as checked; the others are dropped with a note. */
export async function keepValid(
  db: Db,
  proposals: Proposal[],
  fields: ProfileFieldDefinition[],
  notes: string[],
): Promise<Proposal[]> {
  const kept: Proposal[] = [];
  for (const p of proposals) {
    const checked = await checkProposal(db, p, fields);
    if (checked.ok) kept.push(checked.rule);
    else notes.push(`${p.type} "${p.name}": dropped (${checked.problem})`);
  }
  return kept;
}
