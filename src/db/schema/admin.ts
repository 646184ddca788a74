import { index, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn } from './columns.ts';
import { users } from './users.ts';

/**
 * Every change an admin makes to a user (docs/operations.md "Admin"): who, to whom, the changed fields before and
 * after, and when; written in the transaction of the change. The ids are cleared, not the rows, when
 * either user is erased.
 */
export const adminAuditEvents = pgTable(
  'admin_audit_events',
  {
    id: idColumn(),
    actorId: uuid('actor_id').references(() => users.id, { onDelete: 'set null' }),
    targetUserId: uuid('target_user_id').references(() => users.id, { onDelete: 'set null' }),
    action: text('action').notNull(),
    before: jsonb('before').$type<Record<string, unknown>>().notNull(),
    after: jsonb('after').$type<Record<string, unknown>>().notNull(),
    reason: text('reason'),
    createdAt: createdAt(),
  },
  (t) => [
    index('admin_audit_events_target_idx').on(t.targetUserId, t.createdAt),
    index('admin_audit_events_actor_idx').on(t.actorId),
  ],
);
