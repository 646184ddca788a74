import { and, eq, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.ts';
import {
  failExhaustedRuns,
  requeueAllRunning,
  requeueStaleRuns,
  staleRunning,
  touchStalePending,
} from '../../db/heartbeat-runs.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { destinationPushes, destinations } from '../../db/schema/index.ts';

export type DestinationRow = typeof destinations.$inferSelect;
export type PushRow = typeof destinationPushes.$inferSelect;
type Progress = Pick<PushRow, 'pushed' | 'failed' | 'parts' | 'cursor'>;

/** The only writer of `destinations` and `destination_pushes`. */
export function destinationRepository(db: Db | Tx) {
  const mine = (userId: string, id: string) => and(eq(destinations.id, id), eq(destinations.userId, userId));
  const pushById = (id: string) => eq(destinationPushes.id, id);
  const held = (id: string, workerId: string) =>
    and(pushById(id), eq(destinationPushes.status, 'RUNNING'), eq(destinationPushes.workerId, workerId));

  return {
    async insert(row: typeof destinations.$inferInsert): Promise<DestinationRow> {
      const [created] = await db.insert(destinations).values(row).returning();
      return created!;
    },
    async find(userId: string, id: string): Promise<DestinationRow | undefined> {
      const [row] = await db.select().from(destinations).where(mine(userId, id)).limit(1);
      return row;
    },
    async findById(id: string): Promise<DestinationRow | undefined> {
      const [row] = await db.select().from(destinations).where(eq(destinations.id, id)).limit(1);
      return row;
    },
    list(userId: string, limit: number, before?: string): Promise<DestinationRow[]> {
      return newestFirstPage(db as Db, destinations, userId, [], limit, before);
    },
    async delete(userId: string, id: string): Promise<boolean> {
      const rows = await db.delete(destinations).where(mine(userId, id)).returning({ id: destinations.id });
      return rows.length > 0;
    },

    async insertPush(row: typeof destinationPushes.$inferInsert): Promise<PushRow> {
      const [created] = await db.insert(destinationPushes).values(row).returning();
      return created!;
    },
    async findPush(destinationId: string, id: string): Promise<PushRow | undefined> {
      const [row] = await db
        .select()
        .from(destinationPushes)
        .where(and(pushById(id), eq(destinationPushes.destinationId, destinationId)))
        .limit(1);
      return row;
    },
    async findPushById(id: string): Promise<PushRow | undefined> {
      const [row] = await db.select().from(destinationPushes).where(pushById(id)).limit(1);
      return row;
    },
    listPushes(userId: string, destinationId: string, limit: number, before?: string): Promise<PushRow[]> {
      const filter = eq(destinationPushes.destinationId, destinationId);
      return newestFirstPage(db as Db, destinationPushes, userId, [filter], limit, before);
    },
    /** PENDING → RUNNING for this worker; undefined when not ours to run (finished, deleted, or held). */
    async claim(id: string, workerId: string, now: Date): Promise<PushRow | undefined> {
      const [row] = await db
        .update(destinationPushes)
        .set({
          status: 'RUNNING',
          workerId,
          heartbeatAt: now,
          startedAt: sql`coalesce(${destinationPushes.startedAt}, ${now.toISOString()}::timestamptz)`,
          attempts: sql`${destinationPushes.attempts} + 1`,
          updatedAt: now,
        })
        .where(and(pushById(id), eq(destinationPushes.status, 'PENDING')))
        .returning();
      return row;
    },
    /** After each delivered batch: where to continue from, and a heartbeat. Undefined: no longer ours. */
    async advance(id: string, workerId: string, now: Date, progress: Progress): Promise<PushRow | undefined> {
      const [row] = await db
        .update(destinationPushes)
        .set({ ...progress, heartbeatAt: now, updatedAt: now })
        .where(held(id, workerId))
        .returning();
      return row;
    },
    async heartbeat(id: string, workerId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(destinationPushes)
        .set({ heartbeatAt: now })
        .where(held(id, workerId))
        .returning({ id: destinationPushes.id });
      return rows.length > 0;
    },
    async finish(
      id: string,
      workerId: string,
      now: Date,
      fields: Partial<Pick<PushRow, 'status' | 'total' | 'error'>>,
    ): Promise<PushRow | undefined> {
      const [row] = await db
        .update(destinationPushes)
        .set({ ...fields, finishedAt: now, workerId: null, heartbeatAt: null, updatedAt: now })
        .where(held(id, workerId))
        .returning();
      return row;
    },
    /** A FAILED push → PENDING again, keeping its cursor (POST …/pushes/{pushId}/retry). */
    async requeue(id: string, now: Date): Promise<PushRow | undefined> {
      const [row] = await db
        .update(destinationPushes)
        .set({ status: 'PENDING', error: null, finishedAt: null, attempts: 0, updatedAt: now })
        .where(and(pushById(id), eq(destinationPushes.status, 'FAILED')))
        .returning();
      return row;
    },
    /** A run stopped by shutdown goes back to PENDING, keeping its cursor. */
    async release(id: string, workerId: string, now: Date): Promise<PushRow | undefined> {
      const [row] = await db
        .update(destinationPushes)
        .set({ status: 'PENDING', workerId: null, heartbeatAt: null, updatedAt: now })
        .where(held(id, workerId))
        .returning();
      return row;
    },
    /** Crash recovery: RUNNING pushes whose heartbeat stopped go back to PENDING, or fail after `maxAttempts`. */
    async recoverStale(staleBefore: Date, now: Date, maxAttempts: number) {
      const stale = staleRunning(destinationPushes, staleBefore);
      const error = `The worker running this push stopped responding ${maxAttempts} times; it was not started again.`;
      const failed = await failExhaustedRuns(db, destinationPushes, stale, { now, maxAttempts, failure: { error } });
      const requeued = await requeueStaleRuns(db, destinationPushes, stale, { now, maxAttempts });
      return { failed, requeued };
    },
    /** PENDING pushes whose queue message may never have been sent (src/db/heartbeat-runs.ts). */
    touchStalePending: (before: Date, now: Date): Promise<string[]> =>
      touchStalePending(db, destinationPushes, before, now),
    /** Embedded database only: every RUNNING push is an orphan of the previous process. */
    requeueAllRunning: (now: Date): Promise<string[]> => requeueAllRunning(db, destinationPushes, now),
  };
}
