import { z } from 'zod';
import { scrapeTypes } from '../../db/schema/index.ts';

/** Request bodies of the Sources section: discover, generate, analyze (documented in OpenAPI). */

export const discoverBody = z.object({
  query: z
    .string()
    .trim()
    .min(3)
    .max(500)
    .describe('What to find, e.g. "dentists in Austin, Texas" (at least 3 characters)'),
  count: z.number().int().min(1).max(10).default(5).describe('Suggestions wanted, 1–10 (default 5)'),
});

export const generateBody = z.object({
  projectDescription: z
    .string()
    .trim()
    .min(10)
    .max(5000)
    .describe('What the project sells and to whom (at least 10 characters)'),
  targetAudience: z.string().trim().max(500).nullable().optional(),
  industry: z.string().trim().max(500).nullable().optional(),
  location: z.string().trim().max(500).nullable().optional(),
  count: z.number().int().min(1).max(5).default(3).describe('Sources wanted, 1–5 (default 3)'),
  autoSave: z
    .boolean()
    .default(false)
    .describe('Save the generated sources as DRAFT sources (into `projectId` when given)'),
  projectId: z
    .string()
    .max(200)
    .optional()
    .describe('One of your projects; unknown or not yours: 404 naming projectId'),
});

/**
 * analyze's body: multipart/form-data (`file` or `url`) or JSON `{url}`. Multipart parts are read by
 * the route (the parsed body is then null, hence nullish); this schema checks JSON and documents both.
 */
export const analyzeBody = z
  .object({
    file: z.string().meta({ format: 'binary' }).optional().describe('multipart/form-data only: the PDF, at most 10 MB'),
    url: z.string().trim().min(1).max(2048).optional().describe('An http(s) page or PDF to analyse'),
  })
  .nullish();

/** Response views. */

export const discoveryMethod = z
  .enum(['ai+search', 'ai', 'catalogue'])
  .describe(
    '`ai+search`: the model chose among web-search results; `ai`: the model proposed the URLs; `catalogue`: ' +
      'rule-based, from the built-in catalogue (no AI provider configured)',
  );

export const discoveredSourceView = z
  .object({
    name: z.string(),
    url: z.string(),
    category: z.string(),
    estimatedLeads: z.number().int().describe('Rough order of magnitude of the leads the source may yield'),
    scrapeType: z.enum(scrapeTypes),
    description: z.string(),
    reasoning: z.string(),
  })
  .meta({ id: 'DiscoveredSource' });

export const generatedSourceView = z
  .object({
    name: z.string(),
    url: z.string(),
    description: z.string(),
    scrapeType: z.enum(scrapeTypes),
    reasoning: z.string(),
    selectors: z
      .record(z.string(), z.string())
      .optional()
      .describe('Ready-made selectors, for API sources of the catalogue'),
    id: z.string().optional().describe('With autoSave: the saved source'),
    status: z.string().optional().describe('With autoSave: DRAFT'),
  })
  .meta({ id: 'GeneratedSource' });

export const discoverView = z.object({ sources: z.array(discoveredSourceView), method: discoveryMethod });
export const generateView = z.object({ sources: z.array(generatedSourceView), method: discoveryMethod });
export const analyzeView = z.object({
  requirements: z.object({
    targetAudience: z.string().nullable(),
    industry: z.string().nullable(),
    location: z.string().nullable(),
    suggestedSources: z.array(discoveredSourceView),
    reasoning: z.string().describe('How the requirements were found (the AI, or which keyword rule)'),
  }),
  method: z
    .enum(['ai+search', 'ai', 'heuristic'])
    .describe('`heuristic`: keyword rules and the built-in catalogue (no AI provider configured)'),
});

/**
 * What the model answers. Kept strict-mode friendly (every key required, nullable instead of
 * optional, no bounds): the service checks URLs and clamps numbers itself.
 */
const modelScrapeType = z.enum(scrapeTypes);

export const modelProposals = z.object({
  sources: z.array(
    z.object({
      name: z.string(),
      url: z.string(),
      category: z.string(),
      estimatedLeads: z.number(),
      scrapeType: modelScrapeType,
      description: z.string(),
      reasoning: z.string(),
    }),
  ),
});

export const modelSearchPicks = z.object({
  sources: z.array(
    z.object({
      result: z.number().describe('Number of the chosen search result'),
      name: z.string(),
      category: z.string(),
      estimatedLeads: z.number(),
      scrapeType: modelScrapeType,
      description: z.string(),
      reasoning: z.string(),
    }),
  ),
});

export const modelRequirements = z.object({
  targetAudience: z.string().nullable(),
  industry: z.string().nullable(),
  location: z.string().nullable(),
  searchQuery: z.string().describe('A web search query that would find directories of such leads'),
});

export type DiscoverInput = z.infer<typeof discoverBody>;
export type GenerateInput = z.infer<typeof generateBody>;
export type DiscoveredSource = z.infer<typeof discoveredSourceView>;
export type GeneratedSource = z.infer<typeof generatedSourceView>;
export type DiscoveryMethod = z.infer<typeof discoveryMethod>;
