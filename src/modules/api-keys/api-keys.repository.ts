import { and, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { apiKeys, users } from '../../db/schema/index.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export interface KeyIdentity {
  keyId: string;
  userId: string;
  email: string;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  userStatus: 'active' | 'suspended';
}

export function apiKeyRepository(db: Db) {
  return {
    async insert(values: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
      const [row] = await db.insert(apiKeys).values(values).returning();
      return row!;
    },
    /** The key with its owner, or undefined. */
    async findIdentityByHash(keyHash: string): Promise<KeyIdentity | undefined> {
      const [row] = await db
        .select({
          keyId: apiKeys.id,
          userId: apiKeys.userId,
          email: users.email,
          scopes: apiKeys.scopes,
          expiresAt: apiKeys.expiresAt,
          revokedAt: apiKeys.revokedAt,
          userStatus: users.status,
        })
        .from(apiKeys)
        .innerJoin(users, eq(users.id, apiKeys.userId))
        .where(eq(apiKeys.keyHash, keyHash))
        .limit(1);
      return row;
    },
    /** Unrevoked, unexpired keys, newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    listLive(userId: string, now: Date, beforeId: string | undefined, limit: number): Promise<ApiKeyRow[]> {
      return newestFirstPage(
        db,
        apiKeys,
        userId,
        [isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now))],
        limit,
        beforeId,
      );
    },
    async findForUser(userId: string, id: string): Promise<ApiKeyRow | undefined> {
      const [row] = await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.userId, userId), eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
        .limit(1);
      return row;
    },
    /** Whether the key is neither revoked nor expired at `now`. */
    async isLive(id: string, now: Date): Promise<boolean> {
      const [row] = await db
        .select({ id: apiKeys.id })
        .from(apiKeys)
        .where(
          and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now))),
        )
        .limit(1);
      return row !== undefined;
    },
    async update(id: string, values: Partial<typeof apiKeys.$inferInsert>): Promise<void> {
      await db.update(apiKeys).set(values).where(eq(apiKeys.id, id));
    },
    async touch(id: string, at: Date): Promise<void> {
      await db
        .update(apiKeys)
        .set({ lastUsedAt: at })
        .where(
          and(
            eq(apiKeys.id, id),
            sql`(${apiKeys.lastUsedAt} IS NULL
                 OR ${apiKeys.lastUsedAt} < ${new Date(at.getTime() - 60_000).toISOString()})`,
          ),
        );
    },
  };
}
