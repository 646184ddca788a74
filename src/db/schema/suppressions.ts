import { index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

export const suppressionTypes = ['email', 'domain'] as const;
export type SuppressionType = (typeof suppressionTypes)[number];
/** Who added an entry: the user, or the event that suppresses by itself (docs/outreach.md, Suppressions). */
export const suppressionSources = ['manual', 'hard_bounce', 'complaint', 'unsubscribe'] as const;
export type SuppressionSource = (typeof suppressionSources)[number];

/**
 * Addresses and domains that must never be contacted (enterprise suppression lists; hard bounces,
 * complaints and unsubscribes add to it). Email validation reads (user_id, type, value).
 */
export const suppressions = pgTable(
  'suppressions',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    type: text('type', { enum: suppressionTypes }).notNull(),
    /** Normalized: trimmed, lower-cased, the domain in punycode (docs/outreach.md, Suppressions). */
    value: text('value').notNull(),
    reason: text('reason'),
    source: text('source', { enum: suppressionSources }).notNull().default('manual'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('suppressions_user_value_key').on(t.userId, t.type, t.value),
    index('suppressions_user_id_idx').on(t.userId, t.id),
  ],
);
