import { and, eq, inArray, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../../db/client.ts';
import { newestFirstPage } from '../../../db/keyset.ts';
import { type EnrollmentStatus, outreachCampaigns, outreachEnrollments } from '../../../db/schema/index.ts';

export type OutreachCampaignRow = typeof outreachCampaigns.$inferSelect;
export type EnrollmentRow = typeof outreachEnrollments.$inferSelect;

/** Outreach campaigns and the leads enrolled in them (docs/outreach.md "Outreach"). */
export function outreachCampaignsRepository(db: Db | Tx) {
  return {
    async insert(values: typeof outreachCampaigns.$inferInsert): Promise<OutreachCampaignRow> {
      const [row] = await db.insert(outreachCampaigns).values(values).returning();
      return row!;
    },
    list(userId: string, connectionId: string | undefined, before: string | undefined, limit: number) {
      return newestFirstPage(
        db as Db,
        outreachCampaigns,
        userId,
        [connectionId ? eq(outreachCampaigns.connectionId, connectionId) : undefined],
        limit,
        before,
      );
    },
    async find(userId: string, id: string): Promise<OutreachCampaignRow | undefined> {
      const [row] = await db
        .select()
        .from(outreachCampaigns)
        .where(and(eq(outreachCampaigns.userId, userId), eq(outreachCampaigns.id, id)));
      return row;
    },
    byIds(ids: string[]): Promise<OutreachCampaignRow[]> {
      if (!ids.length) return Promise.resolve([]);
      return db.select().from(outreachCampaigns).where(inArray(outreachCampaigns.id, ids));
    },
    async lock(id: string): Promise<OutreachCampaignRow | undefined> {
      const [row] = await db.select().from(outreachCampaigns).where(eq(outreachCampaigns.id, id)).for('update');
      return row;
    },
    async update(id: string, values: Partial<typeof outreachCampaigns.$inferInsert>): Promise<OutreachCampaignRow> {
      const [row] = await db.update(outreachCampaigns).set(values).where(eq(outreachCampaigns.id, id)).returning();
      return row!;
    },
    async statusCounts(
      campaignIds: string[],
    ): Promise<Array<{ campaignId: string; status: EnrollmentStatus; n: number }>> {
      if (!campaignIds.length) return [];
      const rows = await queryRows<{ campaign_id: string; status: EnrollmentStatus; n: number }>(
        db,
        sql`SELECT campaign_id, status, count(*)::int AS n FROM outreach_enrollments
            WHERE campaign_id = ANY(${`{${campaignIds.join(',')}}`}::uuid[]) GROUP BY campaign_id, status`,
      );
      return rows.map((r) => ({ campaignId: r.campaign_id, status: r.status, n: r.n }));
    },
    async enrolledLeadIds(campaignId: string, leadIds: string[]): Promise<Set<string>> {
      if (!leadIds.length) return new Set();
      const rows = await db
        .select({ leadId: outreachEnrollments.leadId })
        .from(outreachEnrollments)
        .where(and(eq(outreachEnrollments.campaignId, campaignId), inArray(outreachEnrollments.leadId, leadIds)));
      return new Set(rows.map((r) => r.leadId));
    },
    /** One statement; leads already enrolled (a concurrent request) are left as they are. Answers those added. */
    async enroll(rows: Array<typeof outreachEnrollments.$inferInsert>): Promise<number> {
      if (!rows.length) return 0;
      const added = await db
        .insert(outreachEnrollments)
        .values(rows)
        .onConflictDoNothing({ target: [outreachEnrollments.campaignId, outreachEnrollments.leadId] })
        .returning({ id: outreachEnrollments.id });
      return added.length;
    },
  };
}
