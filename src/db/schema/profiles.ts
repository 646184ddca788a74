import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

export const profileFieldTypes = ['string', 'number', 'integer', 'boolean', 'date', 'url', 'email', 'array'] as const;
export const profileItemTypes = ['string', 'number', 'integer', 'boolean', 'date', 'url', 'email'] as const;
export type ProfileFieldType = (typeof profileFieldTypes)[number];
export type ProfileItemType = (typeof profileItemTypes)[number];

/**
 * One field of a profile type, JSON-Schema style. `enum` only on string fields; `items` only (and
 * always) on array fields, where `items.enum` may restrict string elements.
 */
export interface ProfileFieldDefinition {
  name: string;
  type: ProfileFieldType;
  label?: string;
  description?: string;
  required?: boolean;
  enum?: string[];
  items?: { type: ProfileItemType; enum?: string[] };
}

export const profileTypes = pgTable(
  'profile_types',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    description: text('description'),
    fields: jsonb('fields').$type<ProfileFieldDefinition[]>().notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('profile_types_user_slug_key').on(t.userId, t.slug),
    index('profile_types_user_idx').on(t.userId, t.id),
  ],
);

export const profileStatuses = ['NEW', 'REVIEWED', 'QUALIFIED', 'DISQUALIFIED', 'ARCHIVED'] as const;
export type ProfileStatus = (typeof profileStatuses)[number];

export const profiles = pgTable(
  'profiles',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    profileTypeId: uuid('profile_type_id')
      .notNull()
      .references(() => profileTypes.id, { onDelete: 'cascade' }),
    // Provenance; plain uuids (no FK) so profiles outlive the job/lead that produced them.
    sourceId: uuid('source_id'),
    jobId: uuid('job_id'),
    leadId: uuid('lead_id'),
    data: jsonb('data').$type<Record<string, unknown>>().notNull().default({}),
    status: text('status', { enum: profileStatuses }).notNull().default('NEW'),
    sourceUrl: text('source_url'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('profiles_user_idx').on(t.userId, t.id),
    index('profiles_type_idx').on(t.profileTypeId, t.id),
    // Status filter with keyset paging, and the byStatus counts of /stats.
    index('profiles_user_status_idx').on(t.userId, t.status, t.id),
    // Provenance filters, and the profiles removed with a project's sources.
    index('profiles_source_idx').on(t.sourceId),
    index('profiles_job_idx').on(t.jobId),
    // One profile per scraped lead and profile type: a re-delivered job adds none twice.
    uniqueIndex('profiles_type_lead_key').on(t.profileTypeId, t.leadId).where(sql`${t.leadId} IS NOT NULL`),
  ],
);
