import { sql } from 'drizzle-orm';
import { boolean, date, index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { users } from './users.ts';

/** What a row of `lead_stat_deltas` counts (docs/qualification.md "Analytics"). */
export const leadStatKinds = ['status', 'validation', 'email', 'validated'] as const;
export type LeadStatKind = (typeof leadStatKinds)[number];

/**
 * Lead counts per user, source, UTC day and figure, so analytics read a few thousand rows instead of
 * every lead. Appended by statement-level triggers on `leads` (one signed row per group a statement
 * changed, migration 0005): append-only, so concurrent writers never wait on one counter row, and a
 * figure is the sum of its rows. A periodic job folds each user's rows into one per group (`compacted`).
 * - `status`: leads by creation day and current status;
 * - `validation`: leads with a stored email validation, by creation day and its result;
 * - `email`: leads with an email, by creation day (`value` '');
 * - `validated`: leads by the day of their latest validation and its result.
 * No foreign key on `source_id`: a deleted source's leads write their negative rows after it is gone.
 */
export const leadStatDeltas = pgTable(
  'lead_stat_deltas',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    sourceId: uuid('source_id'),
    day: date('day', { mode: 'string' }).notNull(),
    kind: text('kind', { enum: leadStatKinds }).notNull(),
    value: text('value').notNull(),
    n: integer('n').notNull(),
    compacted: boolean('compacted').notNull().default(false),
  },
  (t) => [
    index('lead_stat_deltas_user_idx').on(t.userId, t.kind, t.day),
    index('lead_stat_deltas_pending_idx').on(t.userId).where(sql`NOT ${t.compacted}`),
  ],
);
