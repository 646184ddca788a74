import { index, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/** One field of a profile type, JSON-Schema style. */
export interface ProfileFieldDefinition {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean' | 'date' | 'url' | 'email' | 'array';
  label?: string;
  description?: string;
  required?: boolean;
  enum?: string[];
  items?: { type: 'string' | 'number' | 'integer' | 'boolean' };
}

export const profileTypes = pgTable(
  'profile_types',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    description: text('description'),
    fields: jsonb('fields').$type<ProfileFieldDefinition[]>().notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('profile_types_user_slug_key').on(t.userId, t.slug)],
);

export const profileStatuses = ['NEW', 'REVIEWED', 'QUALIFIED', 'DISQUALIFIED', 'ARCHIVED'] as const;

export const profiles = pgTable(
  'profiles',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    profileTypeId: uuid('profile_type_id').notNull().references(() => profileTypes.id, { onDelete: 'cascade' }),
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
  ],
);
