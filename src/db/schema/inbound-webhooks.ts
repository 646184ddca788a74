import { jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { idColumn, tsColumn } from './columns.ts';

/**
 * Verified inbound webhook events (docs/webhooks-and-credits.md "Inbound webhooks"), one per provider event id: a delivery
 * whose id is here already is answered 200 and not processed again.
 */
export const inboundWebhookEvents = pgTable(
  'inbound_webhook_events',
  {
    id: idColumn(),
    provider: text('provider').notNull(),
    eventId: text('event_id').notNull(),
    type: text('type'),
    payload: jsonb('payload').$type<unknown>().notNull(),
    receivedAt: tsColumn('received_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('inbound_webhook_events_event_key').on(t.provider, t.eventId)],
);
