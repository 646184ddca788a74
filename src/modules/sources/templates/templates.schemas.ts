import { z } from 'zod';
import { scheduleTypes, scrapeTypes } from '../../../db/schema/index.ts';
import { paginationQuery } from '../../../shared/pagination.ts';
import { crawlOptionsSchema, selectorsSchema, sourceDescription, sourceName } from '../sources.schemas.ts';

export const templateKinds = ['builtin', 'own'] as const;

export const createTemplateBody = z.object({
  name: sourceName,
  description: sourceDescription.nullable().optional(),
  scrapeType: z.enum(scrapeTypes),
  urlPattern: z
    .string()
    .trim()
    .min(1)
    .max(2048)
    .describe(
      'An http(s) URL with named variables in braces, e.g. `https://www.yelp.com/search?find_desc={query}`; names ' +
        'are `[a-zA-Z_][a-zA-Z0-9_]*`, each used once',
    ),
  selectors: selectorsSchema,
  scheduleType: z.enum(scheduleTypes).default('MANUAL'),
  options: crawlOptionsSchema.optional().describe("Crawl settings of the sources made from it (a source's `options`)"),
});

export const listTemplatesQuery = paginationQuery.extend({
  kind: z.enum(templateKinds).optional().describe('Only built-in templates, or only your own'),
});

export const templateView = z
  .object({
    id: z.string().describe('`builtin:<catalogue id>` for built-ins, a UUID for your own'),
    kind: z.enum(templateKinds),
    name: z.string(),
    description: z.string().nullable(),
    scrapeType: z.enum(scrapeTypes),
    urlPattern: z.string(),
    variables: z.array(z.string()).describe('Names of the URL variables, in order of appearance'),
    selectors: z.record(z.string(), z.string()),
    scheduleType: z.enum(scheduleTypes),
    options: crawlOptionsSchema,
    createdAt: z.string().nullable().describe('null for built-ins'),
    updatedAt: z.string().nullable().describe('null for built-ins'),
  })
  .meta({ id: 'SourceTemplate' });

export type CreateTemplateInput = z.infer<typeof createTemplateBody>;
export type ListTemplatesQuery = z.infer<typeof listTemplatesQuery>;
export type TemplateView = z.infer<typeof templateView>;
