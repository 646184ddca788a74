import { index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { browserSessions } from './browser.ts';
import { createdAt, idColumn, tsColumn } from './columns.ts';
import { users } from './users.ts';

/**
 * A live view of a browser session: what its signed URL (`/api/browser/live/{token}`) may show and do. The token
 * names the row and carries its expiry under the service's HMAC key; the row holds no secret, only what the token
 * grants, so revoking it (`revoked_at`) ends the URL at once. It goes with its session.
 */
export const browserLiveViews = pgTable(
  'browser_live_views',
  {
    id: idColumn(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => browserSessions.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The session's X-Client-Ref, copied: a view is found in the same scope as its session. */
    clientRef: text('client_ref'),
    /** The API key that made it (no foreign key: keys are revoked, not deleted): refused once that key is not live. */
    keyId: uuid('key_id'),
    /** view (frames only) or interact (frames, mouse, wheel, keyboard, control hand-off). */
    mode: text('mode').notNull(),
    expiresAt: tsColumn('expires_at').notNull(),
    revokedAt: tsColumn('revoked_at'),
    createdAt: createdAt(),
  },
  (t) => [index('browser_live_views_session_idx').on(t.sessionId)],
);
