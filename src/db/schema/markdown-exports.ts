import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { heartbeatRunColumns, idColumn, tsColumn } from './columns.ts';
import { users } from './users.ts';

export const markdownExportStatuses = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;
export const markdownScrapeTypes = ['STATIC', 'DYNAMIC'] as const;

/** What a run follows (docs/scraping.md "Markdown exports"): kept as the client gave it. */
export interface MarkdownExportOptions {
  maxPages: number;
  maxDepth: number;
  includePaths: string[];
  excludePaths: string[];
  sitemap: boolean;
  sameSiteOnly: boolean;
  onlyMainContent: boolean;
  respectRobotsTxt: boolean;
}

/** A website exported as markdown: one crawl (and its retries of failed pages) on the scraping engine. */
export const markdownExports = pgTable(
  'markdown_exports',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    startUrl: text('start_url').notNull(),
    scrapeType: text('scrape_type', { enum: markdownScrapeTypes }).notNull().default('STATIC'),
    options: jsonb('options').$type<MarkdownExportOptions>().notNull(),
    /**
     * The caller's proxy profile, checked on create. No foreign key: finished exports keep the id as history;
     * deleting a profile a PENDING/RUNNING export uses is refused (409).
     */
    proxyProfileId: uuid('proxy_profile_id'),
    status: text('status', { enum: markdownExportStatuses }).notNull().default('PENDING'),
    /** The next run fetches only the failed pages again (POST …/retry) instead of crawling the site. */
    retryFailedOnly: boolean('retry_failed_only').notNull().default(false),
    progress: integer('progress').notNull().default(0),
    pagesDone: integer('pages_done').notNull().default(0),
    pagesFailed: integer('pages_failed').notNull().default(0),
    ...heartbeatRunColumns(),
  },
  (t) => [
    index('markdown_exports_user_idx').on(t.userId, t.id),
    index('markdown_exports_running_heartbeat_idx').on(t.heartbeatAt).where(sql`${t.status} = 'RUNNING'`),
  ],
);

export const markdownPageStatuses = ['OK', 'FAILED'] as const;

/** One page of an export: its markdown, or why it failed (a retry fetches the FAILED ones again). */
export const markdownExportPages = pgTable(
  'markdown_export_pages',
  {
    id: idColumn(),
    exportId: uuid('export_id')
      .notNull()
      .references(() => markdownExports.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    status: text('status', { enum: markdownPageStatuses }).notNull(),
    title: text('title'),
    markdown: text('markdown'),
    depth: integer('depth').notNull().default(0),
    error: text('error'),
    fetchedAt: tsColumn('fetched_at').notNull(),
  },
  (t) => [
    uniqueIndex('markdown_export_pages_url_idx').on(t.exportId, t.url),
    index('markdown_export_pages_export_idx').on(t.exportId, t.id),
  ],
);
