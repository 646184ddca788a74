import { integer, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { newId } from '../ids.ts';

export const idColumn = () => uuid('id').primaryKey().$defaultFn(newId);
export const tsColumn = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
export const createdAt = () => tsColumn('created_at').notNull().defaultNow();
export const updatedAt = () => tsColumn('updated_at').notNull().defaultNow();

/**
 * The columns of a row run by a worker under a heartbeat (src/shared/recovery-sweep.ts): why it failed, how often it
 * was claimed, by whom and when last heard from, when it started and ended; then the row's timestamps.
 */
export const heartbeatRunColumns = () => ({
  error: text('error'),
  attempts: integer('attempts').notNull().default(0),
  workerId: text('worker_id'),
  heartbeatAt: tsColumn('heartbeat_at'),
  startedAt: tsColumn('started_at'),
  finishedAt: tsColumn('finished_at'),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});
