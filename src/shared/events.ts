import { sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../db/client.ts';
import { newId } from './ids.ts';

/** Every event type webhooks can carry (README, Webhooks; the OpenAPI document's `webhooks` has their payloads). */
export const EVENT_TYPES = [
  'job.started',
  'job.completed',
  'job.failed',
  'lead.created',
  'lead.validated',
  'export.completed',
  'matching.run.completed',
  'credits.low',
  'webhook.test',
  'email.bounced',
  'email.replied',
  'warmup.auto_paused',
  'browser.session.ended',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** NOTIFY channel that wakes the webhook dispatchers of every process (sent at commit of the emitting transaction). */
export const WEBHOOK_WAKE_CHANNEL = 'quarry_webhooks';

export interface EmitOptions {
  /** Only this endpoint, subscribed or not (the `webhook.test` event). */
  endpointId?: string;
  /** The event's time; default the database's (the transaction's start). */
  at?: Date;
}

const uuidArray = (ids: string[]) => `{${ids.join(',')}}`;

/**
 * Writes the event to the outbox in the caller's transaction, with one delivery per enabled endpoint of the
 * user subscribed to `type`; nothing when there is none. The NOTIFY is part of the transaction too: it wakes the
 * dispatchers at commit, and a rolled-back change sends nothing. Returns the event's id and its deliveries.
 */
export async function recordEvent(
  db: Db | Tx,
  userId: string,
  type: EventType,
  data: Record<string, unknown>,
  options: EmitOptions = {},
): Promise<{ eventId: string; deliveryIds: string[] } | undefined> {
  const target = options.endpointId ? sql`id = ${options.endpointId}` : sql`${type} = ANY(event_types)`;
  const endpoints = await queryRows<{ id: string }>(
    db,
    sql`SELECT id FROM webhook_endpoints WHERE user_id = ${userId} AND enabled AND ${target}`,
  );
  if (!endpoints.length) return undefined;
  const eventId = newId();
  const deliveryIds = endpoints.map(() => newId());
  const at = options.at ? sql`${options.at.toISOString()}::timestamptz` : sql`now()`;
  await db.execute(sql`
    WITH ev AS (
      INSERT INTO webhook_events (id, user_id, type, data, created_at)
      VALUES (${eventId}, ${userId}, ${type}, ${JSON.stringify(data)}::jsonb, ${at})
      RETURNING id
    ), dl AS (
      INSERT INTO webhook_deliveries (id, user_id, event_id, endpoint_id, next_attempt_at, created_at, updated_at)
      SELECT t.delivery_id, ${userId}, ev.id, t.endpoint_id, '-infinity', now(), now()
      FROM ev, unnest(${uuidArray(deliveryIds)}::uuid[], ${uuidArray(endpoints.map((e) => e.id))}::uuid[])
        AS t(delivery_id, endpoint_id)
      RETURNING 1
    )
    SELECT pg_notify(${WEBHOOK_WAKE_CHANNEL}, (SELECT count(*) FROM dl)::text)`);
  return { eventId, deliveryIds };
}

/** Writes the event to the outbox in the caller's transaction; delivery is woken at commit. */
export async function emitEvent(
  db: Db | Tx,
  userId: string,
  type: EventType,
  data: Record<string, unknown>,
  options?: EmitOptions,
): Promise<void> {
  await recordEvent(db, userId, type, data, options);
}
