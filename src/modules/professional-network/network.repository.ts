import { and, desc, eq, isNull, lt, or, type SQL, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { failExhaustedRuns, requeueAllRunning, requeueStaleRuns, touchStalePending } from '../../db/heartbeat-runs.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import {
  type NetworkJobResult,
  type NetworkJobStatus,
  networkCredentials,
  networkEnrichJobs,
} from '../../db/schema/index.ts';

export type CredentialRow = typeof networkCredentials.$inferSelect;
export type EnrichJobRow = typeof networkEnrichJobs.$inferSelect;

/** The only writer of the professional network's tables. */
export function networkRepository(db: Db) {
  const ownCredential = (userId: string, id: string) =>
    and(eq(networkCredentials.userId, userId), eq(networkCredentials.id, id));
  const held = (id: string, workerId: string) =>
    and(
      eq(networkEnrichJobs.id, id),
      eq(networkEnrichJobs.status, 'RUNNING'),
      eq(networkEnrichJobs.workerId, workerId),
    );
  /** RUNNING with no heartbeat since `before` (a row of before the heartbeats counts by its last update). */
  const stale = (before: Date): SQL =>
    and(
      eq(networkEnrichJobs.status, 'RUNNING'),
      sql`coalesce(${networkEnrichJobs.heartbeatAt}, ${networkEnrichJobs.updatedAt}) < ${before.toISOString()}::timestamptz`,
    )!;

  return {
    async insertCredential(values: typeof networkCredentials.$inferInsert): Promise<CredentialRow> {
      const [row] = await db.insert(networkCredentials).values(values).returning();
      return row!;
    },

    listCredentials(userId: string, before: string | undefined, limit: number): Promise<CredentialRow[]> {
      return newestFirstPage(db, networkCredentials, userId, [], limit, before);
    },

    async findCredential(userId: string, id: string): Promise<CredentialRow | undefined> {
      const [row] = await db.select().from(networkCredentials).where(ownCredential(userId, id)).limit(1);
      return row;
    },

    /**
     * The user's newest credential that is neither INVALID, nor SOFT_BANNED since `bannedSince`, nor out of
     * requests on `today`.
     */
    async findUsable(userId: string, today: string, bannedSince: Date): Promise<CredentialRow | undefined> {
      const [row] = await db
        .select()
        .from(networkCredentials)
        .where(
          and(
            eq(networkCredentials.userId, userId),
            isNull(networkCredentials.invalidAt),
            or(isNull(networkCredentials.softBannedAt), lt(networkCredentials.softBannedAt, bannedSince)),
            or(
              isNull(networkCredentials.requestsDay),
              sql`${networkCredentials.requestsDay} <> ${today}`,
              lt(networkCredentials.requestsToday, networkCredentials.dailyLimit),
            ),
          ),
        )
        .orderBy(desc(networkCredentials.id))
        .limit(1);
      return row;
    },

    /**
     * Spends one of today's requests of the credential, in one statement (two jobs cannot both take the last one);
     * undefined when none is left today, or when it is INVALID or SOFT_BANNED since `bannedSince` (a job or another
     * request marked it meanwhile: nothing more goes to the network with it).
     */
    async consumeRequest(id: string, today: string, now: Date, bannedSince: Date): Promise<CredentialRow | undefined> {
      const [row] = await db
        .update(networkCredentials)
        .set({
          requestsToday: sql`CASE WHEN ${networkCredentials.requestsDay} = ${today}
            THEN ${networkCredentials.requestsToday} + 1 ELSE 1 END`,
          requestsDay: today,
          lastUsedAt: now,
          updatedAt: now,
        })
        .where(
          and(
            eq(networkCredentials.id, id),
            isNull(networkCredentials.invalidAt),
            or(isNull(networkCredentials.softBannedAt), lt(networkCredentials.softBannedAt, bannedSince)),
            or(
              isNull(networkCredentials.requestsDay),
              sql`${networkCredentials.requestsDay} <> ${today}`,
              lt(networkCredentials.requestsToday, networkCredentials.dailyLimit),
            ),
          ),
        )
        .returning();
      return row;
    },

    async markCredential(id: string, mark: 'softBannedAt' | 'invalidAt', reason: string, now: Date): Promise<void> {
      await db
        .update(networkCredentials)
        .set({ [mark]: now, statusReason: reason, updatedAt: now })
        .where(eq(networkCredentials.id, id));
    },

    async insertJob(values: typeof networkEnrichJobs.$inferInsert): Promise<EnrichJobRow> {
      const [row] = await db.insert(networkEnrichJobs).values(values).returning();
      return row!;
    },

    listJobs(userId: string, before: string | undefined, limit: number): Promise<EnrichJobRow[]> {
      return newestFirstPage(db, networkEnrichJobs, userId, [], limit, before);
    },

    async findJob(id: string, userId?: string): Promise<EnrichJobRow | undefined> {
      const own = userId ? eq(networkEnrichJobs.userId, userId) : undefined;
      const [row] = await db
        .select()
        .from(networkEnrichJobs)
        .where(and(eq(networkEnrichJobs.id, id), own))
        .limit(1);
      return row;
    },

    /**
     * Takes the job for this worker: PENDING, or RUNNING under a worker whose heartbeat stopped before `staleBefore`.
     * One conditional UPDATE, so of two claims (a redelivered message, a second worker) one gets the job.
     */
    async claimJob(id: string, workerId: string, now: Date, staleBefore: Date): Promise<EnrichJobRow | undefined> {
      const [row] = await db
        .update(networkEnrichJobs)
        .set({
          status: 'RUNNING',
          workerId,
          heartbeatAt: now,
          attempts: sql`${networkEnrichJobs.attempts} + 1`,
          startedAt: sql`coalesce(${networkEnrichJobs.startedAt}, ${now.toISOString()}::timestamptz)`,
          updatedAt: now,
        })
        .where(and(eq(networkEnrichJobs.id, id), or(eq(networkEnrichJobs.status, 'PENDING'), stale(staleBefore))))
        .returning();
      return row;
    },

    /** This worker's job is alive; false when it is no longer this worker's (taken over, finished, deleted). */
    async heartbeat(id: string, workerId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(networkEnrichJobs)
        .set({ heartbeatAt: now })
        .where(held(id, workerId))
        .returning({ id: networkEnrichJobs.id });
      return rows.length > 0;
    },

    /**
     * One more lead handled by the worker holding the job: its result appended, the counters moved (only from the
     * position it was at), the heartbeat renewed; false when the job is no longer this worker's.
     */
    async recordResult(
      id: string,
      workerId: string,
      position: number,
      result: NetworkJobResult,
      now: Date,
    ): Promise<boolean> {
      const rows = await db
        .update(networkEnrichJobs)
        .set({
          processed: position + 1,
          enriched: sql`${networkEnrichJobs.enriched} + ${result.status === 'ENRICHED' ? 1 : 0}`,
          failed: sql`${networkEnrichJobs.failed} + ${result.status === 'ENRICHED' ? 0 : 1}`,
          results: sql`${networkEnrichJobs.results} || ${JSON.stringify([result])}::jsonb`,
          heartbeatAt: now,
          updatedAt: now,
        })
        .where(and(held(id, workerId), eq(networkEnrichJobs.processed, position)))
        .returning({ id: networkEnrichJobs.id });
      return rows.length > 0;
    },

    /**
     * Crash recovery: RUNNING jobs whose heartbeat stopped before `staleBefore` go back to PENDING, or fail once
     * `maxAttempts` runs were started; and PENDING jobs untouched since `resendBefore` (their queue message may have
     * been lost between the insert and the send) are touched. Answers the ids to send to the queue again.
     */
    async recoverStale(staleBefore: Date, resendBefore: Date, now: Date, maxAttempts: number) {
      const stopReason = `the worker running this job stopped responding ${maxAttempts} times; it was not started again`;
      const opts = { now, maxAttempts };
      const failed = await failExhaustedRuns(db, networkEnrichJobs, stale(staleBefore), {
        ...opts,
        failure: { stopReason },
      });
      const requeued = await requeueStaleRuns(db, networkEnrichJobs, stale(staleBefore), opts);
      const resent = await touchStalePending(db, networkEnrichJobs, resendBefore, now);
      return { failed: failed.map((r) => r.id), requeued: requeued.map((r) => r.id), resent };
    },

    /** Embedded database only: every RUNNING job is an orphan of the previous process; back to PENDING. */
    requeueAllRunning: (now: Date): Promise<string[]> => requeueAllRunning(db, networkEnrichJobs, now),

    /** RUNNING → PENDING when this worker gives the job up (shutdown); false when it was not its own. */
    async releaseJob(id: string, workerId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(networkEnrichJobs)
        .set({ status: 'PENDING', workerId: null, heartbeatAt: null, updatedAt: now })
        .where(held(id, workerId))
        .returning({ id: networkEnrichJobs.id });
      return rows.length > 0;
    },

    /** The end of this worker's run (workerId stays: which worker ran the job). */
    async finishJob(
      id: string,
      workerId: string,
      status: NetworkJobStatus,
      reason: string | null,
      now: Date,
    ): Promise<void> {
      await db
        .update(networkEnrichJobs)
        .set({ status, stopReason: reason, finishedAt: now, heartbeatAt: now, updatedAt: now })
        .where(held(id, workerId));
    },
  };
}
