import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/** An outbound webhook endpoint (docs/webhooks-and-credits.md, Webhooks): where events of the chosen types are delivered. */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    description: text('description'),
    eventTypes: text('event_types').array().notNull(),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason'),
    disabledAt: tsColumn('disabled_at'),
    /** The signing secret `whsec_…`, encrypted (src/shared/crypto.ts); shown once, never returned again. */
    secretEncrypted: text('secret_encrypted').notNull(),
    /** After a rotation the replaced secret signs too, until `previousSecretExpiresAt`. */
    previousSecretEncrypted: text('previous_secret_encrypted'),
    previousSecretExpiresAt: tsColumn('previous_secret_expires_at'),
    /** Start of the current run of failed attempts (null after a success): 5 days of it disable the endpoint. */
    failingSince: tsColumn('failing_since'),
    lastSuccessAt: tsColumn('last_success_at'),
    lastFailureAt: tsColumn('last_failure_at'),
    lastFailureReason: text('last_failure_reason'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('webhook_endpoints_user_idx').on(t.userId, t.id)],
);

/**
 * The outbox: an event written in the transaction of the change that causes it (`emitEvent`, docs/CONVENTIONS.md),
 * only when an endpoint of its user subscribes to its type. Its id is the `webhook-id` of every delivery.
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('webhook_events_created_idx').on(t.createdAt)],
);

export const webhookDeliveryStatuses = ['pending', 'succeeded', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof webhookDeliveryStatuses)[number];

/**
 * One event for one endpoint, written with the event. A worker claims a due one under a lease
 * (`leaseOwner`, `leaseUntil`: the database's clock), sends it, and records the attempt; a worker that
 * dies mid-send leaves a lease that runs out, and another worker sends it again.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull(),
    eventId: uuid('event_id')
      .notNull()
      .references(() => webhookEvents.id, { onDelete: 'cascade' }),
    endpointId: uuid('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    status: text('status', { enum: webhookDeliveryStatuses }).notNull().default('pending'),
    /** Attempts made in the current schedule (a replay starts a new one). */
    attempts: integer('attempts').notNull().default(0),
    /** When the next attempt of a pending delivery is due (`-infinity`: at once); null once it is done. */
    nextAttemptAt: tsColumn('next_attempt_at'),
    leaseOwner: text('lease_owner'),
    leaseUntil: tsColumn('lease_until'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('webhook_deliveries_event_endpoint_idx').on(t.eventId, t.endpointId),
    index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.id),
    index('webhook_deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
  ],
);

/**
 * Every attempt to send a delivery: what the endpoint answered (first 1 KB), how fast, and what comes next.
 * No foreign key: the per-row check would lock the delivery row again on every attempt; a statement-level
 * trigger on `webhook_deliveries` (migration 0003) deletes the attempts of deleted deliveries.
 */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: idColumn(),
    deliveryId: uuid('delivery_id').notNull(),
    endpointId: uuid('endpoint_id').notNull(),
    attempt: integer('attempt').notNull(),
    success: boolean('success').notNull(),
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    responseBody: text('response_body'),
    error: text('error'),
    nextRetryAt: tsColumn('next_retry_at'),
    createdAt: createdAt(),
  },
  (t) => [
    index('webhook_attempts_delivery_idx').on(t.deliveryId, t.id),
    index('webhook_attempts_endpoint_idx').on(t.endpointId, t.id),
  ],
);
