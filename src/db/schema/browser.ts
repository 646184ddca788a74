import { boolean, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/**
 * A cloud browser session: one Chromium on one host. Ended sessions stay for history with their
 * `end_reason`; `host_id`/`host_address` name the process holding a live one (forwarding between hosts comes later).
 */
export const browserSessions = pgTable(
  'browser_sessions',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The integrator's own user (X-Client-Ref); null for sessions of the key-wide view. */
    clientRef: text('client_ref'),
    /** STARTING, LIVE, RELEASED, EXPIRED, FAILED. */
    status: text('status').notNull(),
    endReason: text('end_reason'),
    viewportWidth: integer('viewport_width').notNull(),
    viewportHeight: integer('viewport_height').notNull(),
    profileId: text('profile_id'),
    persistProfile: boolean('persist_profile').notNull().default(false),
    proxyProfileId: text('proxy_profile_id'),
    timeoutMs: integer('timeout_ms').notNull(),
    idleTimeoutMs: integer('idle_timeout_ms').notNull(),
    keepAlive: boolean('keep_alive').notNull().default(false),
    record: boolean('record').notNull().default(false),
    extensionIds: text('extension_ids').array().notNull().default([]),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    hostId: text('host_id').notNull(),
    hostAddress: text('host_address'),
    expiresAt: tsColumn('expires_at').notNull(),
    endedAt: tsColumn('ended_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('browser_sessions_user_idx').on(t.userId, t.id),
    index('browser_sessions_user_ref_idx').on(t.userId, t.clientRef, t.id),
    index('browser_sessions_host_status_idx').on(t.hostId, t.status),
  ],
);
