import { z } from 'zod';
import { scheduleTypes, scrapeTypes, sourceStatuses } from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';
import { paginationQuery } from '../../shared/pagination.ts';
import { crawlSettingShape, isCrawlSettingKey, MAX_PAGES_LIMIT } from './crawl-settings.ts';

export { MAX_PAGES_LIMIT };
export const MAX_BATCH_SOURCES = 100;

const uuidString = z.string().refine(isUuid, 'must be a UUID');
const name = z.string().trim().min(1).max(200);
const url = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048);
const description = z.string().trim().max(5000);
const reasoning = z.string().trim().max(5000);

/** Shared with source templates (templates/templates.schemas.ts). */
export { description as sourceDescription, name as sourceName, url as sourceUrl };

/**
 * docs/selectors.md: a flat object of selector strings; checked in depth by the service. Crawl settings found
 * here (`maxPages`, …: where they were once documented) are taken as such, numbers and booleans included.
 */
export const selectorsSchema = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
  .superRefine((selectors, ctx) => {
    for (const [key, value] of Object.entries(selectors)) {
      if (typeof value !== 'string' && !isCrawlSettingKey(key))
        ctx.addIssue({ code: 'custom', path: [key], message: 'expected string' });
    }
  })
  .describe(
    "Selector strings by key. `item` (each lead's container), lead fields `firstName` `lastName` `fullName` `email` " +
      '`phone` `company` `jobTitle`, `nextPage`, `waitFor` (DYNAMIC); any other key is a custom field. CSS, or XPath ' +
      'when it starts with `/`, `./`, `../` or `(`; a final `@name` takes an attribute. API sources: JSONPath for ' +
      '`item`/`nextPage`, dotted paths for fields. Crawl settings (`maxPages`, `respectRobotsTxt`, …) belong in ' +
      '`options`; given here they are still taken (`options` wins).',
  );

/**
 * Crawl settings a source may narrow (the operator's SCRAPER_* settings are the defaults and ceilings), each in
 * its natural type: numbers and booleans, not strings. They win over the same settings given elsewhere.
 */
export const crawlOptionsSchema = z
  .object({
    userAgent: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .optional()
      .describe('User-Agent for this source (default SCRAPER_USER_AGENT)'),
    maxPages: crawlSettingShape.maxPages.optional(),
    respectRobotsTxt: crawlSettingShape.respectRobotsTxt.optional(),
    domainDelayMs: crawlSettingShape.domainDelayMs.optional(),
    domainConcurrency: crawlSettingShape.domainConcurrency.optional(),
    requestTimeoutSecs: crawlSettingShape.requestTimeoutSecs.optional(),
    maxRetries: crawlSettingShape.maxRetries.optional(),
  })
  .strict();

const sourceSettings = {
  description: description.nullable().optional(),
  scheduleType: z.enum(scheduleTypes).optional().describe('Default MANUAL: never runs by itself'),
  reasoning: reasoning.nullable().optional(),
  projectId: uuidString.nullable().optional().describe('One of your projects'),
  profileTypeId: uuidString
    .nullable()
    .optional()
    .describe('One of your profile types: each scraped item then also yields a profile of that type'),
  maxPages: z
    .number()
    .int()
    .min(1)
    .max(MAX_PAGES_LIMIT)
    .nullable()
    .optional()
    .describe('Pages per run at most (default SCRAPER_MAX_PAGES); also `options.maxPages`, which wins'),
  respectRobotsTxt: z
    .boolean()
    .optional()
    .describe('Default true: pages robots.txt disallows are skipped; also `options.respectRobotsTxt`, which wins'),
  options: crawlOptionsSchema.optional(),
  proxyProfileId: uuidString
    .nullable()
    .optional()
    .describe("One of your proxy profiles: the source's crawls go out through it instead of SCRAPER_PROXY_URL"),
};

export const createSourceBody = z.object({
  name,
  url,
  scrapeType: z.enum(scrapeTypes),
  selectors: selectorsSchema,
  ...sourceSettings,
});

/** Making a source from a source template (docs/scraping.md "Source templates"). */
const fromTemplate = {
  templateId: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe(
      'A source template (`builtin:<id>` or one of yours): fills `url` from its pattern and `variables`, and ' +
        '`scrapeType`, `selectors`, `scheduleType`, `description` and `options`; fields given here win',
    ),
  variables: z
    .record(z.string().max(100), z.string().min(1).max(2000))
    .optional()
    .describe("Values of the template's URL variables, each URL-encoded into its place"),
};

/** The body of POST /api/sources: `url`, `scrapeType` and `selectors` may come from a template instead. */
export const createSourceRequest = createSourceBody
  .partial({ url: true, scrapeType: true, selectors: true })
  .extend(fromTemplate)
  .describe('`url`, `scrapeType` and `selectors` are required unless `templateId` supplies them.');

export const batchSourceItem = z.object({
  name,
  url,
  scrapeType: z.enum(scrapeTypes).default('DYNAMIC'),
  selectors: selectorsSchema.default({}),
  description: description.nullable().optional(),
  reasoning: reasoning.nullable().optional(),
  scheduleType: z.enum(scheduleTypes).optional(),
  profileTypeId: sourceSettings.profileTypeId,
});

const batchSourceRequestItem = batchSourceItem
  .extend({
    url: url.optional(),
    scrapeType: z.enum(scrapeTypes).optional(),
    selectors: selectorsSchema.optional(),
    ...fromTemplate,
  })
  .describe("`url` is required unless `templateId` supplies it; `scrapeType` defaults to the template's or DYNAMIC.");

export const batchSourcesBody = z.object({
  sources: z.array(batchSourceRequestItem).min(1).max(MAX_BATCH_SOURCES),
  projectId: uuidString.optional().describe('Puts every source of the batch in this project'),
});

export const updateSourceBody = z
  .object({
    name: name.optional(),
    url: url.optional(),
    scrapeType: z.enum(scrapeTypes).optional(),
    selectors: selectorsSchema.optional(),
    status: z
      .enum(['DRAFT', 'ARCHIVED'])
      .optional()
      .describe('Deactivate (DRAFT) or archive; `POST …/activate` makes a source ACTIVE'),
    ...sourceSettings,
  })
  .describe('Every attribute is optional; an empty body changes nothing.');

export const listSourcesQuery = paginationQuery.extend({
  status: z.enum(sourceStatuses).optional(),
  projectId: uuidString.optional(),
});

export const sourceView = z
  .object({
    id: z.string(),
    name: z.string(),
    url: z.string(),
    scrapeType: z.enum(scrapeTypes),
    status: z.enum(sourceStatuses),
    description: z.string().nullable(),
    selectors: z.record(z.string(), z.string()),
    scheduleType: z.enum(scheduleTypes),
    reasoning: z.string().nullable(),
    projectId: z.string().nullable(),
    profileTypeId: z.string().nullable(),
    templateId: z.string().nullable().describe('The source template it was made from'),
    proxyProfileId: z.string().nullable(),
    maxPages: z.number().int().nullable(),
    respectRobotsTxt: z.boolean(),
    options: crawlOptionsSchema,
    lastRunAt: z.string().nullable(),
    nextRunAt: z
      .string()
      .nullable()
      .describe('When the schedule starts the next job; null for MANUAL or inactive sources'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Source' });

export const batchResultView = z.object({
  sources: z.array(z.object({ id: z.string(), name: z.string(), status: z.enum(sourceStatuses) })),
  count: z.number().int(),
});

export type CreateSourceInput = z.infer<typeof createSourceBody>;
export type BatchSourceInput = z.input<typeof batchSourceItem>;
export type CreateSourceRequest = z.infer<typeof createSourceRequest>;
export type BatchSourceRequestItem = z.infer<typeof batchSourceRequestItem>;
export type UpdateSourceInput = z.infer<typeof updateSourceBody>;
export type ListSourcesQuery = z.infer<typeof listSourcesQuery>;
export type SourceView = z.infer<typeof sourceView>;
export type CrawlOptions = z.infer<typeof crawlOptionsSchema>;
