import { index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn } from './columns.ts';
import { users } from './users.ts';

/** The organization's own facts; its id IS its account's id in `users` (kind organization), docs/organizations.md. */
export const organizations = pgTable('organizations', {
  id: uuid('id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  createdAt: createdAt(),
});

/** A member's role; what each permits is decided in src/shared/authorization.ts. */
export const ORG_ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type OrgRole = (typeof ORG_ROLES)[number];

export const organizationMembers = pgTable(
  'organization_members',
  {
    id: idColumn(),
    orgId: uuid('org_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ORG_ROLES }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('organization_members_org_user_key').on(t.orgId, t.userId),
    index('organization_members_user_idx').on(t.userId),
  ],
);

/** An invitation names an email; its token is stored as a SHA-256 hash, expires, and is used once. */
export const organizationInvitations = pgTable(
  'organization_invitations',
  {
    id: idColumn(),
    orgId: uuid('org_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    role: text('role', { enum: ORG_ROLES }).notNull(),
    tokenHash: text('token_hash').notNull(),
    /** The member who invited (null once that account is deleted). */
    invitedBy: uuid('invited_by').references(() => users.id, { onDelete: 'set null' }),
    expiresAt: tsColumn('expires_at').notNull(),
    acceptedAt: tsColumn('accepted_at'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('organization_invitations_token_key').on(t.tokenHash),
    index('organization_invitations_org_idx').on(t.orgId, t.createdAt),
  ],
);
