import { sql } from 'drizzle-orm';
import { boolean, check, index, inet, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';

export const users = pgTable(
  'users',
  {
    id: idColumn(),
    /**
     * A person signs in; an organization is an account too (docs/organizations.md): what it owns is keyed by its
     * id like a person's, and members act for it through org keys. It has no email and no password.
     */
    kind: text('kind', { enum: ['person', 'organization'] })
      .notNull()
      .default('person'),
    /** Stored lower-cased; unique. Null only for an organization. */
    email: text('email'),
    name: text('name'),
    passwordHash: text('password_hash'),
    status: text('status', { enum: ['active', 'suspended'] })
      .notNull()
      .default('active'),
    role: text('role', { enum: ['user', 'admin'] })
      .notNull()
      .default('user'),
    termsAcceptedAt: tsColumn('terms_accepted_at'),
    privacyAcceptedAt: tsColumn('privacy_accepted_at'),
    marketingConsent: boolean('marketing_consent').notNull().default(false),
    consentUpdatedAt: tsColumn('consent_updated_at').notNull().defaultNow(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('users_email_key').on(t.email),
    check(
      'users_person_credentials',
      sql`${t.kind} <> 'person' OR (${t.email} IS NOT NULL AND ${t.passwordHash} IS NOT NULL)`,
    ),
  ],
);

/** Append-only audit trail of consent changes (GDPR art. 7(1): demonstrate consent). */
export const consentEvents = pgTable(
  'consent_events',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    consentType: text('consent_type', { enum: ['terms', 'privacy', 'marketing'] }).notNull(),
    granted: boolean('granted').notNull(),
    ipAddress: inet('ip_address'),
    changedAt: tsColumn('changed_at').notNull().defaultNow(),
  },
  (t) => [index('consent_events_user_idx').on(t.userId, t.changedAt.desc())],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /**
     * `api`: a key for programs (listed and managed under /api/keys); `console`: the web console's sign-in, carried
     * in an HttpOnly cookie, never listed, revoked by signing out (docs/console.md).
     */
    kind: text('kind', { enum: ['api', 'console'] })
      .notNull()
      .default('api'),
    /** First 12 characters of the key, shown in listings. */
    prefix: text('prefix').notNull(),
    /** SHA-256 of the whole key, hex. The key itself is never stored. */
    keyHash: text('key_hash').notNull(),
    scopes: text('scopes').array().notNull().default(sql`'{}'::text[]`),
    orgId: uuid('org_id'),
    expiresAt: tsColumn('expires_at'),
    lastUsedAt: tsColumn('last_used_at'),
    revokedAt: tsColumn('revoked_at'),
    /** Set on the old key when rotated: the key that replaced it. */
    replacedById: uuid('replaced_by_id'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('api_keys_hash_key').on(t.keyHash), index('api_keys_user_idx').on(t.userId, t.createdAt)],
);

/** Sliding-window log for per-IP limits; shared by every API process through the database. */
export const rateLimitEvents = pgTable(
  'rate_limit_events',
  {
    id: idColumn(),
    bucket: text('bucket').notNull(),
    subject: text('subject').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('rate_limit_events_lookup_idx').on(t.bucket, t.subject, t.createdAt)],
);
