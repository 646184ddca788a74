import { index, integer, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, updatedAt } from './columns.ts';
import { matchingRules } from './matching.ts';
import { profileTypes } from './profiles.ts';
import { projects } from './projects.ts';
import { sources } from './sources.ts';
import { users } from './users.ts';

export const campaignStatuses = ['DRAFT', 'ACTIVE', 'PAUSED', 'ARCHIVED'] as const;
export type CampaignStatus = (typeof campaignStatuses)[number];

/** The ideal customer a deal campaign looks for. */
export interface CampaignTarget {
  industries: string[];
  locations: string[];
  /** Employee counts, inclusive; either bound may be absent. */
  companySize: { min: number | null; max: number | null } | null;
  titles: string[];
  keywords: string[];
}

export const campaigns = pgTable(
  'campaigns',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    projectId: uuid('project_id').references(() => projects.id, { onDelete: 'set null' }),
    profileTypeId: uuid('profile_type_id').references(() => profileTypes.id, { onDelete: 'set null' }),
    name: text('name').notNull(),
    description: text('description'),
    status: text('status', { enum: campaignStatuses }).notNull().default('DRAFT'),
    target: jsonb('target').$type<CampaignTarget>().notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('campaigns_user_idx').on(t.userId, t.id)],
);

export const campaignSources = pgTable(
  'campaign_sources',
  {
    campaignId: uuid('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    sourceId: uuid('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.campaignId, t.sourceId] }), index('campaign_sources_source_idx').on(t.sourceId)],
);

export const campaignRules = pgTable(
  'campaign_rules',
  {
    campaignId: uuid('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    ruleId: uuid('rule_id')
      .notNull()
      .references(() => matchingRules.id, { onDelete: 'cascade' }),
    /** Weight of this rule in the campaign's fit score (1–100). */
    weight: integer('weight').notNull().default(1),
  },
  (t) => [primaryKey({ columns: [t.campaignId, t.ruleId] }), index('campaign_rules_rule_idx').on(t.ruleId)],
);
