import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, heartbeatRunColumns, idColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

export const destinationTypes = ['webhook', 'postgres', 's3'] as const;
export type DestinationType = (typeof destinationTypes)[number];

/**
 * Where leads are pushed (docs/destinations.md): a webhook URL, a table of another PostgreSQL database, or an S3
 * bucket. `config` holds the non-secret settings as given; the secret ones (password, connection string, secret
 * access key, signing secret) are one JSON object sealed under SECRET_KEY in `secrets` (src/shared/crypto.ts).
 */
export const destinations = pgTable(
  'destinations',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    type: text('type', { enum: destinationTypes }).notNull(),
    config: jsonb('config').$type<Record<string, unknown>>().notNull(),
    secrets: text('secrets'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('destinations_user_idx').on(t.userId, t.id)],
);

export const destinationPushStatuses = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED'] as const;
export const destinationPushModes = ['append', 'upsert'] as const;

/** Which leads a push sends: given ids, or the leads list's filter (GET /api/leads). */
export type PushSelection = { leadIds: string[] } | { filter: Record<string, string> };

/**
 * One push of leads to a destination, run by a worker under a heartbeat (src/shared/recovery-sweep.ts). Leads go
 * newest first in batches; `cursor` is the last lead id delivered and `parts` the batches delivered, so a run taken
 * over after a crash continues after them (and an S3 part or a webhook batch it repeats keeps its key or id).
 */
export const destinationPushes = pgTable(
  'destination_pushes',
  {
    id: idColumn(),
    destinationId: uuid('destination_id')
      .notNull()
      .references(() => destinations.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: destinationPushModes }).notNull(),
    selection: jsonb('selection').$type<PushSelection>().notNull(),
    status: text('status', { enum: destinationPushStatuses }).notNull().default('PENDING'),
    total: integer('total'),
    pushed: integer('pushed').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    parts: integer('parts').notNull().default(0),
    cursor: uuid('cursor'),
    ...heartbeatRunColumns(),
  },
  (t) => [
    index('destination_pushes_destination_idx').on(t.destinationId, t.id),
    index('destination_pushes_running_heartbeat_idx').on(t.heartbeatAt).where(sql`${t.status} = 'RUNNING'`),
  ],
);
