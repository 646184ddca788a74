import { and, desc, eq, inArray, ne, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { warmupDays, warmupDomains, warmupMetrics } from '../../db/schema/index.ts';

export type WarmupDomainRow = typeof warmupDomains.$inferSelect;
export type WarmupDayRow = typeof warmupDays.$inferSelect;
export type WarmupMetricsRow = typeof warmupMetrics.$inferSelect;

export function warmupRepository(db: Db | Tx) {
  return {
    async insert(values: typeof warmupDomains.$inferInsert): Promise<WarmupDomainRow> {
      const [row] = await db.insert(warmupDomains).values(values).returning();
      return row!;
    },
    list(userId: string, before: string | undefined, limit: number): Promise<WarmupDomainRow[]> {
      return newestFirstPage(db as Db, warmupDomains, userId, [], limit, before);
    },
    async find(userId: string, id: string): Promise<WarmupDomainRow | undefined> {
      const [row] = await db
        .select()
        .from(warmupDomains)
        .where(and(eq(warmupDomains.userId, userId), eq(warmupDomains.id, id)))
        .limit(1);
      return row;
    },
    /** The row locked for a state change in the caller's transaction. */
    async lock(id: string): Promise<WarmupDomainRow | undefined> {
      const [row] = await db.select().from(warmupDomains).where(eq(warmupDomains.id, id)).for('update').limit(1);
      return row;
    },
    async update(id: string, values: Partial<typeof warmupDomains.$inferInsert>): Promise<WarmupDomainRow> {
      const [row] = await db.update(warmupDomains).set(values).where(eq(warmupDomains.id, id)).returning();
      return row!;
    },
    async remove(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(warmupDomains)
        .where(and(eq(warmupDomains.userId, userId), eq(warmupDomains.id, id)))
        .returning({ id: warmupDomains.id });
      return rows.length > 0;
    },
    /** WARMING domains of users who are not suspended (docs/operations.md "Admin": a suspended user's mail stops). */
    warming(): Promise<WarmupDomainRow[]> {
      return db
        .select()
        .from(warmupDomains)
        .where(
          and(
            eq(warmupDomains.status, 'WARMING'),
            sql`NOT EXISTS (SELECT 1 FROM users u WHERE u.id = ${warmupDomains.userId} AND u.status = 'suspended')`,
          ),
        )
        .orderBy(warmupDomains.id);
    },
    /** The From addresses of the user's other WARMING domains: the rest of the warmup pool. */
    async poolOf(userId: string, exceptId: string): Promise<string[]> {
      const rows = await db
        .select({ address: warmupDomains.fromAddress })
        .from(warmupDomains)
        .where(
          and(eq(warmupDomains.userId, userId), eq(warmupDomains.status, 'WARMING'), ne(warmupDomains.id, exceptId)),
        )
        .orderBy(warmupDomains.id);
      return rows.map((r) => r.address);
    },
    /** Claims a schedule day for sending: undefined when another run (or process) claimed it first. */
    async claimDay(domainId: string, day: number, date: string, target: number): Promise<WarmupDayRow | undefined> {
      const [row] = await db
        .insert(warmupDays)
        .values({ domainId, day, date, target })
        .onConflictDoNothing({ target: [warmupDays.domainId, warmupDays.day] })
        .returning();
      return row;
    },
    async recordSends(id: string, sent: number, failed: number, error: string | null, at: Date): Promise<void> {
      await db.update(warmupDays).set({ sent, failed, error, updatedAt: at }).where(eq(warmupDays.id, id));
    },
    /** Per domain: the sent total and the row of one schedule day. */
    async daysOf(domainIds: string[]): Promise<WarmupDayRow[]> {
      if (!domainIds.length) return [];
      return db.select().from(warmupDays).where(inArray(warmupDays.domainId, domainIds)).orderBy(warmupDays.day);
    },
    async dayRow(domainId: string, day: number): Promise<WarmupDayRow | undefined> {
      const [row] = await db
        .select()
        .from(warmupDays)
        .where(and(eq(warmupDays.domainId, domainId), eq(warmupDays.day, day)))
        .limit(1);
      return row;
    },
    async insertMetrics(values: typeof warmupMetrics.$inferInsert): Promise<WarmupMetricsRow> {
      const [row] = await db.insert(warmupMetrics).values(values).returning();
      return row!;
    },
    /** The latest metrics of each domain. */
    async latestMetrics(domainIds: string[]): Promise<WarmupMetricsRow[]> {
      if (!domainIds.length) return [];
      return db
        .selectDistinctOn([warmupMetrics.domainId])
        .from(warmupMetrics)
        .where(inArray(warmupMetrics.domainId, domainIds))
        .orderBy(warmupMetrics.domainId, desc(warmupMetrics.recordedAt), desc(warmupMetrics.id));
    },
    /** Mail a domain sent on the UTC dates from `date` (`YYYY-MM-DD`) on. */
    async sentSince(domainId: string, date: string): Promise<number> {
      const [row] = await db
        .select({ sent: sql<number>`coalesce(sum(${warmupDays.sent}), 0)::int` })
        .from(warmupDays)
        .where(and(eq(warmupDays.domainId, domainId), sql`${warmupDays.date} >= ${date}`));
      return row?.sent ?? 0;
    },
    /** Sent totals per domain. */
    async totals(domainIds: string[]): Promise<Map<string, number>> {
      if (!domainIds.length) return new Map();
      const rows = await db
        .select({ domainId: warmupDays.domainId, sent: sql<number>`sum(${warmupDays.sent})::int` })
        .from(warmupDays)
        .where(inArray(warmupDays.domainId, domainIds))
        .groupBy(warmupDays.domainId);
      return new Map(rows.map((r) => [r.domainId, r.sent]));
    },
  };
}
