import { and, count, desc, eq, gte, inArray, isNotNull, lt, type SQL, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.ts';
import { type BounceType, emailBounces } from '../../db/schema/index.ts';

export type BounceRow = typeof emailBounces.$inferSelect;
export type BounceInsert = Omit<typeof emailBounces.$inferInsert, 'id'>;

export interface BounceFilters {
  type?: BounceType;
  domain?: string;
  campaignId?: string;
  from?: Date;
  to?: Date;
}

const countOf = (type: BounceType) =>
  sql<number>`count(*) FILTER (WHERE ${emailBounces.type} = ${type})`.mapWith(Number);
const byType = { hard: countOf('hard'), soft: countOf('soft'), block: countOf('block'), total: count() };
/** Groups answered per breakdown: the most bounced first. */
const MAX_GROUPS = 100;

export function emailVerificationRepository(db: Db | Tx) {
  function where(userId: string, f: BounceFilters): SQL[] {
    const w: SQL[] = [eq(emailBounces.userId, userId)];
    if (f.type) w.push(eq(emailBounces.type, f.type));
    if (f.domain) w.push(eq(emailBounces.recipientDomain, f.domain));
    if (f.campaignId)
      w.push(
        sql`(${emailBounces.campaignId} = ${f.campaignId} OR ${emailBounces.outreachCampaignId} = ${f.campaignId})`,
      );
    if (f.from) w.push(gte(emailBounces.createdAt, f.from));
    if (f.to) w.push(lt(emailBounces.createdAt, f.to));
    return w;
  }

  return {
    /** Stores the bounces not seen before (by `dedupeKey`); answers those stored. */
    async insertNew(rows: BounceInsert[]): Promise<BounceRow[]> {
      if (!rows.length) return [];
      return db
        .insert(emailBounces)
        .values(rows)
        .onConflictDoNothing({ target: [emailBounces.userId, emailBounces.dedupeKey] })
        .returning();
    },

    async existingKeys(userId: string, keys: string[]) {
      if (!keys.length) return [];
      return db
        .select()
        .from(emailBounces)
        .where(and(eq(emailBounces.userId, userId), inArray(emailBounces.dedupeKey, keys)));
    },

    async list(userId: string, f: BounceFilters, limit: number, after?: string) {
      const w = where(userId, f);
      if (after) w.push(lt(emailBounces.id, after));
      return db
        .select()
        .from(emailBounces)
        .where(and(...w))
        .orderBy(desc(emailBounces.id))
        .limit(limit + 1);
    },

    async byDomain(userId: string, f: BounceFilters) {
      return db
        .select({ domain: emailBounces.recipientDomain, ...byType })
        .from(emailBounces)
        .where(and(...where(userId, f)))
        .groupBy(emailBounces.recipientDomain)
        .orderBy(desc(count()), emailBounces.recipientDomain)
        .limit(MAX_GROUPS);
    },

    /** Per campaign: the outreach campaign of the bounced mail, else the deal campaign a report named. */
    async byCampaign(userId: string, f: BounceFilters) {
      const campaign = sql<string>`coalesce(${emailBounces.outreachCampaignId}, ${emailBounces.campaignId})::text`;
      return db
        .select({ campaignId: campaign, ...byType })
        .from(emailBounces)
        .where(and(...where(userId, f), isNotNull(campaign)))
        .groupBy(campaign)
        .orderBy(desc(count()), campaign)
        .limit(MAX_GROUPS);
    },

    /** Blocks per sending domain: what a block counts against. */
    async blocksBySender(userId: string, f: BounceFilters) {
      return db
        .select({ senderDomain: emailBounces.senderDomain, blocks: count() })
        .from(emailBounces)
        .where(and(...where(userId, { ...f, type: 'block' }), isNotNull(emailBounces.senderDomain)))
        .groupBy(emailBounces.senderDomain)
        .orderBy(desc(count()), emailBounces.senderDomain)
        .limit(MAX_GROUPS);
    },

    /** Which of `emails` hard-bounced before. */
    /** Hard and block bounces of mail sent from `senderDomain` since `since`. */
    async countFromSender(userId: string, senderDomain: string, since: Date): Promise<number> {
      const [row] = await db
        .select({ n: sql<number>`count(*)::int` })
        .from(emailBounces)
        .where(
          and(
            eq(emailBounces.userId, userId),
            eq(emailBounces.senderDomain, senderDomain),
            inArray(emailBounces.type, ['hard', 'block']),
            gte(emailBounces.createdAt, since),
          ),
        );
      return row?.n ?? 0;
    },
    async hardBounced(userId: string, emails: string[]): Promise<Set<string>> {
      if (!emails.length) return new Set();
      const rows = await db
        .selectDistinct({ email: emailBounces.email })
        .from(emailBounces)
        .where(
          and(eq(emailBounces.userId, userId), eq(emailBounces.type, 'hard'), inArray(emailBounces.email, emails)),
        );
      return new Set(rows.map((r) => r.email));
    },
  };
}
