import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/**
 * A session cookie of the professional network (docs/professional-network.md), sealed at rest with
 * createSecretBox (src/shared/crypto.ts); its status is computed from the columns below, never stored.
 */
export const networkCredentials = pgTable(
  'network_credentials',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name'),
    /** The cookie's name (`li_at`) and its value, sealed; the value is never returned. */
    cookieName: text('cookie_name').notNull(),
    cookieSealed: text('cookie_sealed').notNull(),
    /** The last characters of the value, what the masked view shows. */
    cookieHint: text('cookie_hint').notNull(),
    dailyLimit: integer('daily_limit').notNull(),
    /** Requests spent on `requestsDay` (a UTC date, YYYY-MM-DD); another day starts again from 0. */
    requestsDay: text('requests_day'),
    requestsToday: integer('requests_today').notNull().default(0),
    /** The network answered a challenge (999, a login wall): SOFT_BANNED for a cooldown from then. */
    softBannedAt: tsColumn('soft_banned_at'),
    /** The network rejected the cookie (its login page): INVALID until replaced. */
    invalidAt: tsColumn('invalid_at'),
    statusReason: text('status_reason'),
    lastUsedAt: tsColumn('last_used_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('network_credentials_user_idx').on(t.userId, t.id)],
);

export const networkJobStatuses = ['PENDING', 'RUNNING', 'COMPLETED', 'STOPPED', 'FAILED'] as const;
export type NetworkJobStatus = (typeof networkJobStatuses)[number];

/** One lead's outcome in an enrichment job. */
export interface NetworkJobResult {
  leadId: string;
  status: 'ENRICHED' | 'FAILED' | 'SKIPPED';
  error?: string;
}

/** An enrichment of several leads (`POST /api/linkedin/enrich` with `leadIds`), run by a pg-boss worker. */
export const networkEnrichJobs = pgTable(
  'network_enrich_jobs',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    credentialId: uuid('credential_id').references(() => networkCredentials.id, { onDelete: 'set null' }),
    status: text('status', { enum: networkJobStatuses }).notNull().default('PENDING'),
    leadIds: uuid('lead_ids').array().notNull(),
    /** How many of `leadIds` were handled (in order): a redelivered job resumes from there. */
    processed: integer('processed').notNull().default(0),
    enriched: integer('enriched').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    results: jsonb('results').$type<NetworkJobResult[]>().notNull().default(sql`'[]'::jsonb`),
    stopReason: text('stop_reason'),
    /** The worker running it and its last sign of life: a RUNNING job silent too long is taken over (recovery). */
    workerId: text('worker_id'),
    heartbeatAt: tsColumn('heartbeat_at'),
    /** Runs started (claims); a job whose worker died this many times is failed rather than started again. */
    attempts: integer('attempts').notNull().default(0),
    startedAt: tsColumn('started_at'),
    finishedAt: tsColumn('finished_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('network_enrich_jobs_user_idx').on(t.userId, t.id)],
);
