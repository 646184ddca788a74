import { z } from 'zod';
import { markdownExportStatuses, markdownPageStatuses, markdownScrapeTypes } from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';
import { paginationQuery } from '../../shared/pagination.ts';

const pathGlob = z
  .string()
  .min(1)
  .max(300)
  .refine((s) => s.startsWith('/'), 'must start with /')
  .describe('A glob on the URL path: `*` within one segment, `**` across segments (`/docs/**`)');

export const createMarkdownExportBody = z.object({
  startUrl: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .describe('Where the crawl starts (http or https); private addresses are refused unless ALLOW_PRIVATE_NETWORK'),
  maxPages: z.number().int().min(1).max(10_000).default(100).describe('Pages exported at most (start page included)'),
  maxDepth: z.number().int().min(0).max(20).default(3).describe('Link hops from the start URL (0: that page only)'),
  includePaths: z.array(pathGlob).max(50).default([]).describe('Only links whose path matches one (empty: all)'),
  excludePaths: z.array(pathGlob).max(50).default([]).describe('Links whose path matches one are skipped'),
  sitemap: z.boolean().default(false).describe('Also export the pages of the site’s /sitemap.xml (depth 0)'),
  sameSiteOnly: z.boolean().default(true).describe('Follow links on the start URL’s host only (`www.` aside)'),
  onlyMainContent: z
    .boolean()
    .default(true)
    .describe('Keep the article only (Readability): navigation, headers and footers are dropped'),
  respectRobotsTxt: z.boolean().default(true),
  scrapeType: z.enum(markdownScrapeTypes).default('STATIC').describe('DYNAMIC renders each page in Chromium'),
  proxyProfileId: z
    .string()
    .refine(isUuid, 'must be a UUID')
    .nullable()
    .optional()
    .describe(
      'One of your proxy profiles: the pages are fetched through it (404 if not yours); default SCRAPER_PROXY_URL',
    ),
});

export const markdownExportView = z
  .object({
    id: z.string(),
    status: z.enum(markdownExportStatuses),
    startUrl: z.string(),
    scrapeType: z.enum(markdownScrapeTypes),
    maxPages: z.number().int(),
    maxDepth: z.number().int(),
    includePaths: z.array(z.string()),
    excludePaths: z.array(z.string()),
    sitemap: z.boolean(),
    sameSiteOnly: z.boolean(),
    onlyMainContent: z.boolean(),
    respectRobotsTxt: z.boolean(),
    proxyProfileId: z.string().nullable(),
    progress: z.number().int().min(0).max(100),
    pagesDone: z.number().int().describe('Pages exported'),
    pagesFailed: z.number().int().describe('Pages that failed after their retries (POST …/retry fetches them again)'),
    error: z.string().nullable().describe('Why the export FAILED'),
    attempts: z.number().int(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'MarkdownExport' });

export const markdownPageView = z
  .object({
    id: z.string(),
    url: z.string(),
    status: z.enum(markdownPageStatuses),
    title: z.string().nullable(),
    markdown: z.string().nullable().describe('The page as markdown (null when it FAILED)'),
    depth: z.number().int(),
    error: z.string().nullable(),
    fetchedAt: z.string(),
  })
  .meta({ id: 'MarkdownExportPage' });

export const listPagesQuery = paginationQuery.extend({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  status: z.enum(markdownPageStatuses).optional(),
});

export const downloadQuery = z.object({
  format: z
    .enum(['zip', 'single'])
    .default('zip')
    .describe('`zip`: one `.md` per page with YAML front matter; `single`: one llms-full.txt-style file'),
});

export type CreateMarkdownExportInput = z.infer<typeof createMarkdownExportBody>;
export type MarkdownExportView = z.infer<typeof markdownExportView>;
export type MarkdownPageView = z.infer<typeof markdownPageView>;
export type ListPagesQuery = z.infer<typeof listPagesQuery>;
