import { and, desc, eq, gt, inArray, isNull, lt, ne, or, type SQL, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { Db } from '../../db/client.ts';
import { apiKeys, type OrgRole, organizationMembers, users } from '../../db/schema/index.ts';

/** A key just revoked: its id (for credentials it minted) and hash (for the caches). */
export interface RevokedKey {
  id: string;
  keyHash: string;
}

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export interface KeyIdentity {
  keyId: string;
  userId: string;
  email: string;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  userStatus: 'active' | 'suspended';
  /** An organization key's organization account status (null for a personal key). */
  orgStatus: 'active' | 'suspended' | null;
  /** An organization's key: the organization, and the holder's role in it now (null once no longer a member). */
  orgId: string | null;
  orgRole: OrgRole | null;
}

/**
 * Whose keys a caller sees and manages: a person's own (`userId`), an organization's (`orgId`: its admins), or a
 * member's keys of one organization (both).
 */
export type KeyOwner = { userId?: string; orgId?: string };

const ownedBy = (owner: KeyOwner): SQL[] => {
  const where: SQL[] = [];
  if (owner.orgId) where.push(eq(apiKeys.orgId, owner.orgId));
  if (owner.userId) where.push(eq(apiKeys.userId, owner.userId));
  return where;
};

/** A key neither revoked nor expired at `now`. */
const liveAt = (now: Date): SQL =>
  and(isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)))!;

/** The organization's own account row, next to the key holder's. */
const orgAccounts = alias(users, 'org_accounts');

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
          // A person's key always has an email (users_person_credentials); keys belong to persons.
          email: sql<string>`${users.email}`,
          scopes: apiKeys.scopes,
          expiresAt: apiKeys.expiresAt,
          revokedAt: apiKeys.revokedAt,
          userStatus: users.status,
          orgStatus: orgAccounts.status,
          orgId: apiKeys.orgId,
          orgRole: organizationMembers.role,
        })
        .from(apiKeys)
        .innerJoin(users, eq(users.id, apiKeys.userId))
        .leftJoin(orgAccounts, eq(orgAccounts.id, apiKeys.orgId))
        .leftJoin(
          organizationMembers,
          and(eq(organizationMembers.orgId, apiKeys.orgId), eq(organizationMembers.userId, apiKeys.userId)),
        )
        .where(eq(apiKeys.keyHash, keyHash))
        .limit(1);
      return row;
    },
    /** Unrevoked, unexpired keys, newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    listLive(owner: KeyOwner, now: Date, beforeId: string | undefined, limit: number): Promise<ApiKeyRow[]> {
      return db
        .select()
        .from(apiKeys)
        .where(
          and(...ownedBy(owner), eq(apiKeys.kind, 'api'), liveAt(now), beforeId ? lt(apiKeys.id, beforeId) : undefined),
        )
        .orderBy(desc(apiKeys.id))
        .limit(limit + 1);
    },
    async findOwnedBy(owner: KeyOwner, id: string): Promise<ApiKeyRow | undefined> {
      const [row] = await db
        .select()
        .from(apiKeys)
        .where(and(...ownedBy(owner), eq(apiKeys.id, id), eq(apiKeys.kind, 'api'), isNull(apiKeys.revokedAt)))
        .limit(1);
      return row;
    },
    /** The person's role in the organization, or undefined when they are not a member. */
    async roleIn(orgId: string, userId: string): Promise<OrgRole | undefined> {
      const [row] = await db
        .select({ role: organizationMembers.role })
        .from(organizationMembers)
        .where(and(eq(organizationMembers.orgId, orgId), eq(organizationMembers.userId, userId)))
        .limit(1);
      return row?.role;
    },
    /** Revokes the person's live keys of one organization; returns their ids and hashes. */
    async revokeOrgKeys(orgId: string, userId: string, at: Date): Promise<RevokedKey[]> {
      return db
        .update(apiKeys)
        .set({ revokedAt: at })
        .where(and(eq(apiKeys.orgId, orgId), eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)))
        .returning({ id: apiKeys.id, keyHash: apiKeys.keyHash });
    },
    /** Whether the key is neither revoked nor expired at `now`. */
    async isLive(id: string, now: Date): Promise<boolean> {
      const [row] = await db
        .select({ id: apiKeys.id })
        .from(apiKeys)
        .where(and(eq(apiKeys.id, id), liveAt(now)))
        .limit(1);
      return row !== undefined;
    },
    /** Which of `ids` are neither revoked nor expired at `now`. */
    async liveIds(ids: string[], now: Date): Promise<Set<string>> {
      const rows = await db
        .select({ id: apiKeys.id })
        .from(apiKeys)
        .where(and(inArray(apiKeys.id, ids), liveAt(now)));
      return new Set(rows.map((r) => r.id));
    },
    /** Revokes a live console key by its hash; the key revoked, if there was one. */
    async revokeConsoleByHash(keyHash: string, at: Date): Promise<RevokedKey | undefined> {
      const [row] = await db
        .update(apiKeys)
        .set({ revokedAt: at })
        .where(and(eq(apiKeys.keyHash, keyHash), eq(apiKeys.kind, 'console'), isNull(apiKeys.revokedAt)))
        .returning({ id: apiKeys.id, keyHash: apiKeys.keyHash });
      return row;
    },
    /** Deletes console keys that were revoked or expired before `before`; how many. API keys stay (an audit trail). */
    async deleteEndedConsoleKeys(before: Date): Promise<number> {
      const rows = await db
        .delete(apiKeys)
        .where(and(eq(apiKeys.kind, 'console'), or(lt(apiKeys.revokedAt, before), lt(apiKeys.expiresAt, before))))
        .returning({ id: apiKeys.id });
      return rows.length;
    },
    /** Revokes a person's live console keys but one; answers their ids and hashes. */
    async revokeConsoleOfUser(userId: string, exceptKeyId: string | undefined, at: Date): Promise<RevokedKey[]> {
      return db
        .update(apiKeys)
        .set({ revokedAt: at })
        .where(
          and(
            eq(apiKeys.userId, userId),
            eq(apiKeys.kind, 'console'),
            isNull(apiKeys.revokedAt),
            exceptKeyId ? ne(apiKeys.id, exceptKeyId) : undefined,
          ),
        )
        .returning({ id: apiKeys.id, keyHash: apiKeys.keyHash });
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
