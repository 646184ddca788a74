import { and, desc, eq, isNull, lt, or, type SQL, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
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

  return {
    async insertCredential(values: typeof networkCredentials.$inferInsert): Promise<CredentialRow> {
      const [row] = await db.insert(networkCredentials).values(values).returning();
      return row!;
    },

    listCredentials(userId: string, before: string | undefined, limit: number): Promise<CredentialRow[]> {
      const where: SQL[] = [eq(networkCredentials.userId, userId)];
      if (before) where.push(lt(networkCredentials.id, before));
      return db
        .select()
        .from(networkCredentials)
        .where(and(...where))
        .orderBy(desc(networkCredentials.id))
        .limit(limit + 1);
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
      const where: SQL[] = [eq(networkEnrichJobs.userId, userId)];
      if (before) where.push(lt(networkEnrichJobs.id, before));
      return db
        .select()
        .from(networkEnrichJobs)
        .where(and(...where))
        .orderBy(desc(networkEnrichJobs.id))
        .limit(limit + 1);
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

    /** PENDING (or RUNNING again, a redelivery after a crash) → RUNNING; undefined when it has finished. */
    async startJob(id: string, now: Date): Promise<EnrichJobRow | undefined> {
      const [row] = await db
        .update(networkEnrichJobs)
        .set({ status: 'RUNNING', startedAt: sql`coalesce(${networkEnrichJobs.startedAt}, ${now})`, updatedAt: now })
        .where(and(eq(networkEnrichJobs.id, id), sql`${networkEnrichJobs.status} IN ('PENDING', 'RUNNING')`))
        .returning();
      return row;
    },

    /** One more lead handled: its result appended, the counters moved (only from the position it was at). */
    async recordResult(id: string, position: number, result: NetworkJobResult, now: Date): Promise<void> {
      await db
        .update(networkEnrichJobs)
        .set({
          processed: position + 1,
          enriched: sql`${networkEnrichJobs.enriched} + ${result.status === 'ENRICHED' ? 1 : 0}`,
          failed: sql`${networkEnrichJobs.failed} + ${result.status === 'ENRICHED' ? 0 : 1}`,
          results: sql`${networkEnrichJobs.results} || ${JSON.stringify([result])}::jsonb`,
          updatedAt: now,
        })
        .where(and(eq(networkEnrichJobs.id, id), eq(networkEnrichJobs.processed, position)));
    },

    async runningJobs(): Promise<string[]> {
      const rows = await db
        .select({ id: networkEnrichJobs.id })
        .from(networkEnrichJobs)
        .where(eq(networkEnrichJobs.status, 'RUNNING'));
      return rows.map((r) => r.id);
    },

    async finishJob(id: string, status: NetworkJobStatus, reason: string | null, now: Date): Promise<void> {
      await db
        .update(networkEnrichJobs)
        .set({ status, stopReason: reason, finishedAt: now, updatedAt: now })
        .where(and(eq(networkEnrichJobs.id, id), eq(networkEnrichJobs.status, 'RUNNING')));
    },
  };
}
