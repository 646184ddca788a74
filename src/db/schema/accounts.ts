import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/**
 * Accounts are the caller's leads grouped by `leads.account_key` (see the docs/qualification.md, Accounts);
 * what a user writes about one is stored here, beside the grouping.
 */
export const accountMetadata = pgTable(
  'account_metadata',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** `domain:acme.com` or `company:acme` */
    accountKey: text('account_key').notNull(),
    notes: text('notes'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('account_metadata_user_key').on(t.userId, t.accountKey)],
);

/**
 * One row per account: the aggregates of its leads, so a page of accounts reads a few rows instead of
 * grouping every lead. Recomputed for the keys in `account_rollup_marks` before each read (and by a
 * periodic job); never written anywhere else.
 */
export const accountRollups = pgTable(
  'account_rollups',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    accountKey: text('account_key').notNull(),
    /** The most common company spelling among its leads (else the key's value). */
    name: text('name').notNull(),
    /** lower(name): the `sort=name` order. */
    sortName: text('sort_name').notNull(),
    leadCount: integer('lead_count').notNull(),
    sourceCount: integer('source_count').notNull(),
    /** Lead counts in `leadStatuses` order. */
    statusCounts: integer('status_counts').array().notNull(),
    /** The most common job titles, most common first. */
    titles: text('titles').array().notNull(),
    lastActivityAt: tsColumn('last_activity_at').notNull(),
    /** last_activity_at in microseconds since the epoch: exact, for the lastActivity cursor. */
    lastActivityUs: bigint('last_activity_us', { mode: 'bigint' }).notNull(),
    firstSeenAt: tsColumn('first_seen_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.accountKey] }),
    // One per sort, in the order the list reads (ties by key in byte order).
    index('account_rollups_lead_count_idx').on(t.userId, t.leadCount.desc(), sql`${t.accountKey} COLLATE "C"`),
    index('account_rollups_activity_idx').on(t.userId, t.lastActivityUs.desc(), sql`${t.accountKey} COLLATE "C"`),
    index('account_rollups_name_idx').on(t.userId, t.sortName, sql`${t.accountKey} COLLATE "C"`),
  ],
);

/**
 * Accounts whose leads changed since their rollup was computed, appended by statement-level triggers on
 * `leads` (migration 0003). An append-only log, not a set: a mark written by a transaction still open
 * stays for the next refresh, so no change is lost. No foreign key: a user's cascaded delete writes
 * marks after the user row is gone (the trigger skips them).
 */
export const accountRollupMarks = pgTable(
  'account_rollup_marks',
  {
    userId: uuid('user_id').notNull(),
    accountKey: text('account_key').notNull(),
  },
  (t) => [index('account_rollup_marks_user_idx').on(t.userId)],
);

/**
 * Free-mail domains (gmail.com…): a lead's email domain names its company only when it is not one.
 * Synced from `email-providers` by migrate().
 */
export const freeEmailDomains = pgTable('free_email_domains', {
  domain: text('domain').primaryKey(),
});
