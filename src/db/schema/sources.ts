import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { profileTypes } from './profiles.ts';
import { projects } from './projects.ts';
import { proxyProfiles } from './proxy-profiles.ts';
import { users } from './users.ts';

export const scrapeTypes = ['STATIC', 'DYNAMIC', 'API'] as const;
export const sourceStatuses = ['DRAFT', 'ACTIVE', 'ARCHIVED'] as const;
export const scheduleTypes = ['MANUAL', 'HOURLY', 'DAILY', 'WEEKLY'] as const;

export const sources = pgTable(
  'sources',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    projectId: uuid('project_id').references(() => projects.id, { onDelete: 'cascade' }),
    profileTypeId: uuid('profile_type_id').references(() => profileTypes.id, { onDelete: 'set null' }),
    /** Crawls go out through this proxy profile; a profile in use cannot be deleted (409). */
    proxyProfileId: uuid('proxy_profile_id').references(() => proxyProfiles.id, { onDelete: 'restrict' }),
    name: text('name').notNull(),
    url: text('url').notNull(),
    scrapeType: text('scrape_type', { enum: scrapeTypes }).notNull(),
    status: text('status', { enum: sourceStatuses }).notNull().default('DRAFT'),
    description: text('description'),
    selectors: jsonb('selectors').$type<Record<string, string>>().notNull().default({}),
    scheduleType: text('schedule_type', { enum: scheduleTypes }).notNull().default('MANUAL'),
    reasoning: text('reasoning'),
    /** The source template it was made from (docs/scraping.md "Source templates"): a uuid or `builtin:<id>`, no FK. */
    templateId: text('template_id'),
    /** Crawl options (page limit, robots opt-out, user agent, politeness…); defined by the scraping engine. */
    options: jsonb('options').$type<Record<string, unknown>>().notNull().default({}),
    respectRobotsTxt: boolean('respect_robots_txt').notNull().default(true),
    maxPages: integer('max_pages'),
    lastRunAt: tsColumn('last_run_at'),
    /** When the scheduler starts the next run; null for MANUAL or inactive sources. */
    nextRunAt: tsColumn('next_run_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('sources_user_idx').on(t.userId, t.id),
    index('sources_project_idx').on(t.projectId),
    index('sources_user_status_idx').on(t.userId, t.status, t.id),
    // The scheduler's "due now" scan touches only scheduled sources.
    index('sources_next_run_idx').on(t.nextRunAt).where(sql`${t.nextRunAt} IS NOT NULL`),
  ],
);

/** A user's saved source configuration (docs/scraping.md "Source templates"); built-ins live in code, not here. */
export const sourceTemplates = pgTable(
  'source_templates',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description'),
    scrapeType: text('scrape_type', { enum: scrapeTypes }).notNull(),
    /** A URL with `{name}` variables, filled (URL-encoded) when a source is made from the template. */
    urlPattern: text('url_pattern').notNull(),
    selectors: jsonb('selectors').$type<Record<string, string>>().notNull().default({}),
    scheduleType: text('schedule_type', { enum: scheduleTypes }).notNull().default('MANUAL'),
    /** Crawl settings given to sources made from it (the `options` of a source). */
    options: jsonb('options').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('source_templates_user_idx').on(t.userId, t.id)],
);

export const jobStatuses = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;

export const jobs = pgTable(
  'jobs',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    sourceId: uuid('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    status: text('status', { enum: jobStatuses }).notNull().default('PENDING'),
    progress: integer('progress').notNull().default(0),
    leadsFound: integer('leads_found').notNull().default(0),
    pagesVisited: integer('pages_visited').notNull().default(0),
    /** Requests that failed after their retries (the job still completes when some pages fail). */
    pagesFailed: integer('pages_failed').notNull().default(0),
    error: text('error'),
    trigger: text('trigger', { enum: ['manual', 'schedule', 'retry'] })
      .notNull()
      .default('manual'),
    attempts: integer('attempts').notNull().default(0),
    startedAt: tsColumn('started_at'),
    finishedAt: tsColumn('finished_at'),
    heartbeatAt: tsColumn('heartbeat_at'),
    /** Which worker process holds the running job (host:pid:random), for crash recovery and logs. */
    workerId: text('worker_id'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('jobs_user_idx').on(t.userId, t.id),
    index('jobs_source_idx').on(t.sourceId),
    index('jobs_status_idx').on(t.status),
    // The stale-job sweep: running jobs whose heartbeat stopped.
    index('jobs_running_heartbeat_idx').on(t.heartbeatAt).where(sql`${t.status} = 'RUNNING'`),
  ],
);
