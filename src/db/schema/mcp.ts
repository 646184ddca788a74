import { sql } from 'drizzle-orm';
import { index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn } from './columns.ts';
import { apiKeys, users } from './users.ts';

/**
 * MCP sessions (Streamable HTTP `Mcp-Session-Id`): one row per initialized client, so any API process can serve
 * its next request and its resource subscriptions (docs/mcp.md).
 */
export const mcpSessions = pgTable(
  'mcp_sessions',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The key that initialized it: only that key continues it. */
    keyId: uuid('key_id')
      .notNull()
      .references(() => apiKeys.id, { onDelete: 'cascade' }),
    clientName: text('client_name'),
    /** Resource URIs (`quarry://jobs/{id}`) whose changes the session's GET stream announces. */
    subscriptions: text('subscriptions').array().notNull().default(sql`'{}'::text[]`),
    createdAt: createdAt(),
    lastSeenAt: tsColumn('last_seen_at').notNull().defaultNow(),
  },
  (t) => [index('mcp_sessions_key_idx').on(t.keyId, t.lastSeenAt)],
);
