import { z } from 'zod';

/**
 * The rule language shared by the matching engine (compiled to SQL), campaigns (suggest-matching
 * proposes rules in it) and the OpenAPI schema.
 *
 * A condition names a field:
 * - `profile.<field>`: a field of the profile's data (the profile type's fields);
 * - `lead.<column>`: a column of the lead the profile came from: firstName, lastName, fullName,
 *   email, emailDomain, phone, company, jobTitle, status, tags, sourceUrl, createdAt;
 * - `lead.customFields.<key>`: a custom field the scraper kept on the lead.
 * String comparisons ignore case unless `caseSensitive`; numbers compare as numbers; dates (ISO
 * strings) compare in time order; array fields (`tags`, array profile fields) match when any element
 * does (`equals`, `in`, `contains`), and `not_*` operators when none does.
 */
export const conditionOperators = [
  'equals',
  'not_equals',
  'in',
  'not_in',
  'contains',
  'not_contains',
  'gt',
  'gte',
  'lt',
  'lte',
  'exists',
  'not_exists',
  'regex',
] as const;
export type ConditionOperator = (typeof conditionOperators)[number];

export const LEAD_CONDITION_FIELDS = [
  'firstName',
  'lastName',
  'fullName',
  'email',
  'emailDomain',
  'phone',
  'company',
  'jobTitle',
  'status',
  'tags',
  'sourceUrl',
  'createdAt',
] as const;

/** What `lead.<column>` and `lead.customFields.<key>` conditions read of a lead (`fullName`, `emailDomain` derived). */
export interface MatchableLead {
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  phone: string | null;
  company: string | null;
  jobTitle: string | null;
  status: string | null;
  sourceUrl: string | null;
  tags: string[];
  createdAt: Date;
  customFields: Record<string, unknown>;
}

/** What a rule is evaluated on: a profile's data and its lead (null when the profile has none). */
export interface MatchableProfile {
  data: Record<string, unknown>;
  lead: MatchableLead | null;
}

export const MAX_CONDITIONS = 50;
/** Conditions in a whole definition, all groups and criteria together (each one becomes several bound parameters). */
export const MAX_TOTAL_CONDITIONS = 200;
export const MAX_GROUP_DEPTH = 3;
export const MAX_IN_VALUES = 500;

const FIELD_PATTERN =
  /^(profile\.[A-Za-z_][A-Za-z0-9_]{0,63}|lead\.[A-Za-z]+|lead\.customFields\.[A-Za-z_][A-Za-z0-9_ -]{0,63})$/;

const scalar = z.union([z.string().max(1000), z.number(), z.boolean()]);

export const conditionSchema = z
  .object({
    field: z
      .string()
      .regex(FIELD_PATTERN, 'must be profile.<field>, lead.<column> or lead.customFields.<key>')
      .describe('`profile.<field>`, `lead.<column>` or `lead.customFields.<key>`'),
    operator: z.enum(conditionOperators),
    value: z
      .union([
        scalar,
        z
          .array(z.union([z.string().max(1000), z.number()]))
          .min(1)
          .max(MAX_IN_VALUES),
      ])
      .optional()
      .describe(
        'Required except for exists/not_exists; an array for in/not_in; a number or ISO date for ' +
          'gt/gte/lt/lte; a pattern for regex',
      ),
    caseSensitive: z.boolean().optional().describe('String comparisons ignore case unless true'),
  })
  .strict();
export type Condition = z.infer<typeof conditionSchema>;

export interface ConditionGroup {
  operator: 'AND' | 'OR';
  conditions: Array<Condition | ConditionGroup>;
}

/** Groups nest up to MAX_GROUP_DEPTH levels (an explicit, non-recursive schema keeps the OpenAPI document plain). */
const groupOf = (inner: z.ZodType) =>
  z
    .object({
      operator: z.enum(['AND', 'OR']).describe('AND: every condition holds; OR: at least one does'),
      conditions: z.array(inner).min(1).max(MAX_CONDITIONS),
    })
    .strict();

/** The message of an `operator` that names neither a condition nor (where one may nest) a group. */
const operatorError = (groupAllowed: boolean) => (issue: { code?: string; input?: unknown }) => {
  if (issue.code !== 'invalid_union') return undefined;
  const given = (issue.input as { operator?: unknown } | undefined)?.operator;
  const conditions = conditionOperators.join(', ');
  if (!groupAllowed && (given === 'AND' || given === 'OR')) {
    return `groups nest at most ${MAX_GROUP_DEPTH} levels deep: here it must be a condition operator (${conditions})`;
  }
  return `must be a condition operator (${conditions})${groupAllowed ? ' or, for a group, AND or OR' : ''}`;
};

/*
 * A condition and a group are told apart by `operator` (a discriminated union), so a bad operator is
 * reported at `….operator` naming the valid ones; a plain union would report the parent as "Invalid input".
 */
const level3 = groupOf(z.discriminatedUnion('operator', [conditionSchema], { error: operatorError(false) }));
const level2 = groupOf(z.discriminatedUnion('operator', [conditionSchema, level3], { error: operatorError(true) }));
const level1 = groupOf(z.discriminatedUnion('operator', [conditionSchema, level2], { error: operatorError(true) }));
export const conditionGroupSchema = level1 as unknown as z.ZodType<ConditionGroup>;
const conditionOrGroup = z.discriminatedUnion('operator', [conditionSchema, level1], { error: operatorError(true) });

/** SCORED: each criterion that holds adds its weight; matchScore = round(100 × held weights ÷ all weights). */
export const criterionSchema = z
  .object({
    label: z.string().trim().min(1).max(200).optional().describe('Shown in the reasons of a result'),
    weight: z.number().int().min(1).max(100),
    condition: conditionOrGroup as unknown as z.ZodType<Condition | ConditionGroup>,
  })
  .strict();
export type Criterion = z.infer<typeof criterionSchema>;
export const criteriaSchema = z.array(criterionSchema).min(1).max(MAX_CONDITIONS);

/** A rule's definition by type; the service checks that each type has what it needs. */
export const ruleDefinitionSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('FILTER'), conditions: conditionGroupSchema }),
  z.object({
    type: z.literal('SCORED'),
    criteria: criteriaSchema,
    threshold: z.number().int().min(0).max(100).default(50).describe('A profile matches when matchScore ≥ threshold'),
  }),
  z.object({
    type: z.literal('AI'),
    aiPrompt: z
      .string()
      .trim()
      .min(1)
      .max(4000)
      .describe('What makes a good match, in plain words; the model answers {match, score, reasoning} per profile'),
    threshold: z
      .number()
      .int()
      .min(0)
      .max(100)
      .optional()
      .describe('When set, a profile matches only if the model says so and its score ≥ threshold'),
  }),
]);
export type RuleDefinition = z.infer<typeof ruleDefinitionSchema>;
