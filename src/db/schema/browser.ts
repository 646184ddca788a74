import { boolean, customType, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/**
 * A cloud browser session: one Chromium on one host. Ended sessions stay for history with their
 * `end_reason`; `host_id`/`host_address` name the process holding a live one (other API processes forward to it).
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
    /** STARTING, LIVE, SLEEPING (no process: its state is a browser_snapshots row), RELEASED, EXPIRED, FAILED. */
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
    /** Sleeps by itself after this long with no client and no action (instead of ending idle); null: never. */
    autoSleepMs: integer('auto_sleep_ms'),
    /** When its current live part began (its start, or its last wake); null while it sleeps. */
    liveSince: tsColumn('live_since'),
    /** Browser minutes charged for its earlier live parts (each sleep charges the part it ends). */
    billedMinutes: integer('billed_minutes').notNull().default(0),
    /** The browser_snapshots row holding its state while it sleeps. */
    snapshotId: uuid('snapshot_id'),
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

/**
 * The processes that host browser sessions (RUN_BROWSERS on PostgreSQL): where other API processes reach them and
 * when each last said it was alive. A host whose heartbeat is stale has its live sessions failed by any process.
 */
export const browserHosts = pgTable('browser_hosts', {
  hostId: text('host_id').primaryKey(),
  /** Base URL of the host's API listener, as other API processes reach it (BROWSER_INTERNAL_URL). */
  internalUrl: text('internal_url').notNull(),
  /** The process holding the id now, with the machine's boot id: tells a second live process from a restart. */
  pid: integer('pid').notNull(),
  bootId: text('boot_id').notNull(),
  /** A random token of the holding process object, kept in its memory: containers share a boot id and a pid. */
  instance: text('instance').notNull().default(''),
  maxSessions: integer('max_sessions').notNull(),
  liveSessions: integer('live_sessions').notNull().default(0),
  /** The machine's free memory at the last heartbeat (MB), for GET /api/browser/usage. */
  freeMemoryMb: integer('free_memory_mb').notNull().default(0),
  startedAt: tsColumn('started_at').notNull(),
  heartbeatAt: tsColumn('heartbeat_at').notNull(),
});

const bytea = customType<{ data: Uint8Array }>({ dataType: () => 'bytea' });

/**
 * Chrome extensions a user uploaded (an unpacked extension, extracted under DATA_DIR/browser-extensions/<id>/).
 * Key-wide: every X-Client-Ref of the user sees and may load them (they are code of the integrator, not data of
 * its end-users).
 */
export const browserExtensions = pgTable(
  'browser_extensions',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    version: text('version').notNull(),
    manifestVersion: integer('manifest_version').notNull(),
    /** Bytes of the extracted files. */
    sizeBytes: integer('size_bytes').notNull(),
    /** The uploaded ZIP: a host that has no folder for it yet (another API process took the upload) unpacks it. */
    zip: bytea('zip').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('browser_extensions_user_idx').on(t.userId, t.id)],
);
