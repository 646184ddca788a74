import { index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

/**
 * A browser profile: persistent browser state (cookies, storage per origin) that sessions start from. The state is a
 * file under BROWSER_PROFILE_DIR/<user>/<profile>/; `state_file` names the current one, switched only by the save
 * whose fencing token still holds the writer lease (`lease_*`): one writer at a time.
 */
export const browserProfiles = pgTable(
  'browser_profiles',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The integrator's own user (X-Client-Ref); null for profiles of the key-wide view. */
    clientRef: text('client_ref'),
    name: text('name').notNull(),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    /** Saves recorded so far (0: never saved, the profile is empty). */
    version: integer('version').notNull().default(0),
    /** The current state file's name inside the profile's directory; null before the first save. */
    stateFile: text('state_file'),
    sizeBytes: integer('size_bytes').notNull().default(0),
    savedAt: tsColumn('saved_at'),
    /** The session whose state was saved last. */
    savedBySession: uuid('saved_by_session'),
    /** The writer lease: the session holding it, until when, and the fencing token of its acquisition. */
    leaseSessionId: uuid('lease_session_id'),
    leaseExpiresAt: tsColumn('lease_expires_at'),
    /** Increases at every acquisition of the lease; a save carries the token it acquired and is refused when stale. */
    leaseToken: integer('lease_token').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('browser_profiles_user_idx').on(t.userId, t.id),
    index('browser_profiles_user_ref_idx').on(t.userId, t.clientRef, t.id),
    /** The lease a session holds, freed as it ends. */
    index('browser_profiles_lease_session_idx').on(t.leaseSessionId),
  ],
);
