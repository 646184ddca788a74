import { index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

export const proxyTypes = ['http', 'https', 'socks5'] as const;
export type ProxyType = (typeof proxyTypes)[number];
export const proxyRotationModes = ['per-request', 'per-session'] as const;

/** Extra endpoints of the same proxy service (same type and credentials), taken in turn (docs/scraping.md). */
export interface ProxyRotation {
  mode: (typeof proxyRotationModes)[number];
  endpoints: Array<{ host: string; port: number }>;
}

/**
 * A proxy a user's crawls, markdown exports and browser sessions go out through (docs/scraping.md "Proxy
 * profiles"). The password is sealed with createSecretBox (src/shared/crypto.ts) and never returned.
 */
export const proxyProfiles = pgTable(
  'proxy_profiles',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name'),
    type: text('type', { enum: proxyTypes }).notNull(),
    host: text('host').notNull(),
    port: integer('port').notNull(),
    username: text('username'),
    passwordSealed: text('password_sealed'),
    rotation: jsonb('rotation').$type<ProxyRotation>(),
    /** When the check through the proxy last passed; null when created with `skipTest`. */
    checkedAt: tsColumn('checked_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('proxy_profiles_user_idx').on(t.userId, t.id)],
);
