import { z } from 'zod';
import { matchingRuleTypes, matchingRunStatuses, profileStatuses } from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';
import { paginationQuery } from '../../shared/pagination.ts';
import { conditionGroupSchema, criteriaSchema, ruleDefinitionSchema } from './matching.conditions.ts';

export const PREVIEW_DEFAULT_SAMPLE = 20;
export const PREVIEW_MAX_SAMPLE = 100;
export const PREVIEW_MAX_AI_SAMPLE = 20;

const uuid = (what: string) => z.string().refine(isUuid, 'must be a UUID').describe(what);
const name = z.string().trim().min(1).max(200);
const description = z.string().trim().max(2000);

const ruleBase = {
  name,
  description: description.nullish(),
  profileTypeId: uuid('The profile type whose profiles the rule evaluates (yours)'),
};
const [filterDef, scoredDef, aiDef] = ruleDefinitionSchema.options;

/** POST /api/matching/rules: common fields + one definition by `type`. */
export const createRuleBody = z.discriminatedUnion('type', [
  filterDef.extend(ruleBase).strict(),
  scoredDef.extend(ruleBase).strict(),
  aiDef.extend(ruleBase).strict(),
]);

/** A rule to preview without saving it: like creation, `name` optional. */
const previewRule = z.discriminatedUnion('type', [
  filterDef.extend({ ...ruleBase, name: name.optional() }).strict(),
  scoredDef.extend({ ...ruleBase, name: name.optional() }).strict(),
  aiDef.extend({ ...ruleBase, name: name.optional() }).strict(),
]);

export const updateRuleBody = z
  .object({
    name: name.optional(),
    description: description.nullable().optional(),
    type: z.enum(matchingRuleTypes).optional().describe('Changing the type needs the whole definition of the new type'),
    conditions: conditionGroupSchema.optional(),
    criteria: criteriaSchema.optional(),
    threshold: z.number().int().min(0).max(100).nullable().optional(),
    aiPrompt: z.string().trim().min(1).max(4000).optional(),
  })
  .strict();

export const listRulesQuery = paginationQuery.extend({
  type: z.enum(matchingRuleTypes).optional(),
  profileTypeId: uuid('Only rules over this profile type').optional(),
});

export const executeBody = z
  .object({ ruleId: z.string().min(1).max(200).describe('The rule to run (yours)') })
  .strict();

export const previewBody = z
  .object({
    ruleId: z.string().min(1).max(200).optional().describe('A saved rule; or give `rule`'),
    rule: previewRule.optional().describe('An unsaved rule: {profileTypeId, type, …definition}'),
    sampleSize: z
      .number()
      .int()
      .min(1)
      .max(PREVIEW_MAX_SAMPLE)
      .optional()
      .describe(
        `Newest profiles of the type to evaluate (default ${PREVIEW_DEFAULT_SAMPLE}; ` +
          `at most ${PREVIEW_MAX_SAMPLE}, ${PREVIEW_MAX_AI_SAMPLE} for AI rules)`,
      ),
    profileIds: z
      .array(z.string().min(1).max(200))
      .min(1)
      .max(PREVIEW_MAX_SAMPLE)
      .optional()
      .describe("Exactly these profiles (yours, of the rule's type) instead of a sample"),
  })
  .strict()
  .superRefine((b, ctx) => {
    if ((b.ruleId === undefined) === (b.rule === undefined))
      ctx.addIssue({ code: 'custom', path: ['ruleId'], message: 'give exactly one of ruleId, rule' });
    if (b.sampleSize !== undefined && b.profileIds !== undefined)
      ctx.addIssue({ code: 'custom', path: ['sampleSize'], message: 'give sampleSize or profileIds, not both' });
  });

const boolText = z.enum(['true', 'false']).transform((v) => v === 'true');
const score = z.coerce.number().int().min(0).max(100);

export const resultsQuery = paginationQuery
  .extend({
    ruleId: z.string().min(1).max(200).describe('The rule whose stored results to list (yours)'),
    minScore: score.optional().describe('Only results with matchScore ≥ minScore'),
    maxScore: score.optional().describe('Only results with matchScore ≤ maxScore'),
    matched: boolText.optional(),
  })
  .refine((q) => q.minScore === undefined || q.maxScore === undefined || q.minScore <= q.maxScore, {
    path: ['minScore'],
    message: 'must not exceed maxScore',
  });

export const runView = z
  .object({
    id: z.string(),
    status: z.enum(matchingRunStatuses),
    total: z.number().int(),
    processed: z.number().int(),
    matched: z.number().int(),
    failed: z.number().int().describe('Profiles the AI provider could not evaluate (after retries)'),
    progress: z.number().int().min(0).max(100),
    error: z.string().nullable(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'MatchingRun' });

export const ruleView = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    type: z.enum(matchingRuleTypes),
    profileTypeId: z.string(),
    conditions: z.unknown().nullable().describe('FILTER: the condition group'),
    criteria: z.unknown().nullable().describe('SCORED: the weighted criteria'),
    threshold: z.number().int().nullable(),
    aiPrompt: z.string().nullable(),
    lastRun: runView.nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'MatchingRule' });

export const detailsView = z
  .object({
    criteria: z
      .array(z.object({ label: z.string(), weight: z.number().int().nullable(), held: z.boolean() }))
      .optional()
      .describe('SCORED: each criterion and whether it held; FILTER: each top-level condition (weight null)'),
    ai: z
      .object({ match: z.boolean(), score: z.number().int(), reasoning: z.string() })
      .optional()
      .describe("AI: the model's answer"),
  })
  .nullable();

export const previewResultView = z
  .object({
    profileId: z.string(),
    leadId: z.string().nullable(),
    profile: z.object({ data: z.record(z.string(), z.unknown()), status: z.enum(profileStatuses) }),
    matched: z.boolean(),
    matchScore: z.number().int().nullable(),
    aiReasoning: z.string().nullable(),
    details: detailsView,
    error: z.string().nullable(),
  })
  .meta({ id: 'MatchingPreviewResult' });

export const resultView = previewResultView
  .extend({
    id: z.string(),
    changedAt: z
      .string()
      .describe(
        'When this result last changed: an execution that reaches the same verdict leaves the stored result as ' +
          "it is (the run's `finishedAt` says when it was last evaluated)",
      ),
  })
  .meta({ id: 'MatchingResult' });

export type CreateRuleInput = z.infer<typeof createRuleBody>;
export type UpdateRuleInput = z.infer<typeof updateRuleBody>;
export type ListRulesQuery = z.infer<typeof listRulesQuery>;
export type PreviewInput = z.infer<typeof previewBody>;
export type ResultsQuery = z.infer<typeof resultsQuery>;
export type RunView = z.infer<typeof runView>;
export type RuleView = z.infer<typeof ruleView>;
export type ResultView = z.infer<typeof resultView>;
export type PreviewResultView = z.infer<typeof previewResultView>;
export type DetailsView = z.infer<typeof detailsView>;
