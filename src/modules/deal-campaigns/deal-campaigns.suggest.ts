import { z } from 'zod';
import type { Db } from '../../db/client.ts';
import type { CampaignTarget, MatchingRuleType, ProfileFieldDefinition } from '../../db/schema/index.ts';
import type { AiService } from '../../shared/ai/ai.service.ts';
import {
  type Condition,
  type ConditionGroup,
  type Criterion,
  conditionOperators,
  LEAD_CONDITION_FIELDS,
  MAX_CONDITIONS,
  MAX_TOTAL_CONDITIONS,
} from '../matching/index.ts';
import { badItems, checkProposal, keepValid, type Proposal } from './deal-campaigns.proposals.ts';
import type { SuggestedRule } from './deal-campaigns.schemas.ts';

/**
 * Matching-rule proposals from a campaign's target: a documented rule-based builder (used without
 * an AI provider, and for any type the model got wrong), the model's answer converted, and the whole
 * suggestion; every proposal passes the checks of deal-campaigns.proposals.ts before it is answered or saved.
 */

export interface SuggestContext {
  campaignName: string;
  description: string | null;
  target: CampaignTarget;
  fields: ProfileFieldDefinition[];
}

/* ---------- field detection (by the words of a field's name and label) ---------- */

const wordsOf = (f: ProfileFieldDefinition) =>
  `${f.name.replace(/([a-z0-9])([A-Z])/g, '$1 $2')} ${f.label ?? ''}`
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
const hasWord = (f: ProfileFieldDefinition, words: Set<string>) => wordsOf(f).some((w) => words.has(w));
const isText = (f: ProfileFieldDefinition) => f.type === 'string' || (f.type === 'array' && f.items?.type === 'string');
const isNumeric = (f: ProfileFieldDefinition) => f.type === 'number' || f.type === 'integer';

const LOCATION_WORDS = new Set([
  'location',
  'locations',
  'city',
  'cities',
  'country',
  'countries',
  'region',
  'regions',
  'state',
  'province',
  'address',
  'headquarters',
  'hq',
  'town',
  'territory',
  'area',
  'zip',
  'metro',
]);
const INDUSTRY_WORDS = new Set([
  'industry',
  'industries',
  'sector',
  'sectors',
  'vertical',
  'verticals',
  'niche',
  'market',
  'markets',
  'segment',
  'category',
  'categories',
  'specialty',
  'specialties',
  'specialization',
]);
const SIZE_WORDS = new Set(['employees', 'employee', 'headcount', 'staff', 'workforce', 'size', 'fte']);
const TEXT_WORDS = new Set([
  'description',
  'about',
  'summary',
  'bio',
  'overview',
  'services',
  'products',
  'keywords',
  'tags',
  'notes',
  'headline',
  'tagline',
  'focus',
  'specialties',
  'offerings',
]);

export function detectFields(fields: ProfileFieldDefinition[]) {
  const location = fields.filter((f) => isText(f) && hasWord(f, LOCATION_WORDS));
  const industry = fields.filter((f) => isText(f) && hasWord(f, INDUSTRY_WORDS));
  const size = fields.find((f) => isNumeric(f) && hasWord(f, SIZE_WORDS));
  const sizeText = fields.find((f) => !isNumeric(f) && hasWord(f, SIZE_WORDS));
  const descriptive = fields.filter((f) => isText(f) && hasWord(f, TEXT_WORDS) && !location.includes(f));
  const text = descriptive.length
    ? descriptive
    : fields.filter((f) => isText(f) && !location.includes(f) && f.type !== 'array');
  return { location, industry, size, sizeText, text };
}

/* ---------- rule-based proposals ---------- */

const contains = (field: string, value: string): Condition => ({ field, operator: 'contains', value });
/**
 * Conditions one list dimension may use: a group holds at most MAX_CONDITIONS, and the four list
 * dimensions (titles, locations, industries, keywords) plus two company-size bounds must fit in one
 * rule's MAX_TOTAL_CONDITIONS.
 */
const PER_DIMENSION = Math.min(MAX_CONDITIONS, Math.floor((MAX_TOTAL_CONDITIONS - 2) / 4));

/** OR over values × fields (capped at PER_DIMENSION); one condition stays bare. */
function anyOf(
  fields: string[],
  values: string[],
  notes: string[],
  what: string,
): Condition | ConditionGroup | undefined {
  const all = values.flatMap((v) => fields.map((f) => contains(f, v)));
  if (all.length > PER_DIMENSION) {
    notes.push(
      `${what}: only the first ${PER_DIMENSION} of ${all.length} value × field conditions were kept ` +
        `(a rule holds at most ${MAX_TOTAL_CONDITIONS} conditions).`,
    );
  }
  const kept = all.slice(0, PER_DIMENSION);
  if (!kept.length) return undefined;
  return kept.length === 1 ? kept[0] : { operator: 'OR', conditions: kept };
}

/** Fewer alternatives = a more specific criterion = a larger weight: round(base / √n), at least 1. */
export const specificityWeight = (alternatives: number, base: number) =>
  Math.max(1, Math.min(100, Math.round(base / Math.sqrt(Math.max(1, alternatives)))));

interface Dimension {
  label: string;
  condition: Condition | ConditionGroup;
  /** Part of the FILTER (a hard requirement) or only scored. */
  hard: boolean;
  weight: number;
  why: string;
}

function dimensions(ctx: SuggestContext, notes: string[]): Dimension[] {
  const { target } = ctx;
  const found = detectFields(ctx.fields);
  const out: Dimension[] = [];
  const names = (fs: ProfileFieldDefinition[]) => fs.map((f) => `profile.${f.name}`);
  const quoted = (vs: string[]) => vs.map((v) => `"${v}"`).join(', ');

  if (target.titles.length) {
    const condition = anyOf(['lead.jobTitle'], target.titles, notes, 'titles')!;
    const weight = specificityWeight(target.titles.length, 40);
    out.push({
      label: `Title: ${target.titles.join(' / ')}`.slice(0, 200),
      condition,
      hard: true,
      weight,
      why:
        `lead.jobTitle contains one of ${quoted(target.titles)} ` +
        `(weight ${weight} = round(40 / √${target.titles.length}))`,
    });
  }
  if (target.locations.length) {
    if (found.location.length) {
      const condition = anyOf(names(found.location), target.locations, notes, 'locations')!;
      const weight = specificityWeight(target.locations.length, 40);
      out.push({
        label: `Location: ${target.locations.join(' / ')}`.slice(0, 200),
        condition,
        hard: true,
        weight,
        why:
          `${names(found.location).join(', ')} contains one of ${quoted(target.locations)} ` +
          `(weight ${weight} = round(40 / √${target.locations.length}))`,
      });
    } else
      notes.push(
        'locations: the profile type has no location-like field (location, city, country, region, ' +
          'address…), so locations are not used.',
      );
  }
  const keywordFields = names(found.text);
  if (target.industries.length) {
    if (found.industry.length) {
      const condition = anyOf(names(found.industry), target.industries, notes, 'industries')!;
      const weight = specificityWeight(target.industries.length, 40);
      out.push({
        label: `Industry: ${target.industries.join(' / ')}`.slice(0, 200),
        condition,
        hard: true,
        weight,
        why:
          `${names(found.industry).join(', ')} contains one of ${quoted(target.industries)} ` +
          `(weight ${weight} = round(40 / √${target.industries.length}))`,
      });
    } else if (keywordFields.length) {
      const condition = anyOf(keywordFields, target.industries, notes, 'industries')!;
      const weight = specificityWeight(target.industries.length, 20);
      out.push({
        label: `Industry words: ${target.industries.join(' / ')}`.slice(0, 200),
        condition,
        hard: false,
        weight,
        why:
          `no industry-like field, so the industries are looked for in the text fields ${keywordFields.join(', ')} ` +
          `(scored only; weight ${weight} = round(20 / √${target.industries.length}))`,
      });
    } else notes.push('industries: the profile type has no industry-like or text field, so industries are not used.');
  }
  if (target.companySize) {
    const { min, max } = target.companySize;
    if (found.size) {
      const field = `profile.${found.size.name}`;
      const conds: Condition[] = [];
      if (min !== null) conds.push({ field, operator: 'gte', value: min });
      if (max !== null) conds.push({ field, operator: 'lte', value: max });
      const condition = conds.length === 1 ? conds[0]! : { operator: 'AND' as const, conditions: conds };
      const weight = conds.length === 2 ? 30 : 15;
      const range = min !== null && max !== null ? `${min}–${max}` : min !== null ? `≥ ${min}` : `≤ ${max}`;
      out.push({
        label: `Company size ${range}`,
        condition,
        hard: true,
        weight,
        why: `${field} ${range} (weight ${weight}: ${conds.length === 2 ? 'a closed range' : 'one bound only'})`,
      });
    } else if (found.sizeText)
      notes.push(
        `companySize: profile.${found.sizeText.name} is not a number field, ` +
          'so the size range cannot be compared and is not used.',
      );
    else
      notes.push(
        'companySize: the profile type has no numeric employees-like field (employees, headcount, staff, ' +
          'size…), so the size range is not used.',
      );
  }
  if (target.keywords.length) {
    if (keywordFields.length) {
      const condition = anyOf(keywordFields, target.keywords, notes, 'keywords')!;
      const weight = specificityWeight(target.keywords.length, 20);
      out.push({
        label: `Keywords: ${target.keywords.join(' / ')}`.slice(0, 200),
        condition,
        hard: false,
        weight,
        why:
          `${keywordFields.join(', ')} contains one of ${quoted(target.keywords)} ` +
          `(scored only; weight ${weight} = round(20 / √${target.keywords.length}))`,
      });
    } else notes.push('keywords: the profile type has no text field to search, so keywords are not used.');
  }
  return out;
}

/** The campaign's target in plain words (the AI rule's prompt, and the model's brief). */
export function describeTarget(ctx: SuggestContext): string {
  const t = ctx.target;
  const parts: string[] = [];
  if (t.industries.length) parts.push(`works in ${t.industries.join(', ')}`);
  if (t.locations.length) parts.push(`is located in ${t.locations.join(', ')}`);
  if (t.companySize) {
    const { min, max } = t.companySize;
    parts.push(
      min !== null && max !== null
        ? `has ${min} to ${max} employees`
        : min !== null
          ? `has at least ${min} employees`
          : `has at most ${max} employees`,
    );
  }
  if (t.titles.length) parts.push(`can be reached through people with titles such as ${t.titles.join(', ')}`);
  if (t.keywords.length) parts.push(`relates to ${t.keywords.join(', ')}`);
  return parts.length ? `The ideal customer ${parts.join('; ')}.` : '';
}

/** Rule-based proposals for `types`, with notes on what could not be used. */
export function ruleBasedRules(
  ctx: SuggestContext,
  types: readonly MatchingRuleType[],
): { rules: Proposal[]; notes: string[] } {
  const notes: string[] = [];
  const dims = dimensions(ctx, notes);
  const rules: Proposal[] = [];
  const base = ctx.campaignName.slice(0, 150);
  for (const type of types) {
    if (type === 'FILTER') {
      const hard = dims.filter((d) => d.hard);
      if (!hard.length) {
        notes.push(
          'FILTER: the target has no criterion that maps to a field (titles, locations, industries or ' +
            'company size), so no filter is proposed.',
        );
        continue;
      }
      rules.push({
        name: `${base}: must-haves`,
        description: 'Keeps profiles that meet every hard criterion of the campaign target.',
        type,
        conditions: { operator: 'AND', conditions: hard.map((d) => d.condition) },
        rationale: `Rule-based: every hard criterion must hold: ${hard
          .map((d) => d.why.replace(/ \(weight.*\)$/, ''))
          .join('; ')}.`,
      });
    } else if (type === 'SCORED') {
      if (!dims.length) {
        notes.push('SCORED: the target has no criterion that maps to a field, so no scored rule is proposed.');
        continue;
      }
      const criteria: Criterion[] = dims.map((d) => ({ label: d.label, weight: d.weight, condition: d.condition }));
      rules.push({
        name: `${base}: fit score`,
        description: 'Scores profiles by the share of target criteria they meet, more specific criteria weighing more.',
        type,
        criteria,
        threshold: 50,
        rationale: `Rule-based: ${dims.map((d) => d.why).join('; ')}. A profile matches at 50 or more.`,
      });
    } else {
      const described = describeTarget(ctx);
      const prompt = [
        `Decide whether this profile is a good prospect for the campaign "${ctx.campaignName}".`,
        ctx.description ? `Campaign: ${ctx.description}` : '',
        described || 'The campaign states no target criteria; judge by the campaign description.',
        'Score 0–100 by how many of these criteria the profile meets and how clearly; say which hold and which do not.',
      ]
        .filter(Boolean)
        .join(' ')
        .slice(0, 4000);
      rules.push({
        name: `${base}: AI fit`,
        description: 'The model judges each profile against the campaign target.',
        type,
        aiPrompt: prompt,
        threshold: 60,
        rationale:
          'Rule-based: the prompt restates the campaign target in plain words; a profile matches when the ' +
          'model says so with a score of 60 or more.',
      });
    }
  }
  return { rules, notes };
}

/* ---------- the model's answer ---------- */

/** Loose on purpose (strict-mode friendly, no enums the model could miss): the checks above decide what is kept. */
const modelCondition = z.object({
  field: z.string(),
  operator: z.string(),
  value: z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number()])), z.null()]),
});
export const modelSuggestion = z.object({
  reasoning: z.string(),
  rules: z.array(
    z.object({
      type: z.string().describe('FILTER, SCORED or AI'),
      name: z.string(),
      description: z.string(),
      rationale: z.string(),
      match: z.string().nullable().describe('FILTER: ALL (every condition) or ANY (at least one)'),
      conditions: z.array(modelCondition).nullable().describe('FILTER only'),
      criteria: z
        .array(z.object({ label: z.string(), weight: z.number(), condition: modelCondition }))
        .nullable()
        .describe('SCORED only'),
      threshold: z.number().nullable().describe('SCORED and AI: 0–100'),
      aiPrompt: z.string().nullable().describe('AI only'),
    }),
  ),
});
export type ModelSuggestion = z.infer<typeof modelSuggestion>;
type ModelCondition = z.infer<typeof modelCondition>;

/**
 * A model condition as the rule language wants it; small repairs are made and noted, anything else is dropped
 * (undefined).
 */
function repairCondition(
  c: ModelCondition,
  fields: ProfileFieldDefinition[],
  repairs: string[],
): Condition | undefined {
  const operator = c.operator.trim().toLowerCase() as Condition['operator'];
  if (!(conditionOperators as readonly string[]).includes(operator)) return undefined;
  const field = c.field.trim();
  let value: Condition['value'] = c.value ?? undefined;
  if (operator === 'exists' || operator === 'not_exists') value = undefined;
  else if (value === undefined) return undefined;
  else if ((operator === 'in' || operator === 'not_in') && !Array.isArray(value)) {
    if (typeof value === 'boolean') return undefined;
    value = [value];
    repairs.push(`${field} ${operator}: a single value was wrapped in a list`);
  } else if (!(operator === 'in' || operator === 'not_in') && Array.isArray(value)) {
    if (value.length !== 1) return undefined;
    value = value[0]!;
    repairs.push(`${field} ${operator}: a one-item list was unwrapped`);
  }
  const def = fields.find((f) => `profile.${f.name}` === field);
  if (def && isNumeric(def) && ['gt', 'gte', 'lt', 'lte'].includes(operator) && typeof value === 'string') {
    const n = Number(value.replace(/[, _]/g, ''));
    if (!Number.isFinite(n)) return undefined;
    value = n;
    repairs.push(`${field} ${operator}: "${c.value}" read as the number ${n}`);
  }
  return value === undefined ? { field, operator } : { field, operator, value };
}

/** The model's rules converted and checked; what was dropped or repaired goes into `notes`. */
export async function fromModel(
  db: Db,
  answer: ModelSuggestion,
  fields: ProfileFieldDefinition[],
  types: readonly MatchingRuleType[],
  notes: string[],
): Promise<Proposal[]> {
  const kept: Proposal[] = [];
  for (const [i, m] of answer.rules.entries()) {
    const label = `model rule ${i + 1} ("${m.name.slice(0, 80)}")`;
    const type = m.type.trim().toUpperCase() as MatchingRuleType;
    if (!types.includes(type)) {
      notes.push(`${label}: dropped, type ${m.type} was not asked for`);
      continue;
    }
    const repairs: string[] = [];
    const dropped: string[] = [];
    const convert = (c: ModelCondition) => {
      const out = repairCondition(c, fields, repairs);
      if (!out) dropped.push(`${c.field} ${c.operator}`);
      return out;
    };
    const base = {
      name: m.name.trim().slice(0, 200) || `Suggested ${type} rule`,
      description: m.description.trim().slice(0, 2000),
      type,
      rationale: m.rationale.trim().slice(0, 2000) || 'Proposed by the model.',
    };
    let proposal: Proposal;
    if (type === 'FILTER') {
      const conditions = (m.conditions ?? []).map(convert).filter((c): c is Condition => !!c);
      proposal = { ...base, conditions: { operator: m.match?.toUpperCase() === 'ANY' ? 'OR' : 'AND', conditions } };
    } else if (type === 'SCORED') {
      const criteria = (m.criteria ?? []).flatMap((cr) => {
        const condition = convert(cr.condition);
        return condition
          ? [
              {
                label: cr.label.trim().slice(0, 200) || undefined,
                weight: Math.min(100, Math.max(1, Math.round(cr.weight))),
                condition,
              },
            ]
          : [];
      });
      proposal = {
        ...base,
        criteria: criteria as Criterion[],
        threshold: m.threshold === null ? 50 : Math.min(100, Math.max(0, Math.round(m.threshold))),
      };
    } else {
      proposal = {
        ...base,
        aiPrompt: (m.aiPrompt ?? '').trim().slice(0, 4000),
        ...(m.threshold === null ? {} : { threshold: Math.min(100, Math.max(0, Math.round(m.threshold))) }),
      };
    }
    // Conditions naming fields that do not exist are dropped one by one before the rule is checked.
    const known = new Set([
      ...fields.map((f) => `profile.${f.name}`),
      ...LEAD_CONDITION_FIELDS.map((f) => `lead.${f}`),
    ]);
    const keepKnown = (c: Condition) => known.has(c.field) || void dropped.push(`${c.field} (no such field)`);
    if (proposal.conditions)
      proposal.conditions = {
        ...proposal.conditions,
        conditions: (proposal.conditions.conditions as Condition[]).filter(keepKnown),
      };
    if (proposal.criteria) proposal.criteria = proposal.criteria.filter((cr) => keepKnown(cr.condition as Condition));
    let checked = await checkProposal(db, proposal, fields);
    // Conditions the matching check rejects (an operand that does not fit, a regex PostgreSQL refuses) are dropped the
    // same way.
    const bad = checked.ok ? new Set<number>() : badItems(proposal, checked.paths);
    if (!checked.ok && bad.size) {
      const why = checked.problem;
      if (proposal.conditions) {
        const all = proposal.conditions.conditions as Condition[];
        all.forEach((c, j) => {
          if (bad.has(j)) dropped.push(`${c.field} ${c.operator} (${why})`);
        });
        proposal.conditions = { ...proposal.conditions, conditions: all.filter((_, j) => !bad.has(j)) };
      }
      if (proposal.criteria) {
        proposal.criteria.forEach((cr, j) => {
          const c = cr.condition as Condition;
          if (bad.has(j)) dropped.push(`${c.field} ${c.operator} (${why})`);
        });
        proposal.criteria = proposal.criteria.filter((_, j) => !bad.has(j));
      }
      checked = await checkProposal(db, proposal, fields);
    }
    if (!checked.ok) {
      notes.push(
        `${label}: dropped (${checked.problem}${dropped.length ? `; unusable conditions: ${dropped.join(', ')}` : ''})`,
      );
      continue;
    }
    if (dropped.length) notes.push(`${label}: unusable conditions removed: ${dropped.join(', ')}`);
    if (repairs.length) notes.push(`${label}: repaired: ${repairs.join('; ')}`);
    kept.push(checked.rule);
  }
  return kept;
}

/* ---------- the whole suggestion: AI when configured, else rule-based ---------- */

const SYSTEM = [
  'You write matching rules that find good prospects among scraped profiles for a sales campaign.',
  'Rule types: FILTER (conditions that must all hold, match ALL, or at least one, match ANY), SCORED (weighted ' +
    'criteria 1–100, a profile matches when its score reaches threshold), AI (a plain-words aiPrompt a model applies ' +
    'to each profile, optional threshold).',
  'A condition is {field, operator, value}. field is `profile.<name>` for a field of the profile type listed below, ' +
    'or `lead.<column>` for a lead column listed below; use no other field.',
  `operator is one of ${conditionOperators.join(', ')}. in/not_in take a list; gt/gte/lt/lte a number or ISO date; ` +
    'exists/not_exists take null; the others one value. Text comparisons ignore case.',
  'Set the keys a type does not use to null. Base every rule on the campaign target; explain each in rationale.',
].join(' ');

export interface SuggestOutcome {
  rules: Array<Omit<SuggestedRule, 'id'>>;
  method: 'ai' | 'rule-based';
  reasoning: string;
  adjustments: string[];
}

export async function suggestRules(
  deps: { ai: AiService; db: Db },
  userId: string,
  ctx: SuggestContext,
  types: readonly MatchingRuleType[],
  signal?: AbortSignal,
): Promise<SuggestOutcome> {
  const fallback = ruleBasedRules(ctx, types);
  fallback.rules = await keepValid(deps.db, fallback.rules, ctx.fields, fallback.notes);
  if (!deps.ai.configured) {
    return {
      rules: fallback.rules.map((r) => ({ ...r, method: 'rule-based' as const })),
      method: 'rule-based',
      reasoning:
        'Rule-based proposal (no AI provider is configured): titles become lead.jobTitle conditions, locations, ' +
        'industries and company size map to profile fields found by their names, keywords are looked for in text ' +
        'fields, and SCORED weights are round(base / √alternatives).',
      adjustments: fallback.notes,
    };
  }
  const fieldList = ctx.fields
    .map(
      (f) =>
        `- profile.${f.name} (${f.type}${f.items ? ` of ${f.items.type}` : ''}` +
        `${f.label ? `, "${f.label}"` : ''}${f.enum ? `, one of ${f.enum.join(' | ')}` : ''})`,
    )
    .join('\n');
  const t = ctx.target;
  const companySize = t.companySize ? `${t.companySize.min ?? 'any'}–${t.companySize.max ?? 'any'} employees` : '(any)';
  const prompt = [
    `Campaign: ${ctx.campaignName}${ctx.description ? `\n${ctx.description}` : ''}`,
    `Target: industries ${t.industries.join(', ') || '(any)'}; locations ${t.locations.join(', ') || '(any)'}; ` +
      `company size ${companySize}; titles ${t.titles.join(', ') || '(any)'}; ` +
      `keywords ${t.keywords.join(', ') || '(none)'}.`,
    `Profile fields:\n${fieldList || '(none)'}`,
    `Lead columns: ${LEAD_CONDITION_FIELDS.map((f) => `lead.${f}`).join(', ')}`,
    `Propose one rule of each of these types: ${types.join(', ')}.`,
  ].join('\n\n');
  const answer = await deps.ai.generateObject({
    userId,
    feature: 'campaigns.suggest-matching',
    schema: modelSuggestion,
    schemaName: 'matching_rules',
    system: SYSTEM,
    prompt,
    signal,
  });
  const adjustments: string[] = [];
  const fromAi = await fromModel(deps.db, answer, ctx.fields, types, adjustments);
  const rules: SuggestOutcome['rules'] = [];
  for (const type of types) {
    const mine = fromAi.filter((r) => r.type === type);
    if (mine.length) {
      rules.push(...mine.map((r) => ({ ...r, method: 'ai' as const })));
      continue;
    }
    const replacement = fallback.rules.filter((r) => r.type === type);
    adjustments.push(
      replacement.length
        ? `${type}: the model gave no usable ${type} rule, so the rule-based proposal is used instead.`
        : `${type}: the model gave no usable ${type} rule and the target offers nothing to build one from.`,
    );
    rules.push(...replacement.map((r) => ({ ...r, method: 'rule-based' as const })));
  }
  const usedAi = rules.some((r) => r.method === 'ai');
  return {
    rules,
    method: usedAi ? 'ai' : 'rule-based',
    reasoning:
      `${answer.reasoning.trim().slice(0, 4000) || 'Proposed by the AI model.'}` +
      `${usedAi ? '' : " (None of the model's rules could be used; every rule is the rule-based proposal.)"}`,
    adjustments: [...adjustments, ...(rules.some((r) => r.method === 'rule-based') ? fallback.notes : [])],
  };
}
