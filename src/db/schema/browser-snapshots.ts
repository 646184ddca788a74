import { customType, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { browserSessions } from './browser.ts';
import { createdAt, idColumn, tsColumn } from './columns.ts';
import { users } from './users.ts';

const bytea = customType<{ data: Uint8Array }>({ dataType: () => 'bytea' });

/** What a snapshot shows of itself without its state: the tabs, the origins with storage, the cookie count. */
export interface SnapshotSummary {
  tabs: Array<{ url: string; title: string; active: boolean; scrollX: number; scrollY: number; historyLength: number }>;
  origins: string[];
  cookies: number;
}

/**
 * The saved state of a sleeping browser session (POST /sessions/{id}/sleep): its cookies, storage per origin and
 * tabs, gzipped JSON sealed under SECRET_KEY in `state`. One per sleeping session; removed when the session wakes or ends, and after
 * BROWSER_SNAPSHOT_RETENTION_DAYS (`expires_at`, the session then ends EXPIRED).
 */
export const browserSnapshots = pgTable(
  'browser_snapshots',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => browserSessions.id, { onDelete: 'cascade' }),
    /** The session's clientRef (X-Client-Ref applies to snapshots as to sessions). */
    clientRef: text('client_ref'),
    /** The JSON state (cookies, storage per origin, tabs with sessionStorage) gzipped, then sealed (crypto.ts). */
    state: bytea('state').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    summary: jsonb('summary').$type<SnapshotSummary>().notNull(),
    /** What was left of the session's hard timeout when it fell asleep: sleeping pauses the deadline. */
    remainingMs: integer('remaining_ms').notNull(),
    createdAt: createdAt(),
    expiresAt: tsColumn('expires_at').notNull(),
  },
  (t) => [
    uniqueIndex('browser_snapshots_session_idx').on(t.sessionId),
    index('browser_snapshots_user_idx').on(t.userId, t.id),
    index('browser_snapshots_expires_idx').on(t.expiresAt),
  ],
);
