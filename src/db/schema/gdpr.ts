import { customType, index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn } from './columns.ts';
import { users } from './users.ts';

const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (v) => (Buffer.isBuffer(v) ? v : Buffer.from(v)),
});

export const dataExports = pgTable(
  'data_exports',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    format: text('format', { enum: ['JSON', 'CSV'] }).notNull(),
    status: text('status', { enum: ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED'] })
      .notNull()
      .default('PENDING'),
    /** The generated file, kept in the database so any API process can serve it. */
    content: bytea('content'),
    contentType: text('content_type'),
    fileName: text('file_name'),
    sizeBytes: integer('size_bytes'),
    error: text('error'),
    completedAt: tsColumn('completed_at'),
    downloadExpiry: tsColumn('download_expiry'),
    createdAt: createdAt(),
  },
  (t) => [index('data_exports_user_idx').on(t.userId, t.createdAt)],
);

export const deletionRequests = pgTable(
  'deletion_requests',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** requested → scheduled → (cancelled | completed); requested may also expire. */
    status: text('status', { enum: ['requested', 'scheduled', 'cancelled'] })
      .notNull()
      .default('requested'),
    tokenHash: text('token_hash').notNull(),
    tokenExpiresAt: tsColumn('token_expires_at').notNull(),
    confirmedAt: tsColumn('confirmed_at'),
    /** When the purge runs (confirmation + grace period). */
    scheduledAt: tsColumn('scheduled_at'),
    gracePeriodDays: integer('grace_period_days').notNull().default(30),
    cancelledAt: tsColumn('cancelled_at'),
    createdAt: createdAt(),
  },
  (t) => [
    index('deletion_requests_user_idx').on(t.userId, t.createdAt),
    index('deletion_requests_due_idx').on(t.status, t.scheduledAt),
  ],
);
