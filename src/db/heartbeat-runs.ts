/**
 * The statements of crash recovery for work rows run under heartbeats (scrape jobs, markdown exports, destination
 * pushes, network enrichment jobs; the loop that runs them is src/shared/recovery-sweep.ts). Each is one conditional
 * UPDATE, so sweeps running at once in several processes act on a row once. A module calls them with its own table,
 * from its own repository.
 */
import { and, eq, gte, lt, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from './client.ts';

/** A table with the columns of `heartbeatRunColumns` (src/db/schema/columns.ts), a status and an id. */
export type HeartbeatRunTable = PgTable & {
  id: PgColumn;
  status: PgColumn;
  attempts: PgColumn;
  workerId: PgColumn;
  heartbeatAt: PgColumn;
  finishedAt: PgColumn;
  updatedAt: PgColumn;
};
type Row<T extends HeartbeatRunTable> = T['$inferSelect'];

/** RUNNING, with no heartbeat since `before`. */
export const staleRunning = (table: HeartbeatRunTable, before: Date): SQL =>
  and(eq(table.status, 'RUNNING'), lt(table.heartbeatAt, before))!;

// `update(T).set(…)` over a generic table does not resolve its columns' types; the rows come back as the caller's T.
const update = (db: Db, table: HeartbeatRunTable) => db.update(table as PgTable);

/**
 * Stale runs (`stale`) whose worker died `maxAttempts` times: FAILED, with `failure` (the table's own column for
 * why, e.g. `{ error: … }`). Answers the rows.
 */
export function failExhaustedRuns<T extends HeartbeatRunTable>(
  db: Db,
  table: T,
  stale: SQL,
  opts: { now: Date; maxAttempts: number; failure: Partial<Row<T>> },
): Promise<Row<T>[]> {
  return update(db, table)
    .set({
      ...opts.failure,
      status: 'FAILED',
      finishedAt: opts.now,
      workerId: null,
      heartbeatAt: null,
      updatedAt: opts.now,
    } as never)
    .where(and(stale, gte(table.attempts, opts.maxAttempts)))
    .returning() as Promise<Row<T>[]>;
}

/** The other stale runs: back to PENDING, to be sent to the queue again. Answers the rows. */
export function requeueStaleRuns<T extends HeartbeatRunTable>(
  db: Db,
  table: T,
  stale: SQL,
  opts: { now: Date; maxAttempts: number },
): Promise<Row<T>[]> {
  return update(db, table)
    .set({ status: 'PENDING', workerId: null, heartbeatAt: null, updatedAt: opts.now } as never)
    .where(and(stale, lt(table.attempts, opts.maxAttempts)))
    .returning() as Promise<Row<T>[]>;
}

/**
 * PENDING runs untouched since `before`: their queue message may never have been sent (the process stopped between
 * the INSERT and the send). Marked touched, so each is sent again at most once per period; a run whose first message
 * is still queued runs once anyway (a claim takes PENDING rows only). Answers their ids.
 */
export async function touchStalePending(db: Db, table: HeartbeatRunTable, before: Date, now: Date): Promise<string[]> {
  const rows = await update(db, table)
    .set({ updatedAt: now } as never)
    .where(and(eq(table.status, 'PENDING'), lt(table.updatedAt, before)))
    .returning({ id: table.id });
  return rows.map((r) => r.id as string);
}

/** Embedded database only: the directory lock says no other process is alive, so every RUNNING run is an orphan. */
export async function requeueAllRunning(db: Db, table: HeartbeatRunTable, now: Date): Promise<string[]> {
  const rows = await update(db, table)
    .set({ status: 'PENDING', workerId: null, heartbeatAt: null, updatedAt: now } as never)
    .where(eq(table.status, 'RUNNING'))
    .returning({ id: table.id });
  return rows.map((r) => r.id as string);
}
