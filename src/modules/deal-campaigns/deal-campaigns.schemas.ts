import { z } from 'zod';
import { campaignStatuses, matchingRuleTypes, scrapeTypes } from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';
import { nextCursor, paginationQuery } from '../../shared/pagination.ts';
import { conditionGroupSchema, criteriaSchema } from '../matching/index.ts';

export const MAX_TARGET_ITEMS = 50;
export const MAX_CAMPAIGN_SOURCES = 200;
export const MAX_CAMPAIGN_RULES = 50;

/** Body ids are plain strings: one that names nothing of the caller's (whatever its shape) is a 404 naming it. */
const bodyId = z.string().trim().min(1).max(200);
const uuidString = z.string().refine(isUuid, 'must be a UUID');
const targetList = z.array(z.string().trim().min(1).max(200)).max(MAX_TARGET_ITEMS);
const employees = z.number().int().min(0).max(10_000_000).nullable().optional();

export const companySizeSchema = z
  .object({
    min: employees.describe('Fewest employees (inclusive)'),
    max: employees.describe('Most employees (inclusive)'),
  })
  .strict()
  .nullable();

export const targetSchema = z
  .object({
    industries: targetList.optional(),
    locations: targetList.optional(),
    companySize: companySizeSchema.optional(),
    titles: targetList.optional().describe('Job titles of the people to reach'),
    keywords: targetList.optional(),
  })
  .strict()
  .describe(
    `The ideal customer. Each list: at most ${MAX_TARGET_ITEMS} items of 1–200 characters; companySize min ≤ max.`,
  );

const ruleLink = z.object({
  ruleId: bodyId.describe('One of your matching rules'),
  weight: z
    .number()
    .int()
    .min(1)
    .max(100)
    .default(1)
    .describe('Weight of the rule in the fit score, 1–100 (default 1)'),
});

const campaignFields = {
  description: z.string().trim().max(5000).nullable().optional(),
  status: z.enum(campaignStatuses).optional(),
  target: targetSchema.optional(),
  projectId: bodyId.nullable().optional().describe('One of your projects (404 naming projectId otherwise)'),
  profileTypeId: bodyId.nullable().optional().describe('One of your profile types: the rules must be of this type'),
  sourceIds: z
    .array(bodyId)
    .max(MAX_CAMPAIGN_SOURCES)
    .optional()
    .describe(`Up to ${MAX_CAMPAIGN_SOURCES} of your sources (404 naming sourceIds.<i> otherwise)`),
  ruleIds: z
    .array(bodyId)
    .max(MAX_CAMPAIGN_RULES)
    .optional()
    .describe('Up to 50 of your matching rules, each with weight 1; or use `rules`'),
  rules: z
    .array(ruleLink)
    .max(MAX_CAMPAIGN_RULES)
    .optional()
    .describe('Up to 50 `{ruleId, weight}`; not together with `ruleIds`'),
};

export const createDealCampaignBody = z.object({ name: z.string().trim().min(1).max(200), ...campaignFields });
export const updateDealCampaignBody = z
  .object({ name: z.string().trim().min(1).max(200).optional(), ...campaignFields })
  .describe(
    'Every field is optional. `target` keys given replace those keys; `sourceIds` / `ruleIds` / `rules` ' +
      'replace the whole set.',
  );

export const listDealCampaignsQuery = paginationQuery.extend({
  status: z.enum(campaignStatuses).optional(),
  projectId: uuidString.optional(),
});

const targetView = z.object({
  industries: z.array(z.string()),
  locations: z.array(z.string()),
  companySize: z.object({ min: z.number().int().nullable(), max: z.number().int().nullable() }).nullable(),
  titles: z.array(z.string()),
  keywords: z.array(z.string()),
});

export const dealCampaignView = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    status: z.enum(campaignStatuses),
    target: targetView,
    projectId: z.string().nullable(),
    profileTypeId: z.string().nullable(),
    sourceIds: z.array(z.string()),
    rules: z.array(
      z.object({ ruleId: z.string(), name: z.string(), type: z.enum(matchingRuleTypes), weight: z.number().int() }),
    ),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Campaign' });

/* discover-sources */

export const discoverSourcesBody = z
  .object({
    count: z.number().int().min(1).max(20).default(10).describe('Sources wanted, 1–20 (default 10)'),
    autoSave: z
      .boolean()
      .default(false)
      .describe("Save them as DRAFT sources in the campaign's project and link them to the campaign"),
  })
  .nullish();

export const discoverSourcesView = z.object({
  sources: z.array(
    z.object({
      name: z.string(),
      url: z.string(),
      scrapeType: z.enum(scrapeTypes),
      category: z.string(),
      estimatedLeads: z.number().int(),
      description: z.string(),
      reasoning: z.string(),
      selectors: z.record(z.string(), z.string()).optional(),
      id: z.string().optional().describe('With autoSave: the saved source'),
      status: z.string().optional().describe('With autoSave: DRAFT'),
    }),
  ),
  method: z
    .enum(['ai+search', 'ai'])
    .describe(
      '`ai+search`: the model chose among web-search results; `ai`: web search failed, the model proposed the URLs',
    ),
  query: z.string().describe('The web-search query built from the target'),
});

/* suggest-matching */

export const suggestMatchingBody = z
  .object({
    types: z
      .array(z.enum(matchingRuleTypes))
      .min(1)
      .max(3)
      .optional()
      .describe('Rule types to propose (default all three)'),
    save: z.boolean().default(false).describe('Create the proposed rules and link them to the campaign (weight 1)'),
    profileTypeId: bodyId
      .optional()
      .describe('A profile type of yours, when the campaign has none (it is then set on the campaign if `save`)'),
  })
  .nullish();

export const suggestedRuleView = z
  .object({
    id: z.string().optional().describe('With save: the created rule'),
    name: z.string(),
    description: z.string(),
    type: z.enum(matchingRuleTypes),
    conditions: conditionGroupSchema.optional(),
    criteria: criteriaSchema.optional(),
    threshold: z.number().int().optional(),
    aiPrompt: z.string().optional(),
    rationale: z.string(),
    method: z.enum(['ai', 'rule-based']).describe('Who proposed this rule'),
  })
  .meta({ id: 'SuggestedMatchingRule' });

export const suggestMatchingView = z.object({
  rules: z.array(suggestedRuleView),
  method: z
    .enum(['ai', 'rule-based'])
    .describe('`ai` when the model proposed at least one kept rule; `rule-based` otherwise'),
  reasoning: z.string(),
  adjustments: z.array(z.string()).describe('What was dropped, repaired or replaced by a rule-based proposal, and why'),
});

/* ranked-accounts */

export const rankedAccountsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(1000).optional(),
  minScore: z.coerce
    .number()
    .int()
    .min(0)
    .max(100)
    .default(0)
    .describe('Only accounts whose fitScore is at least this'),
});

export const rankedAccountView = z
  .object({
    accountId: z.string(),
    name: z.string(),
    domain: z.string().nullable(),
    leadCount: z.number().int().describe("The account's leads (of the campaign's sources when it has any)"),
    fitScore: z.number().int(),
    matchedLeads: z.number().int().describe('Leads of the account with at least one matching result that matched'),
    reasons: z.array(
      z.object({
        ruleId: z.string(),
        ruleName: z.string(),
        type: z.enum(matchingRuleTypes),
        weight: z.number().int(),
        bestScore: z
          .number()
          .int()
          .nullable()
          .describe("Best matchScore among the account's profiles; null: no result (counts 0)"),
        matchedProfiles: z.number().int(),
        reasoning: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'RankedAccount' });

export const rankedAccountsView = z.object({
  accounts: z.array(rankedAccountView),
  nextCursor,
  rulesWithoutResults: z
    .array(z.string())
    .describe('Rules of the campaign never executed (no results, no completed run)'),
});

export type CreateDealCampaignInput = z.infer<typeof createDealCampaignBody>;
export type UpdateDealCampaignInput = z.infer<typeof updateDealCampaignBody>;
export type ListDealCampaignsQuery = z.infer<typeof listDealCampaignsQuery>;
export type DealCampaignView = z.infer<typeof dealCampaignView>;
export type TargetInput = z.infer<typeof targetSchema>;
export type DiscoverSourcesInput = NonNullable<z.infer<typeof discoverSourcesBody>>;
export type SuggestMatchingInput = NonNullable<z.infer<typeof suggestMatchingBody>>;
export type SuggestedRule = z.infer<typeof suggestedRuleView>;
export type SuggestMatchingView = z.infer<typeof suggestMatchingView>;
export type RankedAccountsQuery = z.infer<typeof rankedAccountsQuery>;
export type RankedAccount = z.infer<typeof rankedAccountView>;
