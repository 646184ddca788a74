import { sql } from 'drizzle-orm';
import { pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/**
 * Accounts are computed from leads (grouped by `accountKey`, see src/modules/accounts/account-key.ts);
 * only what a user writes about one is stored, beside the computed view.
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

/** Free-mail domains (gmail.com…): a lead's email domain names its company only when it is not one. Synced from `email-providers` by migrate(). */
export const freeEmailDomains = pgTable('free_email_domains', {
  domain: text('domain').primaryKey(),
});
