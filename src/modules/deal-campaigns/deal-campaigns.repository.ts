import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import {
  type CampaignTarget,
  campaignRules,
  campaignSources,
  campaigns,
  matchingRules,
  profileTypes,
  projects,
  sources,
} from '../../db/schema/index.ts';

export type DealCampaignRow = typeof campaigns.$inferSelect;
export type NewDealCampaign = typeof campaigns.$inferInsert;
export type ProfileTypeRow = typeof profileTypes.$inferSelect;
export interface CampaignRuleLink {
  campaignId: string;
  ruleId: string;
  name: string;
  type: (typeof matchingRules.$inferSelect)['type'];
  weight: number;
}
export interface RuleLinkInput {
  ruleId: string;
  weight: number;
}

export type { CampaignTarget };

/**
 * Campaigns and their join rows. Reads of referenced rows inside a write transaction take
 * `FOR KEY SHARE`, so a source or rule deleted concurrently cannot turn the link insert into a
 * foreign-key error (the deletion waits for the transaction instead).
 */
export function dealCampaignRepository(db: Db) {
  const links = (q: Db | Tx) => ({
    async sourceIdsOf(campaignIds: string[]): Promise<Map<string, string[]>> {
      const out = new Map<string, string[]>(campaignIds.map((id) => [id, []]));
      if (!campaignIds.length) return out;
      const rows = await q
        .select()
        .from(campaignSources)
        .where(inArray(campaignSources.campaignId, campaignIds))
        .orderBy(asc(campaignSources.sourceId));
      for (const r of rows) out.get(r.campaignId)?.push(r.sourceId);
      return out;
    },
    async rulesOf(campaignIds: string[]): Promise<Map<string, CampaignRuleLink[]>> {
      const out = new Map<string, CampaignRuleLink[]>(campaignIds.map((id) => [id, []]));
      if (!campaignIds.length) return out;
      const rows = await q
        .select({
          campaignId: campaignRules.campaignId,
          ruleId: campaignRules.ruleId,
          weight: campaignRules.weight,
          name: matchingRules.name,
          type: matchingRules.type,
        })
        .from(campaignRules)
        .innerJoin(matchingRules, eq(matchingRules.id, campaignRules.ruleId))
        .where(inArray(campaignRules.campaignId, campaignIds))
        .orderBy(asc(campaignRules.ruleId));
      for (const r of rows) out.get(r.campaignId)?.push(r);
      return out;
    },
  });

  return {
    ...links(db),
    links,

    transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      return db.transaction(fn);
    },

    /** Newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    list(
      userId: string,
      filters: { status?: DealCampaignRow['status']; projectId?: string },
      limit: number,
      before?: string,
    ): Promise<DealCampaignRow[]> {
      const where = [
        filters.status ? eq(campaigns.status, filters.status) : undefined,
        filters.projectId ? eq(campaigns.projectId, filters.projectId) : undefined,
      ];
      return newestFirstPage(db, campaigns, userId, where, limit, before);
    },

    async find(userId: string, id: string, q: Db | Tx = db, lock = false): Promise<DealCampaignRow | undefined> {
      const query = q
        .select()
        .from(campaigns)
        .where(and(eq(campaigns.userId, userId), eq(campaigns.id, id)))
        .limit(1);
      const [row] = lock ? await query.for('update') : await query;
      return row;
    },

    async insert(tx: Tx, values: NewDealCampaign): Promise<DealCampaignRow> {
      const [row] = await tx.insert(campaigns).values(values).returning();
      return row!;
    },

    async update(
      tx: Tx,
      userId: string,
      id: string,
      values: Partial<NewDealCampaign>,
    ): Promise<DealCampaignRow | undefined> {
      const [row] = await tx
        .update(campaigns)
        .set(values)
        .where(and(eq(campaigns.userId, userId), eq(campaigns.id, id)))
        .returning();
      return row;
    },

    async delete(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(campaigns)
        .where(and(eq(campaigns.userId, userId), eq(campaigns.id, id)))
        .returning({ id: campaigns.id });
      return rows.length > 0;
    },

    async replaceSources(tx: Tx, campaignId: string, sourceIds: string[]): Promise<void> {
      await tx.delete(campaignSources).where(eq(campaignSources.campaignId, campaignId));
      if (sourceIds.length)
        await tx.insert(campaignSources).values(sourceIds.map((sourceId) => ({ campaignId, sourceId })));
    },

    async addSources(tx: Tx, campaignId: string, sourceIds: string[]): Promise<void> {
      if (sourceIds.length)
        await tx
          .insert(campaignSources)
          .values(sourceIds.map((sourceId) => ({ campaignId, sourceId })))
          .onConflictDoNothing();
    },

    async replaceRules(tx: Tx, campaignId: string, rules: RuleLinkInput[]): Promise<void> {
      await tx.delete(campaignRules).where(eq(campaignRules.campaignId, campaignId));
      if (rules.length)
        await tx.insert(campaignRules).values(rules.map((r) => ({ campaignId, ruleId: r.ruleId, weight: r.weight })));
    },

    async addRules(tx: Tx, campaignId: string, rules: RuleLinkInput[]): Promise<void> {
      if (rules.length)
        await tx
          .insert(campaignRules)
          .values(rules.map((r) => ({ campaignId, ruleId: r.ruleId, weight: r.weight })))
          .onConflictDoNothing();
    },

    async projectOwned(q: Db | Tx, userId: string, id: string): Promise<boolean> {
      const rows = await q
        .select({ id: projects.id })
        .from(projects)
        .where(and(eq(projects.userId, userId), eq(projects.id, id)))
        .limit(1)
        .for('key share');
      return rows.length > 0;
    },

    async profileType(q: Db | Tx, userId: string, id: string): Promise<ProfileTypeRow | undefined> {
      const [row] = await q
        .select()
        .from(profileTypes)
        .where(and(eq(profileTypes.userId, userId), eq(profileTypes.id, id)))
        .limit(1)
        .for('key share');
      return row;
    },

    async sourcesOwned(q: Db | Tx, userId: string, ids: string[]): Promise<Set<string>> {
      if (!ids.length) return new Set();
      const rows = await q
        .select({ id: sources.id })
        .from(sources)
        .where(and(eq(sources.userId, userId), inArray(sources.id, ids)))
        .for('key share');
      return new Set(rows.map((r) => r.id));
    },

    /** The caller's rules among `ids`, with their profile type. */
    async rulesOwned(q: Db | Tx, userId: string, ids: string[]): Promise<Map<string, string>> {
      if (!ids.length) return new Map();
      const rows = await q
        .select({ id: matchingRules.id, profileTypeId: matchingRules.profileTypeId })
        .from(matchingRules)
        .where(and(eq(matchingRules.userId, userId), inArray(matchingRules.id, ids)))
        .for('key share');
      return new Map(rows.map((r) => [r.id, r.profileTypeId]));
    },
  };
}

export type DealCampaignRepository = ReturnType<typeof dealCampaignRepository>;
