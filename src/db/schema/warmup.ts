import { doublePrecision, index, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/** docs/outreach.md "Warmup domains": the states and the moves between them. */
export const warmupStatuses = ['DRAFT', 'WARMING', 'PAUSED', 'AUTO_PAUSED', 'COMPLETED'] as const;
export type WarmupStatus = (typeof warmupStatuses)[number];

/** A sending domain being warmed up through one mailbox. */
export const warmupDomains = pgTable(
  'warmup_domains',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** Lower case, IDN in punycode. */
    domain: text('domain').notNull(),
    dkimSelector: text('dkim_selector').notNull(),
    fromAddress: text('from_address').notNull(),
    /** The mailbox's `smtp(s)://user:pass@host:port`, encrypted (src/shared/crypto.ts); never returned. */
    smtpUrlEncrypted: text('smtp_url_encrypted').notNull(),
    /** What GET shows of the mailbox (no password). */
    smtpHost: text('smtp_host').notNull(),
    smtpPort: integer('smtp_port').notNull(),
    smtpUsername: text('smtp_username').notNull(),
    status: text('status', { enum: warmupStatuses }).notNull().default('DRAFT'),
    /** `<selector> <mailbox host>` whose SPF and DKIM passed: a resume after either changed checks DNS again. */
    dnsVerifiedFor: text('dns_verified_for'),
    /** Why it was auto-paused (the rate over its limit). */
    statusReason: text('status_reason'),
    startedAt: tsColumn('started_at'),
    pausedAt: tsColumn('paused_at'),
    completedAt: tsColumn('completed_at'),
    /** UTC days spent paused: they do not advance the schedule. */
    pausedDays: integer('paused_days').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('warmup_domains_user_domain_idx').on(t.userId, t.domain),
    index('warmup_domains_user_idx').on(t.userId, t.id),
    index('warmup_domains_status_idx').on(t.status),
  ],
);

/**
 * One schedule day of one domain: the row is claimed (inserted) by the worker that sends that day, so a day is
 * sent once across processes and runs (the unique index is the lock).
 */
export const warmupDays = pgTable(
  'warmup_days',
  {
    id: idColumn(),
    domainId: uuid('domain_id')
      .notNull()
      .references(() => warmupDomains.id, { onDelete: 'cascade' }),
    /** 1..35 in the schedule. */
    day: integer('day').notNull(),
    /** The UTC date it was sent on, `YYYY-MM-DD`. */
    date: text('date').notNull(),
    target: integer('target').notNull(),
    sent: integer('sent').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    error: text('error'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('warmup_days_domain_day_idx').on(t.domainId, t.day)],
);

/** Rates fed by POST /api/warmup-domains/{id}/metrics, each a fraction 0–1. */
export const warmupMetrics = pgTable(
  'warmup_metrics',
  {
    id: idColumn(),
    domainId: uuid('domain_id')
      .notNull()
      .references(() => warmupDomains.id, { onDelete: 'cascade' }),
    openRate: doublePrecision('open_rate'),
    replyRate: doublePrecision('reply_rate'),
    bounceRate: doublePrecision('bounce_rate'),
    spamRate: doublePrecision('spam_rate'),
    recordedAt: tsColumn('recorded_at').notNull(),
  },
  (t) => [index('warmup_metrics_domain_idx').on(t.domainId, t.recordedAt)],
);
