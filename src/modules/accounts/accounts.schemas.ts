import { z } from 'zod';
import { leadStatuses } from '../../db/schema/index.ts';
import { paginationQuery } from '../../shared/pagination.ts';

export const MAX_NOTES_CHARS = 10_000;
export const MAX_TAGS = 50;
export const MAX_TAG_CHARS = 50;
/** Leads shown with one account (GET /api/accounts/{accountId}). */
export const ACCOUNT_LEADS_SHOWN = 50;
/** Distinct job titles shown per account, most frequent first. */
export const ACCOUNT_TITLES_SHOWN = 10;

export const accountSorts = ['leadCount', 'lastActivity', 'name'] as const;
export type AccountSort = (typeof accountSorts)[number];

/** Path parameter `{accountId}`: any string; one that names no account of the caller's is a 404. */
export const accountParams = z.object({ accountId: z.string().min(1).max(500) });

export const listAccountsQuery = paginationQuery.extend({
  // The cursor carries the sort value and the account key, which is longer than a UUID.
  cursor: z.string().max(2000).optional(),
  q: z.string().trim().min(1).max(200).optional().describe('Case-insensitive substring of the account name or domain'),
  tag: z.string().trim().min(1).max(MAX_TAG_CHARS).optional().describe('Only accounts carrying this tag (exact)'),
  minLeads: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .optional()
    .describe('Only accounts with at least this many leads'),
  sort: z
    .enum(accountSorts)
    .default('leadCount')
    .describe('`leadCount` (most leads first, default), `lastActivity` (most recent first) or `name` (A→Z)'),
});

const tagList = z
  .array(z.string().trim().min(1, 'tags must not be empty').max(MAX_TAG_CHARS))
  .max(MAX_TAGS, `at most ${MAX_TAGS} tags`)
  // Trimmed above; duplicates are dropped, keeping the first spelling.
  .transform((tags) => [...new Set(tags)]);

export const updateAccountBody = z
  .object({
    notes: z.string().max(MAX_NOTES_CHARS).nullable().optional().describe('Free text; null or "" clears it'),
    tags: tagList
      .optional()
      .describe(
        `At most ${MAX_TAGS} tags of at most ${MAX_TAG_CHARS} characters; ` +
          'trimmed and de-duplicated. Replaces the tags.',
      ),
  })
  .describe('Every attribute is optional; an empty body changes nothing.');

const statusCounts = z
  .object(
    Object.fromEntries(leadStatuses.map((s) => [s, z.number().int()])) as Record<
      (typeof leadStatuses)[number],
      z.ZodNumber
    >,
  )
  .describe('Leads per status, every status present (zeros included)');

export const accountView = z
  .object({
    id: z.string().describe('Stable: the same account always has the same id'),
    kind: z
      .enum(['domain', 'company'])
      .describe('`domain`: grouped by the email domain; `company`: by the normalized company name'),
    name: z.string().describe('The most common company spelling among its leads, else the domain'),
    domain: z.string().nullable().describe('The email domain (domain accounts); null for company accounts'),
    leadCount: z.number().int(),
    sourceCount: z
      .number()
      .int()
      .describe('Distinct sources its leads came from (leads created by hand count for none)'),
    titles: z.array(z.string()).describe(`Distinct job titles, most frequent first, at most ${ACCOUNT_TITLES_SHOWN}`),
    statuses: statusCounts,
    lastActivityAt: z.string().describe('Latest update of any of its leads'),
    firstSeenAt: z.string().describe('Creation of its oldest lead'),
    notes: z.string().nullable(),
    tags: z.array(z.string()),
  })
  .meta({ id: 'Account' });

export const accountLeadView = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    jobTitle: z.string().nullable(),
    status: z.enum(leadStatuses),
    updatedAt: z.string(),
  })
  .meta({ id: 'AccountLead' });

export const accountDetailView = accountView
  .extend({
    leads: z.array(accountLeadView).describe(`Its ${ACCOUNT_LEADS_SHOWN} most recently updated leads`),
  })
  .meta({ id: 'AccountDetail' });

export const searchSourceView = z.object({ title: z.string(), url: z.string(), description: z.string() });

export const commonalitiesView = z
  .object({
    accountId: z.string(),
    summary: z.string(),
    traits: z.array(z.object({ trait: z.string(), evidence: z.string(), leadCount: z.number().int() })),
    companyFacts: z
      .array(z.object({ fact: z.string(), sourceUrl: z.string() }))
      .describe('Each cites one of `sources`'),
    sources: z.array(searchSourceView).describe('The web search results the model was given'),
    leadCount: z.number().int(),
    method: z.literal('ai'),
    model: z.string(),
  })
  .meta({ id: 'AccountCommonalities' });

export type ListAccountsQuery = z.infer<typeof listAccountsQuery>;
export type UpdateAccountInput = z.infer<typeof updateAccountBody>;
export type AccountView = z.infer<typeof accountView>;
export type AccountLeadView = z.infer<typeof accountLeadView>;
export type AccountDetailView = z.infer<typeof accountDetailView>;
export type CommonalitiesView = z.infer<typeof commonalitiesView>;
export type StatusCounts = z.infer<typeof statusCounts>;
